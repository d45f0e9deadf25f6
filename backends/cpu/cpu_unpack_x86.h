/* Small x86 pieces that the tile kernels' unpacking shares
 * (cpu_mul_mat_q8tile.c, _kqtile.c, _iqtile.c, _amx_q4.c).  Include it
 * where AVX2 and F16C are enabled, after <immintrin.h>. */
#ifndef TPORT_CPU_UNPACK_X86_H
#define TPORT_CPU_UNPACK_X86_H

#include <stdint.h>
#include <string.h>

/* The f16 at p (unaligned) as f32. */
static inline float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* 16 bytes of nibbles -> 32 bytes: low nibbles (elements 0..15), then high. */
static inline __m256i nibbles(const uint8_t *p) {
    const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)p);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}

/* 0x10 in byte i where bit i of the 32-bit qh at p is set (Q5_0, Q5_1). */
static inline __m256i fifth_bits(const uint8_t *p) {
    uint32_t bits;
    memcpy(&bits, p, sizeof bits);
    const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread);
    const __m256i bit = _mm256_set1_epi64x(0x8040201008040201LL); /* bit i % 8 of byte i */
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit), _mm256_set1_epi8(0x10));
}

#endif
