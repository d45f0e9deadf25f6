/* Shared k-quant block writing; see kquant_blocks.h.  The float operation
 * order is ggml's (quant_impl.h explains why and how it is kept). */
#include "kquant_blocks.h"

#include "quant_impl.h"

static int clampi(int v, int lo, int hi) { return q_max_i(lo, q_min_i(hi, v)); }

static float max_of(const float *v, int n) {
    float max = 0;
    for (int j = 0; j < n; ++j)
        if (v[j] > max)
            max = v[j];
    return max;
}

void tport_kq_pack_2bit(uint8_t *qs, const uint8_t *L) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

void tport_kq_get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | (q[j - 4] >> 6) << 4);
        *m = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

/* ---- Q2_K --------------------------------------------------------------- */
void tport_kq_write_q2_K(uint8_t *y, const float *x, uint8_t *L, const float *scales, const float *mins) {
    const float q4scale = 15.f;
    const float max_scale = max_of(scales, QK_K / 16), max_min = max_of(mins, QK_K / 16);
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
    tport_kq_pack_2bit(y + Q2K_QS, L);
}

/* ---- Q4_K / Q5_K: d, dmin and 12 bytes of scales at the same offsets ---- */
static void write_scales_k4(uint8_t *y, const float *scales, const float *mins) {
    const float max_scale = max_of(scales, QK_K / 32), max_min = max_of(mins, QK_K / 32);
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t *s = y + Q4K_SCALES;
    for (int j = 0; j < QK_K / 32; ++j) {
        const uint8_t ls = (uint8_t)q_min_i(63, (uint8_t)q_nearest_int(inv_scale * scales[j]));
        const uint8_t lm = (uint8_t)q_min_i(63, (uint8_t)q_nearest_int(inv_min * mins[j]));
        if (j < 4) {
            s[j] = ls;
            s[j + 4] = lm;
        } else {
            s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
            s[j - 4] = (uint8_t)(s[j - 4] | (ls >> 4) << 6);
            s[j] = (uint8_t)(s[j] | (lm >> 4) << 6);
        }
    }
    q_wr_f16(y + Q4K_D, max_scale / 63.f);
    q_wr_f16(y + Q4K_DMIN, max_min / 63.f);
}

/* Requantizes every sub-block with its stored (rounded) scale and min. */
static void requant_k4(const uint8_t *y, const float *x, uint8_t *L, int nmax) {
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        tport_kq_get_scale_min_k4(j, y + Q4K_SCALES, &sc, &m);
        const float d = q_rd_f16(y + Q4K_D) * (float)sc;
        if (!d)
            continue;
        const float dm = q_rd_f16(y + Q4K_DMIN) * (float)m;
        for (int ii = 0; ii < 32; ++ii)
            L[32 * j + ii] = (uint8_t)clampi(q_nearest_int((x[32 * j + ii] + dm) / d), 0, nmax);
    }
}

void tport_kq_write_q4_K(uint8_t *y, const float *x, uint8_t *L, const float *scales, const float *mins) {
    write_scales_k4(y, scales, mins);
    requant_k4(y, x, L, 15);
    uint8_t *q = y + Q4K_QS;
    for (int j = 0; j < QK_K; j += 64, q += 32)
        for (int l = 0; l < 32; ++l)
            q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
}

void tport_kq_write_q5_K(uint8_t *y, const float *x, uint8_t *L, const float *scales, const float *mins) {
    write_scales_k4(y, scales, mins);
    requant_k4(y, x, L, 31);
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

/* ---- Q6_K --------------------------------------------------------------- */
void tport_kq_write_q6_K(uint8_t *y, const float *x, int8_t *L, const float *scales, float max_scale) {
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

/* ---- Q8_K: {f32 d; i8 qs[256]; i16 bsums[16]} --------------------------- */
void tport_kq_quant_q8_K(const float *x, uint8_t *y, int64_t n, float nmax) {
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q8K_BYTES) {
        float amax;
        const float max = q_max_by_abs(x, QK_K, &amax);
        if (!amax) {
            /* ggml leaves bsums unset here; we write zeros. */
            memset(y, 0, Q8K_BYTES);
            continue;
        }
        const float iscale = -nmax / max;
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
