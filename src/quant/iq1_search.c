/* IQ1_S's quantizer: ggml's quantize_row_iq1_s_impl, which exists only
 * with importance weights (ggml asserts them), redone from its
 * description:
 * - per 32 elements (weights w * sqrt(2 sumx2/256 + x^2)): the values
 *   sorted ascending (a stable sort: ggml's qsort on glibc is a merge sort
 *   for such small arrays, and ties keep their order), then every split
 *   into three runs tried with the codes {-1, 0, 1} shifted by +1/8 and by
 *   -1/8, the best by sumqx^2 / sumq2 (the first found on a tie);
 * - groups of 8 off the 2048-entry grid take the neighbour (three nearest
 *   distances, iq_lattice.h) of least weighted error at that scale, and
 *   the scale is refitted when any did;
 * - a 3-bit scale per 32 from max_scale / 15 (stored * 1.125, ggml's
 *   fudge) and the shift's sign in bit 15 of qh.
 * Float operations in ggml's order, no contraction; tests/quant compares
 * the bytes with ggml's quantize_iq1_s. */
#include <float.h>

#include "iq_grids.h"
#include "iq_lattice.h"
#include "quant_impl.h"
#include "quant_rows.h"

enum { IQ1_S_BYTES = 50, BS = 32 };

/* ggml's iq1_find_best_neighbour2: the neighbour of least
 * sum w (scale * xx[level] - x)^2, the first on a tie. */
static int best_neighbour(const tport_iq_lattice *T, int key, const float *x, const float *w, float scale,
                          const float *xx, int8_t *L) {
    const uint16_t *nb = &T->neighbours[-T->map[key] - 1];
    float best_d2 = FLT_MAX;
    int best = nb[1];
    for (int j = 1; j <= nb[0]; j++) {
        float d2 = 0;
        for (int i = 0; i < 8; i++) {
            const float q = xx[T->level[nb[j]][i]];
            const float diff = scale * q - x[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = nb[j];
        }
    }
    for (int i = 0; i < 8; i++)
        L[i] = (int8_t)T->level[best][i];
    return best;
}

/* One group of 32: grid indices, shift (+1/-1), scale; 0 when skipped. */
static float quantize_group(const tport_iq_lattice *T, const float *xb, const float *weight, uint16_t index[4],
                            int *shift) {
    static const float x_p[3] = {-1 + TPORT_IQ1S_DELTA, TPORT_IQ1S_DELTA, 1 + TPORT_IQ1S_DELTA};
    static const float x_m[3] = {-1 - TPORT_IQ1S_DELTA, -TPORT_IQ1S_DELTA, 1 - TPORT_IQ1S_DELTA};
    *shift = 1;
    float max = fabsf(xb[0]);
    for (int i = 1; i < BS; i++)
        max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
    if (max < 1e-12f) /* GROUP_MAX_EPS_IQ1_S */
        return -1;
    /* stable insertion sort of the indices by value */
    int idx[BS];
    for (int j = 0; j < BS; j++) {
        int k = j;
        while (k > 0 && xb[idx[k - 1]] > xb[j]) {
            idx[k] = idx[k - 1];
            k--;
        }
        idx[k] = j;
    }
    float sumx[BS + 1], sumw[BS + 1];
    sumx[0] = sumw[0] = 0;
    for (int j = 0; j < BS; j++) {
        const int i = idx[j];
        sumx[j + 1] = sumx[j] + weight[i] * xb[i];
        sumw[j + 1] = sumw[j] + weight[i];
    }
    float best_score = -FLT_MAX, scale = max;
    int besti1 = -1, besti2 = -1, best_shift = 0;
    for (int i1 = 0; i1 <= BS; i1++)
        for (int i2 = i1; i2 <= BS; i2++) {
            for (int pm = 0; pm < 2; pm++) {
                const float *xs = pm ? x_m : x_p;
                const float sumqx = (sumx[i1] - sumx[0]) * xs[0] + (sumx[i2] - sumx[i1]) * xs[1] +
                                    (sumx[BS] - sumx[i2]) * xs[2];
                const float sumq2 = (sumw[i1] - sumw[0]) * xs[0] * xs[0] + (sumw[i2] - sumw[i1]) * xs[1] * xs[1] +
                                    (sumw[BS] - sumw[i2]) * xs[2] * xs[2];
                if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                    scale = sumqx / sumq2;
                    best_score = scale * sumqx;
                    besti1 = i1;
                    besti2 = i2;
                    best_shift = pm ? -1 : 1;
                }
            }
        }
    if (besti1 < 0 || besti2 < 0 || best_shift == 0)
        return -1;
    int8_t L[BS];
    for (int j = 0; j < BS; j++)
        L[idx[j]] = (int8_t)(j < besti1 ? 0 : j < besti2 ? 1 : 2);
    if (scale < 0) {
        for (int j = 0; j < BS; j++)
            L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_shift = -best_shift;
    }
    bool all_on_grid = true;
    const float *xx = best_shift == 1 ? x_p : x_m;
    for (int k = 0; k < BS / 8; k++) {
        int u = 0;
        for (int j = 0; j < 8; j++)
            u |= L[8 * k + j] << 2 * j;
        int g = T->map[u];
        if (g < 0) {
            all_on_grid = false;
            g = best_neighbour(T, u, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k);
        }
        index[k] = (uint16_t)g;
    }
    if (!all_on_grid) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < BS / 8; k++)
            for (int j = 0; j < 8; j++) {
                const float w = weight[8 * k + j], q = xx[T->level[index[k]][j]];
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        if (sumqx > 0 && sumq2 > 0)
            scale = sumqx / sumq2;
    }
    *shift = best_shift;
    return scale;
}

void tport_quant_iq1_s_weighted(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    const tport_iq_lattice *T = tport_iq_lattice8(2048);
    if (!qw || !T) {
        memset(y, 0, (size_t)(n / QK_K) * IQ1_S_BYTES); /* callers check qw */
        return;
    }
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++, y += IQ1_S_BYTES) {
        memset(y, 0, IQ1_S_BYTES);
        const float *xbl = x + QK_K * ibl;
        float scales[8], weight[BS], max_scale = 0, sumx2 = 0;
        int shifts[8];
        uint16_t qh[8] = {0};
        for (int i = 0; i < QK_K; i++)
            sumx2 += xbl[i] * xbl[i];
        const float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + BS * ib;
            for (int i = 0; i < BS; i++)
                weight[i] = qw[QK_K * ibl + BS * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            uint16_t index[4];
            scales[ib] = quantize_group(T, xb, weight, index, &shifts[ib]);
            if (scales[ib] < 0) { /* skipped: scale 0, shift +1, bytes zero */
                scales[ib] = 0;
                shifts[ib] = 1;
                continue;
            }
            for (int k = 0; k < 4; k++) {
                y[2 + 4 * ib + k] = (uint8_t)(index[k] & 255);
                qh[ib] |= (uint16_t)((index[k] >> 8) << 3 * k);
            }
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        for (int ib = 0; ib < 8; ib++)
            q_wr_u16(y + 34 + 2 * ib, qh[ib]);
        if (max_scale == 0)
            continue;
        const float d = max_scale / 15;
        q_wr_f16(y, d * 1.125f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib++) {
            int l = q_max_i(0, q_min_i(7, q_nearest_int(0.5f * (id * scales[ib] - 1))));
            if (shifts[ib] == -1)
                l |= 8;
            q_wr_u16(y + 34 + 2 * ib, (uint16_t)(qh[ib] | l << 12));
        }
    }
}

/* IQ1_M: ggml's quantize_row_iq1_m_impl (weights optional: x^2 without):
 * groups of 16, the same split search with a shift per 8 (4 sign pairs,
 * best_k: bit 1 the first half's, bit 0 the second's), 3-bit scales per
 * 16, and the super-block scale refitted over every group (skipped ones
 * count as grid entry 0 at scale 1, as in ggml), stored * 1.1125 in the
 * top nibbles of the scales. */
enum { IQ1_M_BYTES = 56, BM = 16 };

static const float m_p[3] = {-1 + TPORT_IQ1S_DELTA, TPORT_IQ1S_DELTA, 1 + TPORT_IQ1S_DELTA};
static const float m_m[3] = {-1 - TPORT_IQ1S_DELTA, -TPORT_IQ1S_DELTA, 1 - TPORT_IQ1S_DELTA};

static const float *shift_values(int best_k, int k) {
    return k == 0 ? (best_k < 2 ? m_p : m_m) : (best_k % 2 == 0 ? m_p : m_m);
}

static void m_weights(const float *xb, const float *qw, float sigma2, float *weight) {
    for (int i = 0; i < BM; i++)
        weight[i] = qw ? qw[i] * sqrtf(sigma2 + xb[i] * xb[i]) : xb[i] * xb[i];
}

/* One group of 16: indices, best_k, scale; -1 when skipped. */
static float m_group(const tport_iq_lattice *T, const float *xb, const float *weight, uint16_t index[2], int *k_out) {
    float max = fabsf(xb[0]);
    for (int i = 1; i < BM; i++)
        max = max > fabsf(xb[i]) ? max : fabsf(xb[i]);
    if (max < 1e-7f) /* GROUP_MAX_EPS_IQ1_M */
        return -1;
    int idx[BM];
    for (int j = 0; j < BM; j++) {
        int k = j;
        while (k > 0 && xb[idx[k - 1]] > xb[j]) {
            idx[k] = idx[k - 1];
            k--;
        }
        idx[k] = j;
    }
    float best_score = -FLT_MAX, scale = max;
    int besti1 = -1, besti2 = -1, best_k = -1;
    for (int i1 = 0; i1 <= BM; i1++)
        for (int i2 = i1; i2 <= BM; i2++) {
            float sumqx[4] = {0}, sumq2[4] = {0};
            for (int j = 0; j < BM; j++) {
                const int i = idx[j], c = j < i1 ? 0 : j < i2 ? 1 : 2;
                const float w = weight[i], p = m_p[c], m = m_m[c];
                /* first half: k 0, 1 take +, 2, 3 take -; second: 0, 2 +, 1, 3 - */
                const int a = i < BM / 2 ? 1 : 2;
                sumqx[0] += w * p * xb[i];
                sumqx[a] += w * p * xb[i];
                sumqx[3 - a] += w * m * xb[i];
                sumqx[3] += w * m * xb[i];
                sumq2[0] += w * p * p;
                sumq2[a] += w * p * p;
                sumq2[3 - a] += w * m * m;
                sumq2[3] += w * m * m;
            }
            for (int k = 0; k < 4; k++)
                if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                    scale = sumqx[k] / sumq2[k];
                    best_score = scale * sumqx[k];
                    besti1 = i1;
                    besti2 = i2;
                    best_k = k;
                }
        }
    if (besti1 < 0 || besti2 < 0 || best_k < 0)
        return -1;
    int8_t L[BM];
    for (int j = 0; j < BM; j++)
        L[idx[j]] = (int8_t)(j < besti1 ? 0 : j < besti2 ? 1 : 2);
    if (scale < 0) {
        for (int j = 0; j < BM; j++)
            L[j] = (int8_t)(2 - L[j]);
        scale = -scale;
        best_k = 3 - best_k;
    }
    bool all_on_grid = true;
    for (int k = 0; k < 2; k++) {
        int u = 0;
        for (int j = 0; j < 8; j++)
            u |= L[8 * k + j] << 2 * j;
        int g = T->map[u];
        if (g < 0) {
            all_on_grid = false;
            g = best_neighbour(T, u, xb + 8 * k, weight + 8 * k, scale, shift_values(best_k, k), L + 8 * k);
        }
        index[k] = (uint16_t)g;
    }
    if (!all_on_grid) {
        float sumqx = 0, sumq2 = 0;
        for (int k = 0; k < 2; k++) {
            const float *xx = shift_values(best_k, k);
            for (int j = 0; j < 8; j++) {
                const float w = weight[8 * k + j], q = xx[T->level[index[k]][j]];
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        }
        if (sumqx > 0 && sumq2 > 0)
            scale = sumqx / sumq2;
    }
    *k_out = best_k;
    return scale;
}

static void quantize_iq1_m(const float *x, void *vy, int64_t n, const float *qw) {
    static const uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
    uint8_t *y = vy;
    const tport_iq_lattice *T = tport_iq_lattice8(2048);
    if (!T) {
        memset(y, 0, (size_t)(n / QK_K) * IQ1_M_BYTES);
        return;
    }
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++, y += IQ1_M_BYTES) {
        memset(y, 0, IQ1_M_BYTES);
        uint8_t *qs = y, *qh = y + 32;
        const float *xbl = x + QK_K * ibl;
        const float *qwb = qw ? qw + QK_K * ibl : NULL;
        float scales[16], weight[BM], max_scale = 0, sumx2 = 0;
        int shifts[16];
        for (int i = 0; i < QK_K; i++)
            sumx2 += xbl[i] * xbl[i];
        const float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < 16; ib++) {
            const float *xb = xbl + BM * ib;
            m_weights(xb, qwb ? qwb + BM * ib : NULL, sigma2, weight);
            uint16_t index[2];
            scales[ib] = m_group(T, xb, weight, index, &shifts[ib]);
            if (scales[ib] < 0) {
                scales[ib] = 0;
                shifts[ib] = 0;
                continue;
            }
            qs[2 * ib] = (uint8_t)(index[0] & 255);
            qs[2 * ib + 1] = (uint8_t)(index[1] & 255);
            qh[ib] = (uint8_t)((index[0] >> 8) | (index[1] >> 8) << 4);
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        if (max_scale == 0)
            continue;
        uint16_t sc[4] = {0};
        float d = max_scale / 15;
        const float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int ib = 0; ib < 16; ib++) {
            const int l = q_max_i(0, q_min_i(7, q_nearest_int(0.5f * (id * scales[ib] - 1))));
            sc[ib / 4] |= (uint16_t)(l << 3 * (ib % 4));
            qh[ib] |= masks[shifts[ib]];
            const float *xb = xbl + BM * ib;
            m_weights(xb, qwb ? qwb + BM * ib : NULL, sigma2, weight);
            for (int k = 0; k < 2; k++) {
                const float *xx = shift_values(shifts[ib], k);
                const int g = qs[2 * ib + k] + ((qh[ib] << (8 - 4 * k)) & 0x700);
                for (int j = 0; j < 8; j++) {
                    const float w = weight[8 * k + j], q = xx[T->level[g][j]] * (float)(2 * l + 1);
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
        }
        if (sumq2 > 0)
            d = sumqx / sumq2;
        const uint16_t h = tport_fp32_to_fp16(d * 1.1125f);
        sc[0] |= (uint16_t)((h & 0x000f) << 12);
        sc[1] |= (uint16_t)((h & 0x00f0) << 8);
        sc[2] |= (uint16_t)((h & 0x0f00) << 4);
        sc[3] |= (uint16_t)(h & 0xf000);
        for (int k = 0; k < 4; k++)
            q_wr_u16(y + 48 + 2 * k, sc[k]);
    }
}

void tport_quant_iq1_m(const float *x, void *y, int64_t n) { quantize_iq1_m(x, y, n, NULL); }

void tport_quant_iq1_m_weighted(const float *x, void *y, int64_t n, const float *weights) {
    quantize_iq1_m(x, y, n, weights);
}
