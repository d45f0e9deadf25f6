/* The float scale products of 32-element blocks, four at a time, for the
 * AVX2 and AVX-512 kernels; include only under
 * #if defined(__AVX2__) && defined(__FMA__). */
#ifndef TPORT_CPU_QUANT_SCALES4_X86_H
#define TPORT_CPU_QUANT_SCALES4_X86_H

#include <immintrin.h>
#include <string.h>

#include "quant_kernels.h"

/* The f16 at p, as a short for a vector insert. */
static inline short x86_half_bits(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return (short)h;
}

/* d_x * d_y of four consecutive blocks whose f16 scales come first in
 * blocks of bx (weights) and by (activations) bytes.  One conversion for
 * all eight f16 values instead of eight scalar ones; the floats and their
 * products are the same as converting them one by one. */
static inline __m128 x86_scales4(const uint8_t *x, int bx, const uint8_t *y, int by) {
#if defined(__F16C__)
    const __m128i h = _mm_setr_epi16(x86_half_bits(x), x86_half_bits(x + bx), x86_half_bits(x + 2 * bx),
                                     x86_half_bits(x + 3 * bx), x86_half_bits(y), x86_half_bits(y + by),
                                     x86_half_bits(y + 2 * by), x86_half_bits(y + 3 * by));
    const __m256 f = _mm256_cvtph_ps(h);
    return _mm_mul_ps(_mm256_castps256_ps128(f), _mm256_extractf128_ps(f, 1));
#else
    return _mm_mul_ps(_mm_setr_ps(cpuq_half(x), cpuq_half(x + bx), cpuq_half(x + 2 * bx), cpuq_half(x + 3 * bx)),
                      _mm_setr_ps(cpuq_half(y), cpuq_half(y + by), cpuq_half(y + 2 * by), cpuq_half(y + 3 * by)));
#endif
}

#endif
