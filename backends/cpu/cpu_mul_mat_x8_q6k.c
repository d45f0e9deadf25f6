/* Q6_K in an x8 layout (cpu_repack.c) and its mul_mat kernels for the
 * variants with AVX-512 VNNI (CPU_X8_WIDE; elsewhere Q6_K weights keep
 * the file's layout).  Stacks of experts take it (mul_mat_id reads them),
 * and so do matrices (a Q4_K_M file's output and some attn_v / ffn_down)
 * unless the CPU takes K-quant batches on AMX tiles: with the 5..8-column
 * kernel (cpu_x8_q6k_dot8) every batch size ran faster here than in the
 * plain layout's q6tile kernel (cpu_mul_mat_q6tile.c), and one column as
 * fast as the row kernel (issue 42; RESULTS run 50).
 *
 * Layout: for each group of 8 rows and each super-block (256 elements),
 * 1680 bytes, exactly what the 8 rows' blocks took (210 bytes each):
 *     uint16_t d[8]          the rows' f16 scales, row r at d[r]
 *     int8_t sc[8][8][2]     sc[p][r][i]: row r's scale of sub-block 2p + i
 *                            (16 elements each)
 *     8 chunks of 64 bytes   the high 2 bits: chunk w holds 8 bytes of each
 *                            row (row r at bytes 8r .. 8r + 7); its byte i
 *                            has element 8w + 64k + i's bits at 2k, 2k + 1
 *     16 chunks of 64 bytes  the low 4 bits: chunk c, row r at bytes 8r ..
 *                            8r + 7; byte i has element 8c + i in its low
 *                            nibble, element 128 + 8c + i in its high one
 * so one 512-bit load of each plane gives 8 consecutive elements of all 8
 * rows, lined up with 8 activation bytes broadcast (as the other 512-bit
 * x8 kernels: row r in 32-bit lanes 2r and 2r + 1).
 *
 * Kernels: a value u (0..63) is a nibble and 2 high bits joined with one
 * ternary-logic op; VNNI's dpbusd (unsigned x signed) sums 4 products a
 * lane, at most 4 x 63 x 128 in magnitude, so the lane fits int16 and the
 * sub-block's scale is applied with one dpwssd against (scale, 0) int16
 * pairs (a word permute puts a row's scale in both of its lanes).  The -32
 * offset of every value comes off per super-block as 32 sum_j sc_j
 * bsum_j, from Q8_K's sub-block sums.  A row's two lanes are added in
 * integers; each output is then acc = fma(dx dy, isum, acc) super-block
 * by super-block, dx the row's d and dy the column's, the same steps for
 * every column count and for one group or two, so a column gets the same
 * bits in any batch.  isum is ggml's exact integer sum (at most 256 x 63
 * x 128 x 128 before the offset: no overflow). */
#include <string.h>

#include "cpu_internal.h"

enum { Q6_BLOCK = 210, Q6_GROUP = 1680, Q6_SC = 16, Q6_H = 144, Q6_L = 656 };

/* Row r's 256 values (0..63, the quants plus 32) of a plain block. */
static void q6_values(const uint8_t *blk, uint8_t u[256]) {
    const uint8_t *ql = blk, *qh = blk + 128;
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < 32; l++) {
            const uint8_t a = ql[64 * k + l], b = ql[64 * k + l + 32], h = qh[32 * k + l];
            u[128 * k + l] = (uint8_t)((a & 15) | (h & 3) << 4);
            u[128 * k + l + 32] = (uint8_t)((b & 15) | ((h >> 2) & 3) << 4);
            u[128 * k + l + 64] = (uint8_t)((a >> 4) | ((h >> 4) & 3) << 4);
            u[128 * k + l + 96] = (uint8_t)((b >> 4) | ((h >> 6) & 3) << 4);
        }
}

/* The inverse of q6_values: every bit of ql and qh is a bit of a value. */
static void q6_pack(const uint8_t u[256], uint8_t *blk) {
    uint8_t *ql = blk, *qh = blk + 128;
    for (int k = 0; k < 2; k++)
        for (int l = 0; l < 32; l++) {
            const uint8_t *v = u + 128 * k + l;
            ql[64 * k + l] = (uint8_t)((v[0] & 15) | (v[64] & 15) << 4);
            ql[64 * k + l + 32] = (uint8_t)((v[32] & 15) | (v[96] & 15) << 4);
            qh[32 * k + l] = (uint8_t)((v[0] >> 4) | (v[32] >> 4) << 2 | (v[64] >> 4) << 4 | (v[96] >> 4) << 6);
        }
}

void cpu_x8_q6k_encode(const uint8_t *plain, size_t row_bytes, int64_t nsb, uint8_t *dst) {
    for (int64_t b = 0; b < nsb; b++) {
        uint8_t *g = dst + (size_t)b * Q6_GROUP;
        for (int r = 0; r < 8; r++) {
            const uint8_t *blk = plain + (size_t)r * row_bytes + (size_t)b * Q6_BLOCK;
            uint8_t u[256];
            q6_values(blk, u);
            memcpy(g + 2 * r, blk + 208, 2);
            for (int j = 0; j < 16; j++)
                g[Q6_SC + 16 * (j / 2) + 2 * r + j % 2] = blk[192 + j];
            for (int w = 0; w < 8; w++)
                for (int i = 0; i < 8; i++) {
                    const int e = 8 * w + i;
                    g[Q6_H + 64 * w + 8 * r + i] = (uint8_t)((u[e] >> 4) | (u[e + 64] >> 4) << 2 |
                                                             (u[e + 128] >> 4) << 4 | (u[e + 192] >> 4) << 6);
                }
            for (int c = 0; c < 16; c++)
                for (int i = 0; i < 8; i++)
                    g[Q6_L + 64 * c + 8 * r + i] = (uint8_t)((u[8 * c + i] & 15) | (u[128 + 8 * c + i] & 15) << 4);
        }
    }
}

void cpu_x8_q6k_row(const uint8_t *group, int r, int64_t nsb, uint8_t *out) {
    for (int64_t b = 0; b < nsb; b++) {
        const uint8_t *g = group + (size_t)b * Q6_GROUP;
        uint8_t *blk = out + (size_t)b * Q6_BLOCK, u[256];
        for (int w = 0; w < 8; w++)
            for (int i = 0; i < 8; i++) {
                const int e = 8 * w + i, h = g[Q6_H + 64 * w + 8 * r + i];
                for (int k = 0; k < 4; k++)
                    u[e + 64 * k] = (uint8_t)(((h >> 2 * k) & 3) << 4);
            }
        for (int c = 0; c < 16; c++)
            for (int i = 0; i < 8; i++) {
                const int l = g[Q6_L + 64 * c + 8 * r + i];
                u[8 * c + i] |= (uint8_t)(l & 15);
                u[128 + 8 * c + i] |= (uint8_t)(l >> 4);
            }
        q6_pack(u, blk);
        for (int j = 0; j < 16; j++)
            blk[192 + j] = g[Q6_SC + 16 * (j / 2) + 2 * r + j % 2];
        memcpy(blk + 208, g + 2 * r, 2);
    }
}

#if CPU_X8_WIDE
#include <immintrin.h>

#include "cpu_vf.h"

#define Q6_INLINE static inline __attribute__((always_inline))
/* The loops over vectors, columns and groups are unrolled (their
 * registers indexed by constants, not spilled); the one over chunk pairs
 * is not (unrolled, its registers would not fit). */
#if defined(__clang__)
#define Q6_NO_UNROLL _Pragma("clang loop unroll(disable)")
#define Q6_UNROLL _Pragma("clang loop unroll(full)")
#elif defined(__GNUC__)
#define Q6_NO_UNROLL _Pragma("GCC unroll 1")
#define Q6_UNROLL _Pragma("GCC unroll 8")
#else
#define Q6_NO_UNROLL
#define Q6_UNROLL
#endif

/* (A & C) | B for _mm512_ternarylogic_epi32 (A = 0xF0, B = 0xCC, C = 0xAA). */
#define Q6_A_AND_C_OR_B 0xEC

/* 8 activation bytes at p in every 64-bit lane. */
Q6_INLINE __m512i q6_bcast8(const uint8_t *p) {
    int64_t v;
    memcpy(&v, p, 8);
    return _mm512_set1_epi64(v);
}

/* Word indices for _mm512_maskz_permutexvar_epi16 (even words kept): the
 * scale of sub-block 4q + s of row r, from the widened scales of pairs 2q
 * and 2q + 1 (words 16 (s / 2) + 2r + s % 2), in words 4r and 4r + 2. */
static const int16_t q6_scale_idx[4][32] = {
#define Q6_IDX(s, r) 16 * (s / 2) + 2 * r + s % 2, 0, 16 * (s / 2) + 2 * r + s % 2, 0
#define Q6_IDX_ROWS(s)                                                                                            \
    {Q6_IDX(s, 0), Q6_IDX(s, 1), Q6_IDX(s, 2), Q6_IDX(s, 3), Q6_IDX(s, 4), Q6_IDX(s, 5), Q6_IDX(s, 6), Q6_IDX(s, 7)}
    Q6_IDX_ROWS(0), Q6_IDX_ROWS(1), Q6_IDX_ROWS(2), Q6_IDX_ROWS(3)
#undef Q6_IDX_ROWS
#undef Q6_IDX
};

/* The scales of pairs 2q and 2q + 1 of the group's super-block at g as
 * int16, sc[p][r][i] in word 16 (p - 2q) + 2r + i. */
Q6_INLINE __m512i q6_scales16(const uint8_t *g, int q) {
    return _mm512_cvtepi8_epi16(_mm256_loadu_si256((const __m256i *)(const void *)(g + Q6_SC + 32 * q)));
}

/* One column's share of a super-block: the rows' lane pairs added, less
 * 32 sum_j sc_j bsum_j, then acc = fma(dx dy, isum, acc). */
Q6_INLINE __m256 q6_finish(__m256 acc, __m512i s, const __m512i sc16[4], __m256 dx, const uint8_t *yc) {
    const __m256i rows = _mm512_cvtepi64_epi32(_mm512_add_epi32(s, _mm512_srli_epi64(s, 32)));
    __m256i off = _mm256_setzero_si256();
    Q6_UNROLL
    for (int p = 0; p < 8; p++) {
        const __m256i scp =
            p % 2 ? _mm512_extracti64x4_epi64(sc16[p / 2], 1) : _mm512_castsi512_si256(sc16[p / 2]);
        int32_t bs;
        memcpy(&bs, yc + 260 + 4 * p, 4); /* bsums 2p, 2p + 1 */
        off = _mm256_dpwssd_epi32(off, scp, _mm256_set1_epi32(bs));
    }
    const __m256i isum = _mm256_sub_epi32(rows, _mm256_slli_epi32(off, 5));
    float dy;
    memcpy(&dy, yc, 4);
    return _mm256_fmadd_ps(_mm256_mul_ps(dx, _mm256_set1_ps(dy)), _mm256_cvtepi32_ps(isum), acc);
}

/* G (1, 2: g and g + gs) groups of nsb super-blocks against NC (1..4;
 * 5..8 with one group) Q8_K columns {f32 d; i8 qs[256]; i16 bsums[16]}
 * y + c ys: out[8c + r], and out[32 + 8c + r] for the second group.
 *
 * With 5..8 columns (cpu_x8_q6k_dot8) each chunk is loaded and unpacked
 * once for all of them, where two calls of 4 columns did both twice; the
 * columns' sums (NC) and the chunk's 4 vectors, its 4 scales and the
 * constants fit the 32 registers.  Two groups at once with 8 columns
 * would not (2 NC sums). */
Q6_INLINE void q6_z(const uint8_t *g, size_t gs, int64_t nsb, const uint8_t *y, size_t ys, const int G,
                    const int NC, float *out) {
    const __m512i m4 = _mm512_set1_epi8(0x0F), m30 = _mm512_set1_epi8(0x30), zero = _mm512_setzero_si512();
    __m256 acc[2][8];
    Q6_UNROLL
    for (int k = 0; k < G; k++)
        Q6_UNROLL
        for (int c = 0; c < NC; c++)
            acc[k][c] = _mm256_setzero_ps();
    /* one or two columns stream the weights (T0, cpu_stream_ahead, a
     * super-block at once); batches prefetch over its steps (below) */
    const bool streams = G == 1 && NC <= 2;
    for (int64_t b = 0; b < nsb; b++, g += Q6_GROUP, y += 292) {
        if (streams)
            vf_prefetch((uintptr_t)g + cpu_stream_ahead, Q6_GROUP);
        __m512i isum[2][8];
        Q6_UNROLL
        for (int k = 0; k < G; k++)
            Q6_UNROLL
            for (int c = 0; c < NC; c++)
                isum[k][c] = zero;
        /* chunks w and w + 1 hold both vectors of sub-blocks w2 + 4k, k = 0..3 */
        Q6_NO_UNROLL
        for (int w2 = 0; w2 < 4; w2++) {
            const __m512i idx = _mm512_loadu_si512((const void *)q6_scale_idx[w2]);
            /* batches: a quarter of each group's lines ahead a step, as
             * Q4_K's (60 bytes apart: every line of the quarter) */
            if (!streams)
                Q6_UNROLL
                for (int k = 0; k < G; k++)
                    for (int l = 0; l < 7; l++)
                        _mm_prefetch((const char *)(g + k * gs + cpu_batch_ahead + Q6_GROUP / 4 * w2 + 60 * l),
                                     CPU_BATCH_HINT);
            __m512i sc[2][4];
            Q6_UNROLL
            for (int k = 0; k < G; k++)
                Q6_UNROLL
                for (int q = 0; q < 4; q++)
                    sc[k][q] = _mm512_maskz_permutexvar_epi16(0x55555555u, idx, q6_scales16(g + k * gs, q));
            Q6_UNROLL
            for (int h = 0; h < 2; h++) {
                const int w = 2 * w2 + h;
                __m512i u[2][4];
                Q6_UNROLL
                for (int k = 0; k < G; k++) {
                    const uint8_t *gk = g + k * gs;
                    const __m512i p0 = _mm512_loadu_si512((const void *)(gk + Q6_L + 64 * w));
                    const __m512i p1 = _mm512_loadu_si512((const void *)(gk + Q6_L + 64 * (w + 8)));
                    const __m512i hb = _mm512_loadu_si512((const void *)(gk + Q6_H + 64 * w));
                    u[k][0] = _mm512_ternarylogic_epi32(p0, _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30), m4,
                                                        Q6_A_AND_C_OR_B);
                    u[k][1] = _mm512_ternarylogic_epi32(p1, _mm512_and_si512(_mm512_slli_epi16(hb, 2), m30), m4,
                                                        Q6_A_AND_C_OR_B);
                    u[k][2] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(p0, 4), _mm512_and_si512(hb, m30), m4,
                                                        Q6_A_AND_C_OR_B);
                    u[k][3] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(p1, 4),
                                                        _mm512_and_si512(_mm512_srli_epi16(hb, 2), m30), m4,
                                                        Q6_A_AND_C_OR_B);
                }
                Q6_UNROLL
                for (int v = 0; v < 4; v++) { /* elements 8w + 64v .. (sub-block w2 + 4v) */
                    Q6_UNROLL
                    for (int c = 0; c < NC; c++) {
                        const __m512i a = q6_bcast8(y + (size_t)c * ys + 4 + 8 * w + 64 * v);
                        Q6_UNROLL
                        for (int k = 0; k < G; k++)
                            isum[k][c] = _mm512_dpwssd_epi32(isum[k][c], _mm512_dpbusd_epi32(zero, u[k][v], a),
                                                             sc[k][v]);
                    }
                }
            }
        }
        Q6_UNROLL
        for (int k = 0; k < G; k++) {
            const uint8_t *gk = g + k * gs;
            __m512i sc16[4];
            Q6_UNROLL
            for (int q = 0; q < 4; q++)
                sc16[q] = q6_scales16(gk, q);
            const __m256 dx = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)gk));
            Q6_UNROLL
            for (int c = 0; c < NC; c++)
                acc[k][c] = q6_finish(acc[k][c], isum[k][c], sc16, dx, y + (size_t)c * ys);
        }
    }
    Q6_UNROLL
    for (int k = 0; k < G; k++)
        Q6_UNROLL
        for (int c = 0; c < NC; c++)
            _mm256_storeu_ps(out + 32 * k + 8 * c, acc[k][c]);
}

/* Each output of q6_z is acc = fma(dx dy, isum, acc) per super-block
 * with isum exact, whatever NC and G: a column's bits do not depend on
 * its batch. */

void cpu_x8_q6k_dot(const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out) {
    /* constant column counts, so the tests on NC fold away */
    switch (ncols) {
    case 1: q6_z(group, 0, K / 256, y, y_stride, 1, 1, out); break;
    case 2: q6_z(group, 0, K / 256, y, y_stride, 1, 2, out); break;
    case 3: q6_z(group, 0, K / 256, y, y_stride, 1, 3, out); break;
    default: q6_z(group, 0, K / 256, y, y_stride, 1, 4, out); break;
    }
}

void cpu_x8_q6k_dot_pair(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y, size_t y_stride,
                         float *out) {
    q6_z(group, group_stride, K / 256, y, y_stride, 2, 4, out);
}

void cpu_x8_q6k_dot8(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y, size_t y_stride,
                     int ncols, float *out) {
    /* the groups one after the other (see q6_z) */
    for (int k = 0; k < (group_stride ? 2 : 1); k++) {
        const uint8_t *gk = group + k * group_stride;
        switch (ncols) {
        case 5: q6_z(gk, 0, K / 256, y, y_stride, 1, 5, out + 64 * k); break;
        case 6: q6_z(gk, 0, K / 256, y, y_stride, 1, 6, out + 64 * k); break;
        case 7: q6_z(gk, 0, K / 256, y, y_stride, 1, 7, out + 64 * k); break;
        default: q6_z(gk, 0, K / 256, y, y_stride, 1, 8, out + 64 * k); break;
        }
    }
}
#endif
