/* AVX-512 VNNI dot products of the table types: MXFP4 and IQ4_NL with Q8_0
 * activations, eight blocks per step, two per register; IQ4_XS with Q8_K
 * (at the end).
 *
 * Why not the AVX2 shape four times wider: per block that shape spends
 * more instructions on the two scales (a scalar conversion each, then a
 * broadcast) than on the 32 products.  Here the eight weight scales and
 * the eight activation scales are gathered with scalar loads into one
 * 64-bit word each (f16 halves, or MXFP4's exponent bytes), converted
 * together, multiplied, and spread to the blocks' lanes with one permute
 * per register.  The 4-bit indices of two blocks are broadcast into the
 * four 128-bit lanes, the upper copy of each shifted, and looked up in the
 * table (vpshufb) stored plus 128: unsigned, for dpbusd, whose 128 * sum(y)
 * a second dpbusd takes off again (exact integers, as the scalar kernel's).
 *
 * The scale product is ggml's: fp16(d_y) * E8M0_TO_FP32_HALF(e), i.e.
 * 2^(e-128) (subnormal for e < 2), or fp16(d_x) * fp16(d_y).  Only the float
 * summation order differs from the scalar kernels. */
#include "quant_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include "scales4_x86.h"

/* Bytes of weights prefetched ahead: a row is read once per token in
 * generation and the next row follows it in memory, so this runs into the
 * next row(s).  2 KiB is cpu_prefetch.c's distance for this Xeon's 512-bit
 * kernels (which these kernels cannot read: tests build them alone); with
 * rows from memory it was clearly faster than none and no slower than 1
 * or 4 KiB (RESULTS run 35). */
#define LUT_AHEAD 2048

/* Three lines (a step reads 136 bytes) LUT_AHEAD past x. */
static inline __attribute__((always_inline)) void prefetch_ahead(const uint8_t *x) {
    _mm_prefetch((const char *)x + LUT_AHEAD, _MM_HINT_T0);
    _mm_prefetch((const char *)x + LUT_AHEAD + 64, _MM_HINT_T0);
    _mm_prefetch((const char *)x + LUT_AHEAD + 128, _MM_HINT_T0);
}

/* The 4-bit indices of two blocks (16 bytes each at a and b) in element
 * order: a's low nibbles (elements 0..15), a's high (16..31), then b's. */
static __m512i nibbles2(const uint8_t *a, const uint8_t *b) {
    const __m512i v = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)a)), 0xFF00,
                                                  _mm_loadu_si128((const __m128i *)b));
    return _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4), _mm512_set1_epi8(0x0F));
}

/* 32 activations of two Q8_0 blocks. */
static __m512i q8_pair(const uint8_t *y) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(y + 2))),
                              _mm256_loadu_si256((const __m256i *)(y + BQ8_0 + 2)), 1);
}

/* Lanes 8k .. 8k + 7 of s (the scales of blocks 2j, 2j + 1), 8 each. */
static __m512 spread2(__m256 s, int j) {
    const __m512i idx = _mm512_setr_epi32(2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j, 2 * j + 1,
                                          2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1, 2 * j + 1);
    return _mm512_permutexvar_ps(idx, _mm512_castps256_ps512(s));
}

/* The integer dot of two blocks' table values (stored plus 128) with
 * their activations: 16 int32 sums of 4, 8 per block. */
static __m512i pair_dot(__m512i tbl, __m512i idx, __m512i y) {
    const __m512i z = _mm512_setzero_si512();
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(z, _mm512_shuffle_epi8(tbl, idx), y),
                            _mm512_dpbusd_epi32(z, _mm512_set1_epi8((char)0x80), y));
}

/* sum plus the last nb blocks (fewer than a step's 8) at x, y, one by one. */
static float lut_tail(float sum, int64_t nb, const uint8_t *x, const uint8_t *y, const int8_t *values, bool mx) {
    const int bx = mx ? BMXFP4 : BIQ4_NL, qs = mx ? 1 : 2;
    for (int64_t b = 0; b < nb; b++, x += bx, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += values[x[qs + j] & 15] * (int8_t)y[2 + j] + values[x[qs + j] >> 4] * (int8_t)y[2 + j + 16];
        sum += (float)isum * ((mx ? cpuq_e8m0_half(x[0]) : cpuq_half(x)) * cpuq_half(y));
    }
    return sum;
}

static inline __attribute__((always_inline)) void dot_lut(int64_t n, float *s, const uint8_t *x, const uint8_t *y,
                                                          const int8_t *values, bool mx) {
    const int bx = mx ? BMXFP4 : BIQ4_NL, qs = mx ? 1 : 2;
    const int64_t nb = n / 32;
    const __m512i tbl = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)values)),
                                         _mm512_set1_epi8((char)0x80));
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8, x += 8 * bx, y += 8 * BQ8_0) {
        prefetch_ahead(x);
        const __m256 dy = x86_halves8(y, BQ8_0);
        const __m256 d = _mm256_mul_ps(mx ? x86_e8m0_half8(x) : x86_halves8(x, bx), dy);
        for (int j = 0; j < 4; j += 2) {
            const uint8_t *xj = x + 2 * j * bx + qs, *yj = y + 2 * j * BQ8_0;
            const __m512i i0 = pair_dot(tbl, nibbles2(xj, xj + bx), q8_pair(yj));
            const __m512i i1 = pair_dot(tbl, nibbles2(xj + 2 * bx, xj + 3 * bx), q8_pair(yj + 2 * BQ8_0));
            acc0 = _mm512_fmadd_ps(spread2(d, j), _mm512_cvtepi32_ps(i0), acc0);
            acc1 = _mm512_fmadd_ps(spread2(d, j + 1), _mm512_cvtepi32_ps(i1), acc1);
        }
    }
    *s = lut_tail(_mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)), nb - b, x, y, values, mx);
}

/* Four rows x[0..3] against one y: each row's result bit for bit dot_lut's
 * (the same float operations in the same order), while y's activations,
 * scales and 128 * sum terms are loaded and formed once for the four.  In
 * generation every row meets the same y, and those are a quarter of the
 * work per row. */
static inline __attribute__((always_inline)) void dot_lut4(int64_t n, float s[4], const void *const vx[4],
                                                           const uint8_t *y, const int8_t *values, bool mx) {
    const int bx = mx ? BMXFP4 : BIQ4_NL, qs = mx ? 1 : 2;
    const int64_t nb = n / 32;
    const uint8_t *x[4] = {vx[0], vx[1], vx[2], vx[3]};
    const __m512i tbl = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)values)),
                                         _mm512_set1_epi8((char)0x80));
    const __m512i z = _mm512_setzero_si512(), off = _mm512_set1_epi8((char)0x80);
    __m512 acc0[4], acc1[4];
    for (int r = 0; r < 4; r++)
        acc0[r] = acc1[r] = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8, y += 8 * BQ8_0) {
        const __m256 dy = x86_halves8(y, BQ8_0);
        __m512i yv[4], yoff[4];
        for (int j = 0; j < 4; j++) {
            yv[j] = q8_pair(y + 2 * j * BQ8_0);
            yoff[j] = _mm512_dpbusd_epi32(z, off, yv[j]);
        }
        for (int r = 0; r < 4; r++) {
            const uint8_t *xr = x[r] + b * bx;
            prefetch_ahead(xr);
            const __m256 d = _mm256_mul_ps(mx ? x86_e8m0_half8(xr) : x86_halves8(xr, bx), dy);
            for (int j = 0; j < 4; j += 2) {
                const uint8_t *xj = xr + 2 * j * bx + qs;
                const __m512i i0 = _mm512_sub_epi32(
                    _mm512_dpbusd_epi32(z, _mm512_shuffle_epi8(tbl, nibbles2(xj, xj + bx)), yv[j]), yoff[j]);
                const __m512i i1 = _mm512_sub_epi32(
                    _mm512_dpbusd_epi32(z, _mm512_shuffle_epi8(tbl, nibbles2(xj + 2 * bx, xj + 3 * bx)), yv[j + 1]),
                    yoff[j + 1]);
                acc0[r] = _mm512_fmadd_ps(spread2(d, j), _mm512_cvtepi32_ps(i0), acc0[r]);
                acc1[r] = _mm512_fmadd_ps(spread2(d, j + 1), _mm512_cvtepi32_ps(i1), acc1[r]);
            }
        }
    }
    for (int r = 0; r < 4; r++)
        s[r] = lut_tail(_mm512_reduce_add_ps(_mm512_add_ps(acc0[r], acc1[r])), nb - b, x[r] + b * bx, y, values, mx);
}

static void dot_mxfp4(int64_t n, float *s, const void *vx, const void *vy) {
    dot_lut(n, s, vx, vy, CPUQ(kvalues_mxfp4), true);
}

static void dot_iq4_nl(int64_t n, float *s, const void *vx, const void *vy) {
    dot_lut(n, s, vx, vy, CPUQ(kvalues_iq4nl), false);
}

static void dot4_mxfp4(int64_t n, float s[4], const void *const vx[4], const void *vy) {
    dot_lut4(n, s, vx, vy, CPUQ(kvalues_mxfp4), true);
}

static void dot4_iq4_nl(int64_t n, float s[4], const void *const vx[4], const void *vy) {
    dot_lut4(n, s, vx, vy, CPUQ(kvalues_iq4nl), false);
}

/* IQ4_XS (x Q8_K): per super-block the eight sub-block scales ls - 32
 * unpacked together (scales_l nibbles and scales_h pairs, shifted by lane),
 * times d_x d_y as floats; each pair of sub-blocks is one register, as
 * above, the activations one load. */
static void dot_iq4_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i tbl = _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)CPUQ(kvalues_iq4nl))),
                                         _mm512_set1_epi8((char)0x80));
    const __m256i lo_shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i hi_shift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x += BIQ4_XS, y += BQ8_K) {
        prefetch_ahead(x);
        const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)cpuq_u32(x + 4)), lo_shift),
                                            _mm256_set1_epi32(0xF));
        const __m256i hi = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x[2] | x[3] << 8), hi_shift),
                                            _mm256_set1_epi32(3));
        const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
        const __m256 sc = _mm256_mul_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_f32(y)), _mm256_cvtepi32_ps(ls));
        for (int p = 0; p < 4; p += 2) {
            const uint8_t *q = x + 8 + 32 * p, *yp = y + Q8K_QS + 64 * p;
            const __m512i i0 = pair_dot(tbl, nibbles2(q, q + 16), _mm512_loadu_si512((const void *)yp));
            const __m512i i1 = pair_dot(tbl, nibbles2(q + 32, q + 48), _mm512_loadu_si512((const void *)(yp + 64)));
            acc0 = _mm512_fmadd_ps(spread2(sc, p), _mm512_cvtepi32_ps(i0), acc0);
            acc1 = _mm512_fmadd_ps(spread2(sc, p + 1), _mm512_cvtepi32_ps(i1), acc1);
        }
    }
    *s = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

CPUQ_KERNEL_TABLE(avx512_lut_kernel,
                  {TPORT_TYPE_MXFP4, dot_mxfp4},
                  {TPORT_TYPE_IQ4_NL, dot_iq4_nl},
                  {TPORT_TYPE_IQ4_XS, dot_iq4_xs})

cpu_vec_dot4_fn CPUQ(avx512_lut_rows4)(tport_type_id type) {
    return type == TPORT_TYPE_MXFP4 ? dot4_mxfp4 : type == TPORT_TYPE_IQ4_NL ? dot4_iq4_nl : NULL;
}

#else

CPUQ_NO_KERNELS(avx512_lut_kernel)

cpu_vec_dot4_fn CPUQ(avx512_lut_rows4)(tport_type_id type) {
    (void)type;
    return NULL;
}

#endif
