/* Tiled mul_mat for Q8_0, Q4_0, IQ4_NL and MXFP4 weights against Q8_0
 * activations, for batches (prompt processing).  Calling the per-row vec_dot kernel for
 * every (weight row, activation column) pair loads, sign-fixes and scales
 * every block again for each output; here a tile of 8 weight rows is
 * unpacked once into a kernel-friendly form and then swept over all
 * activation columns, 4 at a time, so that each loaded block feeds 4-16
 * multiply-accumulates.
 *
 * Unpacked tile (per 32-element block b and row pair p = rows 2p, 2p+1):
 *   vals[(b * 4 + p) * 64 + 32 * (row & 1) + e] = x[e] + 128 (as u8),
 *   scls[(b * 4 + p) * 16 + 8 * (row & 1) + l] = the row's block scale.
 * VNNI's dpbusd multiplies unsigned by signed bytes, so the weights are
 * offset by 128 and the offset's contribution, 128 * sum(y), is taken off
 * again by starting the accumulation at -128 * sum(y) (one dpbusd per
 * activation block, shared by all rows).  Integer sums are exact; each
 * block's sum is scaled by dx * dy and accumulated in f32, as the per-row
 * kernels do, only the order of the float additions differs.
 *
 * IQ4_NL and MXFP4 unpack to the same form: their 4-bit indices looked up
 * in the type's 16-entry table (pshufb) are int8 values like Q8_0's, and
 * the block scale (f16, or E8M0 as ggml converts it: 2^(e-128), the table
 * holding doubled E2M1 codes) goes beside them. */
#include <string.h>

#include "cpu_internal.h"
#include "quant/quant_kernels.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

/* IQ4_NL {f16 d; u8 qs[16]} and MXFP4 {u8 e; u8 qs[16]}: bytes per block. */
static bool lut_type(tport_type_id type) { return type == TPORT_TYPE_IQ4_NL || type == TPORT_TYPE_MXFP4; }
static size_t lut_block_bytes(tport_type_id type) { return type == TPORT_TYPE_MXFP4 ? BMXFP4 : BIQ4_NL; }

/* Block b of an IQ4_NL or MXFP4 row: the 32 table values (low nibbles are
 * elements 0..15, high ones 16..31) xor `flip` into v, the scale returned. */
static float lut_block(tport_type_id type, const uint8_t *row, int64_t b, uint8_t flip, uint8_t *v) {
    const bool mx = type == TPORT_TYPE_MXFP4;
    const uint8_t *blk = row + (size_t)b * lut_block_bytes(type);
    const __m128i tbl = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(const void *)(mx ? CPUQ(kvalues_mxfp4)
                                                                                          : CPUQ(kvalues_iq4nl))),
                                      _mm_set1_epi8((char)flip));
    const __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + (mx ? 1 : 2))), m = _mm_set1_epi8(0x0F);
    _mm_storeu_si128((__m128i *)(void *)v, _mm_shuffle_epi8(tbl, _mm_and_si128(q, m)));
    _mm_storeu_si128((__m128i *)(void *)(v + 16), _mm_shuffle_epi8(tbl, _mm_and_si128(_mm_srli_epi16(q, 4), m)));
    return mx ? cpuq_e8m0_half(blk[0]) : cpuq_half(blk);
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
    defined(__F16C__)
#include <immintrin.h>

#define BLK 32
#define Q8_0_BYTES 34
#define Q4_0_BYTES 18
#define PAIRS (CPU_Q8TILE_ROWS / 2)
#define COLS 4

bool cpu_q8tile_available(tport_type_id type) {
    return type == TPORT_TYPE_Q8_0 || type == TPORT_TYPE_Q4_0 || lut_type(type);
}

size_t cpu_q8tile_scratch(int64_t K) {
    /* values 64 bytes and scales 64 bytes per (block, pair) */
    return (size_t)(K / BLK) * PAIRS * 128 + 64;
}

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

void cpu_q8tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / BLK;
    uint8_t *vals = tile;
    float *scls = (float *)(void *)(tile + (size_t)nb * PAIRS * 64);
    for (int r = 0; r < CPU_Q8TILE_ROWS; r++) {
        int p = r / 2, half = r & 1;
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *v = vals + (size_t)(b * PAIRS + p) * 64 + 32 * half;
            float *s = scls + (size_t)(b * PAIRS + p) * 16 + 8 * half;
            float d = 0.0f;
            if (r >= nrows) {
                memset(v, 0x80, 32);
            } else if (lut_type(type)) {
                d = lut_block(type, rows[r], b, 0x80, v);
            } else if (type == TPORT_TYPE_Q8_0) {
                const uint8_t *blk = rows[r] + (size_t)b * Q8_0_BYTES;
                __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 2));
                _mm256_storeu_si256((__m256i *)(void *)v, _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80)));
                d = half_at(blk);
            } else { /* Q4_0: low nibbles are elements 0..15, high 16..31 */
                const uint8_t *blk = rows[r] + (size_t)b * Q4_0_BYTES;
                __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
                __m128i m = _mm_set1_epi8(0x0F), off = _mm_set1_epi8(120); /* q - 8 + 128 */
                __m128i lo = _mm_add_epi8(_mm_and_si128(q, m), off);
                __m128i hi = _mm_add_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m), off);
                _mm_storeu_si128((__m128i *)(void *)v, lo);
                _mm_storeu_si128((__m128i *)(void *)(v + 16), hi);
                d = half_at(blk);
            }
            _mm256_storeu_ps(s, _mm256_set1_ps(d));
        }
    }
}

/* Sum of lanes 0..7 and of lanes 8..15. */
static void hsum_halves(__m512 a, float *lo, float *hi) {
    __m256 l = _mm512_castps512_ps256(a), h = _mm512_extractf32x8_ps(a, 1);
    __m256 t = _mm256_hadd_ps(l, h);        /* l01 l23 h01 h23 | l45 l67 h45 h67 */
    t = _mm256_hadd_ps(t, t);               /* l0123 h0123 .. | l4567 h4567 ..   */
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    *lo = _mm_cvtss_f32(s);
    *hi = _mm_cvtss_f32(_mm_shuffle_ps(s, s, 1));
}

/* out[c * ROWS + r] for nc (<= COLS) columns; nc is a constant at each
 * call site so the loops over it unroll. */
static inline __attribute__((always_inline)) void kernel(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                         size_t y_stride, int nc, float *out) {
    const uint8_t *vals = tile;
    const float *scls = (const float *)(const void *)(tile + (size_t)nb * PAIRS * 64);
    __m512 acc[PAIRS][COLS];
    for (int p = 0; p < PAIRS; p++)
        for (int c = 0; c < COLS; c++)
            acc[p][c] = _mm512_setzero_ps();
    const __m512i k128 = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    for (int64_t b = 0; b < nb; b++) {
        __m512i x[PAIRS];
        for (int p = 0; p < PAIRS; p++)
            x[p] = _mm512_loadu_si512((const void *)(vals + (size_t)(b * PAIRS + p) * 64));
        for (int c = 0; c < nc; c++) {
            const uint8_t *yb = y + (size_t)c * y_stride + (size_t)b * Q8_0_BYTES;
            __m512i yv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(yb + 2)));
            __m512i start = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k128, yv));
            __m512 dy = _mm512_set1_ps(half_at(yb));
            for (int p = 0; p < PAIRS; p++) {
                __m512i i = _mm512_dpbusd_epi32(start, x[p], yv);
                __m512 d = _mm512_mul_ps(_mm512_loadu_ps(scls + (size_t)(b * PAIRS + p) * 16), dy);
                acc[p][c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(i), acc[p][c]);
            }
        }
    }
    for (int c = 0; c < nc; c++)
        for (int p = 0; p < PAIRS; p++)
            hsum_halves(acc[p][c], &out[c * CPU_Q8TILE_ROWS + 2 * p], &out[c * CPU_Q8TILE_ROWS + 2 * p + 1]);
}

void cpu_q8tile_dot(const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out) {
    int64_t nb = K / BLK;
    switch (ncols) {
    case 1: kernel(tile, nb, y, y_stride, 1, out); break;
    case 2: kernel(tile, nb, y, y_stride, 2, out); break;
    case 3: kernel(tile, nb, y, y_stride, 3, out); break;
    default: kernel(tile, nb, y, y_stride, 4, out); break;
    }
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* AVX2: no dpbusd, so signed x signed bytes go through maddubs with |x|
 * and y carrying x's sign (exact: |x| <= 128, |y| <= 127, pair sums below
 * 32768).  Unpacked tile (per 32-element block b and row r):
 *   vals[(b * ROWS + r) * 32 + e] = x[e] as int8 (Q4_0: nibble - 8),
 *   scls[b * ROWS + r]           = the row's block scale.
 * The kernel takes 4 rows x 2 columns at a time (8 float accumulators fit
 * AVX2's 16 registers with the operands); the tile stays in L1 across the
 * passes. */
#include <immintrin.h>

#define BLK 32
#define Q8_0_BYTES 34
#define Q4_0_BYTES 18
#define ROWS CPU_Q8TILE_ROWS

bool cpu_q8tile_available(tport_type_id type) {
    return type == TPORT_TYPE_Q8_0 || type == TPORT_TYPE_Q4_0 || lut_type(type);
}

size_t cpu_q8tile_scratch(int64_t K) {
    return (size_t)(K / BLK) * ROWS * (32 + sizeof(float)) + 64;
}

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

void cpu_q8tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / BLK;
    uint8_t *vals = tile;
    float *scls = (float *)(void *)(tile + (size_t)nb * ROWS * 32);
    for (int r = 0; r < ROWS; r++) {
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *v = vals + (size_t)(b * ROWS + r) * 32;
            float d = 0.0f;
            if (r >= nrows) {
                memset(v, 0, 32);
            } else if (lut_type(type)) {
                d = lut_block(type, rows[r], b, 0, v);
            } else if (type == TPORT_TYPE_Q8_0) {
                const uint8_t *blk = rows[r] + (size_t)b * Q8_0_BYTES;
                memcpy(v, blk + 2, 32);
                d = half_at(blk);
            } else { /* Q4_0: low nibbles are elements 0..15, high 16..31 */
                const uint8_t *blk = rows[r] + (size_t)b * Q4_0_BYTES;
                __m128i q = _mm_loadu_si128((const __m128i *)(const void *)(blk + 2));
                __m128i m = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
                _mm_storeu_si128((__m128i *)(void *)v, _mm_sub_epi8(_mm_and_si128(q, m), eight));
                _mm_storeu_si128((__m128i *)(void *)(v + 16),
                                 _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m), eight));
                d = half_at(blk);
            }
            scls[b * ROWS + r] = d;
        }
    }
}

static inline float hsum256(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* Rows r0 .. r0 + 3 against columns c0 .. c0 + nc - 1 (nc 1 or 2). */
static inline __attribute__((always_inline)) void kernel4(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                          size_t y_stride, int r0, int c0, int nc, float *out) {
    const uint8_t *vals = tile;
    const float *scls = (const float *)(const void *)(tile + (size_t)nb * ROWS * 32);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[4][2];
    for (int r = 0; r < 4; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m256i yv[2];
        __m256 dy[2];
        for (int c = 0; c < nc; c++) {
            const uint8_t *yb = y + (size_t)(c0 + c) * y_stride + (size_t)b * Q8_0_BYTES;
            yv[c] = _mm256_loadu_si256((const __m256i *)(const void *)(yb + 2));
            dy[c] = _mm256_set1_ps(half_at(yb));
        }
        for (int r = 0; r < 4; r++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(vals + (size_t)(b * ROWS + r0 + r) * 32));
            __m256i ax = _mm256_sign_epi8(x, x);
            __m256 dx = _mm256_broadcast_ss(scls + b * ROWS + r0 + r);
            for (int c = 0; c < nc; c++) {
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(yv[c], x)), ones);
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy[c]), _mm256_cvtepi32_ps(p), acc[r][c]);
            }
        }
    }
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < 4; r++)
            out[(c0 + c) * ROWS + r0 + r] = hsum256(acc[r][c]);
}

void cpu_q8tile_dot(const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out) {
    int64_t nb = K / BLK;
    for (int r0 = 0; r0 < ROWS; r0 += 4) {
        int c = 0;
        for (; c + 2 <= ncols; c += 2)
            kernel4(tile, nb, y, y_stride, r0, c, 2, out);
        if (c < ncols)
            kernel4(tile, nb, y, y_stride, r0, c, 1, out);
    }
}

#else /* no kernel in this build: mul_mat uses the per-row kernels */

bool cpu_q8tile_available(tport_type_id type) {
    (void)type;
    return false;
}

size_t cpu_q8tile_scratch(int64_t K) {
    (void)K;
    return 0;
}

void cpu_q8tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    (void)type, (void)rows, (void)nrows, (void)K, (void)tile;
}

void cpu_q8tile_dot(const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out) {
    (void)tile, (void)K, (void)y, (void)y_stride, (void)ncols, (void)out;
}
#endif
