/* AVX2 + FMA dot products of the 32-element types: Q4_0, Q5_0, Q8_0,
 * IQ4_NL, MXFP4 (x Q8_0) and Q4_1, Q5_1 (x Q8_1).  Integer products per block,
 * one float FMA per block; only the float summation order differs from the
 * scalar kernels. */
#include "quant_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "avx2_util.h"

static void dot_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++, x += BQ4_0, y += BQ8_0) {
        const __m256 d = _mm256_set1_ps(cpuq_half(x) * cpuq_half(y));
        const __m256i qx = _mm256_sub_epi8(avx2_nibbles(x + 2), _mm256_set1_epi8(8));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 2));
        acc = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(avx2_dot_i8(qx, qy)), acc);
    }
    *s = avx2_hsum_ps(acc);
}

static void dot_q4_1(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    for (int64_t b = 0; b < n / 32; b++, x += BQ4_1, y += BQ8_1) {
        const float dy = cpuq_half(y);
        mins += cpuq_half(x + 2) * cpuq_half(y + 2);
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 4));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(avx2_nibbles(x + 4), qy), _mm256_set1_epi16(1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * dy), _mm256_cvtepi32_ps(p), acc);
    }
    *s = avx2_hsum_ps(acc) + mins;
}

static void dot_q5_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++, x += BQ5_0, y += BQ8_0) {
        const __m256i hi = _mm256_and_si256(avx2_bits_to_bytes(cpuq_u32(x + 2)), _mm256_set1_epi8(0x10));
        const __m256i qx = _mm256_sub_epi8(_mm256_or_si256(avx2_nibbles(x + 6), hi), _mm256_set1_epi8(16));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_half(y)), _mm256_cvtepi32_ps(avx2_dot_i8(qx, qy)),
                              acc);
    }
    *s = avx2_hsum_ps(acc);
}

static void dot_q5_1(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    for (int64_t b = 0; b < n / 32; b++, x += BQ5_1, y += BQ8_1) {
        mins += cpuq_half(x + 2) * cpuq_half(y + 2);
        const __m256i hi = _mm256_and_si256(avx2_bits_to_bytes(cpuq_u32(x + 4)), _mm256_set1_epi8(0x10));
        const __m256i qx = _mm256_or_si256(avx2_nibbles(x + 8), hi);
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 4));
        const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(qx, qy), _mm256_set1_epi16(1));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_half(y)), _mm256_cvtepi32_ps(p), acc);
    }
    *s = avx2_hsum_ps(acc) + mins;
}

static void dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++, x += BQ8_0, y += BQ8_0) {
        const __m256i qx = _mm256_loadu_si256((const __m256i *)(x + 2));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_half(y)), _mm256_cvtepi32_ps(avx2_dot_i8(qx, qy)),
                              acc);
    }
    *s = avx2_hsum_ps(acc);
}

static void dot_iq4_nl(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)CPUQ(kvalues_iq4nl)));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++, x += BIQ4_NL, y += BQ8_0) {
        const __m256i qx = _mm256_shuffle_epi8(table, avx2_nibbles(x + 2));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_half(y)), _mm256_cvtepi32_ps(avx2_dot_i8(qx, qy)),
                              acc);
    }
    *s = avx2_hsum_ps(acc);
}

/* MXFP4: as IQ4_NL, a 16-entry code table looked up with pshufb; the
 * scale is an exponent byte instead of an f16. */
static void dot_mxfp4(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)CPUQ(kvalues_mxfp4)));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++, x += BMXFP4, y += BQ8_0) {
        const __m256i qx = _mm256_shuffle_epi8(table, avx2_nibbles(x + 1));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 2));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_e8m0_half(x[0]) * cpuq_half(y)),
                              _mm256_cvtepi32_ps(avx2_dot_i8(qx, qy)), acc);
    }
    *s = avx2_hsum_ps(acc);
}

CPUQ_KERNEL_TABLE(avx2_legacy_kernel,
                  {TPORT_TYPE_Q4_0, dot_q4_0},
                  {TPORT_TYPE_Q4_1, dot_q4_1},
                  {TPORT_TYPE_Q5_0, dot_q5_0},
                  {TPORT_TYPE_Q5_1, dot_q5_1},
                  {TPORT_TYPE_Q8_0, dot_q8_0},
                  {TPORT_TYPE_IQ4_NL, dot_iq4_nl},
                  {TPORT_TYPE_MXFP4, dot_mxfp4})

#else

CPUQ_NO_KERNELS(avx2_legacy_kernel)

#endif
