/* The ops of the architectures beyond llama (gelu_f16, gelu_erf, tanh,
 * clamp, soft_max_ext with ALiBi) on the CPU against double-precision
 * references written here, with several thread counts.  The ALiBi slopes
 * follow ggml's formula (n2 = 2^floor(log2 n_head), m0 = 2^(-max_bias/n2),
 * m1 = 2^(-max_bias/2/n2)); the head counts 3 and 4 reach both branches. */
#include "core_test_util.h"

typedef struct ref {
    const tport_tensor *a, *mask;
    int op;
    double lo, hi, scale, max_bias;
} ref;

static double gelu_tanh_d(double x) {
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double round_f16(double x) { return tport_fp16_to_fp32(tport_fp32_to_fp16((float)x)); }

static double r_unary(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    double x = ct_get(r->a, i0, i1, i2, i3);
    switch (r->op) {
    case 0: /* gelu_f16: the input and the result through f16 */
        return x <= -10.0 ? 0.0 : x >= 10.0 ? x : round_f16(gelu_tanh_d(round_f16(x)));
    case 1: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case 2: return tanh(x);
    default: return x < r->lo ? r->lo : x > r->hi ? r->hi : x;
    }
}

static void test_unary(tport_ctx *ctx) {
    tport_tensor *inputs[] = {ct_rand(ctx, TPORT_TYPE_F32, 4097, 3, 1, 1), ct_rand_transposed(ctx, 33, 7, 2, 1)};
    ct_fill(inputs[0], 12.0); /* past the +-10 saturation of gelu_f16 */
    ct_fill(inputs[1], 3.0);
    for (int i = 0; i < 2; i++)
        for (int op = 0; op < 4; op++)
            for (int threads = 1; threads <= 3; threads += 2) {
                tport_tensor *x = inputs[i];
                tport_tensor *out = op == 0 ? tport_gelu_f16(ctx, x) : op == 1 ? tport_gelu_erf(ctx, x)
                                    : op == 2 ? tport_tanh(ctx, x) : tport_clamp(ctx, x, -0.5f, 0.25f);
                tport_graph *g = ct_run(ctx, out, threads);
                CHECK(g, "op %d compute", op);
                if (!g)
                    continue;
                ref r = {.a = x, .op = op, .lo = -0.5, .hi = 0.25};
                /* gelu_f16: the double gelu may round to the neighbouring
                 * f16 value where float lands on the other side of a tie (one
                 * f16 ulp, 2^-10 of the value, twice that at a binade edge);
                 * near x = -5 float's 1 + tanh cancels to ~2e-7 absolute */
                double w = op == 0 ? ct_worst(out, r_unary, &r, 4e-7, 2.0 / 1024)
                                   : ct_worst(out, r_unary, &r, op == 3 ? 0.0 : 1e-6, op == 3 ? 1e-300 : 1e-5);
                CHECK(w <= 1.0, "op %d input %d (%d threads): error %g", op, i, threads, w);
                tport_graph_free(g);
            }
    /* gelu_f16 is not the exact formula: on this input it must differ from
     * tanh-gelu somewhere by more than float rounding, or it is not ggml's */
    tport_tensor *out = tport_gelu_f16(ctx, inputs[1]);
    tport_graph *g = ct_run(ctx, out, 1);
    double most = 0;
    CT_FOR_EACH(out, i0, i1, i2, i3)
    most = fmax(most, fabs(ct_get(out, i0, i1, i2, i3) - gelu_tanh_d(ct_get(inputs[1], i0, i1, i2, i3))));
    CHECK(g && most > 1e-4, "gelu_f16 equals the exact gelu (largest difference %g)", most);
    tport_graph_free(g);
    CHECK(tport_clamp(ctx, inputs[0], 1.0f, -1.0f) == NULL, "clamp with min > max accepted");
}

static double slope_d(double max_bias, int64_t n_head, int64_t h) {
    if (max_bias <= 0)
        return 1.0;
    double n2 = pow(2.0, floor(log2((double)n_head)));
    double m0 = pow(2.0, -max_bias / n2), m1 = pow(2.0, -max_bias / 2.0 / n2);
    return h < n2 ? pow(m0, (double)(h + 1)) : pow(m1, 2.0 * ((double)h - n2) + 1.0);
}

static double r_soft_max_ext(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const ref *r = c;
    int64_t n = tport_tensor_ne(r->a, 0);
    double slope = slope_d(r->max_bias, tport_tensor_ne(r->a, 2), i2), max = -INFINITY, sum = 0.0;
    double v[64];
    for (int64_t k = 0; k < n && k < 64; k++) {
        v[k] = ct_get(r->a, k, i1, i2, i3) * r->scale + slope * ct_get(r->mask, k, i1, 0, 0);
        max = fmax(max, v[k]);
    }
    for (int64_t k = 0; k < n && k < 64; k++)
        sum += exp(v[k] - max);
    return exp(v[i0] - max) / sum;
}

static void test_soft_max_ext(tport_ctx *ctx) {
    int64_t nkv = 9, ntok = 4;
    /* llama.cpp's ALiBi mask: -|pos_k - pos_q| where visible, -inf after */
    tport_tensor *mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, nkv, ntok);
    for (int64_t t = 0; t < ntok; t++)
        for (int64_t k = 0; k < nkv; k++) {
            int64_t q = t + nkv - ntok;
            ct_set(mask, k, t, 0, 0, k > q ? -INFINITY : -(double)(q - k));
        }
    for (int64_t n_head = 3; n_head <= 4; n_head++)
        for (int bias = 0; bias < 2; bias++) {
            tport_tensor *a = ct_rand(ctx, TPORT_TYPE_F32, nkv, ntok, n_head, 1);
            ct_fill(a, 3.0);
            double max_bias = bias ? 8.0 : 0.0;
            tport_tensor *out = tport_soft_max_ext(ctx, a, mask, 0.7f, (float)max_bias);
            tport_graph *g = ct_run(ctx, out, 2);
            CHECK(g, "soft_max_ext compute");
            if (!g)
                continue;
            ref r = {.a = a, .mask = mask, .scale = 0.7, .max_bias = max_bias};
            double w = ct_worst(out, r_soft_max_ext, &r, 1e-6, 1e-5);
            CHECK(w <= 1.0, "soft_max_ext %lld heads, max_bias %g: error %g", (long long)n_head, max_bias, w);
            tport_graph_free(g);
        }
    CHECK(tport_soft_max_ext(ctx, ct_rand(ctx, TPORT_TYPE_F32, 4, 1, 1, 1), NULL, 1.0f, -1.0f) == NULL,
          "negative max_bias accepted");
}

int main(void) {
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    CHECK(ctx, "context");
    if (!ctx)
        return test_finish("test_core_arch_ops");
    test_unary(ctx);
    test_soft_max_ext(ctx);
    tport_ctx_free(ctx);
    return test_finish("test_core_arch_ops");
}
