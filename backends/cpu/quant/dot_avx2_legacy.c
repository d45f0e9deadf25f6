/* AVX2 + FMA dot products of the 32-element types: Q4_0, Q5_0, Q8_0,
 * IQ4_NL, MXFP4 (x Q8_0) and Q4_1, Q5_1 (x Q8_1).  Integer products per block,
 * one float FMA per block; only the float summation order differs from the
 * scalar kernels. */
#include "quant_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "avx2_util.h"
#include "scales4_x86.h"

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

/* IQ4_NL and MXFP4: a 16-entry code table looked up with pshufb; MXFP4's
 * scale is an exponent byte (2^(e-128)) instead of an f16.  Eight blocks a
 * step: their sixteen scales gathered with scalar loads and converted
 * together (scales4_x86.h), the products dx * dy as ggml forms them, and
 * 1 KiB of weights prefetched ahead (cpu_prefetch.c's distance for
 * 256-bit kernels: generation reads each row once, the next row after). */
static inline __attribute__((always_inline)) void dot_lut(int64_t n, float *s, const uint8_t *x, const uint8_t *y,
                                                          const int8_t *values, bool mx) {
    const int bx = mx ? BMXFP4 : BIQ4_NL, qs = mx ? 1 : 2;
    const int64_t nb = n / 32;
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)values));
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 8 <= nb; b += 8, x += 8 * bx, y += 8 * BQ8_0) {
        _mm_prefetch((const char *)x + 1024, _MM_HINT_T0);
        _mm_prefetch((const char *)x + 1024 + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)x + 1024 + 128, _MM_HINT_T0);
        float d[8];
        _mm256_storeu_ps(d, _mm256_mul_ps(mx ? x86_e8m0_half8(x) : x86_halves8(x, bx), x86_halves8(y, BQ8_0)));
        for (int k = 0; k < 8; k += 2) {
            const __m256i q0 = _mm256_shuffle_epi8(table, avx2_nibbles(x + k * bx + qs));
            const __m256i q1 = _mm256_shuffle_epi8(table, avx2_nibbles(x + (k + 1) * bx + qs));
            const __m256i p0 = avx2_dot_i8(q0, _mm256_loadu_si256((const __m256i *)(y + k * BQ8_0 + 2)));
            const __m256i p1 = avx2_dot_i8(q1, _mm256_loadu_si256((const __m256i *)(y + (k + 1) * BQ8_0 + 2)));
            acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d[k]), _mm256_cvtepi32_ps(p0), acc0);
            acc1 = _mm256_fmadd_ps(_mm256_set1_ps(d[k + 1]), _mm256_cvtepi32_ps(p1), acc1);
        }
    }
    for (; b < nb; b++, x += bx, y += BQ8_0) {
        const __m256i qx = _mm256_shuffle_epi8(table, avx2_nibbles(x + qs));
        const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 2));
        const float d = (mx ? cpuq_e8m0_half(x[0]) : cpuq_half(x)) * cpuq_half(y);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(avx2_dot_i8(qx, qy)), acc0);
    }
    *s = avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

static void dot_iq4_nl(int64_t n, float *s, const void *vx, const void *vy) {
    dot_lut(n, s, vx, vy, CPUQ(kvalues_iq4nl), false);
}

static void dot_mxfp4(int64_t n, float *s, const void *vx, const void *vy) {
    dot_lut(n, s, vx, vy, CPUQ(kvalues_mxfp4), true);
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
