/* NVFP4 (x Q8_0): the scalar, AVX2 and AVX-512 kernels.
 *
 * NVFP4 {u8 d[4] (UE4M3); u8 qs[32]}, 64 elements in 36 bytes: sub-block s
 * (16 elements) has scale d[s]; its element j is the low nibble of
 * qs[8s + j], element j + 8 the high nibble, an E2M1 code (the MXFP4
 * table, doubled; the scale is halved to match: cpuq_ue4m3_half).  A
 * block meets two Q8_0 blocks; each sub-block is one unit of
 * quant_kernels.h's eight float lanes (a step is two NVFP4 blocks): the
 * integer sum of code y, times d_x d_y.  ggml's kernels (ggml-cpu/quants.c,
 * arch/x86/quants.c) make the same integer sums, scale by the same
 * products and round the activations the same way (Q8_0); only the float
 * summation order is ours, and it is the same in the three kernels here
 * (bit for bit). */
#include "quant_kernels.h"

enum { BNVFP4 = 36 };

/* One block into lanes acc[0..3]. */
static inline void nvfp4_block(const uint8_t *x, const uint8_t *y, float acc[4]) {
    for (int u = 0; u < 4; u++) {
        const uint8_t *yb = y + (u / 2) * BQ8_0, *q = x + 4 + 8 * u;
        const int8_t *qy = (const int8_t *)(yb + 2 + 16 * (u % 2));
        int isum = 0;
        for (int j = 0; j < 8; j++)
            isum += CPUQ(kvalues_mxfp4)[q[j] & 15] * qy[j] + CPUQ(kvalues_mxfp4)[q[j] >> 4] * qy[j + 8];
        cpuq_lane_add(&acc[u], cpuq_ue4m3_half(x[u]), cpuq_half(yb), isum);
    }
}

/* Blocks b0 .. nb-1 into their lanes, then the lanes' sum. */
static float nvfp4_finish(float acc[8], int64_t b0, int64_t nb, const uint8_t *x, const uint8_t *y) {
    for (int64_t b = b0; b < nb; b++)
        nvfp4_block(x + b * BNVFP4, y + b * 2 * BQ8_0, acc + 4 * (b % 2));
    return cpuq_sum_lanes8(acc);
}

static void dot_scalar(int64_t n, float *s, const void *vx, const void *vy) {
    float acc[8] = {0};
    *s = nvfp4_finish(acc, 0, n / 64, vx, vy);
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "avx2_util.h"
#include "scales4_x86.h"

/* The eight UE4M3 scales of the two blocks at x (of one, the rest 0, if
 * !two: the row may end there), halved, as cpuq_ue4m3_half: (8 + m)
 * 2^(e-11), m 2^-10 for e = 0, 0x7f zero. */
static inline __m256 nvfp4_scales(const uint8_t *x, bool two) {
    const __m256i v = _mm256_cvtepu8_epi32(_mm_setr_epi32((int)cpuq_u32(x), two ? (int)cpuq_u32(x + BNVFP4) : 0, 0, 0));
    const __m256i e = _mm256_and_si256(_mm256_srli_epi32(v, 3), _mm256_set1_epi32(15));
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i mant = _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(7)),
                                         _mm256_slli_epi32(_mm256_min_epu32(e, one), 3));
    const __m256i pow2 = _mm256_slli_epi32(_mm256_add_epi32(_mm256_max_epu32(e, one), _mm256_set1_epi32(116)), 23);
    const __m256 d = _mm256_mul_ps(_mm256_cvtepi32_ps(mant), _mm256_castsi256_ps(pow2));
    return _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_set1_epi32(0x7f))), d);
}

/* Lane u's activation scale d_y: the Q8_0 blocks at y of two NVFP4 blocks
 * (of one if !two). */
static inline __m256 nvfp4_act_scales(const uint8_t *y, bool two) {
    const uint64_t h = two ? x86_halves4(y, BQ8_0) : x86_u16_at(y) | x86_u16_at(y + BQ8_0) << 16;
    const __m256 d4 = _mm256_castps128_ps256(_mm_cvtph_ps(_mm_cvtsi64_si128((long long)h)));
    return _mm256_permutevar8x32_ps(d4, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
}

/* Lane u's scale d_x d_y for the two blocks at x (one if !two) and their
 * Q8_0 blocks at y. */
static inline __m256 nvfp4_step_scales(const uint8_t *x, const uint8_t *y, bool two) {
    return _mm256_mul_ps(nvfp4_scales(x, two), nvfp4_act_scales(y, two));
}

/* A block's codes as two registers, in element order: lo = sub-blocks 0
 * and 2 (128-bit lanes), hi = 1 and 3, each lane [low nibbles | high]. */
static inline void nvfp4_codes(const uint8_t *x, __m256i tbl, __m256i *lo, __m256i *hi) {
    const __m256i q = _mm256_loadu_si256((const __m256i *)(x + 4)), m4 = _mm256_set1_epi8(0x0F);
    const __m256i l = _mm256_shuffle_epi8(tbl, _mm256_and_si256(q, m4));
    const __m256i h = _mm256_shuffle_epi8(tbl, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4));
    *lo = _mm256_unpacklo_epi64(l, h);
    *hi = _mm256_unpackhi_epi64(l, h);
}

/* The activations of the same sub-blocks: lo = the first 16 of both Q8_0
 * blocks at y, hi = their last 16. */
static inline void nvfp4_acts(const uint8_t *y, __m256i *lo, __m256i *hi) {
    *lo = _mm256_loadu2_m128i((const __m128i *)(y + BQ8_0 + 2), (const __m128i *)(y + 2));
    *hi = _mm256_loadu2_m128i((const __m128i *)(y + BQ8_0 + 18), (const __m128i *)(y + 18));
}

/* Sub-block sums of two blocks, from their four 8-lane products (a, b of
 * the first block, c, d of the second): hadd twice leaves [s0 s1 s0' s1' |
 * s2 s3 s2' s3'], put in lane order. */
static inline __m256i nvfp4_sums(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i h = _mm256_hadd_epi32(_mm256_hadd_epi32(a, b), _mm256_hadd_epi32(c, d));
    return _mm256_permutevar8x32_epi32(h, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
}

static void dot_avx2(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 64;
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)CPUQ(kvalues_mxfp4)));
    __m256 acc = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *xb = x + b * BNVFP4, *yb = y + b * 2 * BQ8_0;
        __m256i p[4];
        for (int k = 0; k < 2; k++) {
            __m256i wl, wh, yl, yh;
            nvfp4_codes(xb + k * BNVFP4, tbl, &wl, &wh);
            nvfp4_acts(yb + 2 * k * BQ8_0, &yl, &yh);
            p[2 * k] = avx2_dot_i8(wl, yl);
            p[2 * k + 1] = avx2_dot_i8(wh, yh);
        }
        const __m256i isum = nvfp4_sums(p[0], p[1], p[2], p[3]);
        const __m256 t = _mm256_mul_ps(nvfp4_step_scales(xb, yb, true), _mm256_cvtepi32_ps(isum));
        acc = _mm256_add_ps(acc, t);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    *s = nvfp4_finish(lanes, b, nb, x, y);
}
#define NVFP4_AVX2 dot_avx2
#else
#define NVFP4_AVX2 NULL
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* The AVX2 step with VNNI: |code| against y carrying the code's sign, by
 * dpbusd (exact: |code| <= 12, y in [-127, 127]); the last block of an
 * odd count is a half step into lanes 0..3 (the others kept by a blend, so
 * that their bits stay the scalar kernel's).  The weights are prefetched
 * CPUQ(stream_ahead) bytes ahead (read once per token).  Not 512 bits
 * wide: one block per register (its codes put in element order, the
 * sums reduced across 128-bit lanes) took more user time than this on
 * a stories110M-shaped NVFP4 prompt (RESULTS run 38). */
static inline __m256i dot_vnni(__m256i w, __m256i q) {
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), _mm256_sign_epi8(q, w));
}

/* The 8-lane partials of the block at x, y: p[0] sub-blocks 0 and 2, p[1] 1 and 3. */
static inline void nvfp4_block_vnni(const uint8_t *x, const uint8_t *y, __m256i tbl, __m256i p[2]) {
    __m256i wl, wh, yl, yh;
    nvfp4_codes(x, tbl, &wl, &wh);
    nvfp4_acts(y, &yl, &yh);
    p[0] = dot_vnni(wl, yl);
    p[1] = dot_vnni(wh, yh);
}

static void dot_avx512(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    const int64_t nb = n / 64;
    const uintptr_t ahead = CPUQ(stream_ahead);
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)CPUQ(kvalues_mxfp4)));
    __m256 acc = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *xb = x + b * BNVFP4, *yb = y + b * 2 * BQ8_0;
        cpuq_prefetch_lines((uintptr_t)xb + ahead, 2); /* 72 bytes a step */
        __m256i p[4];
        nvfp4_block_vnni(xb, yb, tbl, p);
        nvfp4_block_vnni(xb + BNVFP4, yb + 2 * BQ8_0, tbl, p + 2);
        const __m256i isum = nvfp4_sums(p[0], p[1], p[2], p[3]);
        const __m256 t = _mm256_mul_ps(nvfp4_step_scales(xb, yb, true), _mm256_cvtepi32_ps(isum));
        acc = _mm256_add_ps(acc, t);
    }
    if (b < nb) {
        const uint8_t *xb = x + b * BNVFP4, *yb = y + b * 2 * BQ8_0;
        const __m256i z = _mm256_setzero_si256();
        __m256i p[2];
        nvfp4_block_vnni(xb, yb, tbl, p);
        const __m256i isum = nvfp4_sums(p[0], p[1], z, z);
        const __m256 t = _mm256_mul_ps(nvfp4_step_scales(xb, yb, false), _mm256_cvtepi32_ps(isum));
        acc = _mm256_blend_ps(acc, _mm256_add_ps(acc, t), 0x0F);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    *s = cpuq_sum_lanes8(lanes);
}

/* Four rows against one y, each bit for bit dot_avx512's: the activations'
 * loads and scales are shared (a prompt batch calls this per column). */
static void dot4_avx512(int64_t n, float s[4], const void *const vx[4], const void *vy) {
    const uint8_t *y = vy;
    const int64_t nb = n / 64;
    const uintptr_t ahead = CPUQ(stream_ahead);
    const __m256i tbl = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)CPUQ(kvalues_mxfp4)));
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2) {
        const uint8_t *yb = y + b * 2 * BQ8_0;
        __m256i yl0, yh0, yl1, yh1;
        nvfp4_acts(yb, &yl0, &yh0);
        nvfp4_acts(yb + 2 * BQ8_0, &yl1, &yh1);
        const __m256 dy = nvfp4_act_scales(yb, true);
        for (int r = 0; r < 4; r++) {
            const uint8_t *xb = (const uint8_t *)vx[r] + b * BNVFP4;
            cpuq_prefetch_lines((uintptr_t)xb + ahead, 2);
            __m256i wl0, wh0, wl1, wh1;
            nvfp4_codes(xb, tbl, &wl0, &wh0);
            nvfp4_codes(xb + BNVFP4, tbl, &wl1, &wh1);
            const __m256i isum = nvfp4_sums(dot_vnni(wl0, yl0), dot_vnni(wh0, yh0), dot_vnni(wl1, yl1),
                                            dot_vnni(wh1, yh1));
            const __m256 t = _mm256_mul_ps(_mm256_mul_ps(nvfp4_scales(xb, true), dy), _mm256_cvtepi32_ps(isum));
            acc[r] = _mm256_add_ps(acc[r], t);
        }
    }
    for (int r = 0; r < 4; r++) {
        if (b < nb) {
            const uint8_t *xb = (const uint8_t *)vx[r] + b * BNVFP4, *yb = y + b * 2 * BQ8_0;
            const __m256i z = _mm256_setzero_si256();
            __m256i p[2];
            nvfp4_block_vnni(xb, yb, tbl, p);
            const __m256i isum = nvfp4_sums(p[0], p[1], z, z);
            const __m256 t = _mm256_mul_ps(nvfp4_step_scales(xb, yb, false), _mm256_cvtepi32_ps(isum));
            acc[r] = _mm256_blend_ps(acc[r], _mm256_add_ps(acc[r], t), 0x0F);
        }
        float lanes[8];
        _mm256_storeu_ps(lanes, acc[r]);
        s[r] = cpuq_sum_lanes8(lanes);
    }
}
#define NVFP4_AVX512 dot_avx512
#define NVFP4_AVX512_4 dot4_avx512
#else
#define NVFP4_AVX512 NULL
#define NVFP4_AVX512_4 NULL
#endif

const cpuq_type_kernels CPUQ(nvfp4_kernels) = {TPORT_TYPE_NVFP4, dot_scalar, NVFP4_AVX2, NVFP4_AVX512, NVFP4_AVX512_4};
