/* Generation against dense f32 or f16 weights: one column of b (a token)
 * against up to CPU_GEN_ROWS weight rows.  Memory is the limit, and how
 * the rows are walked decides how fast it streams.  AVX2 builds (chosen
 * on a Zen 3, RESULTS run 11):
 * - rows of 2 KiB or more: CPU_GEN_ROWS rows side by side, each step
 *   loading 8 elements of b once and one vector of each row; faster than
 *   one row at a time and than 4 rows side by side.  12 or 16 rows were
 *   slower again (the accumulators no longer fit in 16 registers).
 * - shorter rows: one row at a time, so that the tile is one sequential
 *   stream (the rows of a dense matrix are consecutive); side by side was
 *   slower for them.
 * AVX-512 builds walk every row on its own, 64 elements a step in four
 * 16-lane accumulators, with a software prefetch (ahead()).  For f16
 * that beat the AVX2 loops and 8 rows side by side in zmm on a Sapphire
 * Rapids-class Xeon (RESULTS run 12, where f32 was still a little faster
 * side by side); on a Zen 5 f32 was clearly faster one row at a time too
 * (RESULTS run 14), so both types walk rows on their own.  The distance
 * ahead is a property of the machine: cpu_prefetch.c chooses it.
 *
 * f16 is converted in registers (F16C, exact); each row sums its products
 * in 8-lane accumulators, then lane sums.
 *
 * A few columns (a short prompt, up to GEN_MAX_COLS in cpu_ops_mul_mat.c)
 * take cpu_gen_dot_cols: each row is read once for up to CPU_GEN_COLS
 * columns, instead of being packed for the batch GEMM, whose packing pays
 * off only over many columns: on the Xeon of RESULTS run 28 this is far
 * faster than the GEMM for a handful of columns and still level at 16,
 * hence GEN_MAX_COLS.  Two rows at once (each column load feeding both)
 * was slower. */
#include <string.h>

#include "cpu_internal.h"
#include "cpu_vf.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include "quant/avx2_util.h"

bool cpu_gen_available(const tport_tensor_view *a) {
    return (a->type == TPORT_TYPE_F32 && a->nb[0] == sizeof(float)) ||
           (a->type == TPORT_TYPE_F16 && a->nb[0] == sizeof(uint16_t));
}

/* Both element types share the loops below; each caller passes a
 * constant, so every loop is compiled once per type, with no test in it. */
#define GEN_INLINE static inline __attribute__((always_inline))

/* 8 elements of a row from element k, as f32 (f16 converted: exact). */
GEN_INLINE __m256 load8(bool f16, const uint8_t *row, int64_t k) {
    if (f16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(row + 2 * k)));
    return _mm256_loadu_ps((const float *)(const void *)(row + 4 * k));
}

/* How far ahead a stream of rows of this type is prefetched. */
GEN_INLINE uintptr_t ahead(bool f16) {
    return f16 ? cpu_stream_ahead_f16 : cpu_stream_ahead;
}

GEN_INLINE float elem(bool f16, const uint8_t *row, int64_t k) {
    if (f16) {
        uint16_t v;
        memcpy(&v, row + 2 * k, sizeof v);
        return _cvtsh_ss(v);
    }
    float v;
    memcpy(&v, row + 4 * k, sizeof v);
    return v;
}

/* Rows shorter than this are walked one at a time (see the top); with
 * AVX-512, every row is. */
#define SIDE_BY_SIDE_MIN_BYTES 2048

GEN_INLINE bool side_by_side(bool f16, int64_t K) {
#if defined(__AVX512F__)
    (void)f16, (void)K;
    return false;
#else
    return (uint64_t)K * (f16 ? 2u : 4u) >= SIDE_BY_SIDE_MIN_BYTES;
#endif
}

/* A row walked on its own is prefetched ahead(f16) bytes ahead (row_dot;
 * cpu_prefetch.c chooses the distances for the CPU).  AVX2: prefetching
 * made one-row-at-a-time f16 faster on a Zen 3 (RESULTS run 13).  Rows
 * side by side are not prefetched: 8 streams of prefetches made f32
 * slower there and f16 no faster. */
#if defined(__AVX512F__)

/* 16 elements of a row from element k, as f32. */
GEN_INLINE __m512 load16(bool f16, const uint8_t *row, int64_t k) {
    if (f16)
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(row + 2 * k)));
    return _mm512_loadu_ps((const float *)(const void *)(row + 4 * k));
}
#endif

/* 16 elements of a row from k against b: one 8-lane multiply-add into
 * each accumulator. */
GEN_INLINE void fma16(bool f16, const uint8_t *a, const float *b, int64_t k, __m256 *acc0, __m256 *acc1) {
    *acc0 = _mm256_fmadd_ps(load8(f16, a, k), _mm256_loadu_ps(b + k), *acc0);
    *acc1 = _mm256_fmadd_ps(load8(f16, a, k + 8), _mm256_loadu_ps(b + k + 8), *acc1);
}

/* One row, 16 elements a step in two accumulators (two chains of
 * multiply-adds in flight); with AVX-512 first 64 a step in four, the
 * stream prefetched ahead(f16) bytes ahead; with AVX2 32 a step in
 * two, prefetched the same way. */
GEN_INLINE float row_dot(bool f16, int64_t K, const uint8_t *a, const float *b) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t k = 0;
#if defined(__AVX512F__)
    {
        __m512 z0 = _mm512_setzero_ps(), z1 = z0, z2 = z0, z3 = z0;
        for (; k + 64 <= K; k += 64) {
            z0 = _mm512_fmadd_ps(load16(f16, a, k), _mm512_loadu_ps(b + k), z0);
            z1 = _mm512_fmadd_ps(load16(f16, a, k + 16), _mm512_loadu_ps(b + k + 16), z1);
            z2 = _mm512_fmadd_ps(load16(f16, a, k + 32), _mm512_loadu_ps(b + k + 32), z2);
            z3 = _mm512_fmadd_ps(load16(f16, a, k + 48), _mm512_loadu_ps(b + k + 48), z3);
            /* this step's 64 elements (2 or 4 lines), ahead(f16) bytes further on */
            vf_prefetch((uintptr_t)a + (uintptr_t)((f16 ? 2 : 4) * k) + ahead(f16), f16 ? 128 : 256);
        }
        acc0 = vf_fold8(_mm512_add_ps(_mm512_add_ps(z0, z1), _mm512_add_ps(z2, z3)));
    }
#else
    for (; k + 32 <= K; k += 32) {
        fma16(f16, a, b, k, &acc0, &acc1);
        fma16(f16, a, b, k + 16, &acc0, &acc1);
        vf_prefetch((uintptr_t)a + (uintptr_t)((f16 ? 2 : 4) * k) + ahead(f16), f16 ? 64 : 128);
    }
#endif
    for (; k + 16 <= K; k += 16)
        fma16(f16, a, b, k, &acc0, &acc1);
    float s = avx2_hsum_ps(_mm256_add_ps(acc0, acc1));
    for (; k < K; k++)
        s += elem(f16, a, k) * b[k];
    return s;
}

/* CPU_GEN_ROWS rows side by side: b is loaded once per step (AVX2
 * builds; AVX-512 builds walk rows one at a time). */
GEN_INLINE void rows_dot(bool f16, int64_t K, const uint8_t *const a[CPU_GEN_ROWS], const float *b,
                         float out[CPU_GEN_ROWS]) {
    __m256 acc[CPU_GEN_ROWS];
    for (int r = 0; r < CPU_GEN_ROWS; r++)
        acc[r] = _mm256_setzero_ps();
    int64_t k = 0;
    for (; k + 8 <= K; k += 8) {
        __m256 bv = _mm256_loadu_ps(b + k);
        for (int r = 0; r < CPU_GEN_ROWS; r++)
            acc[r] = _mm256_fmadd_ps(load8(f16, a[r], k), bv, acc[r]);
    }
    for (int r = 0; r < CPU_GEN_ROWS; r += 4)
        _mm_storeu_ps(out + r, cpu_hsum4(acc[r], acc[r + 1], acc[r + 2], acc[r + 3]));
    for (int r = 0; r < CPU_GEN_ROWS; r++)
        for (int64_t kk = k; kk < K; kk++)
            out[r] += elem(f16, a[r], kk) * b[kk];
}

/* One row against NC columns of b: the row is read once (from memory,
 * prefetched as row_dot does), each column from L1.  One accumulator per
 * column, so NC chains of multiply-adds are in flight. */
GEN_INLINE void row_cols(bool f16, int64_t K, const uint8_t *a, const float *const b[], const int NC, float *out,
                         int stride) {
    vf acc[CPU_GEN_COLS];
    for (int c = 0; c < NC; c++)
        acc[c] = vf_zero();
    const size_t es = f16 ? 2u : 4u;
    int64_t k = 0;
    for (; k + VF_LEN <= K; k += VF_LEN) {
        const vf w = f16 ? vf_load_f16(a + 2 * k) : vf_loadu((const float *)(const void *)(a + 4 * k));
        for (int c = 0; c < NC; c++)
            acc[c] = vf_fmadd(w, vf_loadu(b[c] + k), acc[c]);
        vf_prefetch((uintptr_t)a + (uintptr_t)(es * (size_t)k) + ahead(f16), es * VF_LEN);
    }
    for (int c = 0; c < NC; c++) {
        float s = vf_reduce_add(acc[c]);
        for (int64_t kk = k; kk < K; kk++)
            s += elem(f16, a, kk) * b[c][kk];
        out[c * stride] = s;
    }
}

GEN_INLINE void rows_cols(bool f16, int64_t K, const void *const rows[], int nrows, const float *const b[],
                          const int NC, float *out) {
    for (int r = 0; r < nrows; r++)
        row_cols(f16, K, rows[r], b, NC, out + r, nrows);
}

void cpu_gen_dot_cols(const tport_tensor_view *a, int64_t K, const void *const rows[], int nrows,
                      const float *const b[], int ncols, float *out) {
    bool f16 = a->type == TPORT_TYPE_F16;
    /* constant column counts, so each loop keeps its accumulators in registers */
    switch (ncols) {
#define GEN_COLS_CASE(n)                                                                                     \
    case n:                                                                                                  \
        if (f16)                                                                                             \
            rows_cols(true, K, rows, nrows, b, n, out);                                                      \
        else                                                                                                 \
            rows_cols(false, K, rows, nrows, b, n, out);                                                     \
        break
        GEN_COLS_CASE(2);
        GEN_COLS_CASE(3);
        GEN_COLS_CASE(4);
        GEN_COLS_CASE(5);
        GEN_COLS_CASE(6);
        GEN_COLS_CASE(7);
#undef GEN_COLS_CASE
    default:
        if (f16)
            rows_cols(true, K, rows, nrows, b, CPU_GEN_COLS, out);
        else
            rows_cols(false, K, rows, nrows, b, CPU_GEN_COLS, out);
        break;
    }
}

void cpu_gen_dot(const tport_tensor_view *a, int64_t K, const void *const rows[], int nrows, const float *b,
                 float *out) {
    bool f16 = a->type == TPORT_TYPE_F16;
    if (!side_by_side(f16, K)) {
        for (int i = 0; i < nrows; i++)
            out[i] = f16 ? row_dot(true, K, rows[i], b) : row_dot(false, K, rows[i], b);
        return;
    }
    /* a short last tile repeats its first row: the same few kilobytes
     * again, not a second kernel */
    const uint8_t *r[CPU_GEN_ROWS];
    for (int i = 0; i < CPU_GEN_ROWS; i++)
        r[i] = rows[i < nrows ? i : 0];
    float s[CPU_GEN_ROWS];
    if (f16)
        rows_dot(true, K, r, b, s);
    else
        rows_dot(false, K, r, b, s);
    memcpy(out, s, (size_t)nrows * sizeof(float));
}

#else

bool cpu_gen_available(const tport_tensor_view *a) {
    (void)a;
    return false;
}

void cpu_gen_dot(const tport_tensor_view *a, int64_t K, const void *const rows[], int nrows, const float *b,
                 float *out) {
    (void)a, (void)K, (void)rows, (void)nrows, (void)b, (void)out; /* never called: not available */
}

void cpu_gen_dot_cols(const tport_tensor_view *a, int64_t K, const void *const rows[], int nrows,
                      const float *const b[], int ncols, float *out) {
    (void)a, (void)K, (void)rows, (void)nrows, (void)b, (void)ncols, (void)out; /* never called */
}

#endif
