/* mul_mat kernels on the x8 layouts of cpu_repack.c: one group of 8
 * weight rows (Q4_0, Q8_0 or Q4_K) against 1 to 4 columns of Q8_0
 * activations (Q8_K for Q4_K), all 8 rows at once.  Generation takes one
 * column; a batch four, with kernels that unpack each weight load once
 * for all four.  Each 32-bit lane of a vector is one weight row, so a
 * block's 8 integer dot products come out in one vector and are scaled
 * and accumulated with one multiply-add: no horizontal sums, and the
 * activations are broadcast 4 bytes at a time instead of being reloaded
 * per row.  Integer sums are exact; the only rounding is the per-block
 * float multiply-add, as in the per-row kernels.
 *
 * Variants with AVX-512 VNNI use the 512-bit kernels of
 * cpu_mul_mat_x8_avx512.c instead (on a layout with 8-byte slices).
 *
 * Q4_0 quants are used unsigned (0..15) and the offset of 8 is taken out
 * afterwards with the block's activation sum: sum((q - 8) y) = sum(q y) -
 * 8 sum(y), exact in integers.  The int16 partial sums cannot overflow:
 * 8 pairs of 15 * 127 stay below 32767.  Q8_0 x Q8_0 needs signed bytes on
 * both sides and goes through int32 after each pair.
 *
 * Q4_K x Q8_K: per super-block, the 8 sub-blocks' integer sums (the same
 * unsigned-nibble products, 8 chunks of 4 bytes each: below 32767 again)
 * are scaled by their 6-bit scales in int32, and the mins' term is one
 * madd of the mins against the activation's 16-element sums (bsums), as
 * llama.cpp's kernels take it out. */
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

#if CPU_X8_WIDE
/* the kernels are in cpu_mul_mat_x8_avx512.c */
#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>

#include "cpu_vf.h"
#include "cpu_x8_q4k.h"

bool cpu_x8_available(void) { return true; }

static inline __m256i bcast4(const uint8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

#define X8_INLINE static inline __attribute__((always_inline))
#if defined(__clang__)
#define X8_NO_UNROLL _Pragma("clang loop unroll(disable)")
#define X8_UNROLL_2 _Pragma("clang loop unroll_count(2)")
#elif defined(__GNUC__)
#define X8_NO_UNROLL _Pragma("GCC unroll 1")
#define X8_UNROLL_2 _Pragma("GCC unroll 2")
#else
#define X8_NO_UNROLL
#define X8_UNROLL_2
#endif

/* The four column sums of a 4-column kernel to out[0..32). */
X8_INLINE void store4(float *out, __m256 f0, __m256 f1, __m256 f2, __m256 f3) {
    _mm256_storeu_ps(out, f0);
    _mm256_storeu_ps(out + 8, f1);
    _mm256_storeu_ps(out + 16, f2);
    _mm256_storeu_ps(out + 24, f3);
}

/* One Q8_0 chunk x (8 rows x 4 quants, ax = |x|) against 4 activation
 * quants at q: the 8 rows' sums as int32. */
X8_INLINE __m256i q8_0_dot4(__m256i ax, __m256i x, const uint8_t *q, __m256i ones) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(bcast4(q), x)), ones);
}

/* Q4_0 x8 group (nblk blocks of 144 bytes) against NC (1 or 2) columns.
 * Plain variables, not arrays: GCC keeps arrays of vectors on the stack. */
X8_INLINE void q4_0_x8(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                        size_t as, const int NC, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const uint8_t *y1 = y + ys;
    const cpu_x8_act *a1 = act + as;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nblk; b++, g += 144, y += 34, y1 += 34) {
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        vf_prefetch((uintptr_t)g + cpu_stream_ahead, 144);
        X8_NO_UNROLL /* unrolled, GCC runs out of registers and keeps acc0/acc1 on the stack */
        for (int j = 0; j < 4; j++) {
            const __m256i p = _mm256_loadu_si256((const __m256i *)(const void *)(g + 16 + 32 * j));
            const __m256i lo = _mm256_and_si256(p, m4), hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(lo, bcast4(y + 2 + 4 * j)));
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(hi, bcast4(y + 18 + 4 * j)));
            if (NC > 1) {
                s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(lo, bcast4(y1 + 2 + 4 * j)));
                s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(hi, bcast4(y1 + 18 + 4 * j)));
            }
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        const __m256i i0 = _mm256_sub_epi32(_mm256_madd_epi16(s0, ones), _mm256_set1_epi32(8 * act[b].sum));
        acc0 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(act[b].d)), _mm256_cvtepi32_ps(i0), acc0);
        if (NC > 1) {
            const __m256i i1 = _mm256_sub_epi32(_mm256_madd_epi16(s1, ones), _mm256_set1_epi32(8 * a1[b].sum));
            acc1 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(a1[b].d)), _mm256_cvtepi32_ps(i1), acc1);
        }
    }
    _mm256_storeu_ps(out, acc0);
    if (NC > 1)
        _mm256_storeu_ps(out + 8, acc1);
}

/* One column's share of a Q4_0 block in q4_0_x8_4: acc += d dy (sum - 8 sums). */
X8_INLINE __m256 q4_0_finish(__m256i s, __m256 dx, const cpu_x8_act *a, __m256 acc) {
    const __m256i i = _mm256_sub_epi32(_mm256_madd_epi16(s, _mm256_set1_epi16(1)), _mm256_set1_epi32(8 * a->sum));
    return _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(a->d)), _mm256_cvtepi32_ps(i), acc);
}

/* The same as q4_0_x8 against four columns (a batch): each weight load and
 * its unpacked halves serve 4 columns instead of 2. */
static void q4_0_x8_4(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                      size_t as, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256 f0 = _mm256_setzero_ps(), f1 = f0, f2 = f0, f3 = f0;
    for (int64_t b = 0; b < nblk; b++, g += 144, y += 34) {
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        X8_NO_UNROLL
        for (int j = 0; j < 4; j++) {
            const __m256i p = _mm256_loadu_si256((const __m256i *)(const void *)(g + 16 + 32 * j));
            const __m256i lo = _mm256_and_si256(p, m4), hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
            const uint8_t *q = y + 2 + 4 * j;
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(lo, bcast4(q)));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(lo, bcast4(q + ys)));
            s2 = _mm256_add_epi16(s2, _mm256_maddubs_epi16(lo, bcast4(q + 2 * ys)));
            s3 = _mm256_add_epi16(s3, _mm256_maddubs_epi16(lo, bcast4(q + 3 * ys)));
            s0 = _mm256_add_epi16(s0, _mm256_maddubs_epi16(hi, bcast4(q + 16)));
            s1 = _mm256_add_epi16(s1, _mm256_maddubs_epi16(hi, bcast4(q + ys + 16)));
            s2 = _mm256_add_epi16(s2, _mm256_maddubs_epi16(hi, bcast4(q + 2 * ys + 16)));
            s3 = _mm256_add_epi16(s3, _mm256_maddubs_epi16(hi, bcast4(q + 3 * ys + 16)));
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        f0 = q4_0_finish(s0, dx, act + b, f0);
        f1 = q4_0_finish(s1, dx, act + as + b, f1);
        f2 = q4_0_finish(s2, dx, act + 2 * as + b, f2);
        f3 = q4_0_finish(s3, dx, act + 3 * as + b, f3);
    }
    store4(out, f0, f1, f2, f3);
}

/* Q8_0 x8 group (nblk blocks of 272 bytes) against NC (1 or 2) columns. */
X8_INLINE void q8_0_x8(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                        size_t as, const int NC, float *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    const uint8_t *y1 = y + ys;
    const cpu_x8_act *a1 = act + as;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nblk; b++, g += 272, y += 34, y1 += 34) {
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        vf_prefetch((uintptr_t)g + cpu_stream_ahead, 272);
        for (int j = 0; j < 8; j++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(g + 16 + 32 * j));
            const __m256i ax = _mm256_sign_epi8(x, x);
            s0 = _mm256_add_epi32(s0, q8_0_dot4(ax, x, y + 2 + 4 * j, ones));
            if (NC > 1)
                s1 = _mm256_add_epi32(s1, q8_0_dot4(ax, x, y1 + 2 + 4 * j, ones));
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        acc0 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(act[b].d)), _mm256_cvtepi32_ps(s0), acc0);
        if (NC > 1)
            acc1 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(a1[b].d)), _mm256_cvtepi32_ps(s1), acc1);
    }
    _mm256_storeu_ps(out, acc0);
    if (NC > 1)
        _mm256_storeu_ps(out + 8, acc1);
}

/* Q4_K x8 group (nsb super-blocks of 1184 bytes) against NC (1 or 2) Q8_K
 * columns {f32 d; i8 qs[256]; i16 bsums[16]} (292 bytes each). */
X8_INLINE void q4_K_x8(const uint8_t *g, int64_t nsb, const uint8_t *y, size_t ys, const int NC, float *out) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
    const uint8_t *y1 = y + ys;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, g += 1184, y += 292, y1 += 292) {
        __m256i i0 = _mm256_setzero_si256(), i1 = _mm256_setzero_si256();
        vf_prefetch((uintptr_t)g + cpu_stream_ahead, 1184);
        for (int q = 0; q < 4; q++) { /* sub-blocks 2q (low nibbles) and 2q + 1 (high) */
            __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
            const uint8_t *qy0 = y + 4 + 64 * q, *qy1 = y1 + 4 + 64 * q, *qx = g + 160 + 256 * q;
            X8_NO_UNROLL
            for (int c = 0; c < 8; c++) {
                const __m256i p = _mm256_loadu_si256((const __m256i *)(const void *)(qx + 32 * c));
                const __m256i lo = _mm256_and_si256(p, m4), hi = _mm256_and_si256(_mm256_srli_epi16(p, 4), m4);
                lo0 = _mm256_add_epi16(lo0, _mm256_maddubs_epi16(lo, bcast4(qy0 + 4 * c)));
                hi0 = _mm256_add_epi16(hi0, _mm256_maddubs_epi16(hi, bcast4(qy0 + 32 + 4 * c)));
                if (NC > 1) {
                    lo1 = _mm256_add_epi16(lo1, _mm256_maddubs_epi16(lo, bcast4(qy1 + 4 * c)));
                    hi1 = _mm256_add_epi16(hi1, _mm256_maddubs_epi16(hi, bcast4(qy1 + 32 + 4 * c)));
                }
            }
            const __m256i sc_lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(g + 32 + 16 * q)));
            const __m256i sc_hi =
                _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(g + 40 + 16 * q)));
            i0 = _mm256_add_epi32(i0, _mm256_mullo_epi32(_mm256_madd_epi16(lo0, ones), sc_lo));
            i0 = _mm256_add_epi32(i0, _mm256_mullo_epi32(_mm256_madd_epi16(hi0, ones), sc_hi));
            if (NC > 1) {
                i1 = _mm256_add_epi32(i1, _mm256_mullo_epi32(_mm256_madd_epi16(lo1, ones), sc_lo));
                i1 = _mm256_add_epi32(i1, _mm256_mullo_epi32(_mm256_madd_epi16(hi1, ones), sc_hi));
            }
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(g + 16)));
        float dy;
        memcpy(&dy, y, 4);
        __m256 vdy = _mm256_set1_ps(dy);
        acc0 = _mm256_fmadd_ps(_mm256_mul_ps(dx, vdy), _mm256_cvtepi32_ps(i0), acc0);
        acc0 = _mm256_fnmadd_ps(_mm256_mul_ps(mx, vdy), _mm256_cvtepi32_ps(cpu_x8_q4k_mins(g, y)), acc0);
        if (NC > 1) {
            memcpy(&dy, y1, 4);
            vdy = _mm256_set1_ps(dy);
            acc1 = _mm256_fmadd_ps(_mm256_mul_ps(dx, vdy), _mm256_cvtepi32_ps(i1), acc1);
            acc1 = _mm256_fnmadd_ps(_mm256_mul_ps(mx, vdy), _mm256_cvtepi32_ps(cpu_x8_q4k_mins(g, y1)), acc1);
        }
    }
    _mm256_storeu_ps(out, acc0);
    if (NC > 1)
        _mm256_storeu_ps(out + 8, acc1);
}

/* Row r's 6-bit scale of sub-block j in both int16 halves of lane r, so
 * that one madd applies it to a lane's two int16 partial sums. */
X8_INLINE __m256i q4_K_scale16(const uint8_t *g, int j) {
    const __m256i sc = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(g + 32 + 8 * j)));
    return _mm256_or_si256(sc, _mm256_slli_epi32(sc, 16));
}

/* One sub-block (low nibbles of chunks qx, or high: HI) of 8 rows against
 * four columns qy + c * ys: madd with the rows' scales into isum[c].  The
 * two halves go in separate passes so that only four int16 sums are live:
 * with eight, GCC spills and copies registers in the inner loop.  Two
 * chunks per iteration halve the copies it still makes of the four, which
 * was faster (RESULTS run 9). */
X8_INLINE void q4_K_half_4(const uint8_t *qx, const uint8_t *qy, size_t ys, const int HI, __m256i scale,
                           __m256i isum[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    X8_UNROLL_2
    for (int c = 0; c < 8; c++, qx += 32, qy += 4) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)qx);
        v = _mm256_and_si256(HI ? _mm256_srli_epi16(v, 4) : v, m4);
        a0 = _mm256_add_epi16(_mm256_maddubs_epi16(v, bcast4(qy)), a0);
        a1 = _mm256_add_epi16(_mm256_maddubs_epi16(v, bcast4(qy + ys)), a1);
        a2 = _mm256_add_epi16(_mm256_maddubs_epi16(v, bcast4(qy + 2 * ys)), a2);
        a3 = _mm256_add_epi16(_mm256_maddubs_epi16(v, bcast4(qy + 3 * ys)), a3);
    }
    isum[0] = _mm256_add_epi32(isum[0], _mm256_madd_epi16(a0, scale));
    isum[1] = _mm256_add_epi32(isum[1], _mm256_madd_epi16(a1, scale));
    isum[2] = _mm256_add_epi32(isum[2], _mm256_madd_epi16(a2, scale));
    isum[3] = _mm256_add_epi32(isum[3], _mm256_madd_epi16(a3, scale));
}

/* The same as q4_K_x8 against four columns (a batch): each 32-byte load
 * of weights serves 4 columns instead of 2. */
static void q4_K_x8_4(const uint8_t *g, int64_t nsb, const uint8_t *y, size_t ys, float *out) {
    __m256 acc[4];
    for (int c = 0; c < 4; c++)
        acc[c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, g += 1184, y += 292) {
        __m256i isum[4];
        for (int c = 0; c < 4; c++)
            isum[c] = _mm256_setzero_si256();
        for (int q = 0; q < 4; q++) { /* sub-blocks 2q (low nibbles) and 2q + 1 (high) */
            q4_K_half_4(g + 160 + 256 * q, y + 4 + 64 * q, ys, 0, q4_K_scale16(g, 2 * q), isum);
            q4_K_half_4(g + 160 + 256 * q, y + 36 + 64 * q, ys, 1, q4_K_scale16(g, 2 * q + 1), isum);
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(g + 16)));
        for (int c = 0; c < 4; c++) {
            const uint8_t *yc = y + (size_t)c * ys;
            float dy;
            memcpy(&dy, yc, 4);
            const __m256 vdy = _mm256_set1_ps(dy);
            acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, vdy), _mm256_cvtepi32_ps(isum[c]), acc[c]);
            acc[c] = _mm256_fnmadd_ps(_mm256_mul_ps(mx, vdy), _mm256_cvtepi32_ps(cpu_x8_q4k_mins(g, yc)), acc[c]);
        }
    }
    store4(out, acc[0], acc[1], acc[2], acc[3]);
}

/* Q8_0 x8 group against four columns: one load and one sign of each weight
 * chunk serves the four.  Unrolled twice: fully unrolled, GCC keeps the
 * float sums on the stack; not at all, it copies every int sum per chunk
 * (both slower than this in the in-L2 kernel benchmark; RESULTS run 9). */
static void q8_0_x8_4(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                      size_t as, float *out) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 f0 = _mm256_setzero_ps(), f1 = f0, f2 = f0, f3 = f0;
    for (int64_t b = 0; b < nblk; b++, g += 272, y += 34) {
        __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
        X8_UNROLL_2
        for (int j = 0; j < 8; j++) {
            const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(g + 16 + 32 * j));
            const __m256i ax = _mm256_sign_epi8(x, x);
            const uint8_t *q = y + 2 + 4 * j;
            s0 = _mm256_add_epi32(s0, q8_0_dot4(ax, x, q, ones));
            s1 = _mm256_add_epi32(s1, q8_0_dot4(ax, x, q + ys, ones));
            s2 = _mm256_add_epi32(s2, q8_0_dot4(ax, x, q + 2 * ys, ones));
            s3 = _mm256_add_epi32(s3, q8_0_dot4(ax, x, q + 3 * ys, ones));
        }
        const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)g));
        f0 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(act[b].d)), _mm256_cvtepi32_ps(s0), f0);
        f1 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(act[as + b].d)), _mm256_cvtepi32_ps(s1), f1);
        f2 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(act[2 * as + b].d)), _mm256_cvtepi32_ps(s2), f2);
        f3 = _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(act[3 * as + b].d)), _mm256_cvtepi32_ps(s3), f3);
    }
    store4(out, f0, f1, f2, f3);
}

void cpu_x8_dot(int layout, const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride,
                const cpu_x8_act *act, size_t act_stride, int ncols, float *out) {
    /* constant column counts, so the loops over columns unroll */
    if (layout == CPU_LAYOUT_Q4_K_X8) {
        if (ncols == 4) {
            q4_K_x8_4(group, K / 256, y, y_stride, out);
            return;
        }
        for (int c = 0; c < ncols; c += 2) /* two at a time: 16 registers */
            if (ncols - c >= 2)
                q4_K_x8(group, K / 256, y + (size_t)c * y_stride, y_stride, 2, out + 8 * c);
            else
                q4_K_x8(group, K / 256, y + (size_t)c * y_stride, y_stride, 1, out + 8 * c);
        return;
    }
    /* two columns at a time: more would spill the accumulators to the stack */
    int64_t nblk = K / 32;
    if (layout == CPU_LAYOUT_Q4_0_X8 && ncols == 4) { /* a batch */
        q4_0_x8_4(group, nblk, y, y_stride, act, act_stride, out);
        return;
    }
    if (layout == CPU_LAYOUT_Q8_0_X8 && ncols == 4) {
        q8_0_x8_4(group, nblk, y, y_stride, act, act_stride, out);
        return;
    }
    for (int c = 0; c < ncols; c += 2) {
        const uint8_t *yc = y + (size_t)c * y_stride;
        const cpu_x8_act *ac = act + (size_t)c * act_stride;
        bool two = ncols - c >= 2;
        if (layout == CPU_LAYOUT_Q4_0_X8 && two)
            q4_0_x8(group, nblk, yc, y_stride, ac, act_stride, 2, out + 8 * c);
        else if (layout == CPU_LAYOUT_Q4_0_X8)
            q4_0_x8(group, nblk, yc, y_stride, ac, act_stride, 1, out + 8 * c);
        else if (two)
            q8_0_x8(group, nblk, yc, y_stride, ac, act_stride, 2, out + 8 * c);
        else
            q8_0_x8(group, nblk, yc, y_stride, ac, act_stride, 1, out + 8 * c);
    }
}

#else

bool cpu_x8_available(void) { return false; }

/* Never called: without the kernels, no weight is re-encoded. */
void cpu_x8_dot(int layout, const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride,
                const cpu_x8_act *act, size_t act_stride, int ncols, float *out) {
    (void)layout, (void)group, (void)K, (void)y, (void)y_stride, (void)act, (void)act_stride;
    memset(out, 0, (size_t)ncols * 8 * sizeof(float));
}

#endif

#if !CPU_X8_WIDE
/* Only the 512-bit kernels have a kernel for two groups at once (x8_task
 * pairs groups only with them); this keeps the meaning for the others. */
void cpu_x8_dot_pair(int layout, const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                     size_t y_stride, const cpu_x8_act *act, size_t act_stride, float *out) {
    cpu_x8_dot(layout, group, K, y, y_stride, act, act_stride, 4, out);
    cpu_x8_dot(layout, group + group_stride, K, y, y_stride, act, act_stride, 4, out + 32);
}

/* Only the 512-bit kernels have one for 8 columns (x8_task takes 8 at a
 * time only with them); this keeps the meaning for the others. */
void cpu_x8_dot8(int layout, const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                 size_t y_stride, const cpu_x8_act *act, size_t act_stride, int ncols, float *out) {
    for (int k = 0; k < (group_stride ? 2 : 1); k++)
        for (int c = 0; c < ncols; c += 4)
            cpu_x8_dot(layout, group + k * group_stride, K, y + (size_t)c * y_stride, y_stride,
                       act + (size_t)c * act_stride, act_stride, ncols - c < 4 ? ncols - c : 4, out + 64 * k + 8 * c);
}
#endif
