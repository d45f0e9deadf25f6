/* IQ2_XXS's and IQ2_XS's quantizers (IQ2_XS at the end).  IQ2_XXS is
 * ggml's quantize_row_iq2_xxs_impl, which exists only with importance
 * weights (ggml asserts them: llama-quantize needs an imatrix for it),
 * redone from its description:
 *
 * - Levels l = 0..2 per element (value 2l + 1): the grid's bytes
 *   {8, 25, 43} read as their rank.  8 levels make the 16-bit key
 *   sum l_i << 2i; the 256 grid entries are the keys on the grid.
 * - A key off the grid has neighbours: the grid entries at the two
 *   smallest squared distances (2l + 1 units), by distance then index;
 *   the least weighted error wins, the first on a tie.
 * - Per 32 elements: signs made even by flipping the element of least
 *   w x^2; a first scale from ggml's make_qp_quants (levels 0..4 under
 *   the weights); 13 trial scales around it, the best by sumqx^2/sumq2;
 *   every group re-snapped with the final scale; a 4-bit scale per 32
 *   from max_scale / 31 (no fudge factor).
 * Float operations in ggml's order, no contraction; tests/quant compares
 * the bytes with ggml's quantize_iq2_xxs. */
#include <float.h>
#include <stdbool.h>
#include <stdlib.h>

#include "iq_grids.h"
#include "iq_lattice.h"
#include "quant_impl.h"
#include "quant_rows.h"

enum { IQ2_XXS_BYTES = 66, IQ2_XS_BYTES = 74, IQ2_S_BYTES = 82 };

typedef tport_iq_lattice iq2_tables;

static void best_neighbour(const iq2_tables *t, int key, const float *xval, const float *w, float scale,
                           int8_t *L) {
    const uint16_t *nb = &t->neighbours[-t->map[key] - 1];
    float best_d2 = FLT_MAX;
    int best = nb[1];
    for (int j = 1; j <= nb[0]; j++) {
        float d2 = 0;
        for (int i = 0; i < 8; i++) {
            const float q = (float)(2 * t->level[nb[j]][i] + 1);
            const float diff = scale * q - xval[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = nb[j];
        }
    }
    for (int i = 0; i < 8; i++)
        L[i] = (int8_t)t->level[best][i];
}

static int key_of(const int8_t *L) {
    int u = 0;
    for (int i = 0; i < 8; i++)
        u |= L[i] << 2 * i;
    return u;
}

static void levels_at(const float *xval, float id, int8_t *L) {
    for (int i = 0; i < 8; i++)
        L[i] = (int8_t)q_max_i(0, q_min_i(2, q_nearest_int(0.5f * (id * xval[i] - 1))));
}

/* ggml's make_qp_quants: a scale for levels 0..nmax of x >= 0 under
 * weights w (only the scale is used here). */
static float make_qp_scale(int n, int nmax, const float *x, const float *w) {
    uint8_t L[32];
    float max = 0;
    for (int i = 0; i < n; i++)
        max = max > x[i] ? max : x[i];
    if (max < 1e-15f)
        return 0.f;
    float iscale = (float)nmax / max;
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)q_nearest_int(iscale * x[i]);
    float scale = 1 / iscale, best_mse = 0;
    for (int i = 0; i < n; i++) {
        const float diff = x[i] - scale * (float)L[i];
        best_mse += w[i] * diff * diff;
    }
    for (int is = -4; is <= 4; is++) {
        if (is == 0)
            continue;
        const float iscale_is = (0.1f * (float)is + (float)nmax) / max, scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; i++) {
            const int l = q_min_i(nmax, q_nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * (float)l;
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = q_min_i(nmax, q_nearest_int(iscale * x[i]));
        L[i] = (uint8_t)l;
        sumlx += w[i] * x[i] * (float)l;
        suml2 += w[i] * (float)l * (float)l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            float slx = sumlx - w[i] * x[i] * (float)L[i];
            float sl2 = suml2 - w[i] * (float)L[i] * (float)L[i];
            if (slx > 0 && sl2 > 0) {
                const int new_l = q_min_i(nmax, q_nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w[i] * x[i] * (float)new_l;
                    sl2 += w[i] * (float)new_l * (float)new_l;
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (uint8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

static void sums(int n, const float *weight, const float *xval, const int8_t *L, float *sumqx, float *sumq2) {
    *sumqx = 0;
    *sumq2 = 0;
    for (int i = 0; i < n; i++) {
        const float w = weight[i], q = (float)(2 * L[i] + 1);
        *sumqx += w * xval[i] * q;
        *sumq2 += w * q * q;
    }
}

/* One group of 32: q2 words (indices, then signs), scale (0: skipped). */
static float quantize_group_xxs(const iq2_tables *T, const float *xb, const float *weight, uint32_t q2[2]) {
    float xval[32], waux[32];
    int8_t L[32], Laux[32];
    uint8_t block_signs[4];
    for (int i = 0; i < 32; i++)
        waux[i] = sqrtf(weight[i]);
    for (int k = 0; k < 4; k++) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; i++) {
            if (xb[8 * k + i] >= 0) {
                xval[8 * k + i] = xb[8 * k + i];
            } else {
                xval[8 * k + i] = -xb[8 * k + i];
                nflip++;
                s |= (uint8_t)(1u << i);
            }
        }
        if (nflip % 2) {
            int imin = 0;
            float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; i++) {
                const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s ^= (uint8_t)(1u << imin);
        }
        block_signs[k] = s & 127;
    }
    float max = xval[0];
    for (int i = 1; i < 32; i++)
        max = max > xval[i] ? max : xval[i];
    if (max < 1e-15f) /* ggml's GROUP_MAX_EPS */
        return 0;
    float scale = make_qp_scale(32, 4, xval, weight);
    const float eff_max = scale * 3;
    if (eff_max <= 0)
        return 0;
    memset(L, 0, sizeof L);
    float best = 0;
    for (int is = -6; is <= 6; is++) {
        const float id = (5 + (float)is * 0.1f) / eff_max, this_scale = 1 / id;
        for (int k = 0; k < 4; k++) {
            levels_at(xval + 8 * k, id, Laux + 8 * k);
            const int u = key_of(Laux + 8 * k);
            if (T->map[u] < 0)
                best_neighbour(T, u, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k);
        }
        float sumqx, sumq2;
        sums(32, weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 32);
        }
    }
    if (scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 4; k++) {
            int8_t l8[8];
            levels_at(xval + 8 * k, id, l8);
            const int u = key_of(l8);
            if (T->map[u] >= 0)
                memcpy(L + 8 * k, l8, 8);
            else
                best_neighbour(T, u, xval + 8 * k, waux + 8 * k, scale, L + 8 * k);
        }
        float sumqx, sumq2;
        sums(32, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0)
            scale = sumqx / sumq2;
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; k++)
            block_signs[k] = (uint8_t)(~block_signs[k] & 127);
    }
    for (int k = 0; k < 4; k++) {
        q2[0] |= (uint32_t)T->map[key_of(L + 8 * k)] << 8 * k;
        q2[1] |= (uint32_t)block_signs[k] << 7 * k;
    }
    return scale;
}

void tport_quant_iq2_xxs_weighted(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    const iq2_tables *T = tport_iq_lattice8(256);
    if (!qw || !T) {
        memset(y, 0, (size_t)(n / QK_K) * IQ2_XXS_BYTES); /* callers check qw; init cannot fail in practice */
        return;
    }
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++, y += IQ2_XXS_BYTES) {
        const float *xbl = x + QK_K * ibl;
        uint32_t q2[16] = {0};
        float scales[8], weight[32], max_scale = 0, sumx2 = 0;
        for (int i = 0; i < QK_K; i++)
            sumx2 += xbl[i] * xbl[i];
        const float sigma2 = sumx2 / QK_K;
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + 32 * ib;
            for (int i = 0; i < 32; i++)
                weight[i] = qw[QK_K * ibl + 32 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            scales[ib] = quantize_group_xxs(T, xb, weight, q2 + 2 * ib);
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        memset(y, 0, IQ2_XXS_BYTES);
        if (max_scale == 0)
            continue;
        const float d = max_scale / 31;
        q_wr_f16(y, d);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib++) {
            const int l = q_max_i(0, q_min_i(15, q_nearest_int(0.5f * (id * scales[ib] - 1))));
            q2[2 * ib + 1] |= (uint32_t)l << 28;
        }
        for (int k = 0; k < 16; k++)
            q_wr_u32(y + 2 + 4 * k, q2[k]);
    }
}

/* IQ2_XS (ggml's quantize_row_iq2_xs_impl, weighted only as well): groups
 * of 16 on the 512-entry grid, the first scale max / 5, 19 trial scales
 * (is_on_grid tracked: only off-grid groups are re-snapped), a 9-bit index
 * and 7 sign bits per 8, a 4-bit scale per 16. */
/* IQ2_S (is_s) differs: the 1024-entry grid, 8 explicit sign bits (no
 * parity flip), a larger zero threshold; its words are index | signs << 10
 * here, split by the caller.  A skipped (all-zero) group leaves q2 as it
 * is. */
static float quantize_group_xs(const float *xb, const float *weight, uint32_t q2[2], bool is_s) {
    const iq2_tables *T = tport_iq_lattice8(is_s ? 1024 : 512); /* built by the caller */
    float xval[16], waux[16];
    int8_t L[16], Laux[16];
    bool on_grid[2], on_grid_aux[2];
    uint8_t block_signs[2];
    for (int i = 0; i < 16; i++)
        waux[i] = sqrtf(weight[i]);
    for (int k = 0; k < 2; k++) {
        int nflip = 0;
        uint8_t s = 0;
        for (int i = 0; i < 8; i++) {
            if (xb[8 * k + i] >= 0) {
                xval[8 * k + i] = xb[8 * k + i];
            } else {
                xval[8 * k + i] = -xb[8 * k + i];
                nflip++;
                s |= (uint8_t)(1u << i);
            }
        }
        if (nflip % 2 && !is_s) {
            int imin = 0;
            float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
            for (int i = 1; i < 8; i++) {
                const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                if (ax < min) {
                    min = ax;
                    imin = i;
                }
            }
            xval[8 * k + imin] = -xval[8 * k + imin];
            s ^= (uint8_t)(1u << imin);
        }
        block_signs[k] = is_s ? s : s & 127;
    }
    float max = xval[0];
    for (int i = 1; i < 16; i++)
        max = max > xval[i] ? max : xval[i];
    memset(L, 0, sizeof L);
    if (max < (is_s ? 1e-8f : 1e-15f)) /* GROUP_MAX_EPS_IQ2_S, GROUP_MAX_EPS */
        return 0;
    float best = 0, scale = max / 5;
    on_grid[0] = on_grid[1] = true;
    for (int is = -9; is <= 9; is++) {
        const float id = (5 + (float)is * 0.1f) / max, this_scale = 1 / id;
        for (int k = 0; k < 2; k++) {
            levels_at(xval + 8 * k, id, Laux + 8 * k);
            const int u = key_of(Laux + 8 * k);
            on_grid_aux[k] = T->map[u] >= 0;
            if (!on_grid_aux[k])
                best_neighbour(T, u, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k);
        }
        float sumqx, sumq2;
        sums(16, weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 16);
            memcpy(on_grid, on_grid_aux, sizeof on_grid);
        }
    }
    if ((!on_grid[0] || !on_grid[1]) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 2; k++) {
            if (on_grid[k])
                continue;
            levels_at(xval + 8 * k, id, L + 8 * k);
            const int u = key_of(L + 8 * k);
            if (T->map[u] < 0)
                best_neighbour(T, u, xval + 8 * k, waux + 8 * k, scale, L + 8 * k);
        }
        float sumqx, sumq2;
        sums(16, weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0)
            scale = sumqx / sumq2;
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 2; k++)
            block_signs[k] = (uint8_t)(is_s ? ~block_signs[k] : ~block_signs[k] & 127);
    }
    for (int k = 0; k < 2; k++)
        q2[k] = (uint32_t)T->map[key_of(L + 8 * k)] | (uint32_t)block_signs[k] << (is_s ? 10 : 9);
    return scale;
}

void tport_quant_iq2_xs_weighted(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    if (!qw || !tport_iq_lattice8(512)) {
        memset(y, 0, (size_t)(n / QK_K) * IQ2_XS_BYTES);
        return;
    }
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++, y += IQ2_XS_BYTES) {
        const float *xbl = x + QK_K * ibl;
        uint16_t q2[32] = {0};
        float scales[16], weight[16], max_scale = 0, sumx2 = 0;
        for (int i = 0; i < QK_K; i++)
            sumx2 += xbl[i] * xbl[i];
        const float sigma2 = sumx2 / QK_K;
        for (int ib = 0; ib < 16; ib++) {
            const float *xb = xbl + 16 * ib;
            for (int i = 0; i < 16; i++)
                weight[i] = qw[QK_K * ibl + 16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            uint32_t w2[2] = {0, 0};
            scales[ib] = quantize_group_xs(xb, weight, w2, false);
            q2[2 * ib] = (uint16_t)w2[0];
            q2[2 * ib + 1] = (uint16_t)w2[1];
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        memset(y, 0, IQ2_XS_BYTES);
        if (max_scale == 0)
            continue;
        const float d = max_scale / 31;
        q_wr_f16(y, d);
        const float id = 1 / d;
        for (int ib = 0; ib < 16; ib++) {
            const int l = q_max_i(0, q_min_i(15, q_nearest_int(0.5f * (id * scales[ib] - 1))));
            y[2 + 64 + ib / 2] |= (uint8_t)(ib % 2 ? l << 4 : l);
        }
        for (int k = 0; k < 32; k++)
            q_wr_u16(y + 2 + 2 * k, q2[k]);
    }
}

/* IQ2_S: ggml's quantize_row_iq2_s_impl, with importance weights or
 * without (then weights 0.25 sigma2 + x^2); the scale fudge is 0.9875. */
static void quantize_iq2_s(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    if (!tport_iq_lattice8(1024)) {
        memset(y, 0, (size_t)(n / QK_K) * IQ2_S_BYTES);
        return;
    }
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++, y += IQ2_S_BYTES) {
        memset(y, 0, IQ2_S_BYTES);
        uint8_t *qs = y + 2, *signs = y + 2 + 32, *qh = y + 66, *packed = y + 74;
        const float *xbl = x + QK_K * ibl;
        float scales[16], weight[16], max_scale = 0, sumx2 = 0;
        for (int i = 0; i < QK_K; i++)
            sumx2 += xbl[i] * xbl[i];
        const float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < 16; ib++) {
            const float *xb = xbl + 16 * ib;
            if (qw)
                for (int i = 0; i < 16; i++)
                    weight[i] = qw[QK_K * ibl + 16 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            else
                for (int i = 0; i < 16; i++)
                    weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
            uint32_t w2[2] = {UINT32_MAX, UINT32_MAX};
            scales[ib] = quantize_group_xs(xb, weight, w2, true);
            if (w2[0] == UINT32_MAX)
                continue; /* skipped: nothing written (ggml) */
            for (int k = 0; k < 2; k++) {
                const int i8 = 2 * ib + k, g = w2[k] & 1023;
                qs[i8] = (uint8_t)(g & 255);
                qh[i8 / 4] |= (uint8_t)((g >> 8) << 2 * (i8 % 4));
                signs[i8] = (uint8_t)(w2[k] >> 10);
            }
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        if (max_scale == 0)
            continue;
        const float d = max_scale / 31;
        q_wr_f16(y, d * 0.9875f);
        const float id = 1 / d;
        for (int ib = 0; ib < 16; ib++) {
            const int l = q_max_i(0, q_min_i(15, q_nearest_int(0.5f * (id * scales[ib] - 1))));
            packed[ib / 2] |= (uint8_t)(ib % 2 ? l << 4 : l);
        }
    }
}

void tport_quant_iq2_s(const float *x, void *y, int64_t n) { quantize_iq2_s(x, y, n, NULL); }

void tport_quant_iq2_s_weighted(const float *x, void *y, int64_t n, const float *weights) {
    quantize_iq2_s(x, y, n, weights);
}
