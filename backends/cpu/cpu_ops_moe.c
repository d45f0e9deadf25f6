/* The small ops of mixture-of-experts routing (ABI 1.3): sigmoid, the sum
 * of each row, the ids of each row's k largest values, the bias add
 * indexed by expert, and gpt-oss's clamped SwiGLU.  Split by rows; they touch a few values per token. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

/* Whether value a (index ia) comes before b (index ib) in descending
 * order: larger first, equal values by index, NaN last. */
static bool before(float a, int32_t ia, float b, int32_t ib) {
    if (isnan(a) || isnan(b))
        return isnan(b) && (!isnan(a) || ia < ib);
    return a > b || (a == b && ia < ib);
}

static void top_k_row(const tport_tensor_view *s, const uint8_t *row, int64_t n, int32_t k, int32_t *out) {
    int32_t have = 0;
    for (int64_t j = 0; j < n; j++) {
        float v;
        memcpy(&v, row + (size_t)j * s->nb[0], sizeof v);
        /* insertion into the sorted list of the best `have` so far */
        int32_t at = have;
        while (at > 0) {
            float w;
            memcpy(&w, row + (size_t)out[at - 1] * s->nb[0], sizeof w);
            if (!before(v, (int32_t)j, w, out[at - 1]))
                break;
            at--;
        }
        if (at >= k)
            continue;
        int32_t last = have < k ? have : k - 1;
        for (int32_t m = last; m > at; m--)
            out[m] = out[m - 1];
        out[at] = (int32_t)j;
        if (have < k)
            have++;
    }
}

/* EXPERT_GROUPS on one row: the groups outside the n_used best (by the sum
 * of each group's two largest values) become -inf.  At most 256 groups. */
static void expert_groups_row(const tport_tensor_view *a, const uint8_t *x, const tport_tensor_view *d, uint8_t *z,
                              int32_t n_group, int32_t n_used) {
    const int64_t g = a->ne[0] / n_group;
    float score[256];
    bool keep[256] = {false};
    for (int32_t k = 0; k < n_group; k++) {
        int32_t top[2];
        top_k_row(a, x + (size_t)(k * g) * a->nb[0], g, 2, top);
        float u, v;
        memcpy(&u, x + (size_t)(k * g + top[0]) * a->nb[0], sizeof u);
        memcpy(&v, x + (size_t)(k * g + top[1]) * a->nb[0], sizeof v);
        score[k] = u + v;
    }
    const tport_tensor_view sv = {.type = TPORT_TYPE_F32, .ne = {n_group, 1, 1, 1},
                                  .nb = {sizeof(float), sizeof(float) * (uint64_t)n_group,
                                         sizeof(float) * (uint64_t)n_group, sizeof(float) * (uint64_t)n_group}};
    int32_t best[256];
    top_k_row(&sv, (const uint8_t *)score, n_group, n_used, best);
    for (int32_t k = 0; k < n_used; k++)
        keep[best[k]] = true;
    for (int64_t i = 0; i < a->ne[0]; i++) {
        float v = -INFINITY;
        if (keep[i / g])
            memcpy(&v, x + (size_t)i * a->nb[0], sizeof v);
        memcpy(z + (size_t)i * d->nb[0], &v, sizeof v);
    }
}

/* Contiguous rows of add_id and swiglu_oai: plain loops the compiler
 * vectorizes (the strided element copies showed in a gpt-oss prompt's
 * profile); the same operations in the same order, so the same bits. */
static void add_row(int64_t n, const float *x, const float *y, float *z) {
    for (int64_t i = 0; i < n; i++)
        z[i] = x[i] + y[i];
}

static void swiglu_oai_row(int64_t n, const float *x, const float *y, float *z, tport_params_swiglu_oai p) {
    enum { STEP = 256 };
    float e[STEP];
    for (int64_t i0 = 0; i0 < n; i0 += STEP) {
        const int64_t m = n - i0 < STEP ? n - i0 : STEP;
        /* expf one at a time (libm's bits), the rest in vectors */
        for (int64_t i = 0; i < m; i++) {
            float g = x[i0 + i];
            g = p.limit < g ? p.limit : g;
            e[i] = expf(p.alpha * -g);
        }
        for (int64_t i = 0; i < m; i++) {
            float g = x[i0 + i], u = y[i0 + i];
            g = p.limit < g ? p.limit : g;
            u = u < -p.limit ? -p.limit : p.limit < u ? p.limit : u;
            z[i0 + i] = g / (1.0f + e[i]) * (u + 1.0f);
        }
    }
}

static void moe_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0];
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        uint8_t *z = cpu_row(d, i1, i2, i3);
        const uint8_t *x = cpu_row(a, i1, i2, i3);
        switch (d->op) {
        case TPORT_OP_SIGMOID:
            for (int64_t i = 0; i < d->ne[0]; i++) {
                float v;
                memcpy(&v, x + (size_t)i * a->nb[0], sizeof v);
                v = 1.0f / (1.0f + expf(-v));
                memcpy(z + (size_t)i * d->nb[0], &v, sizeof v);
            }
            break;
        case TPORT_OP_SUM_ROWS: {
            /* in double, as ggml's ggml_vec_sum_f32 */
            double sum = 0.0;
            for (int64_t i = 0; i < a->ne[0]; i++) {
                float v;
                memcpy(&v, x + (size_t)i * a->nb[0], sizeof v);
                sum += (double)v;
            }
            float f = (float)sum;
            memcpy(z, &f, sizeof f);
            break;
        }
        case TPORT_OP_ARGSORT_TOP_K: {
            int32_t ids[256], *out = d->ne[0] <= 256 && d->nb[0] == sizeof(int32_t) ? (int32_t *)(void *)z : ids;
            if (out == ids && d->ne[0] > 256) {
                cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "argsort_top_k: k %lld", (long long)d->ne[0]);
                return;
            }
            top_k_row(a, x, a->ne[0], (int32_t)d->ne[0], out);
            if (out == ids)
                for (int64_t i = 0; i < d->ne[0]; i++)
                    memcpy(z + (size_t)i * d->nb[0], &ids[i], sizeof ids[i]);
            break;
        }
        case TPORT_OP_SWIGLU_OAI: {
            const tport_tensor_view *upv = op->src[1];
            const uint8_t *y = cpu_row(upv, i1, i2, i3);
            tport_params_swiglu_oai p;
            memcpy(&p, d->params, sizeof p);
            if (a->nb[0] == sizeof(float) && upv->nb[0] == sizeof(float) && d->nb[0] == sizeof(float)) {
                swiglu_oai_row(d->ne[0], (const float *)(const void *)x, (const float *)(const void *)y,
                               (float *)(void *)z, p);
                break;
            }
            for (int64_t i = 0; i < d->ne[0]; i++) {
                float g, u;
                memcpy(&g, x + (size_t)i * a->nb[0], sizeof g);
                memcpy(&u, y + (size_t)i * upv->nb[0], sizeof u);
                /* as ggml: x / (1 + exp(alpha (-x))), the gate capped
                 * above only, the up clamped both ways */
                g = p.limit < g ? p.limit : g;
                u = u < -p.limit ? -p.limit : p.limit < u ? p.limit : u;
                float v = g / (1.0f + expf(p.alpha * -g)) * (u + 1.0f);
                memcpy(z + (size_t)i * d->nb[0], &v, sizeof v);
            }
            break;
        }
        case TPORT_OP_EXPERT_GROUPS: {
            tport_params_expert_groups p;
            memcpy(&p, d->params, sizeof p);
            expert_groups_row(a, x, d, z, p.n_group, p.n_group_used);
            break;
        }
        default: { /* add_id */
            const tport_tensor_view *bias = op->src[1], *idv = op->src[2];
            int32_t e;
            memcpy(&e, cpu_row(idv, i2, i3, 0) + (size_t)i1 * idv->nb[0], sizeof e);
            if (e < 0 || e >= bias->ne[1]) {
                cpu_op_fail(op, TPORT_STATUS_INVALID_ARGUMENT, "add_id: id %d outside [0, %lld)", (int)e,
                            (long long)bias->ne[1]);
                return;
            }
            const uint8_t *y = cpu_row(bias, e, 0, 0);
            if (a->nb[0] == sizeof(float) && bias->nb[0] == sizeof(float) && d->nb[0] == sizeof(float)) {
                add_row(d->ne[0], (const float *)(const void *)x, (const float *)(const void *)y, (float *)(void *)z);
                break;
            }
            for (int64_t i = 0; i < d->ne[0]; i++) {
                float u, v;
                memcpy(&u, x + (size_t)i * a->nb[0], sizeof u);
                memcpy(&v, y + (size_t)i * bias->nb[0], sizeof v);
                u += v;
                memcpy(z + (size_t)i * d->nb[0], &u, sizeof u);
            }
            break;
        }
        }
    }
}

void cpu_run_moe(cpu_ctx *ctx, cpu_op *op) {
    cpu_parallel(ctx, moe_task, op, op->nth);
}
