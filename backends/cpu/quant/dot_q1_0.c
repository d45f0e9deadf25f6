/* Q1_0 (x Q8_0): the scalar, AVX2 and AVX-512 kernels.
 *
 * Q1_0 {f16 d; u8 qs[16]}, 128 elements in 18 bytes: bit j (LSB first) set
 * is +d, clear is -d.  A block meets four Q8_0 blocks; each is one unit of
 * quant_kernels.h's eight float lanes (a step is two Q1_0 blocks): the
 * integer sum of +-y, times d_x d_y.  ggml's kernels (ggml-cpu/quants.c,
 * arch/x86/quants.c) make the same integer sums and round the activations
 * the same way (Q8_0); only the float summation order is ours, and it is
 * the same in the three kernels here (bit for bit). */
#include "quant_kernels.h"

enum { BQ1_0 = 18 };

/* One block into lanes acc[0..3]. */
static inline void q1_0_block(const uint8_t *x, const uint8_t *y, float acc[4]) {
    const float d = cpuq_half(x);
    for (int u = 0; u < 4; u++, y += BQ8_0) {
        const uint32_t bits = cpuq_u32(x + 2 + 4 * u);
        int isum = 0;
        for (int j = 0; j < 32; j++) {
            const int q = (int8_t)y[2 + j];
            isum += (bits >> j & 1) ? q : -q;
        }
        cpuq_lane_add(&acc[u], d, cpuq_half(y), isum);
    }
}

/* Blocks b0 .. nb-1 into their lanes, then the lanes' sum. */
static float q1_0_finish(float acc[8], int64_t b0, int64_t nb, const uint8_t *x, const uint8_t *y) {
    for (int64_t b = b0; b < nb; b++)
        q1_0_block(x + b * BQ1_0, y + b * 4 * BQ8_0, acc + 4 * (b % 2));
    return cpuq_sum_lanes8(acc);
}

static void dot_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    float acc[8] = {0};
    *s = q1_0_finish(acc, 0, n / 128, vx, vy);
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "avx2_util.h"
#include "scales4_x86.h"

/* Lane u's scale d_x d_y for the two blocks at x and their eight Q8_0 blocks at y. */
static inline __m256 q1_0_scales(const uint8_t *x, const uint8_t *y) {
    const __m256 dx = _mm256_set_m128(_mm_set1_ps(cpuq_half(x + BQ1_0)), _mm_set1_ps(cpuq_half(x)));
    return _mm256_mul_ps(dx, x86_halves8(y, BQ8_0));
}

/* Two blocks a step: per unit the bits become +-1 bytes that give y their
 * sign, summed by maddubs/madd; the eight units' sums added across. */
static void dot_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 128;
    const __m256i one = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1), all = _mm256_set1_epi8(-1);
    __m256 acc = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *xb = x + b * BQ1_0, *yb = y + b * 4 * BQ8_0;
        __m256i v[8];
        for (int u = 0; u < 8; u++) {
            const __m256i set = avx2_bits_to_bytes(cpuq_u32(xb + (u / 4) * BQ1_0 + 2 + 4 * (u % 4)));
            const __m256i sign = _mm256_or_si256(_mm256_andnot_si256(set, all), one); /* +1 set, -1 clear */
            const __m256i sy = _mm256_sign_epi8(_mm256_loadu_si256((const __m256i *)(yb + u * BQ8_0 + 2)), sign);
            v[u] = _mm256_madd_epi16(_mm256_maddubs_epi16(one, sy), ones16);
        }
        const __m256 t = _mm256_mul_ps(q1_0_scales(xb, yb), _mm256_cvtepi32_ps(avx2_sum8_epi32(v)));
        acc = _mm256_add_ps(acc, t);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    *s = q1_0_finish(lanes, b, nb, x, y);
}
#define Q1_0_AVX2 dot_avx2
#else
#define Q1_0_AVX2 NULL
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* The AVX2 step with AVX-512's byte masks and VNNI: the clear bits negate
 * y under a mask (one instruction), dpbusd sums them; an odd last block is
 * half a step (a masked add keeps the other lanes' bits the scalar
 * kernel's).  The weights are prefetched CPUQ(stream_ahead) bytes ahead
 * (read once per token). */
static void dot_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 128;
    const uintptr_t ahead = CPUQ(stream_ahead);
    const __m256i one = _mm256_set1_epi8(1), zero = _mm256_setzero_si256();
    __m256 acc = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *xb = x + b * BQ1_0, *yb = y + b * 4 * BQ8_0;
        _mm_prefetch((const char *)((uintptr_t)xb + ahead), _MM_HINT_T0); /* 36 bytes a step */
        __m256i v[8];
        for (int u = 0; u < 8; u++) {
            const __mmask32 clear = ~(__mmask32)cpuq_u32(xb + (u / 4) * BQ1_0 + 2 + 4 * (u % 4));
            const __m256i q = _mm256_loadu_si256((const __m256i *)(yb + u * BQ8_0 + 2));
            v[u] = _mm256_dpbusd_epi32(zero, one, _mm256_mask_sub_epi8(q, clear, zero, q));
        }
        const __m256 t = _mm256_mul_ps(q1_0_scales(xb, yb), _mm256_cvtepi32_ps(avx2_sum8_epi32(v)));
        acc = _mm256_add_ps(acc, t);
    }
    if (b < nb) { /* an odd last block: lanes 0..3 of a step, the others kept as they are */
        const uint8_t *xb = x + b * BQ1_0, *yb = y + b * 4 * BQ8_0;
        __m256i v[8];
        for (int u = 0; u < 8; u++) {
            v[u] = zero;
            if (u >= 4)
                continue;
            const __mmask32 clear = ~(__mmask32)cpuq_u32(xb + 2 + 4 * u);
            const __m256i q = _mm256_loadu_si256((const __m256i *)(yb + u * BQ8_0 + 2));
            v[u] = _mm256_dpbusd_epi32(zero, one, _mm256_mask_sub_epi8(q, clear, zero, q));
        }
        const __m256 dy = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)x86_halves4(yb, BQ8_0))));
        const __m256 t = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(cpuq_half(xb)), dy),
                                       _mm256_cvtepi32_ps(avx2_sum8_epi32(v)));
        acc = _mm256_mask_add_ps(acc, 0x0F, acc, t);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    *s = cpuq_sum_lanes8(lanes);
}
#define Q1_0_AVX512 dot_avx512
#else
#define Q1_0_AVX512 NULL
#endif

const cpuq_type_kernels CPUQ(q1_0_kernels) = {TPORT_TYPE_Q1_0, dot_scalar, Q1_0_AVX2, Q1_0_AVX512, NULL};
