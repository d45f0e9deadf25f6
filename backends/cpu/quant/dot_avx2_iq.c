/* AVX2 + FMA dot products of the lattice IQ types (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) and the ternary TQ1_0 / TQ2_0 with Q8_K
 * activations.
 *
 * Per super-block they form exactly the integer sums of the scalar kernels
 * (dot_iq_scalar.c, ggml's integers) and then do the same float operations
 * in the same order, written as the same expressions: the results are bit
 * for bit the scalar kernels' (which the arch references were made
 * against), not ggml's AVX2 lane-wise float order.
 *
 * Grid entries are looked up 4 (8 for the 4-byte IQ3 entries) per 32
 * elements and assembled in a register, as ggml does; signs become byte
 * masks with a shuffle and a compare and negate the activations; the
 * magnitudes (unsigned) multiply with maddubs.  No int16 sum can
 * saturate: grid magnitudes are at most 62, pairs at most 2 * 62 * 127.
 * Like every x86 Q8_K kernel (ggml's too), these need activations in
 * [-127, 127], what Q8_K quantizers write: -128 has no negation in 8 bits. */
#include "quant_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "avx2_util.h"

#include "../../../src/quant/iq_grids.h"

static __m256i q8k_load(const uint8_t *y, int off) { return _mm256_loadu_si256((const __m256i *)(y + Q8K_QS + off)); }
static unsigned u16_at(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

static int hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

/* y negated where the byte of `neg` is 0xFF. */
static __m256i negate_where(__m256i y, __m256i neg) { return _mm256_sub_epi8(_mm256_xor_si256(y, neg), neg); }

/* ggml's sign rule (iq_signs8) on the four 7-bit sign indices in the low
 * bytes of v's 32-bit lanes: bit 7 becomes the parity of bits 0..6.  The
 * parity of the low nibble of p ^ (p >> 4) is that of p; a 16-entry table
 * gives it (pshufb). */
static __m128i full_signs(__m128i p) {
    const __m128i odd = _mm_setr_epi8(0, -128, -128, 0, -128, 0, 0, -128, -128, 0, 0, -128, 0, -128, -128, 0);
    return _mm_or_si128(p, _mm_shuffle_epi8(odd, _mm_xor_si128(p, _mm_srli_epi32(p, 4))));
}

/* 32 bytes, 0xFF where element i (bit i % 8 of sign byte i / 8) is
 * negative; the four sign bytes are bytes 0, 4, 8, 12 of s. */
static __m256i sign_mask_dwords(__m128i s) {
    const __m256i spread = _mm256_setr_epi64x(0, 0x0404040404040404LL, 0x0808080808080808LL, 0x0c0c0c0c0c0c0c0cLL);
    const __m256i bit = _mm256_set1_epi64x(INT64_C(0x8040201008040201));
    const __m256i v = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(s), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* IQ2_XXS and IQ3_XXS: the sign mask of a u32 holding four 7-bit sign
 * indices (bits 0, 7, 14, 21). */
static __m256i sign_mask_aux(uint32_t aux) {
    const __m128i p = _mm_and_si128(_mm_srlv_epi32(_mm_set1_epi32((int)aux), _mm_setr_epi32(0, 7, 14, 21)),
                                    _mm_set1_epi32(127));
    return sign_mask_dwords(full_signs(p));
}

/* Four IQ2 grid entries (8 magnitudes each) for 32 elements. */
static __m256i grid4(const uint64_t *grid, unsigned a, unsigned b, unsigned c, unsigned d) {
    return _mm256_setr_epi64x((long long)grid[a], (long long)grid[b], (long long)grid[c], (long long)grid[d]);
}

/* Eight IQ3 grid entries (4 magnitudes each) for 32 elements. */
static __m256i grid8(const uint32_t *grid, const unsigned idx[8]) {
    return _mm256_setr_epi32((int)grid[idx[0]], (int)grid[idx[1]], (int)grid[idx[2]], (int)grid[idx[3]],
                             (int)grid[idx[4]], (int)grid[idx[5]], (int)grid[idx[6]], (int)grid[idx[7]]);
}

/* Unsigned magnitudes times signed activations, pairs summed, times int16
 * scales (the low 16 elements' and the high 16's), to int32 lanes. */
static __m256i scaled_dot(__m256i mag, __m256i y, __m256i scales) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(mag, y), scales);
}

static void dot_iq2_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = x + 2 + 8 * ib;
            const uint32_t aux = cpuq_u32(q + 4);
            const __m256i mag = grid4(tport_iq2xxs_grid, q[0], q[1], q[2], q[3]);
            const __m256i y8 = negate_where(q8k_load(y, 32 * ib), sign_mask_aux(aux));
            acc = _mm256_add_epi32(acc, scaled_dot(mag, y8, _mm256_set1_epi16((short)(2 * (aux >> 28) + 1))));
        }
        const int bsum = hsum_i32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

/* Two 4-bit scales of a byte as 2s+1: the low nibble for elements 0..15,
 * the high one for 16..31. */
static __m256i nibble_scales(uint8_t sc) { return avx2_scale_pair(2 * (sc & 0xf) + 1, 2 * (sc >> 4) + 1); }

static void dot_iq2_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 74, y += BQ8_K) {
        const uint8_t *sc = x + 66;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = x + 2 + 8 * ib;
            const __m128i p = _mm_srli_epi32(_mm_cvtepu16_epi32(_mm_loadl_epi64((const __m128i *)q)), 9);
            const __m256i mag = grid4(tport_iq2xs_grid, u16_at(q) & 511, u16_at(q + 2) & 511, u16_at(q + 4) & 511,
                                      u16_at(q + 6) & 511);
            const __m256i y8 = negate_where(q8k_load(y, 32 * ib), sign_mask_dwords(full_signs(p)));
            acc = _mm256_add_epi32(acc, scaled_dot(mag, y8, nibble_scales(sc[ib])));
        }
        const int bsum = hsum_i32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

static void dot_iq2_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 82, y += BQ8_K) {
        const uint8_t *qh = x + 66, *sc = x + 74;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x + 2 + 4 * ib;
            const unsigned h = qh[ib];
            const __m256i mag = grid4(tport_iq2s_grid, qs[0] | (h << 8 & 0x300), qs[1] | (h << 6 & 0x300),
                                      qs[2] | (h << 4 & 0x300), qs[3] | (h << 2 & 0x300));
            /* explicit sign bits: bit i of the u32 is element i's */
            const __m256i y8 = negate_where(q8k_load(y, 32 * ib), avx2_bits_to_bytes(cpuq_u32(x + 34 + 4 * ib)));
            acc = _mm256_add_epi32(acc, scaled_dot(mag, y8, nibble_scales(sc[ib])));
        }
        const int bsum = hsum_i32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

static void dot_iq3_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 98, y += BQ8_K) {
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q3 = x + 2 + 8 * ib;
            const uint32_t aux = cpuq_u32(x + 66 + 4 * ib);
            const unsigned idx[8] = {q3[0], q3[1], q3[2], q3[3], q3[4], q3[5], q3[6], q3[7]};
            const __m256i mag = grid8(tport_iq3xxs_grid, idx);
            const __m256i y8 = negate_where(q8k_load(y, 32 * ib), sign_mask_aux(aux));
            acc = _mm256_add_epi32(acc, scaled_dot(mag, y8, _mm256_set1_epi16((short)(2 * (aux >> 28) + 1))));
        }
        const int bsum = hsum_i32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.25f * sum;
}

static void dot_iq3_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 110, y += BQ8_K) {
        const uint8_t *qh = x + 66, *sc = x + 106;
        __m256i acc = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x + 2 + 8 * ib;
            const unsigned h = qh[ib];
            /* entry k's ninth index bit is bit k of qh[ib] */
            const unsigned idx[8] = {qs[0] | (h << 8 & 256), qs[1] | (h << 7 & 256), qs[2] | (h << 6 & 256),
                                     qs[3] | (h << 5 & 256), qs[4] | (h << 4 & 256), qs[5] | (h << 3 & 256),
                                     qs[6] | (h << 2 & 256), qs[7] | (h << 1 & 256)};
            const __m256i mag = grid8(tport_iq3s_grid, idx);
            const __m256i y8 = negate_where(q8k_load(y, 32 * ib), avx2_bits_to_bytes(cpuq_u32(x + 74 + 4 * ib)));
            const int ls = 2 * (sc[ib / 2] >> 4 * (ib % 2) & 0xf) + 1;
            acc = _mm256_add_epi32(acc, scaled_dot(mag, y8, _mm256_set1_epi16((short)ls)));
        }
        const int bsum = hsum_i32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = sum;
}

/* Four signed IQ1 grid entries ({-1, 0, 1} bytes) against 32 activations,
 * as 16 int16 pair sums. */
static __m256i iq1_dot(unsigned a, unsigned b, unsigned c, unsigned d, __m256i y) {
    return avx2_dot_i8_i16(grid4(tport_iq1s_grid, a, b, c, d), y);
}

static void dot_iq1_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 50, y += BQ8_K) {
        __m256i acc = _mm256_setzero_si256();
        int sumi1 = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x + 2 + 4 * ib;
            const unsigned qh = u16_at(x + 34 + 2 * ib);
            const int ls = 2 * (qh >> 12 & 7) + 1, delta = qh & 0x8000 ? -1 : 1;
            const __m256i p = iq1_dot(qs[0] | (qh << 8 & 0x700), qs[1] | (qh << 5 & 0x700), qs[2] | (qh << 2 & 0x700),
                                      qs[3] | (qh >> 1 & 0x700), q8k_load(y, 32 * ib));
            acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16((short)ls)));
            /* the delta term from the group sums, once per 32 */
            sumi1 += ls * delta * (cpuq_q8k_bsum(y, 2 * ib) + cpuq_q8k_bsum(y, 2 * ib + 1));
        }
        const int sumi = hsum_i32(acc);
        sum += cpuq_half(x) * cpuq_f32(y) * ((float)sumi + TPORT_IQ1S_DELTA * (float)sumi1);
    }
    *s = sum;
}

static void dot_iq1_m(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i delta_bits = _mm256_setr_epi64x(0x8, 0x80, 0x800, 0x8000);
    const __m256i ones = _mm256_set1_epi8(1);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 56, y += BQ8_K) {
        unsigned sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = u16_at(x + 48 + 2 * k);
        const unsigned d16 = (sc[0] >> 12) | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000);
        const uint8_t dbytes[2] = {(uint8_t)d16, (uint8_t)(d16 >> 8)};
        __m256i acc1 = _mm256_setzero_si256(), acc2 = _mm256_setzero_si256();
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *qs = x + 4 * ib, *qh = x + 32 + 2 * ib;
            const __m256i y8 = q8k_load(y, 32 * ib);
            const __m256i p = iq1_dot(qs[0] | (qh[0] << 8 & 0x700), qs[1] | (qh[0] << 4 & 0x700),
                                      qs[2] | (qh[1] << 8 & 0x700), qs[3] | (qh[1] << 4 & 0x700), y8);
            /* the delta's sign per 8 elements: bits 3 and 7 of each qh byte */
            const __m256i dm = _mm256_and_si256(_mm256_set1_epi64x((long long)u16_at(qh)), delta_bits);
            const __m256i dsum = _mm256_maddubs_epi16(ones, negate_where(y8, _mm256_cmpeq_epi64(dm, delta_bits)));
            const int sh = 6 * (ib % 2);
            const __m256i scales = avx2_scale_pair(2 * (sc[ib / 2] >> sh & 7) + 1, 2 * (sc[ib / 2] >> (sh + 3) & 7) + 1);
            acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(p, scales));
            acc2 = _mm256_add_epi32(acc2, _mm256_madd_epi16(dsum, scales));
        }
        const int sumi1 = hsum_i32(acc1), sumi2 = hsum_i32(acc2);
        sum += cpuq_half(dbytes) * cpuq_f32(y) * ((float)sumi1 + TPORT_IQ1S_DELTA * (float)sumi2);
    }
    *s = sum;
}

/* Bytes times 3 and times 9, modulo 256 (AVX2 has no byte multiply). */
static __m256i mul3(__m256i q) { return _mm256_add_epi8(q, _mm256_add_epi8(q, q)); }
static __m256i mul9(__m256i q) {
    return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(q, 3), _mm256_set1_epi8((char)0xF8)), q);
}

/* The leading trit of each byte, (3 q) >> 8 in {0, 1, 2}: with
 * q' = max(q - 1, 0), avg(q', avg(q', 0)) is floor(3q / 2) >> 1 rounded so
 * that its top two bits are floor(3q / 256) for every byte (ggml's trick;
 * the test checks all 256). */
static __m256i top_trit(__m256i q) {
    const __m256i z = _mm256_setzero_si256();
    const __m256i q1 = _mm256_subs_epu8(q, _mm256_set1_epi8(1));
    return _mm256_and_si256(_mm256_srli_epi16(_mm256_avg_epu8(q1, _mm256_avg_epu8(q1, z)), 6), _mm256_set1_epi8(3));
}

/* TQ1_0: the digits d (0..2 for -1..1) times the activations, minus the
 * activations' sum: the scalar kernel's integer. */
static void dot_tq1_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i one16 = _mm256_set1_epi16(1);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 54, y += BQ8_K) {
        /* int16 lanes: at most 8 pair sums of 2 * 2 * 127 each */
        __m256i acc = _mm256_setzero_si256();
        /* bytes 0..31: digit l of byte j is element 32 l + j */
        const __m256i a0 = _mm256_loadu_si256((const __m256i *)x), a1 = mul3(a0), a2 = mul9(a0);
        const __m256i a[5] = {a0, a1, a2, mul9(a1), mul9(a2)};
        for (int l = 0; l < 5; l++)
            acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(top_trit(a[l]), q8k_load(y, 32 * l)));
        /* bytes 32..47: digit l of byte j is element 160 + 16 l + j; qh:
         * digit l of byte j is element 240 + 4 l + j */
        const __m256i b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(x + 32)));
        const __m256i b01 = _mm256_blend_epi32(b, mul3(b), 0xF0), b23 = mul9(b01);
        const __m256i h = _mm256_set1_epi32((int)cpuq_u32(x + 48)), h3 = mul3(h);
        const __m256i h01 = _mm256_blend_epi32(h, h3, 0x2), h23 = _mm256_blend_epi32(mul9(h), mul9(h3), 0x8);
        const __m256i hq = _mm256_blend_epi32(h01, h23, 0xC); /* dwords 0..3: qh times 1, 3, 9, 27 */
        const __m256i b4h = _mm256_permute2x128_si256(mul9(b23), hq, 0x20); /* b*81 (low lane of b23*9), qh */
        acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(top_trit(b01), q8k_load(y, 160)));
        acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(top_trit(b23), q8k_load(y, 192)));
        acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(top_trit(b4h), q8k_load(y, 224)));
        acc = _mm256_sub_epi16(acc, _mm256_loadu_si256((const __m256i *)(y + Q8K_BSUMS)));
        const int isum = hsum_i32(_mm256_madd_epi16(acc, one16));
        sum += (float)isum * (cpuq_half(x + 52) * cpuq_f32(y));
    }
    *s = sum;
}

/* TQ2_0: codes 0..2 (3 in a corrupt block counts as 3, as in the scalar
 * kernel) times the activations, minus the activations' sum. */
static void dot_tq2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i m3 = _mm256_set1_epi8(3), one16 = _mm256_set1_epi16(1);
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        /* int16 lanes: at most 8 pair sums of 2 * 3 * 127 each, minus a bsum */
        __m256i acc = _mm256_setzero_si256();
        for (int j = 0; j < 64; j += 32) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x + j));
            for (int l = 0; l < 4; l++) {
                const __m256i code = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * l), m3);
                acc = _mm256_add_epi16(acc, _mm256_maddubs_epi16(code, q8k_load(y, 4 * j + 32 * l)));
            }
        }
        acc = _mm256_sub_epi16(acc, _mm256_loadu_si256((const __m256i *)(y + Q8K_BSUMS)));
        const int isum = hsum_i32(_mm256_madd_epi16(acc, one16));
        sum += (float)isum * (cpuq_f32(y) * cpuq_half(x + 64));
    }
    *s = sum;
}

CPUQ_KERNEL_TABLE(avx2_iq_kernel,
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

CPUQ_NO_KERNELS(avx2_iq_kernel)

#endif
