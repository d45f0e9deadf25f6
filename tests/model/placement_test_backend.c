/* A plug-in for the weight placement tests: backend "picky" runs mul_mat
 * and get_rows only when the weight (src0, flagged WEIGHT) is f32 or
 * q4_0_qnt1 (one historical layout, to make a lossless re-encoding the
 * best choice for q4_0_qnt0 files), and declines everything else, so a
 * model is split between it and the CPU.  It dequantizes weight rows with
 * the host's reference to_float and accumulates in f32 in index order.
 * Includes nothing of tensorport but tport/backend.h. */
#include <stdlib.h>
#include <string.h>

#define SKELETON_NAME "picky"
#define SKELETON_DEVICE "picky0"
#define SKELETON_ABOUT "placement test backend: f32 and q4_0_qnt1 weights only"
#include "../test_backend_skeleton.h"

static const tport_tensor_view *at(const tport_graph_view *g, int32_t i) {
    if (i < 0 || i >= g->n_tensors || !g->tensors[i] || g->tensors[i]->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0)
        return NULL;
    return g->tensors[i];
}

/* Rows of whole blocks, adjacent, one matrix (dims 2, 3 unused). */
static bool dense_2d(const tport_tensor_view *t) {
    const tport_type_info *ti = host->type_info(t->type);
    if (!ti || ti->block_size <= 0 || t->ne[0] < 1 || t->ne[1] < 1 || t->ne[0] % ti->block_size ||
        t->ne[2] != 1 || t->ne[3] != 1 || !t->data)
        return false;
    uint64_t row = (uint64_t)(t->ne[0] / ti->block_size) * ti->block_bytes;
    return t->nb[0] == ti->block_bytes && (t->ne[1] == 1 || t->nb[1] == row);
}

static bool weight_ok(const tport_tensor_view *w) {
    return (w->flags & TPORT_TENSOR_WEIGHT) && (w->type == TPORT_TYPE_F32 || w->type == TPORT_TYPE_Q4_0_QNT1) &&
           dense_2d(w);
}

static bool skeleton_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)backend;
    const tport_tensor_view *d = at(g, node);
    if (device != 0 || !d || (d->op != TPORT_OP_MUL_MAT && d->op != TPORT_OP_GET_ROWS))
        return false;
    const tport_tensor_view *w = at(g, d->src[0]), *x = at(g, d->src[1]);
    if (!w || !x || !weight_ok(w) || d->type != TPORT_TYPE_F32 || !dense_2d(d) || !dense_2d(x))
        return false;
    if (d->op == TPORT_OP_MUL_MAT)
        return x->type == TPORT_TYPE_F32 && x->ne[0] == w->ne[0] && d->ne[0] == w->ne[1] && d->ne[1] == x->ne[1];
    return x->type == TPORT_TYPE_I32 && x->ne[1] == 1 && d->ne[0] == w->ne[0] && d->ne[1] == x->ne[0];
}

static tport_status row_f32(const tport_tensor_view *w, int64_t r, float *out) {
    if (w->type == TPORT_TYPE_F32) {
        memcpy(out, (const char *)w->data + (uint64_t)r * w->nb[1], (size_t)w->ne[0] * sizeof(float));
        return TPORT_STATUS_OK;
    }
    return host->to_float(w->type, (const char *)w->data + (uint64_t)r * w->nb[1], out, w->ne[0]);
}

static tport_status run_node(const tport_graph_view *g, const tport_tensor_view *d, float *row) {
    const tport_tensor_view *w = g->tensors[d->src[0]], *x = g->tensors[d->src[1]];
    if (d->op == TPORT_OP_GET_ROWS) {
        for (int64_t j = 0; j < d->ne[1]; j++) {
            int32_t id;
            memcpy(&id, (const char *)x->data + (uint64_t)j * x->nb[0], sizeof id);
            if (id < 0 || id >= w->ne[1])
                return host->error(TPORT_STATUS_INVALID_ARGUMENT, "picky: row %d outside [0, %lld)", (int)id,
                                   (long long)w->ne[1]);
            tport_status st = row_f32(w, id, (float *)((char *)d->data + (uint64_t)j * d->nb[1]));
            if (st != TPORT_STATUS_OK)
                return st;
        }
        return TPORT_STATUS_OK;
    }
    for (int64_t i = 0; i < w->ne[1]; i++) {
        tport_status st = row_f32(w, i, row);
        if (st != TPORT_STATUS_OK)
            return st;
        for (int64_t j = 0; j < x->ne[1]; j++) {
            const float *xv = (const float *)((const char *)x->data + (uint64_t)j * x->nb[1]);
            float sum = 0.0f;
            for (int64_t k = 0; k < w->ne[0]; k++)
                sum += row[k] * xv[k];
            ((float *)((char *)d->data + (uint64_t)j * d->nb[1]))[i] = sum;
        }
    }
    return TPORT_STATUS_OK;
}

static tport_status skeleton_compute(void *backend, int32_t device, const tport_graph_view *g) {
    for (int32_t i = 0; i < g->n_nodes; i++) {
        if (!skeleton_supports_op(backend, device, g, g->nodes[i]))
            return host->error(TPORT_STATUS_UNSUPPORTED, "picky: node %d was not accepted", (int)g->nodes[i]);
        const tport_tensor_view *d = g->tensors[g->nodes[i]];
        float *row = malloc((size_t)g->tensors[d->src[0]]->ne[0] * sizeof *row);
        if (!row)
            return host->error(TPORT_STATUS_OUT_OF_MEMORY, "picky: out of memory");
        tport_status st = run_node(g, d, row);
        free(row);
        if (st != TPORT_STATUS_OK)
            return st;
    }
    return TPORT_STATUS_OK;
}
