/* The vulkan plug-in op by op on small shapes, through the public API:
 * mul_mat (one-token and tiled batch paths) and get_rows for every weight
 * type it claims, compared with a double-precision product of the
 * reference dequantization (with TPORT_VULKAN_EXACT_ACTIVATIONS=1: the
 * activations in f32), then the quantized products again against the CPU
 * backend with the activations rounded as the CPU rounds them (the
 * plug-in's default); every other op compared with the CPU backend on the
 * same graph.  Each case also checks the node ran on vulkan.
 * ctest runs it plainly, with TPORT_VULKAN_FORCE_32BIT=1, with a small
 * TPORT_VULKAN_MAX_BUFFER (weights bound in chunks of rows) and under the
 * Khronos validation layer. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <tport/tport.h>

#include "vulkan_test.h"

#define NAME "test_vulkan_ops"

#ifndef TPORT_VULKAN_PLUGIN
int main(void) {
    vulkan_test_unavailable(NAME, "the vulkan plug-in was not built (Vulkan loader or glslc not found)");
}
#else

static unsigned long long rng = 0x2545f4914f6cdd1dULL;

/* With a forced small binding range, nodes with activations larger than it
 * are declined: the graphs then run with vulkan preferred (TPORT_BACKEND)
 * rather than forced, and only the chunked cases must run on vulkan. */
static const char *vk_force = "vulkan";
static bool vk_must_run = true;

static void fill_f32(float *x, int64_t n, float scale) {
    for (int64_t i = 0; i < n; i++)
        x[i] = test_rng_uniform(&rng) * scale;
}

/* Fills a leaf of any type with random values (quantized by the reference). */
static void fill(tport_tensor *t, float scale) {
    int64_t n = tport_tensor_nelements(t);
    float *tmp = malloc((size_t)n * sizeof *tmp);
    fill_f32(tmp, n, scale);
    if (tport_tensor_type(t) == TPORT_TYPE_F32)
        memcpy(tport_tensor_data(t), tmp, (size_t)n * sizeof *tmp);
    else
        CHECK(tport_quantize(tport_tensor_type(t), NULL, tmp, tport_tensor_data(t), n) == TPORT_STATUS_OK,
              "fill: %s", tport_last_error());
    free(tmp);
}

static int node_index(const tport_graph *g, const tport_tensor *t) {
    for (int i = 0; i < tport_graph_n_nodes(g); i++)
        if (tport_graph_node(g, i) == t)
            return i;
    return -1;
}

/* Computes the graph of `out` on `backend`; checks `out` ran there.  The
 * graph owns the intermediates' memory: free it after reading `out`. */
static tport_graph *compute_on(tport_tensor *out, tport_ctx *ctx, const char *backend, const char *what,
                               const char *want_ran) {
    if (backend && !strcmp(backend, "vulkan")) {
        backend = vk_force;
        if (!vk_must_run && want_ran && !strcmp(want_ran, "vulkan"))
            want_ran = NULL;
    }
    tport_graph *g = tport_graph_new(ctx);
    bool ok = g && tport_graph_add(g, out) == TPORT_STATUS_OK;
    CHECK(ok, "%s: graph: %s", what, tport_last_error());
    if (ok) {
        tport_compute_params p = {.n_threads = 1, .backend = backend};
        tport_status st = tport_graph_compute(g, &p);
        CHECK(st == TPORT_STATUS_OK, "%s on %s: %s", what, backend, tport_last_error());
        ok = st == TPORT_STATUS_OK;
        if (ok && want_ran) {
            int i = node_index(g, out);
            const char *ran = i >= 0 ? tport_graph_node_backend(g, i) : NULL;
            CHECK(ran && !strcmp(ran, want_ran), "%s: ran on %s, expected %s", what, ran ? ran : "(none)",
                  want_ran);
        }
    }
    if (!ok) {
        tport_graph_free(g);
        return NULL;
    }
    return g;
}

/* Element (i0..i3) of a F32/F16 tensor as double. */
static double elem(const tport_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char *p = (const char *)tport_tensor_data(t) + i0 * tport_tensor_nb(t, 0) + i1 * tport_tensor_nb(t, 1) +
                    i2 * tport_tensor_nb(t, 2) + i3 * tport_tensor_nb(t, 3);
    if (tport_tensor_type(t) == TPORT_TYPE_F32)
        return *(const float *)p;
    float f = 0;
    tport_dequantize(TPORT_TYPE_F16, p, &f, 1);
    return f;
}

/* Row i1 (dims 2, 3 at i2, i3) of any type, dequantized by the reference. */
static void row_f32(const tport_tensor *t, int64_t i1, int64_t i2, int64_t i3, float *out) {
    int64_t K = tport_tensor_ne(t, 0);
    const tport_type_info *ti = tport_type_get(tport_tensor_type(t));
    if (!ti->is_quantized) {
        for (int64_t k = 0; k < K; k++)
            out[k] = (float)elem(t, k, i1, i2, i3);
        return;
    }
    const char *p = (const char *)tport_tensor_data(t) + i1 * tport_tensor_nb(t, 1) + i2 * tport_tensor_nb(t, 2) +
                    i3 * tport_tensor_nb(t, 3);
    tport_dequantize(tport_tensor_type(t), p, out, K);
}

/* d = a x b against double sums of the dequantized a; tolerance relative
 * to sum |a b| (float accumulation in another order). */
static void check_mul_mat(const char *what, const tport_tensor *a, const tport_tensor *b, const tport_tensor *d) {
    int64_t K = tport_tensor_ne(a, 0);
    int64_t r2 = tport_tensor_ne(b, 2) / tport_tensor_ne(a, 2), r3 = tport_tensor_ne(b, 3) / tport_tensor_ne(a, 3);
    float *arow = malloc((size_t)K * sizeof *arow);
    int64_t bad = 0;
    double worst = 0;
    for (int64_t i3 = 0; i3 < tport_tensor_ne(d, 3); i3++)
        for (int64_t i2 = 0; i2 < tport_tensor_ne(d, 2); i2++)
            for (int64_t i = 0; i < tport_tensor_ne(d, 0); i++) {
                row_f32(a, i, i2 / r2, i3 / r3, arow);
                for (int64_t j = 0; j < tport_tensor_ne(d, 1); j++) {
                    double sum = 0, mag = 0;
                    for (int64_t k = 0; k < K; k++) {
                        double p = (double)arow[k] * elem(b, k, j, i2, i3);
                        sum += p;
                        mag += fabs(p);
                    }
                    double err = fabs(elem(d, i, j, i2, i3) - sum);
                    if (err > 2e-5 * mag + 1e-6)
                        bad++;
                    if (err / (mag + 1e-30) > worst)
                        worst = err / (mag + 1e-30);
                }
            }
    CHECK(bad == 0, "%s: %lld elements off the reference (worst relative error %.3g)", what, (long long)bad, worst);
    printf("  %-44s worst relative error %.2g\n", what, worst);
    free(arow);
}

static const tport_type_id weight_types[] = {TPORT_TYPE_F32, TPORT_TYPE_F16, TPORT_TYPE_Q8_0,
                                             TPORT_TYPE_Q4_0, TPORT_TYPE_Q4_K, TPORT_TYPE_Q6_K};

static void mul_mat_case(tport_type_id type, int64_t K, int64_t M, int64_t N, int64_t a2, int64_t b2, int64_t b3) {
    char what[96];
    snprintf(what, sizeof what, "mul_mat %s [%lld,%lld,%lld] x N=%lld [%lld,%lld]", tport_type_get(type)->name,
             (long long)K, (long long)M, (long long)a2, (long long)N, (long long)b2, (long long)b3);
    tport_ctx *ctx = tport_ctx_new(16u << 20);
    tport_tensor *a = tport_new_tensor_4d(ctx, type, K, M, a2, 1);
    tport_tensor *b = tport_new_tensor_4d(ctx, TPORT_TYPE_F32, K, N, b2, b3);
    fill(a, 1.0f);
    fill(b, 1.0f);
    tport_tensor *d = tport_mul_mat(ctx, a, b);
    tport_graph *g = compute_on(d, ctx, "vulkan", what, "vulkan");
    if (g)
        check_mul_mat(what, a, b, d);
    tport_graph_free(g);
    tport_ctx_free(ctx);
}

/* Attention's V^T x P: the weight is a transposed F16/F32 view. */
static void transposed_case(tport_type_id type, int64_t K, int64_t M, int64_t N) {
    char what[96];
    snprintf(what, sizeof what, "mul_mat %s transposed [%lld,%lld] x N=%lld", tport_type_get(type)->name,
             (long long)K, (long long)M, (long long)N);
    tport_ctx *ctx = tport_ctx_new(16u << 20);
    tport_tensor *raw = tport_new_tensor_2d(ctx, type, M, K);
    tport_tensor *b = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, K, N);
    fill(raw, 1.0f);
    fill(b, 1.0f);
    tport_tensor *a = tport_transpose(ctx, raw);
    tport_tensor *d = tport_mul_mat(ctx, a, b);
    tport_graph *g = compute_on(d, ctx, "vulkan", what, "vulkan");
    if (g)
        check_mul_mat(what, a, b, d);
    tport_graph_free(g);
    tport_ctx_free(ctx);
}

static void get_rows_case(tport_type_id type, int64_t K, int64_t rows) {
    char what[96];
    snprintf(what, sizeof what, "get_rows %s [%lld,%lld]", tport_type_get(type)->name, (long long)K,
             (long long)rows);
    tport_ctx *ctx = tport_ctx_new(16u << 20);
    tport_tensor *a = tport_new_tensor_2d(ctx, type, K, rows);
    tport_tensor *ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, 6);
    fill(a, 2.0f);
    int32_t want[6] = {0, (int32_t)rows - 1, 3 % (int32_t)rows, 0, (int32_t)rows / 2, 1};
    memcpy(tport_tensor_data(ids), want, sizeof want);
    tport_tensor *d = tport_get_rows(ctx, a, ids);
    tport_graph *g = compute_on(d, ctx, "vulkan", what, "vulkan");
    if (g) {
        float *ref = malloc((size_t)K * sizeof *ref);
        int64_t bad = 0;
        for (int r = 0; r < 6; r++) {
            row_f32(a, want[r], 0, 0, ref);
            for (int64_t k = 0; k < K; k++)
                if (fabs(elem(d, k, r, 0, 0) - ref[k]) > 1e-6 * fabs(ref[k]) + 1e-7)
                    bad++;
        }
        CHECK(bad == 0, "%s: %lld elements differ from the reference dequantization", what, (long long)bad);
        free(ref);
    }
    tport_graph_free(g);
    tport_ctx_free(ctx);
}

/* ---- ops compared with the CPU backend ------------------------------------ */

typedef tport_tensor *(*build_fn)(tport_ctx *ctx);

/* Builds the graph twice from the same leaf values, computes one copy on
 * cpu and one on vulkan, and compares the outputs element by element. */
static void versus_cpu(const char *what, build_fn build, double tol) {
    tport_ctx *cc = tport_ctx_new(8u << 20), *vc = tport_ctx_new(8u << 20);
    unsigned long long seed = rng;
    tport_tensor *co = build(cc);
    rng = seed; /* the same leaf values */
    tport_tensor *vo = build(vc);
    tport_graph *cg = co ? compute_on(co, cc, "cpu", what, NULL) : NULL;
    tport_graph *vg = vo && cg ? compute_on(vo, vc, "vulkan", what, "vulkan") : NULL;
    if (cg && vg) {
        int64_t bad = 0;
        double worst = 0;
        for (int64_t i3 = 0; i3 < tport_tensor_ne(co, 3); i3++)
            for (int64_t i2 = 0; i2 < tport_tensor_ne(co, 2); i2++)
                for (int64_t i1 = 0; i1 < tport_tensor_ne(co, 1); i1++)
                    for (int64_t i0 = 0; i0 < tport_tensor_ne(co, 0); i0++) {
                        double x = elem(co, i0, i1, i2, i3), y = elem(vo, i0, i1, i2, i3);
                        double err = fabs(x - y) / (fabs(x) + 1.0);
                        if (!(err <= tol))
                            bad++;
                        if (err > worst)
                            worst = err;
                    }
        CHECK(bad == 0, "%s: %lld elements differ from cpu (worst %.3g, tolerance %.1g)", what, (long long)bad,
              worst, tol);
        printf("  %-44s worst difference from cpu %.2g\n", what, worst);
    }
    tport_graph_free(cg);
    tport_graph_free(vg);
    tport_ctx_free(cc);
    tport_ctx_free(vc);
}

static tport_tensor *leaf(tport_ctx *ctx, int64_t n0, int64_t n1, int64_t n2, int64_t n3, float scale) {
    tport_tensor *t = tport_new_tensor_4d(ctx, TPORT_TYPE_F32, n0, n1, n2, n3);
    fill(t, scale);
    return t;
}

static tport_type_id mm_type;
static int64_t mm_K, mm_N;
static tport_tensor *b_mul_mat(tport_ctx *c) {
    tport_tensor *a = tport_new_tensor_2d(c, mm_type, mm_K, 29);
    fill(a, 1.0f);
    return tport_mul_mat(c, a, leaf(c, mm_K, mm_N, 1, 1, 2));
}
static tport_tensor *b_add(tport_ctx *c) {
    return tport_add(c, leaf(c, 33, 4, 3, 2, 1), leaf(c, 33, 1, 3, 1, 1));
}
static tport_tensor *b_mul(tport_ctx *c) {
    return tport_mul(c, leaf(c, 33, 4, 3, 1, 1), leaf(c, 33, 1, 1, 1, 1));
}
static tport_tensor *b_scale(tport_ctx *c) {
    return tport_scale(c, leaf(c, 45, 7, 1, 1, 3), 0.125f);
}
static tport_tensor *b_silu(tport_ctx *c) {
    return tport_silu(c, leaf(c, 45, 7, 2, 1, 6));
}
static tport_tensor *b_gelu(tport_ctx *c) {
    return tport_gelu(c, leaf(c, 45, 7, 2, 1, 6));
}
static tport_tensor *b_swiglu(tport_ctx *c) {
    return tport_swiglu(c, leaf(c, 45, 7, 1, 1, 4), leaf(c, 45, 7, 1, 1, 4));
}
static tport_tensor *b_rms(tport_ctx *c) {
    return tport_rms_norm(c, leaf(c, 300, 5, 2, 1, 2), 1e-5f);
}
static tport_tensor *b_norm(tport_ctx *c) {
    return tport_norm(c, leaf(c, 300, 5, 2, 1, 2), 1e-5f);
}
static tport_tensor *b_softmax(tport_ctx *c) {
    tport_tensor *m = leaf(c, 37, 6, 1, 1, 1);
    float *md = tport_tensor_data(m);
    for (int i = 0; i < 6; i++) /* causal: -inf past the diagonal */
        for (int j = 31 + i; j < 37; j++)
            md[i * 37 + j] = -INFINITY;
    return tport_soft_max(c, leaf(c, 37, 5, 4, 1, 8), m, 0.35f);
}
static tport_tensor *b_softmax_plain(tport_ctx *c) {
    return tport_soft_max(c, leaf(c, 300, 3, 1, 1, 8), NULL, 1.0f);
}
static tport_tensor *rope_with(tport_ctx *c, int mode, int n_dims) {
    tport_tensor *x = leaf(c, 16, 3, 5, 1, 1);
    tport_tensor *pos = tport_new_tensor_1d(c, TPORT_TYPE_I32, 5);
    int32_t p[5] = {0, 1, 2, 7, 30};
    memcpy(tport_tensor_data(pos), p, sizeof p);
    return tport_rope(c, x, pos, n_dims, mode, 10000.0f, 1.0f);
}
static tport_tensor *b_rope(tport_ctx *c) {
    return rope_with(c, TPORT_ROPE_NORMAL, 16);
}
static tport_tensor *b_rope_neox(tport_ctx *c) {
    return rope_with(c, TPORT_ROPE_NEOX, 12);
}
static tport_tensor *b_cpy_f16(tport_ctx *c) {
    tport_tensor *dst = tport_new_tensor_2d(c, TPORT_TYPE_F16, 37, 5); /* odd: halves share words */
    return tport_cpy(c, leaf(c, 37, 5, 1, 1, 3), dst);
}
static tport_tensor *b_cont_t(tport_ctx *c) {
    return tport_cont(c, tport_transpose(c, leaf(c, 9, 13, 1, 1, 1)));
}
static tport_tensor *b_concat0(tport_ctx *c) {
    return tport_concat(c, leaf(c, 5, 3, 2, 1, 1), leaf(c, 4, 3, 2, 1, 1), 0);
}
static tport_tensor *b_concat2(tport_ctx *c) {
    return tport_concat(c, leaf(c, 5, 3, 2, 1, 1), leaf(c, 5, 3, 3, 1, 1), 2);
}
/* several nodes in one graph, intermediates staying on the device */
static tport_tensor *b_chain(tport_ctx *c) {
    tport_tensor *x = leaf(c, 64, 4, 1, 1, 1);
    tport_tensor *w = leaf(c, 64, 1, 1, 1, 1);
    tport_tensor *q = leaf(c, 64, 64, 1, 1, 0.2f);
    tport_tensor *h = tport_mul(c, tport_rms_norm(c, x, 1e-6f), w);
    tport_tensor *y = tport_mul_mat(c, q, h);
    int64_t ne[3] = {16, 4, 4};
    tport_tensor *heads = tport_reshape(c, tport_cont(c, y), 3, ne);
    tport_tensor *pos = tport_new_tensor_1d(c, TPORT_TYPE_I32, 4);
    int32_t p[4] = {0, 1, 2, 3};
    memcpy(tport_tensor_data(pos), p, sizeof p);
    tport_tensor *r = tport_rope(c, heads, pos, 16, TPORT_ROPE_NORMAL, 10000.0f, 1.0f);
    return tport_soft_max(c, tport_silu(c, r), NULL, 0.5f);
}

int main(void) {
    unsetenv("TPORT_BACKEND");
    const char *forced = getenv("TPORT_VULKAN_MAX_BUFFER");
    if (forced) { /* read at discovery (which warns that vulkan is not loaded yet) */
        setenv("TPORT_BACKEND", "vulkan,cpu", 1);
        vk_force = NULL;
        vk_must_run = false;
    }
    tport_status st = tport_backend_load(TPORT_VULKAN_PLUGIN);
    bool found = false;
    for (int i = 0; i < tport_backend_count(); i++)
        found = found || !strcmp(tport_backend_name(i), "vulkan");
    if (!found) {
        char why[300];
        snprintf(why, sizeof why, "the vulkan plug-in has no device here (%s)",
                 st == TPORT_STATUS_OK ? "not active" : tport_last_error());
        vulkan_test_unavailable(NAME, why);
    }
    printf("%s: %s%s%s\n", NAME, getenv("TPORT_VULKAN_FORCE_32BIT") ? "32-bit path; " : "",
           forced ? "binding range forced to " : "", forced ? forced : "");

    /* (with a forced range these would partly run on cpu, whose quantized
     * products round activations to 8 bits: the other two runs cover them) */
    setenv("TPORT_VULKAN_EXACT_ACTIVATIONS", "1", 1);
    for (size_t t = 0; !forced && t < sizeof weight_types / sizeof weight_types[0]; t++) {
        tport_type_id ty = weight_types[t];
        int64_t K = tport_type_get(ty)->block_size == 256 ? 512 : 96;
        mul_mat_case(ty, K, 37, 1, 1, 1, 1);   /* one token: matrix-vector */
        mul_mat_case(ty, K, 37, 3, 2, 4, 1);   /* a few tokens, GQA broadcast */
        mul_mat_case(ty, K, 45, 19, 1, 1, 2);  /* batch: tiled, partial tiles */
        get_rows_case(ty, K, 11);
    }
    transposed_case(TPORT_TYPE_F16, 40, 21, 1);
    transposed_case(TPORT_TYPE_F32, 40, 21, 9);

    if (forced) {
        /* a weight larger than one binding range: bound in chunks of rows */
        uint64_t limit = strtoull(forced, NULL, 10);
        vk_must_run = true;
        int64_t K = 256, M = (int64_t)(limit / (K * 4)) * 3 + 5;   /* ~3 ranges of f32 rows */
        mul_mat_case(TPORT_TYPE_F32, K, M, 1, 1, 1, 1);
        mul_mat_case(TPORT_TYPE_F32, K, M, 11, 1, 1, 1);
        mul_mat_case(TPORT_TYPE_Q4_0, K, M * 4, 2, 1, 1, 1);
        get_rows_case(TPORT_TYPE_F32, K, M);
        /* an activation larger than the range is declined: it runs on cpu */
        tport_ctx *ctx = tport_ctx_new(16u << 20);
        tport_tensor *big = leaf(ctx, (int64_t)(limit / 4) + 64, 1, 1, 1, 1);
        tport_tensor *s = tport_scale(ctx, big, 2.0f);
        tport_graph_free(compute_on(s, ctx, "vulkan", "scale larger than one binding range", "cpu"));
        tport_ctx_free(ctx);
    }

    unsetenv("TPORT_VULKAN_EXACT_ACTIVATIONS");

    for (size_t t = 0; t < sizeof weight_types / sizeof weight_types[0]; t++) {
        char what[64];
        mm_type = weight_types[t];
        mm_K = tport_type_get(mm_type)->block_size == 256 ? 512 : 96;
        for (mm_N = 1; mm_N <= 12; mm_N += 11) {
            snprintf(what, sizeof what, "mul_mat %s x N=%d, activations rounded", tport_type_get(mm_type)->name,
                     (int)mm_N);
            versus_cpu(what, b_mul_mat, 1e-5);
        }
    }
    versus_cpu("add (broadcast rows and dim 3)", b_add, 1e-6);
    versus_cpu("mul (broadcast one row)", b_mul, 1e-6);
    versus_cpu("scale", b_scale, 1e-6);
    versus_cpu("silu", b_silu, 1e-5);
    versus_cpu("gelu", b_gelu, 1e-5);
    versus_cpu("swiglu", b_swiglu, 1e-5);
    versus_cpu("rms_norm", b_rms, 1e-5);
    versus_cpu("norm", b_norm, 1e-5);
    versus_cpu("soft_max, causal mask, scale", b_softmax, 1e-5);
    versus_cpu("soft_max, no mask", b_softmax_plain, 1e-5);
    versus_cpu("rope normal", b_rope, 1e-5);
    versus_cpu("rope neox, partial", b_rope_neox, 1e-5);
    versus_cpu("cpy f32 -> f16", b_cpy_f16, 0);
    versus_cpu("cont of a transpose", b_cont_t, 0);
    versus_cpu("concat dim 0", b_concat0, 0);
    versus_cpu("concat dim 2", b_concat2, 0);
    versus_cpu("chain rms_norm mul mul_mat rope silu soft_max", b_chain, 1e-4);
    return test_finish(NAME);
}
#endif
