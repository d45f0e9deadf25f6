/* Q2_0 (x Q8_0): the scalar, AVX2 and AVX-512 kernels.
 *
 * Q2_0 {f16 d; u8 qs[16]}, 64 elements in 18 bytes: 2 bits per element,
 * LSB first, code c meaning (c - 1) d.  A block meets two Q8_0 blocks;
 * each is one unit of quant_kernels.h's eight float lanes (a step is four
 * Q2_0 blocks): the integer sum of (c - 1) y, times d_x d_y.  ggml's kernel
 * (ggml-cpu/quants.c; x86 has no other) makes the same integer sums and
 * rounds the activations the same way (Q8_0); only the float summation
 * order is ours, and it is the same in the three kernels here (bit for
 * bit). */
#include "quant_kernels.h"

enum { BQ2_0 = 18 };

/* One block into lanes acc[0..1]. */
static inline void q2_0_block(const uint8_t *x, const uint8_t *y, float acc[2]) {
    const float d = cpuq_half(x);
    for (int u = 0; u < 2; u++, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 32; j++)
            isum += (((x[2 + 8 * u + j / 4] >> (2 * (j % 4))) & 3) - 1) * (int8_t)y[2 + j];
        cpuq_lane_add(&acc[u], d, cpuq_half(y), isum);
    }
}

/* Blocks b0 .. nb-1 into their lanes, then the lanes' sum. */
static float q2_0_finish(float acc[8], int64_t b0, int64_t nb, const uint8_t *x, const uint8_t *y) {
    for (int64_t b = b0; b < nb; b++)
        q2_0_block(x + b * BQ2_0, y + b * 2 * BQ8_0, acc + 2 * (b % 4));
    return cpuq_sum_lanes8(acc);
}

static void dot_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    float acc[8] = {0};
    *s = q2_0_finish(acc, 0, n / 64, vx, vy);
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "avx2_util.h"
#include "scales4_x86.h"

/* Lane u's scale d_x d_y for the four blocks at x (no further: the row
 * may end there) and their eight Q8_0 blocks at y. */
static inline __m256 q2_0_scales(const uint8_t *x, const uint8_t *y) {
    const __m256 d4 = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)x86_halves4(x, BQ2_0))));
    const __m256 dx = _mm256_permutevar8x32_ps(d4, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
    return _mm256_mul_ps(dx, x86_halves8(y, BQ8_0));
}

/* A unit's 32 codes, and its activations in the same order.  Element
 * 4i + k is bits 2k of byte i: the 8 bytes are spread so that 32-bit word
 * k of 128-bit lane L holds bytes 4L .. 4L + 3, shifted right by 2k (a
 * byte's bits stay in the byte after the mask), and the activations are
 * transposed to match: word k of lane L = y[16L + 4m + k], m = 0..3. */
static inline __m256i q2_0_codes(const uint8_t *qs) {
    const __m256i spread = _mm256_setr_epi8(0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7, 4,
                                            5, 6, 7, 4, 5, 6, 7);
    uint64_t w;
    memcpy(&w, qs, sizeof w);
    const __m256i q = _mm256_shuffle_epi8(_mm256_set1_epi64x((long long)w), spread);
    return _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6)), _mm256_set1_epi8(3));
}
static inline __m256i q2_0_acts(const uint8_t *qy) {
    const __m256i tr = _mm256_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 0, 4, 8, 12, 1, 5, 9,
                                        13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm256_shuffle_epi8(_mm256_loadu_si256((const __m256i *)qy), tr);
}

static void dot_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 64;
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const uint8_t *xb = x + b * BQ2_0, *yb = y + b * 2 * BQ8_0;
        __m256i v[8];
        for (int u = 0; u < 8; u++) {
            const __m256i c = _mm256_sub_epi8(q2_0_codes(xb + (u / 2) * BQ2_0 + 2 + 8 * (u % 2)), one);
            v[u] = avx2_dot_i8(c, q2_0_acts(yb + u * BQ8_0 + 2));
        }
        const __m256 t = _mm256_mul_ps(q2_0_scales(xb, yb), _mm256_cvtepi32_ps(avx2_sum8_epi32(v)));
        acc = _mm256_add_ps(acc, t);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    *s = q2_0_finish(lanes, b, nb, x, y);
}
#define Q2_0_AVX2 dot_avx2
#else
#define Q2_0_AVX2 NULL
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* The AVX2 step with VNNI: the unsigned codes c against y by dpbusd, less
 * sum(y) by a second one (exact integers); the last 1..3 blocks of a row
 * a partial step (a masked add keeps the other lanes' bits the scalar
 * kernel's).  The weights are prefetched CPUQ(stream_ahead) bytes ahead
 * (read once per token). */
static void dot_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 64;
    const uintptr_t ahead = CPUQ(stream_ahead);
    const __m256i one = _mm256_set1_epi8(1), zero = _mm256_setzero_si256();
    __m256 acc = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const uint8_t *xb = x + b * BQ2_0, *yb = y + b * 2 * BQ8_0;
        cpuq_prefetch_lines((uintptr_t)xb + ahead, 2); /* 72 bytes a step */
        __m256i v[8];
        for (int u = 0; u < 8; u++) {
            const __m256i q = q2_0_acts(yb + u * BQ8_0 + 2);
            const __m256i cy = _mm256_dpbusd_epi32(zero, q2_0_codes(xb + (u / 2) * BQ2_0 + 2 + 8 * (u % 2)), q);
            v[u] = _mm256_sub_epi32(cy, _mm256_dpbusd_epi32(zero, one, q));
        }
        const __m256 t = _mm256_mul_ps(q2_0_scales(xb, yb), _mm256_cvtepi32_ps(avx2_sum8_epi32(v)));
        acc = _mm256_add_ps(acc, t);
    }
    if (b < nb) { /* the last 1..3 blocks: lanes 0 .. nu-1 of a step, the others kept as they are */
        const uint8_t *xb = x + b * BQ2_0, *yb = y + b * 2 * BQ8_0;
        const int nu = (int)(nb - b) * 2;
        uint16_t hx[8] = {0}, hy[8] = {0};
        __m256i v[8];
        for (int u = 0; u < 8; u++) {
            v[u] = zero;
            if (u >= nu)
                continue;
            const __m256i q = q2_0_acts(yb + u * BQ8_0 + 2);
            const __m256i cy = _mm256_dpbusd_epi32(zero, q2_0_codes(xb + (u / 2) * BQ2_0 + 2 + 8 * (u % 2)), q);
            v[u] = _mm256_sub_epi32(cy, _mm256_dpbusd_epi32(zero, one, q));
            hx[u] = (uint16_t)x86_u16_at(xb + (u / 2) * BQ2_0);
            hy[u] = (uint16_t)x86_u16_at(yb + u * BQ8_0);
        }
        const __m256 sc = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)hx)),
                                        _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)hy)));
        const __m256 t = _mm256_mul_ps(sc, _mm256_cvtepi32_ps(avx2_sum8_epi32(v)));
        acc = _mm256_mask_add_ps(acc, (__mmask8)((1u << nu) - 1), acc, t);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    *s = cpuq_sum_lanes8(lanes);
}
#define Q2_0_AVX512 dot_avx512
#else
#define Q2_0_AVX512 NULL
#endif

const cpuq_type_kernels CPUQ(q2_0_kernels) = {TPORT_TYPE_Q2_0, dot_scalar, Q2_0_AVX2, Q2_0_AVX512, NULL};
