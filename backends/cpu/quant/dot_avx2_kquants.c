/* AVX2 + FMA dot products of the 256-element k-quants and IQ4_XS with Q8_K
 * activations.  Per super-block: integer products weighted by the small
 * scales (maddubs, then madd with the scales), one float FMA; the mins'
 * and offsets' contributions go through Q8_K's group sums (bsums).  Q4_K,
 * Q5_K and Q6_K prefetch their rows CPUQ(stream_ahead) bytes ahead. */
#include "quant_kernels.h"

#if defined(__AVX2__) && defined(__FMA__)
#include "avx2_util.h"
#include "k4_x86_util.h"

static __m256i q8k_load(const uint8_t *y, int off) { return _mm256_loadu_si256((const __m256i *)(y + Q8K_QS + off)); }

static void dot_q2_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    const __m256i m3 = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ2_K, y += BQ8_K) {
        const uint8_t *sc = x;
        const float dy = cpuq_f32(y);
        int summs = 0;
        for (int g = 0; g < 16; g++)
            summs += cpuq_q8k_bsum(y, g) * (sc[g] >> 4);
        mins += dy * cpuq_half(x + 82) * (float)summs;
        __m256i isum = _mm256_setzero_si256();
        for (int k = 0; k < 2; k++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x + 16 + 32 * k));
            for (int j = 0; j < 4; j++) {
                /* elements 128k + 32j + [0, 32): groups 8k+2j (low lane), 8k+2j+1 */
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), m3);
                const __m256i p = _mm256_maddubs_epi16(q, q8k_load(y, 128 * k + 32 * j));
                const int g = 8 * k + 2 * j;
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, avx2_scale_pair(sc[g] & 15, sc[g + 1] & 15)));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(dy * cpuq_half(x + 80)), _mm256_cvtepi32_ps(isum), acc);
    }
    *s = avx2_hsum_ps(acc) - mins;
}

static void dot_q3_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    int8_t sc[16];
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ3_K, y += BQ8_K) {
        cpuq_scales_q3k(x + 96, sc);
        const __m256i hm = _mm256_loadu_si256((const __m256i *)x);
        __m256i isum = _mm256_setzero_si256();
        for (int k = 0; k < 2; k++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x + 32 + 32 * k));
            for (int j = 0; j < 4; j++) {
                /* value = 2 bits - (high bit clear ? 4 : 0), in [-4, 3] */
                const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * j), m3);
                const __m256i h = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * k + j), one);
                const __m256i minus4 = _mm256_slli_epi16(_mm256_andnot_si256(h, one), 2);
                const __m256i y8 = q8k_load(y, 128 * k + 32 * j);
                const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(q, y8), _mm256_maddubs_epi16(minus4, y8));
                const int g = 8 * k + 2 * j;
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, avx2_scale_pair(sc[g], sc[g + 1])));
            }
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x + 108) * cpuq_f32(y)), _mm256_cvtepi32_ps(isum), acc);
    }
    *s = avx2_hsum_ps(acc);
}

/* Q4_K and Q5_K: 8 groups of 32, 6-bit scales and mins. */
static float dot_q45_K(int64_t n, const uint8_t *x, const uint8_t *y, int five) {
    __m256 acc = _mm256_setzero_ps();
    float mins = 0;
    const __m256i m4 = _mm256_set1_epi8(0x0F), one = _mm256_set1_epi8(1);
    uint8_t sc[8], mn[8];
    const int bx = five ? BQ5_K : BQ4_K;
    const uintptr_t ahead = CPUQ(stream_ahead);
    for (int64_t i = 0; i < n / QK_K; i++, x += bx, y += BQ8_K) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 3); /* 176 or 144 bytes a block */
        cpuq_scale_min_k4(x + 4, sc, mn);
        const float dy = cpuq_f32(y);
        const int msum = cpuq_k4_min_sum(mn, y);
        mins += cpuq_half(x + 2) * dy * (float)msum;
        const uint8_t *qs = x + (five ? 48 : 16);
        const __m256i hbits = five ? _mm256_loadu_si256((const __m256i *)(x + 16)) : _mm256_setzero_si256();
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++, qs += 32) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)qs);
            __m256i lo = _mm256_and_si256(bits, m4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            if (five) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * c), one), 4));
                hi = _mm256_or_si256(hi,
                                     _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hbits, 2 * c + 1), one), 4));
            }
            /* unsigned 0..31 x signed: no saturation (2*31*127 < 32767) */
            const __m256i plo = _mm256_maddubs_epi16(lo, q8k_load(y, 64 * c));
            const __m256i phi = _mm256_maddubs_epi16(hi, q8k_load(y, 64 * c + 32));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(plo, _mm256_set1_epi16(sc[2 * c])));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(phi, _mm256_set1_epi16(sc[2 * c + 1])));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * dy), _mm256_cvtepi32_ps(isum), acc);
    }
    return avx2_hsum_ps(acc) - mins;
}

/* Q4_K on its own: scales and mins unpacked with 32-bit masks, the mins'
 * term one madd against the Q8_K group sums, d and dmin converted together,
 * the small scales broadcast from a register with a byte shuffle. */
static void dot_q4_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_min = _mm_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ4_K, y += BQ8_K) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 3); /* 144 bytes a block */
        const __m128i scmn = k4_scales_mins(x + 4);
        const __m128 d = k4_block_scales(x, y);
        acc_min = _mm_fmadd_ps(_mm_shuffle_ps(d, d, 0x55), _mm_cvtepi32_ps(k4_min_products(scmn, y)), acc_min);
        const __m256i sc = _mm256_broadcastsi128_si256(k4_scales_i16(scmn));
        __m256i isum = _mm256_setzero_si256();
        for (int c = 0; c < 4; c++) {
            const __m256i bits = _mm256_loadu_si256((const __m256i *)(x + 16 + 32 * c));
            const __m256i lo = _mm256_and_si256(bits, m4);
            const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(bits, 4), m4);
            /* unsigned 0..15 x signed: no saturation */
            const __m256i plo = _mm256_maddubs_epi16(lo, q8k_load(y, 64 * c));
            const __m256i phi = _mm256_maddubs_epi16(hi, q8k_load(y, 64 * c + 32));
            /* scale word 2c (bytes 4c, 4c+1) and 2c+1 in every position */
            const __m256i slo = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)((4 * c + 1) << 8 | 4 * c)));
            const __m256i shi = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((short)((4 * c + 3) << 8 | (4 * c + 2))));
            isum = _mm256_add_epi32(isum, _mm256_add_epi32(_mm256_madd_epi16(plo, slo), _mm256_madd_epi16(phi, shi)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(_mm_cvtss_f32(d)), _mm256_cvtepi32_ps(isum), acc);
    }
    *s = avx2_hsum_ps(acc) - k4_hsum128(acc_min);
}

static void dot_q5_K(int64_t n, float *s, const void *x, const void *y) { *s = dot_q45_K(n, x, y, 1); }

/* Lane for lane what ggml's AVX2 kernel computes (integer lane sums, the
 * offsets taken out per lane, one fma per super-block, the same horizontal
 * sum), so the result is bit-identical with llama.cpp's on x86. */
static void dot_q6_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    __m256 acc = _mm256_setzero_ps();
    const uintptr_t ahead = CPUQ(stream_ahead);
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ6_K, y += BQ8_K) {
        cpuq_prefetch_lines((uintptr_t)x + ahead, 4); /* 210 bytes a block */
        const int8_t *sc = (const int8_t *)(x + 192);
        const float d = cpuq_f32(y) * cpuq_half(x + 208);
        __m256i isum = _mm256_setzero_si256();
        for (int k = 0; k < 2; k++) {
            __m256i q[4];
            avx2_q6k_quants(x, k, q);
            for (int t = 0; t < 4; t++) {
                /* unsigned 0..63 x signed: 2*63*127 < 32767 */
                const __m256i p = _mm256_maddubs_epi16(q[t], q8k_load(y, 128 * k + 32 * t));
                const int g = 8 * k + 2 * t;
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, avx2_scale_pair(sc[g], sc[g + 1])));
            }
        }
        isum = _mm256_sub_epi32(isum, avx2_q6k_offsets(sc, y));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
    }
    *s = avx2_hsum_ps(acc);
}

static void dot_iq4_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)CPUQ(kvalues_iq4nl)));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < n / QK_K; i++, x += BIQ4_XS, y += BQ8_K) {
        /* 1 KiB ahead, as dot_avx2_legacy.c's table kernels */
        _mm_prefetch((const char *)x + 1024, _MM_HINT_T0);
        _mm_prefetch((const char *)x + 1024 + 64, _MM_HINT_T0);
        _mm_prefetch((const char *)x + 1024 + 128, _MM_HINT_T0);
        const unsigned scales_h = (unsigned)(x[2] | x[3] << 8);
        __m256i isum = _mm256_setzero_si256();
        for (int g = 0; g < 8; g++) {
            const int ls = cpuq_iq4xs_scale(x, scales_h, g);
            const __m256i qx = _mm256_shuffle_epi8(table, avx2_nibbles(x + 8 + 16 * g));
            /* pairs of |127*127| fit int16; times |ls| <= 32 fits int32 */
            const __m256i p = avx2_dot_i8_i16(qx, q8k_load(y, 32 * g));
            isum = _mm256_add_epi32(isum, _mm256_madd_epi16(p, _mm256_set1_epi16((short)ls)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(cpuq_half(x) * cpuq_f32(y)), _mm256_cvtepi32_ps(isum), acc);
    }
    *s = avx2_hsum_ps(acc);
}

CPUQ_KERNEL_TABLE(avx2_kquant_kernel,
                  {TPORT_TYPE_Q2_K, dot_q2_K},
                  {TPORT_TYPE_Q3_K, dot_q3_K},
                  {TPORT_TYPE_Q4_K, dot_q4_K},
                  {TPORT_TYPE_Q5_K, dot_q5_K},
                  {TPORT_TYPE_Q6_K, dot_q6_K},
                  {TPORT_TYPE_IQ4_XS, dot_iq4_xs})

#else

CPUQ_NO_KERNELS(avx2_kquant_kernel)

#endif
