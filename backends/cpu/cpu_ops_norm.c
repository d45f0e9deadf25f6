/* Row-wise f32 ops: rms_norm, norm, soft_max (scale and optional mask;
 * soft_max_ext with ALiBi slopes).
 * Sums are taken in double, as ggml does.
 *
 * A norm followed by a mul by a weight row (a model's norm weights) does
 * both in one pass when the graph has fused them (cpu_norm_fuses_mul):
 * the norm's result is still written, and the product as the mul would
 * have computed it, (x * s) * w. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

/* sum of x[i]^2 in double; a float's square is exact in double, so the
 * lanes differ from a running sum only in the rounding of the additions */
static double sum_squares(int64_t n, const float *x) {
    int64_t i = 0;
    double sum = 0.0;
#if defined(__GNUC__)
    typedef float f8 __attribute__((vector_size(8 * sizeof(float))));
    typedef double d8 __attribute__((vector_size(8 * sizeof(double))));
    d8 acc = {0};
    for (; i + 8 <= n; i += 8) {
        f8 v;
        memcpy(&v, x + i, sizeof v);
        d8 d = __builtin_convertvector(v, d8);
        acc += d * d;
    }
    for (int k = 0; k < 8; k++)
        sum += acc[k];
#endif
    for (; i < n; i++)
        sum += (double)x[i] * x[i];
    return sum;
}

/* y = (x - mean) * s, and z = y * w when w is given */
static void scale_row(int64_t n, const float *x, float mean, float s, float *y, const float *w, float *z) {
    if (!w) {
        for (int64_t i = 0; i < n; i++)
            y[i] = (x[i] - mean) * s;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        float v = (x[i] - mean) * s;
        y[i] = v;
        z[i] = v * w[i];
    }
}

static void rms_norm_row(int64_t n, const float *x, float *y, float eps, const float *w, float *z) {
    float s = (float)(1.0 / sqrt(sum_squares(n, x) / (double)n + eps));
    scale_row(n, x, 0.0f, s, y, w, z);
}

static void norm_row(int64_t n, const float *x, float *y, float eps, const float *w, float *z) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += x[i];
    float mean = (float)(sum / (double)n);
    double var = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] - mean;
        var += (double)v * v;
    }
    float s = (float)(1.0 / sqrt(var / (double)n + eps));
    scale_row(n, x, mean, s, y, w, z);
}

/* y = softmax(x * scale + mask); a -inf in the mask gives exactly 0, a
 * row that is entirely -inf gives all zeros. */
static void soft_max_row(int64_t n, const float *x, const float *mask, float *y, float scale, float slope) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] * scale + (mask ? slope * mask[i] : 0.0f);
        y[i] = v;
        if (v > max)
            max = v;
    }
    if (max == -INFINITY) {
        memset(y, 0, (size_t)n * sizeof *y);
        return;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        float e = y[i] == -INFINITY ? 0.0f : expf(y[i] - max);
        y[i] = e;
        sum += e;
    }
    float inv = (float)(1.0 / sum);
    for (int64_t i = 0; i < n; i++)
        y[i] *= inv;
}

/* The ALiBi slope of head h (dim 2) as ggml's soft_max computes it. */
static float alibi_slope(const tport_tensor_view *d, int64_t h) {
    tport_params_soft_max_ext p;
    memcpy(&p, d->params, sizeof p);
    if (!(p.max_bias > 0.0f))
        return 1.0f;
    uint32_t n2 = 1u << (uint32_t)floor(log2((double)d->ne[2]));
    float m0 = powf(2.0f, -p.max_bias / (float)n2);
    float m1 = powf(2.0f, -(p.max_bias / 2.0f) / (float)n2);
    return (uint32_t)h < n2 ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * ((uint32_t)h - n2) + 1));
}

static void norm_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0], *m = op->src[1];
    int64_t n = d->ne[0];
    float *abuf = (float *)cpu_thread_scratch(op, ith);
    float *mbuf = abuf + n;
    float p = 0.0f; /* eps or scale: both a leading float */
    memcpy(&p, d->params, sizeof p);
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        const float *x = cpu_row_f32(a, i1, i2, i3, abuf);
        float *y = (float *)cpu_row(d, i1, i2, i3);
        if (d->op == TPORT_OP_RMS_NORM || d->op == TPORT_OP_NORM) {
            const float *w = NULL;
            float *z = NULL;
            if (op->fused_mul) {
                w = (const float *)op->fused_mul->src[1]->data;
                z = (float *)cpu_row(op->fused_mul->dst, i1, i2, i3);
            }
            (d->op == TPORT_OP_RMS_NORM ? rms_norm_row : norm_row)(n, x, y, p, w, z);
        } else {
            const float *mask = m ? cpu_row_f32(m, i1, i2 % m->ne[2], i3 % m->ne[3], mbuf) : NULL;
            soft_max_row(n, x, mask, y, p, d->op == TPORT_OP_SOFT_MAX_EXT ? alibi_slope(d, i2) : 1.0f);
        }
    }
}

/* y = norm(x), then z = y * w for a row w: one pass if z overlaps neither
 * x nor y (the unfused mul ran after every row of y was done) and both run
 * on the same threads. */
bool cpu_norm_fuses_mul(const cpu_op *norm, const cpu_op *mul) {
    const tport_tensor_view *y = norm->dst, *w = mul->src[1], *z = mul->dst;
    if ((y->op != TPORT_OP_RMS_NORM && y->op != TPORT_OP_NORM) || z->op != TPORT_OP_MUL ||
        !cpu_same_view(mul->src[0], y) || norm->nth != mul->nth)
        return false;
    if (w->type != TPORT_TYPE_F32 || w->nb[0] != sizeof(float) || w->ne[0] != y->ne[0] || w->ne[1] != 1 ||
        w->ne[2] != 1 || w->ne[3] != 1)
        return false;
    if (z->type != TPORT_TYPE_F32 || z->nb[0] != sizeof(float) || y->type != TPORT_TYPE_F32 || y->nb[0] != sizeof(float))
        return false;
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (z->ne[d] != y->ne[d])
            return false;
    return !cpu_views_overlap(z, norm->src[0]) && !cpu_views_overlap(z, y) && !cpu_views_overlap(z, w);
}

void cpu_run_norm(cpu_ctx *ctx, cpu_op *op) {
    cpu_parallel(ctx, norm_task, op, op->nth);
}
