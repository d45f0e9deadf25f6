/* A plug-in for the scheduler test: backend "partial" computes only f32
 * ADD of same-shape contiguous tensors (one ACCEL device) and says no to
 * everything else, so a graph must be split between it and the CPU.
 * Includes nothing of tensorport but tport/backend.h. */
#define SKELETON_NAME "partial"
#define SKELETON_DEVICE "partial0"
#define SKELETON_ABOUT "scheduler test backend: f32 add only"
#include "../test_backend_skeleton.h"

static bool dense_f32(const tport_tensor_view *t) {
    size_t expect = sizeof(float);
    for (int i = 0; i < TPORT_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect)
            return false;
        expect *= (size_t)t->ne[i];
    }
    return t->type == TPORT_TYPE_F32 && t->data;
}

static bool skeleton_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
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

static tport_status skeleton_compute(void *backend, int32_t device, const tport_graph_view *g) {
    (void)backend;
    (void)device;
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (!skeleton_supports_op(backend, 0, g, g->nodes[i]))
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
