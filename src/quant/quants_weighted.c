/* The importance-weighted quantizers of ggml's chunk functions
 * (quantize_q4_0 .. quantize_q6_K with quant_weights; ggml-quants.c's
 * quantize_row_<t>_impl): what llama-quantize writes with an imatrix.
 * Each takes n elements (one row: sigma2 of Q4_0 .. Q5_1 is the row's)
 * and n weights.  ggml's operation order is kept everywhere (a*b*c is
 * (a*b)*c), integer stores narrow as C narrows them (uint8_t L), and no
 * FMA contraction (quant_impl.h), so the bytes are ggml's. */
#include "kquant_blocks.h"
#include "kquant_search.h"
#include "quant_impl.h"
#include "quant_rows.h"

#define GROUP_MAX_EPS 1e-15f

/* ---- scale searches ------------------------------------------------------- */
/* ggml's make_qkx3_quants: asymmetric scale + min, L in [0, nmax].  It is
 * make_qkx2_quants (kquant_search.c) with squared errors and, when no
 * weights are given, x^2 as the weights: the same float operations. */
static float make_qkx3_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L, float *the_min,
                              uint8_t *Laux, float rmin, float rdelta, int nstep) {
    float squares[QK_K];
    if (!weights) {
        for (int i = 0; i < n && i < QK_K; ++i)
            squares[i] = x[i] * x[i];
        weights = squares;
    }
    return tport_make_qkx2_quants(n, nmax, x, weights, L, the_min, Laux, rmin, rdelta, nstep, false);
}

/* ggml's make_qp_quants: a positive scale for positive values (the
 * sub-block scales and mins), L in [0, nmax] (stored as uint8_t, as ggml). */
static float make_qp_quants(int n, int nmax, const float *x, uint8_t *L, const float *quant_weights) {
    float max = 0;
    for (int i = 0; i < n; ++i)
        max = max > x[i] ? max : x[i];
    if (max < GROUP_MAX_EPS) {
        for (int i = 0; i < n; ++i)
            L[i] = 0;
        return 0.f;
    }
    float iscale = (float)nmax / max;
    for (int i = 0; i < n; ++i)
        L[i] = q_to_u8(q_nearest_int(iscale * x[i]));
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * (float)L[i];
        const float w = quant_weights[i];
        best_mse += w * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0)
            continue;
        const float iscale_is = (0.1f * (float)is + (float)nmax) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            int l = q_nearest_int(iscale_is * x[i]);
            l = q_min_i(nmax, l);
            const float diff = x[i] - scale_is * (float)l;
            const float w = quant_weights[i];
            mse += w * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        int l = q_nearest_int(iscale * x[i]);
        l = q_min_i(nmax, l);
        L[i] = q_to_u8(l);
        const float w = quant_weights[i];
        sumlx += w * x[i] * (float)l;
        suml2 += w * (float)l * (float)l;
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = quant_weights[i];
            float slx = sumlx - w * x[i] * (float)L[i];
            float sl2 = suml2 - w * (float)L[i] * (float)L[i];
            if (slx > 0 && sl2 > 0) {
                int new_l = q_nearest_int(x[i] * sl2 / slx);
                new_l = q_min_i(nmax, new_l);
                if (new_l != L[i]) {
                    slx += w * x[i] * (float)new_l;
                    sl2 += w * (float)new_l * (float)new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = q_to_u8(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static float row_sigma2(const float *x, int64_t n) {
    float sum_x2 = 0;
    for (int64_t j = 0; j < n; ++j)
        sum_x2 += x[j] * x[j];
    return sum_x2 / (float)n;
}

/* ---- Q4_0, Q4_1, Q5_0, Q5_1 ---------------------------------------------- */
/* Block layouts: {f16 d; u8 qs[16]}, {f16 d, m; u8 qs[16]},
 * {f16 d; u32 qh; u8 qs[16]}, {f16 d, m; u32 qh; u8 qs[16]}. */
static void put_nibbles(uint8_t *qs, const uint8_t *L) {
    for (int j = 0; j < 16; ++j)
        qs[j] = (uint8_t)((L[j] & 0x0F) | (L[j + 16] & 0x0F) << 4);
}
static void put_qh(uint8_t *p, const uint8_t *L) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
        qh |= (uint32_t)((L[j] & 0x10u) >> 4) << j;
        qh |= (uint32_t)((L[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    q_wr_u32(p, qh);
}

/* symmetric (Q4_0 nmax 8, Q5_0 nmax 16) */
static void quant_sym(const float *x, uint8_t *y, int64_t n, const float *qw, int nmax, int bytes, bool five) {
    const float sigma2 = row_sigma2(x, n);
    float weight[32];
    int8_t L[32];
    uint8_t U[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, y += bytes) {
        const float *xb = x + 32 * ib, *w = qw + 32 * ib;
        for (int j = 0; j < 32; ++j)
            weight[j] = w[j] * sqrtf(sigma2 + xb[j] * xb[j]);
        const float d = tport_make_qx_quants(32, nmax, xb, L, 1, weight);
        q_wr_f16(y, d);
        for (int j = 0; j < 32; ++j)
            U[j] = (uint8_t)L[j];
        if (five)
            put_qh(y + 2, U);
        put_nibbles(y + (five ? 6 : 2), U);
    }
}

/* with a min (Q4_1 nmax 15, Q5_1 nmax 31) */
static void quant_min(const float *x, uint8_t *y, int64_t n, const float *qw, int nmax, int bytes, bool five) {
    const float sigma2 = row_sigma2(x, n);
    float weight[32];
    uint8_t L[32], Laux[32];
    for (int64_t ib = 0; ib < n / 32; ++ib, y += bytes) {
        const float *xb = x + 32 * ib, *w = qw + 32 * ib;
        for (int j = 0; j < 32; ++j)
            weight[j] = w[j] * sqrtf(sigma2 + xb[j] * xb[j]);
        float min;
        const float d = make_qkx3_quants(32, nmax, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36);
        q_wr_f16(y, d);
        q_wr_f16(y + 2, -min);
        if (five)
            put_qh(y + 4, L);
        put_nibbles(y + (five ? 8 : 4), L);
    }
}

/* Without weights ggml's chunk functions use the _ref row quantizers. */
void tport_quant_q4_0_weighted(const float *x, void *y, int64_t n, const float *qw) {
    if (!qw)
        tport_quant_q4_0(x, y, n);
    else
        quant_sym(x, y, n, qw, 8, 18, false);
}
void tport_quant_q5_0_weighted(const float *x, void *y, int64_t n, const float *qw) {
    if (!qw)
        tport_quant_q5_0(x, y, n);
    else
        quant_sym(x, y, n, qw, 16, 22, true);
}
void tport_quant_q4_1_weighted(const float *x, void *y, int64_t n, const float *qw) {
    if (!qw)
        tport_quant_q4_1(x, y, n);
    else
        quant_min(x, y, n, qw, 15, 20, false);
}
void tport_quant_q5_1_weighted(const float *x, void *y, int64_t n, const float *qw) {
    if (!qw)
        tport_quant_q5_1(x, y, n);
    else
        quant_min(x, y, n, qw, 31, 24, true);
}

/* ---- k-quants -------------------------------------------------------------- */
void tport_quant_q2_K_weighted(const float *x, void *vy, int64_t n, const float *quant_weights) {
    if (!quant_weights) {
        tport_quant_q2_K(x, vy, n);
        return;
    }
    uint8_t *y = vy;
    uint8_t L[QK_K], Laux[16], Ls[QK_K / 16], Lm[QK_K / 16];
    float mins[QK_K / 16], scales[QK_K / 16], sw[QK_K / 16], weight[16];
    for (int64_t i = 0; i < n / QK_K; i++, y += Q2K_BYTES, x += QK_K) {
        memset(sw, 0, sizeof sw);
        float sumx2 = 0;
        for (int j = 0; j < QK_K; ++j)
            sumx2 += x[j] * x[j];
        const float sigma2 = sumx2 / QK_K;
        for (int j = 0; j < QK_K / 16; ++j) {
            const float *qw = quant_weights + QK_K * i + 16 * j;
            for (int l = 0; l < 16; ++l)
                weight[l] = qw[l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
            for (int l = 0; l < QK_K / 16; ++l)
                sw[j] += weight[l];
            scales[j] = make_qkx3_quants(16, 3, x + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36);
        }
        float dm = make_qp_quants(QK_K / 16, 15, scales, Ls, sw);
        float mm = make_qp_quants(QK_K / 16, 15, mins, Lm, sw);
        q_wr_f16(y + Q2K_D, dm);
        q_wr_f16(y + Q2K_DMIN, mm);
        dm = q_rd_f16(y + Q2K_D);
        mm = q_rd_f16(y + Q2K_DMIN);
        uint8_t *sc = y + Q2K_SCALES;
        for (int j = 0; j < QK_K / 16; ++j)
            sc[j] = (uint8_t)(Ls[j] | (Lm[j] << 4));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = dm * (float)(sc[j] & 0xF);
            if (!d)
                continue;
            const float m = mm * (float)(sc[j] >> 4);
            for (int ii = 0; ii < 16; ++ii) {
                const int l = q_nearest_int((x[16 * j + ii] + m) / d);
                L[16 * j + ii] = (uint8_t)q_max_i(0, q_min_i(3, l));
            }
        }
        tport_kq_pack_2bit(y + Q2K_QS, L);
    }
}

void tport_quant_q3_K_weighted(const float *x, void *vy, int64_t n, const float *quant_weights) {
    if (!quant_weights) {
        tport_quant_q3_K(x, vy, n);
        return;
    }
    uint8_t *y = vy;
    int8_t L[QK_K], Ls[QK_K / 16];
    float scales[QK_K / 16], weight[16], sw[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, y += Q3K_BYTES, x += QK_K) {
        float sumx2 = 0;
        for (int j = 0; j < QK_K; ++j)
            sumx2 += x[j] * x[j];
        const float sigma2 = 2 * sumx2 / QK_K;
        for (int j = 0; j < QK_K / 16; ++j) {
            const float *qw = quant_weights + QK_K * i + 16 * j;
            for (int l = 0; l < 16; ++l)
                weight[l] = qw[l] * sqrtf(sigma2 + x[16 * j + l] * x[16 * j + l]);
            float sumw = 0;
            for (int l = 0; l < 16; ++l)
                sumw += weight[l];
            sw[j] = sumw;
            scales[j] = tport_make_qx_quants(16, 4, x + 16 * j, L + 16 * j, 1, weight);
        }
        uint8_t *ysc = y + Q3K_SCALES;
        memset(ysc, 0, 12);
        const float d_block = tport_make_qx_quants(QK_K / 16, 32, scales, Ls, 1, sw);
        for (int j = 0; j < QK_K / 16; ++j) {
            int l = Ls[j];
            if (j < 8)
                ysc[j] = (uint8_t)(l & 0xF);
            else
                ysc[j - 8] = (uint8_t)(ysc[j - 8] | (l & 0xF) << 4);
            l >>= 4;
            ysc[j % 4 + 8] = (uint8_t)(ysc[j % 4 + 8] | l << (2 * (j / 4)));
        }
        q_wr_f16(y + Q3K_D, d_block);
        for (int j = 0; j < QK_K / 16; ++j) {
            int8_t sc = (int8_t)(j < 8 ? ysc[j] & 0xF : ysc[j - 8] >> 4);
            sc = (int8_t)((sc | ((ysc[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32);
            const float d = q_rd_f16(y + Q3K_D) * (float)sc;
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ++ii) {
                const int l = q_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)(q_max_i(-4, q_min_i(3, l)) + 4);
            }
        }
        uint8_t *hmask = y + Q3K_HMASK;
        memset(hmask, 0, QK_K / 8);
        int m = 0;
        uint8_t hm = 1;
        uint8_t U[QK_K];
        for (int j = 0; j < QK_K; ++j) {
            if (L[j] > 3) {
                hmask[m] |= hm;
                L[j] -= 4;
            }
            U[j] = (uint8_t)L[j];
            if (++m == QK_K / 8) {
                m = 0;
                hm = (uint8_t)(hm << 1);
            }
        }
        tport_kq_pack_2bit(y + Q3K_QS, U);
    }
}

/* Q4_K (nmax 15) and Q5_K (nmax 31, scales clamped to 63). */
static void quant_q45_K(const float *x, uint8_t *y, int64_t n, const float *quant_weights, bool five) {
    const int nmax = five ? 31 : 15, bytes = five ? Q5K_BYTES : Q4K_BYTES;
    uint8_t L[QK_K], Laux[32], Ls[QK_K / 32], Lm[QK_K / 32];
    float weights[32], sw[QK_K / 32], mins[QK_K / 32], scales[QK_K / 32];
    for (int64_t i = 0; i < n / QK_K; i++, y += bytes, x += QK_K) {
        float sum_x2 = 0;
        for (int l = 0; l < QK_K; ++l)
            sum_x2 += x[l] * x[l];
        const float sigma2 = 2 * sum_x2 / QK_K;
        for (int j = 0; j < QK_K / 32; ++j) {
            const float *qw = quant_weights + QK_K * i + 32 * j;
            for (int l = 0; l < 32; ++l)
                weights[l] = qw[l] * sqrtf(sigma2 + x[32 * j + l] * x[32 * j + l]);
            float sumw = 0;
            for (int l = 0; l < 32; ++l)
                sumw += weights[l];
            sw[j] = sumw;
            scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36);
        }
        const float d_block = make_qp_quants(QK_K / 32, 63, scales, Ls, sw);
        const float m_block = make_qp_quants(QK_K / 32, 63, mins, Lm, sw);
        uint8_t *sc = y + (five ? Q5K_SCALES : Q4K_SCALES);
        for (int j = 0; j < QK_K / 32; ++j) {
            uint8_t ls = Ls[j], lm = Lm[j];
            if (five) {
                ls = ls < 63 ? ls : 63;
                lm = lm < 63 ? lm : 63;
            }
            if (j < 4) {
                sc[j] = ls;
                sc[j + 4] = lm;
            } else {
                sc[j + 4] = (uint8_t)((ls & 0xF) | ((lm & 0xF) << 4));
                sc[j - 4] = (uint8_t)(sc[j - 4] | ((ls >> 4) << 6));
                sc[j] = (uint8_t)(sc[j] | ((lm >> 4) << 6));
            }
        }
        q_wr_f16(y + (five ? Q5K_D : Q4K_D), d_block);
        q_wr_f16(y + (five ? Q5K_DMIN : Q4K_DMIN), m_block);
        for (int j = 0; j < QK_K / 32; ++j) {
            uint8_t s, m;
            tport_kq_get_scale_min_k4(j, sc, &s, &m);
            const float d = q_rd_f16(y + (five ? Q5K_D : Q4K_D)) * (float)s;
            if (!d)
                continue;
            const float dm = q_rd_f16(y + (five ? Q5K_DMIN : Q4K_DMIN)) * (float)m;
            for (int ii = 0; ii < 32; ++ii) {
                const int l = q_nearest_int((x[32 * j + ii] + dm) / d);
                L[32 * j + ii] = (uint8_t)q_max_i(0, q_min_i(nmax, l));
            }
        }
        if (!five) {
            uint8_t *q = y + Q4K_QS;
            for (int j = 0; j < QK_K; j += 64, q += 32)
                for (int l = 0; l < 32; ++l)
                    q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
            continue;
        }
        uint8_t *qh = y + Q5K_QH, *ql = y + Q5K_QS;
        memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int k = 0; k < QK_K; k += 64, ql += 32) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[k + j];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                int l2 = L[k + j + 32];
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
            m1 = (uint8_t)(m1 << 2);
            m2 = (uint8_t)(m2 << 2);
        }
    }
}

void tport_quant_q4_K_weighted(const float *x, void *y, int64_t n, const float *qw) {
    if (!qw)
        tport_quant_q4_K(x, y, n);
    else
        quant_q45_K(x, y, n, qw, false);
}
void tport_quant_q5_K_weighted(const float *x, void *y, int64_t n, const float *qw) {
    if (!qw)
        tport_quant_q5_K(x, y, n);
    else
        quant_q45_K(x, y, n, qw, true);
}

void tport_quant_q6_K_weighted(const float *x, void *vy, int64_t n, const float *quant_weights) {
    if (!quant_weights) {
        tport_quant_q6_K(x, vy, n);
        return;
    }
    uint8_t *y = vy;
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < n / QK_K; i++, y += Q6K_BYTES, x += QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ++ib) {
            const float *qw = quant_weights + QK_K * i + 16 * ib;
            const float scale = tport_make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib, 1, qw);
            scales[ib] = scale;
            const float abs_scale = fabsf(scale);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scale;
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) {
            memset(y, 0, Q6K_BYTES);
            q_wr_f16(y + Q6K_D, 0.f);
            continue;
        }
        const float iscale = -128.f / max_scale;
        q_wr_f16(y + Q6K_D, 1 / iscale);
        int8_t *ysc = (int8_t *)(y + Q6K_SCALES);
        for (int ib = 0; ib < QK_K / 16; ++ib)
            ysc[ib] = q_to_i8(q_min_i(127, q_nearest_int(iscale * scales[ib])));
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = q_rd_f16(y + Q6K_D) * (float)ysc[j];
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
                const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF, q3 = L[j + l + 64] & 0xF,
                              q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) | ((L[j + l + 64] >> 4) << 4) |
                                  ((L[j + l + 96] >> 4) << 6));
            }
        }
    }
}
