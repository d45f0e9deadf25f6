/* Tiled mul_mat for the 32-element types against Q8 activations, for
 * batches (prompt processing): Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4 weights
 * x Q8_0 and Q4_1, Q5_1 weights x Q8_1 (IQ4_NL's and MXFP4's 4-bit
 * indices looked up in the type's table of int8 values, MXFP4's E8M0
 * scale as ggml converts it).  Calling the per-row vec_dot kernel for
 * every (weight row, activation column) pair loads, sign-fixes and scales
 * every block again for each output; here a tile of 8 weight rows is
 * unpacked once into a kernel-friendly form and then swept over all
 * activation columns, 4 at a time, so that each loaded block feeds 4-16
 * multiply-accumulates.
 *
 * Every type unpacks to 32 bytes per block and one scale: signed values
 * (Q8_0 as stored, Q4_0 nibble - 8, Q5_0 5-bit quant - 16), or for the
 * types with a min (Q4_1, Q5_1) the unsigned quants, whose min is a float
 * per block and row (mins[b * ROWS + r]) multiplied by the Q8_1 block's
 * s = d_y * sum(q_y) and summed apart: one 8-row FMA per block and
 * column, added to the outputs at the end.
 *
 * AVX-512 VNNI tile (per 32-element block b and row pair p = rows 2p, 2p+1):
 *   vals[(b * 4 + p) * 64 + 32 * (row & 1) + e] = x[e] + 128 (as u8),
 *   scls[(b * 4 + p) * 16 + 8 * (row & 1) + l] = the row's block scale.
 * VNNI's dpbusd multiplies unsigned by signed bytes, so signed weights are
 * offset by 128 and the offset's contribution, 128 * sum(y), is taken off
 * again by starting the accumulation at -128 * sum(y) (one dpbusd per
 * activation block, shared by all rows); unsigned quants go in as they
 * are.  Integer sums are exact; each block's sum is scaled by dx * dy and
 * accumulated in f32, as the per-row kernels do, only the order of the
 * float additions differs. */
#include <string.h>

#include "cpu_internal.h"
#include "quant/quant_kernels.h"

#if (defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
     defined(__F16C__)) ||                                                                                    \
    (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>

#include "cpu_unpack_x86.h"

#define BLK 32

bool cpu_q8tile_available(tport_type_id type) {
    return type == TPORT_TYPE_Q8_0 || type == TPORT_TYPE_Q4_0 || type == TPORT_TYPE_Q5_0 ||
           type == TPORT_TYPE_Q4_1 || type == TPORT_TYPE_Q5_1 || type == TPORT_TYPE_IQ4_NL || type == TPORT_TYPE_MXFP4;
}

/* Types whose quants are unsigned with a per-block min (x Q8_1). */
static bool has_min(tport_type_id type) { return type == TPORT_TYPE_Q4_1 || type == TPORT_TYPE_Q5_1; }

/* Block b of a row of `type`: its 32 values as bytes (signed, or unsigned
 * for the types with a min), its scale and its min (0 without). */
static __m256i unpack_block(tport_type_id type, const uint8_t *row, int64_t b, float *d, float *m) {
    const uint8_t *x;
    *m = 0.0f;
    switch (type) {
    case TPORT_TYPE_Q8_0:
        x = row + (size_t)b * 34;
        *d = half_at(x);
        return _mm256_loadu_si256((const __m256i *)(const void *)(x + 2));
    case TPORT_TYPE_Q4_0:
        x = row + (size_t)b * 18;
        *d = half_at(x);
        return _mm256_sub_epi8(nibbles(x + 2), _mm256_set1_epi8(8));
    case TPORT_TYPE_Q5_0:
        x = row + (size_t)b * 22;
        *d = half_at(x);
        return _mm256_sub_epi8(_mm256_or_si256(nibbles(x + 6), fifth_bits(x + 2)), _mm256_set1_epi8(16));
    case TPORT_TYPE_IQ4_NL:
    case TPORT_TYPE_MXFP4: { /* 4-bit indices into the type's table of int8 values */
        const bool mx = type == TPORT_TYPE_MXFP4;
        const __m128i tbl =
            _mm_loadu_si128((const __m128i *)(const void *)(mx ? CPUQ(kvalues_mxfp4) : CPUQ(kvalues_iq4nl)));
        x = row + (size_t)b * (mx ? BMXFP4 : BIQ4_NL);
        *d = mx ? cpuq_e8m0_half(x[0]) : half_at(x);
        return _mm256_shuffle_epi8(_mm256_set_m128i(tbl, tbl), nibbles(x + (mx ? 1 : 2)));
    }
    case TPORT_TYPE_Q4_1:
        x = row + (size_t)b * 20;
        *d = half_at(x), *m = half_at(x + 2);
        return nibbles(x + 4);
    default: /* Q5_1 */
        x = row + (size_t)b * 24;
        *d = half_at(x), *m = half_at(x + 2);
        return _mm256_or_si256(nibbles(x + 8), fifth_bits(x + 4));
    }
}

/* Activation block b of a column: Q8_0 {d, qs} or Q8_1 {d, s, qs}. */
#define Y_BYTES(mins) ((mins) ? 36 : 34)
#define Y_QS(mins) ((mins) ? 4 : 2)

/* out[c * ROWS + r] += sum over blocks of mins[b * ROWS + r] * s_y(c, b):
 * the mins' share of the dot products, for the nc columns at y. */
static inline __attribute__((always_inline)) void add_mins_n(const float *mins, int64_t nb, const uint8_t *y,
                                                             size_t y_stride, int nc, float *out) {
    __m256 acc[4];
    for (int c = 0; c < nc; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const __m256 m = _mm256_loadu_ps(mins + b * CPU_Q8TILE_ROWS);
        for (int c = 0; c < nc; c++) /* independent chains, one per column */
            acc[c] = _mm256_fmadd_ps(m, _mm256_set1_ps(half_at(y + (size_t)c * y_stride + (size_t)b * 36 + 2)), acc[c]);
    }
    for (int c = 0; c < nc; c++)
        _mm256_storeu_ps(out + c * CPU_Q8TILE_ROWS, _mm256_add_ps(_mm256_loadu_ps(out + c * CPU_Q8TILE_ROWS), acc[c]));
}

static void add_mins(const float *mins, int64_t nb, const uint8_t *y, size_t y_stride, int nc, float *out) {
    switch (nc) {
    case 1: add_mins_n(mins, nb, y, y_stride, 1, out); break;
    case 2: add_mins_n(mins, nb, y, y_stride, 2, out); break;
    case 3: add_mins_n(mins, nb, y, y_stride, 3, out); break;
    default: add_mins_n(mins, nb, y, y_stride, 4, out); break;
    }
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
    defined(__F16C__)

#define PAIRS (CPU_Q8TILE_ROWS / 2)
#define COLS 4

size_t cpu_q8tile_scratch(int64_t K) {
    /* values 64 bytes and scales 64 bytes per (block, pair), mins 32 bytes
     * per block */
    return (size_t)(K / BLK) * (PAIRS * 128 + CPU_Q8TILE_ROWS * sizeof(float)) + 64;
}

void cpu_q8tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / BLK;
    uint8_t *vals = tile;
    float *scls = (float *)(void *)(tile + (size_t)nb * PAIRS * 64);
    float *mins = scls + (size_t)nb * PAIRS * 16;
    /* signed values go in offset by 128 (see the top) */
    const __m256i off = has_min(type) ? _mm256_setzero_si256() : _mm256_set1_epi8((char)0x80);
    for (int r = 0; r < CPU_Q8TILE_ROWS; r++) {
        int p = r / 2, half = r & 1;
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *v = vals + (size_t)(b * PAIRS + p) * 64 + 32 * half;
            float *s = scls + (size_t)(b * PAIRS + p) * 16 + 8 * half;
            float d = 0.0f, m = 0.0f;
            __m256i q = _mm256_setzero_si256();
            if (r < nrows)
                q = unpack_block(type, rows[r], b, &d, &m);
            _mm256_storeu_si256((__m256i *)(void *)v, _mm256_xor_si256(q, off));
            _mm256_storeu_ps(s, _mm256_set1_ps(d));
            mins[b * CPU_Q8TILE_ROWS + r] = m;
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

/* out[c * ROWS + r] for nc (<= COLS) columns; nc and mn (the weights
 * have mins: unsigned values, Q8_1 columns) are constants at each call
 * site so the loops unroll and the branches fold. */
static inline __attribute__((always_inline)) void kernel(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                         size_t y_stride, int nc, bool mn, float *out) {
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
            const uint8_t *yb = y + (size_t)c * y_stride + (size_t)b * Y_BYTES(mn);
            __m512i yv = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(yb + Y_QS(mn))));
            __m512i start = mn ? zero : _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, k128, yv));
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
    if (mn)
        add_mins(scls + (size_t)nb * PAIRS * 16, nb, y, y_stride, nc, out);
}

void cpu_q8tile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols,
                    float *out) {
    int64_t nb = K / BLK;
    if (has_min(type)) {
        switch (ncols) {
        case 1: kernel(tile, nb, y, y_stride, 1, true, out); break;
        case 2: kernel(tile, nb, y, y_stride, 2, true, out); break;
        case 3: kernel(tile, nb, y, y_stride, 3, true, out); break;
        default: kernel(tile, nb, y, y_stride, 4, true, out); break;
        }
        return;
    }
    switch (ncols) {
    case 1: kernel(tile, nb, y, y_stride, 1, false, out); break;
    case 2: kernel(tile, nb, y, y_stride, 2, false, out); break;
    case 3: kernel(tile, nb, y, y_stride, 3, false, out); break;
    default: kernel(tile, nb, y, y_stride, 4, false, out); break;
    }
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* AVX2: no dpbusd, so signed x signed bytes go through maddubs with |x|
 * and y carrying x's sign (exact: |x| <= 128, |y| <= 127, pair sums below
 * 32768; the unsigned quants of the types with a min are their own |x|).
 * Unpacked tile (per 32-element block b and row r):
 *   vals[(b * ROWS + r) * 32 + e] = x[e] as int8 (Q4_0: nibble - 8),
 *   scls[b * ROWS + r]           = the row's block scale,
 *   mins[b * ROWS + r]           = its min (Q4_1, Q5_1).
 * The kernel takes 4 rows x 2 columns at a time (8 float accumulators fit
 * AVX2's 16 registers with the operands); the tile stays in L1 across the
 * passes. */

#define ROWS CPU_Q8TILE_ROWS

size_t cpu_q8tile_scratch(int64_t K) {
    return (size_t)(K / BLK) * ROWS * (32 + 2 * sizeof(float)) + 64;
}

void cpu_q8tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / BLK;
    uint8_t *vals = tile;
    float *scls = (float *)(void *)(tile + (size_t)nb * ROWS * 32);
    float *mins = scls + (size_t)nb * ROWS;
    for (int r = 0; r < ROWS; r++) {
        for (int64_t b = 0; b < nb; b++) {
            float d = 0.0f, m = 0.0f;
            __m256i q = _mm256_setzero_si256();
            if (r < nrows)
                q = unpack_block(type, rows[r], b, &d, &m);
            _mm256_storeu_si256((__m256i *)(void *)(vals + (size_t)(b * ROWS + r) * 32), q);
            scls[b * ROWS + r] = d;
            mins[b * ROWS + r] = m;
        }
    }
}

static inline float hsum256(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* Rows r0 .. r0 + 3 against columns c0 .. c0 + nc - 1 (nc 1 or 2); mn:
 * Q8_1 columns. */
static inline __attribute__((always_inline)) void kernel4(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                          size_t y_stride, int r0, int c0, int nc, bool mn,
                                                          float *out) {
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
            const uint8_t *yb = y + (size_t)(c0 + c) * y_stride + (size_t)b * Y_BYTES(mn);
            yv[c] = _mm256_loadu_si256((const __m256i *)(const void *)(yb + Y_QS(mn)));
            dy[c] = _mm256_set1_ps(half_at(yb));
        }
        for (int r = 0; r < 4; r++) {
            __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(vals + (size_t)(b * ROWS + r0 + r) * 32));
            __m256i ax = mn ? x : _mm256_sign_epi8(x, x);
            __m256 dx = _mm256_broadcast_ss(scls + b * ROWS + r0 + r);
            for (int c = 0; c < nc; c++) {
                __m256i yc = mn ? yv[c] : _mm256_sign_epi8(yv[c], x);
                __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ax, yc), ones);
                acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy[c]), _mm256_cvtepi32_ps(p), acc[r][c]);
            }
        }
    }
    for (int c = 0; c < nc; c++)
        for (int r = 0; r < 4; r++)
            out[(c0 + c) * ROWS + r0 + r] = hsum256(acc[r][c]);
}

static inline __attribute__((always_inline)) void dot_all(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                          size_t y_stride, int ncols, bool mn, float *out) {
    for (int r0 = 0; r0 < ROWS; r0 += 4) {
        int c = 0;
        for (; c + 2 <= ncols; c += 2)
            kernel4(tile, nb, y, y_stride, r0, c, 2, mn, out);
        if (c < ncols)
            kernel4(tile, nb, y, y_stride, r0, c, 1, mn, out);
    }
}

void cpu_q8tile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols,
                    float *out) {
    int64_t nb = K / BLK;
    if (has_min(type)) {
        dot_all(tile, nb, y, y_stride, ncols, true, out);
        add_mins((const float *)(const void *)(tile + (size_t)nb * ROWS * 32) + (size_t)nb * ROWS, nb, y, y_stride,
                 ncols, out);
    } else {
        dot_all(tile, nb, y, y_stride, ncols, false, out);
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

void cpu_q8tile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols,
                    float *out) {
    (void)type, (void)tile, (void)K, (void)y, (void)y_stride, (void)ncols, (void)out;
}
#endif
