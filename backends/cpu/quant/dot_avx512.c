/* AVX-512 dot products: Q4_0, Q5_0 and Q8_0 (x Q8_0), Q4_1 and Q5_1 (x
 * Q8_1) four 32-element blocks per step, two per 512-bit register (VNNI's
 * dpbusd when compiled with it, else maddubs + madd), the eight f16 scales
 * converted together; Q4_K, Q5_K and Q6_K
 * (x Q8_K) 64 elements per step, the small scales folded in with madd
 * (dpwssd with VNNI).  The table types are in dot_avx512_lut.c; other
 * types use the AVX2 kernels compiled into the same variant.  Only the
 * float summation order differs from the scalar code (Q5_K and Q6_K:
 * none from the AVX2 kernels).  Each kernel prefetches its row
 * CPUQ(stream_ahead) bytes ahead: generation reads every weight row once
 * per token, and without it these kernels waited on memory (without it
 * Q6_K took a third more time on the Xeon of run 35). */
#include "quant_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX2__) && defined(__FMA__)
#include "avx2_util.h"
#include "k4_x86_util.h"
#include "scales4_x86.h"

/* Signed bytes x signed bytes -> 16 int32 sums of 4 products.  Exact as
 * long as no x byte is -128 (the weights here are in [-8, 7] or [-127, 127]). */
static __m512i dot_i8x64(__m512i x, __m512i y) {
    const __m512i ax = _mm512_abs_epi8(x);
    const __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), ax, sy);
#else
    return _mm512_madd_epi16(_mm512_maddubs_epi16(ax, sy), _mm512_set1_epi16(1));
#endif
}

static __m512i pair(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

/* 32 bytes at a, then 32 bytes at b. */
static __m512i load_pair(const uint8_t *a, const uint8_t *b) {
    return pair(_mm256_loadu_si256((const __m256i *)a), _mm256_loadu_si256((const __m256i *)b));
}

/* d_x * d_y of four consecutive 32-element blocks (f16 scales first in
 * blocks of bx and by bytes) as two registers: 8 lanes of block 0, 8 of
 * block 1; then blocks 2 and 3. */
static void spread_scales4(__m128 d4, __m512 *d01, __m512 *d23) {
    const __m512 d = _mm512_castps128_ps512(d4);
    *d01 = _mm512_permutexvar_ps(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), d);
    *d23 = _mm512_permutexvar_ps(_mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3), d);
}

static void block_scales4(const uint8_t *x, int bx, const uint8_t *y, int by, __m512 *d01, __m512 *d23) {
    spread_scales4(x86_scales4(x, bx, y, by), d01, d23);
}

/* The nibbles of two Q4_0 blocks (16 bytes each at a and b) as unsigned
 * 0..15 in element order: a's low nibbles (elements 0..15), a's high
 * (16..31), then b's. */
static __m512i q4_0_nibbles2(const uint8_t *a, const uint8_t *b) {
    const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                               _mm_loadu_si128((const __m128i *)b), 1);
    const __m512i v = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), _mm512_castsi256_si512(ab));
    /* shift the second copy of each 16 bytes (words 8..15 and 24..31) */
    return _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFF00FF00u, v, 4), _mm512_set1_epi8(0x0F));
}

/* (q - off) . y for unsigned q in 0..31 and off 8 or 16, as 16 int32 sums
 * of 4 products: q . y - off * (sum of y), with q as the unsigned operand. */
static __m512i dot_off_i8x64(__m512i q, __m512i y, int off) {
    const __m512i o = _mm512_set1_epi8((char)off);
#if defined(__AVX512VNNI__)
    const __m512i z = _mm512_setzero_si512();
    return _mm512_sub_epi32(_mm512_dpbusd_epi32(z, q, y), _mm512_dpbusd_epi32(z, o, y));
#else
    /* pairs: |(q - off) y| * 2 <= 2 * 16 * 128, no int16 overflow */
    const __m512i p = _mm512_sub_epi16(_mm512_maddubs_epi16(q, y), _mm512_maddubs_epi16(o, y));
    return _mm512_madd_epi16(p, _mm512_set1_epi16(1));
#endif
}

static __m512i dot_q4_i8x64(__m512i q, __m512i y) { return dot_off_i8x64(q, y, 8); }

/* q . y for unsigned q in 0..31 (the Q4_1/Q5_1 quants, whose offset is the
 * block's min, added apart), as 16 int32 sums of 4 products. */
static __m512i dot_u8x64(__m512i q, __m512i y) {
#if defined(__AVX512VNNI__)
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, y);
#else
    /* pairs: 2 * 31 * 128 < 32768 */
    return _mm512_madd_epi16(_mm512_maddubs_epi16(q, y), _mm512_set1_epi16(1));
#endif
}

/* The 5-bit quants (0..31) of two Q5_0/Q5_1 blocks in element order: the
 * nibbles as Q4_0's, plus 16 where the block's 32-bit qh has the element's
 * bit; the two qh words together are one byte mask. */
static __m512i q5_quants2(const uint8_t *qh_a, const uint8_t *qs_a, const uint8_t *qh_b, const uint8_t *qs_b) {
    const __m512i nib = q4_0_nibbles2(qs_a, qs_b);
    const __mmask64 hi = (__mmask64)cpuq_u32(qh_a) | (__mmask64)cpuq_u32(qh_b) << 32;
    return _mm512_mask_add_epi8(nib, hi, nib, _mm512_set1_epi8(16));
}

/* Scalar tail of the 5-bit kernels: sum of q * y over one block, q the
 * unsigned 5-bit quant (qh bit 4) minus off. */
static int q5_block_isum(const uint8_t *qh, const uint8_t *qs, const int8_t *y, int off) {
    const uint32_t h = cpuq_u32(qh);
    int isum = 0;
    for (int j = 0; j < 16; j++) {
        const int lo = (qs[j] & 15) | (int)((h >> j) & 1) << 4, hi = (qs[j] >> 4) | (int)((h >> (j + 16)) & 1) << 4;
        isum += (lo - off) * y[j] + (hi - off) * y[j + 16];
    }
    return isum;
}

/* Q4_0 and Q8_0: four blocks per step, two per register, float
 * accumulators across blocks and one horizontal sum at the end. */
static void dot_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, x += 4 * BQ4_0, y += 4 * BQ8_0) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 2); /* 72 bytes a step */
        __m512 d01, d23;
        block_scales4(x, BQ4_0, y, BQ8_0, &d01, &d23);
        const __m512i p01 =
            dot_q4_i8x64(q4_0_nibbles2(x + 2, x + BQ4_0 + 2), load_pair(y + 2, y + BQ8_0 + 2));
        const __m512i p23 = dot_q4_i8x64(q4_0_nibbles2(x + 2 * BQ4_0 + 2, x + 3 * BQ4_0 + 2),
                                         load_pair(y + 2 * BQ8_0 + 2, y + 3 * BQ8_0 + 2));
        acc0 = _mm512_fmadd_ps(d01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(d23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for (; b < nb; b++, x += BQ4_0, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += ((x[2 + j] & 15) - 8) * (int8_t)y[2 + j] + ((x[2 + j] >> 4) - 8) * (int8_t)y[2 + j + 16];
        sum += (float)isum * (cpuq_half(x) * cpuq_half(y));
    }
    *s = sum;
}

/* Q5_0: four blocks per step as Q4_0, the fifth bit added under a byte
 * mask and the offset 16 taken off through the activations' sums. */
static void dot_q5_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, x += 4 * BQ5_0, y += 4 * BQ8_0) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 2); /* 88 bytes a step */
        __m512 d01, d23;
        block_scales4(x, BQ5_0, y, BQ8_0, &d01, &d23);
        const __m512i q01 = q5_quants2(x + 2, x + 6, x + BQ5_0 + 2, x + BQ5_0 + 6);
        const __m512i q23 = q5_quants2(x + 2 * BQ5_0 + 2, x + 2 * BQ5_0 + 6, x + 3 * BQ5_0 + 2, x + 3 * BQ5_0 + 6);
        const __m512i p01 = dot_off_i8x64(q01, load_pair(y + 2, y + BQ8_0 + 2), 16);
        const __m512i p23 = dot_off_i8x64(q23, load_pair(y + 2 * BQ8_0 + 2, y + 3 * BQ8_0 + 2), 16);
        acc0 = _mm512_fmadd_ps(d01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(d23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for (; b < nb; b++, x += BQ5_0, y += BQ8_0)
        sum += (float)q5_block_isum(x + 2, x + 6, (const int8_t *)(y + 2), 16) * (cpuq_half(x) * cpuq_half(y));
    *s = sum;
}

/* Q4_1 and Q5_1 x Q8_1: unsigned quants straight into dpbusd; the mins'
 * term m_x * s_y of four blocks is one multiply-add of their f16 pairs
 * (s_y = d_y * sum(q_y), the Q8_1 block's second field). */
static void dot_q5_1(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, x += 4 * BQ5_1, y += 4 * BQ8_1) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 2); /* 96 bytes a step */
        __m512 d01, d23;
        block_scales4(x, BQ5_1, y, BQ8_1, &d01, &d23);
        acc_min = _mm_add_ps(acc_min, x86_scales4(x + 2, BQ5_1, y + 2, BQ8_1));
        const __m512i q01 = q5_quants2(x + 4, x + 8, x + BQ5_1 + 4, x + BQ5_1 + 8);
        const __m512i q23 = q5_quants2(x + 2 * BQ5_1 + 4, x + 2 * BQ5_1 + 8, x + 3 * BQ5_1 + 4, x + 3 * BQ5_1 + 8);
        const __m512i p01 = dot_u8x64(q01, load_pair(y + 4, y + BQ8_1 + 4));
        const __m512i p23 = dot_u8x64(q23, load_pair(y + 2 * BQ8_1 + 4, y + 3 * BQ8_1 + 4));
        acc0 = _mm512_fmadd_ps(d01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(d23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + k4_hsum128(acc_min);
    for (; b < nb; b++, x += BQ5_1, y += BQ8_1)
        sum += (cpuq_half(x) * cpuq_half(y)) * (float)q5_block_isum(x + 4, x + 8, (const int8_t *)(y + 4), 0) +
               cpuq_half(x + 2) * cpuq_half(y + 2);
    *s = sum;
}

static void dot_q4_1(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, x += 4 * BQ4_1, y += 4 * BQ8_1) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 2); /* 80 bytes a step */
        __m512 d01, d23;
        block_scales4(x, BQ4_1, y, BQ8_1, &d01, &d23);
        acc_min = _mm_add_ps(acc_min, x86_scales4(x + 2, BQ4_1, y + 2, BQ8_1));
        const __m512i p01 = dot_u8x64(q4_0_nibbles2(x + 4, x + BQ4_1 + 4), load_pair(y + 4, y + BQ8_1 + 4));
        const __m512i p23 = dot_u8x64(q4_0_nibbles2(x + 2 * BQ4_1 + 4, x + 3 * BQ4_1 + 4),
                                      load_pair(y + 2 * BQ8_1 + 4, y + 3 * BQ8_1 + 4));
        acc0 = _mm512_fmadd_ps(d01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(d23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1)) + k4_hsum128(acc_min);
    for (; b < nb; b++, x += BQ4_1, y += BQ8_1) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += (x[4 + j] & 15) * (int8_t)y[4 + j] + (x[4 + j] >> 4) * (int8_t)y[4 + j + 16];
        sum += (cpuq_half(x) * cpuq_half(y)) * (float)isum + cpuq_half(x + 2) * cpuq_half(y + 2);
    }
    *s = sum;
}

static void dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, x += 4 * BQ8_0, y += 4 * BQ8_0) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 3); /* 136 bytes a step */
        __m512 d01, d23;
        block_scales4(x, BQ8_0, y, BQ8_0, &d01, &d23);
        const __m512i p01 = dot_i8x64(load_pair(x + 2, x + BQ8_0 + 2), load_pair(y + 2, y + BQ8_0 + 2));
        const __m512i p23 = dot_i8x64(load_pair(x + 2 * BQ8_0 + 2, x + 3 * BQ8_0 + 2),
                                      load_pair(y + 2 * BQ8_0 + 2, y + 3 * BQ8_0 + 2));
        acc0 = _mm512_fmadd_ps(d01, _mm512_cvtepi32_ps(p01), acc0);
        acc1 = _mm512_fmadd_ps(d23, _mm512_cvtepi32_ps(p23), acc1);
    }
    float sum = _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
    for (; b < nb; b++, x += BQ8_0, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 32; j++)
            isum += (int8_t)x[2 + j] * (int8_t)y[2 + j];
        sum += (float)isum * (cpuq_half(x) * cpuq_half(y));
    }
    *s = sum;
}

/* Word indices for _mm512_permutexvar_epi16: 16 x scale 2c, then 16 x 2c+1. */
static __m512i q4k_scale_sel(int c) {
    const int lo = 2 * c * 0x10001, hi = (2 * c + 1) * 0x10001;
    return _mm512_setr_epi32(lo, lo, lo, lo, lo, lo, lo, lo, hi, hi, hi, hi, hi, hi, hi, hi);
}

/* Elements 64c .. 64c+63 of a Q4_K block times the activations, as 32
 * int16 pair sums (group 2c in the lower half, 2c+1 in the upper). */
static __m512i q4k_products(const uint8_t *x, const uint8_t *y, int c) {
    const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x + 16 + 32 * c)));
    const __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(bits, 0xFFFF0000u, bits, 4), _mm512_set1_epi8(0x0F));
    /* unsigned 0..15 x signed: no saturation */
    return _mm512_maddubs_epi16(q, _mm512_loadu_si512((const void *)(y + Q8K_QS + 64 * c)));
}

/* acc + p . scales (int16 pairs to int32). */
static __m512i madd_acc(__m512i acc, __m512i p, __m512i scales) {
#if defined(__AVX512VNNI__)
    return _mm512_dpwssd_epi32(acc, p, scales);
#else
    return _mm512_add_epi32(acc, _mm512_madd_epi16(p, scales));
#endif
}

/* Q4_K: per block four steps of 64 elements: the 32 bytes of nibbles in
 * both halves of a register, the upper half shifted (low nibbles = group
 * 2c, high nibbles = group 2c+1), maddubs against the activations, the
 * groups' 6-bit scales folded in with madd (dpwssd with VNNI).  Scales and
 * mins are unpacked with 32-bit masks, the mins' term is one madd against
 * the Q8_K group sums, and d, dmin are converted together. */
static void dot_q4_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i sel0 = q4k_scale_sel(0), sel1 = q4k_scale_sel(1), sel2 = q4k_scale_sel(2), sel3 = q4k_scale_sel(3);
    __m512 acc = _mm512_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ4_K, y += BQ8_K) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 3); /* 144 bytes a block */
        const __m128i scmn = k4_scales_mins(x + 4);
        const __m128 d = k4_block_scales(x, y);
        acc_min = _mm_fmadd_ps(_mm_shuffle_ps(d, d, 0x55), _mm_cvtepi32_ps(k4_min_products(scmn, y)), acc_min);
        const __m512i sc = _mm512_castsi128_si512(k4_scales_i16(scmn)); /* only words 0..7 are read */
        /* two independent integer chains, joined at the end */
        __m512i i0 = madd_acc(_mm512_setzero_si512(), q4k_products(x, y, 0), _mm512_permutexvar_epi16(sel0, sc));
        __m512i i1 = madd_acc(_mm512_setzero_si512(), q4k_products(x, y, 1), _mm512_permutexvar_epi16(sel1, sc));
        i0 = madd_acc(i0, q4k_products(x, y, 2), _mm512_permutexvar_epi16(sel2, sc));
        i1 = madd_acc(i1, q4k_products(x, y, 3), _mm512_permutexvar_epi16(sel3, sc));
        acc = _mm512_fmadd_ps(_mm512_set1_ps(_mm_cvtss_f32(d)), _mm512_cvtepi32_ps(_mm512_add_epi32(i0, i1)), acc);
    }
    *s = _mm512_reduce_add_ps(acc) - k4_hsum128(acc_min);
}

/* Word indices for _mm512_permutexvar_epi16: the scale of Q6_K group
 * 4s + j (16 elements) in every word of 128-bit lane j. */
static __m512i q6k_scale_sel(int s) {
    const int g0 = 4 * s * 0x10001, g1 = (4 * s + 1) * 0x10001, g2 = (4 * s + 2) * 0x10001,
              g3 = (4 * s + 3) * 0x10001;
    return _mm512_setr_epi32(g0, g0, g0, g0, g1, g1, g1, g1, g2, g2, g2, g2, g3, g3, g3, g3);
}

/* (A & C) | B for _mm512_ternarylogic_epi32 (A = 0xF0, B = 0xCC, C = 0xAA). */
#define TERN_A_AND_C_OR_B 0xEC

/* The sum of the 8 low and the 8 high int32 lanes, lane for lane. */
static __m256i fold_i32(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

/* Q6_K: 64 elements a step.  The 64 bytes of low bits of half k
 * (elements 128k ..) are one load: their low nibbles are elements
 * 128k + [0, 64), their high nibbles 128k + [64, 128); the 32 bytes of
 * high bits are loaded into both halves, the upper half shifted by 2, so
 * that one mask puts the right 2 bits at bits 4-5 of every byte.  The
 * 16 small scales are widened once and put in place per step with one
 * word permute, folded in with dpwssd (madd with no VNNI).  The 8 int32
 * lane sums per super-block (both halves added) and the offsets are those
 * of the AVX2 kernel (avx2_q6k_offsets), so the result is the same float
 * for float. */
static void dot_q6_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30);
    const __m512i sel[4] = {q6k_scale_sel(0), q6k_scale_sel(1), q6k_scale_sel(2), q6k_scale_sel(3)};
    __m256 acc = _mm256_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ6_K, y += BQ8_K) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 4); /* 210 bytes a block */
        const int8_t *sc8 = (const int8_t *)(x + 192);
        const __m512i sc = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)sc8)));
        const float d = cpuq_f32(y) * cpuq_half(x + 208);
        __m512i i0 = _mm512_setzero_si512(), i1 = _mm512_setzero_si512();
        for (int k = 0; k < 2; k++) {
            const __m512i ab = _mm512_loadu_si512((const void *)(x + 64 * k));
            __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(x + 128 + 32 * k)));
            h = _mm512_mask_srli_epi16(h, 0xFFFF0000u, h, 2);
            /* unsigned 0..63: nibble | 2 high bits << 4 */
            const __m512i q01 =
                _mm512_ternarylogic_epi32(ab, _mm512_and_si512(_mm512_slli_epi16(h, 4), m30), m4, TERN_A_AND_C_OR_B);
            const __m512i q23 =
                _mm512_ternarylogic_epi32(_mm512_srli_epi16(ab, 4), _mm512_and_si512(h, m30), m4, TERN_A_AND_C_OR_B);
            /* unsigned 0..63 x signed: 2*63*127 < 32767 */
            const __m512i p01 = _mm512_maddubs_epi16(q01, _mm512_loadu_si512((const void *)(y + Q8K_QS + 128 * k)));
            const __m512i p23 = _mm512_maddubs_epi16(q23, _mm512_loadu_si512((const void *)(y + Q8K_QS + 128 * k + 64)));
            i0 = madd_acc(i0, p01, _mm512_permutexvar_epi16(sel[2 * k], sc));
            i1 = madd_acc(i1, p23, _mm512_permutexvar_epi16(sel[2 * k + 1], sc));
        }
        const __m256i lanes = _mm256_sub_epi32(fold_i32(_mm512_add_epi32(i0, i1)), avx2_q6k_offsets(sc8, y));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);
    }
    *s = avx2_hsum_ps(acc);
}

/* Q5_K: as Q4_K, 64 elements a step (the low nibbles of 32 bytes are
 * group 2c, the high ones group 2c+1), the fifth bit added under a byte
 * mask from the 32 bytes of high bits, loaded into both halves with the
 * upper half shifted by 1 (bit 2c of a byte is group 2c's, bit 2c+1 group
 * 2c+1's).  Integer lane sums, the per-block FMA and the mins' float sum
 * are the AVX2 kernel's (dot_avx2_kquants.c), so the result is the same
 * float for float; the mins' integer sum comes from k4_min_products. */
static void dot_q5_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i sel[4] = {q4k_scale_sel(0), q4k_scale_sel(1), q4k_scale_sel(2), q4k_scale_sel(3)};
    const __m512i m4 = _mm512_set1_epi8(0x0F), sixteen = _mm512_set1_epi8(16);
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    const uintptr_t ahead = CPUQ(stream_ahead);
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ5_K, y += BQ8_K) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 3); /* 176 bytes a block */
        const __m128i scmn = k4_scales_mins(x + 4);
        const __m128 dd = k4_block_scales(x, y); /* d * dy, dmin * dy: the AVX2 kernel's products */
        __m128i mp = k4_min_products(scmn, y);
        mp = _mm_add_epi32(mp, _mm_unpackhi_epi64(mp, mp));
        mp = _mm_add_epi32(mp, _mm_shuffle_epi32(mp, 1));
        mins += _mm_cvtss_f32(_mm_movehdup_ps(dd)) * (float)_mm_cvtsi128_si32(mp);
        const __m512i sc = _mm512_castsi128_si512(k4_scales_i16(scmn)); /* only words 0..7 are read */
        __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(x + 16)));
        h = _mm512_mask_srli_epi16(h, 0xFFFF0000u, h, 1);
        __m512i i0 = _mm512_setzero_si512(), i1 = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            const __m512i bits =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(x + 48 + 32 * c)));
            __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(bits, 0xFFFF0000u, bits, 4), m4);
            q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(h, _mm512_set1_epi8((char)(1 << (2 * c)))), q, sixteen);
            /* unsigned 0..31 x signed: 2*31*127 < 32767 */
            const __m512i p = _mm512_maddubs_epi16(q, _mm512_loadu_si512((const void *)(y + Q8K_QS + 64 * c)));
            if (c & 1)
                i1 = madd_acc(i1, p, _mm512_permutexvar_epi16(sel[c], sc));
            else
                i0 = madd_acc(i0, p, _mm512_permutexvar_epi16(sel[c], sc));
        }
        const __m256i lanes = fold_i32(_mm512_add_epi32(i0, i1));
        acc = _mm256_fmadd_ps(_mm256_broadcastss_ps(dd), _mm256_cvtepi32_ps(lanes), acc);
    }
    *s = avx2_hsum_ps(acc) - mins;
}

CPUQ_KERNEL_TABLE(avx512_kernel,
                  {TPORT_TYPE_Q4_0, dot_q4_0},
                  {TPORT_TYPE_Q4_1, dot_q4_1},
                  {TPORT_TYPE_Q5_0, dot_q5_0},
                  {TPORT_TYPE_Q5_1, dot_q5_1},
                  {TPORT_TYPE_Q8_0, dot_q8_0},
                  {TPORT_TYPE_Q4_K, dot_q4_K},
                  {TPORT_TYPE_Q5_K, dot_q5_K},
                  {TPORT_TYPE_Q6_K, dot_q6_K})

#else

CPUQ_NO_KERNELS(avx512_kernel)

#endif
