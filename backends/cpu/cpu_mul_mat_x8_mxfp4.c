/* MXFP4 in the x8 layout (cpu_repack.c) and its mul_mat kernels for the
 * variants with AVX-512 VNNI (CPU_X8_WIDE; elsewhere MXFP4 weights keep
 * the file's layout).
 *
 * Layout: for each group of 8 rows and each block b (32 elements) of a
 * row, 136 bytes, exactly what the 8 rows' blocks took (17 bytes each):
 *     uint8_t e[8]          the 8 rows' E8M0 exponents, row r at e[r]
 *     then 2 chunks of 64 bytes; chunk j holds bytes 8j .. 8j + 7 of each
 *     row's 16 nibble bytes, row r at bytes 8r .. 8r + 7 of the chunk
 * as Q4_0's 512-bit x8 layout with a byte for the scale instead of an
 * f16.  A nibble byte holds element i (low) and i + 16 (high).
 *
 * Kernels: one 512-bit load of a chunk gives 8 nibble bytes of each of the
 * 8 rows (row r in 32-bit lanes 2r and 2r + 1); the nibbles are looked up
 * (vpshufb) in ggml's MXFP4 value table (the E2M1 values doubled, -12 ..
 * 12) stored plus 128, unsigned for VNNI's dpbusd (unsigned x signed),
 * against the activation's 8 matching bytes broadcast.  The offset comes
 * off as 128 sum(y) per block from the activation's block sum
 * (cpu_x8_act), exact in integers.  The block's scale is ggml's: the
 * doubled table's values times 2^(e-128) (E8M0 halved, subnormal for e <
 * 2), times the activation's f16 scale.
 *
 * Float order: as the Q4_0 kernels (cpu_mul_mat_x8_avx512.c), a row's two
 * lanes are scaled and accumulated apart and added at the end, or, with
 * `fold` (where the CPU takes MXFP4 batches on AMX tiles,
 * cpu_mul_mat_amx_q4.c), added in integers once per block and
 * accumulated as acc + (dx dy) isum, block by block, as the tiles do, so
 * that a column gets the same bits whichever path its batch takes.  The
 * two-group kernel sums every output in the same order as the one-group
 * kernel. */
#include <string.h>

#include "cpu_internal.h"
#include "quant/quant_kernels.h"

enum { MX_BLOCK = 17, MX_GROUP_BLOCK = 8 + 8 * 16 };

void cpu_x8_mxfp4_encode(const uint8_t *plain, size_t row_bytes, int64_t nblk, uint8_t *dst) {
    for (int64_t b = 0; b < nblk; b++) {
        uint8_t *out = dst + (size_t)b * MX_GROUP_BLOCK;
        for (int r = 0; r < 8; r++) {
            const uint8_t *blk = plain + (size_t)r * row_bytes + (size_t)b * MX_BLOCK;
            out[r] = blk[0];
            memcpy(out + 8 + 8 * r, blk + 1, 8);
            memcpy(out + 8 + 64 + 8 * r, blk + 9, 8);
        }
    }
}

void cpu_x8_mxfp4_row(const uint8_t *group, int r, int64_t nblk, uint8_t *out) {
    for (int64_t b = 0; b < nblk; b++) {
        const uint8_t *g = group + (size_t)b * MX_GROUP_BLOCK;
        uint8_t *blk = out + (size_t)b * MX_BLOCK;
        blk[0] = g[r];
        memcpy(blk + 1, g + 8 + 8 * r, 8);
        memcpy(blk + 9, g + 8 + 64 + 8 * r, 8);
    }
}

#if CPU_X8_WIDE
#include <immintrin.h>

#include "cpu_vf.h"

#define MX_INLINE static inline __attribute__((always_inline))

/* 8 activation bytes at p in every 64-bit lane. */
MX_INLINE __m512i mx_bcast8(const uint8_t *p) {
    int64_t v;
    memcpy(&v, p, 8);
    return _mm512_set1_epi64(v);
}

/* The 8 rows' exponents at g as ggml's halved E8M0 scales (cpuq_e8m0_half),
 * row r in lanes 2r and 2r + 1. */
MX_INLINE __m512 mx_scales_paired(const uint8_t *g) {
    const __m128i e8 = _mm_loadl_epi64((const __m128i *)(const void *)g);
    const __m512i e = _mm512_cvtepu8_epi32(_mm_unpacklo_epi8(e8, e8));
    const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    const __m512i sub = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
    const __mmask16 tiny = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2));
    return _mm512_castsi512_ps(_mm512_mask_blend_epi32(tiny, normal, sub));
}

/* ggml's value table plus 128 in each 128-bit lane. */
MX_INLINE __m512i mx_table(void) {
    return _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)CPUQ(kvalues_mxfp4))),
                            _mm512_set1_epi8((char)0x80));
}

/* One column's share of a block: acc + dx dy (s - 64 sum(y)) per lane
 * (each of a row's two lanes carries half of the 128 sum(y) offset), or
 * with FOLD in the even lanes acc + dx dy (s + s' - 128 sum(y)). */
MX_INLINE __m512 mx_finish(__m512 acc, __m512i s, __m512 dx, const cpu_x8_act *a, const bool FOLD) {
    const __m512i row = FOLD ? _mm512_add_epi32(s, _mm512_srli_epi64(s, 32)) : s;
    const __m512i i = _mm512_sub_epi32(row, _mm512_set1_epi32((FOLD ? 128 : 64) * a->sum));
    return _mm512_fmadd_ps(_mm512_mul_ps(dx, _mm512_set1_ps(a->d)), _mm512_cvtepi32_ps(i), acc);
}

/* The NC columns' row sums to out[8c + r]. */
MX_INLINE void mx_store(float *out, const int NC, const __m512 acc[4], const bool FOLD) {
    for (int c = 0; c < NC; c++) {
        __m512 v = acc[c];
        if (!FOLD) /* lane 2r + 2r + 1 */
            v = _mm512_add_ps(v, _mm512_castsi512_ps(_mm512_srli_epi64(_mm512_castps_si512(v), 32)));
        _mm256_storeu_ps(out + 8 * c, _mm256_castsi256_ps(_mm512_cvtepi64_epi32(_mm512_castps_si512(v))));
    }
}

/* One group of nblk blocks against NC (1..4) Q8_0 columns y + c ys, their
 * block data act + c as. */
MX_INLINE void mx_z(const uint8_t *g, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act, size_t as,
                    const int NC, const bool FOLD, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), tbl = mx_table();
    __m512 acc[4];
    for (int c = 0; c < 4; c++)
        acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nblk; b++, g += MX_GROUP_BLOCK, y += 34) {
        if (NC <= 2)
            vf_prefetch((uintptr_t)g + cpu_stream_ahead, MX_GROUP_BLOCK);
        __m512i s[4];
        for (int c = 0; c < 4; c++)
            s[c] = _mm512_setzero_si512();
        for (int j = 0; j < 2; j++) {
            const __m512i p = _mm512_loadu_si512((const void *)(g + 8 + 64 * j));
            const __m512i lo = _mm512_shuffle_epi8(tbl, _mm512_and_si512(p, m4));
            const __m512i hi = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(p, 4), m4));
            const uint8_t *q = y + 2 + 8 * j; /* low nibbles: elements 8j.., high: 16 + 8j.. */
            for (int c = 0; c < NC; c++)
                s[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s[c], lo, mx_bcast8(q + (size_t)c * ys)), hi,
                                           mx_bcast8(q + (size_t)c * ys + 16));
        }
        const __m512 dx = mx_scales_paired(g);
        for (int c = 0; c < NC; c++)
            acc[c] = mx_finish(acc[c], s[c], dx, act + (size_t)c * as + b, FOLD);
    }
    mx_store(out, NC, acc, FOLD);
}

/* mx_z for 4 columns on two groups at once, g and g + gs: each activation
 * broadcast feeds two dpbusd (as legacy_z2 in cpu_mul_mat_x8_avx512.c).
 * out[8c + r] for the first group, out[32 + 8c + r] for the second. */
MX_INLINE void mx_z2(const uint8_t *g, size_t gs, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                     size_t as, const bool FOLD, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), tbl = mx_table();
    __m512 acc0[4], acc1[4];
    for (int c = 0; c < 4; c++)
        acc0[c] = acc1[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nblk; b++, g += MX_GROUP_BLOCK, y += 34) {
        __m512i s0[4], s1[4];
        for (int c = 0; c < 4; c++)
            s0[c] = s1[c] = _mm512_setzero_si512();
        for (int j = 0; j < 2; j++) {
            const __m512i p0 = _mm512_loadu_si512((const void *)(g + 8 + 64 * j));
            const __m512i p1 = _mm512_loadu_si512((const void *)(g + gs + 8 + 64 * j));
            const __m512i l0 = _mm512_shuffle_epi8(tbl, _mm512_and_si512(p0, m4));
            const __m512i l1 = _mm512_shuffle_epi8(tbl, _mm512_and_si512(p1, m4));
            const __m512i h0 = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(p0, 4), m4));
            const __m512i h1 = _mm512_shuffle_epi8(tbl, _mm512_and_si512(_mm512_srli_epi16(p1, 4), m4));
            const uint8_t *q = y + 2 + 8 * j;
            for (int c = 0; c < 4; c++) {
                const __m512i vl = mx_bcast8(q + (size_t)c * ys), vh = mx_bcast8(q + (size_t)c * ys + 16);
                s0[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s0[c], l0, vl), h0, vh);
                s1[c] = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(s1[c], l1, vl), h1, vh);
            }
        }
        const __m512 dx0 = mx_scales_paired(g), dx1 = mx_scales_paired(g + gs);
        for (int c = 0; c < 4; c++) {
            const cpu_x8_act *a = act + (size_t)c * as + b;
            acc0[c] = mx_finish(acc0[c], s0[c], dx0, a, FOLD);
            acc1[c] = mx_finish(acc1[c], s1[c], dx1, a, FOLD);
        }
    }
    mx_store(out, 4, acc0, FOLD);
    mx_store(out + 32, 4, acc1, FOLD);
}

MX_INLINE void mx_cols(const uint8_t *group, int64_t nblk, const uint8_t *y, size_t ys, const cpu_x8_act *act,
                       size_t as, int ncols, const bool FOLD, float *out) {
    /* constant column counts, so the tests on NC fold away */
    switch (ncols) {
    case 1: mx_z(group, nblk, y, ys, act, as, 1, FOLD, out); break;
    case 2: mx_z(group, nblk, y, ys, act, as, 2, FOLD, out); break;
    case 3: mx_z(group, nblk, y, ys, act, as, 3, FOLD, out); break;
    default: mx_z(group, nblk, y, ys, act, as, 4, FOLD, out); break;
    }
}

void cpu_x8_mxfp4_dot(const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride, const cpu_x8_act *act,
                      size_t act_stride, int ncols, bool fold, float *out) {
    if (fold)
        mx_cols(group, K / 32, y, y_stride, act, act_stride, ncols, true, out);
    else
        mx_cols(group, K / 32, y, y_stride, act, act_stride, ncols, false, out);
}

void cpu_x8_mxfp4_dot_pair(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y, size_t y_stride,
                           const cpu_x8_act *act, size_t act_stride, bool fold, float *out) {
    if (fold)
        mx_z2(group, group_stride, K / 32, y, y_stride, act, act_stride, true, out);
    else
        mx_z2(group, group_stride, K / 32, y, y_stride, act, act_stride, false, out);
}
#endif
