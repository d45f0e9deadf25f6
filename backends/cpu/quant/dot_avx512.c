/* AVX-512 dot products: Q4_0 and Q8_0 (x Q8_0) two 32-element blocks per
 * 512-bit register (VNNI's dpbusd when compiled with it, else maddubs +
 * madd); Q4_K and Q6_K (x Q8_K) 64 elements per step, the small scales
 * folded in with madd.  Other types use the AVX2 kernels compiled into the
 * same variant.  Only the float summation order differs from the scalar
 * code. */
#include "quant_kernels.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX2__) && defined(__FMA__)
#include "avx2_util.h"
#include "k4_x86_util.h"

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

static __m512 scales(float a, float b) {
    return _mm512_insertf32x8(_mm512_set1_ps(a), _mm256_set1_ps(b), 1);
}

/* Low nibbles (elements 0..15) then high nibbles (16..31), minus 8. */
static __m256i q4_0_values(const uint8_t *qs) { return _mm256_sub_epi8(avx2_nibbles(qs), _mm256_set1_epi8(8)); }

static void dot_q4_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, x += 2 * BQ4_0, y += 2 * BQ8_0) {
        const __m512i qx = pair(q4_0_values(x + 2), q4_0_values(x + BQ4_0 + 2));
        const __m512i qy = pair(_mm256_loadu_si256((const __m256i *)(y + 2)),
                                _mm256_loadu_si256((const __m256i *)(y + BQ8_0 + 2)));
        const __m512 d = scales(cpuq_half(x) * cpuq_half(y), cpuq_half(x + BQ4_0) * cpuq_half(y + BQ8_0));
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_i8x64(qx, qy)), acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; b < nb; b++, x += BQ4_0, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 16; j++)
            isum += ((x[2 + j] & 15) - 8) * (int8_t)y[2 + j] + ((x[2 + j] >> 4) - 8) * (int8_t)y[2 + j + 16];
        sum += (float)isum * (cpuq_half(x) * cpuq_half(y));
    }
    *s = sum;
}

static void dot_q8_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 32;
    __m512 acc = _mm512_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, x += 2 * BQ8_0, y += 2 * BQ8_0) {
        const __m512i qx = pair(_mm256_loadu_si256((const __m256i *)(x + 2)),
                                _mm256_loadu_si256((const __m256i *)(x + BQ8_0 + 2)));
        const __m512i qy = pair(_mm256_loadu_si256((const __m256i *)(y + 2)),
                                _mm256_loadu_si256((const __m256i *)(y + BQ8_0 + 2)));
        const __m512 d = scales(cpuq_half(x) * cpuq_half(y), cpuq_half(x + BQ8_0) * cpuq_half(y + BQ8_0));
        acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dot_i8x64(qx, qy)), acc);
    }
    float sum = _mm512_reduce_add_ps(acc);
    for (; b < nb; b++, x += BQ8_0, y += BQ8_0) {
        int isum = 0;
        for (int j = 0; j < 32; j++)
            isum += (int8_t)x[2 + j] * (int8_t)y[2 + j];
        sum += (float)isum * (cpuq_half(x) * cpuq_half(y));
    }
    *s = sum;
}

/* Four int16 scales, one per 128-bit lane (16 elements each). */
static __m512i scales4(int a, int b, int c, int d) {
    __m512i v = _mm512_castsi128_si512(_mm_set1_epi16((short)a));
    v = _mm512_inserti32x4(v, _mm_set1_epi16((short)b), 1);
    v = _mm512_inserti32x4(v, _mm_set1_epi16((short)c), 2);
    return _mm512_inserti32x4(v, _mm_set1_epi16((short)d), 3);
}

/* Q4_K: per block four steps of 64 elements: the 32 bytes of nibbles in
 * both halves of a register, the upper half shifted (low nibbles = group
 * 2c, high nibbles = group 2c+1), maddubs against the activations, the
 * groups' 6-bit scales folded in with madd (dpwssd with VNNI).  Scales and
 * mins are unpacked with 32-bit masks, the mins' term is one madd against
 * the Q8_K group sums, and d, dmin are converted together. */
static void dot_q4_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i sel[4]; /* word indices: 16 x 2c, then 16 x 2c+1 */
    for (int c = 0; c < 4; c++)
        sel[c] = _mm512_inserti64x4(_mm512_set1_epi16((short)(2 * c)), _mm256_set1_epi16((short)(2 * c + 1)), 1);
    __m512 acc = _mm512_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ4_K, y += BQ8_K) {
        const __m128i scmn = k4_scales_mins(x + 4);
        const __m128 d = k4_block_scales(x, y);
        acc_min = _mm_fmadd_ps(_mm_shuffle_ps(d, d, 0x55), _mm_cvtepi32_ps(k4_min_products(scmn, y)), acc_min);
        const __m512i sc = _mm512_castsi128_si512(k4_scales_i16(scmn)); /* only words 0..7 are read */
        __m512i isum = _mm512_setzero_si512();
        for (int c = 0; c < 4; c++) {
            const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(x + 16 + 32 * c)));
            const __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(bits, 0xFFFF0000u, bits, 4), m4);
            /* unsigned 0..15 x signed: no saturation */
            const __m512i p = _mm512_maddubs_epi16(q, _mm512_loadu_si512((const void *)(y + Q8K_QS + 64 * c)));
            const __m512i scv = _mm512_permutexvar_epi16(sel[c], sc);
#if defined(__AVX512VNNI__)
            isum = _mm512_dpwssd_epi32(isum, p, scv);
#else
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p, scv));
#endif
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(_mm_cvtss_f32(d)), _mm512_cvtepi32_ps(isum), acc);
    }
    *s = _mm512_reduce_add_ps(acc) - k4_hsum128(acc_min);
}

static void dot_q6_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ6_K, y += BQ8_K) {
        const int8_t *sc = (const int8_t *)(x + 192);
        const float d = cpuq_f32(y) * cpuq_half(x + 208);
        __m512i isum = _mm512_setzero_si512();
        for (int k = 0; k < 2; k++) {
            __m256i q[4];
            avx2_q6k_quants(x, k, q);
            const int8_t *sk = sc + 8 * k;
            /* elements 128k + [0, 64) and + [64, 128); unsigned 0..63 x signed */
            const __m512i p0 = _mm512_maddubs_epi16(pair(q[0], q[1]), _mm512_loadu_si512((const void *)(y + Q8K_QS + 128 * k)));
            const __m512i p1 =
                _mm512_maddubs_epi16(pair(q[2], q[3]), _mm512_loadu_si512((const void *)(y + Q8K_QS + 128 * k + 64)));
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p0, scales4(sk[0], sk[1], sk[2], sk[3])));
            isum = _mm512_add_epi32(isum, _mm512_madd_epi16(p1, scales4(sk[4], sk[5], sk[6], sk[7])));
        }
        __m256i lanes = _mm256_add_epi32(_mm512_castsi512_si256(isum), _mm512_extracti64x4_epi64(isum, 1));
        lanes = _mm256_sub_epi32(lanes, avx2_q6k_offsets(sc, y));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(lanes), acc);
    }
    *s = avx2_hsum_ps(acc);
}

CPUQ_KERNEL_TABLE(avx512_kernel,
                  {TPORT_TYPE_Q4_0, dot_q4_0},
                  {TPORT_TYPE_Q8_0, dot_q8_0},
                  {TPORT_TYPE_Q4_K, dot_q4_K},
                  {TPORT_TYPE_Q6_K, dot_q6_K})

#else

CPUQ_NO_KERNELS(avx512_kernel)

#endif
