/* MUL_MAT on cblas_sgemm.
 *
 * ggml's convention d[i, j] = sum_k a[k, i] * b[k, j], with ne[0] the
 * fastest dimension, is in row-major terms D (N x M) = B (N x K) * A^T,
 * where A is M x K: one sgemm per 2-D slice, with the row strides as
 * leading dimensions.  F16 weights are converted to F32 in chunks of rows
 * (bounded scratch), each chunk feeding every slice of b that uses it. */
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "blas_internal.h"

static int ld_of(const tport_tensor_view *t, uint64_t esize) {
    /* one-row matrices: any leading dimension >= the row length will do */
    return t->ne[1] > 1 ? (int)(t->nb[1] / esize) : (int)t->ne[0];
}

static tport_status grow_scratch(blas_state *s, int64_t floats) {
    if (floats <= s->scratch_floats)
        return TPORT_STATUS_OK;
    float *p = realloc(s->scratch, (size_t)floats * sizeof(float));
    if (!p)
        return blas_host->error(TPORT_STATUS_OUT_OF_MEMORY, "blas: cannot allocate %lld bytes of scratch",
                                (long long)floats * (long long)sizeof(float));
    s->scratch = p;
    s->scratch_floats = floats;
    return TPORT_STATUS_OK;
}

/* D[:, m0 .. m0+rows) of every b-slice that uses weight slice (a2, a3),
 * with `w` the weight rows m0.. (ld floats apart). */
static void gemm_slices(const tport_tensor_view *d, const tport_tensor_view *a, const tport_tensor_view *b,
                        int64_t a2, int64_t a3, const float *w, int ldw, int64_t m0, int64_t rows) {
    const int64_t r2 = b->ne[2] / a->ne[2], r3 = b->ne[3] / a->ne[3];
    const int K = (int)a->ne[0], N = (int)b->ne[1];
    const int ldb = ld_of(b, 4), ldd = ld_of(d, 4);
    for (int64_t i3 = a3 * r3; i3 < (a3 + 1) * r3; i3++)
        for (int64_t i2 = a2 * r2; i2 < (a2 + 1) * r2; i2++) {
            const float *bm = (const float *)((const char *)b->data + i2 * b->nb[2] + i3 * b->nb[3]);
            float *dm = (float *)((char *)d->data + i2 * d->nb[2] + i3 * d->nb[3]) + m0;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, (int)rows, K, 1.0f, bm, ldb, w, ldw, 0.0f,
                        dm, ldd);
        }
}

static tport_status f16_slice(blas_state *s, const tport_tensor_view *d, const tport_tensor_view *a,
                              const tport_tensor_view *b, int64_t a2, int64_t a3) {
    const int64_t K = a->ne[0], M = a->ne[1];
    int64_t chunk = s->scratch_max / K; /* >= 1: supports_op checked K */
    if (chunk > M)
        chunk = M;
    tport_status st = grow_scratch(s, chunk * K);
    if (st != TPORT_STATUS_OK)
        return st;
    const char *base = (const char *)a->data + a2 * a->nb[2] + a3 * a->nb[3];
    for (int64_t m0 = 0; m0 < M; m0 += chunk) {
        const int64_t rows = M - m0 < chunk ? M - m0 : chunk;
        for (int64_t r = 0; r < rows; r++) {
            st = blas_host->to_float(TPORT_TYPE_F16, base + (m0 + r) * a->nb[1], s->scratch + r * K, K);
            if (st != TPORT_STATUS_OK)
                return blas_host->error(st, "blas: converting f16 weight '%s' failed", a->name ? a->name : "");
        }
        gemm_slices(d, a, b, a2, a3, s->scratch, (int)K, m0, rows);
    }
    return TPORT_STATUS_OK;
}

tport_status blas_mul_mat(blas_state *s, const tport_graph_view *g, int32_t node) {
    const tport_tensor_view *d = g->tensors[node];
    const tport_tensor_view *a = g->tensors[d->src[0]], *b = g->tensors[d->src[1]];
    if (!d->data || !a->data || !b->data)
        return blas_host->error(TPORT_STATUS_INVALID_ARGUMENT, "blas: mul_mat '%s' has no data",
                                d->name ? d->name : "");
    for (int64_t a3 = 0; a3 < a->ne[3]; a3++)
        for (int64_t a2 = 0; a2 < a->ne[2]; a2++) {
            if (a->type == TPORT_TYPE_F32) {
                const float *w = (const float *)((const char *)a->data + a2 * a->nb[2] + a3 * a->nb[3]);
                gemm_slices(d, a, b, a2, a3, w, ld_of(a, 4), 0, a->ne[1]);
            } else {
                tport_status st = f16_slice(s, d, a, b, a2, a3);
                if (st != TPORT_STATUS_OK)
                    return st;
            }
        }
    return TPORT_STATUS_OK;
}
