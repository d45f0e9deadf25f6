/* Activations to Q8_0 {f16 d; i8 qs[32]} and Q8_1 {f16 d; f16 s; i8 qs[32]}
 * the way llama.cpp's CPU backend does it on x86 with AVX
 * (ggml-cpu/arch/x86/quants.c, quantize_row_q8_0 / quantize_row_q8_1),
 * which is not the reference quantizer (quantize_row_q8_0_ref, our
 * src/quant) that ggml uses only without AVX:
 *   d  = amax / 127, stored as f16 (round to nearest even),
 *   id = 127 / amax            (the reference: 1 / d, which can differ
 *                               from it in the last bit),
 *   q  = round-half-even(x * id) (the reference: roundf, halves away
 *                               from zero),
 *   s  = f16(d * sum(q))       (Q8_1; the same as the reference).
 * One flipped rounding moves a dot product by d * w, which the layers
 * after it amplify: the greedy ids of a q5_0 model diverged from
 * llama.cpp's at the first token because of it.
 *
 * The vector version (AVX2 + F16C variants) is what mul_mat uses; the
 * scalar twin computes the same bytes without intrinsics, for tests.
 *
 * Q8_K {f32 d; i8 qs[256]; i16 bsums[16]} (the K-quants' activations):
 * llama.cpp's x86 backend uses the reference quantizer for it, so the
 * vector version here gives the reference's bytes exactly: the signed
 * value of largest magnitude (the first one on ties), iscale = -127/max,
 * q = min(127, round-half-even(iscale * x)), d = 1/iscale, bsums the sums
 * of 16; an all-zero block is all zero bytes.  (There is no scalar twin:
 * the host's reference quantizer is the one to compare with.) */
#include <math.h>

#include "quant_kernels.h"

/* f32 -> IEEE binary16, round to nearest even (what F16C's vcvtps2ph with
 * imm 0 and ggml's software fallback do). */
static uint16_t f32_to_f16_rne(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u); /* NaN */
    if (ax >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u); /* >= 65520 rounds to infinity */
    if (ax < 0x38800000u) {               /* below 2^-14: a subnormal half */
        float v;
        memcpy(&v, &ax, sizeof v);
        return (uint16_t)(sign | (uint32_t)rintf(v * 16777216.0f)); /* units of 2^-24, exact scaling */
    }
    uint32_t h = ((ax >> 23) - 112) << 10 | (ax & 0x7fffffu) >> 13;
    const uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++; /* a carry into the exponent is the right answer */
    return (uint16_t)(sign | h);
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

/* One block of 32; with_sum selects Q8_1 (s after d, quants at 4). */
static void block_scalar(const float *x, uint8_t *y, int with_sum) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) {
        const float a = fabsf(x[j]);
        amax = a > amax ? a : amax;
    }
    const float d = amax / 127.f;
    const float id = amax != 0.0f ? 127.f / amax : 0.0f;
    int8_t *q = (int8_t *)(y + (with_sum ? 4 : 2));
    int sum = 0;
    for (int j = 0; j < 32; j++) {
        float v = rintf(x[j] * id); /* default rounding mode: nearest even */
        /* what the saturating packs make of out-of-range values (and NaN) */
        if (!(v >= -128.0f))
            v = -128.0f;
        if (v > 127.0f)
            v = 127.0f;
        q[j] = (int8_t)v;
        sum += q[j];
    }
    put16(y, f32_to_f16_rne(d));
    if (with_sum)
        put16(y + 2, f32_to_f16_rne(d * (float)sum));
}

bool CPUQ(quantize_act_scalar)(tport_type_id type, const float *x, void *vy, int64_t n) {
    if ((type != TPORT_TYPE_Q8_0 && type != TPORT_TYPE_Q8_1) || n % 32)
        return false;
    const int with_sum = type == TPORT_TYPE_Q8_1;
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += with_sum ? BQ8_1 : BQ8_0)
        block_scalar(x, y, with_sum);
    return true;
}

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>

/* the rounding immediate must be a constant expression for clang */
#define ROUND_EVEN (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

static void block_avx2(const float *x, uint8_t *y, int with_sum) {
    __m256 v0 = _mm256_loadu_ps(x), v1 = _mm256_loadu_ps(x + 8);
    __m256 v2 = _mm256_loadu_ps(x + 16), v3 = _mm256_loadu_ps(x + 24);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_max_ps(_mm256_andnot_ps(sign, v0), _mm256_andnot_ps(sign, v1));
    m = _mm256_max_ps(m, _mm256_max_ps(_mm256_andnot_ps(sign, v2), _mm256_andnot_ps(sign, v3)));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    const float d = amax / 127.f;
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.f / amax : 0.0f);
    const __m256i i0 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v0, id), ROUND_EVEN));
    const __m256i i1 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v1, id), ROUND_EVEN));
    const __m256i i2 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v2, id), ROUND_EVEN));
    const __m256i i3 = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v3, id), ROUND_EVEN));
    put16(y, _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT));
    if (with_sum) {
        const __m256i s8 = _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
        s4 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 1));
        put16(y + 2, _cvtss_sh(d * (float)_mm_cvtsi128_si32(s4), _MM_FROUND_TO_NEAREST_INT));
    }
    /* int32 -> int16 -> int8 with saturation; the packs work per 128-bit
     * lane, the permute puts the 8 groups of 4 back in order */
    const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
    const __m256i q = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)(void *)(y + (with_sum ? 4 : 2)), q);
}

static void block_q8_K_avx2(const float *x, uint8_t *y) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 m = _mm256_setzero_ps();
    for (int i = 0; i < QK_K; i += 8)
        m = _mm256_max_ps(m, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    if (amax == 0.0f) {
        memset(y, 0, BQ8_K);
        return;
    }
    /* the first element of that magnitude gives the sign */
    float max = amax;
    const __m256 va = _mm256_set1_ps(amax);
    for (int i = 0; i < QK_K; i += 8) {
        const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)), va, _CMP_EQ_OQ));
        if (hit) {
            max = x[i + __builtin_ctz((unsigned)hit)];
            break;
        }
    }
    const float iscale = -127.f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127), ones8 = _mm256_set1_epi8(1), ones16 = _mm256_set1_epi16(1);
    int8_t *qs = (int8_t *)(y + Q8K_QS);
    for (int i = 0; i < QK_K; i += 32) {
        __m256i q[4];
        for (int k = 0; k < 4; k++)
            q[k] = _mm256_min_epi32(
                _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * k), vs), ROUND_EVEN)), top);
        const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
        const __m256i b = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(void *)(qs + i), b);
        /* the bsums: 1 x q summed in pairs (exact in int16), then in fours */
        const __m256i s4 = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, b), ones16);
        int32_t l[8];
        _mm256_storeu_si256((__m256i *)(void *)l, s4);
        const int16_t s0 = (int16_t)(l[0] + l[1] + l[2] + l[3]), s1 = (int16_t)(l[4] + l[5] + l[6] + l[7]);
        memcpy(y + Q8K_BSUMS + 2 * (i / 16), &s0, 2);
        memcpy(y + Q8K_BSUMS + 2 * (i / 16 + 1), &s1, 2);
    }
    const float d = 1 / iscale;
    memcpy(y, &d, 4);
}

bool CPUQ(quantize_act)(tport_type_id type, const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    if (type == TPORT_TYPE_Q8_K && n % QK_K == 0) {
        for (int64_t b = 0; b < n / QK_K; b++, x += QK_K, y += BQ8_K)
            block_q8_K_avx2(x, y);
        return true;
    }
    if ((type != TPORT_TYPE_Q8_0 && type != TPORT_TYPE_Q8_1) || n % 32)
        return false;
    const int with_sum = type == TPORT_TYPE_Q8_1;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += with_sum ? BQ8_1 : BQ8_0)
        block_avx2(x, y, with_sum);
    return true;
}

#else

/* Without AVX llama.cpp's CPU backend quantizes activations with the
 * reference quantizer: the caller uses the host's. */
bool CPUQ(quantize_act)(tport_type_id type, const float *x, void *vy, int64_t n) {
    (void)type, (void)x, (void)vy, (void)n;
    return false;
}

#endif
