/* Shared by the 256- and 512-bit x8 kernels (cpu_mul_mat_x8.c,
 * cpu_mul_mat_x8_avx512.c): the mins' term of a Q4_K x8 super-block.
 * Include after <immintrin.h>, in builds with AVX2. */
#ifndef TPORT_CPU_X8_Q4K_H
#define TPORT_CPU_X8_Q4K_H

#include <stdint.h>

/* For each of the 8 rows of the super-block at g (its mn[4][8][2] at
 * byte 96, cpu_repack.c), sum_j mn[j][r] * (sum of sub-block j of the
 * Q8_K activation yb) as int32 lanes, rows in order.  Sub-block j's
 * activation sum is bsums[2j] + bsums[2j + 1]: one madd gives the 8 sums,
 * a pack puts sub-blocks 2p and 2p + 1 side by side as int16 in 32-bit
 * lane p' (0, 1, 4, 5 for p = 0..3), and each pair is broadcast to every
 * row's lane for a madd with that row's mins. */
static inline __attribute__((always_inline)) __m256i cpu_x8_q4k_mins(const uint8_t *g, const uint8_t *yb) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)(yb + 260));
    const __m256i s32 = _mm256_madd_epi16(bs, _mm256_set1_epi16(1));
    const __m256i pairs = _mm256_packs_epi32(s32, s32);
    __m256i msum = _mm256_setzero_si256();
    static const int lane[4] = {0, 1, 4, 5};
    for (int pr = 0; pr < 4; pr++) {
        const __m256i mn = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(g + 96 + 16 * pr)));
        const __m256i pair = _mm256_permutevar8x32_epi32(pairs, _mm256_set1_epi32(lane[pr]));
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(mn, pair));
    }
    return msum;
}

#endif
