/* A plug-in for the scheduler test: backend "partial" computes only f32
 * ADD of same-shape contiguous tensors (one ACCEL device) and says no to
 * everything else, so a graph must be split between it and the CPU.
 * Includes nothing of tensorport but tport/backend.h. */
#include <string.h>

#include "tport/backend.h"

static const tport_host_api *host;
static int state;

static tport_status partial_init(void **backend) {
    *backend = &state;
    return TPORT_STATUS_OK;
}

static void partial_shutdown(void *backend) {
    (void)backend;
}

static int32_t partial_device_count(void *backend) {
    (void)backend;
    return 1;
}

static tport_status partial_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
    if (device != 0 || !out || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "partial: bad device_info call");
    uint32_t size = out->struct_size;
    memset(out, 0, sizeof *out);
    out->struct_size = size;
    out->kind = TPORT_DEVICE_ACCEL;
    strcpy(out->name, "partial0");
    strcpy(out->description, "scheduler test backend: f32 add only");
    return TPORT_STATUS_OK;
}

static bool dense_f32(const tport_tensor_view *t) {
    size_t expect = sizeof(float);
    for (int i = 0; i < TPORT_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect)
            return false;
        expect *= (size_t)t->ne[i];
    }
    return t->type == TPORT_TYPE_F32 && t->data;
}

static bool partial_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)backend;
    if (device != 0 || node < 0 || node >= g->n_tensors)
        return false;
    const tport_tensor_view *d = g->tensors[node];
    if (d->op != TPORT_OP_ADD || d->src[0] < 0 || d->src[1] < 0 || d->src[0] >= g->n_tensors ||
        d->src[1] >= g->n_tensors)
        return false;
    const tport_tensor_view *a = g->tensors[d->src[0]], *b = g->tensors[d->src[1]];
    for (int i = 0; i < TPORT_MAX_DIMS; i++)
        if (a->ne[i] != d->ne[i] || b->ne[i] != d->ne[i])
            return false;
    return dense_f32(d) && dense_f32(a) && dense_f32(b);
}

static tport_status partial_compute(void *backend, int32_t device, const tport_graph_view *g) {
    (void)backend;
    (void)device;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (!partial_supports_op(backend, 0, g, g->nodes[i]))
            return host->error(TPORT_STATUS_UNSUPPORTED, "partial: node %d is not an add", (int)g->nodes[i]);
        const tport_tensor_view *d = g->tensors[g->nodes[i]];
        const float *a = g->tensors[d->src[0]]->data, *b = g->tensors[d->src[1]]->data;
        float *y = d->data;
        int64_t n = d->ne[0] * d->ne[1] * d->ne[2] * d->ne[3];
        for (int64_t k = 0; k < n; k++)
            y[k] = a[k] + b[k];
    }
    return TPORT_STATUS_OK;
}

static tport_backend_api api = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "partial",
    .version = "test",
    .init = partial_init,
    .shutdown = partial_shutdown,
    .device_count = partial_device_count,
    .device_info = partial_device_info,
    .supports_op = partial_supports_op,
    .compute = partial_compute,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h) {
    if (!h || h->abi_major != TPORT_ABI_MAJOR)
        return NULL;
    host = h;
    uint32_t mine = TPORT_ABI_MINOR; /* a variable: the constant may be 0 */
    api.abi_minor = h->abi_minor < mine ? h->abi_minor : mine;
    return &api;
}
