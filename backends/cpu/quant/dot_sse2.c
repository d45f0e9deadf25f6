/* SSE2 dot products (every x86-64 CPU has SSE2, so the plain x86-64 build
 * inside libtport gets them) for Q4_0, Q8_0 (x Q8_0) and Q4_K, Q6_K
 * (x Q8_K).  Bytes are widened to int16 and multiplied with pmaddwd; small
 * scales are folded in before the multiply (q * scale fits int16).  Only
 * the float summation order differs from the scalar kernels. */
#include "quant_kernels.h"

#if defined(__SSE2__)
#include <emmintrin.h>

static float hsum4(__m128 v) {
    float f[4];
    _mm_storeu_ps(f, v);
    return (f[0] + f[1]) + (f[2] + f[3]);
}

static __m128i lo_i16(__m128i b) { return _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8); }
static __m128i hi_i16(__m128i b) { return _mm_srai_epi16(_mm_unpackhi_epi8(b, b), 8); }
static __m128i lo_u16(__m128i b) { return _mm_unpacklo_epi8(b, _mm_setzero_si128()); }
static __m128i hi_u16(__m128i b) { return _mm_unpackhi_epi8(b, _mm_setzero_si128()); }
static __m128i load16(const void *p) { return _mm_loadu_si128((const __m128i *)p); }

/* 16 signed bytes x 16 signed bytes -> 4 int32 partial sums. */
static __m128i dot16_i8(__m128i x, __m128i y) {
    return _mm_add_epi32(_mm_madd_epi16(lo_i16(x), lo_i16(y)), _mm_madd_epi16(hi_i16(x), hi_i16(y)));
}

static void dot_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m128i m4 = _mm_set1_epi8(0x0F), eight = _mm_set1_epi8(8);
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++, x += BQ4_0, y += BQ8_0) {
        const __m128i bits = load16(x + 2);
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(bits, m4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(bits, 4), m4), eight);
        const __m128i isum = _mm_add_epi32(dot16_i8(lo, load16(y + 2)), dot16_i8(hi, load16(y + 18)));
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(cpuq_half(x) * cpuq_half(y)), _mm_cvtepi32_ps(isum)));
    }
    *s = hsum4(acc);
}

static void dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m128 acc = _mm_setzero_ps();
    for (int64_t b = 0; b < n / 32; b++, x += BQ8_0, y += BQ8_0) {
        const __m128i isum = _mm_add_epi32(dot16_i8(load16(x + 2), load16(y + 2)),
                                           dot16_i8(load16(x + 18), load16(y + 18)));
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(cpuq_half(x) * cpuq_half(y)), _mm_cvtepi32_ps(isum)));
    }
    *s = hsum4(acc);
}

/* 16 unsigned quants (bytes, < 128) times scale, dotted with 16 signed
 * activation bytes -> 4 int32. */
static __m128i dot16_scaled(__m128i q, int scale, __m128i y) {
    const __m128i sc = _mm_set1_epi16((short)scale);
    return _mm_add_epi32(_mm_madd_epi16(_mm_mullo_epi16(lo_u16(q), sc), lo_i16(y)),
                         _mm_madd_epi16(_mm_mullo_epi16(hi_u16(q), sc), hi_i16(y)));
}

static void dot_q4_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m128i m4 = _mm_set1_epi8(0x0F);
    __m128 acc = _mm_setzero_ps();
    float mins = 0;
    uint8_t sc[8], mn[8];
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ4_K, y += BQ8_K) {
        cpuq_scale_min_k4(x + 4, sc, mn);
        const float dy = cpuq_f32(y);
        const int msum = cpuq_k4_min_sum(mn, y);
        mins += cpuq_half(x + 2) * dy * (float)msum;
        const uint8_t *qs = x + 16, *q8 = y + Q8K_QS;
        __m128i isum = _mm_setzero_si128();
        for (int c = 0; c < 4; c++, qs += 32, q8 += 64) {
            for (int h = 0; h < 2; h++) { /* bytes 16h..16h+15 of the chunk */
                const __m128i bits = load16(qs + 16 * h);
                const __m128i lo = _mm_and_si128(bits, m4), hi = _mm_and_si128(_mm_srli_epi16(bits, 4), m4);
                isum = _mm_add_epi32(isum, dot16_scaled(lo, sc[2 * c], load16(q8 + 16 * h)));
                isum = _mm_add_epi32(isum, dot16_scaled(hi, sc[2 * c + 1], load16(q8 + 32 + 16 * h)));
            }
        }
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(cpuq_half(x) * dy), _mm_cvtepi32_ps(isum)));
    }
    *s = hsum4(acc) - mins;
}

static void dot_q6_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m128i m4 = _mm_set1_epi8(0x0F), m2 = _mm_set1_epi8(3);
    __m128 acc = _mm_setzero_ps();
    float offsets = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ6_K, y += BQ8_K) {
        const int8_t *sc = (const int8_t *)(x + 192);
        const float d = cpuq_half(x + 208) * cpuq_f32(y);
        /* the -32 of every quant, through the group sums */
        const int off = cpuq_q6k_scaled_bsum(sc, y);
        offsets += d * (float)(32 * off);
        __m128i isum = _mm_setzero_si128();
        for (int k = 0; k < 2; k++) {
            const uint8_t *ql = x + 64 * k, *qh = x + 128 + 32 * k, *q8 = y + Q8K_QS + 128 * k;
            for (int h = 0; h < 2; h++) { /* l = 16h .. 16h+15: one scale group per quarter */
                const __m128i a = load16(ql + 16 * h), b = load16(ql + 32 + 16 * h), hb = load16(qh + 16 * h);
                const __m128i q1 = _mm_or_si128(_mm_and_si128(a, m4), _mm_slli_epi16(_mm_and_si128(hb, m2), 4));
                const __m128i q2 = _mm_or_si128(_mm_and_si128(b, m4),
                                                _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 2), m2), 4));
                const __m128i q3 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(a, 4), m4),
                                                _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 4), m2), 4));
                const __m128i q4 = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(b, 4), m4),
                                                _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(hb, 6), m2), 4));
                const int8_t *sk = sc + 8 * k + h;
                isum = _mm_add_epi32(isum, dot16_scaled(q1, sk[0], load16(q8 + 16 * h)));
                isum = _mm_add_epi32(isum, dot16_scaled(q2, sk[2], load16(q8 + 32 + 16 * h)));
                isum = _mm_add_epi32(isum, dot16_scaled(q3, sk[4], load16(q8 + 64 + 16 * h)));
                isum = _mm_add_epi32(isum, dot16_scaled(q4, sk[6], load16(q8 + 96 + 16 * h)));
            }
        }
        acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(d), _mm_cvtepi32_ps(isum)));
    }
    *s = hsum4(acc) - offsets;
}

CPUQ_KERNEL_TABLE(sse2_kernel,
                  {TPORT_TYPE_Q4_0, dot_q4_0},
                  {TPORT_TYPE_Q8_0, dot_q8_0},
                  {TPORT_TYPE_Q4_K, dot_q4_K},
                  {TPORT_TYPE_Q6_K, dot_q6_K})

#else

CPUQ_NO_KERNELS(sse2_kernel)

#endif
