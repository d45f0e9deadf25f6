/* The float scale products of 32-element blocks, four at a time, for the
 * AVX2 and AVX-512 kernels; include only under
 * #if defined(__AVX2__) && defined(__FMA__). */
#ifndef TPORT_CPU_QUANT_SCALES4_X86_H
#define TPORT_CPU_QUANT_SCALES4_X86_H

#include <immintrin.h>
#include <string.h>

#include "quant_kernels.h"

#if defined(__F16C__)
static inline uint64_t x86_u16_at(const uint8_t *p) { return (uint64_t)p[0] | (uint64_t)p[1] << 8; }

/* Four f16 values at p, p + stride, ... as one 64-bit word (scalar loads:
 * cheaper than inserting them into a vector one by one). */
static inline __attribute__((always_inline)) uint64_t x86_halves4(const uint8_t *p, int stride) {
    return x86_u16_at(p) | x86_u16_at(p + stride) << 16 | x86_u16_at(p + 2 * stride) << 32 |
           x86_u16_at(p + 3 * stride) << 48;
}

/* Eight f16 values stride bytes apart, as floats (one conversion). */
static inline __attribute__((always_inline)) __m256 x86_halves8(const uint8_t *p, int stride) {
    const __m128i h = _mm_insert_epi64(_mm_cvtsi64_si128((long long)x86_halves4(p, stride)),
                                       (long long)x86_halves4(p + 4 * stride, stride), 1);
    return _mm256_cvtph_ps(h);
}

#endif

/* d_x * d_y of four consecutive blocks whose f16 scales come first in
 * blocks of bx (weights) and by (activations) bytes.  One conversion for
 * all eight f16 values instead of eight scalar ones; the floats and their
 * products are the same as converting them one by one. */
static inline __m128 x86_scales4(const uint8_t *x, int bx, const uint8_t *y, int by) {
#if defined(__F16C__)
    /* gathered with scalar loads: eight vector word inserts cost more */
    const __m128i h = _mm_set_epi64x((long long)x86_halves4(y, by), (long long)x86_halves4(x, bx));
    const __m256 f = _mm256_cvtph_ps(h);
    return _mm_mul_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
#else
    return _mm_mul_ps(_mm_setr_ps(cpuq_half(x), cpuq_half(x + bx), cpuq_half(x + 2 * bx), cpuq_half(x + 3 * bx)),
                      _mm_setr_ps(cpuq_half(y), cpuq_half(y + by), cpuq_half(y + 2 * by), cpuq_half(y + 3 * by)));
#endif
}

#if defined(__F16C__)
/* MXFP4: the exponent bytes of eight blocks at x, x + 17, ... as ggml's
 * E8M0_TO_FP32_HALF, 2^(e-128): (e - 1) << 23, or for e < 2 the
 * subnormals 0x00200000 << e (cpuq_e8m0_half, eight at a time). */
static inline __attribute__((always_inline)) __m256 x86_e8m0_half8(const uint8_t *x) {
    const uint64_t e = (uint64_t)x[0] | (uint64_t)x[BMXFP4] << 8 | (uint64_t)x[2 * BMXFP4] << 16 |
                       (uint64_t)x[3 * BMXFP4] << 24 | (uint64_t)x[4 * BMXFP4] << 32 | (uint64_t)x[5 * BMXFP4] << 40 |
                       (uint64_t)x[6 * BMXFP4] << 48 | (uint64_t)x[7 * BMXFP4] << 56;
    const __m256i v = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)e));
    const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(v, _mm256_set1_epi32(1)), 23);
    const __m256i sub = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), v);
    return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, sub, _mm256_cmpgt_epi32(_mm256_set1_epi32(2), v)));
}
#endif

#endif
