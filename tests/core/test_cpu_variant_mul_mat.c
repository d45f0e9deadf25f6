/* mul_mat of the CPU plug-in variants (libtport-cpu-{x86-64,avx2,avx512}.so)
 * for every weight type the fast paths treat specially (f32, f16, the
 * tiled 32-element types q8_0, q4_0, q5_0, q4_1, q5_1, and the tiled
 * K-quants q4_k, q5_k, q6_k) and for mxfp4 (the gpt-oss type), iq4_nl and
 * iq4_xs (table-lookup types: row kernels, and tiled for batches), on
 * shapes that exercise whole and partial tiles: N not a
 * multiple of the row tile, M of 1 (generation), and M large enough for
 * the tiled kernels with a partial column group, with 1 and 2 threads.
 * Each result is compared with a double-precision dot of the reference
 * dequantized weights, within the error of quantizing the activations.
 *
 * The variant is named by TPORT_TEST_CPU_VARIANT (a plug-in file); without
 * it, or on a machine lacking the variant's instruction sets, the test
 * checks whatever "cpu" backend is active.
 *
 * With TPORT_CPU_F16_BATCH=bf16, f16 weight batches (17+ columns: up to 16
 * take the exact few-column kernels; K a multiple of 16) of the avx512 variant on a CPU with AVX512-BF16 must
 * equal, to f32 rounding, the dot of weights and activations both rounded
 * to bf16, and differ from the exact dot somewhere (so the bf16 kernel
 * ran); an f16 operand that is not a weight, and every other variant or
 * CPU, must stay exact. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core_test_util.h"
#include "quant/type_table.h"

static bool expect_bf16; /* f16 batches multiply in bf16 here (main) */

/* f32 rounded to bf16 (nearest even) and back; the test's own rounding */
static double bf16_round(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* weight: the first operand is marked a weight (only weights may take bf16) */
static void check_type(tport_type_id type, int64_t K, int64_t N, int64_t M, int threads, bool weight) {
    const tport_type_traits *tr = tport_traits(type);
    CHECK(tr && tr->to_float && tr->from_float, "type %u has conversions", type);
    if (!tr || !tr->to_float || !tr->from_float || K % tr->info.block_size != 0)
        return;
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    tport_tensor *w = ct_rand(ctx, TPORT_TYPE_F32, K, N, 1, 1);
    tport_tensor *q = tport_new_tensor_2d(ctx, type, K, N);
    tport_tensor *x = ct_rand(ctx, TPORT_TYPE_F32, K, M, 1, 1);
    CHECK(w && q && x, "%s: tensors", tr->info.name);
    if (!w || !q || !x) {
        tport_ctx_free(ctx);
        return;
    }
    tr->from_float(tport_tensor_data(w), tport_tensor_data(q), K * N);
    if (weight)
        tport_tensor_set_weight(q);
    float *deq = malloc((size_t)(K * N) * sizeof *deq);
    tr->to_float(tport_tensor_data(q), deq, K * N);

    tport_tensor *y = tport_mul_mat(ctx, q, x);
    tport_graph *g = ct_run(ctx, y, threads);
    CHECK(g, "%s: mul_mat %lldx%lldx%lld", tr->info.name, (long long)K, (long long)N, (long long)M);
    bool bf16 = expect_bf16 && weight && type == TPORT_TYPE_F16 && M > 16 && K % 16 == 0;
    int bad = 0, off_exact = 0;
    for (int64_t j = 0; g && j < M; j++) {
        double xmax = 0.0;
        for (int64_t k = 0; k < K; k++)
            xmax = fmax(xmax, fabs(ct_get(x, k, j, 0, 0)));
        for (int64_t i = 0; i < N; i++) {
            double s = 0.0, sa = 0.0, exact = 0.0;
            for (int64_t k = 0; k < K; k++) {
                double w = deq[i * K + k], v = ct_get(x, k, j, 0, 0);
                exact += w * v;
                s += bf16 ? bf16_round(w) * bf16_round(v) : w * v;
                sa += fabs(deq[i * K + k]);
            }
            /* f32/f16 weights: float rounding only; quantized: activations
             * are quantized to 8 bits, error <= sum|w| * max|x| / 254 */
            double bound = tr->info.is_quantized ? sa * xmax / 200.0 + 1e-4 : 1e-4 * (sa * xmax + 1.0);
            if (bf16)
                bound = 3e-5 * sa * xmax + 1e-6;
            double got = ct_get(y, i, j, 0, 0);
            off_exact += bf16 && fabs(got - exact) > bound;
            if (!(fabs(got - s) <= bound)) {
                if (!bad)
                    fprintf(stderr, "%s K%lld N%lld M%lld t%d: [%lld,%lld] = %g, want %g (bound %g)\n",
                            tr->info.name, (long long)K, (long long)N, (long long)M, threads, (long long)i,
                            (long long)j, got, s, bound);
                bad++;
            }
        }
    }
    CHECK(!bad, "%s K%lld N%lld M%lld, %d threads: %d outputs off%s", tr->info.name, (long long)K, (long long)N,
          (long long)M, threads, bad, bf16 ? " the bf16 dot" : "");
    CHECK(!bf16 || off_exact > 0, "%s K%lld N%lld M%lld, %d threads: bf16 asked for, every output exact",
          tr->info.name, (long long)K, (long long)N, (long long)M, threads);
    tport_graph_free(g);
    free(deq);
    tport_ctx_free(ctx);
}

/* A batch of the table-lookup types (tiled kernels, 4+ columns) against
 * each column multiplied alone (the row kernels), far tighter than
 * check_type's bound: the same integer sums, the float ones reordered,
 * 1e-5 of sum |w| * max |x|.  A wrong value, scale or offset in a tile is
 * off by a good part of an output. */
static void check_tile_vs_rows(tport_type_id type, int64_t K, int64_t N, int64_t M, int threads, bool weight) {
    const tport_type_traits *tr = tport_traits(type);
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    tport_tensor *w = ct_rand(ctx, TPORT_TYPE_F32, K, N, 1, 1);
    tport_tensor *q = tport_new_tensor_2d(ctx, type, K, N);
    tport_tensor *x = ct_rand(ctx, TPORT_TYPE_F32, K, M, 1, 1);
    tport_tensor *x1 = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, K, 1);
    CHECK(tr && w && q && x && x1, "type %u: tensors", type);
    if (!tr || !w || !q || !x || !x1) {
        tport_ctx_free(ctx);
        return;
    }
    tr->from_float(tport_tensor_data(w), tport_tensor_data(q), K * N);
    if (weight)
        tport_tensor_set_weight(q);
    float *deq = malloc((size_t)(K * N) * sizeof *deq);
    tr->to_float(tport_tensor_data(q), deq, K * N);
    tport_tensor *y = tport_mul_mat(ctx, q, x);
    tport_graph *g = ct_run(ctx, y, threads);
    CHECK(g != NULL, "%s: batch mul_mat", tr->info.name);
    int bad = 0;
    for (int64_t j = 0; g && j < M; j++) {
        double xmax = 0.0;
        for (int64_t k = 0; k < K; k++) {
            ct_set(x1, k, 0, 0, 0, ct_get(x, k, j, 0, 0));
            xmax = fmax(xmax, fabs(ct_get(x, k, j, 0, 0)));
        }
        tport_tensor *y1 = tport_mul_mat(ctx, q, x1);
        tport_graph *g1 = ct_run(ctx, y1, threads);
        CHECK(g1 != NULL, "%s: one column", tr->info.name);
        for (int64_t i = 0; g1 && i < N; i++) {
            double sa = 0.0;
            for (int64_t k = 0; k < K; k++)
                sa += fabs(deq[i * K + k]);
            double got = ct_get(y, i, j, 0, 0), want = ct_get(y1, i, 0, 0, 0);
            if (!(fabs(got - want) <= 1e-5 * sa * xmax + 1e-7) && bad++ < 3)
                fprintf(stderr, "%s K%lld N%lld M%lld t%d: [%lld,%lld] batch %.9g, alone %.9g\n", tr->info.name,
                        (long long)K, (long long)N, (long long)M, threads, (long long)i, (long long)j, got, want);
        }
        tport_graph_free(g1);
    }
    CHECK(!bad, "%s K%lld N%lld M%lld, %d threads: %d batch outputs off the one-column ones", tr->info.name,
          (long long)K, (long long)N, (long long)M, threads, bad);
    tport_graph_free(g);
    free(deq);
    tport_ctx_free(ctx);
}

int main(void) {
    const char *variant = getenv("TPORT_TEST_CPU_VARIANT");
    if (variant && *variant) {
        tport_status st = tport_backend_load(variant);
        if (st != TPORT_STATUS_OK)
            fprintf(stderr, "note: %s not loaded (%s): testing the active cpu backend\n", variant,
                    tport_last_error());
        const char *batch = getenv("TPORT_CPU_F16_BATCH");
        expect_bf16 = st == TPORT_STATUS_OK && strstr(variant, "avx512") && batch && !strcmp(batch, "bf16");
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
        expect_bf16 = expect_bf16 && __builtin_cpu_supports("avx512bf16");
#else
        expect_bf16 = false;
#endif
        if (batch)
            fprintf(stderr, "note: TPORT_CPU_F16_BATCH=%s: f16 batches expected %s\n", batch,
                    expect_bf16 ? "in bf16" : "exact");
    }
    static const tport_type_id types[] = {TPORT_TYPE_F32,  TPORT_TYPE_F16,  TPORT_TYPE_Q8_0, TPORT_TYPE_Q4_0,
                                          TPORT_TYPE_Q5_0, TPORT_TYPE_Q4_1, TPORT_TYPE_Q5_1, TPORT_TYPE_Q4_K,
                                          TPORT_TYPE_Q5_K, TPORT_TYPE_Q6_K, TPORT_TYPE_MXFP4, TPORT_TYPE_IQ4_NL,
                                          TPORT_TYPE_IQ4_XS};
    static const int64_t shapes[][3] = {
        /* K, N, M */
        {256, 13, 1}, {256, 13, 3}, {256, 13, 4}, {512, 21, 9}, {256, 8, 17}, {768, 5, 6},
        /* big enough (>= 64K multiply-adds) for the backend to use 2 threads */
        {512, 37, 11}, {1024, 19, 8}, {768, 300, 1},
        /* f32/f16 batches: chunks of 32 rows with a partial panel, K in three
         * uneven blocks, a partial group of columns */
        {1280, 45, 13},
        /* bf16 on AMX tiles: whole 32 x 32 blocks written in place over two
         * K blocks, then a partial group of tokens and a partial panel */
        {1024, 128, 48}, {1280, 100, 40},
        /* rows of 1152 (Gemma 3 1B): not a multiple of 256, so the
         * K-quant types skip it; the 32-element types tile 36 blocks over
         * 13 rows and 7 columns */
        {1152, 13, 7},
    };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int threads = 1; threads <= 2; threads++)
                check_type(types[t], shapes[s][0], shapes[s][1], shapes[s][2], threads, true);
    /* the lattice i-quants that have quantizers here, Q2_K and TQ2_0: their
     * batches take the tiled kernel (cpu_mul_mat_iqtile.c) where the
     * variant has it */
    static const tport_type_id iq_types[] = {TPORT_TYPE_IQ2_S, TPORT_TYPE_IQ3_XXS, TPORT_TYPE_IQ3_S, TPORT_TYPE_IQ1_M,
                                             TPORT_TYPE_Q2_K,   TPORT_TYPE_TQ2_0};
    static const int64_t iq_shapes[][3] = {{256, 13, 3}, {256, 13, 4}, {512, 21, 9}, {768, 5, 6}, {512, 37, 11}};
    for (size_t t = 0; t < sizeof iq_types / sizeof iq_types[0]; t++)
        for (size_t s = 0; s < sizeof iq_shapes / sizeof iq_shapes[0]; s++)
            for (int threads = 1; threads <= 2; threads++)
                check_type(iq_types[t], iq_shapes[s][0], iq_shapes[s][1], iq_shapes[s][2], threads, true);
    /* the table-lookup types' tiles: odd N (a partial tile), M with a
     * partial group of 4 columns, K of an odd number of blocks */
    static const tport_type_id luts[] = {TPORT_TYPE_MXFP4, TPORT_TYPE_IQ4_NL, TPORT_TYPE_IQ4_XS};
    static const int64_t lut_shapes[][3] = {{256, 13, 5}, {352, 11, 9}, {768, 21, 7}, {1280, 9, 4}, {2304, 3, 6}};
    for (size_t t = 0; t < sizeof luts / sizeof luts[0]; t++)
        for (size_t s = 0; s < sizeof lut_shapes / sizeof lut_shapes[0]; s++)
            if (lut_shapes[s][0] % tport_traits(luts[t])->info.block_size == 0)
                check_tile_vs_rows(luts[t], lut_shapes[s][0], lut_shapes[s][1], lut_shapes[s][2], 1 + (int)(s & 1),
                                   true);
    /* batches of 32 columns and more: on AMX-INT8 tiles where the CPU has
     * them (cpu_mul_mat_amx_q4.c; 32 rows x 32 columns a step): a partial
     * tile of rows, whole and partial groups of columns (one of 16 or
     * fewer: half the tiles), against the columns alone and the f64 dot;
     * Q4_0 and Q8_0 not as weights, which the variants may re-encode
     * (x8, another kernel) */
    static const tport_type_id amx_types[] = {TPORT_TYPE_MXFP4, TPORT_TYPE_IQ4_NL, TPORT_TYPE_Q4_0, TPORT_TYPE_Q5_0,
                                              TPORT_TYPE_Q8_0};
    static const int64_t amx_shapes[][3] = {{768, 45, 37}, {1152, 70, 64}, {256, 32, 83}};
    for (size_t t = 0; t < sizeof amx_types / sizeof amx_types[0]; t++)
        for (size_t s = 0; s < sizeof amx_shapes / sizeof amx_shapes[0]; s++) {
            bool weight = amx_types[t] != TPORT_TYPE_Q4_0 && amx_types[t] != TPORT_TYPE_Q8_0;
            check_tile_vs_rows(amx_types[t], amx_shapes[s][0], amx_shapes[s][1], amx_shapes[s][2],
                               1 + (int)(s & 1), weight);
            check_type(amx_types[t], amx_shapes[s][0], amx_shapes[s][1], amx_shapes[s][2], 2 - (int)(s & 1), weight);
        }
    /* the K-quants' batches of 96 columns and more (CPU_AMX_KQ_MIN_COLS),
     * on AMX tiles where the variant and CPU have them
     * (cpu_mul_mat_amx_kq.c): rows in two whole tiles of 16 and a partial
     * one, whole groups of 32 columns and a partial one, against the row
     * kernels as tightly as the tiles above (odd N: Q4_K stays in the
     * file's layout, not x8) */
    static const tport_type_id kqs[] = {TPORT_TYPE_Q4_K, TPORT_TYPE_Q5_K, TPORT_TYPE_Q6_K, TPORT_TYPE_IQ4_XS};
    static const int64_t kq_shapes[][3] = {{1024, 37, 109}, {256, 16, 96}, {768, 21, 130}};
    for (size_t t = 0; t < sizeof kqs / sizeof kqs[0]; t++)
        for (size_t s = 0; s < sizeof kq_shapes / sizeof kq_shapes[0]; s++)
            check_tile_vs_rows(kqs[t], kq_shapes[s][0], kq_shapes[s][1], kq_shapes[s][2], 1 + (int)(s & 1), true);
    /* an f16 operand that is not a weight (a KV cache) stays exact */
    check_type(TPORT_TYPE_F16, 512, 21, 9, 1, false);
    return test_finish("test_cpu_variant_mul_mat");
}
