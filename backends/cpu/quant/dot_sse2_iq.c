/* SSE2 dot products (the plain x86-64 build, libtport's own copy) of
 * IQ2_XS, IQ3_S and TQ2_0 with Q8_K activations.  SSE2 has no byte
 * shuffle or byte multiply: 16 elements per step, signs as byte masks from
 * a sign byte replicated by a multiply, bytes widened to int16, the 4-bit
 * scale folded into the magnitudes (at most 62 * 31, an int16), pmaddwd.
 * They form the scalar kernels' integers per super-block and the same
 * float expressions: bit for bit the scalar results.  Activations in
 * [-127, 127] (the byte negation has no -128). */
#include "quant_kernels.h"

#if defined(__SSE2__)
#include <emmintrin.h>

#include "../../../src/quant/iq_grids.h"

static __m128i load16(const void *p) { return _mm_loadu_si128((const __m128i *)p); }
static unsigned u16_at(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

static int hsum4(__m128i v) {
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0x4e));
    v = _mm_add_epi32(v, _mm_shuffle_epi32(v, 0xb1));
    return _mm_cvtsi128_si32(v);
}

/* 16 bytes, 0xFF where bit i of lo (i < 8) or of hi (i >= 8) is set: each
 * byte replicated over 8 lanes by a multiply, then one bit per lane. */
static __m128i sign_mask16(unsigned lo, unsigned hi) {
    const uint64_t rep = UINT64_C(0x0101010101010101);
    const __m128i bit = _mm_set1_epi64x((long long)UINT64_C(0x8040201008040201));
    const __m128i v = _mm_set_epi64x((long long)(hi * rep), (long long)(lo * rep));
    return _mm_cmpeq_epi8(_mm_and_si128(v, bit), bit);
}

/* ggml's sign rule (iq_signs8) without a loop: bit 7 is the parity of the
 * seven stored sign bits. */
static unsigned full_signs(unsigned p) {
    unsigned par = p ^ p >> 4;
    par ^= par >> 2;
    par ^= par >> 1;
    return p | (par & 1) << 7;
}

/* The 16 unsigned magnitude bytes in m times the 16 activations at y
 * (negated where neg is 0xFF), m scaled by ls: four int32 sums. */
static __m128i scaled_dot16(__m128i m, const uint8_t *y, __m128i neg, int ls) {
    const __m128i z = _mm_setzero_si128(), s = _mm_set1_epi16((short)ls);
    const __m128i q = _mm_sub_epi8(_mm_xor_si128(load16(y), neg), neg);
    const __m128i qlo = _mm_srai_epi16(_mm_unpacklo_epi8(q, q), 8), qhi = _mm_srai_epi16(_mm_unpackhi_epi8(q, q), 8);
    const __m128i mlo = _mm_mullo_epi16(_mm_unpacklo_epi8(m, z), s), mhi = _mm_mullo_epi16(_mm_unpackhi_epi8(m, z), s);
    return _mm_add_epi32(_mm_madd_epi16(mlo, qlo), _mm_madd_epi16(mhi, qhi));
}

static void dot_iq2_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const uint64_t *g = tport_iq2xs_grid;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 74, y += BQ8_K) {
        const uint8_t *sc = x + 66;
        __m128i acc = _mm_setzero_si128();
        for (int k = 0; k < 16; k++) { /* 16 elements: two u16 of grid and sign index */
            const unsigned a = u16_at(x + 2 + 4 * k), b = u16_at(x + 4 + 4 * k);
            const __m128i m = _mm_set_epi64x((long long)g[b & 511], (long long)g[a & 511]);
            const int ls = 2 * (sc[k / 2] >> 4 * (k % 2) & 0xf) + 1;
            const __m128i neg = sign_mask16(full_signs(a >> 9), full_signs(b >> 9));
            acc = _mm_add_epi32(acc, scaled_dot16(m, y + Q8K_QS + 16 * k, neg, ls));
        }
        const int bsum = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

static void dot_iq3_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const uint32_t *g = tport_iq3s_grid;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 110, y += BQ8_K) {
        const uint8_t *qh = x + 66, *signs = x + 74, *sc = x + 106;
        __m128i acc = _mm_setzero_si128();
        for (int k = 0; k < 16; k++) { /* 16 elements: four 4-magnitude entries */
            const uint8_t *qs = x + 2 + 4 * k;
            /* entry j of group k / 2 takes bit j of qh[k / 2] as its ninth bit */
            const unsigned h = qh[k / 2] >> 4 * (k % 2);
            const __m128i m = _mm_setr_epi32((int)g[qs[0] | (h << 8 & 256)], (int)g[qs[1] | (h << 7 & 256)],
                                             (int)g[qs[2] | (h << 6 & 256)], (int)g[qs[3] | (h << 5 & 256)]);
            const int ls = 2 * (sc[k / 4] >> 4 * (k / 2 % 2) & 0xf) + 1;
            const __m128i neg = sign_mask16(signs[2 * k], signs[2 * k + 1]);
            acc = _mm_add_epi32(acc, scaled_dot16(m, y + Q8K_QS + 16 * k, neg, ls));
        }
        const int bsum = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = sum;
}

static void dot_tq2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m128i m3 = _mm_set1_epi8(3), z = _mm_setzero_si128();
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        __m128i acc = _mm_setzero_si128();
        for (int j = 0; j < 64; j += 16) { /* bytes j..j+15; field l is element 4 (j & 32) + 32 l + (j & 16) + k */
            const __m128i bits = load16(x + j);
            for (int l = 0; l < 4; l++) {
                const __m128i code = _mm_and_si128(_mm_srli_epi16(bits, 2 * l), m3);
                const __m128i q = load16(y + Q8K_QS + 4 * (j & 32) + 32 * l + (j & 16));
                const __m128i qlo = _mm_srai_epi16(_mm_unpacklo_epi8(q, q), 8);
                const __m128i qhi = _mm_srai_epi16(_mm_unpackhi_epi8(q, q), 8);
                acc = _mm_add_epi32(acc, _mm_add_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(code, z), qlo),
                                                       _mm_madd_epi16(_mm_unpackhi_epi8(code, z), qhi)));
            }
        }
        /* minus the activations' sum: the 16 bsums, widened */
        const __m128i one = _mm_set1_epi16(1);
        const __m128i bs = _mm_add_epi32(_mm_madd_epi16(load16(y + Q8K_BSUMS), one), _mm_madd_epi16(load16(y + Q8K_BSUMS + 16), one));
        const int isum = hsum4(_mm_sub_epi32(acc, bs));
        sum += (float)isum * (cpuq_f32(y) * cpuq_half(x + 64));
    }
    *s = sum;
}

CPUQ_KERNEL_TABLE(sse2_iq_kernel,
                  {TPORT_TYPE_IQ2_XS, dot_iq2_xs},
                  {TPORT_TYPE_IQ3_S, dot_iq3_s},
                  {TPORT_TYPE_TQ2_0, dot_tq2_0})

#else

CPUQ_NO_KERNELS(sse2_iq_kernel)

#endif
