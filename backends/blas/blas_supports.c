/* Which MUL_MAT nodes the blas backend takes: F32 weights (unless the CPU
 * has AVX-512, see blas_backend.c; TPORT_BLAS_F32 decides), F16 with
 * TPORT_BLAS_F16=1, F32 activations and result, rows contiguous, every
 * other stride a whole number of elements, shapes within BLAS's int range,
 * and a batch large enough for BLAS to pay off. */
#include <limits.h>

#include "blas_internal.h"

static const tport_tensor_view *src_of(const tport_graph_view *g, const tport_tensor_view *t, int i) {
    int32_t s = t->src[i];
    if (s < 0 || s >= g->n_tensors || !g->tensors[s])
        return NULL;
    const tport_tensor_view *v = g->tensors[s];
    return v->struct_size >= TPORT_TENSOR_VIEW_SIZE_1_0 ? v : NULL;
}

/* Rows contiguous; strides of dims 1..3 whole elements, non-negative; the
 * row stride at least a row (no overlapping rows, as lda >= K demands). */
static bool usable_layout(const tport_tensor_view *t, uint64_t esize) {
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (t->ne[d] < 1 || t->ne[d] > INT_MAX)
            return false;
    if (t->nb[0] != esize)
        return false;
    for (int d = 1; d < TPORT_MAX_DIMS; d++)
        if (t->nb[d] % esize != 0 || t->nb[d] / esize > INT_MAX)
            return false;
    if (t->ne[1] > 1 && t->nb[1] < esize * (uint64_t)t->ne[0])
        return false;
    return true;
}

bool blas_supports_mul_mat(const blas_state *s, const tport_graph_view *g, int32_t node) {
    if (!g || node < 0 || node >= g->n_tensors || !g->tensors || !g->tensors[node])
        return false;
    const tport_tensor_view *d = g->tensors[node];
    if (d->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0 || d->op != TPORT_OP_MUL_MAT)
        return false;
    const tport_tensor_view *a = src_of(g, d, 0), *b = src_of(g, d, 1);
    if (!a || !b)
        return false;
    if (!(a->type == TPORT_TYPE_F32 && s->take_f32) && !(a->type == TPORT_TYPE_F16 && s->take_f16))
        return false;
    if (b->type != TPORT_TYPE_F32 || d->type != TPORT_TYPE_F32)
        return false;
    if (!usable_layout(a, a->type == TPORT_TYPE_F32 ? 4 : 2) || !usable_layout(b, 4) || !usable_layout(d, 4))
        return false;
    /* a: [K, M, A2, A3]  b: [K, N, B2, B3]  d: [M, N, B2, B3]; a repeats over 2, 3 */
    if (a->ne[0] != b->ne[0] || d->ne[0] != a->ne[1] || d->ne[1] != b->ne[1] || d->ne[2] != b->ne[2] ||
        d->ne[3] != b->ne[3] || b->ne[2] % a->ne[2] != 0 || b->ne[3] % a->ne[3] != 0)
        return false;
    /* F16 weights are converted at least one row at a time into the scratch */
    if (a->type == TPORT_TYPE_F16 && a->ne[0] > s->scratch_max)
        return false;
    return b->ne[1] >= s->min_batch;
}
