/* Rotary position embedding on [head_dim, n_head, n_tokens, ne3] f32 with
 * i32 positions[n_tokens]: theta_i = pos * freq_scale * base^(-2i/n_dims);
 * normal mode rotates pairs (2i, 2i+1), NeoX mode pairs (i, i + n_dims/2).
 * Dimensions past n_dims are copied. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

static void rope_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0], *pos = op->src[1];
    tport_params_rope p;
    memcpy(&p, d->params, sizeof p);
    int64_t n = d->ne[0], half = p.n_dims / 2;
    /* base^(-2i/n_dims) does not depend on the position: once per call,
     * not per token (pow was 0.75 % of a prompt's time) */
    double *inv_freq = (double *)cpu_thread_scratch(op, ith);
    float *abuf = (float *)(inv_freq + half);
    float *cosv = abuf + n, *sinv = cosv + half;
    for (int64_t i = 0; i < half; i++)
        inv_freq[i] = pow(p.freq_base, -2.0 * (double)i / p.n_dims);
    int64_t cached_i2 = -1;
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        if (i2 != cached_i2) {
            int32_t ps;
            memcpy(&ps, (const uint8_t *)pos->data + (size_t)i2 * pos->nb[0], sizeof ps);
            for (int64_t i = 0; i < half; i++) {
                double theta = (double)ps * p.freq_scale * inv_freq[i];
                cosv[i] = (float)cos(theta);
                sinv[i] = (float)sin(theta);
            }
            cached_i2 = i2;
        }
        const float *x = cpu_row_f32(a, i1, i2, i3, abuf);
        float *y = (float *)cpu_row(d, i1, i2, i3);
        for (int64_t i = 0; i < half; i++) {
            int64_t j0 = p.mode == TPORT_ROPE_NEOX ? i : 2 * i;
            int64_t j1 = p.mode == TPORT_ROPE_NEOX ? i + half : 2 * i + 1;
            float x0 = x[j0], x1 = x[j1];
            y[j0] = x0 * cosv[i] - x1 * sinv[i];
            y[j1] = x0 * sinv[i] + x1 * cosv[i];
        }
        if (y != x)
            memmove(y + p.n_dims, x + p.n_dims, (size_t)(n - p.n_dims) * sizeof *y);
    }
}

void cpu_run_rope(cpu_ctx *ctx, cpu_op *op) {
    cpu_parallel(ctx, rope_task, op, op->nth);
}
