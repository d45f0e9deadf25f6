/* AVX-512 dot products of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
 * IQ1_M, TQ1_0 and TQ2_0 with Q8_K activations, 64 elements per step: explicit sign bits become a
 * 64-bit mask that negates the activations directly (7-bit sign indices
 * get their parity bit first, a whole super-block's in one pass, then are
 * packed to bytes); the int16 pair sums take their scales with dpwssd
 * (VNNI) or madd, the scales unpacked once per super-block and spread to
 * the lanes with vpermw; the TQ types' digits multiply with dpbusd.  As
 * the AVX2 kernels (dot_avx2_iq.c), whose helpers' reasoning applies here
 * too, they form the scalar kernels' integers per super-block and the same
 * float expressions: bit for bit the scalar results.  Activations in
 * [-127, 127].
 *
 * The lattice types form their grid indices in a register and gather the
 * entries (vpgatherdd / vpgatherdq): on the Xeon of run 35 that took the
 * IQ3_S kernel from about 340 to 100 TSC ticks per row of 768, where
 * assembling sixteen scalar loads (and a grid helper gcc left out of line)
 * had cost more than the products; scalar loads into a stored index array
 * were slower still than the gather for IQ2_XS.  IQ3_S is now bound by its
 * four 16-entry gathers per super-block. */
#include "quant_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "../../../src/quant/iq_grids.h"

static __m512i q8k_load64(const uint8_t *y, int off) { return _mm512_loadu_si512((const void *)(y + Q8K_QS + off)); }
static unsigned u16_at(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint64_t u64_at(const uint8_t *p) { return (uint64_t)cpuq_u32(p) | (uint64_t)cpuq_u32(p + 4) << 32; }

/* acc + the int16 pairs of p times those of scales, to int32. */
static __m512i madd_acc(__m512i acc, __m512i p, __m512i scales) {
#if defined(__AVX512VNNI__)
    return _mm512_dpwssd_epi32(acc, p, scales);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, scales));
#endif
}

/* y negated where bit i of `neg` is set. */
static __m512i negate_where(__m512i y, __mmask64 neg) { return _mm512_mask_sub_epi8(y, neg, _mm512_setzero_si512(), y); }

/* Bytes of weights prefetched ahead, as in dot_avx512_lut.c: a row is read
 * once per token in generation and the next rows follow it in memory. */
#define IQ_AHEAD 2048

/* The two lines of a block of at most 128 bytes, IQ_AHEAD past x. */
static inline __attribute__((always_inline)) void prefetch_ahead(const uint8_t *x) {
    _mm_prefetch((const char *)x + IQ_AHEAD, _MM_HINT_T0);
    _mm_prefetch((const char *)x + IQ_AHEAD + 64, _MM_HINT_T0);
}

/* 7-bit sign indices (bits 0..6 of each 16- or 32-bit lane of p, the
 * rest zero) with ggml's bit 7: the parity of bits 0..6, i.e. of the low
 * nibble of p ^ (p >> 4), from a table (vpshufb; the lanes' upper bytes
 * index entry 0, which is 0). */
static __m512i with_parity(__m512i p) {
    const __m512i odd = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0));
    return _mm512_or_si512(p, _mm512_shuffle_epi8(odd, _mm512_xor_si512(p, _mm512_srli_epi32(p, 4))));
}

/* IQ2_XXS and IQ3_XXS: from the eight groups' u32s (four 7-bit sign
 * indices at bits 0, 7, 14, 21, the 4-bit scale at 28) the 256 sign bits
 * (parity completed by with_parity), four 64-bit masks, and the scales
 * 2s + 1 as int16, group g's in word g. */
static __m512i aux_signs_scales(__m256i aux, uint64_t neg[4]) {
    const __m512i sh = _mm512_setr_epi32(0, 7, 14, 21, 0, 7, 14, 21, 0, 7, 14, 21, 0, 7, 14, 21);
    const __m512i a = _mm512_castsi256_si512(aux);
    for (int h = 0; h < 2; h++) {
        const __m512i pick = _mm512_add_epi32(_mm512_set1_epi32(4 * h),
                                              _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
        const __m512i p = _mm512_and_si512(_mm512_srlv_epi32(_mm512_permutexvar_epi32(pick, a), sh), _mm512_set1_epi32(127));
        _mm_storeu_si128((__m128i *)(neg + 2 * h), _mm512_cvtepi32_epi8(with_parity(p)));
    }
    const __m256i l = _mm256_add_epi32(_mm256_slli_epi32(_mm256_srli_epi32(aux, 28), 1), _mm256_set1_epi32(1));
    return _mm512_castsi128_si512(_mm256_cvtepi32_epi16(l));
}

/* Step j's scales from eight int16 (aux_signs_scales, IQ3_S): word 2j
 * for lanes 0, 1, word 2j + 1 for lanes 2, 3. */
static __m512i aux_step_scales(__m512i s16, int j) {
    const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16((short)(2 * j)),
                                         _mm512_setr_epi64(0, 0, 0, 0, 0x0001000100010001LL, 0x0001000100010001LL,
                                                           0x0001000100010001LL, 0x0001000100010001LL));
    return _mm512_permutexvar_epi16(idx, s16);
}

static void dot_iq2_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    /* the index bytes of a step's two groups: bytes 0..3 and 8..11 */
    const __m128i pick = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, -1, -1, -1, -1, -1, -1, -1, -1);
    const __m512i odd_dwords = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        prefetch_ahead(x);
        /* group g: index bytes at 8g, its u32 of signs and scale at 8g + 4 */
        uint64_t neg[4];
        const __m512i s16 = aux_signs_scales(
            _mm512_castsi512_si256(_mm512_permutexvar_epi32(odd_dwords, _mm512_loadu_si512((const void *)(x + 2)))), neg);
        __m512i acc = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            const __m128i q = _mm_loadu_si128((const __m128i *)(x + 2 + 16 * j));
            const __m256i idx = _mm256_cvtepu8_epi32(_mm_shuffle_epi8(q, pick));
            const __m512i mag = _mm512_i32gather_epi64(idx, (const void *)tport_iq2xxs_grid, 8);
            const __m512i p16 = _mm512_maddubs_epi16(mag, negate_where(q8k_load64(y, 64 * j), _cvtu64_mask64(neg[j])));
            acc = madd_acc(acc, p16, aux_step_scales(s16, j));
        }
        const int bsum = _mm512_reduce_add_epi32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

/* The sixteen 4-bit scales of IQ2_XS and IQ2_S (8 bytes at sc, low
 * nibble first) as int16 2s + 1, nibble g in word g. */
static __m512i nibble_scales16(const uint8_t *sc) {
    const __m128i v = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)sc));
    const __m128i lo = _mm_and_si128(v, _mm_set1_epi16(0xf)), hi = _mm_srli_epi16(v, 4);
    const __m256i w = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi16(lo, hi)),
                                              _mm_unpackhi_epi16(lo, hi), 1);
    const __m256i s2 = _mm256_add_epi16(_mm256_add_epi16(w, w), _mm256_set1_epi16(1));
    return _mm512_castsi256_si512(s2);
}

/* Step j's scales from nibble_scales16: word 4j + k across 128-bit lane k. */
static __m512i step_scales(__m512i s16, int j) {
    const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16((short)(4 * j)),
                                         _mm512_setr_epi64(0, 0, 0x0001000100010001LL, 0x0001000100010001LL,
                                                           0x0002000200020002LL, 0x0002000200020002LL,
                                                           0x0003000300030003LL, 0x0003000300030003LL));
    return _mm512_permutexvar_epi16(idx, s16);
}

/* IQ2_XS: the 256 sign bits of a super-block's 32 u16 (7-bit sign index
 * in bits 9..15, parity completed by with_parity), four 64-bit masks. */
static void iq2xs_signs(const uint8_t *qs, uint64_t out[4]) {
    const __m512i p = _mm512_srli_epi16(_mm512_loadu_si512((const void *)qs), 9);
    _mm256_storeu_si256((__m256i *)out, _mm512_cvtepi16_epi8(with_parity(p)));
}

/* IQ2_XS, two groups of 32 (eight u16: 9-bit grid index, 7-bit sign
 * index) per step: the indices masked in a register, their 8-byte grid
 * entries gathered; the signs and scales unpacked once per super-block. */
static void dot_iq2_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i low9 = _mm256_set1_epi32(511);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 74, y += BQ8_K) {
        prefetch_ahead(x);
        const __m512i s16 = nibble_scales16(x + 66);
        uint64_t neg[4];
        iq2xs_signs(x + 2, neg);
        __m512i acc = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            const __m256i q = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(x + 2 + 16 * j)));
            const __m512i mag = _mm512_i32gather_epi64(_mm256_and_si256(q, low9), (const void *)tport_iq2xs_grid, 8);
            const __m512i p16 = _mm512_maddubs_epi16(mag, negate_where(q8k_load64(y, 64 * j), _cvtu64_mask64(neg[j])));
            acc = madd_acc(acc, p16, step_scales(s16, j));
        }
        const int bsum = _mm512_reduce_add_epi32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

static void dot_iq2_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i hshift = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 82, y += BQ8_K) {
        prefetch_ahead(x);
        const __m512i s16 = nibble_scales16(x + 74);
        __m512i acc = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            /* entry k's index bits 8, 9: bits 2k, 2k + 1 of the u16 at qh + 2j */
            const __m256i h = _mm256_set1_epi32((int)u16_at(x + 66 + 2 * j));
            const __m256i hb = _mm256_and_si256(_mm256_srlv_epi32(h, hshift), _mm256_set1_epi32(3));
            const __m256i idx = _mm256_or_si256(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(x + 2 + 8 * j))),
                                                _mm256_slli_epi32(hb, 8));
            const __m512i mag = _mm512_i32gather_epi64(idx, (const void *)tport_iq2s_grid, 8);
            const __mmask64 neg = _cvtu64_mask64(u64_at(x + 34 + 8 * j));
            const __m512i p16 = _mm512_maddubs_epi16(mag, negate_where(q8k_load64(y, 64 * j), neg));
            acc = madd_acc(acc, p16, step_scales(s16, j));
        }
        const int bsum = _mm512_reduce_add_epi32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

static void dot_iq3_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 98, y += BQ8_K) {
        prefetch_ahead(x);
        uint64_t neg[4];
        const __m512i s16 = aux_signs_scales(_mm256_loadu_si256((const __m256i *)(x + 66)), neg);
        __m512i acc = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            const __m512i idx = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(x + 2 + 16 * j)));
            const __m512i mag = _mm512_i32gather_epi32(idx, (const void *)tport_iq3xxs_grid, 4);
            const __m512i p16 = _mm512_maddubs_epi16(mag, negate_where(q8k_load64(y, 64 * j), _cvtu64_mask64(neg[j])));
            acc = madd_acc(acc, p16, aux_step_scales(s16, j));
        }
        const int bsum = _mm512_reduce_add_epi32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.25f * sum;
}

/* IQ3_S, two groups of 32 per step: the sixteen 9-bit indices (qs bytes,
 * the ninth bit from qh as a mask: entry k's is bit k of the super-block's
 * qh read as one 64-bit word) are formed in a register and their 4-byte
 * grid entries gathered; 64 sign bits, one 4-bit scale per group. */
static void dot_iq3_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i bit8 = _mm512_set1_epi32(256);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 110, y += BQ8_K) {
        prefetch_ahead(x);
        /* the eight 4-bit scales 2s + 1, group g's in word g */
        const __m128i sb = _mm_cvtepu8_epi16(_mm_cvtsi32_si128((int)cpuq_u32(x + 106)));
        const __m128i sn = _mm_unpacklo_epi16(_mm_and_si128(sb, _mm_set1_epi16(0xf)), _mm_srli_epi16(sb, 4));
        const __m512i s16 = _mm512_castsi128_si512(_mm_add_epi16(_mm_add_epi16(sn, sn), _mm_set1_epi16(1)));
        const uint64_t qh = u64_at(x + 66);
        __m512i acc = _mm512_setzero_si512();
        for (int j = 0; j < 4; j++) {
            const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(x + 2 + 16 * j)));
            const __m512i idx = _mm512_mask_add_epi32(q, (__mmask16)(qh >> 16 * j), q, bit8);
            const __m512i mag = _mm512_i32gather_epi32(idx, (const void *)tport_iq3s_grid, 4);
            const __mmask64 neg = _cvtu64_mask64(u64_at(x + 74 + 8 * j));
            const __m512i p16 = _mm512_maddubs_epi16(mag, negate_where(q8k_load64(y, 64 * j), neg));
            acc = madd_acc(acc, p16, aux_step_scales(s16, j));
        }
        const int bsum = _mm512_reduce_add_epi32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = sum;
}

/* Unsigned digits (0..3) times signed activations, summed on to acc. */
static __m512i digits_acc(__m512i acc, __m512i d, __m512i y) {
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(acc, d, y);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(d, y), _mm512_set1_epi16(1)));
#endif
}

/* The activations' sum as 16 int32 (the bsums, widened). */
static __m512i q8k_bsums16(const uint8_t *y) {
    return _mm512_cvtepi16_epi32(_mm256_loadu_si256((const __m256i *)(y + Q8K_BSUMS)));
}

/* Bytes times 3 and times 9, modulo 256. */
static __m512i mul3(__m512i q) { return _mm512_add_epi8(q, _mm512_add_epi8(q, q)); }
static __m512i mul9(__m512i q) {
    return _mm512_add_epi8(_mm512_and_si512(_mm512_slli_epi16(q, 3), _mm512_set1_epi8((char)0xF8)), q);
}

/* The leading trit of each byte, (3 q) >> 8 (see dot_avx2_iq.c). */
static __m512i top_trit(__m512i q) {
    const __m512i q1 = _mm512_subs_epu8(q, _mm512_set1_epi8(1));
    const __m512i t = _mm512_avg_epu8(q1, _mm512_avg_epu8(q1, _mm512_setzero_si512()));
    return _mm512_and_si512(_mm512_srli_epi16(t, 6), _mm512_set1_epi8(3));
}

/* 32 activations at offset a, then 32 at offset b. */
static __m512i q8k_pair(const uint8_t *y, int a, int b) {
    const __m256i lo = _mm256_loadu_si256((const __m256i *)(y + Q8K_QS + a));
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256((const __m256i *)(y + Q8K_QS + b)), 1);
}

/* TQ1_0: four registers of digits: bytes 0..31 times 1 | 3 (elements
 * 0..63), times 9 | 27 (64..127), times 81 (128..159) with the qh digits
 * (240..255) beside bytes 32..47 times 81 (224..239), and bytes 32..47
 * times 1, 3, 9, 27 (160..223). */
static void dot_tq1_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 54, y += BQ8_K) {
        prefetch_ahead(x);
        const __m512i a = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)x));
        const __m512i a01 = _mm512_mask_mov_epi64(a, 0xF0, mul3(a)), a23 = mul9(a01);
        const __m512i b = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(x + 32)));
        const __m512i b13 = _mm512_mask_mov_epi64(b, 0xCC, mul3(b)); /* lanes: b, 3b, b, 3b */
        const __m512i b0123 = _mm512_mask_mov_epi64(b13, 0xF0, mul9(b13));
        /* qh: dword l holds the four bytes times 3^l (element 240 + 4 l + j) */
        const __m512i h = _mm512_set1_epi32((int)cpuq_u32(x + 48)), h13 = _mm512_mask_mov_epi32(h, 0xAAAA, mul3(h));
        const __m512i hq = _mm512_mask_mov_epi32(h13, 0xCCCC, mul9(h13));
        /* a * 81 in the low half; b * 81 in lane 2, hq in lane 3 */
        const __m512i p2 = _mm512_mask_mov_epi64(mul9(a23), 0xF0,
                                                 _mm512_mask_mov_epi64(mul9(mul9(b)), 0xC0, hq));
        __m512i acc = digits_acc(_mm512_setzero_si512(), top_trit(a01), q8k_pair(y, 0, 32));
        acc = digits_acc(acc, top_trit(a23), q8k_pair(y, 64, 96));
        acc = digits_acc(acc, top_trit(p2), q8k_pair(y, 128, 224));
        acc = digits_acc(acc, top_trit(b0123), q8k_pair(y, 160, 192));
        const int isum = _mm512_reduce_add_epi32(_mm512_sub_epi32(acc, q8k_bsums16(y)));
        sum += (float)isum * (cpuq_half(x + 52) * cpuq_f32(y));
    }
    *s = sum;
}

/* TQ2_0: per shift l, the 64 code bytes' fields l are elements 32 l + k
 * (bytes 0..31) and 128 + 32 l + k (bytes 32..63). */
static void dot_tq2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i m3 = _mm512_set1_epi8(3);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        prefetch_ahead(x);
        const __m512i bits = _mm512_loadu_si512((const void *)x);
        __m512i acc = _mm512_setzero_si512();
        for (int l = 0; l < 4; l++) {
            const __m512i code = _mm512_and_si512(_mm512_srli_epi16(bits, 2 * l), m3);
            acc = digits_acc(acc, code, q8k_pair(y, 32 * l, 128 + 32 * l));
        }
        /* minus the activations' sum (the -1 of every code) */
        acc = _mm512_sub_epi32(acc, q8k_bsums16(y));
        const int isum = _mm512_reduce_add_epi32(acc);
        sum += (float)isum * (cpuq_f32(y) * cpuq_half(x + 64));
    }
    *s = sum;
}

/* Eight signed IQ1 grid entries ({-1, 0, 1} bytes, gathered) against 64
 * activations, as 32 int16 pair sums: |g| times y negated where g < 0. */
static __m512i iq1_dot64(__m512i idx, __m512i y) {
    const __m512i g = _mm512_i64gather_epi64(idx, (const void *)tport_iq1s_grid, 8);
    return _mm512_maddubs_epi16(_mm512_abs_epi8(g), negate_where(y, _mm512_movepi8_mask(g)));
}

/* IQ1_S, two groups of 32 per step: the eight 11-bit indices (qs bytes,
 * three high bits per entry from the group's u16 qh) formed in a register;
 * one 3-bit scale and one delta sign per group, the delta term from the
 * activations' group sums as in the AVX2 kernel. */
static void dot_iq1_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i hshift = _mm512_setr_epi64(0, 3, 6, 9, 0, 3, 6, 9);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 50, y += BQ8_K) {
        prefetch_ahead(x);
        __m512i acc = _mm512_setzero_si512();
        int sumi1 = 0;
        for (int ib = 0; ib < 8; ib += 2) {
            const unsigned qh0 = u16_at(x + 34 + 2 * ib), qh1 = u16_at(x + 36 + 2 * ib);
            const __m512i h = _mm512_setr_epi64(qh0, qh0, qh0, qh0, qh1, qh1, qh1, qh1);
            const __m512i hi = _mm512_slli_epi64(_mm512_and_si512(_mm512_srlv_epi64(h, hshift), _mm512_set1_epi64(7)), 8);
            const __m512i idx = _mm512_or_si512(_mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(x + 2 + 4 * ib))), hi);
            const int ls0 = 2 * (qh0 >> 12 & 7) + 1, ls1 = 2 * (qh1 >> 12 & 7) + 1;
            const __m512i scales = _mm512_inserti64x4(_mm512_set1_epi16((short)ls0), _mm256_set1_epi16((short)ls1), 1);
            acc = madd_acc(acc, iq1_dot64(idx, q8k_load64(y, 32 * ib)), scales);
            sumi1 += ls0 * (qh0 & 0x8000 ? -1 : 1) * (cpuq_q8k_bsum(y, 2 * ib) + cpuq_q8k_bsum(y, 2 * ib + 1));
            sumi1 += ls1 * (qh1 & 0x8000 ? -1 : 1) * (cpuq_q8k_bsum(y, 2 * ib + 2) + cpuq_q8k_bsum(y, 2 * ib + 3));
        }
        const int sumi = _mm512_reduce_add_epi32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * ((float)sumi + TPORT_IQ1S_DELTA * (float)sumi1);
    }
    *s = sum;
}

/* IQ1_M, two groups of 32 per step: the four qh bytes of a step give each
 * entry's three high index bits (nibble l of their u32) and each 8
 * elements' delta sign (bit 3 or 7 of qh byte l / 2), spread to a byte
 * mask with vpshufb; the 3-bit scales, one per 16, shifted per lane. */
static void dot_iq1_m(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i hshift = _mm512_setr_epi64(0, 4, 8, 12, 16, 20, 24, 28);
    const __m512i sshift = _mm512_setr_epi64(0, 0, 0x0003000300030003LL, 0x0003000300030003LL, 0x0006000600060006LL,
                                             0x0006000600060006LL, 0x0009000900090009LL, 0x0009000900090009LL);
    const __m512i lane_byte = _mm512_setr_epi64(0, 0, 0x0101010101010101LL, 0x0101010101010101LL, 0x0202020202020202LL,
                                                0x0202020202020202LL, 0x0303030303030303LL, 0x0303030303030303LL);
    const __m512i delta_bit = _mm512_set1_epi64((long long)0x8080808080808080ULL);
    const __m512i delta_bits = _mm512_mask_blend_epi64(0x55, delta_bit, _mm512_set1_epi64(0x0808080808080808LL));
    const __m512i ones = _mm512_set1_epi8(1);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 56, y += BQ8_K) {
        prefetch_ahead(x);
        unsigned sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = u16_at(x + 48 + 2 * k);
        const unsigned d16 = (sc[0] >> 12) | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000);
        const uint8_t dbytes[2] = {(uint8_t)d16, (uint8_t)(d16 >> 8)};
        __m512i acc1 = _mm512_setzero_si512(), acc2 = _mm512_setzero_si512();
        for (int ib = 0; ib < 8; ib += 2) {
            const uint32_t qh = cpuq_u32(x + 32 + 2 * ib);
            const __m512i hi = _mm512_slli_epi64(
                _mm512_and_si512(_mm512_srlv_epi64(_mm512_set1_epi64(qh), hshift), _mm512_set1_epi64(7)), 8);
            const __m512i idx = _mm512_or_si512(_mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i *)(x + 4 * ib))), hi);
            const __m512i y8 = q8k_load64(y, 32 * ib);
            const __mmask64 dneg = _mm512_test_epi8_mask(_mm512_shuffle_epi8(_mm512_set1_epi32((int)qh), lane_byte), delta_bits);
            const __m512i dsum = _mm512_maddubs_epi16(ones, negate_where(y8, dneg));
            const __m512i s3 = _mm512_and_si512(_mm512_srlv_epi16(_mm512_set1_epi16((short)sc[ib / 2]), sshift), _mm512_set1_epi16(7));
            const __m512i scales = _mm512_add_epi16(_mm512_add_epi16(s3, s3), _mm512_set1_epi16(1));
            acc1 = madd_acc(acc1, iq1_dot64(idx, y8), scales);
            acc2 = madd_acc(acc2, dsum, scales);
        }
        const int sumi1 = _mm512_reduce_add_epi32(acc1), sumi2 = _mm512_reduce_add_epi32(acc2);
        sum += cpuq_half(dbytes) * cpuq_f32(y) * ((float)sumi1 + TPORT_IQ1S_DELTA * (float)sumi2);
    }
    *s = sum;
}

CPUQ_KERNEL_TABLE(avx512_iq_kernel,
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

CPUQ_NO_KERNELS(avx512_iq_kernel)

#endif
