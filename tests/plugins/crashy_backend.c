/* A plug-in that works (F32 add of contiguous, equal shapes, on one ACCEL
 * device, so the host prefers it for every such add of a real model) until
 * it misbehaves, for the isolation tests (test_isolate.c, isolate_*.cmake):
 *
 *   CRASHY_KIND  1 SIGSEGV (a store to a PROT_NONE page), 2 abort(),
 *                3 SIGILL (__builtin_trap), 4 exit(3), 5 hang for ever,
 *                6 garbage: write junk into descriptor 3 (the helper's
 *                socket, as a stray write from a corrupted plug-in would),
 *                then go on as if nothing happened
 *   CRASHY_WHERE 0 the CRASHY_AT-th compute call, 1 the CRASHY_AT-th
 *                supports_op call, 2 init, 3 the entry point
 *
 * Includes only tport/backend.h (and libc for the misdeeds). */
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tport/backend.h"

#ifndef CRASHY_KIND
#define CRASHY_KIND 1
#endif
#ifndef CRASHY_WHERE
#define CRASHY_WHERE 0
#endif
#ifndef CRASHY_AT
#define CRASHY_AT 3
#endif
#ifndef CRASHY_NAME
#define CRASHY_NAME "crashy"
#endif

static const tport_host_api *host;
static int state_token;

static void misbehave(void) {
    switch (CRASHY_KIND) {
    case 1: { /* a store to a page that may not be touched: a real SIGSEGV */
        volatile int *p = mmap(0, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED)
            *p = 1;
        break;
    }
    case 2: abort();
    case 3: __builtin_trap();
    case 4: exit(3);
    case 5:
        for (;;)
            pause();
    case 6: {
        static const char junk[64] = "not a reply: garbage from a plug-in scribbling on descriptors";
        if (write(3, junk, sizeof junk) < 0)
            return;
        break;
    }
    }
}

static tport_status crashy_init(void **backend) {
    if (CRASHY_WHERE == 2)
        misbehave();
    *backend = &state_token;
    return TPORT_STATUS_OK;
}

static void crashy_shutdown(void *backend) {
    (void)backend;
}

static int32_t crashy_device_count(void *backend) {
    return backend == &state_token ? 1 : 0;
}

static tport_status crashy_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
    if (device != 0 || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "no device %d", (int)device);
    static const char name[] = CRASHY_NAME "0", desc[] = "misbehaving test plug-in";
    for (unsigned i = 0; i < sizeof name; i++)
        out->name[i] = name[i];
    for (unsigned i = 0; i < sizeof desc; i++)
        out->description[i] = desc[i];
    out->kind = TPORT_DEVICE_ACCEL;
    return TPORT_STATUS_OK;
}

static bool contiguous_f32(const tport_tensor_view *t) {
    if (t->type != TPORT_TYPE_F32 || t->nb[0] != sizeof(float))
        return false;
    for (int d = 1; d < TPORT_MAX_DIMS; d++)
        if (t->nb[d] != t->nb[d - 1] * (uint64_t)t->ne[d - 1])
            return false;
    return true;
}

static bool is_add(const tport_graph_view *g, int32_t node) {
    if (node < 0 || node >= g->n_tensors)
        return false;
    const tport_tensor_view *t = g->tensors[node];
    if (t->op != TPORT_OP_ADD || t->src[0] < 0 || t->src[1] < 0 || t->src[0] >= g->n_tensors ||
        t->src[1] >= g->n_tensors)
        return false;
    const tport_tensor_view *a = g->tensors[t->src[0]], *b = g->tensors[t->src[1]];
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (a->ne[d] != t->ne[d] || b->ne[d] != t->ne[d])
            return false;
    return contiguous_f32(t) && contiguous_f32(a) && contiguous_f32(b) && t->data && a->data && b->data;
}

static bool crashy_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    static int calls;
    (void)backend;
    if (CRASHY_WHERE == 1 && ++calls == CRASHY_AT)
        misbehave();
    return device == 0 && is_add(g, node);
}

static tport_status crashy_compute(void *backend, int32_t device, const tport_graph_view *g) {
    static int calls;
    if (CRASHY_WHERE == 0 && ++calls == CRASHY_AT)
        misbehave();
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t idx = g->nodes[i];
        if (!crashy_supports_op(backend, device, g, idx))
            return host->error(TPORT_STATUS_UNSUPPORTED, "crashy: node %d not supported", (int)idx);
        const tport_tensor_view *t = g->tensors[idx];
        const float *a = g->tensors[t->src[0]]->data, *b = g->tensors[t->src[1]]->data;
        float *y = t->data;
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        for (int64_t k = 0; k < n; k++)
            y[k] = a[k] + b[k];
    }
    return TPORT_STATUS_OK;
}

static tport_backend_api table;

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h) {
    if (CRASHY_WHERE == 3)
        misbehave();
    if (!h || h->abi_major != TPORT_ABI_MAJOR)
        return 0;
    host = h;
    table.struct_size = sizeof table;
    table.abi_major = TPORT_ABI_MAJOR;
    table.abi_minor = h->abi_minor < TPORT_ABI_MINOR ? h->abi_minor : TPORT_ABI_MINOR;
    table.name = CRASHY_NAME;
    table.version = "test-1";
    table.init = crashy_init;
    table.shutdown = crashy_shutdown;
    table.device_count = crashy_device_count;
    table.device_info = crashy_device_info;
    table.supports_op = crashy_supports_op;
    table.compute = crashy_compute;
    return &table;
}
