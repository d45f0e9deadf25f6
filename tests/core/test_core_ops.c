/* Every CPU op against a plain double-precision reference written here, on
 * random inputs: odd sizes, broadcasting, non-contiguous (transposed or
 * permuted) inputs, and several thread counts. */
#include "core_test_util.h"

typedef struct ref {
    const tport_tensor *a, *b, *c;
    double p0, p1;
    int i0, i1;
} ref;

/* ---- element-wise ------------------------------------------------------- */
static double r_add(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    const tport_tensor *b = r->b;
    double y = ct_get(b, i0 % tport_tensor_ne(b, 0), i1 % tport_tensor_ne(b, 1), i2 % tport_tensor_ne(b, 2),
                      i3 % tport_tensor_ne(b, 3));
    double x = ct_get(r->a, i0, i1, i2, i3);
    return r->i0 ? x * y : x + y;
}
static double silu_d(double x) { return x / (1.0 + exp(-x)); }
static double r_unary(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    double x = ct_get(r->a, i0, i1, i2, i3);
    switch (r->i0) {
    case 0: return x * r->p0;
    case 1: return silu_d(x);
    case 2: return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    default: return silu_d(x) * ct_get(r->b, i0, i1, i2, i3);
    }
}

static void test_binary(tport_ctx *ctx, tport_tensor *a, tport_tensor *b, int mul, const char *what) {
    tport_tensor *out = mul ? tport_mul(ctx, a, b) : tport_add(ctx, a, b);
    for (int threads = 1; threads <= 3; threads += 2) {
        tport_graph *g = ct_run(ctx, out, threads);
        CHECK(g, "%s: compute", what);
        if (!g)
            return;
        ref r = {.a = a, .b = b, .i0 = mul};
        double w = ct_worst(out, r_add, &r, 1e-6, 1e-6);
        CHECK(w <= 1.0, "%s (%s, %d threads): error %g", mul ? "mul" : "add", what, threads, w);
        tport_graph_free(g);
    }
}

static void test_elementwise(tport_ctx *ctx) {
    int64_t sizes[][4] = {{1, 1, 1, 1}, {3, 5, 1, 1}, {17, 3, 2, 2}, {4097, 2, 1, 1}};
    for (int s = 0; s < 4; s++) {
        int64_t *n = sizes[s];
        tport_tensor *a = ct_rand(ctx, TPORT_TYPE_F32, n[0], n[1], n[2], n[3]);
        test_binary(ctx, a, ct_rand(ctx, TPORT_TYPE_F32, n[0], n[1], n[2], n[3]), 0, "same shape");
        test_binary(ctx, a, ct_rand(ctx, TPORT_TYPE_F32, n[0], n[1], n[2], n[3]), 1, "same shape");
        test_binary(ctx, a, ct_rand(ctx, TPORT_TYPE_F32, n[0], 1, 1, 1), 0, "row broadcast");
        test_binary(ctx, a, ct_rand(ctx, TPORT_TYPE_F32, n[0], 1, 1, 1), 1, "row broadcast");
        test_binary(ctx, a, ct_rand(ctx, TPORT_TYPE_F32, 1, n[1], 1, n[3]), 1, "column broadcast");
        test_binary(ctx, a, ct_rand(ctx, TPORT_TYPE_F32, 1, 1, 1, 1), 0, "scalar broadcast");
    }
    /* non-contiguous operands */
    tport_tensor *at = ct_rand_transposed(ctx, 17, 5, 2, 1);
    tport_tensor *bt = ct_rand_transposed(ctx, 17, 5, 2, 1);
    test_binary(ctx, at, bt, 0, "transposed");
    test_binary(ctx, at, ct_rand(ctx, TPORT_TYPE_F32, 17, 1, 2, 1), 1, "transposed + broadcast");

    /* rows of 33: whole vectors and a tail; the wide range reaches the
     * SIMD silu's large-|x| ends, where e^-x overflows */
    tport_tensor *x = ct_rand_transposed(ctx, 33, 7, 1, 1);
    tport_tensor *y = ct_rand(ctx, TPORT_TYPE_F32, 33, 7, 1, 1);
    for (int kind = 0; kind < 6; kind++) {
        ct_fill(x, kind < 4 ? 6.0 : 120.0);
        tport_tensor *out = kind == 0 ? tport_scale(ctx, x, -0.75f)
                            : kind == 1 || kind == 4 ? tport_silu(ctx, x)
                            : kind == 2 ? tport_gelu(ctx, x)
                                        : tport_swiglu(ctx, x, y);
        tport_graph *g = ct_run(ctx, out, 2);
        CHECK(g, "unary %d", kind);
        if (!g)
            continue;
        ref r = {.a = x, .b = y, .p0 = -0.75, .i0 = kind == 4 ? 1 : kind == 5 ? 3 : kind};
        double w = ct_worst(out, r_unary, &r, 1e-6, 1e-5);
        CHECK(w <= 1.0, "unary op %d: error %g", kind, w);
        tport_graph_free(g);
    }
}

/* ---- mul_mat ------------------------------------------------------------ */
static double r_mul_mat(const void *c, int64_t i, int64_t j, int64_t i2, int64_t i3) {
    const ref *r = c;
    int64_t K = tport_tensor_ne(r->a, 0);
    int64_t a2 = i2 / (tport_tensor_ne(r->b, 2) / tport_tensor_ne(r->a, 2));
    int64_t a3 = i3 / (tport_tensor_ne(r->b, 3) / tport_tensor_ne(r->a, 3));
    double s = 0.0;
    for (int64_t k = 0; k < K; k++)
        s += ct_get(r->a, k, i, a2, a3) * ct_get(r->b, k, j, i2, i3);
    return s;
}

static void check_mul_mat(tport_ctx *ctx, tport_tensor *a, tport_tensor *b, const char *what) {
    tport_tensor *out = tport_mul_mat(ctx, a, b);
    CHECK(out, "%s: mul_mat: %s", what, tport_last_error());
    if (!out)
        return;
    CHECK(tport_tensor_ne(out, 0) == tport_tensor_ne(a, 1) && tport_tensor_ne(out, 1) == tport_tensor_ne(b, 1),
          "%s: result shape", what);
    ref r = {.a = a, .b = b};
    double atol = 1e-5 * sqrt((double)tport_tensor_ne(a, 0));
    float *first = NULL;
    size_t nbytes = tport_tensor_nbytes(out);
    for (int threads = 1; threads <= 4; threads += 3) {
        tport_graph *g = ct_run(ctx, out, threads);
        CHECK(g, "%s: compute", what);
        if (!g)
            break;
        double w = ct_worst(out, r_mul_mat, &r, atol, 1e-5);
        CHECK(w <= 1.0, "mul_mat %s (%d threads): error %g", what, threads, w);
        if (!first) {
            first = malloc(nbytes);
            memcpy(first, tport_tensor_data(out), nbytes);
        } else {
            CHECK(!memcmp(first, tport_tensor_data(out), nbytes), "mul_mat %s: thread count changed the result",
                  what);
        }
        tport_graph_free(g);
    }
    free(first);
}

static void test_mul_mat(tport_ctx *ctx) {
    int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 2}, {17, 9, 3}, {64, 13, 7}, {4097, 3, 2}};
    for (int s = 0; s < 5; s++) {
        int64_t K = shapes[s][0], N = shapes[s][1], M = shapes[s][2];
        char what[64];
        snprintf(what, sizeof what, "f32 K=%lld N=%lld M=%lld", (long long)K, (long long)N, (long long)M);
        check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F32, K, N, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, K, M, 1, 1), what);
    }
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F16, 33, 7, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 33, 5, 1, 1), "f16");
    /* generation (one column): 8-row tiles and a partial last one, K not
     * a multiple of the vector width, rows walked one at a time (short)
     * and side by side (2 KiB or more), broadcast over dim 2 */
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F16, 37, 19, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 37, 1, 1, 1), "f16 gen");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F32, 37, 19, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 37, 1, 1, 1), "f32 gen");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F16, 1029, 19, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 1029, 1, 1, 1),
                  "f16 gen long rows");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F32, 517, 19, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 517, 1, 1, 1),
                  "f32 gen long rows");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F16, 24, 11, 2, 1), ct_rand(ctx, TPORT_TYPE_F32, 24, 1, 6, 1),
                  "f16 gqa gen");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_BF16, 33, 7, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 33, 5, 1, 1), "bf16");
    /* non-contiguous a and b (transposed views) */
    check_mul_mat(ctx, ct_rand_transposed(ctx, 19, 6, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 19, 4, 1, 1), "a transposed");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F32, 19, 6, 1, 1), ct_rand_transposed(ctx, 19, 4, 1, 1), "b transposed");
    /* grouped-query attention: a's dims 2 and 3 broadcast over b's */
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F32, 8, 5, 2, 1), ct_rand(ctx, TPORT_TYPE_F32, 8, 3, 6, 1), "gqa dim 2");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F32, 8, 5, 2, 1), ct_rand(ctx, TPORT_TYPE_F32, 8, 3, 4, 3), "gqa dims 2, 3");
    /* the same through the dense batch path (K a multiple of 8, 4+ columns) */
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F16, 16, 37, 2, 1), ct_rand(ctx, TPORT_TYPE_F32, 16, 7, 6, 1),
                  "f16 gqa batch");
    check_mul_mat(ctx, ct_rand(ctx, TPORT_TYPE_F32, 24, 6, 1, 1), ct_rand_transposed(ctx, 24, 5, 1, 1),
                  "b transposed batch");
    /* attention-like: permuted K of a [head_dim, n_head, n_kv] cache */
    tport_tensor *kc = ct_rand(ctx, TPORT_TYPE_F32, 8, 2, 11, 1);
    tport_tensor *k = tport_permute(ctx, kc, 0, 2, 1, 3); /* [8, 11, 2] */
    check_mul_mat(ctx, k, ct_rand(ctx, TPORT_TYPE_F32, 8, 3, 4, 1), "permuted gqa");
}

/* ---- norms and soft_max -------------------------------------------------- */
static double r_norm(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    int64_t n = tport_tensor_ne(r->a, 0);
    /* row statistics, cached per row (the reference is called per element) */
    static const void *key_t;
    static int64_t key[3] = {-1, -1, -1};
    static double mean, sq, sq_centered;
    if (key_t != r->a || key[0] != i1 || key[1] != i2 || key[2] != i3) {
        mean = sq = sq_centered = 0.0;
        for (int64_t k = 0; k < n; k++) {
            double v = ct_get(r->a, k, i1, i2, i3);
            mean += v;
            sq += v * v;
        }
        mean /= (double)n;
        for (int64_t k = 0; k < n; k++) {
            double d = ct_get(r->a, k, i1, i2, i3) - mean;
            sq_centered += d * d;
        }
        key_t = r->a;
        key[0] = i1, key[1] = i2, key[2] = i3;
    }
    if (r->i0) /* rms */
        return ct_get(r->a, i0, i1, i2, i3) / sqrt(sq / (double)n + r->p0);
    return (ct_get(r->a, i0, i1, i2, i3) - mean) / sqrt(sq_centered / (double)n + r->p0);
}

static double mask_at(const ref *r, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    if (!r->b)
        return 0.0;
    return ct_get(r->b, i0, i1, i2 % tport_tensor_ne(r->b, 2), i3 % tport_tensor_ne(r->b, 3));
}

static double r_soft_max(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    int64_t n = tport_tensor_ne(r->a, 0);
    double max = -INFINITY, sum = 0.0;
    for (int64_t k = 0; k < n; k++) {
        double v = ct_get(r->a, k, i1, i2, i3) * r->p0 + mask_at(r, k, i1, i2, i3);
        if (v > max)
            max = v;
    }
    for (int64_t k = 0; k < n; k++)
        sum += exp(ct_get(r->a, k, i1, i2, i3) * r->p0 + mask_at(r, k, i1, i2, i3) - max);
    return exp(ct_get(r->a, i0, i1, i2, i3) * r->p0 + mask_at(r, i0, i1, i2, i3) - max) / sum;
}

static void test_norms(tport_ctx *ctx) {
    tport_tensor *inputs[] = {ct_rand(ctx, TPORT_TYPE_F32, 1, 3, 1, 1), ct_rand(ctx, TPORT_TYPE_F32, 17, 4, 2, 1),
                              ct_rand(ctx, TPORT_TYPE_F32, 4097, 2, 1, 1), ct_rand_transposed(ctx, 9, 5, 2, 1)};
    for (int i = 0; i < 4; i++) {
        for (int rms = 0; rms < 2; rms++) {
            float eps = 1e-5f;
            tport_tensor *out = rms ? tport_rms_norm(ctx, inputs[i], eps) : tport_norm(ctx, inputs[i], eps);
            tport_graph *g = ct_run(ctx, out, 2);
            CHECK(g, "norm compute");
            if (!g)
                continue;
            ref r = {.a = inputs[i], .p0 = eps, .i0 = rms};
            double w = ct_worst(out, r_norm, &r, 1e-5, 1e-5);
            CHECK(w <= 1.0, "%s input %d: error %g", rms ? "rms_norm" : "norm", i, w);
            tport_graph_free(g);
        }
    }
}

static void test_soft_max(tport_ctx *ctx) {
    /* causal mask with -inf above the diagonal (kv positions > token) */
    int64_t nkv = 7, ntok = 5, nhead = 3;
    tport_tensor *mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, nkv, ntok);
    for (int64_t t = 0; t < ntok; t++)
        for (int64_t k = 0; k < nkv; k++)
            ct_set(mask, k, t, 0, 0, k > t + 2 ? -INFINITY : 0.1 * (double)k);
    tport_tensor *inputs[] = {ct_rand(ctx, TPORT_TYPE_F32, nkv, ntok, nhead, 1),
                              ct_rand_transposed(ctx, nkv, ntok, nhead, 1)};
    for (int i = 0; i < 2; i++) {
        ct_fill(inputs[i], 4.0);
        for (int use_mask = 0; use_mask < 2; use_mask++) {
            tport_tensor *out = tport_soft_max(ctx, inputs[i], use_mask ? mask : NULL, 0.5f);
            tport_graph *g = ct_run(ctx, out, 2);
            CHECK(g, "soft_max compute");
            if (!g)
                continue;
            ref r = {.a = inputs[i], .b = use_mask ? mask : NULL, .p0 = 0.5};
            double w = ct_worst(out, r_soft_max, &r, 1e-6, 1e-5);
            CHECK(w <= 1.0, "soft_max input %d mask %d: error %g", i, use_mask, w);
            if (use_mask) {
                int exact = 1;
                CT_FOR_EACH(out, i0, i1, i2, i3)
                if (i0 > i1 + 2 && ct_get(out, i0, i1, i2, i3) != 0.0)
                    exact = 0;
                CHECK(exact, "soft_max: -inf in the mask must give exactly 0");
            }
            tport_graph_free(g);
        }
    }
    /* a row that is entirely masked gives zeros, not NaN */
    tport_tensor *a = ct_rand(ctx, TPORT_TYPE_F32, 4, 1, 1, 1);
    tport_tensor *m = tport_new_tensor_1d(ctx, TPORT_TYPE_F32, 4);
    for (int k = 0; k < 4; k++)
        ct_set(m, k, 0, 0, 0, -INFINITY);
    tport_tensor *out = tport_soft_max(ctx, a, m, 1.0f);
    tport_graph *g = ct_run(ctx, out, 1);
    CHECK(g && ct_get(out, 0, 0, 0, 0) == 0.0 && ct_get(out, 3, 0, 0, 0) == 0.0, "fully masked row");
    tport_graph_free(g);
}

/* ---- rope --------------------------------------------------------------- */
static double r_rope(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    int n_dims = r->i0, neox = r->i1;
    if (i0 >= n_dims)
        return ct_get(r->a, i0, i1, i2, i3);
    double pos = ct_get(r->b, i2, 0, 0, 0);
    int64_t pair = neox ? i0 % (n_dims / 2) : i0 / 2;
    int64_t j0 = neox ? pair : 2 * pair, j1 = neox ? pair + n_dims / 2 : 2 * pair + 1;
    double theta = pos * r->p1 * pow(r->p0, -2.0 * (double)pair / n_dims);
    double x0 = ct_get(r->a, j0, i1, i2, i3), x1 = ct_get(r->a, j1, i1, i2, i3);
    return i0 == j0 ? x0 * cos(theta) - x1 * sin(theta) : x0 * sin(theta) + x1 * cos(theta);
}

static void test_rope(tport_ctx *ctx) {
    int64_t head = 8, nh = 3, nt = 4;
    tport_tensor *pos = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, nt);
    int32_t positions[] = {0, 1, 5, 17};
    for (int i = 0; i < nt; i++)
        ct_set(pos, i, 0, 0, 0, positions[i]);
    /* contiguous, and a permuted view of a [head, n_tokens, n_head] tensor */
    tport_tensor *base = ct_rand(ctx, TPORT_TYPE_F32, head, nt, nh, 1);
    tport_tensor *inputs[] = {ct_rand(ctx, TPORT_TYPE_F32, head, nh, nt, 1), tport_permute(ctx, base, 0, 2, 1, 3)};
    for (int i = 0; i < 2; i++)
        for (int mode = 0; mode < 2; mode++)
            for (int n_dims = 4; n_dims <= 8; n_dims += 4) {
                tport_tensor *out = tport_rope(ctx, inputs[i], pos, n_dims, mode ? TPORT_ROPE_NEOX : TPORT_ROPE_NORMAL,
                                               10000.0f, 0.5f);
                tport_graph *g = ct_run(ctx, out, 2);
                CHECK(g, "rope compute");
                if (!g)
                    continue;
                ref r = {.a = inputs[i], .b = pos, .p0 = 10000.0, .p1 = 0.5, .i0 = n_dims, .i1 = mode};
                double w = ct_worst(out, r_rope, &r, 1e-5, 1e-5);
                CHECK(w <= 1.0, "rope input %d mode %d n_dims %d: error %g", i, mode, n_dims, w);
                tport_graph_free(g);
            }
}

/* rope_ext: the formula of backend.h's TPORT_OP_ROPE_EXT in double (the
 * correction dimensions in float, as ggml's ggml_rope_yarn_corr_dims) */
typedef struct rope_ext_ref {
    const tport_tensor *a, *pos, *ff;
    tport_params_rope_ext p;
} rope_ext_ref;

static double r_rope_ext(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const rope_ext_ref *r = c;
    const tport_params_rope_ext *p = &r->p;
    int n_dims = p->n_dims;
    bool neox = p->mode == TPORT_ROPE_NEOX;
    if (i0 >= n_dims)
        return ct_get(r->a, i0, i1, i2, i3);
    int64_t pair = neox ? i0 % (n_dims / 2) : i0 / 2;
    int64_t j0 = neox ? pair : 2 * pair, j1 = neox ? pair + n_dims / 2 : 2 * pair + 1;
    double extrap = ct_get(r->pos, i2, 0, 0, 0) * pow(p->freq_base, -2.0 * (double)pair / n_dims) /
                    (r->ff ? ct_get(r->ff, pair, 0, 0, 0) : 1.0);
    double theta = p->freq_scale * extrap, m = p->attn_factor;
    if (p->ext_factor != 0.0f) {
        float c0 = (float)n_dims * logf((float)p->n_ctx_orig / (p->beta_fast * 2.0f * (float)M_PI)) /
                   (2.0f * logf(p->freq_base));
        float c1 = (float)n_dims * logf((float)p->n_ctx_orig / (p->beta_slow * 2.0f * (float)M_PI)) /
                   (2.0f * logf(p->freq_base));
        double lo = fmax(0.0, floorf(c0)), hi = fmin(n_dims - 1, ceilf(c1));
        double y = ((double)pair - lo) / fmax(0.001, hi - lo);
        double ramp = (1.0 - fmin(1.0, fmax(0.0, y))) * p->ext_factor;
        theta = theta * (1.0 - ramp) + extrap * ramp;
        m *= 1.0 + 0.1 * log(1.0 / p->freq_scale);
    }
    double x0 = ct_get(r->a, j0, i1, i2, i3), x1 = ct_get(r->a, j1, i1, i2, i3);
    return m * (i0 == j0 ? x0 * cos(theta) - x1 * sin(theta) : x0 * sin(theta) + x1 * cos(theta));
}

static void test_rope_ext(tport_ctx *ctx) {
    int64_t head = 16, nh = 3, nt = 5;
    tport_tensor *pos = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, nt);
    int32_t positions[] = {0, 1, 9, 300, 4000};
    for (int i = 0; i < nt; i++)
        ct_set(pos, i, 0, 0, 0, positions[i]);
    tport_tensor *x = ct_rand(ctx, TPORT_TYPE_F32, head, nh, nt, 1);
    tport_tensor *ff = tport_new_tensor_1d(ctx, TPORT_TYPE_F32, head / 2);
    for (int i = 0; i < head / 2; i++) /* llama 3's factors run from 1 to 32 */
        ct_set(ff, i, 0, 0, 0, 1.0 + 31.0 * i / (head / 2 - 1));
    const struct {
        bool ff;
        tport_params_rope_ext p;
        const char *what;
    } cases[] = {
        {true, {16, TPORT_ROPE_NORMAL, 500000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f, 0}, "frequency factors"},
        {false, {12, TPORT_ROPE_NEOX, 10000.0f, 0.25f, 0.0f, 1.0f, 32.0f, 1.0f, 0}, "linear, partial neox"},
        {false, {16, TPORT_ROPE_NEOX, 1000000.0f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, 4096}, "yarn"},
        {true, {16, TPORT_ROPE_NORMAL, 10000.0f, 0.125f, 1.0f, 0.9f, 24.0f, 2.0f, 2048}, "yarn, factors, attn 0.9"},
        {true, {16, TPORT_ROPE_NEOX, 10000.0f, 1.0f, 0.0f, 1.19f, 32.0f, 1.0f, 0}, "longrope-like: factors, attn 1.19"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        tport_tensor *out = tport_rope_ext(ctx, x, pos, cases[k].ff ? ff : NULL, &cases[k].p);
        CHECK(out, "rope_ext %s: %s", cases[k].what, tport_last_error());
        tport_graph *g = out ? ct_run(ctx, out, 2) : NULL;
        CHECK(g, "rope_ext compute");
        if (!g)
            continue;
        rope_ext_ref r = {x, pos, cases[k].ff ? ff : NULL, cases[k].p};
        double w = ct_worst(out, r_rope_ext, &r, 1e-5, 2e-5);
        CHECK(w <= 1.0, "rope_ext %s: error %g", cases[k].what, w);
        tport_graph_free(g);
    }
    tport_params_rope_ext bad = {16, TPORT_ROPE_NORMAL, 10000.0f, 1.0f, 1.0f, 1.0f, 32.0f, 1.0f, 0};
    CHECK(!tport_rope_ext(ctx, x, pos, NULL, &bad), "yarn without n_ctx_orig is refused");
    tport_tensor *short_ff = tport_new_tensor_1d(ctx, TPORT_TYPE_F32, 3);
    CHECK(!tport_rope_ext(ctx, x, pos, short_ff, &cases[0].p), "too few frequency factors are refused");
}

/* ---- get_rows, cpy, cont, concat ----------------------------------------- */
static double r_get_rows(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    return ct_get(r->a, i0, (int64_t)ct_get(r->b, i1, i2, i3, 0), i2, i3);
}

static double r_copy(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    double x = ct_get(r->a, i0, i1, i2, i3);
    switch (r->i0) { /* round as the destination type does */
    case TPORT_TYPE_F16: return tport_fp16_to_fp32(tport_fp32_to_fp16((float)x));
    case TPORT_TYPE_BF16: return tport_bf16_to_fp32(tport_fp32_to_bf16((float)x));
    default: return x;
    }
}

static double r_concat(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    int64_t k[4] = {i0, i1, i2, i3};
    int64_t na = tport_tensor_ne(r->a, r->i0);
    if (k[r->i0] < na)
        return ct_get(r->a, k[0], k[1], k[2], k[3]);
    k[r->i0] -= na;
    return ct_get(r->b, k[0], k[1], k[2], k[3]);
}

static void test_data_movement(tport_ctx *ctx) {
    tport_type_id types[] = {TPORT_TYPE_F32, TPORT_TYPE_F16, TPORT_TYPE_BF16};
    tport_tensor *ids = tport_new_tensor_2d(ctx, TPORT_TYPE_I32, 3, 2);
    int32_t id[] = {6, 0, 3, 2, 2, 5};
    for (int i = 0; i < 6; i++)
        ct_set(ids, i % 3, i / 3, 0, 0, id[i]);
    for (int t = 0; t < 3; t++) {
        tport_tensor *a = ct_rand(ctx, types[t], 5, 7, 2, 1);
        tport_tensor *out = tport_get_rows(ctx, a, ids);
        tport_graph *g = ct_run(ctx, out, 2);
        CHECK(g, "get_rows compute");
        if (g) {
            ref r = {.a = a, .b = ids};
            CHECK(ct_worst(out, r_get_rows, &r, 1e-300, 0) <= 0.0, "get_rows type %u is not exact", types[t]);
            tport_graph_free(g);
        }
    }
    /* get_rows from a transposed (strided) f32 source */
    tport_tensor *at = ct_rand_transposed(ctx, 5, 7, 2, 1);
    tport_tensor *out = tport_get_rows(ctx, at, ids);
    tport_graph *g = ct_run(ctx, out, 1);
    if (g) {
        ref r = {.a = at, .b = ids};
        CHECK(ct_worst(out, r_get_rows, &r, 1e-300, 0) <= 0.0, "get_rows from a strided source");
        tport_graph_free(g);
    }
    /* an id out of range is an error, not a crash */
    tport_tensor *bad_ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, 1);
    ct_set(bad_ids, 0, 0, 0, 0, 99);
    tport_tensor *bad = tport_get_rows(ctx, ct_rand(ctx, TPORT_TYPE_F32, 4, 3, 1, 1), bad_ids);
    g = tport_graph_new(ctx);
    tport_graph_add(g, bad);
    CHECK(tport_graph_compute(g, NULL) != TPORT_STATUS_OK && strstr(tport_last_error(), "out of range"),
          "get_rows with a bad id: '%s'", tport_last_error());
    tport_graph_free(g);

    /* cpy between every pair of f32/f16/bf16, from contiguous and strided sources */
    for (int s = 0; s < 3; s++)
        for (int d = 0; d < 3; d++)
            for (int strided = 0; strided < 2; strided++) {
                tport_tensor *src = strided ? tport_transpose(ctx, ct_rand(ctx, types[s], 9, 17, 1, 1))
                                            : ct_rand(ctx, types[s], 17, 9, 1, 1);
                tport_tensor *dst = tport_new_tensor_2d(ctx, types[d], 17, 9);
                tport_tensor *c = tport_cpy(ctx, src, dst);
                g = ct_run(ctx, c, 2);
                CHECK(g, "cpy %u -> %u", types[s], types[d]);
                if (!g)
                    continue;
                ref r = {.a = src, .i0 = (int)types[d]};
                CHECK(ct_worst(dst, r_copy, &r, 1e-300, 0) <= 0.0, "cpy %u -> %u (strided %d) is not exact", types[s],
                      types[d], strided);
                tport_graph_free(g);
            }
    /* cpy into a view of a bigger tensor (a cache row), different shape */
    tport_tensor *cache = tport_new_tensor_2d(ctx, TPORT_TYPE_F16, 24, 3);
    ct_fill(cache, 1.0);
    double before = ct_get(cache, 0, 0, 0, 0), after = ct_get(cache, 0, 2, 0, 0);
    tport_tensor *src = ct_rand(ctx, TPORT_TYPE_F32, 6, 4, 1, 1);
    tport_tensor *row = tport_view(ctx, cache, 1, (int64_t[]){24}, NULL, tport_tensor_nb(cache, 1));
    g = ct_run(ctx, tport_cpy(ctx, src, row), 1);
    CHECK(g, "cpy into a view");
    if (g) {
        int ok = 1;
        for (int64_t i = 0; i < 24; i++)
            if (ct_get(cache, i, 1, 0, 0) != tport_fp16_to_fp32(tport_fp32_to_fp16((float)ct_get(src, i % 6, i / 6, 0, 0))))
                ok = 0;
        CHECK(ok, "cpy into a view: values");
        CHECK(ct_get(cache, 0, 0, 0, 0) == before && ct_get(cache, 0, 2, 0, 0) == after,
              "cpy into a view wrote outside it");
        tport_graph_free(g);
    }
    /* cont of a permuted tensor */
    tport_tensor *p = tport_permute(ctx, ct_rand(ctx, TPORT_TYPE_F32, 3, 4, 5, 2), 2, 0, 1, 3);
    tport_tensor *cont = tport_cont(ctx, p);
    g = ct_run(ctx, cont, 2);
    CHECK(g && tport_tensor_is_contiguous(cont), "cont");
    if (g) {
        ref r = {.a = p, .i0 = TPORT_TYPE_F32};
        CHECK(ct_worst(cont, r_copy, &r, 1e-300, 0) <= 0.0, "cont values");
        tport_graph_free(g);
    }
    /* concat of packed sources; then a strided one (a transposed view: its elements
     * a row apart) after a packed one, along every dimension: the CPU
     * backend copies packed runs whole and strided ones element by element */
    for (int strided = 0; strided < 2; strided++)
        for (int dim = 0; dim < 4; dim++) {
            int64_t na[4] = {3, 4, 2, 2}, nb[4] = {3, 4, 2, 2};
            nb[dim] = 5;
            tport_tensor *a = strided ? tport_transpose(ctx, ct_rand(ctx, TPORT_TYPE_F32, na[1], na[0], na[2], na[3]))
                                      : ct_rand(ctx, TPORT_TYPE_F32, na[0], na[1], na[2], na[3]);
            tport_tensor *b = ct_rand(ctx, TPORT_TYPE_F32, nb[0], nb[1], nb[2], nb[3]);
            tport_tensor *first = strided ? b : a, *second = strided ? a : b;
            tport_tensor *cat = tport_concat(ctx, first, second, dim);
            g = ct_run(ctx, cat, 2);
            CHECK(g && tport_tensor_ne(cat, dim) == na[dim] + 5, "concat dim %d (strided %d)", dim, strided);
            if (g) {
                ref r = {.a = first, .b = second, .i0 = dim};
                CHECK(ct_worst(cat, r_concat, &r, 1e-300, 0) <= 0.0, "concat dim %d (strided %d) values", dim, strided);
                tport_graph_free(g);
            }
        }
}

int main(void) {
    /* with a CPU plug-in named (one ctest per variant), its SIMD kernels */
    const char *variant = getenv("TPORT_TEST_CPU_VARIANT");
    if (variant && *variant && tport_backend_load(variant) != TPORT_STATUS_OK)
        fprintf(stderr, "note: %s not loaded (%s): testing the active cpu backend\n", variant, tport_last_error());
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    CHECK(ctx, "context");
    if (!ctx)
        return test_finish("test_core_ops");
    test_elementwise(ctx);
    test_mul_mat(ctx);
    test_norms(ctx);
    test_soft_max(ctx);
    test_rope(ctx);
    test_rope_ext(ctx);
    test_data_movement(ctx);
    tport_ctx_free(ctx);
    return test_finish("test_core_ops");
}
