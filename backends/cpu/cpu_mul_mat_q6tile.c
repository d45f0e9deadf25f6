/* Q6_K x Q8_K batches of up to 8 columns on AVX-512 VNNI, with no tile:
 * a row of the tile kinds table (cpu_tile_kinds.c) ahead of the general
 * K-quant tiles (cpu_mul_mat_kqtile.c), whose unpacking into a buffer,
 * written once and read back per 4 columns, cost about as much as the
 * products of a step of 8 sequences.  Here "unpack" only notes the 8 rows,
 * and the dot takes them a pair at a time, straight from the weights: per
 * 32-element sub-block the two rows' 6-bit values are made in one 512-bit
 * register (their ql / qh halves loaded side by side) and used at once
 * against every column.
 *
 * Q6_K: x = d sc[k] (q - 32), q in [0, 63], sc int8 per 16 elements.  Per
 * super-block and column, in int32 lanes (lanes 0-7 row 2p, 8-15 row
 * 2p+1), exactly:
 *   S = sum_k sc[k] (q . y)_k - 32 sum_k sc[k] bsum_k
 * the first by maddubs (unsigned q against signed y: pairs at most
 * 2 * 63 * 128, no saturation) and dpwssd with the sub-scales, the second
 * by one dpwssd of -32 sc (|.| <= 4096) against Q8_K's bsums; |S| <
 * 16 * 128 * (16 * 63 * 128 + 32 * 16 * 128) < 2^31.  Then d dy S in f32
 * once per super-block, as the per-row kernel does; the float additions
 * are ordered differently from it. */
#include <string.h>

#include "cpu_internal.h"

#define QK 256
#define Q6_K_BYTES 210
#define Q8_K_BYTES 292
#define Q8_K_QS 4
#define Q8_K_BSUMS 260
#define ROWS CPU_Q8TILE_ROWS
#define COLS 8

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
    defined(__F16C__)
#include <immintrin.h>

#include "cpu_unpack_x86.h"

typedef struct q6_rows {
    const uint8_t *row[ROWS];
    int nrows;
} q6_rows;

bool cpu_q6tile_available(tport_type_id type) { return type == TPORT_TYPE_Q6_K; }

size_t cpu_q6tile_scratch(int64_t K) {
    (void)K;
    return sizeof(q6_rows);
}

void cpu_q6tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    (void)type, (void)K;
    q6_rows t = {.nrows = nrows};
    for (int r = 0; r < nrows && r < ROWS; r++)
        t.row[r] = rows[r];
    memcpy(tile, &t, sizeof t);
}

static void hsum_halves(__m512 a, float *lo, float *hi) {
    __m256 l = _mm512_castps512_ps256(a), h = _mm512_extractf32x8_ps(a, 1);
    __m256 t = _mm256_hadd_ps(l, h);
    t = _mm256_hadd_ps(t, t);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    *lo = _mm_cvtss_f32(s);
    *hi = _mm_cvtss_f32(_mm_shuffle_ps(s, s, 1));
}

/* Rows xa, xb (the same row twice for an odd last one) against nc
 * columns; out[c * ROWS + 0, 1] */
static inline __attribute__((always_inline)) void pair_dot(const uint8_t *xa, const uint8_t *xb, int64_t nb,
                                                           const uint8_t *y, size_t y_stride, int nc, float *out) {
    /* each of the two streams the whole distance ahead: with a quarter of
     * it each, the kernel waited on memory markedly more often (profiles
     * of a step of 8 sequences) */
    const uintptr_t ahead = cpu_stream_ahead;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m3 = _mm512_set1_epi8(3);
    /* word w of the sub-scales for sub-block 0: scale 0 or 1 of row a
     * (words 0-15 of the widened scales) or of row b (16-31); + 2 j */
    const __m512i idx0 = _mm512_set_epi16(17, 17, 17, 17, 17, 17, 17, 17, 16, 16, 16, 16, 16, 16, 16, 16, 1, 1, 1, 1,
                                          1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    __m512 acc[COLS];
    for (int c = 0; c < nc; c++)
        acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *x[2] = {xa + (size_t)b * Q6_K_BYTES, xb + (size_t)b * Q6_K_BYTES};
        for (int i = 0; i < 2; i++)
            for (int o = 0; o < 256; o += 64)
                _mm_prefetch((const char *)x[i] + ahead + o, _MM_HINT_T0);
        const __m512i sc = _mm512_cvtepi8_epi16(
            _mm256_set_m128i(_mm_loadu_si128((const __m128i *)(const void *)(x[1] + 192)),
                             _mm_loadu_si128((const __m128i *)(const void *)(x[0] + 192))));
        const __m512i scm = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc, 5));
        __m512i isum[COLS];
        for (int c = 0; c < nc; c++) {
            const uint8_t *yb = y + (size_t)c * y_stride + (size_t)b * Q8_K_BYTES;
            const __m512i bs =
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_BSUMS)));
            isum[c] = _mm512_dpwssd_epi32(_mm512_setzero_si512(), scm, bs);
        }
        for (int h = 0; h < 2; h++) {
            const __m512i qh = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(x[0] + 128 + 32 * h))),
                _mm256_loadu_si256((const __m256i *)(const void *)(x[1] + 128 + 32 * h)), 1);
            for (int odd = 0; odd < 2; odd++) {
                const size_t o = (size_t)(64 * h + 32 * odd);
                const __m512i ql = _mm512_inserti64x4(
                    _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(x[0] + o))),
                    _mm256_loadu_si256((const __m256i *)(const void *)(x[1] + o)), 1);
                for (int hi = 0; hi < 2; hi++) {
                    /* sub-block j: low nibbles of ql[64 h + 32 odd ..] or
                     * high ones, top bits from qh[32 h ..] at 2 (j % 4) */
                    const int j = 4 * h + 2 * hi + odd;
                    const __m512i lo4 = _mm512_and_si512(hi ? _mm512_srli_epi16(ql, 4) : ql, m4);
                    const __m512i top = _mm512_and_si512(_mm512_srli_epi16(qh, 2 * (j % 4)), m3);
                    const __m512i v = _mm512_or_si512(lo4, _mm512_slli_epi16(top, 4));
                    const __m512i scj =
                        _mm512_permutexvar_epi16(_mm512_add_epi16(idx0, _mm512_set1_epi16((short)(2 * j))), sc);
                    for (int c = 0; c < nc; c++) {
                        const uint8_t *yb = y + (size_t)c * y_stride + (size_t)b * Q8_K_BYTES;
                        const __m512i yv = _mm512_broadcast_i64x4(
                            _mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_QS + 32 * j)));
                        isum[c] = _mm512_dpwssd_epi32(isum[c], _mm512_maddubs_epi16(v, yv), scj);
                    }
                }
            }
        }
        const __m512 dd =
            _mm512_insertf32x8(_mm512_set1_ps(half_at(x[0] + 208)), _mm256_set1_ps(half_at(x[1] + 208)), 1);
        for (int c = 0; c < nc; c++) {
            float dy;
            memcpy(&dy, y + (size_t)c * y_stride + (size_t)b * Q8_K_BYTES, sizeof dy);
            acc[c] = _mm512_fmadd_ps(_mm512_mul_ps(dd, _mm512_set1_ps(dy)), _mm512_cvtepi32_ps(isum[c]), acc[c]);
        }
    }
    for (int c = 0; c < nc; c++)
        hsum_halves(acc[c], &out[c * ROWS], &out[c * ROWS + 1]);
}

static inline __attribute__((always_inline)) void dot_n(const q6_rows *t, int64_t nb, const uint8_t *y,
                                                        size_t y_stride, int nc, float *out) {
    for (int p = 0; p < ROWS / 2; p++) {
        const int r = 2 * p;
        if (r >= t->nrows) { /* rows the caller does not read: 0 */
            for (int c = 0; c < nc; c++)
                out[c * ROWS + r] = out[c * ROWS + r + 1] = 0.0f;
            continue;
        }
        const bool one = r + 1 >= t->nrows;
        pair_dot(t->row[r], one ? t->row[r] : t->row[r + 1], nb, y, y_stride, nc, out + r);
        if (one)
            for (int c = 0; c < nc; c++)
                out[c * ROWS + r + 1] = 0.0f;
    }
}

void cpu_q6tile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    (void)type;
    q6_rows t;
    memcpy(&t, tile, sizeof t);
    const int64_t nb = K / QK;
    /* ncols constant in each call: the loops over it unroll */
    switch (ncols) {
    case 1: dot_n(&t, nb, y, y_stride, 1, out); break;
    case 2: dot_n(&t, nb, y, y_stride, 2, out); break;
    case 3: dot_n(&t, nb, y, y_stride, 3, out); break;
    case 4: dot_n(&t, nb, y, y_stride, 4, out); break;
    case 5: dot_n(&t, nb, y, y_stride, 5, out); break;
    case 6: dot_n(&t, nb, y, y_stride, 6, out); break;
    case 7: dot_n(&t, nb, y, y_stride, 7, out); break;
    default: dot_n(&t, nb, y, y_stride, 8, out); break;
    }
}

#else /* no kernel in this build */

bool cpu_q6tile_available(tport_type_id type) {
    (void)type;
    return false;
}

size_t cpu_q6tile_scratch(int64_t K) {
    (void)K;
    return 0;
}

void cpu_q6tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    (void)type, (void)rows, (void)nrows, (void)K, (void)tile;
}

void cpu_q6tile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    (void)type, (void)tile, (void)K, (void)y, (void)y_stride, (void)ncols, (void)out;
}
#endif
