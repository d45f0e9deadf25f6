/* The k-quant reference quantizers of 2023 (llama.cpp #1684, 2023-06-05,
 * through the 2023 summer): Q2_K, Q4_K, Q5_K, Q6_K and Q8_K wrote other
 * bytes than today's (formats.md 3.7; Q3_K is unchanged).  The layouts and
 * decoders are today's.  Operation order follows a mid-2023 copy of
 * k_quants.c (QK_K = 256 branch):
 *  - Q2_K/Q4_K/Q5_K: per sub-block make_qkx1_quants (min/max start, then up
 *    to 5 rounds of least-squares scale + mean-residual min), no weights;
 *  - Q6_K: make_qx_quants with rmse_type 1 (x^2 weights, 3 rounds of
 *    rescaling, then up to 5 rounds of one-quant-at-a-time improvement), no
 *    guard for an all-zero block;
 *  - Q8_K: iscale = -128/max (today: -127/max).
 *
 * Upstream quirk kept on purpose: make_qkx1_quants compares each new quant
 * with what L already holds to decide whether to iterate again, and L was
 * an uninitialised stack array reused across the super-blocks of one call.
 * We start each call with L = 0 and carry it across super-blocks as
 * upstream did; only the first super-block of a call can differ from an
 * upstream run (whose starting garbage is unknowable).
 *
 * Divisions by zero (all-zero blocks) give IEEE infinities/NaNs exactly as
 * upstream; nearest_int of those is the bit trick, never UB. */
#include <stdbool.h>

#include "kquant_blocks.h"
#include "quant_impl.h"
#include "quant_rules.h"

static int clampi(int v, int lo, int hi) { return q_max_i(lo, q_min_i(hi, v)); }

/* make_qkx1_quants of 2023: asymmetric, returns the scale, *the_min = -min. */
static float qkx1(int n, int nmax, const float *x, uint8_t *L, float *the_min, int ntry) {
    float min = x[0], max = x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
    }
    if (max == min) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        *the_min = 0;
        return 0.f;
    }
    if (min > 0)
        min = 0;
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    for (int itry = 0; itry < ntry; ++itry) {
        float sumlx = 0;
        int suml2 = 0;
        bool did_change = false;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(q_nearest_int(iscale * (x[i] - min)), 0, nmax);
            if (l != L[i]) {
                L[i] = (uint8_t)l;
                did_change = true;
            }
            sumlx += (x[i] - min) * (float)l;
            suml2 += l * l;
        }
        scale = sumlx / (float)suml2;
        float sum = 0;
        for (int i = 0; i < n; ++i)
            sum += x[i] - scale * (float)L[i];
        min = sum / (float)n;
        if (min > 0)
            min = 0;
        iscale = 1 / scale;
        if (!did_change)
            break;
    }
    *the_min = -min;
    return scale;
}

/* make_qx_quants of 2023 with rmse_type 1 (weights x^2); L = l + nmax. */
static float qx_rmse1(int n, int nmax, const float *x, int8_t *L) {
    float amax;
    const float max = q_max_by_abs(x, n, &amax);
    if (!amax) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = (float)-nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clampi(q_nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    float scale = sumlx / suml2;
    float best = scale * sumlx;
    for (int itry = 0; itry < 3; ++itry) {
        iscale = 1 / scale;
        float slx = 0, sl2 = 0;
        bool changed = false;
        for (int i = 0; i < n; ++i) {
            const int l = clampi(q_nearest_int(iscale * x[i]), -nmax, nmax - 1);
            if (l + nmax != L[i])
                changed = true;
            const float w = x[i] * x[i];
            slx += w * x[i] * (float)l;
            sl2 += w * (float)l * (float)l;
        }
        if (!changed || sl2 == 0 || slx * slx <= best * sl2)
            break;
        for (int i = 0; i < n; ++i)
            L[i] = (int8_t)(nmax + clampi(q_nearest_int(iscale * x[i]), -nmax, nmax - 1));
        sumlx = slx;
        suml2 = sl2;
        scale = sumlx / suml2;
        best = scale * sumlx;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            const int l = L[i] - nmax;
            float slx = sumlx - w * x[i] * (float)l;
            if (slx > 0) {
                float sl2 = suml2 - w * (float)l * (float)l;
                const int new_l = clampi(q_nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != l) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)(nmax + new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        scale = sumlx / suml2;
                        best = scale * sumlx;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    return scale;
}

/* ---- Q2_K, Q4_K, Q5_K: qkx1 per sub-block ------------------------------ */
typedef void (*write_fn)(uint8_t *y, const float *x, uint8_t *L, const float *scales, const float *mins);

/* Sub-blocks of `sub` elements quantized in [0, nmax] by qkx1; L starts at
 * 0 and is carried across super-blocks (see the top of the file). */
static void quant_qkx1(const float *x, uint8_t *y, int64_t n, int sub, int nmax, int bytes, write_fn write) {
    uint8_t L[QK_K] = {0};
    float mins[QK_K / 16], scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += bytes) {
        for (int j = 0; j < QK_K / sub; ++j)
            scales[j] = qkx1(sub, nmax, x + sub * j, L + sub * j, &mins[j], 5);
        write(y, x, L, scales, mins);
    }
}

void tport_quant_q2_K_2023(const float *x, void *y, int64_t n) {
    quant_qkx1(x, y, n, 16, 3, Q2K_BYTES, tport_kq_write_q2_K);
}
void tport_quant_q4_K_2023(const float *x, void *y, int64_t n) {
    quant_qkx1(x, y, n, 32, 15, Q4K_BYTES, tport_kq_write_q4_K);
}
void tport_quant_q5_K_2023(const float *x, void *y, int64_t n) {
    quant_qkx1(x, y, n, 32, 31, Q5K_BYTES, tport_kq_write_q5_K);
}

/* ---- Q6_K: qx_rmse1 per sub-block; no zero guard upstream: an all-zero
 * block gives iscale = -inf, d = f16(-0) and scales nearest_int(NaN) = 0. */
void tport_quant_q6_K_2023(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q6K_BYTES) {
        for (int ib = 0; ib < QK_K / 16; ++ib)
            scales[ib] = qx_rmse1(16, 32, x + 16 * ib, L + 16 * ib);
        float max_abs_scale;
        tport_kq_write_q6_K(y, x, L, scales, q_max_by_abs(scales, QK_K / 16, &max_abs_scale));
    }
}

/* ---- Q8_K: iscale = -128/max --------------------------------------------- */
void tport_quant_q8_K_2023(const float *x, void *y, int64_t n) { tport_kq_quant_q8_K(x, y, n, 128.f); }
