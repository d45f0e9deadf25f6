/* Element-wise f32 ops: add, mul, div (src1 broadcast by repetition), scale,
 * silu, gelu (tanh approximation), swiglu.  Work is split by rows. */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_vf.h"

#define GELU_COEF_A 0.044715f
#define SQRT_2_OVER_PI 0.79788456080286535588f

static float silu(float x) {
    return x / (1.0f + expf(-x));
}

#if VF_SIMD
/* silu through e = e^-|x| (vf_exp takes x <= 0, and e^-x would overflow
 * for large negative x): sigmoid(x) = 1 / (1 + e) for x >= 0, e / (1 + e)
 * below.  Within 3.3e-7 of exact (relative, -100..100; the scalar form
 * with expf: 1.3e-7). */
VF_INLINE vf silu_vf(vf x) {
#if VF_LEN == 16
    vf e = vf_exp(vf_sub(vf_zero(), _mm512_abs_ps(x)));
    vf num = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, vf_zero(), _CMP_GE_OQ), e, vf_set1(1.0f));
    return vf_mul(x, _mm512_div_ps(num, vf_add(vf_set1(1.0f), e)));
#else
    vf e = vf_exp(vf_sub(vf_zero(), _mm256_andnot_ps(vf_set1(-0.0f), x)));
    vf num = _mm256_blendv_ps(e, vf_set1(1.0f), _mm256_cmp_ps(x, vf_zero(), _CMP_GE_OQ));
    return vf_mul(x, _mm256_div_ps(num, vf_add(vf_set1(1.0f), e)));
#endif
}
#endif

/* z = silu(x) (y NULL) or silu(x) * y, n elements */
static void silu_row(int64_t n, const float *x, const float *y, float *z) {
    int64_t i = 0;
#if VF_SIMD
    for (; i + VF_LEN <= n; i += VF_LEN) {
        vf s = silu_vf(vf_loadu(x + i));
        vf_storeu(z + i, y ? vf_mul(s, vf_loadu(y + i)) : s);
    }
#endif
    for (; i < n; i++)
        z[i] = y ? silu(x[i]) * y[i] : silu(x[i]);
}

static float gelu(float x) {
    return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
}

static void binary_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0], *b = op->src[1];
    int64_t n = d->ne[0], nb0 = b->ne[0];
    float *abuf = (float *)cpu_thread_scratch(op, ith);
    float *bbuf = abuf + n;
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        const float *x = cpu_row_f32(a, i1, i2, i3, abuf);
        const float *y = cpu_row_f32(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3], bbuf);
        float *z = (float *)cpu_row(d, i1, i2, i3);
        if (d->op == TPORT_OP_ADD) {
            if (nb0 == n)
                for (int64_t i = 0; i < n; i++)
                    z[i] = x[i] + y[i];
            else if (nb0 == 1) /* one value a row: no division per element */
                for (int64_t i = 0; i < n; i++)
                    z[i] = x[i] + y[0];
            else
                for (int64_t i = 0; i < n; i++)
                    z[i] = x[i] + y[i % nb0];
        } else if (d->op == TPORT_OP_MUL) {
            if (nb0 == n)
                for (int64_t i = 0; i < n; i++)
                    z[i] = x[i] * y[i];
            else if (nb0 == 1) /* a weight a row (a mixture's expert weights) */
                for (int64_t i = 0; i < n; i++)
                    z[i] = x[i] * y[0];
            else
                for (int64_t i = 0; i < n; i++)
                    z[i] = x[i] * y[i % nb0];
        } else if (d->op == TPORT_OP_DIV) {
            for (int64_t i = 0; i < n; i++)
                z[i] = x[i] / y[i % nb0];
        } else { /* swiglu: same shapes */
            silu_row(n, x, y, z);
        }
    }
}

static void unary_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0];
    int64_t n = d->ne[0];
    float *abuf = (float *)cpu_thread_scratch(op, ith);
    float s = 1.0f;
    if (d->op == TPORT_OP_SCALE)
        memcpy(&s, d->params, sizeof s);
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        const float *x = cpu_row_f32(a, i1, i2, i3, abuf);
        float *z = (float *)cpu_row(d, i1, i2, i3);
        switch (d->op) {
        case TPORT_OP_SCALE:
            for (int64_t i = 0; i < n; i++)
                z[i] = x[i] * s;
            break;
        case TPORT_OP_SILU:
            silu_row(n, x, NULL, z);
            break;
        default: /* gelu */
            for (int64_t i = 0; i < n; i++)
                z[i] = gelu(x[i]);
            break;
        }
    }
}

void cpu_run_elementwise(cpu_ctx *ctx, cpu_op *op) {
    bool binary = op->dst->op == TPORT_OP_ADD || op->dst->op == TPORT_OP_MUL || op->dst->op == TPORT_OP_DIV ||
                  op->dst->op == TPORT_OP_SWIGLU;
    cpu_parallel(ctx, binary ? binary_task : unary_task, op, op->nth);
}
