/* Row-wise f32 ops: rms_norm, norm, soft_max (scale and optional mask;
 * soft_max_ext with ALiBi slopes).
 * Sums are taken in double, as ggml does. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

static void rms_norm_row(int64_t n, const float *x, float *y, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)x[i] * x[i];
    float s = (float)(1.0 / sqrt(sum / (double)n + eps));
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * s;
}

static void norm_row(int64_t n, const float *x, float *y, float eps) {
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
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] - mean) * s;
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
        if (d->op == TPORT_OP_RMS_NORM) {
            rms_norm_row(n, x, y, p);
        } else if (d->op == TPORT_OP_NORM) {
            norm_row(n, x, y, p);
        } else {
            const float *mask = m ? cpu_row_f32(m, i1, i2 % m->ne[2], i3 % m->ne[3], mbuf) : NULL;
            soft_max_row(n, x, mask, y, p, d->op == TPORT_OP_SOFT_MAX_EXT ? alibi_slope(d, i2) : 1.0f);
        }
    }
}

void cpu_run_norm(cpu_ctx *ctx, cpu_op *op) {
    cpu_parallel(ctx, norm_task, op, op->nth);
}
