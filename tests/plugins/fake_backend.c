/* A small fake backend, compiled once per test case with FAKE_CASE set to
 * one of the defects below, so each refusal rule of the registry has a
 * plug-in that breaks exactly that rule.  FAKE_CASE_GOOD is a working
 * backend (F32 add on contiguous tensors, one ACCEL device).
 *
 * It includes only tport/backend.h — built with -I pointing either at
 * today's include/ or at tests/plugins/abi_1_0 (the header frozen at 1.0). */
#include "tport/backend.h"

#define FAKE_CASE_GOOD 0
#define FAKE_CASE_NO_ENTRY 1
#define FAKE_CASE_NULL_ENTRY 2
#define FAKE_CASE_MAJOR2 3
#define FAKE_CASE_SMALL_STRUCT 4
#define FAKE_CASE_MISSING_SLOT 5
#define FAKE_CASE_ISA 6
#define FAKE_CASE_SCORE0 7
#define FAKE_CASE_INIT_FAIL 8
#define FAKE_CASE_NO_DEVICES 9
#define FAKE_CASE_CRASH_ENTRY 10
#define FAKE_CASE_NEWER_MINOR 11
#define FAKE_CASE_CPU_HIGH 12 /* a "cpu" with a high score: shadows the embedded one */
#define FAKE_CASE_WRONG_RESULT 13 /* claims add and computes one element wrong */
#define FAKE_CASE_CRASH_INIT 14    /* loads fine, aborts in init */

#if FAKE_CASE == FAKE_CASE_CRASH_INIT
#include <stdlib.h>
#endif

#ifndef FAKE_CASE
#define FAKE_CASE FAKE_CASE_GOOD
#endif
#ifndef FAKE_NAME
#ifdef FAKE_DEFAULT_NAME
#define FAKE_NAME FAKE_DEFAULT_NAME
#else
#define FAKE_NAME "fake"
#endif
#endif
#ifndef FAKE_SCORE
#define FAKE_SCORE 5
#endif

/* A newer minor this plug-in pretends to know (1.7): the table has three
 * more slots at the end and a larger struct_size. */
#if FAKE_CASE == FAKE_CASE_NEWER_MINOR
#define FAKE_KNOWN_MINOR 7
#else
#define FAKE_KNOWN_MINOR TPORT_ABI_MINOR
#endif

static const tport_host_api *host;

static int32_t fake_score(void) {
#if FAKE_CASE == FAKE_CASE_ISA
    __builtin_trap(); /* the host must never get here: the ISA check comes first */
#endif
    return FAKE_CASE == FAKE_CASE_SCORE0 ? 0 : FAKE_SCORE;
}

static int fake_state = 42;

#ifdef FAKE_CALLS_LIBTPORT
/* What a plug-in must never do: call into libtport directly. */
const char *tport_last_error(void);
#endif

static tport_status fake_init(void **backend) {
#if FAKE_CASE == FAKE_CASE_ISA
    __builtin_trap();
#endif
#ifdef FAKE_CALLS_LIBTPORT
    (void)tport_last_error();
#endif
#if FAKE_CASE == FAKE_CASE_CRASH_INIT
    abort(); /* SIGABRT: what a plug-in must never do */
#endif
    if (FAKE_CASE == FAKE_CASE_INIT_FAIL)
        return host->error(TPORT_STATUS_DEVICE_LOST, "simulated init failure");
    *backend = &fake_state;
    return TPORT_STATUS_OK;
}

static void fake_shutdown(void *backend) {
    (void)backend;
}

static int32_t fake_device_count(void *backend) {
    return backend == &fake_state && FAKE_CASE != FAKE_CASE_NO_DEVICES ? 1 : 0;
}

static void copy_string(char *dst, unsigned cap, const char *src) {
    unsigned i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = src[i];
    dst[i] = '\0';
}

static tport_status fake_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
    if (device != 0 || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "no device %d", (int)device);
    out->kind = FAKE_CASE == FAKE_CASE_CPU_HIGH ? TPORT_DEVICE_CPU : TPORT_DEVICE_ACCEL;
    copy_string(out->name, sizeof out->name, FAKE_NAME "0");
    copy_string(out->description, sizeof out->description, "test plug-in");
    out->memory_total = 1u << 20;
    out->memory_free = 1u << 20;
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

static bool same_shape(const tport_tensor_view *a, const tport_tensor_view *b) {
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (a->ne[d] != b->ne[d])
            return false;
    return true;
}

static bool fake_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)backend;
    if (device != 0 || node < 0 || node >= g->n_tensors)
        return false;
    const tport_tensor_view *t = g->tensors[node];
    if (t->op != TPORT_OP_ADD || t->src[0] < 0 || t->src[1] < 0 || t->src[0] >= g->n_tensors ||
        t->src[1] >= g->n_tensors)
        return false;
    const tport_tensor_view *a = g->tensors[t->src[0]], *b = g->tensors[t->src[1]];
    return contiguous_f32(t) && contiguous_f32(a) && contiguous_f32(b) && same_shape(t, a) && same_shape(t, b);
}

static tport_status fake_compute(void *backend, int32_t device, const tport_graph_view *g) {
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t idx = g->nodes[i];
        if (!fake_supports_op(backend, device, g, idx))
            return host->error(TPORT_STATUS_UNSUPPORTED, "fake: node %d not supported", (int)idx);
        const tport_tensor_view *t = g->tensors[idx];
        const float *a = g->tensors[t->src[0]]->data, *b = g->tensors[t->src[1]]->data;
        float *y = t->data;
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        for (int64_t k = 0; k < n; k++)
            y[k] = a[k] + b[k];
        if (FAKE_CASE == FAKE_CASE_WRONG_RESULT)
            y[n / 2] += 0.25f; /* for tport check-backend to catch */
    }
    return TPORT_STATUS_OK;
}

#if FAKE_CASE == FAKE_CASE_NEWER_MINOR
/* The table as a 1.7 header would declare it: 1.0 plus slots appended. */
typedef struct fake_backend_api_1_7 {
    tport_backend_api base;
    tport_status (*future_slot_a)(void *backend);
    tport_status (*future_slot_b)(void *backend, int32_t device);
    uint64_t future_flags;
} fake_backend_api_1_7;
static tport_status future_a(void *backend) {
    (void)backend;
    return TPORT_STATUS_OK;
}
static fake_backend_api_1_7 table_17 = {.future_slot_a = future_a, .future_flags = 7};
#define TABLE (table_17.base)
#define TABLE_SIZE sizeof(fake_backend_api_1_7)
#else
static tport_backend_api table_10;
#define TABLE table_10
#define TABLE_SIZE sizeof(tport_backend_api)
#endif

#if FAKE_CASE != FAKE_CASE_NO_ENTRY
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h)
#else
/* Exported, but under the wrong name. */
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry_v2(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry_v2(const tport_host_api *h)
#endif
{
#if FAKE_CASE == FAKE_CASE_CRASH_ENTRY
    __builtin_trap(); /* SIGILL, as a variant built for a newer CPU would */
#endif
    if (!h || h->abi_major != TPORT_ABI_MAJOR)
        return 0;
    host = h;
    if (FAKE_CASE == FAKE_CASE_NULL_ENTRY) {
        h->error(TPORT_STATUS_UNSUPPORTED, "simulated: no driver installed");
        return 0;
    }
    tport_backend_api *t = &TABLE;
    t->struct_size = TABLE_SIZE;
    t->abi_major = FAKE_CASE == FAKE_CASE_MAJOR2 ? 2 : TPORT_ABI_MAJOR;
    const uint32_t known = FAKE_KNOWN_MINOR; /* a variable: no "< 0 is always false" */
    t->abi_minor = h->abi_minor < known ? h->abi_minor : known;
    t->name = FAKE_NAME;
    t->version = "test-1";
#if FAKE_CASE == FAKE_CASE_ISA
#if defined(__aarch64__)
    t->required_isa = TPORT_ISA_AVX2;
#else
    t->required_isa = TPORT_ISA_NEON;
#endif
#endif
    t->score = fake_score;
    t->init = fake_init;
    t->shutdown = fake_shutdown;
    t->device_count = fake_device_count;
    t->device_info = fake_device_info;
    t->supports_op = fake_supports_op;
    t->compute = FAKE_CASE == FAKE_CASE_MISSING_SLOT ? 0 : fake_compute;
    if (FAKE_CASE == FAKE_CASE_SMALL_STRUCT)
        t->struct_size = (uint32_t)offsetof(tport_backend_api, compute);
    return t;
}
