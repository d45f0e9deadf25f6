/* Batches of the 32-element types that unpack to signed bytes (MXFP4,
 * IQ4_NL, Q4_0, Q5_0 and plain Q8_0) against Q8_0 activation columns on
 * AMX-INT8 tiles: a wide tile kind (cpu_tile_kinds.c) of CPU_AMX_Q4_ROWS
 * weight rows against up to CPU_AMX_Q4_COLS columns a call, for CPUs with
 * AMX-INT8 (cpu_amx_q8_on: TPORT_CPU_AMX=0 turns it off with the Q8_0
 * kernel).
 *
 * The scheme is the Q8_0 one (cpu_mul_mat_amx_q8.c, which reads the x8
 * layout; this one reads the file's blocks):
 * - B (weights): each block of 32 rows decoded as the q8tile kernel does
 *   (cpu_mul_mat_q8tile.c: Q4_0 nibble - 8, Q5_0 5-bit quant - 16,
 *   IQ4_NL's and MXFP4's 4-bit indices looked up in the type's int8
 *   table, MXFP4's E8M0 scale as ggml converts it) into two B tiles in
 *   the tiles' k-quad order (row q of a tile holds bytes 4q .. 4q + 3 of
 *   its 16 weight rows), with the rows' scales as f32: once per 32 rows,
 *   then swept over every column of the batch;
 * - A (tokens): the call's columns copied so that each block of 32
 *   columns is 1 KiB in one piece (tile loads from the packed rows as
 *   they lie, 16 rows a packed row apart, waited on memory: the Q8_0
 *   kernel's measurement, RESULTS run 35), with their scales as f32;
 *   columns past the call's are zero; a thread keeps its copies for the
 *   task (see SLOTS);
 * - C: 16 tokens x 16 rows, four tiles a block; each block's int32 sums
 *   are scaled by dx dy in f32 and added in block order (the float work,
 *   not the tiles, bounds the kernel).
 * Integer sums are exact; the float additions run in another order than
 * the row kernels' and the q8tile kernel's (as those two differ). */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "quant/quant_kernels.h"

#if CPU_AMX
#include <immintrin.h>

#include "cpu_unpack_x86.h"

#define AMX_INT8_TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512dq,f16c")))

enum {
    T = 16,                    /* rows of a tile */
    ROWS = CPU_AMX_Q4_ROWS,    /* weight rows unpacked at once */
    COLS = CPU_AMX_Q4_COLS,    /* activation columns a call */
    B_TILE = 8 * 64,           /* one B tile: 8 k-quads of 16 rows */
    W_BLOCK = 2 * B_TILE,      /* both B tiles of a block */
    A_BLOCK = COLS * 32,       /* one block of the copied columns */
    CHUNK = 8,                 /* blocks whose tiles are multiplied before their sums are scaled */
    C_BYTES = CHUNK * COLS * ROWS * 4, /* the chunk's C tiles, int32, four a block */
    ACC_BYTES = COLS * ROWS * 4,
};

_Static_assert(ROWS == 2 * T && COLS == 2 * T, "two A and two B tiles a block");

bool cpu_amx_q4_available(tport_type_id type) {
    return cpu_amx_q8_on() && (type == TPORT_TYPE_MXFP4 || type == TPORT_TYPE_IQ4_NL || type == TPORT_TYPE_Q4_0 ||
                               type == TPORT_TYPE_Q5_0 || type == TPORT_TYPE_Q8_0);
}

/* The thread's scratch: the unpacked rows (B tiles, then f32 scales), the
 * C tiles, the sums, then slots of copied columns (A blocks, then f32
 * scales).  A task sweeps each unpacked tile over the same groups of
 * columns, so a thread keeps its copies (up to SLOT_BYTES in all, for
 * batches of up to SLOTS x 32 columns) and copies each group once a task:
 * copying it for every tile of rows took half the kernel's time (a
 * profile of a gpt-oss prompt).  When the slots are full the last one
 * takes each further group in turn (the others stay: a sweep visits the
 * groups in the same order for every tile, which evicting in turn would
 * miss every time).  The copies lie past the narrow kind's
 * scratch (cpu_q8tile_scratch), which mul_mat_id unpacks into the same
 * memory for its experts with fewer tokens. */
enum { SLOTS = 64, SLOT_BYTES = 2 << 20 };
static size_t w_bytes(int64_t nblk) { return (size_t)nblk * (W_BLOCK + ROWS * sizeof(float)); }
static size_t a_bytes(int64_t nblk) { return (size_t)nblk * (A_BLOCK + COLS * sizeof(float)); }
static int slots(int64_t nblk) {
    size_t n = SLOT_BYTES / a_bytes(nblk);
    return n < 1 ? 1 : n > SLOTS ? SLOTS : (int)n;
}
static size_t a_offset(int64_t K) {
    size_t at = w_bytes(K / 32) + C_BYTES + ACC_BYTES, q8 = cpu_q8tile_scratch(K);
    return ((at > q8 ? at : q8) + 63) / 64 * 64;
}

size_t cpu_amx_q4_scratch(int64_t K) {
    int64_t nblk = K / 32;
    return a_offset(K) + (size_t)slots(nblk) * a_bytes(nblk) + 64;
}

/* What each slot of this thread's scratch holds: columns y (stride, ncols)
 * of K; `used` slots valid, reset by cpu_amx_q4_begin (a new task: other
 * activations at the same addresses). */
static _Thread_local struct slot_key {
    const uint8_t *scratch, *y;
    size_t stride;
    int64_t K;
    int ncols;
} slot_key[SLOTS];
static _Thread_local int slots_used;

static bool same_key(const struct slot_key *a, const struct slot_key *b) {
    return a->scratch == b->scratch && a->y == b->y && a->stride == b->stride && a->K == b->K && a->ncols == b->ncols;
}

static uint8_t *aligned(void *p) { return (uint8_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* Block b of a row of `type`: its 32 signed values to dst, its scale. */
static float decode_block(tport_type_id type, const uint8_t *row, int64_t b, uint8_t *dst) {
    const uint8_t *x;
    __m256i q;
    float d;
    switch (type) {
    case TPORT_TYPE_Q8_0:
        x = row + (size_t)b * 34;
        d = half_at(x);
        q = _mm256_loadu_si256((const __m256i *)(const void *)(x + 2));
        break;
    case TPORT_TYPE_Q4_0:
        x = row + (size_t)b * 18;
        d = half_at(x);
        q = _mm256_sub_epi8(nibbles(x + 2), _mm256_set1_epi8(8));
        break;
    case TPORT_TYPE_Q5_0:
        x = row + (size_t)b * 22;
        d = half_at(x);
        q = _mm256_sub_epi8(_mm256_or_si256(nibbles(x + 6), fifth_bits(x + 2)), _mm256_set1_epi8(16));
        break;
    default: { /* IQ4_NL, MXFP4: 4-bit indices into the type's table of int8 values */
        const bool mx = type == TPORT_TYPE_MXFP4;
        const __m128i tbl =
            _mm_loadu_si128((const __m128i *)(const void *)(mx ? CPUQ(kvalues_mxfp4) : CPUQ(kvalues_iq4nl)));
        x = row + (size_t)b * (mx ? BMXFP4 : BIQ4_NL);
        d = mx ? cpuq_e8m0_half(x[0]) : half_at(x);
        q = _mm256_shuffle_epi8(_mm256_set_m128i(tbl, tbl), nibbles(x + (mx ? 1 : 2)));
        break;
    }
    }
    _mm256_storeu_si256((__m256i *)(void *)dst, q);
    return d;
}

/* The 4-bit types' int8 values by index (Q4_0: nibble - 8). */
static const int8_t q4_0_values[16] = {-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7};

/* Whether rows 0 .. 31 lie `stride` bytes apart (a matrix's rows: the
 * gathers below take them as offsets from the first). */
static bool evenly_spaced(const uint8_t *const rows[], int nrows, ptrdiff_t *stride) {
    if (nrows < ROWS)
        return false;
    *stride = rows[1] - rows[0];
    if (*stride <= 0 || *stride > INT32_MAX / ROWS)
        return false;
    for (int r = 2; r < ROWS; r++)
        if (rows[r] - rows[0] != r * *stride)
            return false;
    return true;
}

/* The fast unpacking of 32 evenly spaced rows of a 4-bit type: per block
 * and 16 rows, a gather of each 4 nibble bytes of all 16 rows gives two
 * tile rows at once (low nibbles: k-quad j, high: k-quad 4 + j) through
 * the type's table, and one gather the 16 scales.  Decoding row by row
 * and transposing took as long as the tiles' work on a gpt-oss prompt,
 * whose experts get some 16 tokens each. */
AMX_INT8_TARGET static void unpack_nibbles(tport_type_id type, const uint8_t *row0, ptrdiff_t stride, int64_t nblk,
                                           uint8_t *wq, float *wd) {
    const bool mx = type == TPORT_TYPE_MXFP4;
    const size_t bb = mx ? BMXFP4 : type == TPORT_TYPE_IQ4_NL ? BIQ4_NL : BQ4_0, qoff = mx ? 1 : 2;
    const int8_t *values = mx ? CPUQ(kvalues_mxfp4) : type == TPORT_TYPE_IQ4_NL ? CPUQ(kvalues_iq4nl) : q4_0_values;
    const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)values));
    const __m512i low = _mm512_set1_epi8(0x0F);
    const __m512i vindex = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32((int)stride));
    for (int64_t b = 0; b < nblk; b++) {
        for (int h = 0; h < 2; h++) {
            const uint8_t *base = row0 + (size_t)(h * T) * (size_t)stride + (size_t)b * bb;
            uint8_t *tile = wq + (size_t)b * W_BLOCK + (size_t)h * B_TILE;
            for (int j = 0; j < 4; j++) {
                const __m512i v = _mm512_i32gather_epi32(vindex, (const void *)(base + qoff + 4 * j), 1);
                _mm512_store_si512((void *)(tile + 64 * j), _mm512_shuffle_epi8(tbl, _mm512_and_si512(v, low)));
                _mm512_store_si512((void *)(tile + 64 * (4 + j)),
                                   _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(v, 4), low)));
            }
            const __m512i sv = _mm512_i32gather_epi32(vindex, (const void *)base, 1);
            __m512 d;
            if (mx) { /* cpuq_e8m0_half, 16 at a time */
                const __m512i e = _mm512_and_si512(sv, _mm512_set1_epi32(0xFF));
                const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
                const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
                const __mmask16 tiny = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2));
                d = _mm512_castsi512_ps(_mm512_mask_blend_epi32(tiny, normal, sub));
            } else {
                d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(sv));
            }
            _mm512_storeu_ps(wd + b * ROWS + h * T, d);
        }
    }
}

/* One B tile from 16 rows decoded as they lie (tmp: 32 bytes a row):
 * k-quad q of the tile is dword q of every row, gathered across them. */
AMX_INT8_TARGET static void store_b_tile(uint8_t *tile, const int32_t *tmp) {
    const __m512i idx = _mm512_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96, 104, 112, 120);
    for (int q = 0; q < 8; q++)
        _mm512_store_si512((void *)(tile + 64 * q), _mm512_i32gather_epi32(idx, tmp + q, 4));
}

/* nrows (<= ROWS) rows of `type` into the B tiles and f32 scales of
 * scratch; missing rows are zero. */
AMX_INT8_TARGET void cpu_amx_q4_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K,
                                       uint8_t *scratch) {
    int64_t nblk = K / 32;
    uint8_t *wq = aligned(scratch);
    float *wd = (float *)(void *)(wq + (size_t)nblk * W_BLOCK);
    ptrdiff_t stride;
    if ((type == TPORT_TYPE_MXFP4 || type == TPORT_TYPE_IQ4_NL || type == TPORT_TYPE_Q4_0) &&
        evenly_spaced(rows, nrows, &stride)) {
        unpack_nibbles(type, rows[0], stride, nblk, wq, wd);
        return;
    }
    /* one tile's 16 rows decoded as they lie, then gathered into it */
    int32_t tmp[T * 8] __attribute__((aligned(64)));
    for (int64_t b = 0; b < nblk; b++) {
        for (int h = 0; h < 2; h++) {
            for (int r = 0; r < T; r++) {
                int row = h * T + r;
                if (row < nrows) {
                    wd[b * ROWS + row] = decode_block(type, rows[row], b, (uint8_t *)(tmp + 8 * r));
                } else {
                    wd[b * ROWS + row] = 0.0f;
                    memset(tmp + 8 * r, 0, 32);
                }
            }
            store_b_tile(wq + (size_t)b * W_BLOCK + (size_t)h * B_TILE, tmp);
        }
    }
}

/* The same from ngroups (<= ROWS / 8) groups of a Q4_0 or MXFP4 weight in
 * its x8 layout (cpu_repack.c, cpu_mul_mat_x8_mxfp4.c; 8 rows,
 * group_bytes apart).  A chunk holds 8 bytes of each of a group's 8 rows,
 * row r in dwords 2r (bytes 0..3 of the slice) and 2r + 1 (4..7): the
 * even dwords of two groups' chunk j are k-quad 2j of a tile's 16 rows
 * (low nibbles; high: 4 + 2j), the odd ones k-quad 2j + 1 (5 + 2j), each
 * one permute and two lookups, as unpack_nibbles' gathers give them from
 * the plain rows.  Decoding row by row instead made an MXFP4 prompt
 * slower on the tiles than on the x8 VNNI kernels.  Rows of missing
 * groups are zero, their scales too. */
_Static_assert(CPU_X8_SLICE == 8, "the x8 Q4_0 unpacking reads the 512-bit kernels' layout");
AMX_INT8_TARGET void cpu_amx_q4_unpack_x8(int layout, const uint8_t *groups, size_t group_bytes, int ngroups,
                                          int64_t K, uint8_t *scratch) {
    /* 8 scales (f16, or MXFP4's exponent bytes), 2 chunks of 8 rows' 8 bytes */
    const bool mx = layout == CPU_LAYOUT_MXFP4_X8;
    const size_t sb = mx ? 1 : 2, group_block = 8 * sb + 8 * 16;
    const int64_t nblk = K / 32;
    uint8_t *wq = aligned(scratch);
    float *wd = (float *)(void *)(wq + (size_t)nblk * W_BLOCK);
    const __m512i tbl =
        _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(mx ? CPUQ(kvalues_mxfp4) : q4_0_values)));
    const __m512i low = _mm512_set1_epi8(0x0F);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t b = 0; b < nblk; b++) {
        for (int h = 0; h < 2; h++) {
            uint8_t *tile = wq + (size_t)b * W_BLOCK + (size_t)h * B_TILE;
            float *d = wd + b * ROWS + h * T;
            const int have = ngroups - 2 * h; /* groups of this tile's two present */
            if (have <= 0) {
                for (int q = 0; q < 8; q++)
                    _mm512_store_si512((void *)(tile + 64 * q), _mm512_setzero_si512());
                _mm512_storeu_ps(d, _mm512_setzero_ps());
                continue;
            }
            const uint8_t *g0 = groups + (size_t)(2 * h) * group_bytes + (size_t)b * group_block;
            const uint8_t *g1 = have > 1 ? g0 + group_bytes : NULL;
            const __mmask16 keep = have > 1 ? 0xFFFF : 0x00FF;
            for (int j = 0; j < 2; j++) {
                const __m512i a = _mm512_loadu_si512((const void *)(g0 + 8 * sb + 64 * j));
                const __m512i c = g1 ? _mm512_loadu_si512((const void *)(g1 + 8 * sb + 64 * j)) : _mm512_setzero_si512();
                const __m512i v[2] = {_mm512_permutex2var_epi32(a, even, c), _mm512_permutex2var_epi32(a, odd, c)};
                for (int k = 0; k < 2; k++) {
                    const __m512i lo = _mm512_shuffle_epi8(tbl, _mm512_and_si512(v[k], low));
                    const __m512i hi = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(v[k], 4), low));
                    _mm512_store_si512((void *)(tile + 64 * (2 * j + k)), _mm512_maskz_mov_epi32(keep, lo));
                    _mm512_store_si512((void *)(tile + 64 * (4 + 2 * j + k)), _mm512_maskz_mov_epi32(keep, hi));
                }
            }
            __m512 dv;
            if (mx) { /* cpuq_e8m0_half, 16 at a time */
                uint64_t e0, e1 = 0;
                memcpy(&e0, g0, 8);
                if (g1)
                    memcpy(&e1, g1, 8);
                const __m512i e = _mm512_cvtepu8_epi32(_mm_set_epi64x((long long)e1, (long long)e0));
                const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
                const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
                const __mmask16 tiny = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2));
                dv = _mm512_castsi512_ps(_mm512_mask_blend_epi32(tiny, normal, sub));
            } else {
                const __m128i h0 = _mm_loadu_si128((const __m128i *)(const void *)g0);
                const __m128i h1 = g1 ? _mm_loadu_si128((const __m128i *)(const void *)g1) : _mm_setzero_si128();
                dv = _mm512_cvtph_ps(_mm256_set_m128i(h1, h0));
            }
            _mm512_storeu_ps(d, _mm512_maskz_mov_ps(keep, dv));
        }
    }
}

/* Palette 1: C tiles 0-3 (16 x 64 bytes), A tiles 4-5 (16 columns of one
 * block's 32 quants), B tiles 6-7 (8 k-quads x 16 rows of 4 bytes). */
static const cpu_amx_tile_config config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 32, 32, 64, 64},
    .rows = {T, T, T, T, T, T, 8, 8},
};

/* A configuration load costs about a block's work: once per thread and
 * task, not per call. */
AMX_INT8_TARGET void cpu_amx_q4_begin(tport_type_id type) {
    (void)type; /* every type is unpacked into the same tiles */
    _tile_loadconfig(&config);
    slots_used = 0;
}

AMX_INT8_TARGET void cpu_amx_q4_end(void) { _tile_release(); }

/* out[c * ROWS + r] = dot(unpacked row r, column c) for the ncols (1 ..
 * COLS) Q8_0 columns y + c y_stride; between cpu_amx_q4_begin and _end.
 * type is unused: the unpacking made every type signed bytes. */
AMX_INT8_TARGET void cpu_amx_q4_dot(tport_type_id type, const uint8_t *scratch, int64_t K, const uint8_t *y,
                                    size_t y_stride, int ncols, float *out) {
    (void)type;
    int64_t nblk = K / 32;
    uint8_t *wq = aligned((void *)(uintptr_t)scratch);
    const float *wd = (const float *)(const void *)(wq + (size_t)nblk * W_BLOCK);
    int32_t *c = (int32_t *)(void *)(wq + w_bytes(nblk));
    float *acc = (float *)(void *)((uint8_t *)c + C_BYTES);
    const struct slot_key key = {scratch, y, y_stride, K, ncols};
    int slot = 0;
    while (slot < slots_used && !same_key(&slot_key[slot], &key))
        slot++;
    const bool copy = slot == slots_used;
    if (copy) {
        if (slots_used < slots(nblk))
            slots_used++;
        else
            slot = slots_used - 1;
        slot_key[slot] = key;
    }
    uint8_t *ya = wq + a_offset(K) + (size_t)slot * a_bytes(nblk);
    float *dya = (float *)(void *)(ya + (size_t)nblk * A_BLOCK);
    if (copy) {
        /* the columns into the tiles' order; a partial call's missing
         * columns zero (their sums are zero and not written) */
        for (int col = 0; col < COLS; col++) {
            const uint8_t *src = y + (size_t)col * y_stride;
            for (int64_t b = 0; b < nblk; b++) {
                uint8_t *dst = ya + (size_t)b * A_BLOCK + (size_t)col * 32;
                if (col < ncols) {
                    _mm256_store_si256((__m256i *)(void *)dst,
                                       _mm256_loadu_si256((const __m256i *)(const void *)(src + (size_t)b * 34 + 2)));
                    dya[b * COLS + col] = half_at(src + (size_t)b * 34);
                } else {
                    _mm256_store_si256((__m256i *)(void *)dst, _mm256_setzero_si256());
                    dya[b * COLS + col] = 0.0f;
                }
            }
        }
    }
    /* a chunk of blocks' tiles multiplied back to back (stored to c),
     * then their sums scaled 4 columns at a time, each column's 32 sums
     * kept in registers across the chunk: per block and column two
     * conversions, products and FMAs, where loading and storing the sums
     * every block doubled the float work */
    const size_t row_c = ROWS * sizeof(int32_t); /* stride of a block's c and of acc: one column's ROWS sums */
    const int quads = (ncols + 3) / 4;
    for (int64_t b0 = 0; b0 < nblk; b0 += CHUNK) {
        const int nb = nblk - b0 < CHUNK ? (int)(nblk - b0) : CHUNK;
        for (int i = 0; i < nb; i++) {
            const int64_t b = b0 + i;
            const uint8_t *yb = ya + (size_t)b * A_BLOCK;
            const uint8_t *w = wq + (size_t)b * W_BLOCK;
            int32_t *cb = c + (size_t)i * COLS * ROWS;
            _tile_loadd(4, yb, 32);
            _tile_loadd(6, w, 64);
            _tile_loadd(7, w + B_TILE, 64);
            _tile_zero(0);
            _tile_zero(1);
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 4, 7);
            _tile_stored(0, cb, row_c);
            _tile_stored(1, cb + T, row_c);
            if (ncols > T) {
                _tile_loadd(5, yb + T * 32, 32);
                _tile_zero(2);
                _tile_zero(3);
                _tile_dpbssd(2, 5, 6);
                _tile_dpbssd(3, 5, 7);
                _tile_stored(2, cb + T * ROWS, row_c);
                _tile_stored(3, cb + T * ROWS + T, row_c);
            }
        }
        for (int q = 0; q < quads; q++) {
            __m512 a[4][2];
            for (int k = 0; k < 4; k++)
                for (int h = 0; h < 2; h++)
                    a[k][h] = b0 ? _mm512_load_ps(acc + (4 * q + k) * ROWS + T * h) : _mm512_setzero_ps();
            for (int i = 0; i < nb; i++) {
                const int64_t b = b0 + i;
                const __m512 dx0 = _mm512_loadu_ps(wd + b * ROWS), dx1 = _mm512_loadu_ps(wd + b * ROWS + T);
                const int32_t *cb = c + (size_t)i * COLS * ROWS + (size_t)4 * q * ROWS;
                const float *dyb = dya + b * COLS + 4 * q;
                for (int k = 0; k < 4; k++) {
                    const __m512 dy = _mm512_set1_ps(dyb[k]);
                    a[k][0] = _mm512_fmadd_ps(_mm512_mul_ps(dx0, dy),
                                              _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(cb + k * ROWS))),
                                              a[k][0]);
                    a[k][1] = _mm512_fmadd_ps(_mm512_mul_ps(dx1, dy),
                                              _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(cb + k * ROWS + T))),
                                              a[k][1]);
                }
            }
            for (int k = 0; k < 4; k++)
                for (int h = 0; h < 2; h++)
                    _mm512_store_ps(acc + (4 * q + k) * ROWS + T * h, a[k][h]);
        }
    }
    memcpy(out, acc, (size_t)ncols * ROWS * sizeof(float));
}
#endif
