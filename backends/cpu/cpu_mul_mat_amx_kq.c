/* K-quant batches on AMX int8 tiles: Q4_K, Q5_K, Q6_K and IQ4_XS weights
 * against Q8_K activation columns, for CPUs with AMX-INT8 (a row of the
 * tile kinds table, cpu_tile_kinds.c, ahead of the VNNI kernel of
 * cpu_mul_mat_kqtile.c, for batches of CPU_AMX_KQ_MIN_COLS columns and
 * more: below, unpacking the tiles costs more than they save).
 *
 * The pattern of cpu_mul_mat_amx_q8.c: ROWS (16) weight rows unpacked once
 * into B tiles in the tiles' k-quad order (row q holds bytes 4q .. 4q + 3
 * of each of the 16 rows), swept over the batch COLS (32) columns at a
 * time (A tiles: 16 columns' quants, loaded from the packed Q8_K rows with
 * their stride), into C tiles of 16 columns x 16 rows of int32.
 *
 * The sub-blocks' scales are per row, and a C tile can only be added to.
 * One tile product per sub-block, each C tile stored and its sums weighted
 * by the integer sub-scales (the first version of this kernel), spent a
 * quarter of its time storing tiles (a profile without the stores).  So
 * the sub-scales are folded into the weights, digit by digit:
 *   Q4_K, Q5_K  x = d sc[j] q - dmin m[j], q in [0, 31], sc in [0, 63]:
 *               sc = 8 a + b, a and b in [0, 7], and the B tiles hold
 *               q a and q b (<= 217, unsigned: TDPBSUD, signed
 *               activations by unsigned weights);
 *   Q6_K        x = d sc[k] (q - 32), sc in [-128, 127] per 16: in
 *               balanced base 7, sc = 49 a + 7 b + c with digits in
 *               [-3, 3], and the B tiles hold (q - 32) times each digit
 *               (|.| <= 96, signed: TDPBSSD);
 * so a whole super-block's products (64 elements a tile product) build up
 * in one C tile per digit, taken out once: S = 8 C_a + C_b, or 49 C_a +
 * 7 C_b + C_c, exact (|S| < 2^31: 256 * 217 * 128 * 9 and 256 * 96 * 128
 * * 57), then d dy S in f32, less dmin dy sum_j m[j] bsum_j for Q4_K/Q5_K
 * (the mins against Q8_K's bsums in int32 by dpwssd, m[j] paired with
 * both of sub-block j's sums of 16).
 *   IQ4_XS      x = d (ls - 32) v, v the table's int8 (a full byte: no
 *               room for a digit): one tile product (TDPBSSD) per
 *               sub-block of 32, its exact sums weighted by ls - 32 in
 *               int32 over the super-block (|.| <= 8 * 32 * 32 * 127 *
 *               128 < 2^31), f32 once per super-block.
 *
 * A partial group of columns is first copied into scratch beside zeroed
 * rows, so that no tile reads past the batch.  Integer sums are exact;
 * the float ones are ordered differently from the VNNI and row kernels. */
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
    B_BYTES = 4096,                 /* IQ4_XS: a super-block's B tiles, 256 values of 16 rows */
    ISC = B_BYTES,                  /* then 16 sub-scales x 16 rows, int32 */
    FOLD = 4 * 3 * 1024,            /* the others: B tiles of 64 k x 16 rows, 4 chunks x 3 digits */
    MINS = FOLD,                    /* then 8 dpwssd vectors of mins (Q4_K/Q5_K) */
    DS = MINS + 8 * 64,             /* then d of the 16 rows, f32 */
    DMIN = DS + 64,                 /* and dmin */
    SB_BYTES = DMIN + 64,           /* all of one super-block */
    C_BYTES = 8 * COLS * ROWS * 4,  /* the C tiles taken out of a super-block */
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

/* The digits of a sub-scale (see the top): Q4_K/Q5_K's sc in [0, 63] in
 * base 8, Q6_K's in [-128, 127] in balanced base 7 (digits -3 .. 3:
 * 49 * 3 + 7 * 3 + 3 = 171 >= 128). */
static int digits(bool six, int sc, int dg[3]) {
    if (!six) {
        dg[0] = sc & 7;
        dg[1] = sc >> 3;
        dg[2] = 0;
        return 2;
    }
    for (int p = 0; p < 3; p++) {
        int rem = ((sc % 7) + 7) % 7;
        if (rem > 3)
            rem -= 7;
        dg[p] = rem;
        sc = (sc - rem) / 7;
    }
    return 3;
}

/* 16 x 16 int32 transposed in registers: r[i] holds row i, then column i. */
static inline __attribute__((always_inline)) AMX_KQ_TARGET void transpose16(__m512i r[16]) {
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int h = 0; h < 16; h += 8)
        for (int i = 0; i < 4; i++) {
            t[h + i] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0x88);
            t[h + i + 4] = _mm512_shuffle_i32x4(r[h + i], r[h + i + 4], 0xdd);
        }
    for (int i = 0; i < 8; i++) {
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
    }
}

/* Q4_K, Q5_K, Q6_K: each value times each digit of its sub-scale, first
 * row by row (vals: digit, row, 256 values), then each 64-element chunk of
 * the 16 rows transposed by 4-byte words into its B tile (k-quad q of
 * row r at 64 q + 4 r: a 16 x 16 transpose of int32). */
static AMX_KQ_TARGET void unpack_fold(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t nb,
                                      uint8_t *w) {
    size_t bb = block_bytes(type);
    const bool six = type == TPORT_TYPE_Q6_K;
    const int parts = six ? 3 : 2;
    uint8_t vals[3][ROWS][QK] __attribute__((aligned(64)));
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *sb = w + (size_t)b * SB_BYTES;
        int16_t *mins = (int16_t *)(void *)(sb + MINS);
        float *ds = (float *)(void *)(sb + DS), *dmins = (float *)(void *)(sb + DMIN);
        for (int r = 0; r < ROWS; r++) {
            float d = 0.0f, dmin = 0.0f;
            for (int j = 0; j < 8; j++) {
                uint8_t q[32] = {0};
                int sc[2] = {0, 0}, m = 0;
                if (r < nrows)
                    cpu_kqtile_sub(type, rows[r] + (size_t)b * bb, j, q, sc, &m, &d, &dmin);
                __m256i qv = _mm256_loadu_si256((const __m256i *)(const void *)q);
                /* Q6_K: q - 32, signed (a missing row's sub-scale is 0) */
                const __m512i q16 = six ? _mm512_cvtepi8_epi16(_mm256_sub_epi8(qv, _mm256_set1_epi8(32)))
                                        : _mm512_cvtepu8_epi16(qv);
                int dg0[3], dg1[3];
                digits(six, sc[0], dg0);
                digits(six, sc[1], dg1);
                for (int p = 0; p < parts; p++) {
                    const __m512i dg = _mm512_inserti64x4(_mm512_set1_epi16((short)dg0[p]),
                                                          _mm256_set1_epi16((short)dg1[p]), 1);
                    _mm256_store_si256((__m256i *)(void *)&vals[p][r][32 * j],
                                       _mm512_cvtepi16_epi8(_mm512_mullo_epi16(q16, dg)));
                }
                if (!six)
                    mins[j * 2 * ROWS + 2 * r] = mins[j * 2 * ROWS + 2 * r + 1] = (int16_t)m;
            }
            ds[r] = d;
            dmins[r] = dmin;
        }
        for (int p = 0; p < parts; p++)
            for (int k4 = 0; k4 < 4; k4++) {
                __m512i v[16];
                for (int r = 0; r < ROWS; r++)
                    v[r] = _mm512_load_si512((const void *)&vals[p][r][64 * k4]);
                transpose16(v);
                uint8_t *bt = sb + (size_t)(k4 * 3 + p) * 1024;
                for (int k = 0; k < 16; k++)
                    _mm512_store_si512((void *)(bt + 64 * k), v[k]);
            }
    }
}

void cpu_amx_kq_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / QK;
    uint8_t *w = aligned(tile);
    size_t bb = block_bytes(type);
    if (type != TPORT_TYPE_IQ4_XS) {
        unpack_fold(type, rows, nrows, nb, w);
        return;
    }
    /* IQ4_XS: the int8 values of sub-block j in B tile j, its sub-scale
     * ls - 32 in int32 beside */
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *sb = w + (size_t)b * SB_BYTES;
        int32_t *isc = (int32_t *)(void *)(sb + ISC);
        float *ds = (float *)(void *)(sb + DS);
        for (int r = 0; r < ROWS; r++) {
            float d = 0.0f, dmin;
            for (int j = 0; j < 8; j++) {
                uint8_t q[32] = {0};
                int sc[2] = {0, 0}, m;
                if (r < nrows)
                    cpu_kqtile_sub(type, rows[r] + (size_t)b * bb, j, q, sc, &m, &d, &dmin);
                uint8_t *bt = sb + (size_t)j * 512;
                for (int k = 0; k < 8; k++)
                    memcpy(bt + 64 * k + 4 * r, q + 4 * k, 4);
                isc[j * ROWS + r] = sc[0];
            }
            ds[r] = d;
        }
    }
}

/* Palette 1: C tiles 0-1 (16 columns x 16 rows of int32), A tiles 2-3
 * (16 columns' quants of one sub-block), B tile 4 (the sub-block's k-quads
 * of 16 rows); sub-blocks of 32 (Q4_K, Q5_K, IQ4_XS) or 16 (Q6_K). */
static const cpu_amx_tile_config config32 = {
    .palette = 1,
    .colsb = {64, 64, 32, 32, 64},
    .rows = {16, 16, 16, 16, 8},
};
/* the folded sub-scales: every tile 16 x 64 bytes (C tiles first, then
 * A and B; see kernel_fold) */
static const cpu_amx_tile_config config64 = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 64, 64, 64, 64},
    .rows = {16, 16, 16, 16, 16, 16, 16, 16},
};

AMX_KQ_TARGET void cpu_amx_kq_begin(tport_type_id type) {
    _tile_loadconfig(type == TPORT_TYPE_IQ4_XS ? &config32 : &config64);
}

AMX_KQ_TARGET void cpu_amx_kq_end(void) { _tile_release(); }

/* IQ4_XS: one tile product per sub-block (C tiles 0-1, A 2-3, B 4), its
 * sums taken out and weighted by the sub-scales in int32 over the
 * super-block. */
static AMX_KQ_TARGET void kernel_iq4xs(const uint8_t *w, int64_t nb, const uint8_t *y, size_t ys, uint8_t *cbuf,
                                       float *out) {
    for (int c = 0; c < COLS; c++)
        _mm512_storeu_ps(out + c * ROWS, _mm512_setzero_ps());
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *sb = w + (size_t)b * SB_BYTES;
        const uint8_t *yb = y + (size_t)b * Q8K;
        for (int t = 0; t < 8; t++) {
            _tile_loadd(2, yb + Q8K_QS + t * 32, ys);
            _tile_loadd(3, yb + 16 * ys + Q8K_QS + t * 32, ys);
            _tile_loadd(4, sb + (size_t)t * 512, 64);
            _tile_zero(0);
            _tile_zero(1);
            _tile_dpbssd(0, 2, 4);
            _tile_dpbssd(1, 3, 4);
            _tile_stored(0, cbuf + (size_t)t * 2048, 64);
            _tile_stored(1, cbuf + (size_t)t * 2048 + 1024, 64);
        }
        const __m512 dv = _mm512_load_ps((const void *)(sb + DS));
        for (int c = 0; c < COLS; c++) {
            __m512i s = _mm512_setzero_si512();
            for (int t = 0; t < 8; t++)
                s = _mm512_add_epi32(s, _mm512_mullo_epi32(_mm512_load_si512((const void *)(cbuf + t * 2048 + c * 64)),
                                                           _mm512_load_si512((const void *)(sb + ISC + t * 64))));
            float dy;
            memcpy(&dy, yb + (size_t)c * ys, sizeof dy);
            _mm512_storeu_ps(out + c * ROWS, _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(s), dv),
                                                             _mm512_set1_ps(dy), _mm512_loadu_ps(out + c * ROWS)));
        }
    }
}

/* Q4_K, Q5_K (two digits: C tiles 0-3, A 4-5, B 6-7) and Q6_K (three:
 * C tiles 0-5, A 6, B 7, the A tile loaded once per half of the columns
 * and the B tiles once per half): a super-block's sums build up in the C
 * tiles, one per digit and half of the columns, and are taken out once. */
static inline __attribute__((always_inline)) AMX_KQ_TARGET void kernel_fold(const uint8_t *w, int64_t nb,
                                                                           const uint8_t *y, size_t ys, bool six,
                                                                           uint8_t *cbuf, float *out) {
    for (int c = 0; c < COLS; c++)
        _mm512_storeu_ps(out + c * ROWS, _mm512_setzero_ps());
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *sb = w + (size_t)b * SB_BYTES;
        const uint8_t *yb = y + (size_t)b * Q8K;
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        if (six) {
            _tile_zero(4);
            _tile_zero(5);
        }
        for (int k4 = 0; k4 < 4; k4++) {
            const uint8_t *a0 = yb + Q8K_QS + 64 * k4, *bt = sb + (size_t)k4 * 3 * 1024;
            if (!six) {
                _tile_loadd(4, a0, ys);
                _tile_loadd(5, a0 + 16 * ys, ys);
                _tile_loadd(6, bt, 64);
                _tile_loadd(7, bt + 1024, 64);
                _tile_dpbsud(0, 4, 6);
                _tile_dpbsud(1, 4, 7);
                _tile_dpbsud(2, 5, 6);
                _tile_dpbsud(3, 5, 7);
            } else {
                _tile_loadd(6, a0, ys);
                _tile_loadd(7, bt, 64);
                _tile_dpbssd(0, 6, 7);
                _tile_loadd(7, bt + 1024, 64);
                _tile_dpbssd(1, 6, 7);
                _tile_loadd(7, bt + 2048, 64);
                _tile_dpbssd(2, 6, 7);
                _tile_loadd(6, a0 + 16 * ys, ys);
                _tile_loadd(7, bt, 64);
                _tile_dpbssd(3, 6, 7);
                _tile_loadd(7, bt + 1024, 64);
                _tile_dpbssd(4, 6, 7);
                _tile_loadd(7, bt + 2048, 64);
                _tile_dpbssd(5, 6, 7);
            }
        }
        /* half h's digit p at cbuf + (h parts + p) KiB */
        const int parts = six ? 3 : 2;
        _tile_stored(0, cbuf, 64);
        _tile_stored(1, cbuf + 1024, 64);
        _tile_stored(2, cbuf + 2048, 64);
        _tile_stored(3, cbuf + 3072, 64);
        if (six) {
            _tile_stored(4, cbuf + 4096, 64);
            _tile_stored(5, cbuf + 5120, 64);
        }
        const __m512 dv = _mm512_load_ps((const void *)(sb + DS));
        const __m512 dminv = _mm512_load_ps((const void *)(sb + DMIN));
        for (int c = 0; c < COLS; c++) {
            const uint8_t *yc = yb + (size_t)c * ys;
            const uint8_t *cc = cbuf + (size_t)(c / 16) * parts * 1024 + (size_t)(c % 16) * 64;
            __m512i s0 = _mm512_load_si512((const void *)cc), s1 = _mm512_load_si512((const void *)(cc + 1024)), s;
            if (six)
                s = _mm512_add_epi32(
                    _mm512_add_epi32(s0, _mm512_mullo_epi32(s1, _mm512_set1_epi32(7))),
                    _mm512_mullo_epi32(_mm512_load_si512((const void *)(cc + 2048)), _mm512_set1_epi32(49)));
            else
                s = _mm512_add_epi32(s0, _mm512_slli_epi32(s1, 3));
            __m512 f = _mm512_mul_ps(_mm512_cvtepi32_ps(s), dv);
            if (!six) {
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
    case TPORT_TYPE_Q6_K: kernel_fold(w, nb, y, y_stride, true, cbuf, out); break;
    case TPORT_TYPE_IQ4_XS: kernel_iq4xs(w, nb, y, y_stride, cbuf, out); break;
    default: kernel_fold(w, nb, y, y_stride, false, cbuf, out); break;
    }
}
#endif
