/* k-quants with 256-element super-blocks (QK_K = 256): Q2_K..Q6_K and the
 * activation type Q8_K.  Bit-exact with ggml's quantize_row_<t>_ref and
 * dequantize_row_<t> (the 2024+ reference quantizers; see formats.md 3.7).
 *
 * Special values: an all-zero (sub-)block gets scale 0 and decodes to
 * zeros.  NaN elements never become a maximum; what they do to the scale
 * search follows ggml's float comparisons (results are unspecified garbage
 * upstream as well, but never undefined behaviour here). */
#include "kquant_search.h"
#include "quant_impl.h"
#include "quant_rows.h"

/* Byte offsets inside each block. */
enum { Q2K_SCALES = 0, Q2K_QS = 16, Q2K_D = 80, Q2K_DMIN = 82, Q2K_BYTES = 84 };
enum { Q3K_HMASK = 0, Q3K_QS = 32, Q3K_SCALES = 96, Q3K_D = 108, Q3K_BYTES = 110 };
enum { Q4K_D = 0, Q4K_DMIN = 2, Q4K_SCALES = 4, Q4K_QS = 16, Q4K_BYTES = 144 };
enum { Q5K_D = 0, Q5K_DMIN = 2, Q5K_SCALES = 4, Q5K_QH = 16, Q5K_QS = 48, Q5K_BYTES = 176 };
enum { Q6K_QL = 0, Q6K_QH = 128, Q6K_SCALES = 192, Q6K_D = 208, Q6K_BYTES = 210 };
enum { Q8K_D = 0, Q8K_QS = 4, Q8K_BSUMS = 260, Q8K_BYTES = 292 };

/* Four 2-bit values (L[j+l], L[j+l+32], L[j+l+64], L[j+l+96]) per byte. */
static void pack_2bit(uint8_t *qs, const uint8_t *L) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

/* ---- Q2_K --------------------------------------------------------------- */
void tport_quant_q2_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    const float q4scale = 15.f;
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q2K_BYTES) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = tport_make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                               -0.5f, 0.1f, 15, true);
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
            for (int ii = 0; ii < 16; ++ii) {
                const int l = q_nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = (uint8_t)q_max_i(0, q_min_i(3, l));
            }
        }
        pack_2bit(y + Q2K_QS, L);
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
        float max_scale = 0, amax = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = tport_make_q3_quants(16, 4, x + 16 * j, L + 16 * j, true);
            const float scale = fabsf(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
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
        pack_2bit(y + Q3K_QS, (const uint8_t *)L);
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

/* ---- Q4_K / Q5_K shared scale packing ---------------------------------- */
static void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m) {
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (uint8_t)((q[j + 4] & 0xF) | (q[j - 4] >> 6) << 4);
        *m = (uint8_t)((q[j + 4] >> 4) | (q[j] >> 6) << 4);
    }
}

/* Scale search per 32-element group, then 6-bit scales/mins, then the
 * final quants (nmax 15 for Q4_K, 31 for Q5_K) into L. */
static void quant_k_scale_min(const float *x, uint8_t *d_out, uint8_t *scales_out, uint8_t L[QK_K], int nmax,
                              float rmin, int nstep) {
    uint8_t Laux[32];
    float weights[32], mins[QK_K / 32], scales[QK_K / 32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l)
            sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; ++l)
            weights[l] = av_x + fabsf(x[32 * j + l]);
        scales[j] = tport_make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, 0.1f,
                                           nstep, false);
        if (scales[j] > max_scale)
            max_scale = scales[j];
        if (mins[j] > max_min)
            max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t *s = scales_out;
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t ls = (uint8_t)q_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)q_nearest_int(inv_min * mins[j]);
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        if (j < 4) {
            s[j] = ls;
            s[j + 4] = lm;
        } else {
            s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
            s[j - 4] = (uint8_t)(s[j - 4] | (ls >> 4) << 6);
            s[j] = (uint8_t)(s[j] | (lm >> 4) << 6);
        }
    }
    q_wr_f16(d_out, max_scale / 63.f);
    q_wr_f16(d_out + 2, max_min / 63.f);
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        get_scale_min_k4(j, s, &sc, &m);
        const float d = q_rd_f16(d_out) * (float)sc;
        if (!d)
            continue;
        const float dm = q_rd_f16(d_out + 2) * (float)m;
        for (int ii = 0; ii < 32; ++ii) {
            const int l = q_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)q_max_i(0, q_min_i(nmax, l));
        }
    }
}

void tport_quant_q4_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q4K_BYTES) {
        quant_k_scale_min(x, y + Q4K_D, y + Q4K_SCALES, L, 15, -1.f, 20);
        uint8_t *q = y + Q4K_QS;
        for (int j = 0; j < QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; ++l)
                q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
    }
}

void tport_dequant_q4_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, x += Q4K_BYTES) {
        const float d = q_rd_f16(x + Q4K_D), min = q_rd_f16(x + Q4K_DMIN);
        const uint8_t *q = x + Q4K_QS;
        for (int is = 0; is < 8; is += 2, q += 32) {
            uint8_t sc, m;
            get_scale_min_k4(is, x + Q4K_SCALES, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            get_scale_min_k4(is + 1, x + Q4K_SCALES, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * (float)(q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void tport_quant_q5_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    uint8_t L[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q5K_BYTES) {
        quant_k_scale_min(x, y + Q5K_D, y + Q5K_SCALES, L, 31, -0.5f, 15);
        uint8_t *qh = y + Q5K_QH, *ql = y + Q5K_QS;
        memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int nn = 0; nn < QK_K; nn += 64, ql += 32) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[nn + j], l2 = L[nn + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | l2 << 4);
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
        }
    }
}

void tport_dequant_q5_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, x += Q5K_BYTES) {
        const float d = q_rd_f16(x + Q5K_D), min = q_rd_f16(x + Q5K_DMIN);
        const uint8_t *ql = x + Q5K_QS, *qh = x + Q5K_QH;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32) {
            uint8_t sc, m;
            get_scale_min_k4(is, x + Q5K_SCALES, &sc, &m);
            const float d1 = d * (float)sc, m1 = min * (float)m;
            get_scale_min_k4(is + 1, x + Q5K_SCALES, &sc, &m);
            const float d2 = d * (float)sc, m2 = min * (float)m;
            for (int l = 0; l < 32; ++l)
                *y++ = d1 * (float)((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l)
                *y++ = d2 * (float)((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
            u1 = (uint8_t)(u1 << 2);
            u2 = (uint8_t)(u2 << 2);
        }
    }
}

/* ---- Q6_K --------------------------------------------------------------- */
void tport_quant_q6_K(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, x += QK_K, y += Q6K_BYTES) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float scale = tport_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, NULL);
            scales[ib] = scale;
            if (fabsf(scale) > max_abs_scale) {
                max_abs_scale = fabsf(scale);
                max_scale = scale;
            }
        }
        if (max_abs_scale < 1e-15f) {
            memset(y, 0, Q6K_BYTES);
            continue;
        }
        const float iscale = -128.f / max_scale;
        q_wr_f16(y + Q6K_D, 1 / iscale);
        int8_t *sc = (int8_t *)(y + Q6K_SCALES);
        for (int ib = 0; ib < QK_K / 16; ++ib)
            sc[ib] = (int8_t)q_min_i(127, q_nearest_int(iscale * scales[ib]));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = q_rd_f16(y + Q6K_D) * (float)sc[j];
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = q_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(q_max_i(-32, q_min_i(31, l)) + 32);
            }
        }
        uint8_t *ql = y + Q6K_QL, *qh = y + Q6K_QH;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; ++l) {
                const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | q3 << 4);
                ql[l + 32] = (uint8_t)(q2 | q4 << 4);
                qh[l] = (uint8_t)((L[j + l] >> 4) | (L[j + l + 32] >> 4) << 2 | (L[j + l + 64] >> 4) << 4 |
                                  (L[j + l + 96] >> 4) << 6);
            }
        }
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
void tport_quant_q8_K(const float *x, void *vy, int64_t n) {
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
            /* ggml leaves bsums unset here; we write zeros. */
            memset(y, 0, Q8K_BYTES);
            continue;
        }
        const float iscale = -127.f / max;
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

void tport_dequant_q8_K(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK_K; i++, x += Q8K_BYTES) {
        const float d = q_rd_f32(x + Q8K_D);
        for (int j = 0; j < QK_K; ++j)
            *y++ = d * (float)(int8_t)x[Q8K_QS + j];
    }
}
