/* Batches of dense f32 or f16 weights: a blocked GEMM of outer products.
 *
 * A thread takes CPU_DENSE_ROWS weight rows at a time.  K is cut into
 * blocks of at most DENSE_KC; each block of those rows is converted to f32
 * once into per-thread scratch and transposed into panels of PANEL rows,
 * k-major (panel[k * PANEL + r]).  The microkernel then computes PANEL
 * rows x NCOL columns of the output as outer products: per k, two vector
 * loads of the panel, one broadcast of b[j][k] for each of the NCOL
 * columns, 2 * NCOL fused multiply-adds into accumulators that are already
 * the output's layout (8 consecutive rows of one column), so there are no
 * horizontal sums and a K block only adds its vectors to the output.
 *
 * Memory: the panel streams from L2 (64 bytes per 12 multiply-adds), the
 * NCOL rows of b stay in L1 across the panels, and b as a whole is read
 * once per CPU_DENSE_ROWS rows.  The block (64 x 512 floats, 128 KiB)
 * stays in L2 while every column of b passes over it.  (32 rows were
 * slower at 2 threads and 128 no faster than 64; blocks of 256 or 1024 k
 * slower or the same: RESULTS run 8.)
 *
 * The AVX2 kernel uses explicit FMA (ISO C builds do not contract a*b+c);
 * the portable one is the same loop nest in plain C.  With AVX-512 the
 * panel is 32 rows (two zmm) and the kernel takes 8 columns: 16
 * accumulators of 32: much faster than the AVX2 kernel on an AVX-512
 * Xeon, 8 columns faster than 6 and 12 no faster than 8 (RESULTS run 12).
 *
 * Opt-in, lossy: with TPORT_CPU_F16_BATCH=bf16, on a CPU with AVX512-BF16,
 * batches of f16 weights multiply in bf16, as ik_llama.cpp's -rtr does.
 * The panels are packed straight from f16 as pairs of k (lane r of a
 * vector holds row r's bf16 at k and k + 1), b's rows are rounded to bf16
 * once per op when they are packed (cpu_ops_mul_mat.c), and one vdpbf16ps
 * does two multiply-adds per lane, twice the f32 kernel's.  Rounding keeps
 * 8 of f16's 11 significant bits of the weights and 8 of f32's 24 of the
 * activations; sums stay f32.  The default stays exact f32 arithmetic.
 * Where the CPU has AMX-BF16 the same panels go to AMX tiles instead
 * (cpu_mul_mat_amx.c; TPORT_CPU_AMX=0 keeps vdpbf16ps).  On the Zen 5 of
 * RESULTS run 26 bf16 nearly doubled the f16 prompt's speed, close to
 * ik_llama.cpp -rtr 1. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"
#include "cpu_vf.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define DENSE_AVX2 1
#else
#define DENSE_AVX2 0
#endif

#if DENSE_AVX2 && defined(__AVX512F__)
#define DENSE_AVX512 1
#else
#define DENSE_AVX512 0
#endif

#define DENSE_KC 512 /* at most this many k per block */
#if DENSE_AVX512
#define PANEL 32 /* weight rows per panel: two vectors of 16 */
#else
#define PANEL 16 /* two vectors of 8 */
#endif
#if DENSE_AVX512
#define NCOL 8 /* columns of b per microkernel: 16 accumulators */
#else
#define NCOL 6 /* columns of b per microkernel: 12 accumulators */
#endif
#define STEP 8       /* k per transposed tile */

/* vdpbf16ps needs AVX512-BF16, which the avx512 build does not require of
 * every CPU: those functions carry it as a target attribute and run only
 * after the run-time check in cpu_dense_init. */
#if DENSE_AVX512 && defined(__GNUC__)
#define DENSE_BF16 1
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#else
#define DENSE_BF16 0
#endif
static bool bf16_batches; /* TPORT_CPU_F16_BATCH=bf16 and the CPU can */
static bool amx_tiles;    /* and those go to AMX tiles (cpu_mul_mat_amx.c) */

void cpu_dense_init(void) {
    const char *e = getenv("TPORT_CPU_F16_BATCH");
    bf16_batches = amx_tiles = false;
    if (!e || !*e || !strcmp(e, "f32"))
        return;
    if (strcmp(e, "bf16")) {
        cpu_host->log(TPORT_LOG_WARN, "cpu: TPORT_CPU_F16_BATCH=%s is neither f32 nor bf16; ignored", e);
        return;
    }
#if DENSE_BF16
    bf16_batches = __builtin_cpu_supports("avx512bf16");
#endif
#if CPU_AMX
    const char *amx = getenv("TPORT_CPU_AMX");
    amx_tiles = bf16_batches && !(amx && (!strcmp(amx, "0") || !strcmp(amx, "off"))) && cpu_amx_init();
#endif
    if (bf16_batches)
        cpu_host->log(TPORT_LOG_WARN,
                      "cpu: TPORT_CPU_F16_BATCH=bf16: batches of f16 weights multiply in bf16 on %s "
                      "(lossy: weights keep 8 of 11 significant bits)",
                      amx_tiles ? "AMX tiles" : "AVX512-BF16");
    else
        cpu_host->log(TPORT_LOG_WARN, "cpu: TPORT_CPU_F16_BATCH=bf16 needs AVX512-BF16 and this build's 512-bit "
                                      "kernels; f16 batches stay f32");
}

bool cpu_dense_mm_available(tport_type_id type, int64_t K) {
    return (type == TPORT_TYPE_F32 || type == TPORT_TYPE_F16) && K > 0 && K % STEP == 0;
}

#if CPU_AMX
_Static_assert(PANEL == 32, "cpu_mul_mat_amx.c reads panels of 32 rows");
#endif
/* bf16 panels take half of the f32 ones' room; AMX's scratch goes after them */
#define BF16_PANEL_BYTES ((size_t)CPU_DENSE_ROWS * DENSE_KC * 2)

size_t cpu_dense_mm_scratch(void) {
    size_t f32 = (size_t)CPU_DENSE_ROWS * DENSE_KC * sizeof(float) + 64;
#if CPU_AMX
    size_t amx = 64 + BF16_PANEL_BYTES + cpu_amx_scratch(DENSE_KC);
    return amx > f32 ? amx : f32;
#else
    return f32;
#endif
}

#if DENSE_AVX2
/* 8 rows of 8 values each (v[r]) into 8 columns (v[k] = rows 0..7 at k). */
static inline void transpose8(__m256 v[8]) {
    __m256 t0 = _mm256_unpacklo_ps(v[0], v[1]), t1 = _mm256_unpackhi_ps(v[0], v[1]);
    __m256 t2 = _mm256_unpacklo_ps(v[2], v[3]), t3 = _mm256_unpackhi_ps(v[2], v[3]);
    __m256 t4 = _mm256_unpacklo_ps(v[4], v[5]), t5 = _mm256_unpackhi_ps(v[4], v[5]);
    __m256 t6 = _mm256_unpacklo_ps(v[6], v[7]), t7 = _mm256_unpackhi_ps(v[6], v[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    v[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    v[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    v[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    v[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    v[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    v[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    v[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    v[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* 8 elements of a weight row at src as f32. */
static inline __m256 load8(tport_type_id type, const uint8_t *src) {
    if (type == TPORT_TYPE_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)src));
    return _mm256_loadu_ps((const float *)(const void *)src);
}
#endif

#if DENSE_AVX2
/* The part [k0, k0 + kc) of the (up to) STEP rows after those at r0,
 * fetched into L1 a few lines at a time while a pack converts these (a
 * running row and offset: no division per line). */
typedef struct row_stream {
    uintptr_t next; /* the first row's part */
    size_t lda, row_bytes, off;
    int row, rows;
} row_stream;

static inline row_stream next_rows(const cpu_dense_mm *x, int r0, int64_t k0, int64_t kc, size_t es) {
    int rows = x->rows - (r0 + STEP) < STEP ? x->rows - (r0 + STEP) : STEP;
    return (row_stream){.next = (uintptr_t)x->a + (uintptr_t)(r0 + STEP) * x->lda + (uintptr_t)k0 * es,
                        .lda = x->lda,
                        .row_bytes = (size_t)kc * es,
                        .rows = rows > 0 ? rows : 0};
}

static inline void stream_lines(row_stream *s, int lines) {
    for (int i = 0; i < lines && s->row < s->rows; i++) {
        __builtin_prefetch((const void *)(s->next + (uintptr_t)s->row * s->lda + s->off), 0, 3);
        s->off += 64;
        if (s->off >= s->row_bytes)
            s->off -= s->row_bytes, s->row++;
    }
}
#endif

/* Rows [0, x->rows) of the block [k0, k0 + kc) into k-major panels; rows
 * up to the next multiple of PANEL are zero, so every panel is whole. */
static bool pack_block(const cpu_dense_mm *x, int64_t k0, int64_t kc, float *panels) {
    tport_type_id type = x->w->type;
    size_t es = type == TPORT_TYPE_F16 ? 2 : 4;
    int padded = (x->rows + PANEL - 1) / PANEL * PANEL;
    for (int r0 = 0; r0 < padded; r0 += STEP) {
        float *p = panels + (size_t)(r0 / PANEL) * (size_t)kc * PANEL + r0 % PANEL;
        const uint8_t *src[STEP];
        int valid = x->rows - r0 < STEP ? (x->rows - r0 > 0 ? x->rows - r0 : 0) : STEP;
        for (int r = 0; r < valid; r++)
            src[r] = x->a + (size_t)(r0 + r) * x->lda + (size_t)k0 * es;
#if DENSE_AVX2
        if (valid == STEP) {
            /* the next 8 rows' part of the block is prefetched, es lines a
             * step, so that it comes from memory while these are converted
             * (a small gain on a Zen 3 at 1 and 2 threads: RESULTS run 13) */
            row_stream ahead = next_rows(x, r0, k0, kc, es);
            for (int64_t k = 0; k < kc; k += STEP) {
                stream_lines(&ahead, (int)es);
                __m256 v[STEP];
                for (int r = 0; r < STEP; r++)
                    v[r] = load8(type, src[r] + (size_t)k * es);
                transpose8(v);
                for (int i = 0; i < STEP; i++)
                    _mm256_storeu_ps(p + (k + i) * PANEL, v[i]);
            }
            continue;
        }
#endif
        /* the portable way, and the last rows of a matrix */
        float row[DENSE_KC];
        for (int r = 0; r < STEP; r++) {
            if (r < valid && !cpu_row_to_f32(x->w, src[r], kc, row))
                return false;
            for (int64_t k = 0; k < kc; k++)
                p[k * PANEL + r] = r < valid ? row[k] : 0.0f;
        }
    }
    return true;
}

#if DENSE_AVX2
/* A tile's sums (acc[j]: PANEL rows of column j) added (add) or stored at
 * c[j][0..rows) for the first ncols columns. */
static inline void store_tile(vf acc[NCOL][2], int ncols, float *const c[NCOL], int rows, bool add) {
    for (int j = 0; j < ncols; j++) {
        float *out = c[j];
        if (rows == PANEL) {
            if (add) {
                acc[j][0] = vf_add(acc[j][0], vf_loadu(out));
                acc[j][1] = vf_add(acc[j][1], vf_loadu(out + VF_LEN));
            }
            vf_storeu(out, acc[j][0]);
            vf_storeu(out + VF_LEN, acc[j][1]);
            continue;
        }
        float s[PANEL];
        vf_storeu(s, acc[j][0]);
        vf_storeu(s + VF_LEN, acc[j][1]);
        for (int r = 0; r < rows; r++)
            out[r] = add ? out[r] + s[r] : s[r];
    }
}

/* One panel against the columns b[0..NCOL) over kc; adds (add) or stores
 * the results at c[col][0..rows).  Short column groups repeat their first
 * column, whose sums are dropped.  Vectors of VF_LEN floats (cpu_vf.h): 8
 * with AVX2, 16 with AVX-512. */
static void kernel(int64_t kc, const float *panel, const float *const b[NCOL], int ncols, float *const c[NCOL],
                   int rows, bool add) {
    vf c00 = vf_zero(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    vf c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *b0 = b[0], *b1 = b[1], *b2 = b[2], *b3 = b[3], *b4 = b[4], *b5 = b[5];
#if NCOL > 6
    vf c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    const float *b6 = b[6], *b7 = b[7];
#endif
/* column j's broadcast and its two multiply-adds */
#define DENSE_COL(j)                                                                                         \
    y = vf_set1(b##j[k]);                                                                                    \
    c##j##0 = vf_fmadd(x0, y, c##j##0);                                                                      \
    c##j##1 = vf_fmadd(x1, y, c##j##1)
    for (int64_t k = 0; k < kc; k++, panel += PANEL) {
        vf x0 = vf_loadu(panel), x1 = vf_loadu(panel + VF_LEN), y;
        DENSE_COL(0);
        DENSE_COL(1);
        DENSE_COL(2);
        DENSE_COL(3);
        DENSE_COL(4);
        DENSE_COL(5);
#if NCOL > 6
        DENSE_COL(6);
        DENSE_COL(7);
#endif
    }
#undef DENSE_COL
    vf acc[NCOL][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51},
#if NCOL > 6
                       {c60, c61}, {c70, c71},
#endif
    };
    store_tile(acc, ncols, c, rows, add);
}
#else
static void kernel(int64_t kc, const float *panel, const float *const b[NCOL], int ncols, float *const c[NCOL],
                   int rows, bool add) {
    float acc[NCOL][PANEL] = {{0}};
    for (int64_t k = 0; k < kc; k++, panel += PANEL)
        for (int j = 0; j < NCOL; j++) {
            float y = b[j][k];
            for (int r = 0; r < PANEL; r++)
                acc[j][r] += panel[r] * y;
        }
    for (int j = 0; j < ncols; j++)
        for (int r = 0; r < rows; r++)
            c[j][r] = add ? c[j][r] + acc[j][r] : acc[j][r];
}
#endif

#if DENSE_BF16
/* pack_block's bf16 twin, straight from the f16 rows: uint32 p * PANEL + r
 * of a panel holds row r's k = k0 + 2p (low half) and k0 + 2p + 1.  A
 * row's f16 pair is one 32-bit word, so converting 16 k of 8 rows gives 8
 * words per row, and one 8 x 8 transpose of words makes the panel's 8 pairs. */
BF16_TARGET static bool pack_block_bf16(const cpu_dense_mm *x, int64_t k0, int64_t kc, uint32_t *panels) {
    int padded = (x->rows + PANEL - 1) / PANEL * PANEL;
    for (int r0 = 0; r0 < padded; r0 += STEP) {
        uint32_t *p = panels + (size_t)(r0 / PANEL) * (size_t)(kc / 2) * PANEL + r0 % PANEL;
        const uint8_t *src[STEP];
        int valid = x->rows - r0 < STEP ? (x->rows - r0 > 0 ? x->rows - r0 : 0) : STEP;
        for (int r = 0; r < valid; r++)
            src[r] = x->a + (size_t)(r0 + r) * x->lda + (size_t)k0 * 2;
        if (valid == STEP) {
            /* the next 8 rows' part of the block comes from memory meanwhile,
             * 4 lines a step, as in pack_block */
            row_stream ahead = next_rows(x, r0, k0, kc, 2);
            for (int64_t k = 0; k < kc; k += 16) {
                stream_lines(&ahead, 4);
                __m256 v[STEP];
                for (int r = 0; r < STEP; r++) {
                    __m512 f = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(src[r] + k * 2)));
                    v[r] = _mm256_castsi256_ps((__m256i)_mm512_cvtneps_pbh(f));
                }
                transpose8(v);
                for (int i = 0; i < STEP; i++)
                    _mm256_storeu_ps((float *)(void *)(p + (k / 2 + i) * PANEL), v[i]);
            }
            continue;
        }
        /* the last rows of a matrix, rounded by the host's bf16 conversion
         * (nearest even, as vcvtneps2bf16 for every f32 that f16 gives) */
        float row[DENSE_KC];
        uint16_t h[DENSE_KC];
        for (int r = 0; r < STEP; r++) {
            if (r < valid && (!cpu_row_to_f32(x->w, src[r], kc, row) ||
                              cpu_host->from_float(TPORT_TYPE_BF16, row, h, kc) != TPORT_STATUS_OK))
                return false;
            for (int64_t k = 0; k < kc; k += 2)
                p[k / 2 * PANEL + r] = r < valid ? h[k] | (uint32_t)h[k + 1] << 16 : 0;
        }
    }
    return true;
}

/* kernel's bf16 twin: panel and b[j] hold bf16 pairs (kc / 2 of them). */
BF16_TARGET static void kernel_bf16(int64_t kc, const uint32_t *panel, const uint32_t *const b[NCOL], int ncols,
                                    float *const c[NCOL], int rows, bool add) {
    vf acc[NCOL][2];
    for (int j = 0; j < NCOL; j++)
        acc[j][0] = acc[j][1] = vf_zero();
    for (int64_t pair = 0; pair < kc / 2; pair++, panel += PANEL) {
        __m512bh x0 = (__m512bh)_mm512_loadu_si512(panel), x1 = (__m512bh)_mm512_loadu_si512(panel + 16);
        for (int j = 0; j < NCOL; j++) {
            __m512bh y = (__m512bh)_mm512_set1_epi32((int)b[j][pair]);
            acc[j][0] = _mm512_dpbf16_ps(acc[j][0], x0, y);
            acc[j][1] = _mm512_dpbf16_ps(acc[j][1], x1, y);
        }
    }
    store_tile(acc, ncols, c, rows, add);
}

/* K (a multiple of 16: cpu_dense_bf16) floats rounded to bf16 */
BF16_TARGET static void column_bf16(const float *src, int64_t K, uint16_t *dst) {
    for (int64_t k = 0; k < K; k += 16)
        _mm256_storeu_si256((__m256i *)(void *)(dst + k), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(src + k)));
}
#endif

bool cpu_dense_bf16(const tport_tensor_view *a, int64_t K) {
    /* weights only: a KV cache or activation stays exact */
    return bf16_batches && a->type == TPORT_TYPE_F16 && (a->flags & TPORT_TENSOR_WEIGHT) && K % 16 == 0;
}

void cpu_dense_column_bf16(const float *src, int64_t K, uint16_t *dst) {
#if DENSE_BF16
    if (bf16_batches) {
        column_bf16(src, K, dst);
        return;
    }
#endif
    (void)src, (void)K, (void)dst; /* unreachable: cpu_dense_bf16 said no */
}

bool cpu_dense_mm_run(const cpu_dense_mm *x, void *scratch) {
    float *panels = (float *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    /* bf16 packs 16 k at a time; AMX takes 32 */
    bool amx = CPU_AMX && x->bf16 && amx_tiles && x->K % 32 == 0;
    int step = amx ? 32 : x->bf16 ? 16 : STEP;
    int64_t nblk = (x->K + DENSE_KC - 1) / DENSE_KC;
    int64_t kc_max = ((x->K + nblk - 1) / nblk + step - 1) / step * step;
    int npanels = (x->rows + PANEL - 1) / PANEL;
    for (int64_t k0 = 0; k0 < x->K; k0 += kc_max) {
        int64_t kc = x->K - k0 < kc_max ? x->K - k0 : kc_max;
#if DENSE_BF16
        if (x->bf16) {
            if (!pack_block_bf16(x, k0, kc, (uint32_t *)(void *)panels))
                return false;
#if CPU_AMX
            if (amx) {
                cpu_amx_bf16_block((const uint32_t *)(const void *)panels, x->rows, kc, x->b + k0 * 2, x->ldb, x->M,
                                   x->c, x->ldc, k0 > 0, (uint8_t *)panels + BF16_PANEL_BYTES);
                continue;
            }
#endif
        } else
#endif
            if (!pack_block(x, k0, kc, panels))
            return false;
        for (int64_t j = 0; j < x->M; j += NCOL) {
            int ncols = (int)(x->M - j < NCOL ? x->M - j : NCOL);
            const float *b[NCOL] = {NULL};
#if DENSE_BF16
            const uint32_t *bh[NCOL] = {NULL}; /* bf16: b's k pairs */
#endif
            float *c[NCOL];
            for (int i = 0; i < NCOL; i++) {
                int64_t col = j + (i < ncols ? i : 0);
                const uint8_t *row = x->b + (size_t)col * x->ldb;
#if DENSE_BF16
                if (x->bf16)
                    bh[i] = (const uint32_t *)(const void *)row + k0 / 2;
                else
#endif
                    b[i] = (const float *)(const void *)row + k0;
                c[i] = (float *)(void *)(x->c + (size_t)col * x->ldc);
            }
            for (int pnl = 0; pnl < npanels; pnl++) {
                float *cp[NCOL];
                for (int i = 0; i < NCOL; i++)
                    cp[i] = c[i] + pnl * PANEL;
                int rows = x->rows - pnl * PANEL < PANEL ? x->rows - pnl * PANEL : PANEL;
#if DENSE_BF16
                if (x->bf16) {
                    const uint32_t *panel = (const uint32_t *)(const void *)panels + (size_t)pnl * (size_t)(kc / 2) * PANEL;
                    kernel_bf16(kc, panel, bh, ncols, cp, rows, k0 > 0);
                    continue;
                }
#endif
                kernel(kc, panels + (size_t)pnl * (size_t)kc * PANEL, b, ncols, cp, rows, k0 > 0);
            }
        }
    }
    return true;
}
