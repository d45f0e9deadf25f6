/* The blas plug-in on mul_mat graphs: F32 and F16 weights, odd sizes,
 * padded rows, permuted batches and broadcast weights, compared with a
 * double-precision reference; batches at or above the threshold must run on
 * blas, smaller ones on cpu (the per-operation choice). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <tport/tport.h>

#include "../test_util.h"

#ifndef TPORT_BLAS_PLUGIN
int main(void) {
    test_skip("test_blas_mul_mat", "the blas plug-in was not built (OpenBLAS not found)");
}
#else

#define MIN_BATCH 32 /* the plug-in's default TPORT_BLAS_MIN_BATCH */
#define SCRATCH "1500" /* TPORT_BLAS_SCRATCH_FLOATS for this test */

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;

/* value of element (i0, i1, i2, i3) of t read as F32 or F16 */
static double elem(const tport_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char *p = (const char *)tport_tensor_data(t) + i0 * tport_tensor_nb(t, 0) + i1 * tport_tensor_nb(t, 1) +
                    i2 * tport_tensor_nb(t, 2) + i3 * tport_tensor_nb(t, 3);
    if (tport_tensor_type(t) == TPORT_TYPE_F32)
        return *(const float *)p;
    float f = 0;
    tport_dequantize(TPORT_TYPE_F16, p, &f, 1);
    return f;
}

/* Fills a leaf with random values in [-1, 1) (converted for F16). */
static void fill(tport_tensor *t) {
    int64_t n = tport_tensor_nelements(t);
    float *tmp = malloc((size_t)n * sizeof *tmp);
    for (int64_t i = 0; i < n; i++)
        tmp[i] = test_rng_uniform(&rng);
    if (tport_tensor_type(t) == TPORT_TYPE_F32)
        memcpy(tport_tensor_data(t), tmp, (size_t)n * sizeof *tmp);
    else
        CHECK(tport_quantize(tport_tensor_type(t), NULL, tmp, tport_tensor_data(t), n) == TPORT_STATUS_OK,
              "f16 fill: %s", tport_last_error());
    free(tmp);
}

/* Checks d = a x b (a broadcast over dims 2, 3) against a double sum, with
 * a tolerance scaled by sum |a b| (float accumulation in any order). */
static void check_result(const char *what, const tport_tensor *a, const tport_tensor *b, const tport_tensor *d) {
    const int64_t K = tport_tensor_ne(a, 0);
    const int64_t r2 = tport_tensor_ne(b, 2) / tport_tensor_ne(a, 2), r3 = tport_tensor_ne(b, 3) / tport_tensor_ne(a, 3);
    double worst = 0;
    int64_t bad = 0;
    for (int64_t i3 = 0; i3 < tport_tensor_ne(d, 3); i3++)
        for (int64_t i2 = 0; i2 < tport_tensor_ne(d, 2); i2++)
            for (int64_t j = 0; j < tport_tensor_ne(d, 1); j++)
                for (int64_t i = 0; i < tport_tensor_ne(d, 0); i++) {
                    double sum = 0, mag = 0;
                    for (int64_t k = 0; k < K; k++) {
                        double p = elem(a, k, i, i2 / r2, i3 / r3) * elem(b, k, j, i2, i3);
                        sum += p;
                        mag += fabs(p);
                    }
                    double err = fabs(elem(d, i, j, i2, i3) - sum);
                    double tol = 1e-5 * mag + 1e-6;
                    if (err > tol)
                        bad++;
                    if (err / (mag + 1e-30) > worst)
                        worst = err / (mag + 1e-30);
                }
    CHECK(bad == 0, "%s: %lld elements off the reference (worst relative error %.3g)", what, (long long)bad, worst);
}

/* Index of tensor t among the graph's nodes, or -1. */
static int node_index(const tport_graph *g, const tport_tensor *t) {
    for (int i = 0; i < tport_graph_n_nodes(g); i++)
        if (tport_graph_node(g, i) == t)
            return i;
    return -1;
}

static void run_case(const char *what, tport_ctx *ctx, tport_tensor *a, tport_tensor *b) {
    tport_tensor *d = tport_mul_mat(ctx, a, b);
    CHECK(d != NULL, "%s: mul_mat: %s", what, tport_last_error());
    if (!d)
        return;
    tport_graph *g = tport_graph_new(ctx);
    CHECK(g && tport_graph_add(g, d) == TPORT_STATUS_OK, "%s: graph: %s", what, tport_last_error());
    tport_compute_params p = {.n_threads = 2, .backend = NULL};
    tport_status st = tport_graph_compute(g, &p);
    CHECK(st == TPORT_STATUS_OK, "%s: compute: %s", what, tport_last_error());
    if (st == TPORT_STATUS_OK) {
        int idx = node_index(g, d);
        const char *ran = idx >= 0 ? tport_graph_node_backend(g, idx) : NULL;
        const char *want = tport_tensor_ne(b, 1) >= MIN_BATCH ? "blas" : "cpu";
        CHECK(ran && !strcmp(ran, want), "%s: batch %lld ran on %s, expected %s", what,
              (long long)tport_tensor_ne(b, 1), ran ? ran : "(none)", want);
        check_result(what, a, b, d);
        printf("%-40s -> %s\n", what, ran ? ran : "(none)");
    }
    tport_graph_free(g);
}

/* Plain contiguous operands: a [K, M, A2, A3], b [K, N, B2, B3]. */
static void contiguous_case(const char *what, tport_type_id wtype, int64_t K, int64_t M, int64_t N, int64_t a2,
                            int64_t a3, int64_t b2, int64_t b3) {
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    tport_tensor *a = tport_new_tensor_4d(ctx, wtype, K, M, a2, a3);
    tport_tensor *b = tport_new_tensor_4d(ctx, TPORT_TYPE_F32, K, N, b2, b3);
    fill(a);
    fill(b);
    run_case(what, ctx, a, b);
    tport_ctx_free(ctx);
}

/* Weights and activations as views with padded rows (row stride > row). */
static void padded_case(const char *what, tport_type_id wtype, int64_t K, int64_t M, int64_t N) {
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    tport_tensor *abig = tport_new_tensor_2d(ctx, wtype, K + 5, M);
    tport_tensor *bbig = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, K + 3, N);
    fill(abig);
    fill(bbig);
    int64_t ane[2] = {K, M}, bne[2] = {K, N};
    size_t anb[2] = {tport_tensor_nb(abig, 0), tport_tensor_nb(abig, 1)};
    size_t bnb[2] = {tport_tensor_nb(bbig, 0), tport_tensor_nb(bbig, 1)};
    tport_tensor *a = tport_view(ctx, abig, 2, ane, anb, tport_tensor_nb(abig, 0) * 2);
    tport_tensor *b = tport_view(ctx, bbig, 2, bne, bnb, tport_tensor_nb(bbig, 0));
    CHECK(a && b, "%s: views: %s", what, tport_last_error());
    if (a && b)
        run_case(what, ctx, a, b);
    tport_ctx_free(ctx);
}

/* Activations permuted: built [K, B2, N] and viewed as [K, N, B2], so the
 * batch stride is smaller than the row stride (one sgemm per slice). */
static void permuted_case(const char *what, int64_t K, int64_t M, int64_t N, int64_t b2) {
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    tport_tensor *a = tport_new_tensor_3d(ctx, TPORT_TYPE_F32, K, M, 1);
    tport_tensor *braw = tport_new_tensor_3d(ctx, TPORT_TYPE_F32, K, b2, N);
    fill(a);
    fill(braw);
    tport_tensor *b = tport_permute(ctx, braw, 0, 2, 1, 3);
    CHECK(b && tport_tensor_ne(b, 1) == N && tport_tensor_ne(b, 2) == b2, "%s: permute: %s", what,
          tport_last_error());
    if (b)
        run_case(what, ctx, a, b);
    tport_ctx_free(ctx);
}

int main(void) {
    unsetenv("TPORT_BLAS_MIN_BATCH");
    setenv("TPORT_BLAS_F16", "1", 1); /* F16 weights are opt-in */
    /* F32 too on CPUs where the plug-in would leave it to the CPU backend */
    setenv("TPORT_BLAS_F32", "1", 1);
    /* a small F16 conversion scratch, so F16 weights go through several
     * chunks of rows (the default bound is 16 MiB) */
    setenv("TPORT_BLAS_SCRATCH_FLOATS", SCRATCH, 1);
    unsetenv("TPORT_BACKEND");
    tport_status st = tport_backend_load(TPORT_BLAS_PLUGIN);
    CHECK(st == TPORT_STATUS_OK, "load %s: %s", TPORT_BLAS_PLUGIN, tport_last_error());
    if (st != TPORT_STATUS_OK)
        return test_finish("test_blas_mul_mat");
    bool found = false;
    for (int i = 0; i < tport_backend_count(); i++)
        found = found || !strcmp(tport_backend_name(i), "blas");
    CHECK(found, "blas is not among the active backends");

    /* above the threshold: blas */
    contiguous_case("f32 67x29 x 37", TPORT_TYPE_F32, 67, 29, 37, 1, 1, 1, 1);
    contiguous_case("f16 67x29 x 37", TPORT_TYPE_F16, 67, 29, 37, 1, 1, 1, 1);
    contiguous_case("f32 exactly the threshold", TPORT_TYPE_F32, 33, 17, MIN_BATCH, 1, 1, 1, 1);
    contiguous_case("f32 broadcast [2,1] over [4,3]", TPORT_TYPE_F32, 45, 13, 35, 2, 1, 4, 3);
    contiguous_case("f16 broadcast [1,3] over [2,3]", TPORT_TYPE_F16, 45, 13, 35, 1, 3, 2, 3);
    padded_case("f32 padded rows", TPORT_TYPE_F32, 71, 19, 41);
    padded_case("f16 padded rows", TPORT_TYPE_F16, 71, 19, 41);
    permuted_case("f32 permuted activations", 40, 23, 36, 3);
    /* with the scratch bound at SCRATCH floats (set below): 67x29 converts
     * in two chunks of rows, 1499x7 in seven chunks of one row */
    contiguous_case("f16 one row per chunk 1499x7 x 40", TPORT_TYPE_F16, 1499, 7, 40, 1, 1, 1, 1);
    /* below the threshold: the cpu backend */
    contiguous_case("f32 below threshold (31)", TPORT_TYPE_F32, 67, 29, MIN_BATCH - 1, 1, 1, 1, 1);
    contiguous_case("f16 one token", TPORT_TYPE_F16, 67, 29, 1, 1, 1, 1, 1);
    return test_finish("test_blas_mul_mat");
}
#endif
