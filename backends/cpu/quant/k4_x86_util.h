/* Q4_K/Q5_K block helpers for the x86 SIMD kernels (AVX2 and up);
 * include only under #if defined(__AVX2__) && defined(__FMA__). */
#ifndef TPORT_CPU_QUANT_K4_X86_UTIL_H
#define TPORT_CPU_QUANT_K4_X86_UTIL_H

#include <immintrin.h>
#include <string.h>

#include "quant_kernels.h"

/* The 8 6-bit scales (bytes 0..7) and the 8 6-bit mins (bytes 8..15) from
 * their 12 packed bytes at s.  Same result as cpuq_scale_min_k4, but with
 * four 32-bit mask-and-shift steps instead of a loop over bytes:
 * scales 0..3 and mins 0..3 are the low 6 bits of bytes 0..3 and 4..7;
 * scales 4..7 take their low nibble from bytes 8..11 and their top 2 bits
 * from the top of bytes 0..3; mins 4..7 the high nibble of bytes 8..11 and
 * the top of bytes 4..7.  (x86 is little-endian.) */
static inline __m128i k4_scales_mins(const uint8_t *s) {
    uint32_t u[3];
    memcpy(u, s, sizeof u);
    const uint32_t low6 = 0x3f3f3f3fu, low4 = 0x0f0f0f0fu, low2 = 0x03030303u;
    const uint32_t sc_lo = u[0] & low6;
    const uint32_t mn_lo = u[1] & low6;
    const uint32_t sc_hi = (u[2] & low4) | ((u[0] >> 6) & low2) << 4;
    const uint32_t mn_hi = ((u[2] >> 4) & low4) | ((u[1] >> 6) & low2) << 4;
    /* two 64-bit moves: cheaper than four 32-bit inserts */
    return _mm_set_epi64x((long long)((uint64_t)mn_hi << 32 | mn_lo), (long long)((uint64_t)sc_hi << 32 | sc_lo));
}

/* The 8 scales of k4_scales_mins' result as 8 int16. */
static inline __m128i k4_scales_i16(__m128i scmn) { return _mm_cvtepu8_epi16(scmn); }

/* What the mins take off, before the float scales: min[g] times the sum of
 * group g's 32 activations (Q8_K bsums 2g and 2g+1), as 4 int32 partial
 * sums.  |bsum pair| <= 32*127 and min <= 63, so nothing overflows. */
static inline __m128i k4_min_products(__m128i scmn, const uint8_t *y) {
    const __m128i mins = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(scmn, scmn));
    const __m128i b0 = _mm_loadu_si128((const __m128i *)(y + Q8K_BSUMS));
    const __m128i b1 = _mm_loadu_si128((const __m128i *)(y + Q8K_BSUMS + 16));
    return _mm_madd_epi16(mins, _mm_hadd_epi16(b0, b1));
}

/* {d * dy, dmin * dy} of a Q4_K/Q5_K block (f16 d, dmin at x) against Q8_K
 * activations y (f32 d): both f16 values in one conversion. */
static inline __m128 k4_block_scales(const uint8_t *x, const uint8_t *y) {
#if defined(__F16C__)
    const __m128 dd = _mm_cvtph_ps(_mm_cvtsi32_si128((int)cpuq_u32(x)));
#else
    const __m128 dd = _mm_setr_ps(cpuq_half(x), cpuq_half(x + 2), 0.0f, 0.0f);
#endif
    return _mm_mul_ps(dd, _mm_set1_ps(cpuq_f32(y)));
}

/* Sum of the 4 floats. */
static inline float k4_hsum128(__m128 v) {
    v = _mm_add_ps(v, _mm_movehl_ps(v, v));
    v = _mm_add_ss(v, _mm_movehdup_ps(v));
    return _mm_cvtss_f32(v);
}

#endif
