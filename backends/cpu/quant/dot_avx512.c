/* AVX-512 dot products for Q4_0 and Q8_0 (x Q8_0): two 32-element blocks
 * per 512-bit register; VNNI's dpbusd when compiled with it, else
 * maddubs + madd.  Other types use the AVX2 kernels compiled into the same
 * variant.  Only the float summation order differs from the scalar code. */
#include "quant_kernels.h"

#include <stddef.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* Signed bytes x signed bytes -> 16 int32 sums of 4 products.  Exact as
 * long as no x byte is -128 (the weights here are in [-8, 7] or [-127, 127]). */
static __m512i dot_i8x64(__m512i x, __m512i y) {
    const __m512i ax = _mm512_abs_epi8(x);
    const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), ax, sy);
#else
    return _mm512_madd_epi16(_mm512_maddubs_epi16(ax, sy), _mm512_set1_epi16(1));
#endif
}

static __m512i pair(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

static __m512 scales(float a, float b) {
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

/* Low nibbles (elements 0..15) then high nibbles (16..31), minus 8. */
static __m256i q4_0_values(const uint8_t *qs) {
    const __m128i b = _mm_loadu_si128((const __m128i *)qs);
    const __m256i v = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
    return _mm256_sub_epi8(v, _mm256_set1_epi8(8));
}

static void dot_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, x += 2 * BQ4_0, y += 2 * BQ8_0) {
        const __m512i qx = pair(q4_0_values(x + 2), q4_0_values(x + BQ4_0 + 2));
        const __m512i qy = pair(_mm256_loadu_si256((const __m256i *)(y + 2)),
                                _mm256_loadu_si256((const __m256i *)(y + BQ8_0 + 2)));
        const __m512 d = scales(cpuq_half(x) * cpuq_half(y), cpuq_half(x + BQ4_0) * cpuq_half(y + BQ8_0));
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_i8x64(qx, qy)), acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; b < nb; b++, x += BQ4_0, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += ((x[2 + j] & 15) - 8) * (int8_t)y[2 + j] + ((x[2 + j] >> 4) - 8) * (int8_t)y[2 + j + 16];
        sum += (float)isum * (cpuq_half(x) * cpuq_half(y));
    }
    *s = sum;
}

static void dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, x += 2 * BQ8_0, y += 2 * BQ8_0) {
        const __m512i qx = pair(_mm256_loadu_si256((const __m256i *)(x + 2)),
                                _mm256_loadu_si256((const __m256i *)(x + BQ8_0 + 2)));
        const __m512i qy = pair(_mm256_loadu_si256((const __m256i *)(y + 2)),
                                _mm256_loadu_si256((const __m256i *)(y + BQ8_0 + 2)));
        const __m512 d = scales(cpuq_half(x) * cpuq_half(y), cpuq_half(x + BQ8_0) * cpuq_half(y + BQ8_0));
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_i8x64(qx, qy)), acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; b < nb; b++, x += BQ8_0, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 32; j++)
            isum += (int8_t)x[2 + j] * (int8_t)y[2 + j];
        sum += (float)isum * (cpuq_half(x) * cpuq_half(y));
    }
    *s = sum;
}

cpu_vec_dot_fn CPUQ(avx512_kernel)(tport_type_id type) {
    switch (type) {
    case TPORT_TYPE_Q4_0: return dot_q4_0;
    case TPORT_TYPE_Q8_0: return dot_q8_0;
    default: return NULL;
    }
}

#else

cpu_vec_dot_fn CPUQ(avx512_kernel)(tport_type_id type) {
    (void)type;
    return NULL;
}

#endif
