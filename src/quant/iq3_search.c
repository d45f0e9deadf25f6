/* The IQ3 quantizers: ggml's quantize_row_iq3_xxs_impl (grid 256) and
 * quantize_row_iq3_s_impl (grid 512), with and without importance
 * weights, redone from their description:
 *
 * - The search works on "levels" l = 0..7 per element (value 2l + 1): the
 *   IQ3_XXS grid's bytes {4, 12, ..., 52, 62} read as their rank, the
 *   IQ3_S grid's bytes 2l + 1 as they are.  A group of 4 levels is the
 *   12-bit key sum l_i << 3i; the grid entries are the keys on the grid.
 * - A key off the grid has neighbours: the grid entries at the two (256)
 *   or three (512) smallest squared distances (in 2l + 1 units), sorted by
 *   distance, then by index.  The search picks the neighbour with the least
 *   weighted error, the first on a tie: the order is part of the result.
 * - Per 32 elements: signs made even by flipping the element of least
 *   w x^2 (the first on a tie), 31 trial scales, the best by
 *   sumqx^2 / sumq2, off-grid groups re-snapped with the final scale; a
 *   4-bit block scale from max_scale / 31 with ggml's 1.0125 fudge.
 * - IQ3_S (below) differs: 8 explicit sign bits, 19 trial scales, every
 *   group re-snapped, fudge 1.033, and an all-zero group of 32 does not
 *   advance ggml's qs/signs write position (later groups land one slot
 *   early; qh and the scales are indexed by group): reproduced.
 * Float operations in ggml's order, no contraction (CMake builds src/quant
 * with -ffp-contract=off); tests/quant compares the bytes with ggml's. */
#include <float.h>
#include <pthread.h>
#include <stdbool.h>

#include "iq_grids.h"
#include "quant_impl.h"
#include "quant_rows.h"

enum { KEYS = 4096, NEIGHBOUR_CAP = 32768, IQ3_XXS_BYTES = 98, IQ3_S_BYTES = 110 };

typedef struct iq3_tables {
    int grid;                    /* 256 or 512 entries */
    uint8_t level[512][4];       /* the grid in levels */
    int16_t map[KEYS];           /* key -> grid index, or -(offset + 1) */
    uint16_t neighbours[NEIGHBOUR_CAP]; /* at offset: count, then indices */
    bool ok;
} iq3_tables;
static iq3_tables t256 = {.grid = 256}, t512 = {.grid = 512};
static pthread_once_t once256 = PTHREAD_ONCE_INIT, once512 = PTHREAD_ONCE_INIT;

static int level_of(const iq3_tables *t, uint8_t byte) {
    static const uint8_t levels[8] = {4, 12, 20, 28, 36, 44, 52, 62};
    for (int l = 0; l < 8; l++)
        if (t->grid == 256 ? levels[l] == byte : 2 * l + 1 == byte)
            return l;
    return -1;
}

static int dist2(const uint8_t *g, int key) {
    int d = 0;
    for (int i = 0; i < 4; i++) {
        const int diff = 2 * g[i] - 2 * ((key >> 3 * i) & 7); /* (2g+1) - (2l+1) */
        d += diff * diff;
    }
    return d;
}

static void tables_init(iq3_tables *t) {
    const int nwant = t->grid == 256 ? 2 : 3;
    for (int k = 0; k < KEYS; k++)
        t->map[k] = -1;
    for (int j = 0; j < t->grid; j++) {
        int key = 0;
        for (int i = 0; i < 4; i++) {
            const uint32_t entry = t->grid == 256 ? tport_iq3xxs_grid[j] : tport_iq3s_grid[j];
            const int l = level_of(t, iq_grid_byte(entry, i));
            if (l < 0)
                return; /* not ggml's grid: ok stays false */
            t->level[j][i] = (uint8_t)l;
            key |= l << 3 * i;
        }
        t->map[key] = (int16_t)j;
    }
    int at = 0;
    for (int key = 0; key < KEYS; key++) {
        if (t->map[key] >= 0)
            continue;
        /* the nwant smallest distinct distances, ascending */
        int want[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
        for (int j = 0; j < t->grid; j++) {
            int d = dist2(t->level[j], key);
            for (int w = 0; w < nwant; w++) {
                if (d == want[w])
                    break;
                if (d < want[w]) {
                    const int tmp = want[w];
                    want[w] = d;
                    d = tmp;
                }
            }
        }
        int n = 0;
        for (int j = 0; j < t->grid; j++)
            n += dist2(t->level[j], key) <= want[nwant - 1];
        if (at + 1 + n > NEIGHBOUR_CAP)
            return;
        t->map[key] = (int16_t)-(at + 1);
        t->neighbours[at++] = (uint16_t)n;
        /* by distance, then index: a pass per distance */
        for (int w = 0; w < nwant; w++)
            for (int j = 0; j < t->grid; j++)
                if (dist2(t->level[j], key) == want[w])
                    t->neighbours[at++] = (uint16_t)j;
    }
    t->ok = true;
}

static void init256(void) { tables_init(&t256); }
static void init512(void) { tables_init(&t512); }

/* ggml's iq3_find_best_neighbour: writes the levels of the best
 * neighbour of the off-grid key to L. */
static void best_neighbour(const iq3_tables *t, int key, const float *xval, const float *w, float scale, int8_t *L) {
    const uint16_t *nb = &t->neighbours[-t->map[key] - 1];
    float best_d2 = FLT_MAX;
    int best = nb[1];
    for (int j = 1; j <= nb[0]; j++) {
        float d2 = 0;
        for (int i = 0; i < 4; i++) {
            const float q = (float)(2 * t->level[nb[j]][i] + 1);
            const float diff = scale * q - xval[i];
            d2 += w[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            best = nb[j];
        }
    }
    for (int i = 0; i < 4; i++)
        L[i] = (int8_t)t->level[best][i];
}

static int key_of(const int8_t *L) {
    int u = 0;
    for (int i = 0; i < 4; i++)
        u |= L[i] << 3 * i;
    return u;
}

/* Levels of 4 elements at inverse scale id (ggml's
 * nearest_int(0.5 * (id * x - 1)) clamped to 0..7). */
static void levels_at(const float *xval, float id, int8_t *L) {
    for (int i = 0; i < 4; i++) {
        const int l = q_nearest_int(0.5f * (id * xval[i] - 1));
        L[i] = (int8_t)q_max_i(0, q_min_i(7, l));
    }
}

static void sums(const float *weight, const float *xval, const int8_t *L, float *sumqx, float *sumq2) {
    *sumqx = 0;
    *sumq2 = 0;
    for (int i = 0; i < 32; i++) {
        const float w = weight[i], q = (float)(2 * L[i] + 1);
        *sumqx += w * xval[i] * q;
        *sumq2 += w * q * q;
    }
}

/* One group of 32: its levels L, sign bits, and scale (0: all-zero group). */
static float quantize_group_xxs(const float *xb, const float *weight, int8_t *L, uint32_t *signs_out) {
    float xval[32], waux[32];
    int8_t Laux[32];
    bool on_grid[8], on_grid_aux[8];
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
    memset(L, 0, 32);
    *signs_out = 0;
    if (max < 1e-8f) /* ggml's GROUP_MAX_EPS_IQ3_XXS */
        return 0;
    float best = 0, scale = max / 15;
    for (int k = 0; k < 8; k++)
        on_grid[k] = true;
    for (int is = -15; is <= 15; is++) {
        const float id = (15 + (float)is * 0.2f) / max, this_scale = 1 / id;
        for (int k = 0; k < 8; k++) {
            levels_at(xval + 4 * k, id, Laux + 4 * k);
            const int u = key_of(Laux + 4 * k);
            on_grid_aux[k] = t256.map[u] >= 0;
            if (!on_grid_aux[k])
                best_neighbour(&t256, u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
        }
        float sumqx, sumq2;
        sums(weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 32);
            memcpy(on_grid, on_grid_aux, sizeof on_grid);
        }
    }
    int n_off = 0;
    for (int k = 0; k < 8; k++)
        n_off += !on_grid[k];
    if (n_off > 0 && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 8; k++) {
            if (on_grid[k])
                continue;
            int8_t l4[4];
            levels_at(xval + 4 * k, id, l4);
            const int u = key_of(l4);
            if (t256.map[u] >= 0)
                memcpy(L + 4 * k, l4, 4);
            else
                best_neighbour(&t256, u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
        }
        float sumqx, sumq2;
        sums(weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0)
            scale = sumqx / sumq2;
    }
    if (scale < 0) { /* ggml: "should never happen"; flip the signs */
        scale = -scale;
        for (int k = 0; k < 4; k++)
            block_signs[k] = (uint8_t)(~block_signs[k] & 127);
    }
    *signs_out = (uint32_t)block_signs[0] | (uint32_t)block_signs[1] << 7 | (uint32_t)block_signs[2] << 14 |
                 (uint32_t)block_signs[3] << 21;
    return scale;
}

/* qw: n_per_row importance weights (the row's), or NULL. */
static void quantize_iq3_xxs(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    if (pthread_once(&once256, init256) != 0 || !t256.ok) {
        memset(y, 0, (size_t)(n / QK_K) * IQ3_XXS_BYTES); /* unreachable with the generated grid */
        return;
    }
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++, y += IQ3_XXS_BYTES) {
        const float *xbl = x + QK_K * ibl;
        uint8_t q3[96] = {0};
        float scales[8], weight[32], max_scale = 0, sumx2 = 0;
        for (int i = 0; i < QK_K; i++)
            sumx2 += xbl[i] * xbl[i];
        const float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + 32 * ib;
            if (qw)
                for (int i = 0; i < 32; i++)
                    weight[i] = qw[QK_K * ibl + 32 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            else
                for (int i = 0; i < 32; i++)
                    weight[i] = xb[i] * xb[i];
            int8_t L[32];
            uint32_t signs;
            scales[ib] = quantize_group_xxs(xb, weight, L, &signs);
            for (int k = 0; k < 8; k++)
                q3[8 * ib + k] = (uint8_t)t256.map[key_of(L + 4 * k)];
            q_wr_u32(q3 + 64 + 4 * ib, signs);
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        memset(y, 0, IQ3_XXS_BYTES);
        if (max_scale == 0)
            continue;
        const float d = max_scale / 31;
        q_wr_f16(y, d * 1.0125f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib++) {
            const int l = q_max_i(0, q_min_i(15, q_nearest_int(0.5f * (id * scales[ib] - 1))));
            q_wr_u32(q3 + 64 + 4 * ib, q_rd_u32(q3 + 64 + 4 * ib) | (uint32_t)l << 28);
        }
        memcpy(y + 2, q3, 96);
    }
}

void tport_quant_iq3_xxs(const float *x, void *y, int64_t n) { quantize_iq3_xxs(x, y, n, NULL); }

void tport_quant_iq3_xxs_weighted(const float *x, void *y, int64_t n, const float *weights) {
    quantize_iq3_xxs(x, y, n, weights);
}

/* One IQ3_S group of 32: levels L, 4 sign bytes, scale; false for an
 * all-zero group (ggml's `if (!max) continue`). */
static bool quantize_group_s(const float *xb, const float *weight, int8_t *L, uint8_t *signs, float *scale_out) {
    float xval[32], waux[32];
    int8_t Laux[32];
    bool on_grid[8], on_grid_aux[8];
    for (int i = 0; i < 32; i++)
        waux[i] = sqrtf(weight[i]);
    for (int k = 0; k < 4; k++) {
        uint8_t s = 0;
        for (int i = 0; i < 8; i++) {
            if (xb[8 * k + i] >= 0) {
                xval[8 * k + i] = xb[8 * k + i];
            } else {
                xval[8 * k + i] = -xb[8 * k + i];
                s |= (uint8_t)(1u << i);
            }
        }
        signs[k] = s;
    }
    float max = xval[0];
    for (int i = 1; i < 32; i++)
        max = max > xval[i] ? max : xval[i];
    memset(L, 0, 32);
    *scale_out = 0;
    if (max == 0)
        return false;
    float best = 0, scale = max / 15;
    for (int k = 0; k < 8; k++)
        on_grid[k] = false;
    for (int is = -9; is <= 9; is++) {
        const float id = (15 + (float)is * 0.2f) / max, this_scale = 1 / id;
        for (int k = 0; k < 8; k++) {
            levels_at(xval + 4 * k, id, Laux + 4 * k);
            const int u = key_of(Laux + 4 * k);
            on_grid_aux[k] = t512.map[u] >= 0;
            if (!on_grid_aux[k])
                best_neighbour(&t512, u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
        }
        float sumqx, sumq2;
        sums(weight, xval, Laux, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            memcpy(L, Laux, 32);
            memcpy(on_grid, on_grid_aux, sizeof on_grid);
        }
    }
    int n_off = 0;
    for (int k = 0; k < 8; k++)
        n_off += !on_grid[k];
    if (n_off > 0 && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 8; k++) { /* every group, on the grid or not (ggml) */
            int8_t l4[4];
            levels_at(xval + 4 * k, id, l4);
            const int u = key_of(l4);
            if (t512.map[u] >= 0)
                memcpy(L + 4 * k, l4, 4);
            else
                best_neighbour(&t512, u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
        }
        float sumqx, sumq2;
        sums(weight, xval, L, &sumqx, &sumq2);
        if (sumq2 > 0)
            scale = sumqx / sumq2;
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 4; k++)
            signs[k] = (uint8_t)~signs[k];
    }
    *scale_out = scale;
    return true;
}

static void quantize_iq3_s(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    if (pthread_once(&once512, init512) != 0 || !t512.ok) {
        memset(y, 0, (size_t)(n / QK_K) * IQ3_S_BYTES); /* unreachable with the generated grid */
        return;
    }
    for (int64_t ibl = 0; ibl < n / QK_K; ibl++, y += IQ3_S_BYTES) {
        memset(y, 0, IQ3_S_BYTES);
        uint8_t *qs = y + 2, *qh = y + 66, *signs = y + 74, *packed = y + 106;
        const float *xbl = x + QK_K * ibl;
        float scales[8], weight[32], max_scale = 0, sumx2 = 0;
        for (int i = 0; i < QK_K; i++)
            sumx2 += xbl[i] * xbl[i];
        const float sigma2 = 2 * sumx2 / QK_K;
        for (int ib = 0; ib < 8; ib++) {
            const float *xb = xbl + 32 * ib;
            if (qw)
                for (int i = 0; i < 32; i++)
                    weight[i] = qw[QK_K * ibl + 32 * ib + i] * sqrtf(sigma2 + xb[i] * xb[i]);
            else
                for (int i = 0; i < 32; i++)
                    weight[i] = xb[i] * xb[i];
            int8_t L[32];
            uint8_t sg[4];
            if (!quantize_group_s(xb, weight, L, sg, &scales[ib]))
                continue; /* qs and signs do not advance (ggml) */
            for (int k = 0; k < 8; k++) {
                const int g = t512.map[key_of(L + 4 * k)];
                qs[k] = (uint8_t)(g & 255);
                qh[ib] |= (uint8_t)((g >> 8) << k);
            }
            qs += 8;
            memcpy(signs, sg, 4);
            signs += 4;
            max_scale = max_scale > scales[ib] ? max_scale : scales[ib];
        }
        if (max_scale == 0)
            continue;
        const float d = max_scale / 31;
        q_wr_f16(y, d * 1.033f);
        const float id = 1 / d;
        for (int ib = 0; ib < 8; ib += 2) {
            const int l1 = q_max_i(0, q_min_i(15, q_nearest_int(0.5f * (id * scales[ib] - 1))));
            const int l2 = q_max_i(0, q_min_i(15, q_nearest_int(0.5f * (id * scales[ib + 1] - 1))));
            packed[ib / 2] = (uint8_t)(l1 | l2 << 4);
        }
    }
}

void tport_quant_iq3_s(const float *x, void *y, int64_t n) { quantize_iq3_s(x, y, n, NULL); }

void tport_quant_iq3_s_weighted(const float *x, void *y, int64_t n, const float *weights) {
    quantize_iq3_s(x, y, n, weights);
}
