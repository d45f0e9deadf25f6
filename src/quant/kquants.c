/* k-quants with 256-element super-blocks (QK_K = 256): Q2_K..Q6_K and the
 * activation type Q8_K.  Bit-exact with ggml's quantize_row_<t>_ref and
 * dequantize_row_<t> (the 2024+ reference quantizers; see formats.md 3.7).
 *
 * Special values: an all-zero (sub-)block gets scale 0 and decodes to
 * zeros.  NaN elements never become a maximum; what they do to the scale
 * search follows ggml's float comparisons (results are unspecified garbage
 * upstream as well, but never undefined behaviour here). */
#include <stdbool.h>

#include "kquant_blocks.h"
#include "kquant_search.h"
#include "quant_impl.h"
#include "quant_rows.h"

/* ---- Q2_K --------------------------------------------------------------- */
void tport_quant_q2_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q2K_BYTES) {
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = tport_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                               -0.5f, 0.1f, 15, true);
        }
        tport_kq_write_q2_K(y, x, L, scales, mins);
    }
}

void tport_dequant_q2_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, x += Q2K_BYTES) {
        const float d = q_rd_f16(x + Q2K_D), min = q_rd_f16(x + Q2K_DMIN);
        const uint8_t *q = x + Q2K_QS;
        int is = 0;
        for (int nn = 0; nn < QK_K; nn += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int h = 0; h < 2; h++) {
                    const uint8_t sc = x[Q2K_SCALES + is++];
                    const float dl = d * (float)(sc & 0xF), ml = min * (float)(sc >> 4);
                    for (int l = 0; l < 16; ++l)
                        *y++ = dl * (float)((q[16 * h + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

/* ---- Q3_K --------------------------------------------------------------- */
/* The 16 6-bit scales (biased by 32) are stored in 12 bytes. */
static int q3k_scale(const uint8_t *s, int j) {
    const int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    const int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (lo | hi << 4) - 32;
}

void tport_quant_q3_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q3K_BYTES) {
        for (int j = 0; j < QK_K / 16; ++j)
            scales[j] = tport_make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
        float amax;
        const float max_scale = q_max_by_abs(scales, QK_K / 16, &amax);
        uint8_t *sc = y + Q3K_SCALES;
        memset(sc, 0, 12);
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                int8_t l = (int8_t)q_nearest_int(iscale * scales[j]);
                l = (int8_t)(q_max_i(-32, q_min_i(31, l)) + 32);
                if (j < 8)
                    sc[j] = (uint8_t)(l & 0xF);
                else
                    sc[j - 8] = (uint8_t)(sc[j - 8] | (l & 0xF) << 4);
                l = (int8_t)(l >> 4);
                sc[j % 4 + 8] = (uint8_t)(sc[j % 4 + 8] | l << (2 * (j / 4)));
            }
            q_wr_f16(y + Q3K_D, 1 / iscale);
        } else {
            q_wr_f16(y + Q3K_D, 0.f);
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = q_rd_f16(y + Q3K_D) * (float)q3k_scale(sc, j);
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = q_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(q_max_i(-4, q_min_i(3, l)) + 4);
            }
        }
        /* High bit of element j goes to hmask[j % 32], bit j / 32. */
        uint8_t *hmask = y + Q3K_HMASK;
        memset(hmask, 0, QK_K / 8);
        for (int j = 0; j < QK_K; ++j) {
            if (L[j] > 3) {
                hmask[j % 32] = (uint8_t)(hmask[j % 32] | 1u << (j / 32));
                L[j] = (int8_t)(L[j] - 4);
            }
        }
        tport_kq_pack_2bit(y + Q3K_QS, (const uint8_t *)L);
    }
}

void tport_dequant_q3_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, x += Q3K_BYTES) {
        const float d_all = q_rd_f16(x + Q3K_D);
        const uint8_t *q = x + Q3K_QS, *hm = x + Q3K_HMASK;
        int is = 0;
        uint8_t m = 1;
        for (int nn = 0; nn < QK_K; nn += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1)) {
                for (int h = 0; h < 2; h++) {
                    const float dl = d_all * (float)q3k_scale(x + Q3K_SCALES, is++);
                    for (int l = 0; l < 16; ++l) {
                        const int v = ((q[16 * h + l] >> shift) & 3) - ((hm[16 * h + l] & m) ? 0 : 4);
                        *y++ = dl * (float)v;
                    }
                }
            }
        }
    }
}

/* ---- Q4_K / Q5_K -------------------------------------------------------- */
/* Scale search per 32-element group (nmax 15 for Q4_K, 31 for Q5_K). */
static void search_k4(const float *x, uint8_t L[QK_K], float *scales, float *mins, int nmax, float rmin,
                      int nstep) {
    uint8_t Laux[32];
    float weights[32];
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l)
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l)
            weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = tport_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f,
                                           nstep, false);
    }
}

/* Q4_K and Q5_K differ in nmax, the search's rmin and nstep, and whether
 * a fifth bit per quant sits in qh; d, dmin and the scales share offsets. */
static void quant_k4(const float *x, uint8_t *y, int64_t n, bool five) {
    uint8_t L[QK_K];
    float mins[QK_K / 32], scales[QK_K / 32];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += five ? Q5K_BYTES : Q4K_BYTES) {
        if (five) {
            search_k4(x, L, scales, mins, 31, -0.5f, 15);
            tport_kq_write_q5_K(y, x, L, scales, mins);
        } else {
            search_k4(x, L, scales, mins, 15, -1.f, 20);
            tport_kq_write_q4_K(y, x, L, scales, mins);
        }
    }
}

static void dequant_k4(const uint8_t *x, float *y, int64_t n, bool five) {
    for (int64_t i = 0; i < n / QK_K; i++, x += five ? Q5K_BYTES : Q4K_BYTES) {
        const float d = q_rd_f16(x + Q4K_D), min = q_rd_f16(x + Q4K_DMIN);
        const uint8_t *ql = x + (five ? Q5K_QS : Q4K_QS), *qh = x + Q5K_QH;
        unsigned u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, m;
            tport_kq_get_scale_min_k4(is, x + Q4K_SCALES, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            tport_kq_get_scale_min_k4(is + 1, x + Q4K_SCALES, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * (float)((ql[l] & 0xF) + (five && (qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * (float)((ql[l] >> 4) + (five && (qh[l] & u2) ? 16 : 0)) - m2;
        }
    }
}

void tport_quant_q4_K(const float *x, void *y, int64_t n) { quant_k4(x, y, n, false); }
void tport_quant_q5_K(const float *x, void *y, int64_t n) { quant_k4(x, y, n, true); }
void tport_dequant_q4_K(const void *x, float *y, int64_t n) { dequant_k4(x, y, n, false); }
void tport_dequant_q5_K(const void *x, float *y, int64_t n) { dequant_k4(x, y, n, true); }

/* ---- Q6_K --------------------------------------------------------------- */
void tport_quant_q6_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q6K_BYTES) {
        for (int ib = 0; ib < QK_K / 16; ++ib)
            scales[ib] = tport_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, NULL);
        float max_abs_scale;
        const float max_scale = q_max_by_abs(scales, QK_K / 16, &max_abs_scale);
        if (max_abs_scale < 1e-15f) {
            memset(y, 0, Q6K_BYTES);
            continue;
        }
        tport_kq_write_q6_K(y, x, L, scales, max_scale);
    }
}

void tport_dequant_q6_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, x += Q6K_BYTES) {
        const float d = q_rd_f16(x + Q6K_D);
        const uint8_t *ql = x + Q6K_QL, *qh = x + Q6K_QH;
        const int8_t *sc = (const int8_t *)(x + Q6K_SCALES);
        for (int nn = 0; nn < QK_K; nn += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
                const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
                const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
                y[l] = d * (float)sc[is] * (float)q1;
                y[l + 32] = d * (float)sc[is + 2] * (float)q2;
                y[l + 64] = d * (float)sc[is + 4] * (float)q3;
                y[l + 96] = d * (float)sc[is + 6] * (float)q4;
            }
        }
    }
}

/* ---- Q8_K: {f32 d; i8 qs[256]; i16 bsums[16]} --------------------------- */
void tport_quant_q8_K(const float *x, void *y, int64_t n) { tport_kq_quant_q8_K(x, y, n, 127.f); }

void tport_dequant_q8_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, x += Q8K_BYTES) {
        const float d = q_rd_f32(x + Q8K_D);
        for (int j = 0; j < QK_K; ++j)
            *y++ = d * (float)(int8_t)x[Q8K_QS + j];
    }
}
