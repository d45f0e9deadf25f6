/* Rotary position embedding on [head_dim, n_head, n_tokens, ne3] f32 with
 * i32 positions[n_tokens]: theta_i = pos * freq_scale * base^(-2i/n_dims);
 * normal mode rotates pairs (2i, 2i+1), NeoX mode pairs (i, i + n_dims/2).
 * Dimensions past n_dims are copied.
 *
 * Every token's cos and sin come from a table that the graph fills once
 * before its run (cpu_rope_fill_table), shared by the rope nodes with the
 * same positions and parameters: a layer's query and key, and every layer
 * (the sines were 2.5 % of a 512-token prompt's time, recomputed 24 times
 * over in stories110M).  Positions that the graph itself computes are not
 * known before the run; then each thread computes them as it goes. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

static tport_params_rope params_of(const cpu_op *op) {
    tport_params_rope p;
    memcpy(&p, op->dst->params, sizeof p);
    return p;
}

static int32_t position(const tport_tensor_view *pos, int64_t i2) {
    int32_t ps;
    memcpy(&ps, (const uint8_t *)pos->data + (size_t)i2 * pos->nb[0], sizeof ps);
    return ps;
}

/* inv_freq[i] = base^(-2i/n_dims), i < n_dims / 2 */
static void inverse_frequencies(const tport_params_rope *p, double *inv_freq) {
    for (int64_t i = 0; i < p->n_dims / 2; i++)
        inv_freq[i] = pow(p->freq_base, -2.0 * (double)i / p->n_dims);
}

/* cs[i] = cos, cs[half + i] = sin of token ps's angles */
static void angles(const tport_params_rope *p, const double *inv_freq, int32_t ps, float *cs) {
    int64_t half = p->n_dims / 2;
    for (int64_t i = 0; i < half; i++) {
        double theta = (double)ps * p->freq_scale * inv_freq[i];
        cs[i] = (float)cos(theta);
        cs[half + i] = (float)sin(theta);
    }
}

size_t cpu_rope_table_floats(const cpu_op *op) {
    const tport_tensor_view *pos = op->src[1];
    if (pos->op != TPORT_OP_NONE || !(pos->flags & TPORT_TENSOR_INPUT))
        return 0;
    return (size_t)op->dst->ne[2] * (size_t)params_of(op).n_dims;
}

bool cpu_rope_same_table(const cpu_op *a, const cpu_op *b) {
    const tport_tensor_view *pa = a->src[1], *pb = b->src[1];
    return pa->data == pb->data && pa->nb[0] == pb->nb[0] && a->dst->ne[2] == b->dst->ne[2] &&
           memcmp(a->dst->params, b->dst->params, sizeof(tport_params_rope)) == 0;
}

bool cpu_rope_fill_table(const cpu_op *op, float *table) {
    tport_params_rope p = params_of(op);
    double *inv_freq = malloc((size_t)(p.n_dims / 2 + 1) * sizeof *inv_freq);
    if (!inv_freq)
        return false;
    inverse_frequencies(&p, inv_freq);
    for (int64_t t = 0; t < op->dst->ne[2]; t++)
        angles(&p, inv_freq, position(op->src[1], t), table + (size_t)t * (size_t)p.n_dims);
    free(inv_freq);
    return true;
}

static void rope_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0];
    tport_params_rope p = params_of(op);
    int64_t n = d->ne[0], half = p.n_dims / 2;
    double *inv_freq = (double *)cpu_thread_scratch(op, ith);
    float *computed = (float *)(inv_freq + half), *abuf = computed + p.n_dims;
    const float *cs = computed;
    if (!op->table)
        inverse_frequencies(&p, inv_freq);
    int64_t cached_i2 = -1;
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        if (op->table) {
            cs = op->table + (size_t)i2 * (size_t)p.n_dims;
        } else if (i2 != cached_i2) {
            angles(&p, inv_freq, position(op->src[1], i2), computed);
            cached_i2 = i2;
        }
        const float *cosv = cs, *sinv = cs + half;
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
