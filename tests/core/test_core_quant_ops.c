/* CPU ops on quantized weights: cpy f32 -> quantized (bit-exact with the
 * reference quantizer in the type table), get_rows (bit-exact with the
 * reference dequantizer) and mul_mat (against a double-precision dot of the
 * dequantized weights, within the error of quantizing the activations). */
#include <stdlib.h>

#include "core_test_util.h"
#include "quant/type_table.h"

static void test_type(tport_ctx *ctx, tport_type_id type) {
    const tport_type_traits *tr = tport_traits(type);
    if (!tr || !tr->to_float || !tr->from_float)
        return;
    const char *name = tr->info.name;
    int64_t K = 2 * tr->info.block_size * (tr->info.block_size < 256 ? 4 : 1), N = 7, M = 3;
    tport_tensor *w = ct_rand(ctx, TPORT_TYPE_F32, K, N, 1, 1);
    tport_tensor *q = tport_new_tensor_2d(ctx, type, K, N);
    CHECK(q, "%s: tensor", name);
    if (!q)
        return;
    /* cpy f32 -> quantized equals the reference quantizer, byte for byte */
    tport_graph *g = ct_run(ctx, tport_cpy(ctx, w, q), 2);
    CHECK(g, "%s: cpy", name);
    if (!g)
        return;
    tport_graph_free(g);
    size_t bytes = tport_tensor_nbytes(q);
    uint8_t *want = malloc(bytes);
    tr->from_float(tport_tensor_data(w), want, K * N);
    CHECK(!memcmp(want, tport_tensor_data(q), bytes), "%s: cpy differs from the reference quantizer", name);
    free(want);

    /* the dequantized weights, by the reference */
    float *deq = malloc((size_t)(K * N) * sizeof *deq);
    tr->to_float(tport_tensor_data(q), deq, K * N);

    /* get_rows */
    tport_tensor *ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, 3);
    int32_t rows[3] = {6, 0, 3};
    memcpy(tport_tensor_data(ids), rows, sizeof rows);
    tport_tensor *gr = tport_get_rows(ctx, q, ids);
    g = ct_run(ctx, gr, 1);
    CHECK(g, "%s: get_rows", name);
    if (g) {
        int ok = 1;
        for (int r = 0; r < 3; r++)
            for (int64_t k = 0; k < K; k++)
                if (ct_get(gr, k, r, 0, 0) != deq[rows[r] * K + k])
                    ok = 0;
        CHECK(ok, "%s: get_rows differs from the reference dequantizer", name);
        tport_graph_free(g);
    }

    /* mul_mat, with 1 and 2 threads */
    tport_tensor *x = ct_rand(ctx, TPORT_TYPE_F32, K, M, 1, 1);
    tport_tensor *y = tport_mul_mat(ctx, q, x);
    for (int threads = 1; threads <= 2; threads++) {
        g = ct_run(ctx, y, threads);
        CHECK(g, "%s: mul_mat", name);
        if (!g)
            break;
        int ok = 1;
        for (int64_t j = 0; j < M; j++) {
            double xmax = 0.0;
            for (int64_t k = 0; k < K; k++)
                xmax = fmax(xmax, fabs(ct_get(x, k, j, 0, 0)));
            for (int64_t i = 0; i < N; i++) {
                double s = 0.0, sa = 0.0;
                for (int64_t k = 0; k < K; k++) {
                    s += (double)deq[i * K + k] * ct_get(x, k, j, 0, 0);
                    sa += fabs(deq[i * K + k]);
                }
                /* activations quantized to 8 bits: error <= sum|w| * max|x| / 254 per term */
                double bound = sa * xmax / 100.0 + 1e-4;
                double got = ct_get(y, i, j, 0, 0);
                if (!(fabs(got - s) <= bound)) {
                    if (ok)
                        fprintf(stderr, "%s: mul_mat[%lld,%lld] = %g, want %g (bound %g)\n", name, (long long)i,
                                (long long)j, got, s, bound);
                    ok = 0;
                }
            }
        }
        CHECK(ok, "%s: mul_mat (%d threads)", name, threads);
        tport_graph_free(g);
    }
    free(deq);
}

int main(void) {
    int n_quant = 0;
    for (int i = 0; i < tport_traits_count(); i++)
        if (tport_traits_at(i)->info.is_quantized && tport_traits_at(i)->from_float)
            n_quant++;
    if (!n_quant)
        test_skip("test_core_quant_ops", "no quantized types in the type table yet");
    tport_ctx *ctx = tport_ctx_new(16u << 20);
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *tr = tport_traits_at(i);
        if (tr->info.is_quantized && tr->info.id != TPORT_TYPE_Q8_K && tr->info.id != TPORT_TYPE_Q8_1)
            test_type(ctx, tr->info.id);
    }
    tport_ctx_free(ctx);
    return test_finish("test_core_quant_ops");
}
