/* Q8_0 batches on AMX int8 tiles: the x8 layout of Q8_0 (cpu_repack.c)
 * against 32 Q8_0 activation columns at a time, for CPUs with AMX-INT8.
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
 *   rows' scales as f32, and swept over every column of the batch;
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
 * run 35). */
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
    int64_t nblk = K / 32;
    return (size_t)nblk * (W_BLOCK + ROWS * sizeof(float)) + C_BYTES + ACC_BYTES + 64;
}

static uint8_t *aligned(void *p) { return (uint8_t *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }

/* 4 x8 groups (group_bytes apart) of a Q8_0 weight with rows of K into
 * the B tiles and f32 scales of scratch. */
AMX_INT8_TARGET void cpu_amx_q8_unpack(const uint8_t *groups, size_t group_bytes, int64_t K, void *scratch) {
    int64_t nblk = K / 32;
    uint8_t *wq = aligned(scratch);
    float *wd = (float *)(void *)(wq + (size_t)nblk * W_BLOCK);
    /* a chunk of a group holds 8 bytes of each of its 8 rows: row r's
     * first k-quad in 32-bit word 2r, its second in 2r + 1 */
    const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i offset = _mm512_set1_epi8((char)CPU_X8_Q8_XOR);
    for (int64_t b = 0; b < nblk; b++) {
        for (int h = 0; h < 2; h++) {
            const uint8_t *g0 = groups + (size_t)(2 * h) * group_bytes + (size_t)b * GROUP_BLOCK;
            const uint8_t *g1 = g0 + group_bytes;
            uint8_t *tile = wq + (size_t)b * W_BLOCK + (size_t)h * B_TILE;
            for (int j = 0; j < 4; j++) {
                const __m512i c0 = _mm512_loadu_si512((const void *)(g0 + 16 + 64 * j));
                const __m512i c1 = _mm512_loadu_si512((const void *)(g1 + 16 + 64 * j));
                _mm512_store_si512((void *)(tile + 128 * j),
                                   _mm512_xor_si512(_mm512_permutex2var_epi32(c0, even, c1), offset));
                _mm512_store_si512((void *)(tile + 128 * j + 64),
                                   _mm512_xor_si512(_mm512_permutex2var_epi32(c0, odd, c1), offset));
            }
            _mm256_storeu_ps(wd + b * ROWS + 16 * h,
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g0)));
            _mm256_storeu_ps(wd + b * ROWS + 16 * h + 8,
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g1)));
        }
    }
}

/* Palette 1: C tiles 0-3 (16 x 64 bytes), A tiles 4-5 (16 rows of one
 * block's 32 quants), B tiles 6-7 (8 k-quads x 16 rows of 4 bytes). */
typedef struct tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* In static memory, not built on the stack: GCC 12 does not see that
 * ldtilecfg reads its operand and dropped the stores of a local one. */
static const tile_config config = {
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

void cpu_amx_q8_columns(int64_t K, const uint8_t *y, size_t ys, const cpu_x8_act *act, size_t as, uint8_t *dst) {
    int64_t nblk = K / 32;
    float *dy = (float *)(void *)(dst + (size_t)nblk * COLS * 32);
    for (int col = 0; col < COLS; col++)
        for (int64_t b = 0; b < nblk; b++) {
            memcpy(dst + (size_t)b * COLS * 32 + (size_t)col * 32, y + (size_t)col * ys + (size_t)b * 34 + 2, 32);
            dy[b * COLS + col] = act[(size_t)col * as + (size_t)b].d;
        }
}

/* The unpacked 32 rows of scratch against the COLS columns that
 * cpu_amx_q8_columns copied to cols, into out + c ldo (bytes): ROWS f32
 * each; between cpu_amx_q8_begin and _end. */
AMX_INT8_TARGET void cpu_amx_q8_cols(void *scratch, int64_t K, const uint8_t *cols, uint8_t *out, size_t ldo) {
    int64_t nblk = K / 32;
    const uint8_t *wq = aligned(scratch);
    const float *wd = (const float *)(const void *)(wq + (size_t)nblk * W_BLOCK);
    int32_t *c = (int32_t *)(void *)((uint8_t *)wd + (size_t)nblk * ROWS * sizeof(float));
    float *acc = (float *)(void *)((uint8_t *)c + C_BYTES);
    memset(acc, 0, ACC_BYTES);
    const size_t row_c = ROWS * sizeof(int32_t); /* stride of c and acc: one column's ROWS sums */
    for (int64_t b = 0; b < nblk; b++) {
        const uint8_t *yb = cols + (size_t)b * COLS * 32;
        const float *dyb = (const float *)(const void *)(cols + (size_t)nblk * COLS * 32) + b * COLS;
        const uint8_t *w = wq + (size_t)b * W_BLOCK;
        _tile_loadd(4, yb, 32);
        _tile_loadd(5, yb + T * 32, 32);
        _tile_loadd(6, w, 64);
        _tile_loadd(7, w + B_TILE, 64);
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
        _tile_dpbssd(0, 4, 6);
        _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6);
        _tile_dpbssd(3, 5, 7);
        _tile_stored(0, c, row_c);
        _tile_stored(1, c + T, row_c);
        _tile_stored(2, c + T * ROWS, row_c);
        _tile_stored(3, c + T * ROWS + T, row_c);
        const __m512 dx0 = _mm512_loadu_ps(wd + b * ROWS), dx1 = _mm512_loadu_ps(wd + b * ROWS + T);
        for (int col = 0; col < COLS; col++) {
            const __m512 dy = _mm512_set1_ps(dyb[col]);
            float *a = acc + col * ROWS;
            const int32_t *s = c + col * ROWS;
            _mm512_store_ps(a, _mm512_fmadd_ps(_mm512_mul_ps(dx0, dy),
                                               _mm512_cvtepi32_ps(_mm512_load_si512((const void *)s)),
                                               _mm512_load_ps(a)));
            _mm512_store_ps(a + T, _mm512_fmadd_ps(_mm512_mul_ps(dx1, dy),
                                                   _mm512_cvtepi32_ps(_mm512_load_si512((const void *)(s + T))),
                                                   _mm512_load_ps(a + T)));
        }
    }
    for (int col = 0; col < COLS; col++)
        memcpy(out + (size_t)col * ldo, acc + col * ROWS, ROWS * sizeof(float));
}
#endif
