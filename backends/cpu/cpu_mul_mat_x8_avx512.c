/* mul_mat kernels on the x8 layouts for variants with AVX-512 VNNI: the
 * 512-bit counterpart of cpu_mul_mat_x8.c, on the layout with 8-byte
 * slices (CPU_X8_SLICE 8, cpu_repack.c).
 *
 * One 512-bit load of a chunk gives 8 quant bytes of each of the 8 rows:
 * row r in 32-bit lanes 2r (its first 4 bytes) and 2r + 1 (the next 4).
 * The activation's 8 matching bytes, broadcast as one 64-bit value, line
 * up with them, so VNNI's dpbusd (unsigned x signed bytes, groups of four
 * summed into int32) leaves each row's integer sum split over its two
 * lanes.  Against the 256-bit kernels that is half the instructions per
 * weight byte and per column: one broadcast load and one dpbusd for 64
 * bytes.
 *
 * The lanes stay split through the float scaling and accumulation (each
 * row's scale is put in both of its lanes) and are added only once per
 * output, at the end (fold_pairs) -- except for Q8_0 where the CPU takes
 * its batches of 8 columns and more on AMX tiles (cpu_mul_mat_amx_q8.c):
 * there a row's two lanes are added in integers once per block (an exact
 * sum), scaled and accumulated in the even lane, one dx dy isum per block
 * and row as the tiles do, so that a column gets the same bits whichever
 * path its batch takes.  That costs two instructions a block and column
 * (it slowed batches without AMX: RESULTS run 35), hence only where AMX
 * is used.  Q4_0 does the same where AMX is used: its batches of 8
 * columns and more go to AMX tiles too (cpu_mul_mat_amx_q4.c).
 *
 * Offsets, exact in integers:
 * - Q4_0's nibbles are used unsigned (0..15): sum((q - 8) y) = sum(q y) -
 *   8 sum(y);
 * - Q8_0's quants are stored offset by 128 (unsigned): sum(x y) =
 *   sum((x + 128) y) - 128 sum(y);
 * - Q4_K's mins' term comes from Q8_K's bsums as in the 256-bit kernels.
 * A lane of a Q4_K sub-block sums 16 products of at most 15 x 127 (30480),
 * so it fits int16 and the sub-block's scale is applied with one dpwssd
 * against (scale, 0) int16 pairs.
 *
 * Batches take two groups at once (legacy_z2, q4_K_z2: cpu_x8_dot_pair),
 * so that each activation broadcast feeds two dpbusd; Q4_K batches of 5
 * to 8 columns take all of them at once, one group at a time (q4_K_zw:
 * cpu_x8_dot8), so that each weight chunk is unpacked once for them and
 * the mins' term is shared by two columns.  Every output is summed in
 * the same order as in the one-group kernels, to the same bits. */
#include <string.h>

#include "cpu_internal.h"

#if CPU_X8_WIDE
#include <immintrin.h>

#include "cpu_vf.h"
#include "cpu_x8_q4k.h"


bool cpu_x8_available(void) { return true; }

#define Z_INLINE static inline __attribute__((always_inline))
#if defined(__clang__)
#define Z_NO_UNROLL _Pragma("clang loop unroll(disable)")
#elif defined(__GNUC__)
#define Z_NO_UNROLL _Pragma("GCC unroll 1")
#else
#define Z_NO_UNROLL
#endif

/* 8 activation bytes at p in every 64-bit lane. */
Z_INLINE __m512i bcast8(const uint8_t *p) {
    int64_t v;
    memcpy(&v, p, 8);
    return _mm512_set1_epi64(v);
}

/* The 8 rows' f16 scales at p as f32, row r in lanes 2r and 2r + 1. */
Z_INLINE __m512 scales_paired(const uint8_t *p) {
    const __m512 d = _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p)));
    return _mm512_permutexvar_ps(_mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0), d);
}

/* Row r's value, lanes 2r + 2r + 1 of v, as lane r of 8. */
Z_INLINE __m256 fold_pairs(__m512 v) {
    const __m512 odd = _mm512_castsi512_ps(_mm512_srli_epi64(_mm512_castps_si512(v), 32));
    return _mm256_castsi256_ps(_mm512_cvtepi64_epi32(_mm512_castps_si512(_mm512_add_ps(v, odd))));
}

/* Row r's value, lane 2r of v, as lane r of 8. */
Z_INLINE __m256 even_lanes(__m512 v) {
    return _mm256_castsi256_ps(_mm512_cvtepi64_epi32(_mm512_castps_si512(v)));
}

/* One column's share of a Q4_0/Q8_0 block: acc + dx dy (s - off sum(y))
 * per lane, off the weights' offset (see the top), or with FOLD in the
 * even lanes: acc + dx dy (s + s' - 2 off sum(y)), s and s' a row's two
 * lanes (the odd lanes then carry nothing of use). */
Z_INLINE __m512 legacy_finish(__m512 acc, __m512i s, __m512 dx, const cpu_x8_act *a, int off, const bool FOLD) {
    const __m512i row = FOLD ? _mm512_add_epi32(s, _mm512_srli_epi64(s, 32)) : s;
    const __m512i i = _mm512_sub_epi32(row, _mm512_set1_epi32((FOLD ? 2 : 1) * off * a->sum));
    return _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(a->d)), _mm512_cvtepi32_ps(i), acc);
}

/* The NC columns' Q4_0/Q8_0 row sums (legacy_finish) to out[8c + r]. */
Z_INLINE void store_legacy(float *out, const int NC, const __m512 acc[4], const bool FOLD) {
    for (int c = 0; c < NC; c++)
        _mm256_storeu_ps(out + 8 * c, FOLD ? even_lanes(acc[c]) : fold_pairs(acc[c]));
}

/* Whether Q8_0 folds its lanes per block (see the top). */
static bool fold_q8(void) {
#if CPU_AMX
    return cpu_amx_q8_on();
#else
    return false;
#endif
}

/* The NC columns' row sums (less m0..m3, the Q4_K mins' terms) to
 * out[8c + r]. */
Z_INLINE void store_cols(float *out, const int NC, __m512 a0, __m512 a1, __m512 a2, __m512 a3, __m256 m0,
                         __m256 m1, __m256 m2, __m256 m3) {
    _mm256_storeu_ps(out, _mm256_sub_ps(fold_pairs(a0), m0));
    if (NC > 1)
        _mm256_storeu_ps(out + 8, _mm256_sub_ps(fold_pairs(a1), m1));
    if (NC > 2)
        _mm256_storeu_ps(out + 16, _mm256_sub_ps(fold_pairs(a2), m2));
    if (NC > 3)
        _mm256_storeu_ps(out + 24, _mm256_sub_ps(fold_pairs(a3), m3));
}

/* s[c] += the products of the 8 rows' bytes u with the 8 bytes of column
 * c at q + c ys, for the NC columns. */
Z_INLINE void dot_cols(__m512i s[4], __m512i u, const uint8_t *q, size_t ys, const int NC) {
    for (int c = 0; c < NC; c++)
        s[c] = _mm512_dpbusd_epi32(s[c], u, bcast8(q + (size_t)c * ys));
}

/* Q4_0 (Q8 false: blocks of 16 + 2 x 64 bytes) or Q8_0 (Q8: 16 + 4 x 64,
 * quants + 128) group of nblk blocks against NC (1..4) Q8_0 columns
 * y + c ys, their block data act + c as. */
Z_INLINE void legacy_z(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                       size_t as, const int NC, const bool Q8, const bool FOLD, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512 acc[4];
    for (int c = 0; c < 4; c++)
        acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nblk; b++, g += Q8 ? 272 : 144, y += 34) {
        if (NC <= 2)
            vf_prefetch((uintptr_t)g + cpu_stream_ahead, Q8 ? 272 : 144);
        __m512i s[4];
        for (int c = 0; c < 4; c++)
            s[c] = _mm512_setzero_si512();
        for (int j = 0; j < (Q8 ? 4 : 2); j++) {
            if (NC > 2) /* a block's lines over its chunks, as legacy_z2 */
                _mm_prefetch((const char *)(g + cpu_batch_ahead + (Q8 ? 68 : 72) * j), CPU_BATCH_HINT);
            const __m512i p = _mm512_loadu_si512((const void *)(g + 16 + 64 * j));
            const uint8_t *q = y + 2 + 8 * j;
            if (Q8) {
                dot_cols(s, p, q, ys, NC);
            } else { /* low nibbles: elements 8j.., high: 16 + 8j.. */
                dot_cols(s, _mm512_and_si512(p, m4), q, ys, NC);
                dot_cols(s, _mm512_and_si512(_mm512_srli_epi16(p, 4), m4), q + 16, ys, NC);
            }
        }
        const __m512 dx = scales_paired(g);
        for (int c = 0; c < NC; c++)
            acc[c] = legacy_finish(acc[c], s[c], dx, act + (size_t)c * as + b, Q8 ? 64 : 4, FOLD);
    }
    store_legacy(out, NC, acc, FOLD);
}

/* The 4-column batch kernel of legacy_z on two groups at once, g and
 * g + gs (16 rows): each activation broadcast feeds two dpbusd instead of
 * one.  With one group, loads (the broadcasts, the weights, the finish's
 * operands) outnumber the dpbusd almost two to one and are what bounds
 * the kernel; here they are about one to one.  out[8c + r] for the first
 * group and out[32 + 8c + r] for the second. */
Z_INLINE void legacy_z2(const uint8_t *g, size_t gs, int64_t nblk, const uint8_t *y, size_t ys,
                        const cpu_x8_act *act, size_t as, const bool Q8, const bool FOLD, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uintptr_t ahead = cpu_batch_ahead;
    __m512 acc0[4], acc1[4];
    for (int c = 0; c < 4; c++)
        acc0[c] = acc1[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nblk; b++, g += Q8 ? 272 : 144, y += 34) {
        __m512i s0[4], s1[4];
        for (int c = 0; c < 4; c++)
            s0[c] = s1[c] = _mm512_setzero_si512();
        for (int j = 0; j < (Q8 ? 4 : 2); j++) {
            /* each group's lines ahead (cpu_batch_ahead), a quarter (half)
             * of a block's at each chunk: without, the Zen 5 waited on
             * memory here as in the Q4_K batch kernels (RESULTS run 51) */
            _mm_prefetch((const char *)(g + ahead + (Q8 ? 68 : 72) * j), CPU_BATCH_HINT);
            _mm_prefetch((const char *)(g + gs + ahead + (Q8 ? 68 : 72) * j), CPU_BATCH_HINT);
            const __m512i p0 = _mm512_loadu_si512((const void *)(g + 16 + 64 * j));
            const __m512i p1 = _mm512_loadu_si512((const void *)(g + gs + 16 + 64 * j));
            const uint8_t *q = y + 2 + 8 * j;
            if (Q8) {
                for (int c = 0; c < 4; c++) {
                    const __m512i v = bcast8(q + (size_t)c * ys);
                    s0[c] = _mm512_dpbusd_epi32(s0[c], p0, v);
                    s1[c] = _mm512_dpbusd_epi32(s1[c], p1, v);
                }
            } else { /* low nibbles: elements 8j.., high: 16 + 8j.. */
                const __m512i l0 = _mm512_and_si512(p0, m4), l1 = _mm512_and_si512(p1, m4);
                const __m512i h0 = _mm512_and_si512(_mm512_srli_epi16(p0, 4), m4);
                const __m512i h1 = _mm512_and_si512(_mm512_srli_epi16(p1, 4), m4);
                for (int c = 0; c < 4; c++) {
                    const __m512i vl = bcast8(q + (size_t)c * ys), vh = bcast8(q + (size_t)c * ys + 16);
                    s0[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s0[c], l0, vl), h0, vh);
                    s1[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s1[c], l1, vl), h1, vh);
                }
            }
        }
        const __m512 dx0 = scales_paired(g), dx1 = scales_paired(g + gs);
        for (int c = 0; c < 4; c++) {
            const cpu_x8_act *a = act + (size_t)c * as + b;
            acc0[c] = legacy_finish(acc0[c], s0[c], dx0, a, Q8 ? 64 : 4, FOLD);
            acc1[c] = legacy_finish(acc1[c], s1[c], dx1, a, Q8 ? 64 : 4, FOLD);
        }
    }
    store_legacy(out, 4, acc0, FOLD);
    store_legacy(out + 32, 4, acc1, FOLD);
}

/* Row r's 6-bit scale of sub-block j (sc[j][r] at g + 32 + 8j) as the
 * int16 pair (scale, 0) in lanes 2r and 2r + 1, for dpwssd. */
Z_INLINE __m512i q4_K_scale_paired(const uint8_t *g, int j) {
    const __m128i sc = _mm_loadl_epi64((const __m128i *)(const void *)(g + 32 + 8 * j));
    return _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(sc, sc));
}

/* One column's share of a Q4_K super-block: acc += d dy isum, macc += dmin
 * dy mins. */
Z_INLINE void q4_K_finish(const uint8_t *g, const uint8_t *yc, __m512 dx, __m256 mx, __m512i isum, __m512 *acc,
                          __m256 *macc) {
    float dy;
    memcpy(&dy, yc, 4);
    *acc = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy)), _mm512_cvtepi32_ps(isum), *acc);
    *macc = _mm256_fmadd_ps(_mm256_mul_ps(mx, _mm256_set1_ps(dy)), _mm256_cvtepi32_ps(cpu_x8_q4k_mins(g, yc)),
                            *macc);
}

/* Q4_K group (nsb super-blocks of 160 + 16 x 64 bytes) against NC (1..4)
 * Q8_K columns {f32 d; i8 qs[256]; i16 bsums[16]} (292 bytes each). */
Z_INLINE void q4_K_z(const uint8_t *g, int64_t nsb, const uint8_t *y, size_t ys, const int NC, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uintptr_t ahead = cpu_batch_ahead;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    __m256 macc0 = _mm256_setzero_ps(), macc1 = macc0, macc2 = macc0, macc3 = macc0;
    for (int64_t b = 0; b < nsb; b++, g += 1184, y += 292) {
        if (NC <= 2)
            vf_prefetch((uintptr_t)g + cpu_stream_ahead, 1184);
        __m512i i0 = _mm512_setzero_si512(), i1 = i0, i2 = i0, i3 = i0;
        for (int q = 0; q < 4; q++) { /* sub-blocks 2q (low nibbles) and 2q + 1 (high) */
            __m512i l0 = _mm512_setzero_si512(), l1 = l0, l2 = l0, l3 = l0, h0 = l0, h1 = l0, h2 = l0, h3 = l0;
            for (int c = 0; c < 4; c++) {
                if (NC > 2) /* a super-block's lines over its 16 steps, as q4_K_zw_sub */
                    _mm_prefetch((const char *)(g + ahead + 74 * (4 * q + c)), CPU_BATCH_HINT);
                const __m512i p = _mm512_loadu_si512((const void *)(g + 160 + 256 * q + 64 * c));
                const __m512i lo = _mm512_and_si512(p, m4), hi = _mm512_and_si512(_mm512_srli_epi16(p, 4), m4);
                const uint8_t *qy = y + 4 + 64 * q + 8 * c;
                l0 = _mm512_dpbusd_epi32(l0, lo, bcast8(qy));
                h0 = _mm512_dpbusd_epi32(h0, hi, bcast8(qy + 32));
                if (NC > 1) {
                    l1 = _mm512_dpbusd_epi32(l1, lo, bcast8(qy + ys));
                    h1 = _mm512_dpbusd_epi32(h1, hi, bcast8(qy + ys + 32));
                }
                if (NC > 2) {
                    l2 = _mm512_dpbusd_epi32(l2, lo, bcast8(qy + 2 * ys));
                    h2 = _mm512_dpbusd_epi32(h2, hi, bcast8(qy + 2 * ys + 32));
                }
                if (NC > 3) {
                    l3 = _mm512_dpbusd_epi32(l3, lo, bcast8(qy + 3 * ys));
                    h3 = _mm512_dpbusd_epi32(h3, hi, bcast8(qy + 3 * ys + 32));
                }
            }
            const __m512i sl = q4_K_scale_paired(g, 2 * q), sh = q4_K_scale_paired(g, 2 * q + 1);
            i0 = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(i0, l0, sl), h0, sh);
            if (NC > 1)
                i1 = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(i1, l1, sl), h1, sh);
            if (NC > 2)
                i2 = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(i2, l2, sl), h2, sh);
            if (NC > 3)
                i3 = _mm512_dpwssd_epi32(_mm512_dpwssd_epi32(i3, l3, sl), h3, sh);
        }
        const __m512 dx = scales_paired(g);
        const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(g + 16)));
        q4_K_finish(g, y, dx, mx, i0, &acc0, &macc0);
        if (NC > 1)
            q4_K_finish(g, y + ys, dx, mx, i1, &acc1, &macc1);
        if (NC > 2)
            q4_K_finish(g, y + 2 * ys, dx, mx, i2, &acc2, &macc2);
        if (NC > 3)
            q4_K_finish(g, y + 3 * ys, dx, mx, i3, &acc3, &macc3);
    }
    store_cols(out, NC, acc0, acc1, acc2, acc3, macc0, macc1, macc2, macc3);
}

#if defined(__clang__)
#define Z_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define Z_UNROLL _Pragma("GCC unroll 8")
#else
#define Z_UNROLL
#endif

/* Row r's 6-bit scales of sub-blocks 2q and 2q + 1 (sc[2q..2q+1][r] at
 * g + 32 + 16q) as the int16 pairs (scale, 0) of lanes 2r and 2r + 1:
 * one 16-byte broadcast and a byte shuffle for each, where
 * q4_K_scale_paired spends three instructions on each. */
Z_INLINE void q4_K_scales2(const uint8_t *g, int q, __m512i *sl, __m512i *sh) {
    const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(g + 32 + 16 * q)));
    /* 128-bit lane L holds rows 2L and 2L + 1, each in two 32-bit lanes */
    const int z = (int)0x80808000u; /* byte 0 a row's scale, the others zeroed */
    const __m512i cl = _mm512_set_epi32(z | 7, z | 7, z | 6, z | 6, z | 5, z | 5, z | 4, z | 4, z | 3, z | 3, z | 2,
                                        z | 2, z | 1, z | 1, z, z);
    *sl = _mm512_shuffle_epi8(v, cl);
    *sh = _mm512_shuffle_epi8(v, _mm512_add_epi32(cl, _mm512_set1_epi32(8)));
}

/* cpu_x8_q4k_mins in 512 bits: pairs of sub-blocks (0, 1) and (2, 3) in
 * the two halves of one madd, (4, 5) and (6, 7) in another. */
Z_INLINE __m256i q4_K_mins1(const uint8_t *g, const uint8_t *yb) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)(yb + 260));
    const __m256i s32 = _mm256_madd_epi16(bs, _mm256_set1_epi16(1));
    /* int16 pairs (2p, 2p + 1) in 32-bit lanes 0, 1, 4, 5 for p = 0..3 */
    const __m512i pairs = _mm512_castsi256_si512(_mm256_packs_epi32(s32, s32));
    const __m512i p01 = _mm512_permutexvar_epi32(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), pairs);
    const __m512i p23 = _mm512_permutexvar_epi32(_mm512_set_epi32(5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4), pairs);
    const __m512i m01 = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(g + 96)));
    const __m512i m23 = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(g + 128)));
    const __m512i m = _mm512_add_epi32(_mm512_madd_epi16(m01, p01), _mm512_madd_epi16(m23, p23));
    return _mm256_add_epi32(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
}

/* q4_K_z for one column (generation), which streams the weights once
 * and has to keep up with memory: fewer vector instructions a 64-byte
 * chunk and a super-block.  The high nibbles are used in place (16 q,
 * 0..240 unsigned: one AND and no shift a chunk), their sub-block's sum
 * is 16 times the sum and is divided exactly by one arithmetic shift
 * before its scale; the loops are unrolled, each sub-block's sum its own
 * chain and the scaled sums in two; the scales and the mins' term take
 * fewer instructions; and the super-block's lines are prefetched one a
 * step rather than all at once (a burst of them fills the line buffers).
 * The integer sums are exact, so the same as q4_K_z's, and the float
 * steps are q4_K_finish's: the same bits.  (Two columns this way were no
 * faster than q4_K_z from memory, so group_dot keeps q4_K_z for them.) */
Z_INLINE void q4_K_z1(const uint8_t *g, int64_t nsb, const uint8_t *y, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uintptr_t ahead = cpu_stream_ahead;
    __m512 acc = _mm512_setzero_ps();
    __m256 macc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, g += 1184, y += 292) {
        __m512i ia = _mm512_setzero_si512(), ib = _mm512_setzero_si512();
        Z_UNROLL
        for (int q = 0; q < 4; q++) { /* sub-blocks 2q (low nibbles) and 2q + 1 (high) */
            __m512i l = _mm512_setzero_si512(), h = _mm512_setzero_si512();
            Z_UNROLL
            for (int c = 0; c < 4; c++) {
                _mm_prefetch((const char *)(g + ahead + 64 * (4 * q + c)), _MM_HINT_T0);
                const __m512i p = _mm512_loadu_si512((const void *)(g + 160 + 256 * q + 64 * c));
                const __m512i lo = _mm512_and_si512(p, m4), hi16 = _mm512_andnot_si512(m4, p);
                const uint8_t *qy = y + 4 + 64 * q + 8 * c;
                l = _mm512_dpbusd_epi32(l, lo, bcast8(qy));
                h = _mm512_dpbusd_epi32(h, hi16, bcast8(qy + 32));
            }
            __m512i sl, sh;
            q4_K_scales2(g, q, &sl, &sh);
            ia = _mm512_dpwssd_epi32(ia, l, sl);
            ib = _mm512_dpwssd_epi32(ib, _mm512_srai_epi32(h, 4), sh);
        }
        /* the lines past the 16 above: 1184 bytes reach into a 19th */
        for (int k = 16; k < 19; k++)
            _mm_prefetch((const char *)(g + ahead + 64 * k), _MM_HINT_T0);
        const __m512 dx = scales_paired(g);
        const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(g + 16)));
        float dy;
        memcpy(&dy, y, 4);
        acc = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy)), _mm512_cvtepi32_ps(_mm512_add_epi32(ia, ib)), acc);
        macc = _mm256_fmadd_ps(_mm256_mul_ps(mx, _mm256_set1_ps(dy)), _mm256_cvtepi32_ps(q4_K_mins1(g, y)), macc);
    }
    store_cols(out, 1, acc, acc, acc, acc, macc, macc, macc, macc);
}

/* One sub-block (pair q, high nibbles or low) of q4_K_z2: the two groups'
 * integer sums against four columns, scaled into isum. */
Z_INLINE void q4_K_sub2(const uint8_t *g, size_t gs, const uint8_t *y, size_t ys, int q, const int high,
                        __m512i isum[2][4]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i l[2][4];
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 4; c++)
            l[k][c] = _mm512_setzero_si512();
    for (int ch = 0; ch < 4; ch++) {
        __m512i v[4];
        for (int c = 0; c < 4; c++)
            v[c] = bcast8(y + (size_t)c * ys + 4 + 64 * q + 8 * ch + 32 * high);
        for (int k = 0; k < 2; k++) {
            /* each group's lines over a super-block's 32 steps, as q4_K_zw_sub */
            _mm_prefetch((const char *)(g + k * gs + cpu_batch_ahead + 37 * (8 * q + 4 * high + ch)), CPU_BATCH_HINT);
            const __m512i p = _mm512_loadu_si512((const void *)(g + k * gs + 160 + 256 * q + 64 * ch));
            const __m512i w = _mm512_and_si512(high ? _mm512_srli_epi16(p, 4) : p, m4);
            for (int c = 0; c < 4; c++)
                l[k][c] = _mm512_dpbusd_epi32(l[k][c], w, v[c]);
        }
    }
    for (int k = 0; k < 2; k++) {
        const __m512i sc = q4_K_scale_paired(g + k * gs, 2 * q + high);
        for (int c = 0; c < 4; c++)
            isum[k][c] = _mm512_dpwssd_epi32(isum[k][c], l[k][c], sc);
    }
}

/* The 4-column batch kernel of q4_K_z on two groups at once, g and g +
 * gs, as legacy_z2.  The low and high sub-blocks of each pair go in
 * separate passes (each weight chunk is loaded twice) so that the
 * integer sums of both groups and four columns fit the registers.
 * out[8c + r] for the first group and out[32 + 8c + r] for the second. */
Z_INLINE void q4_K_z2(const uint8_t *g, size_t gs, int64_t nsb, const uint8_t *y, size_t ys, float *out) {
    __m512 acc[2][4];
    __m256 macc[2][4];
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 4; c++)
            acc[k][c] = _mm512_setzero_ps(), macc[k][c] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, g += 1184, y += 292) {
        __m512i isum[2][4];
        for (int k = 0; k < 2; k++)
            for (int c = 0; c < 4; c++)
                isum[k][c] = _mm512_setzero_si512();
        Z_NO_UNROLL /* unrolled, the sums of the four pairs do not fit the registers */
        for (int q = 0; q < 4; q++) {
            q4_K_sub2(g, gs, y, ys, q, 0, isum);
            q4_K_sub2(g, gs, y, ys, q, 1, isum);
        }
        for (int k = 0; k < 2; k++) {
            const uint8_t *gk = g + k * gs;
            const __m512 dx = scales_paired(gk);
            const __m256 mx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(gk + 16)));
            for (int c = 0; c < 4; c++)
                q4_K_finish(gk, y + (size_t)c * ys, dx, mx, isum[k][c], &acc[k][c], &macc[k][c]);
        }
    }
    for (int k = 0; k < 2; k++)
        store_cols(out + 32 * k, 4, acc[k][0], acc[k][1], acc[k][2], acc[k][3], macc[k][0], macc[k][1], macc[k][2],
                   macc[k][3]);
}

/* Rows' mins of sub-blocks 2p and 2p + 1 (mn[p][r][0..1] at g + 96 +
 * 16p) as the int16 pair of lanes 2r and 2r + 1. */
Z_INLINE __m512i q4_K_mins_paired(const uint8_t *g, int p) {
    static const int8_t ctl[64] = {0,  -128, 1,  -128, 0,  -128, 1,  -128, 2,  -128, 3,  -128, 2,  -128, 3,  -128,
                                   4,  -128, 5,  -128, 4,  -128, 5,  -128, 6,  -128, 7,  -128, 6,  -128, 7,  -128,
                                   8,  -128, 9,  -128, 8,  -128, 9,  -128, 10, -128, 11, -128, 10, -128, 11, -128,
                                   12, -128, 13, -128, 12, -128, 13, -128, 14, -128, 15, -128, 14, -128, 15, -128};
    const __m512i v = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)(g + 96 + 16 * p)));
    return _mm512_shuffle_epi8(v, _mm512_loadu_si512((const void *)ctl));
}

/* Sub-block 2q + high of q4_K_zw: the group's integer sums against the
 * NC columns, scaled into isum. */
Z_INLINE void q4_K_zw_sub(const uint8_t *g, uintptr_t ahead, const uint8_t *y, size_t ys, int q, const int high,
                          const int NC, __m512i isum[8]) {
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i l[8];
    for (int c = 0; c < NC; c++)
        l[c] = _mm512_setzero_si512();
    for (int ch = 0; ch < 4; ch++) {
        /* the weights ahead bytes on (cpu_batch_ahead: the next super-block on the Xeon, 8 KiB on the Zen 5,
         * cpu_prefetch.c), a little at each step (37 bytes: a super-block's lines in the 32 steps of one),
         * ahead of the hardware prefetchers and without a burst that fills the line buffers */
        _mm_prefetch((const char *)(g + ahead + 37 * (8 * q + 4 * high + ch)), CPU_BATCH_HINT);
        const __m512i p = _mm512_loadu_si512((const void *)(g + 160 + 256 * q + 64 * ch));
        const __m512i w = _mm512_and_si512(high ? _mm512_srli_epi16(p, 4) : p, m4);
        const uint8_t *qy = y + 4 + 64 * q + 8 * ch + 32 * high;
        for (int c = 0; c < NC; c++)
            l[c] = _mm512_dpbusd_epi32(l[c], w, bcast8(qy + (size_t)c * ys));
    }
    const __m512i sc = q4_K_scale_paired(g, 2 * q + high);
    for (int c = 0; c < NC; c++)
        isum[c] = _mm512_dpwssd_epi32(isum[c], l[c], sc);
}

/* One group against NC (5..8) columns, each weight chunk loaded and
 * unpacked once for all of them: out[8c + r].
 *
 * Per column the integer sums of q4_K_z and the same float steps, so the
 * same bits; what is shared is the work of the columns' finish.  The
 * mins' term takes columns two at a time, interleaved as a row's two
 * lanes are elsewhere (column a in lane 2r, b in 2r + 1): the columns'
 * sub-block sums are paired once a super-block (packs as in
 * cpu_x8_q4k_mins, then one 64-bit broadcast per pair of sub-blocks), so
 * that the term of two columns is four dpwssd and one multiply-add, where
 * cpu_x8_q4k_mins spends about sixteen instructions on each column.
 *
 * One group, not two at once as q4_K_z2 (x8_task's pairs of groups go
 * one after the other, cpu_x8_dot8): the sums of two groups (2 NC each,
 * the sub-block's and the super-block's) and their chunks did not fit
 * the 32 registers, and each group alone took fewer cycles in the kernel
 * for 5, 6 and 8 columns (profiles of 5, 6 and 8 streams of a Q4_K
 * model), its extra broadcasts being loads, not arithmetic.
 *
 * On the Zen 5, with the weights prefetched far enough (cpu_batch_ahead),
 * it runs as fast from DRAM as from L2, bound by the dpbusd and
 * broadcast loads a super-block needs.  No faster there
 * (RESULTS run 50): a sub-block pair's two sums as the int16 pairs of
 * one dpwssd (half the dpwssd, but the pairing, a shift and a word blend
 * or a vpermt2w, is slow on that core), and q4_K_z2 twice for 8 columns
 * on two groups. */
Z_INLINE void q4_K_zw(const uint8_t *g, int64_t nsb, const uint8_t *y, size_t ys, const int NC, float *out) {
    const int NP = (NC + 1) / 2;
    const uintptr_t ahead = cpu_batch_ahead;
    __m512 acc[8], macc[4];
    for (int c = 0; c < 8; c++)
        acc[c] = _mm512_setzero_ps();
    for (int cp = 0; cp < 4; cp++)
        macc[cp] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nsb; b++, g += 1184, y += 292) {
        __m512i isum[8];
        for (int c = 0; c < 8; c++)
            isum[c] = _mm512_setzero_si512();
        Z_NO_UNROLL
        for (int q = 0; q < 4; q++) {
            q4_K_zw_sub(g, ahead, y, ys, q, 0, NC, isum);
            q4_K_zw_sub(g, ahead, y, ys, q, 1, NC, isum);
        }
        /* column pair cp: columns 2cp and 2cp + 1 (2cp again past NC) */
        int64_t pairs[4][4];
        uint64_t dys[4];
        for (int cp = 0; cp < NP; cp++) {
            const uint8_t *ya = y + (size_t)(2 * cp) * ys, *yb = 2 * cp + 1 < NC ? ya + ys : ya;
            const __m256i one = _mm256_set1_epi16(1);
            const __m256i sa = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(ya + 260)), one);
            const __m256i sbb = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(yb + 260)), one);
            /* int16 pairs of sub-blocks (2p, 2p + 1): a's then b's for p 0, 1 (2, 3 in the high half), to
             * (a p, b p) in 64-bit unit p */
            const __m256i pk = _mm256_shuffle_epi32(_mm256_packs_epi32(sa, sbb), _MM_SHUFFLE(3, 1, 2, 0));
            _mm256_storeu_si256((__m256i *)(void *)pairs[cp], pk);
            memcpy(&dys[cp], ya, 4);
            memcpy((uint8_t *)&dys[cp] + 4, yb, 4);
        }
        const __m512 dx = scales_paired(g), mx = scales_paired(g + 16);
        for (int c = 0; c < NC; c++) {
            float dy;
            memcpy(&dy, y + (size_t)c * ys, 4);
            acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(dy)), _mm512_cvtepi32_ps(isum[c]), acc[c]);
        }
        __m512i mn[4];
        for (int p = 0; p < 4; p++)
            mn[p] = q4_K_mins_paired(g, p);
        for (int cp = 0; cp < NP; cp++) {
            __m512i m = _mm512_setzero_si512();
            for (int p = 0; p < 4; p++)
                m = _mm512_dpwssd_epi32(m, mn[p], _mm512_set1_epi64(pairs[cp][p]));
            const __m512 dy2 = _mm512_castsi512_ps(_mm512_set1_epi64((int64_t)dys[cp]));
            macc[cp] = _mm512_fmadd_ps(_mm512_mul_ps(mx, dy2), _mm512_cvtepi32_ps(m), macc[cp]);
        }
    }
    for (int c = 0; c < NC; c++) {
        const __m512 mc = c & 1 ? _mm512_castsi512_ps(_mm512_srli_epi64(_mm512_castps_si512(macc[c / 2]), 32))
                                : macc[c / 2];
        _mm256_storeu_ps(out + 8 * c, _mm256_sub_ps(fold_pairs(acc[c]), even_lanes(mc)));
    }
}

void cpu_x8_dot_pair(int layout, const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                     size_t y_stride, const cpu_x8_act *act, size_t act_stride, float *out) {
    if (layout == CPU_LAYOUT_Q4_K_X8)
        q4_K_z2(group, group_stride, K / 256, y, y_stride, out);
    else if (layout == CPU_LAYOUT_Q6_K_X8)
        cpu_x8_q6k_dot_pair(group, group_stride, K, y, y_stride, out);
    else if (layout == CPU_LAYOUT_MXFP4_X8) /* AMX takes its batches too (cpu_mul_mat_amx_q4.c) */
        cpu_x8_mxfp4_dot_pair(group, group_stride, K, y, y_stride, act, act_stride, fold_q8(), out);
    else if (layout == CPU_LAYOUT_Q8_0_X8 && fold_q8())
        legacy_z2(group, group_stride, K / 32, y, y_stride, act, act_stride, true, true, out);
    else if (layout == CPU_LAYOUT_Q8_0_X8)
        legacy_z2(group, group_stride, K / 32, y, y_stride, act, act_stride, true, false, out);
    else if (fold_q8()) /* Q4_0, whose batches AMX takes too (cpu_mul_mat_amx_q4.c) */
        legacy_z2(group, group_stride, K / 32, y, y_stride, act, act_stride, false, true, out);
    else
        legacy_z2(group, group_stride, K / 32, y, y_stride, act, act_stride, false, false, out);
}

/* One group against NC columns in the kernel of its layout. */
Z_INLINE void group_dot(int layout, const uint8_t *group, int64_t K, const uint8_t *y, size_t ys,
                        const cpu_x8_act *act, size_t as, const int NC, float *out) {
    if (layout == CPU_LAYOUT_Q4_K_X8 && NC == 1)
        q4_K_z1(group, K / 256, y, out);
    else if (layout == CPU_LAYOUT_Q4_K_X8)
        q4_K_z(group, K / 256, y, ys, NC, out);
    else if (layout == CPU_LAYOUT_Q8_0_X8 && fold_q8())
        legacy_z(group, K / 32, y, ys, act, as, NC, true, true, out);
    else if (layout == CPU_LAYOUT_Q4_0_X8 && fold_q8()) /* as Q8_0: AMX takes its batches too */
        legacy_z(group, K / 32, y, ys, act, as, NC, false, true, out);
    else
        legacy_z(group, K / 32, y, ys, act, as, NC, layout == CPU_LAYOUT_Q8_0_X8, false, out);
}

void cpu_x8_dot(int layout, const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride,
                const cpu_x8_act *act, size_t act_stride, int ncols, float *out) {
    if (layout == CPU_LAYOUT_MXFP4_X8) {
        cpu_x8_mxfp4_dot(group, K, y, y_stride, act, act_stride, ncols, fold_q8(), out);
        return;
    }
    if (layout == CPU_LAYOUT_Q6_K_X8) {
        cpu_x8_q6k_dot(group, K, y, y_stride, ncols, out);
        return;
    }
    /* constant column counts, so the tests on NC fold away */
    switch (ncols) {
    case 1: group_dot(layout, group, K, y, y_stride, act, act_stride, 1, out); break;
    case 2: group_dot(layout, group, K, y, y_stride, act, act_stride, 2, out); break;
    case 3: group_dot(layout, group, K, y, y_stride, act, act_stride, 3, out); break;
    default: group_dot(layout, group, K, y, y_stride, act, act_stride, 4, out); break;
    }
}

void cpu_x8_dot8(int layout, const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                 size_t y_stride, const cpu_x8_act *act, size_t act_stride, int ncols, float *out) {
    if (layout == CPU_LAYOUT_Q6_K_X8) {
        cpu_x8_q6k_dot8(group, group_stride, K, y, y_stride, ncols, out);
        return;
    }
    if (layout != CPU_LAYOUT_Q4_K_X8) { /* x8_task takes 8 columns of Q4_K and Q6_K only */
        for (int k = 0; k < (group_stride ? 2 : 1); k++)
            for (int c = 0; c < ncols; c += 4)
                cpu_x8_dot(layout, group + k * group_stride, K, y + (size_t)c * y_stride, y_stride,
                           act + (size_t)c * act_stride, act_stride, ncols - c < 4 ? ncols - c : 4,
                           out + 64 * k + 8 * c);
        return;
    }
    /* the groups one after the other (see q4_K_zw); constant counts, so
     * the loops over columns unroll */
    for (int k = 0; k < (group_stride ? 2 : 1); k++) {
        const uint8_t *gk = group + k * group_stride;
        switch (ncols) {
        case 5: q4_K_zw(gk, K / 256, y, y_stride, 5, out + 64 * k); break;
        case 6: q4_K_zw(gk, K / 256, y, y_stride, 6, out + 64 * k); break;
        case 7: q4_K_zw(gk, K / 256, y, y_stride, 7, out + 64 * k); break;
        default: q4_K_zw(gk, K / 256, y, y_stride, 8, out + 64 * k); break;
        }
    }
}

#endif
