/* Rotary position embedding on [head_dim, n_head, n_tokens, ne3] f32 with
 * i32 positions[n_tokens]: theta_i = pos * freq_scale * base^(-2i/n_dims);
 * normal mode rotates pairs (2i, 2i+1), NeoX mode pairs (i, i + n_dims/2).
 * Dimensions past n_dims are copied.  ROPE_EXT (ABI 1.3) adds frequency
 * factors (theta_i / ff[i]), YaRN's ramp between interpolated and
 * extrapolated angles, and a factor on cos and sin, as backend.h states
 * them (ggml's rope_yarn).
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

/* Both ops' parameters in one form. */
typedef struct rope_p {
    int32_t n_dims, mode;
    float freq_base, freq_scale;
    bool ext;           /* ROPE_EXT: the rest applies               */
    float ext_factor, mscale;
    float corr[2];      /* YaRN's correction dimensions             */
    const float *ff;    /* frequency factors, or NULL               */
} rope_p;

/* ggml_rope_yarn_corr_dim: where the rotation count n_rot is reached in
 * n_ctx_orig positions, in float as ggml computes it */
static float corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return (float)n_dims * logf((float)n_ctx_orig / (n_rot * 2.0f * 3.14159265358979323846f)) / (2.0f * logf(base));
}

static rope_p params_of(const cpu_op *op) {
    rope_p r = {0};
    if (op->dst->op == TPORT_OP_ROPE) {
        tport_params_rope p;
        memcpy(&p, op->dst->params, sizeof p);
        r.n_dims = p.n_dims;
        r.mode = p.mode;
        r.freq_base = p.freq_base;
        r.freq_scale = p.freq_scale;
        return r;
    }
    tport_params_rope_ext p;
    memcpy(&p, op->dst->params, sizeof p);
    r.n_dims = p.n_dims;
    r.mode = p.mode;
    r.freq_base = p.freq_base;
    r.freq_scale = p.freq_scale;
    r.ext = true;
    r.ext_factor = p.ext_factor;
    r.mscale = p.attn_factor;
    if (p.ext_factor != 0.0f) {
        r.mscale *= 1.0f + 0.1f * logf(1.0f / p.freq_scale);
        float start = floorf(corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base));
        float end = ceilf(corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base));
        r.corr[0] = start > 0.0f ? start : 0.0f;
        r.corr[1] = end < (float)(p.n_dims - 1) ? end : (float)(p.n_dims - 1);
    }
    r.ff = op->src[2] ? (const float *)op->src[2]->data : NULL;
    return r;
}

static int32_t position(const tport_tensor_view *pos, int64_t i2) {
    int32_t ps;
    memcpy(&ps, (const uint8_t *)pos->data + (size_t)i2 * pos->nb[0], sizeof ps);
    return ps;
}

/* inv_freq[i] = base^(-2i/n_dims), i < n_dims / 2 */
static void inverse_frequencies(const rope_p *p, double *inv_freq) {
    for (int64_t i = 0; i < p->n_dims / 2; i++)
        inv_freq[i] = pow(p->freq_base, -2.0 * (double)i / p->n_dims);
}

/* cs[i] = cos, cs[half + i] = sin of token ps's angles */
static void angles(const rope_p *p, const double *inv_freq, int32_t ps, float *cs) {
    int64_t half = p->n_dims / 2;
    if (!p->ext) {
        for (int64_t i = 0; i < half; i++) {
            double theta = (double)ps * p->freq_scale * inv_freq[i];
            cs[i] = (float)cos(theta);
            cs[half + i] = (float)sin(theta);
        }
        return;
    }
    for (int64_t i = 0; i < half; i++) {
        double extrap = (double)ps * inv_freq[i] / (p->ff ? p->ff[i] : 1.0f);
        double theta = p->freq_scale * extrap;
        if (p->ext_factor != 0.0f) {
            float y = ((float)i - p->corr[0]) / fmaxf(0.001f, p->corr[1] - p->corr[0]);
            float ramp = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * p->ext_factor;
            theta = theta * (1.0 - ramp) + extrap * ramp;
        }
        cs[i] = (float)cos(theta) * p->mscale;
        cs[half + i] = (float)sin(theta) * p->mscale;
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
    const void *fa = a->src[2] ? a->src[2]->data : NULL, *fb = b->src[2] ? b->src[2]->data : NULL;
    return a->dst->op == b->dst->op && pa->data == pb->data && pa->nb[0] == pb->nb[0] &&
           a->dst->ne[2] == b->dst->ne[2] && fa == fb &&
           memcmp(a->dst->params, b->dst->params,
                  a->dst->op == TPORT_OP_ROPE ? sizeof(tport_params_rope) : sizeof(tport_params_rope_ext)) == 0;
}

bool cpu_rope_fill_table(const cpu_op *op, float *table) {
    rope_p p = params_of(op);
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
    rope_p p = params_of(op);
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
