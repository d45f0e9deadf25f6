/* SSE2 dot products (the plain x86-64 build, libtport's own copy) of the
 * lattice IQ types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M)
 * and the ternary TQ1_0 / TQ2_0 with Q8_K activations.  SSE2 has no byte
 * shuffle or byte multiply: 16 elements per step, signs as byte masks from
 * a sign byte replicated by a multiply, bytes widened to int16, the small
 * scale folded into the weights (at most 62 * 31, an int16), pmaddwd.
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

static __m128i lo_u16(__m128i b) { return _mm_unpacklo_epi8(b, _mm_setzero_si128()); }
static __m128i hi_u16(__m128i b) { return _mm_unpackhi_epi8(b, _mm_setzero_si128()); }
static __m128i lo_i16(__m128i b) { return _mm_srai_epi16(_mm_unpacklo_epi8(b, b), 8); }
static __m128i hi_i16(__m128i b) { return _mm_srai_epi16(_mm_unpackhi_epi8(b, b), 8); }

/* 16 int16 weights (lo: elements 0..7, hi: 8..15) times 16 signed bytes:
 * four int32 sums. */
static __m128i dot16(__m128i wlo, __m128i whi, __m128i q) {
    return _mm_add_epi32(_mm_madd_epi16(wlo, lo_i16(q)), _mm_madd_epi16(whi, hi_i16(q)));
}

/* The 16 unsigned magnitude bytes in m times the 16 activations at y
 * (negated where neg is 0xFF), m scaled by ls: four int32 sums. */
static __m128i scaled_dot16(__m128i m, const uint8_t *y, __m128i neg, int ls) {
    const __m128i s = _mm_set1_epi16((short)ls);
    const __m128i q = _mm_sub_epi8(_mm_xor_si128(load16(y), neg), neg);
    return dot16(_mm_mullo_epi16(lo_u16(m), s), _mm_mullo_epi16(hi_u16(m), s), q);
}

/* Two IQ2 grid entries (16 magnitudes). */
static __m128i grid2(const uint64_t *g, unsigned a, unsigned b) {
    return _mm_set_epi64x((long long)g[b], (long long)g[a]);
}

/* Four IQ3 grid entries (16 magnitudes). */
static __m128i grid4(const uint32_t *g, unsigned a, unsigned b, unsigned c, unsigned d) {
    return _mm_setr_epi32((int)g[a], (int)g[b], (int)g[c], (int)g[d]);
}

static void dot_iq2_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        __m128i acc = _mm_setzero_si128();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = x + 2 + 8 * ib;
            const uint32_t aux = cpuq_u32(q + 4);
            const int ls = (int)(2 * (aux >> 28) + 1);
            for (int h = 0; h < 2; h++) { /* sign indices 2h, 2h + 1 of aux */
                const __m128i neg = sign_mask16(full_signs(aux >> 14 * h & 127), full_signs(aux >> (14 * h + 7) & 127));
                acc = _mm_add_epi32(acc, scaled_dot16(grid2(tport_iq2xxs_grid, q[2 * h], q[2 * h + 1]),
                                                      y + Q8K_QS + 32 * ib + 16 * h, neg, ls));
            }
        }
        const int bsum = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
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
            const __m128i m = grid2(g, a & 511, b & 511);
            const int ls = 2 * (sc[k / 2] >> 4 * (k % 2) & 0xf) + 1;
            const __m128i neg = sign_mask16(full_signs(a >> 9), full_signs(b >> 9));
            acc = _mm_add_epi32(acc, scaled_dot16(m, y + Q8K_QS + 16 * k, neg, ls));
        }
        const int bsum = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

static void dot_iq2_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 82, y += BQ8_K) {
        const uint8_t *signs = x + 34, *qh = x + 66, *sc = x + 74;
        __m128i acc = _mm_setzero_si128();
        for (int k = 0; k < 16; k++) { /* 16 elements: entries l = 2 (k % 2), l + 1 of group k / 2 */
            const uint8_t *qs = x + 2 + 2 * k;
            /* entry l's index bits 8, 9: bits 2l, 2l + 1 of qh[k / 2] */
            const unsigned h = (unsigned)qh[k / 2] >> 4 * (k % 2);
            const __m128i m = grid2(tport_iq2s_grid, qs[0] | (h << 8 & 0x300), qs[1] | (h << 6 & 0x300));
            const int ls = 2 * (sc[k / 2] >> 4 * (k % 2) & 0xf) + 1;
            const __m128i neg = sign_mask16(signs[2 * k], signs[2 * k + 1]);
            acc = _mm_add_epi32(acc, scaled_dot16(m, y + Q8K_QS + 16 * k, neg, ls));
        }
        const int bsum = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

static void dot_iq3_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const uint32_t *g = tport_iq3xxs_grid;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 98, y += BQ8_K) {
        __m128i acc = _mm_setzero_si128();
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t aux = cpuq_u32(x + 66 + 4 * ib);
            const int ls = (int)(2 * (aux >> 28) + 1);
            for (int h = 0; h < 2; h++) { /* entries 4h..4h+3, sign indices 2h, 2h + 1 */
                const uint8_t *q3 = x + 2 + 8 * ib + 4 * h;
                const __m128i neg = sign_mask16(full_signs(aux >> 14 * h & 127), full_signs(aux >> (14 * h + 7) & 127));
                acc = _mm_add_epi32(acc, scaled_dot16(grid4(g, q3[0], q3[1], q3[2], q3[3]),
                                                      y + Q8K_QS + 32 * ib + 16 * h, neg, ls));
            }
        }
        const int bsum = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.25f * sum;
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
            const __m128i m = grid4(g, qs[0] | (h << 8 & 256), qs[1] | (h << 7 & 256), qs[2] | (h << 6 & 256),
                                    qs[3] | (h << 5 & 256));
            const int ls = 2 * (sc[k / 4] >> 4 * (k / 2 % 2) & 0xf) + 1;
            const __m128i neg = sign_mask16(signs[2 * k], signs[2 * k + 1]);
            acc = _mm_add_epi32(acc, scaled_dot16(m, y + Q8K_QS + 16 * k, neg, ls));
        }
        const int bsum = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = sum;
}

/* Two signed IQ1 grid entries ({-1, 0, 1} bytes) times ls against 16
 * activations. */
static __m128i iq1_dot16(unsigned a, unsigned b, const uint8_t *y, int ls) {
    const __m128i m = grid2(tport_iq1s_grid, a, b), s = _mm_set1_epi16((short)ls);
    return dot16(_mm_mullo_epi16(lo_i16(m), s), _mm_mullo_epi16(hi_i16(m), s), load16(y));
}

static void dot_iq1_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 50, y += BQ8_K) {
        __m128i acc = _mm_setzero_si128();
        int sumi1 = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x + 2 + 4 * ib;
            const unsigned qh = u16_at(x + 34 + 2 * ib);
            const int ls = 2 * (qh >> 12 & 7) + 1, delta = qh & 0x8000 ? -1 : 1;
            const uint8_t *q8 = y + Q8K_QS + 32 * ib;
            acc = _mm_add_epi32(acc, iq1_dot16(qs[0] | (qh << 8 & 0x700), qs[1] | (qh << 5 & 0x700), q8, ls));
            acc = _mm_add_epi32(acc, iq1_dot16(qs[2] | (qh << 2 & 0x700), qs[3] | (qh >> 1 & 0x700), q8 + 16, ls));
            sumi1 += ls * delta * (cpuq_q8k_bsum(y, 2 * ib) + cpuq_q8k_bsum(y, 2 * ib + 1));
        }
        const int sumi = hsum4(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * ((float)sumi + TPORT_IQ1S_DELTA * (float)sumi1);
    }
    *s = sum;
}

static void dot_iq1_m(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 56, y += BQ8_K) {
        unsigned sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = u16_at(x + 48 + 2 * k);
        const unsigned d16 = (sc[0] >> 12) | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000);
        const uint8_t dbytes[2] = {(uint8_t)d16, (uint8_t)(d16 >> 8)};
        __m128i acc1 = _mm_setzero_si128(), acc2 = _mm_setzero_si128();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x + 4 * ib, *qh = x + 32 + 2 * ib;
            for (int h = 0; h < 2; h++) { /* entries 2h, 2h + 1: qh[h]'s two nibbles */
                const int ls = 2 * (sc[ib / 2] >> (6 * (ib % 2) + 3 * h) & 7) + 1;
                const uint8_t *q8 = y + Q8K_QS + 32 * ib + 16 * h;
                const unsigned a = qs[2 * h] | (qh[h] << 8 & 0x700), b = qs[2 * h + 1] | (qh[h] << 4 & 0x700);
                acc1 = _mm_add_epi32(acc1, iq1_dot16(a, b, q8, ls));
                /* the delta term: each 8's activations times +-ls */
                const int d0 = qh[h] & 0x08 ? -ls : ls, d1 = qh[h] & 0x80 ? -ls : ls;
                acc2 = _mm_add_epi32(acc2, dot16(_mm_set1_epi16((short)d0), _mm_set1_epi16((short)d1), load16(q8)));
            }
        }
        const int sumi1 = hsum4(acc1), sumi2 = hsum4(acc2);
        sum += cpuq_half(dbytes) * cpuq_f32(y) * ((float)sumi1 + TPORT_IQ1S_DELTA * (float)sumi2);
    }
    *s = sum;
}

/* Bytes times 3 and times 9, modulo 256. */
static __m128i mul3(__m128i q) { return _mm_add_epi8(q, _mm_add_epi8(q, q)); }
static __m128i mul9(__m128i q) { return _mm_add_epi8(_mm_and_si128(_mm_slli_epi16(q, 3), _mm_set1_epi8((char)0xF8)), q); }

/* The leading trit of each byte, (3 q) >> 8 (see dot_avx2_iq.c). */
static __m128i top_trit(__m128i q) {
    const __m128i q1 = _mm_subs_epu8(q, _mm_set1_epi8(1));
    return _mm_and_si128(_mm_srli_epi16(_mm_avg_epu8(q1, _mm_avg_epu8(q1, _mm_setzero_si128())), 6), _mm_set1_epi8(3));
}

/* Digits 0..2 against 16 activations: four int32 sums. */
static __m128i trit_dot16(__m128i q, const uint8_t *y) {
    const __m128i t = top_trit(q);
    return dot16(lo_u16(t), hi_u16(t), load16(y));
}

/* The activations' sum as four int32 (the 16 bsums). */
static __m128i q8k_bsums4(const uint8_t *y) {
    const __m128i one = _mm_set1_epi16(1);
    return _mm_add_epi32(_mm_madd_epi16(load16(y + Q8K_BSUMS), one), _mm_madd_epi16(load16(y + Q8K_BSUMS + 16), one));
}

static void dot_tq1_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 54, y += BQ8_K) {
        __m128i acc = _mm_setzero_si128();
        /* bytes 0..31: digit l of byte j is element 32 l + j; bytes 32..47:
         * element 160 + 16 l + (j - 32) */
        for (int c = 0; c < 3; c++) {
            const __m128i a0 = load16(x + 16 * c), a1 = mul3(a0), a2 = mul9(a0);
            const __m128i a[5] = {a0, a1, a2, mul9(a1), mul9(a2)};
            for (int l = 0; l < 5; l++)
                acc = _mm_add_epi32(acc, trit_dot16(a[l], y + Q8K_QS + (c < 2 ? 32 * l + 16 * c : 160 + 16 * l)));
        }
        /* qh: digit l of byte j is element 240 + 4 l + j */
        const __m128i h = _mm_set1_epi32((int)cpuq_u32(x + 48)), h3 = mul3(h);
        const __m128i hq = _mm_unpacklo_epi64(_mm_unpacklo_epi32(h, h3), _mm_unpacklo_epi32(mul9(h), mul9(h3)));
        acc = _mm_add_epi32(acc, trit_dot16(hq, y + Q8K_QS + 240));
        const int isum = hsum4(_mm_sub_epi32(acc, q8k_bsums4(y)));
        sum += (float)isum * (cpuq_half(x + 52) * cpuq_f32(y));
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
        /* minus the activations' sum */
        const int isum = hsum4(_mm_sub_epi32(acc, q8k_bsums4(y)));
        sum += (float)isum * (cpuq_f32(y) * cpuq_half(x + 64));
    }
    *s = sum;
}

CPUQ_KERNEL_TABLE(sse2_iq_kernel,
                  {TPORT_TYPE_IQ2_XXS, dot_iq2_xxs},
                  {TPORT_TYPE_IQ2_XS, dot_iq2_xs},
                  {TPORT_TYPE_IQ2_S, dot_iq2_s},
                  {TPORT_TYPE_IQ3_XXS, dot_iq3_xxs},
                  {TPORT_TYPE_IQ3_S, dot_iq3_s},
                  {TPORT_TYPE_IQ1_S, dot_iq1_s},
                  {TPORT_TYPE_IQ1_M, dot_iq1_m},
                  {TPORT_TYPE_TQ1_0, dot_tq1_0},
                  {TPORT_TYPE_TQ2_0, dot_tq2_0})

#else

CPUQ_NO_KERNELS(sse2_iq_kernel)

#endif
