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

#include "quant_impl.h"
#include "quant_rules.h"

enum { Q2K_SCALES = 0, Q2K_QS = 16, Q2K_D = 80, Q2K_DMIN = 82, Q2K_BYTES = 84 };
enum { Q4K_D = 0, Q4K_DMIN = 2, Q4K_SCALES = 4, Q4K_QS = 16, Q4K_BYTES = 144 };
enum { Q5K_D = 0, Q5K_DMIN = 2, Q5K_SCALES = 4, Q5K_QH = 16, Q5K_QS = 48, Q5K_BYTES = 176 };
enum { Q6K_QL = 0, Q6K_QH = 128, Q6K_SCALES = 192, Q6K_D = 208, Q6K_BYTES = 210 };
enum { Q8K_D = 0, Q8K_QS = 4, Q8K_BSUMS = 260, Q8K_BYTES = 292 };

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
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
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

static void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* ---- Q2_K ---------------------------------------------------------------- */
void tport_quant_q2_K_2023(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    uint8_t L[QK_K] = {0};
    float mins[QK_K / 16], scales[QK_K / 16];
    const float q4scale = 15.f;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q2K_BYTES) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = qkx1(16, 3, x + 16 * j, L + 16 * j, &mins[j], 5);
            if (scales[j] > max_scale)
                max_scale = scales[j];
            if (mins[j] > max_min)
                max_min = mins[j];
        }
        uint8_t *sc = y + Q2K_SCALES;
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; ++j)
                sc[j] = (uint8_t)q_nearest_int(iscale * scales[j]);
            q_wr_f16(y + Q2K_D, max_scale / q4scale);
        } else {
            for (int j = 0; j < QK_K / 16; ++j)
                sc[j] = 0;
            q_wr_f16(y + Q2K_D, 0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; ++j)
                sc[j] = (uint8_t)(sc[j] | (unsigned)q_nearest_int(iscale * mins[j]) << 4);
            q_wr_f16(y + Q2K_DMIN, max_min / q4scale);
        } else {
            q_wr_f16(y + Q2K_DMIN, 0.f);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = q_rd_f16(y + Q2K_D) * (float)(sc[j] & 0xF);
            if (!d)
                continue;
            const float dm = q_rd_f16(y + Q2K_DMIN) * (float)(sc[j] >> 4);
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] = (uint8_t)clampi(q_nearest_int((x[16 * j + ii] + dm) / d), 0, 3);
        }
        for (int j = 0; j < QK_K; j += 128)
            for (int l = 0; l < 32; ++l)
                y[Q2K_QS + j / 4 + l] =
                    (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
    }
}

/* ---- Q4_K / Q5_K: 8 sub-blocks of 32, 6-bit scales and mins ------------- */
static void q45_scales(uint8_t *y, int off_d, int off_dmin, int off_scales, const float *scales, const float *mins) {
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t *s = y + off_scales;
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)q_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)q_nearest_int(inv_min * mins[j]);
        ls = (uint8_t)q_min_i(63, ls);
        lm = (uint8_t)q_min_i(63, lm);
        if (j < 4) {
            s[j] = ls;
            s[j + 4] = lm;
        } else {
            s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
            s[j - 4] = (uint8_t)(s[j - 4] | (ls >> 4) << 6);
            s[j] = (uint8_t)(s[j] | (lm >> 4) << 6);
        }
    }
    q_wr_f16(y + off_d, max_scale / 63.f);
    q_wr_f16(y + off_dmin, max_min / 63.f);
}

/* Requantizes every sub-block with its stored (rounded) scale and min. */
static void q45_requant(const uint8_t *y, int off_d, int off_dmin, int off_scales, const float *x, uint8_t *L,
                        int nmax) {
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, y + off_scales, &sc, &m);
        const float d = q_rd_f16(y + off_d) * (float)sc;
        if (!d)
            continue;
        const float dm = q_rd_f16(y + off_dmin) * (float)m;
        for (int ii = 0; ii < 32; ++ii)
            L[32 * j + ii] = (uint8_t)clampi(q_nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}

void tport_quant_q4_K_2023(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    uint8_t L[QK_K] = {0};
    float mins[QK_K / 32], scales[QK_K / 32];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q4K_BYTES) {
        for (int j = 0; j < QK_K / 32; ++j)
            scales[j] = qkx1(32, 15, x + 32 * j, L + 32 * j, &mins[j], 5);
        q45_scales(y, Q4K_D, Q4K_DMIN, Q4K_SCALES, scales, mins);
        q45_requant(y, Q4K_D, Q4K_DMIN, Q4K_SCALES, x, L, 15);
        uint8_t *q = y + Q4K_QS;
        for (int j = 0; j < QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l)
                q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
    }
}

void tport_quant_q5_K_2023(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    uint8_t L[QK_K] = {0};
    float mins[QK_K / 32], scales[QK_K / 32];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q5K_BYTES) {
        for (int j = 0; j < QK_K / 32; ++j)
            scales[j] = qkx1(32, 31, x + 32 * j, L + 32 * j, &mins[j], 5);
        q45_scales(y, Q5K_D, Q5K_DMIN, Q5K_SCALES, scales, mins);
        q45_requant(y, Q5K_D, Q5K_DMIN, Q5K_SCALES, x, L, 31);
        uint8_t *qh = y + Q5K_QH, *ql = y + Q5K_QS;
        memset(qh, 0, QK_K / 8);
        unsigned m1 = 1, m2 = 2;
        for (int b = 0; b < QK_K; b += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[b + j], l2 = L[b + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] = (uint8_t)(qh[j] | m1);
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] = (uint8_t)(qh[j] | m2);
                }
                ql[j] = (uint8_t)(l1 | l2 << 4);
            }
        }
    }
}

/* ---- Q6_K ---------------------------------------------------------------- */
void tport_quant_q6_K_2023(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q6K_BYTES) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float scale = qx_rmse1(16, 32, x + 16 * ib, L + 16 * ib);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) {
                max_abs_scale = fabsf(scale);
                max_scale = scale;
            }
        }
        /* No zero guard upstream: an all-zero block gives iscale = -inf,
         * d = f16(-0) and scales nearest_int(NaN) = 0. */
        const float iscale = -128.f / max_scale;
        q_wr_f16(y + Q6K_D, 1 / iscale);
        int8_t *sc = (int8_t *)(y + Q6K_SCALES);
        for (int ib = 0; ib < QK_K / 16; ++ib)
            sc[ib] = (int8_t)q_min_i(127, q_nearest_int(iscale * scales[ib]));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = q_rd_f16(y + Q6K_D) * (float)sc[j];
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] = (int8_t)(clampi(q_nearest_int(x[16 * j + ii] / d), -32, 31) + 32);
        }
        uint8_t *ql = y + Q6K_QL, *qh = y + Q6K_QH;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
                const int q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | q3 << 4);
                ql[l + 32] = (uint8_t)(q2 | q4 << 4);
                qh[l] = (uint8_t)((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 | (L[j + l + 64] >> 4) << 4 |
                                  (L[j + l + 96] >> 4) << 6);
            }
        }
    }
}

/* ---- Q8_K ---------------------------------------------------------------- */
void tport_quant_q8_K_2023(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q8K_BYTES) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; ++j) {
            const float ax = fabsf(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            memset(y, 0, Q8K_BYTES); /* upstream left bsums unset here */
            continue;
        }
        const float iscale = -128.f / max;
        int8_t *qs = (int8_t *)(y + Q8K_QS);
        for (int j = 0; j < QK_K; ++j)
            qs[j] = (int8_t)q_min_i(127, q_nearest_int(iscale * x[j]));
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii)
                sum += qs[j * 16 + ii];
            q_wr_u16(y + Q8K_BSUMS + 2 * j, (uint16_t)(int16_t)sum);
        }
        q_wr_f32(y + Q8K_D, 1 / iscale);
    }
}
