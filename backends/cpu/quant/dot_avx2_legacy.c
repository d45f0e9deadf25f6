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

/* The 5-bit quants of a Q5_0/Q5_1 block as unsigned bytes 0..31 in
 * element order: nibbles plus bit 4 from the 32-bit qh. */
static inline __m256i q5_quants(const uint8_t *qh, const uint8_t *qs) {
    return _mm256_or_si256(avx2_nibbles(qs), _mm256_and_si256(avx2_bits_to_bytes(cpuq_u32(qh)), _mm256_set1_epi8(0x10)));
}

/* Lane k of d in all eight lanes. */
static inline __m256 lane_of4(__m128 d, int k) {
    return _mm256_permutevar8x32_ps(_mm256_castps128_ps256(d), _mm256_set1_epi32(k));
}

/* Integer sums of one Q5_0 block x Q8_0 block, as 8 floats. */
static inline __m256 q5_0_block(const uint8_t *x, const uint8_t *y) {
    const __m256i qx = _mm256_sub_epi8(q5_quants(x + 2, x + 6), _mm256_set1_epi8(16));
    return _mm256_cvtepi32_ps(avx2_dot_i8(qx, _mm256_loadu_si256((const __m256i *)(y + 2))));
}

/* ... of one Q5_1 block x Q8_1 block (unsigned quants, min apart). */
static inline __m256 q5_1_block(const uint8_t *x, const uint8_t *y) {
    const __m256i qy = _mm256_loadu_si256((const __m256i *)(y + 4));
    return _mm256_cvtepi32_ps(
        _mm256_madd_epi16(_mm256_maddubs_epi16(q5_quants(x + 4, x + 8), qy), _mm256_set1_epi16(1)));
}

/* Q5_0 and Q5_1: four blocks per step, their eight (Q5_1: sixteen) f16
 * scales converted together, two float accumulators so that the FMA
 * latency does not serialise the blocks. */
static void dot_q5_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, x += 4 * BQ5_0, y += 4 * BQ8_0) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 2); /* 88 bytes a step */
        const __m128 d = x86_scales4(x, BQ5_0, y, BQ8_0);
        acc0 = _mm256_fmadd_ps(lane_of4(d, 0), q5_0_block(x, y), acc0);
        acc1 = _mm256_fmadd_ps(lane_of4(d, 1), q5_0_block(x + BQ5_0, y + BQ8_0), acc1);
        acc0 = _mm256_fmadd_ps(lane_of4(d, 2), q5_0_block(x + 2 * BQ5_0, y + 2 * BQ8_0), acc0);
        acc1 = _mm256_fmadd_ps(lane_of4(d, 3), q5_0_block(x + 3 * BQ5_0, y + 3 * BQ8_0), acc1);
    }
    for (; b < nb; b++, x += BQ5_0, y += BQ8_0)
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_half(y)), q5_0_block(x, y), acc0);
    *s = avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
}

static void dot_q5_1(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, x += 4 * BQ5_1, y += 4 * BQ8_1) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 2); /* 96 bytes a step */
        const __m128 d = x86_scales4(x, BQ5_1, y, BQ8_1);
        acc_min = _mm_add_ps(acc_min, x86_scales4(x + 2, BQ5_1, y + 2, BQ8_1));
        acc0 = _mm256_fmadd_ps(lane_of4(d, 0), q5_1_block(x, y), acc0);
        acc1 = _mm256_fmadd_ps(lane_of4(d, 1), q5_1_block(x + BQ5_1, y + BQ8_1), acc1);
        acc0 = _mm256_fmadd_ps(lane_of4(d, 2), q5_1_block(x + 2 * BQ5_1, y + 2 * BQ8_1), acc0);
        acc1 = _mm256_fmadd_ps(lane_of4(d, 3), q5_1_block(x + 3 * BQ5_1, y + 3 * BQ8_1), acc1);
    }
    float mins = 0;
    for (; b < nb; b++, x += BQ5_1, y += BQ8_1) {
        mins += cpuq_half(x + 2) * cpuq_half(y + 2);
        acc0 = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_half(y)), q5_1_block(x, y), acc0);
    }
    __m128 m = _mm_add_ps(acc_min, _mm_movehl_ps(acc_min, acc_min));
    m = _mm_add_ss(m, _mm_movehdup_ps(m));
    *s = avx2_hsum_ps(_mm256_add_ps(acc0, acc1)) + (_mm_cvtss_f32(m) + mins);
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
