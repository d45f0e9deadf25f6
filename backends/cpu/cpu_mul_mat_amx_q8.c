/* Q8_0 batches on AMX int8 tiles: the x8 layout of Q8_0 (cpu_repack.c)
 * against 32 Q8_0 activation columns at a time, for CPUs with AMX-INT8;
 * from CPU_AMX_Q8_MIN_COLS (8) columns, a group of fewer zero-padded (a
 * generation step of a few sequences, tport serve's continuous batching).
 *
 * One TDPBSSD multiplies a 16 x 32 int8 tile by a 32 x 16 one into 16 x 16
 * int32 sums: 8192 multiply-adds, where a VNNI dpbusd does 64.  A Q8_0
 * block is 32 elements with its own scale, so each block's integer sums
 * are taken out of the tiles and scaled in f32 (dx dy isum, the formula
 * of every Q8_0 kernel); that float work, not the tiles, bounds the
 * kernel, and it is 16 outputs a vector instruction.
 *
 * The operands:
 * - A (tokens): 16 activation columns' 32 quants of one block; the
 *   packed Q8_0 rows are first copied (cpu_amx_q8_columns) so that each
 *   block of 32 columns is 1 KiB in one piece, with the 32 scales beside:
 *   read from the rows as they lie (16 rows a packed row apart), the
 *   tile loads waited on memory: RESULTS run 35);
 * - B (weights): 16 weight rows' 32 quants of the block in the tile's
 *   k-quad order (row q holds bytes 4q .. 4q + 3 of each of the 16 rows),
 *   unpacked once per 32 weight rows (4 x8 groups) into scratch, with the
 *   rows' scales as f32, and swept over every column of the batch; a
 *   batch of at most 32 columns (one sweep) unpacks each block just
 *   before its tiles (cpu_amx_q8_fused_n), so that the work of a block
 *   overlaps the next one's arrival from memory: a step of a few columns
 *   reads the weights once, here, and is bound by that;
 * - C: 16 tokens x 16 rows, which is the output's layout (each token's
 *   row of results).
 * Two A and two B tiles feed four C tiles per block: 32 columns x 32 rows.
 *
 * The x8 layout's quants are offset by 128 for VNNI (CPU_X8_Q8_XOR); the
 * unpacking takes the offset off again, so the tiles multiply signed by
 * signed bytes and no correction is needed.  Integer sums are exact, and
 * per block dx dy isum is added in block order with the f32 operations of
 * the x8 kernels (cpu_mul_mat_x8_avx512.c): the same bits, so a column's
 * result does not depend on how many columns share its batch (tport
 * serve's slots get the bits they get alone; test_cpu_repack asserts it).
 * That x8 kernel added each row's two lanes of a block in f32 at the end
 * before; per block in integers costs it two instructions a block and
 * column and keeps this kernel at one f32 product per block and row (a
 * version with two lanes here was no faster than the x8 kernel: RESULTS
 * run 35).
 *
 * Tried without the unpacking (issue 42): a 64-byte chunk of the x8
 * layout is a B-tile row whose word 2r + p is row r's k-quad 2j + p, so
 * a group's 4 chunks load as they lie into a B tile of 4 k-rows, against
 * an A tile whose row 2t + p holds column t's parity-p k-quads, TDPBSUD
 * (unsigned weights) and 128 sum(a) taken off per block and column; the
 * sums C[2t + p][2r + p] of both parities added in registers.  Exact and
 * bit-identical (test_cpu_repack; an error in the correction fails it),
 * but a group a tile: four TDPBSUD and four sums stored a block where
 * the unpacked tiles take two, and the tile instructions, not the
 * unpacking, bound the step: a step of 8 sequences spent more time in
 * the kernel (RESULTS run 38).  Tiles of 8 A rows for such a step (half
 * the rows of TDPBSSD and of the stores) were no faster either. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#if CPU_AMX
#include <immintrin.h>

#define AMX_INT8_TARGET __attribute__((target("amx-tile,amx-int8,avx512f,avx512bw,avx512dq,f16c")))

_Static_assert(CPU_X8_SLICE == 8 && CPU_X8_Q8_XOR == 0x80, "the unpacking reads the 512-bit kernels' x8 layout");

enum {
    T = 16,                          /* rows of a tile */
    ROWS = CPU_AMX_Q8_ROWS,          /* weight rows unpacked at once: 4 x8 groups */
    COLS = CPU_AMX_Q8_COLS,          /* activation columns a step */
    GROUP_BLOCK = 272,               /* bytes of one block of an x8 group: 8 f16 scales, 4 chunks of 64 */
    B_TILE = 8 * 64,                 /* one B tile: 8 k-quads of 16 rows */
    W_BLOCK = 2 * B_TILE,            /* both B tiles of a block */
    C_BYTES = COLS * ROWS * 4,       /* the four C tiles, int32 */
    ACC_BYTES = COLS * ROWS * 4,     /* the f32 sums */
};

static bool amx_int8;

void cpu_amx_q8_init(void) {
    const char *env = getenv("TPORT_CPU_AMX");
    amx_int8 = false;
    if (env && (!strcmp(env, "0") || !strcmp(env, "off")))
        return;
    amx_int8 = cpu_amx_usable(25); /* AMX-INT8 */
}

bool cpu_amx_q8_on(void) { return amx_int8; }

size_t cpu_amx_q8_scratch(int64_t K) {
    int64_t nblk = K / 32 > 2 ? K / 32 : 2; /* cpu_amx_q8_fused_n's two blocks */
    return (size_t)nblk * (W_BLOCK + ROWS * sizeof(float)) + 2 * C_BYTES + ACC_BYTES + 64;
}

static uint8_t *aligned(void *p) { return (uint8_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* Block b of 4 x8 groups (group_bytes apart) into both B tiles at tile
 * and the 32 rows' scales at wd.  A chunk of a group holds 8 bytes of
 * each of its 8 rows: row r's first k-quad in 32-bit word 2r, its second
 * in 2r + 1.  A step of a few columns reads each weight once, here, from
 * memory: `ahead` bytes ahead, as the one-column kernels (cpu_prefetch.c). */
AMX_INT8_TARGET static inline __attribute__((always_inline)) void
unpack_block(const uint8_t *groups, size_t group_bytes, int64_t b, uint8_t *tile, float *wd, uintptr_t ahead) {
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i offset = _mm512_set1_epi8((char)CPU_X8_Q8_XOR);
    for (int k = 0; k < 4; k++)
        for (int o = 0; o < GROUP_BLOCK; o += 64)
            _mm_prefetch((const char *)(groups + (size_t)k * group_bytes + (size_t)b * GROUP_BLOCK + o) + ahead,
                         _MM_HINT_T0);
    for (int h = 0; h < 2; h++) {
        const uint8_t *g0 = groups + (size_t)(2 * h) * group_bytes + (size_t)b * GROUP_BLOCK;
        const uint8_t *g1 = g0 + group_bytes;
        uint8_t *t = tile + (size_t)h * B_TILE;
        for (int j = 0; j < 4; j++) {
            const __m512i c0 = _mm512_loadu_si512((const void *)(g0 + 16 + 64 * j));
            const __m512i c1 = _mm512_loadu_si512((const void *)(g1 + 16 + 64 * j));
            _mm512_store_si512((void *)(t + 128 * j), _mm512_xor_si512(_mm512_permutex2var_epi32(c0, even, c1), offset));
            _mm512_store_si512((void *)(t + 128 * j + 64),
                               _mm512_xor_si512(_mm512_permutex2var_epi32(c0, odd, c1), offset));
        }
        _mm256_storeu_ps(wd + 16 * h, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g0)));
        _mm256_storeu_ps(wd + 16 * h + 8, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g1)));
    }
}

/* 4 x8 groups (group_bytes apart) of a Q8_0 weight with rows of K into
 * the B tiles and f32 scales of scratch. */
AMX_INT8_TARGET void cpu_amx_q8_unpack(const uint8_t *groups, size_t group_bytes, int64_t K, void *scratch) {
    int64_t nblk = K / 32;
    uint8_t *wq = aligned(scratch);
    float *wd = (float *)(void *)(wq + (size_t)nblk * W_BLOCK);
    for (int64_t b = 0; b < nblk; b++)
        unpack_block(groups, group_bytes, b, wq + (size_t)b * W_BLOCK, wd + b * ROWS, cpu_stream_ahead);
}

/* Palette 1: C tiles 0-3 (16 x 64 bytes), A tiles 4-5 (16 rows of one
 * block's 32 quants), B tiles 6-7 (8 k-quads x 16 rows of 4 bytes). */
static const cpu_amx_tile_config config = {
    .palette = 1,
    .colsb = {64, 64, 64, 64, 32, 32, 64, 64},
    .rows = {T, T, T, T, T, T, 8, 8},
};

/* Loading a tile configuration costs about as much as a block's work
 * (a profile of loading it per call: RESULTS run 35), so a
 * thread loads it once for all its calls: begin before the first, end
 * after the last. */
AMX_INT8_TARGET void cpu_amx_q8_begin(void) { _tile_loadconfig(&config); }

AMX_INT8_TARGET void cpu_amx_q8_end(void) { _tile_release(); }

size_t cpu_amx_q8_columns_bytes(int64_t K) { return (size_t)(K / 32) * (COLS * 32 + COLS * sizeof(float)); }

/* A group of fewer than COLS columns (a step of a few sequences, or a
 * batch's last columns) has the rest of its A rows zero: a tile of fewer
 * rows would need a configuration of its own, and loading one costs
 * about as much as a block's work (see cpu_amx_q8_begin), while the
 * TDPBSSD of 16 rows costs what one of 8 does.  The zero rows' sums are
 * never read. */
void cpu_amx_q8_columns_n(int64_t K, const uint8_t *y, size_t ys, const cpu_x8_act *act, size_t as, int n,
                          uint8_t *dst) {
    int64_t nblk = K / 32;
    float *dy = (float *)(void *)(dst + (size_t)nblk * COLS * 32);
    for (int col = 0; col < n; col++)
        for (int64_t b = 0; b < nblk; b++) {
            memcpy(dst + (size_t)b * COLS * 32 + (size_t)col * 32, y + (size_t)col * ys + (size_t)b * 34 + 2, 32);
            dy[b * COLS + col] = act[(size_t)col * as + (size_t)b].d;
        }
    /* only the A tiles that cpu_amx_q8_cols_n loads: the first 16 rows,
     * and the second 16 when n > 16 */
    int rows = n > T ? COLS : T;
    for (int64_t b = 0; b < nblk && n < rows; b++) {
        memset(dst + (size_t)b * COLS * 32 + (size_t)n * 32, 0, (size_t)(rows - n) * 32);
        memset(dy + b * COLS + n, 0, (size_t)(rows - n) * sizeof(float));
    }
}

void cpu_amx_q8_columns(int64_t K, const uint8_t *y, size_t ys, const cpu_x8_act *act, size_t as, uint8_t *dst) {
    cpu_amx_q8_columns_n(K, y, ys, act, as, COLS, dst);
}

/* The block loop of cpu_amx_q8_cols_n and _fused_n for N columns
 * (1..COLS): with 16 or fewer, one A tile against both B tiles (two
 * TDPBSSD a block, C tiles 0 and 1); more, both A tiles (four).  FUSED:
 * each block is unpacked from the groups just before its tiles (into two
 * buffers in turn at wq and wd), so that the float work of one block
 * runs while the next one's weights arrive from memory; else wq and wd
 * hold every block, unpacked before.  Up to REG_COLS columns keep their
 * sums in registers, more in acc.  Every column's result: one dx dy isum
 * per block, added in block order (see the top). */
enum { REG_COLS = 8 };

/* The tiles of one block: the N columns at yb against the 32 rows at w,
 * their sums to c (one column's ROWS a row). */
AMX_INT8_TARGET static inline __attribute__((always_inline)) void tiles_block(const uint8_t *yb, const uint8_t *w,
                                                                              int32_t *c, const int N) {
    const size_t row_c = ROWS * sizeof(int32_t);
    _tile_loadd(4, yb, 32);
    if (N > T)
        _tile_loadd(5, yb + T * 32, 32);
    _tile_loadd(6, w, 64);
    _tile_loadd(7, w + B_TILE, 64);
    _tile_zero(0);
    _tile_zero(1);
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_stored(0, c, row_c);
    _tile_stored(1, c + T, row_c);
    if (N > T) {
        _tile_zero(2);
        _tile_zero(3);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
        _tile_stored(2, c + T * ROWS, row_c);
        _tile_stored(3, c + T * ROWS + T, row_c);
    }
}

/* Software-pipelined: the tiles of block b + 1 are issued (into the other
 * of two sums buffers) before the float work of block b, which then runs
 * while they do (tiles are not renamed: issued after it, they waited). */
AMX_INT8_TARGET static inline __attribute__((always_inline)) void
cols_blocks(const uint8_t *groups, size_t group_bytes, uint8_t *wq, float *wd, int64_t nblk, const uint8_t *cols,
            int32_t *c, float *acc, uint8_t *out, size_t ldo, const int N, const bool FUSED) {
    const bool reg = N <= REG_COLS;
    const float *dy_all = (const float *)(const void *)(cols + (size_t)nblk * COLS * 32);
    __m512 r0[REG_COLS], r1[REG_COLS];
    for (int col = 0; col < REG_COLS; col++)
        r0[col] = r1[col] = _mm512_setzero_ps();
    if (!reg)
        memset(acc, 0, (size_t)N * ROWS * sizeof(float));
    /* FUSED: a quarter of the one-column kernels' distance ahead.  The
     * four streams' lines wait in L1 beside the batch's columns (1 KiB a
     * block: 24 KiB for rows of 768, 64 KiB for 2048); 2 KiB ahead, they
     * pushed the columns out: a step of 8 sequences took least time a
     * quarter as far ahead, of the distances tried (TPORT_CPU_PREFETCH;
     * RESULTS run 38). */
    const uintptr_t ahead = cpu_stream_ahead / 4 / 64 * 64;
    if (FUSED)
        unpack_block(groups, group_bytes, 0, wq, wd, ahead);
    tiles_block(cols, wq, c, N);
    for (int64_t b = 0; b < nblk; b++) {
        const int64_t nb = b + 1;
        if (nb < nblk) {
            uint8_t *w = wq + (size_t)(FUSED ? nb & 1 : nb) * W_BLOCK;
            if (FUSED)
                unpack_block(groups, group_bytes, nb, w, wd + (nb & 1) * ROWS, ahead);
            tiles_block(cols + (size_t)nb * COLS * 32, w, c + (nb & 1) * COLS * ROWS, N);
        }
        const int32_t *cb = c + (b & 1) * COLS * ROWS;
        const float *wdb = wd + (FUSED ? b & 1 : b) * ROWS, *dyb = dy_all + b * COLS;
        const __m512 dx0 = _mm512_loadu_ps(wdb), dx1 = _mm512_loadu_ps(wdb + T);
        for (int col = 0; col < N; col++) {
            const __m512 dy = _mm512_set1_ps(dyb[col]);
            const int32_t *s = cb + col * ROWS;
            const __m512 i0 = _mm512_cvtepi32_ps(_mm512_load_si512((const void *)s));
            const __m512 i1 = _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(s + T)));
            if (reg) {
                r0[col] = _mm512_fmadd_ps(_mm512_mul_ps(dx0, dy), i0, r0[col]);
                r1[col] = _mm512_fmadd_ps(_mm512_mul_ps(dx1, dy), i1, r1[col]);
            } else {
                float *a = acc + col * ROWS;
                _mm512_store_ps(a, _mm512_fmadd_ps(_mm512_mul_ps(dx0, dy), i0, _mm512_load_ps(a)));
                _mm512_store_ps(a + T, _mm512_fmadd_ps(_mm512_mul_ps(dx1, dy), i1, _mm512_load_ps(a + T)));
            }
        }
    }
    for (int col = 0; col < N; col++) {
        float *o = (float *)(void *)(out + (size_t)col * ldo);
        if (reg) {
            _mm512_storeu_ps(o, r0[col]);
            _mm512_storeu_ps(o + T, r1[col]);
        } else {
            memcpy(o, acc + col * ROWS, ROWS * sizeof(float));
        }
    }
}

/* cols_blocks for n columns, constant for the common counts (a step of
 * 8 sequences, whole groups), so that their loops unroll */
#define COLS_BLOCKS_N(n, ...)                                                                                          \
    switch (n) {                                                                                                       \
    case COLS: cols_blocks(__VA_ARGS__, COLS, FUSED_ARG); break;                                                       \
    case 16: cols_blocks(__VA_ARGS__, 16, FUSED_ARG); break;                                                           \
    case 8: cols_blocks(__VA_ARGS__, 8, FUSED_ARG); break;                                                             \
    case 4: cols_blocks(__VA_ARGS__, 4, FUSED_ARG); break;                                                             \
    case 2: cols_blocks(__VA_ARGS__, 2, FUSED_ARG); break;                                                             \
    default: cols_blocks(__VA_ARGS__, n, FUSED_ARG); break;                                                            \
    }

/* The unpacked 32 rows of scratch against the first n (1..COLS) of the
 * columns that cpu_amx_q8_columns(_n) copied to cols, into out + c ldo
 * (bytes): ROWS f32 each; between cpu_amx_q8_begin and _end. */
AMX_INT8_TARGET void cpu_amx_q8_cols_n(void *scratch, int64_t K, const uint8_t *cols, int n, uint8_t *out,
                                       size_t ldo) {
    int64_t nblk = K / 32;
    uint8_t *wq = aligned(scratch);
    float *wd = (float *)(void *)(wq + (size_t)nblk * W_BLOCK);
    int32_t *c = (int32_t *)(void *)((uint8_t *)wd + (size_t)nblk * ROWS * sizeof(float));
    float *acc = (float *)(void *)((uint8_t *)c + 2 * C_BYTES);
#define FUSED_ARG false
    COLS_BLOCKS_N(n, NULL, 0, wq, wd, nblk, cols, c, acc, out, ldo)
#undef FUSED_ARG
}

/* cpu_amx_q8_unpack and cpu_amx_q8_cols_n in one pass over the blocks,
 * for a batch of n <= COLS columns, which sweeps the rows once: scratch
 * as for them (it uses less). */
AMX_INT8_TARGET void cpu_amx_q8_fused_n(const uint8_t *groups, size_t group_bytes, int64_t K, const uint8_t *cols,
                                        int n, void *scratch, uint8_t *out, size_t ldo) {
    int64_t nblk = K / 32;
    uint8_t *wq = aligned(scratch);
    float *wd = (float *)(void *)(wq + 2 * W_BLOCK);
    int32_t *c = (int32_t *)(void *)((uint8_t *)wd + 2 * ROWS * sizeof(float));
    float *acc = (float *)(void *)((uint8_t *)c + 2 * C_BYTES);
#define FUSED_ARG true
    COLS_BLOCKS_N(n, groups, group_bytes, wq, wd, nblk, cols, c, acc, out, ldo)
#undef FUSED_ARG
}

AMX_INT8_TARGET void cpu_amx_q8_cols(void *scratch, int64_t K, const uint8_t *cols, uint8_t *out, size_t ldo) {
    cpu_amx_q8_cols_n(scratch, K, cols, COLS, out, ldo);
}
#endif
