/* Vectors of floats for the CPU kernels that are written once for AVX2 and
 * AVX-512 (attention, element-wise ops): VF_LEN floats per vf, AVX-512 (16)
 * or AVX2 + FMA + F16C (8); VF_SIMD is 0 in builds with neither. */
#ifndef TPORT_CPU_VF_H
#define TPORT_CPU_VF_H

#include <stddef.h>
#include <stdint.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define VF_SIMD 1
#define VF_LEN 16
typedef __m512 vf;
#define vf_zero() _mm512_setzero_ps()
#define vf_set1(x) _mm512_set1_ps(x)
#define vf_loadu(p) _mm512_loadu_ps(p)
#define vf_storeu(p, v) _mm512_storeu_ps(p, v)
#define vf_fmadd(a, b, c) _mm512_fmadd_ps(a, b, c)
#define vf_mul(a, b) _mm512_mul_ps(a, b)
#define vf_add(a, b) _mm512_add_ps(a, b)
#define vf_sub(a, b) _mm512_sub_ps(a, b)
#define vf_max(a, b) _mm512_max_ps(a, b)
#define vf_reduce_add(v) _mm512_reduce_add_ps(v)
#define vf_reduce_max(v) _mm512_reduce_max_ps(v)
#define vf_load_f16(p) _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(p)))
/* the sums of lanes i and i + 8: 8 lanes whose total is v's */
static inline __m256 vf_fold8(__m512 v) {
    return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define VF_SIMD 1
#define VF_LEN 8
typedef __m256 vf;
#define vf_zero() _mm256_setzero_ps()
#define vf_set1(x) _mm256_set1_ps(x)
#define vf_loadu(p) _mm256_loadu_ps(p)
#define vf_storeu(p, v) _mm256_storeu_ps(p, v)
#define vf_fmadd(a, b, c) _mm256_fmadd_ps(a, b, c)
#define vf_mul(a, b) _mm256_mul_ps(a, b)
#define vf_add(a, b) _mm256_add_ps(a, b)
#define vf_sub(a, b) _mm256_sub_ps(a, b)
#define vf_max(a, b) _mm256_max_ps(a, b)
#define vf_load_f16(p) _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p)))
static inline float vf_reduce_add(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}
static inline float vf_reduce_max(__m256 v) {
    __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_max_ps(x, _mm_movehl_ps(x, x));
    x = _mm_max_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}
#else
#define VF_SIMD 0
#endif
#if VF_SIMD
#define VF_INLINE static inline __attribute__((always_inline))

/* Fetch the cache lines of [addr, addr + bytes) into L1 ahead of a stream.
 * The address is an integer: it may lie past the buffer, where pointer
 * arithmetic would be undefined (a prefetch never faults). */
VF_INLINE void vf_prefetch(uintptr_t addr, size_t bytes) {
    for (size_t o = 0; o < bytes; o += 64)
        _mm_prefetch((const char *)(addr + o), _MM_HINT_T0);
}
#endif

#if VF_SIMD
/* r[0..VF_LEN) := its transpose: lane i of row j goes to lane j of row i.
 * Both widths interleave pairs of rows by 32 bits, then by 64 (within
 * each 128-bit lane: u[4b + k], lane L, holds rows 4b..4b + 3 of column
 * 4L + k); only the last step, moving whole 128-bit lanes, differs. */
#if VF_LEN == 16
#define VF_UNPACKLO _mm512_unpacklo_ps
#define VF_UNPACKHI _mm512_unpackhi_ps
#define VF_SHUFFLE _mm512_shuffle_ps
#else
#define VF_UNPACKLO _mm256_unpacklo_ps
#define VF_UNPACKHI _mm256_unpackhi_ps
#define VF_SHUFFLE _mm256_shuffle_ps
#endif
VF_INLINE void vf_transpose(vf r[VF_LEN]) {
    vf t[VF_LEN], u[VF_LEN];
    for (int i = 0; i < VF_LEN; i += 2) {
        t[i] = VF_UNPACKLO(r[i], r[i + 1]);
        t[i + 1] = VF_UNPACKHI(r[i], r[i + 1]);
    }
    for (int b = 0; b < VF_LEN / 4; b++) {
        u[4 * b + 0] = VF_SHUFFLE(t[4 * b], t[4 * b + 2], 0x44);
        u[4 * b + 1] = VF_SHUFFLE(t[4 * b], t[4 * b + 2], 0xEE);
        u[4 * b + 2] = VF_SHUFFLE(t[4 * b + 1], t[4 * b + 3], 0x44);
        u[4 * b + 3] = VF_SHUFFLE(t[4 * b + 1], t[4 * b + 3], 0xEE);
    }
    for (int k = 0; k < 4; k++) {
#if VF_LEN == 16 /* column 4L + k: lane L of u[k], u[4 + k], u[8 + k], u[12 + k] */
        const __m512 x0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88), x1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD);
        const __m512 x2 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88),
                     x3 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
        r[k] = _mm512_shuffle_f32x4(x0, x2, 0x88);
        r[8 + k] = _mm512_shuffle_f32x4(x0, x2, 0xDD);
        r[4 + k] = _mm512_shuffle_f32x4(x1, x3, 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(x1, x3, 0xDD);
#else /* column 4L + k: lane L of u[k], u[4 + k] */
        r[k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x20);
        r[4 + k] = _mm256_permute2f128_ps(u[k], u[4 + k], 0x31);
#endif
    }
}
#undef VF_UNPACKLO
#undef VF_UNPACKHI
#undef VF_SHUFFLE
#endif

#if VF_SIMD
/* e^x for x <= 0, |relative error| < 2e-7; below -87 (including -inf) it
 * returns exactly 0.  x = n ln2 + r, |r| <= ln2/2, e^r by its Taylor
 * polynomial of degree 6, 2^n put into the exponent bits. */
VF_INLINE vf vf_exp(vf x) {
    const float lo = -87.0f;
#if VF_LEN == 16
    __mmask16 live = _mm512_cmp_ps_mask(x, _mm512_set1_ps(lo), _CMP_GE_OQ);
#else
    __m256 live = _mm256_cmp_ps(x, _mm256_set1_ps(lo), _CMP_GE_OQ);
#endif
    x = vf_max(x, vf_set1(lo));
    vf n;
#if VF_LEN == 16
    n = _mm512_roundscale_ps(vf_mul(x, vf_set1(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#else
    n = _mm256_round_ps(vf_mul(x, vf_set1(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
    vf r = vf_fmadd(n, vf_set1(-0.693145751953125f), x);
    r = vf_fmadd(n, vf_set1(-1.428606765330187045e-06f), r);
    vf p = vf_set1(1.0f / 720.0f);
    p = vf_fmadd(p, r, vf_set1(1.0f / 120.0f));
    p = vf_fmadd(p, r, vf_set1(1.0f / 24.0f));
    p = vf_fmadd(p, r, vf_set1(1.0f / 6.0f));
    p = vf_fmadd(p, r, vf_set1(0.5f));
    p = vf_fmadd(p, r, vf_set1(1.0f));
    p = vf_fmadd(p, r, vf_set1(1.0f));
#if VF_LEN == 16
    return _mm512_maskz_mov_ps(live, _mm512_scalef_ps(p, n));
#else
    /* n in [-126, 0]: 2^n is the float with exponent bits n + 127 */
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), live);
#endif
}
#endif

#endif
