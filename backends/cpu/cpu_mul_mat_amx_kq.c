/* K-quant batches on AMX int8 tiles: Q4_K, Q5_K, Q6_K and IQ4_XS weights
 * against Q8_K activation columns, for CPUs with AMX-INT8 (a row of the
 * tile kinds table, cpu_tile_kinds.c, ahead of the VNNI kernel of
 * cpu_mul_mat_kqtile.c, for batches of 32 columns and more).
 *
 * The pattern of cpu_mul_mat_amx_q8.c: ROWS (16) weight rows unpacked once
 * into B tiles in the tiles' k-quad order (row q holds bytes 4q .. 4q + 3
 * of each of the 16 rows), swept over the batch COLS (32) columns at a
 * time; one tile product per sub-block (A: 16 columns' quants of the
 * sub-block, B: the 16 rows' values) into a C tile of 16 columns x 16
 * rows of int32.  The sub-block's scale is per row, so each C tile is
 * taken out (stored), and its exact sums are weighted by the rows'
 * integer sub-scales in int32 over the whole super-block (exact: see
 * below); the float work (d dy S - dmin dy M) is once per super-block, not
 * once per block as in the Q8_0 kernel.  The tile product is the one
 * whose signedness needs no offset:
 *   Q4_K, Q5_K  x = d sc[j] q - dmin m[j], q in [0, 31] unsigned: TDPBSUD
 *               (signed activations, unsigned weights); the mins term
 *               M = sum_j m[j] bsum_j with Q8_K's bsums (per 16: m[j] is
 *               paired with both of sub-block j's), by dpwssd;
 *               |S| <= 8 * 63 * 32 * 31 * 128 < 2^31;
 *   Q6_K        x = d sc[k] (q - 32), sub-blocks of 16: the values stored
 *               as q - 32 (signed) for TDPBSSD, one tile product per 16
 *               (A tiles of 16 bytes a row: the tile configuration is the
 *               type's), no offset; |S| <= 16 * 128 * 16 * 32 * 128 < 2^31;
 *   IQ4_XS      x = d (ls - 32) v, v the table's int8: TDPBSSD, no offset;
 *               |S| <= 8 * 32 * 32 * 127 * 128 < 2^31.
 *
 * The activations are read as the packing left them (Q8_K rows, one a
 * packed row apart: the A tiles load with that stride); a partial group of
 * columns is first copied into scratch beside zeroed rows, so that no
 * tile reads past the batch.  Integer sums are exact; the float ones are
 * ordered differently from the VNNI and row kernels. */
#include <string.h>

#include "cpu_internal.h"

#if CPU_AMX
#include <immintrin.h>

#define AMX_KQ_TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512dq,avx512vnni,f16c")))

enum {
    QK = 256,
    Q8K = 292,    /* bytes of a Q8_K block: f32 d, 256 int8, 16 int16 bsums */
    Q8K_QS = 4,
    Q8K_BSUMS = 260,
    ROWS = 16,
    COLS = 32,
    B_BYTES = 4096,                 /* a super-block's B tiles: 256 values of 16 rows */
    ISC = B_BYTES,                  /* then 16 sub-scales x 16 rows, int32 */
    MINS = ISC + 16 * 64,           /* then 8 dpwssd vectors of mins (Q4_K/Q5_K) */
    DS = MINS + 8 * 64,             /* then d of the 16 rows, f32 */
    DMIN = DS + 64,                 /* and dmin */
    SB_BYTES = DMIN + 64,           /* all of one super-block */
    C_BYTES = 16 * COLS * ROWS * 4, /* the C tiles of up to 16 sub-blocks */
};

bool cpu_amx_kq_available(tport_type_id type) {
    return (type == TPORT_TYPE_Q4_K || type == TPORT_TYPE_Q5_K || type == TPORT_TYPE_Q6_K ||
            type == TPORT_TYPE_IQ4_XS) &&
           cpu_amx_q8_on();
}

static uint8_t *aligned(const void *p) { return (uint8_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

size_t cpu_amx_kq_scratch(int64_t K) {
    size_t nb = (size_t)(K / QK);
    return nb * SB_BYTES + C_BYTES + (size_t)COLS * nb * Q8K + 64;
}

static size_t block_bytes(tport_type_id type) {
    return type == TPORT_TYPE_Q4_K ? 144 : type == TPORT_TYPE_Q5_K ? 176 : type == TPORT_TYPE_IQ4_XS ? 136 : 210;
}

void cpu_amx_kq_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / QK;
    uint8_t *w = aligned(tile);
    size_t bb = block_bytes(type);
    const bool six = type == TPORT_TYPE_Q6_K;
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *sb = w + (size_t)b * SB_BYTES;
        int32_t *isc = (int32_t *)(void *)(sb + ISC);
        int16_t *mins = (int16_t *)(void *)(sb + MINS);
        float *ds = (float *)(void *)(sb + DS), *dmins = (float *)(void *)(sb + DMIN);
        for (int r = 0; r < ROWS; r++) {
            float d = 0.0f, dmin = 0.0f;
            for (int j = 0; j < 8; j++) {
                uint8_t q[32] = {0};
                int sc[2] = {0, 0}, m = 0;
                if (r < nrows)
                    cpu_kqtile_sub(type, rows[r] + (size_t)b * bb, j, q, sc, &m, &d, &dmin);
                if (six) {
                    /* two sub-blocks of 16, tiles of 4 k-quads; q - 32 signed */
                    for (int h = 0; h < 2; h++) {
                        uint8_t *bt = sb + (size_t)(2 * j + h) * 256;
                        for (int l = 0; l < 16; l++)
                            q[16 * h + l] = r < nrows ? (uint8_t)(q[16 * h + l] - 32) : 0;
                        for (int k = 0; k < 4; k++)
                            memcpy(bt + 64 * k + 4 * r, q + 16 * h + 4 * k, 4);
                        isc[(2 * j + h) * ROWS + r] = sc[h];
                    }
                } else {
                    uint8_t *bt = sb + (size_t)j * 512;
                    for (int k = 0; k < 8; k++)
                        memcpy(bt + 64 * k + 4 * r, q + 4 * k, 4);
                    isc[j * ROWS + r] = sc[0];
                    mins[j * 2 * ROWS + 2 * r] = mins[j * 2 * ROWS + 2 * r + 1] = (int16_t)m;
                }
            }
            ds[r] = d;
            dmins[r] = dmin;
        }
    }
}

/* Palette 1: C tiles 0-1 (16 columns x 16 rows of int32), A tiles 2-3
 * (16 columns' quants of one sub-block), B tile 4 (the sub-block's k-quads
 * of 16 rows); sub-blocks of 32 (Q4_K, Q5_K, IQ4_XS) or 16 (Q6_K). */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* static, not on the stack: see cpu_mul_mat_amx_q8.c (GCC 12 dropped the
 * stores of a local one) */
static const tile_config config32 = {
    .palette = 1,
    .colsb = {64, 64, 32, 32, 64},
    .rows = {16, 16, 16, 16, 8},
};
static const tile_config config16 = {
    .palette = 1,
    .colsb = {64, 64, 16, 16, 64},
    .rows = {16, 16, 16, 16, 4},
};

AMX_KQ_TARGET void cpu_amx_kq_begin(tport_type_id type) {
    _tile_loadconfig(type == TPORT_TYPE_Q6_K ? &config16 : &config32);
}

AMX_KQ_TARGET void cpu_amx_kq_end(void) { _tile_release(); }

enum { KQ_MINS, KQ_SPLIT, KQ_SIGNED }; /* Q4_K/Q5_K, Q6_K, IQ4_XS */

static inline __attribute__((always_inline)) AMX_KQ_TARGET void kernel(const uint8_t *w, int64_t nb, const uint8_t *y,
                                                                      size_t ys, int mode, uint8_t *cbuf,
                                                                      float *out) {
    const int ns = mode == KQ_SPLIT ? 16 : 8, sbl = mode == KQ_SPLIT ? 16 : 32;
    for (int c = 0; c < COLS; c++)
        _mm512_storeu_ps(out + c * ROWS, _mm512_setzero_ps());
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *sb = w + (size_t)b * SB_BYTES;
        const uint8_t *yb = y + (size_t)b * Q8K;
        for (int t = 0; t < ns; t++) {
            _tile_loadd(2, yb + Q8K_QS + t * sbl, ys);
            _tile_loadd(3, yb + 16 * ys + Q8K_QS + t * sbl, ys);
            _tile_loadd(4, sb + (size_t)t * sbl * 16, 64);
            _tile_zero(0);
            _tile_zero(1);
            if (mode == KQ_MINS) {
                _tile_dpbsud(0, 2, 4);
                _tile_dpbsud(1, 3, 4);
            } else {
                _tile_dpbssd(0, 2, 4);
                _tile_dpbssd(1, 3, 4);
            }
            _tile_stored(0, cbuf + (size_t)t * 2048, 64);
            _tile_stored(1, cbuf + (size_t)t * 2048 + 1024, 64);
        }
        const __m512 dv = _mm512_load_ps((const void *)(sb + DS));
        const __m512 dminv = _mm512_load_ps((const void *)(sb + DMIN));
        for (int c = 0; c < COLS; c++) {
            const uint8_t *yc = yb + (size_t)c * ys;
            __m512i s = _mm512_setzero_si512();
            for (int t = 0; t < ns; t++)
                s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_load_si512((const void *)(cbuf + t * 2048 + c * 64)),
                                                           _mm512_load_si512((const void *)(sb + ISC + t * 64))));
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(s), dv);
            if (mode == KQ_MINS) {
                __m512i mi = _mm512_setzero_si512();
                for (int p = 0; p < 8; p++) {
                    int32_t pair;
                    memcpy(&pair, yc + Q8K_BSUMS + 4 * p, sizeof pair);
                    mi = _mm512_dpwssd_epi32(mi, _mm512_load_si512((const void *)(sb + MINS + p * 64)),
                                             _mm512_set1_epi32(pair));
                }
                f = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mi), dminv, f);
            }
            float dy;
            memcpy(&dy, yc, sizeof dy);
            _mm512_storeu_ps(out + c * ROWS,
                             _mm512_fmadd_ps(f, _mm512_set1_ps(dy), _mm512_loadu_ps(out + c * ROWS)));
        }
    }
}

AMX_KQ_TARGET void cpu_amx_kq_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y,
                                  size_t y_stride, int ncols, float *out) {
    int64_t nb = K / QK;
    const uint8_t *w = aligned(tile);
    uint8_t *cbuf = (uint8_t *)w + (size_t)nb * SB_BYTES;
    if (ncols < COLS) {
        /* the columns there are, then zeroed ones: tiles read all COLS */
        uint8_t *pad = cbuf + C_BYTES;
        size_t row = (size_t)nb * Q8K;
        for (int c = 0; c < ncols; c++)
            memcpy(pad + (size_t)c * row, y + (size_t)c * y_stride, row);
        memset(pad + (size_t)ncols * row, 0, (size_t)(COLS - ncols) * row);
        y = pad;
        y_stride = row;
    }
    switch (type) {
    case TPORT_TYPE_Q6_K: kernel(w, nb, y, y_stride, KQ_SPLIT, cbuf, out); break;
    case TPORT_TYPE_IQ4_XS: kernel(w, nb, y, y_stride, KQ_SIGNED, cbuf, out); break;
    default: kernel(w, nb, y, y_stride, KQ_MINS, cbuf, out); break;
    }
}
#endif
