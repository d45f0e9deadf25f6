/* AVX2 helpers shared by the AVX2 kernels; include only under
 * #if defined(__AVX2__) && defined(__FMA__). */
#ifndef TPORT_CPU_QUANT_AVX2_UTIL_H
#define TPORT_CPU_QUANT_AVX2_UTIL_H

#include <immintrin.h>

#include "quant_kernels.h"

/* Prefetches the lines at p, p + 64, ..., p + 64 (n - 1): called once per
 * block (or step of blocks) with n * 64 >= its size, so that along a row no two points
 * are more than 64 bytes apart and every line is fetched.  A weight is
 * streamed once per token (generation reads each row once, and the
 * hardware prefetcher alone left the row kernels waiting on memory); p is
 * CPUQ(stream_ahead) bytes ahead of the block. */
static inline void cpuq_prefetch_lines(uintptr_t p, int n) {
    for (int l = 0; l < n; l++)
        _mm_prefetch((const char *)(p + 64 * (uintptr_t)l), _MM_HINT_T0);
}

static inline float avx2_hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Signed x signed bytes, summed in pairs to 16 int16.  maddubs needs an
 * unsigned left operand: |x| and y carrying x's sign.  Exact while no x
 * byte is -128 and |x*y| pairs stay below 32768 (true for every weight
 * type here against Q8 activations in [-127, 127]). */
static inline __m256i avx2_dot_i8_i16(__m256i x, __m256i y) {
    return _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}
/* ... and summed on to 8 int32. */
static inline __m256i avx2_dot_i8(__m256i x, __m256i y) {
    return _mm256_madd_epi16(avx2_dot_i8_i16(x, y), _mm256_set1_epi16(1));
}

/* 16 bytes of nibbles -> 32 bytes: the low nibbles (elements 0..15) in the
 * low lane, the high nibbles (16..31) in the high lane. */
static inline __m256i avx2_nibbles(const uint8_t *p) {
    const __m128i b = _mm_loadu_si128((const __m128i *)p);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(b, 4), b), _mm256_set1_epi8(0x0F));
}

/* Lane u = the sum of the 8 int32 of v[u] (exact). */
static inline __m256i avx2_sum8_epi32(const __m256i v[8]) {
    const __m256i lo = _mm256_hadd_epi32(_mm256_hadd_epi32(v[0], v[1]), _mm256_hadd_epi32(v[2], v[3]));
    const __m256i hi = _mm256_hadd_epi32(_mm256_hadd_epi32(v[4], v[5]), _mm256_hadd_epi32(v[6], v[7]));
    /* lo: v0..v3's lanes 0-3 in the low half, their lanes 4-7 in the high */
    return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20), _mm256_permute2x128_si256(lo, hi, 0x31));
}

/* Byte i = 0xFF if bit i of `bits` is set, else 0. */
static inline __m256i avx2_bits_to_bytes(uint32_t bits) {
    const __m256i spread = _mm256_setr_epi64x(0, 0x0101010101010101LL, 0x0202020202020202LL, 0x0303030303030303LL);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)bits), spread);
    /* every bit set except bit (i % 8) of byte i */
    const __m256i others = _mm256_set1_epi64x(0x7fbfdfeff7fbfdfeLL);
    return _mm256_cmpeq_epi8(_mm256_or_si256(v, others), _mm256_set1_epi64x(-1));
}

/* Q6_K: half k (elements 128k .. 128k+127) as four vectors of 32
 * unsigned 6-bit quants (0..63, the -32 not applied): q[t] holds elements
 * 128k + 32t .. 128k + 32t + 31. */
static inline void avx2_q6k_quants(const uint8_t *x, int k, __m256i q[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(3);
    const uint8_t *ql = x + 64 * k, *qh = x + 128 + 32 * k;
    const __m256i a = _mm256_loadu_si256((const __m256i *)ql);
    const __m256i b = _mm256_loadu_si256((const __m256i *)(ql + 32));
    const __m256i h = _mm256_loadu_si256((const __m256i *)qh);
    q[0] = _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
    q[1] = _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
    q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m4),
                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
}

/* Q6_K's -32 offset per int32 lane, the way ggml's AVX2 kernel takes it
 * out: lane l holds 32 * (bsums[2l] * sc[2l] + bsums[2l+1] * sc[2l+1]).
 * Subtracting it from the lane sums before they become floats (not from
 * the float total) gives the same float roundings as ggml, which keeps
 * the greedy ids equal to llama.cpp's. */
static inline __m256i avx2_q6k_offsets(const int8_t *sc, const uint8_t *y) {
    const __m256i bsums = _mm256_loadu_si256((const __m256i *)(const void *)(y + Q8K_BSUMS));
    const __m256i scales = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)sc));
    return _mm256_slli_epi32(_mm256_madd_epi16(bsums, scales), 5);
}

/* Two int16 scales: a for the low lane (16 elements), b for the high. */
static inline __m256i avx2_scale_pair(int a, int b) {
    return _mm256_set_m128i(_mm_set1_epi16((short)b), _mm_set1_epi16((short)a));
}

#endif
