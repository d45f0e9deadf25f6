/* mul_mat kernels on the x8 layouts of cpu_repack.c: one group of 8
 * weight rows (Q4_0 or Q8_0) against 1 to 4 columns of Q8_0 activations,
 * all 8 rows at once.  Each 32-bit lane of a vector is one weight row, so
 * a block's 8 integer dot products come out in one vector and are scaled
 * and accumulated with one multiply-add: no horizontal sums, and the
 * activations are broadcast 4 bytes at a time instead of being reloaded
 * per row.  Integer sums are exact; the only rounding is the per-block
 * float multiply-add, as in the per-row kernels.
 *
 * Q4_0 quants are used unsigned (0..15) and the offset of 8 is taken out
 * afterwards with the block's activation sum: sum((q - 8) y) = sum(q y) -
 * 8 sum(y), exact in integers.  The int16 partial sums cannot overflow:
 * 8 pairs of 15 * 127 stay below 32767.  Q8_0 x Q8_0 needs signed bytes on
 * both sides and goes through int32 after each pair. */
#include <string.h>

#include "cpu_internal.h"

void cpu_x8_act_info(const uint8_t *y, int64_t nblk, cpu_x8_act *act) {
    for (int64_t b = 0; b < nblk; b++, y += 34) {
        uint16_t h;
        memcpy(&h, y, 2);
        int32_t s = 0;
        for (int i = 0; i < 32; i++)
            s += (int8_t)y[2 + i];
        act[b].d = cpu_half_to_float(h);
        act[b].sum = s;
    }
}

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

bool cpu_x8_available(void) { return true; }

static inline __m256i bcast4(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

#define X8_INLINE static inline __attribute__((always_inline))

/* Q4_0 x8 group (nblk blocks of 144 bytes) against NC columns. */
X8_INLINE void q4_0_x8(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                        size_t as, const int NC, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nblk; b++, g += 144) {
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        __m256i s16[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                          _mm256_setzero_si256()};
        for (int j = 0; j < 4; j++) {
            const __m256i p = _mm256_loadu_si256((const __m256i *)(const void *)(g + 16 + 32 * j));
            const __m256i lo = _mm256_and_si256(p, m4), hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
            for (int c = 0; c < NC; c++) {
                const uint8_t *q = y + (size_t)c * ys + (size_t)b * 34 + 2;
                s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(lo, bcast4(q + 4 * j)));
                s16[c] = _mm256_add_epi16(s16[c], _mm256_maddubs_epi16(hi, bcast4(q + 16 + 4 * j)));
            }
        }
        for (int c = 0; c < NC; c++) {
            const cpu_x8_act *a = &act[(size_t)c * as + (size_t)b];
            const __m256i s32 = _mm256_sub_epi32(_mm256_madd_epi16(s16[c], ones), _mm256_set1_epi32(8 * a->sum));
            acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(a->d)), _mm256_cvtepi32_ps(s32), acc[c]);
        }
    }
    for (int c = 0; c < NC; c++)
        _mm256_storeu_ps(out + 8 * c, acc[c]);
}

/* Q8_0 x8 group (nblk blocks of 272 bytes) against NC columns. */
X8_INLINE void q8_0_x8(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                        size_t as, const int NC, float *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nblk; b++, g += 272) {
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        __m256i s32[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                          _mm256_setzero_si256()};
        for (int j = 0; j < 8; j++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(g + 16 + 32 * j));
            const __m256i ax = _mm256_sign_epi8(x, x);
            for (int c = 0; c < NC; c++) {
                const __m256i q = bcast4(y + (size_t)c * ys + (size_t)b * 34 + 2 + 4 * j);
                const __m256i p = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(q, x));
                s32[c] = _mm256_add_epi32(s32[c], _mm256_madd_epi16(p, ones));
            }
        }
        for (int c = 0; c < NC; c++) {
            const float d = act[(size_t)c * as + (size_t)b].d;
            acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(d)), _mm256_cvtepi32_ps(s32[c]), acc[c]);
        }
    }
    for (int c = 0; c < NC; c++)
        _mm256_storeu_ps(out + 8 * c, acc[c]);
}

void cpu_x8_dot(int layout, const uint8_t *group, int64_t nblk, const uint8_t *y, size_t y_stride,
                const cpu_x8_act *act, size_t act_stride, int ncols, float *out) {
    /* constant column counts, so the loops over columns unroll */
    if (layout == CPU_LAYOUT_Q4_0_X8) {
        switch (ncols) {
        case 1: q4_0_x8(group, nblk, y, y_stride, act, act_stride, 1, out); break;
        case 2: q4_0_x8(group, nblk, y, y_stride, act, act_stride, 2, out); break;
        case 3: q4_0_x8(group, nblk, y, y_stride, act, act_stride, 3, out); break;
        default: q4_0_x8(group, nblk, y, y_stride, act, act_stride, 4, out); break;
        }
    } else {
        switch (ncols) {
        case 1: q8_0_x8(group, nblk, y, y_stride, act, act_stride, 1, out); break;
        case 2: q8_0_x8(group, nblk, y, y_stride, act, act_stride, 2, out); break;
        case 3: q8_0_x8(group, nblk, y, y_stride, act, act_stride, 3, out); break;
        default: q8_0_x8(group, nblk, y, y_stride, act, act_stride, 4, out); break;
        }
    }
}

#else

bool cpu_x8_available(void) { return false; }

/* Never called: without the kernels, no weight is re-encoded. */
void cpu_x8_dot(int layout, const uint8_t *group, int64_t nblk, const uint8_t *y, size_t y_stride,
                const cpu_x8_act *act, size_t act_stride, int ncols, float *out) {
    (void)layout, (void)group, (void)nblk, (void)y, (void)y_stride, (void)act, (void)act_stride;
    memset(out, 0, (size_t)ncols * 8 * sizeof(float));
}

#endif
