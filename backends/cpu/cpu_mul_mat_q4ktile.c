/* Tiled mul_mat for Q4_K weights against Q8_K activations, for batches:
 * the same scheme as cpu_mul_mat_q8tile.c (8 weight rows unpacked once,
 * swept over the activation columns 4 at a time), for today's Q4_K
 * {f16 d, dmin; u8 scales[12]; u8 qs[128]} super-blocks of 256 elements
 * in 8 sub-blocks of 32: x = d * sc[j] * q - dmin * m[j], q in [0, 15].
 *
 *   dot(x, y) = dy * sum_j (d sc[j] (q_j . y_j) - dmin m[j] sum(y_j))
 *
 * The nibbles are unsigned, so dpbusd takes them as they are.  Unpacked,
 * per super-block b, sub-block j and row pair p (rows 2p, 2p+1):
 *   vals: 64 bytes, the pair's 32 nibbles of sub-block j each,
 *   scls: 16 floats, d * sc[j] of row 2p (lanes 0-7) and 2p+1 (8-15),
 * and after all of those, per (b, j), mins: 8 floats, dmin * m[j] of the 8
 * rows, whose products with dy * sum(y_j) (from Q8_K's bsums) build up in
 * one 8-lane accumulator per column, taken off at the end.  Integer sums are exact; the float
 * additions are ordered differently from the per-row kernel. */
#include <string.h>

#include "cpu_internal.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
    defined(__F16C__)
#include <immintrin.h>

#define QK 256
#define Q4_K_BYTES 144
#define Q8_K_BYTES 292
#define Q8_K_QS 4
#define Q8_K_BSUMS 260
#define PAIRS (CPU_Q8TILE_ROWS / 2)
#define COLS 4
#define UNIT ((size_t)64 * 2) /* vals, scls of one (sub-block, pair) */

bool cpu_q4ktile_available(tport_type_id type) {
    return type == TPORT_TYPE_Q4_K;
}

size_t cpu_q4ktile_scratch(int64_t K) {
    return (size_t)(K / QK) * 8 * (PAIRS * UNIT + 8 * sizeof(float)) + 64;
}

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* The 8 6-bit scales and mins from their 12 packed bytes (ggml's
 * get_scale_min_k4). */
static void scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

static size_t unit_at(int64_t b, int j, int p) {
    return (size_t)((b * 8 + j) * PAIRS + p) * UNIT;
}

/* The mins of sub-block j of super-block b: 8 floats after every unit. */
static size_t mins_at(int64_t nb, int64_t b, int j) {
    return (size_t)(nb * 8) * PAIRS * UNIT + (size_t)(b * 8 + j) * 8 * sizeof(float);
}

void cpu_q4ktile_unpack(const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / QK;
    for (int r = 0; r < CPU_Q8TILE_ROWS; r++) {
        int p = r / 2, half = r & 1;
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = r < nrows ? rows[r] + (size_t)b * Q4_K_BYTES : NULL;
            float d = blk ? half_at(blk) : 0.0f, dmin = blk ? half_at(blk + 2) : 0.0f;
            for (int j = 0; j < 8; j++) {
                uint8_t *u = tile + unit_at(b, j, p);
                float *scl = (float *)(void *)(u + 64), *mins = (float *)(void *)(tile + mins_at(nb, b, j));
                int sc = 0, m = 0;
                if (blk) {
                    /* sub-blocks 2c and 2c+1 are the low and high nibbles of qs[32c..32c+31] */
                    __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 16 + 32 * (j / 2)));
                    if (j & 1)
                        q = _mm256_srli_epi16(q, 4);
                    _mm256_storeu_si256((__m256i *)(void *)(u + 32 * half), _mm256_and_si256(q, _mm256_set1_epi8(0x0F)));
                    scale_min(blk + 4, j, &sc, &m);
                } else {
                    memset(u + 32 * half, 0, 32);
                }
                _mm256_storeu_ps(scl + 8 * half, _mm256_set1_ps(d * (float)sc));
                mins[r] = dmin * (float)m;
            }
        }
    }
}

static void hsum_halves(__m512 a, float *lo, float *hi) {
    __m256 l = _mm512_castps512_ps256(a), h = _mm512_extractf32x8_ps(a, 1);
    __m256 t = _mm256_hadd_ps(l, h);
    t = _mm256_hadd_ps(t, t);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
    *lo = _mm_cvtss_f32(s);
    *hi = _mm_cvtss_f32(_mm_shuffle_ps(s, s, 1));
}

static int bsum(const uint8_t *yb, int i) {
    int16_t v;
    memcpy(&v, yb + Q8_K_BSUMS + 2 * i, sizeof v);
    return v;
}

static inline __attribute__((always_inline)) void kernel(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                         size_t y_stride, int nc, float *out) {
    __m512 acc[PAIRS][COLS];
    __m256 macc[COLS];
    for (int c = 0; c < COLS; c++) {
        macc[c] = _mm256_setzero_ps();
        for (int p = 0; p < PAIRS; p++)
            acc[p][c] = _mm512_setzero_ps();
    }
    const __m512i zero = _mm512_setzero_si512();
    for (int64_t b = 0; b < nb; b++) {
        for (int j = 0; j < 8; j++) {
            __m512i x[PAIRS];
            for (int p = 0; p < PAIRS; p++)
                x[p] = _mm512_loadu_si512((const void *)(tile + unit_at(b, j, p)));
            const __m256 mins = _mm256_loadu_ps((const float *)(const void *)(tile + mins_at(nb, b, j)));
            for (int c = 0; c < nc; c++) {
                const uint8_t *yb = y + (size_t)c * y_stride + (size_t)b * Q8_K_BYTES;
                float dyf;
                memcpy(&dyf, yb, sizeof dyf);
                __m512i yv = _mm512_broadcast_i64x4(
                    _mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_QS + 32 * j)));
                __m512 dy = _mm512_set1_ps(dyf);
                macc[c] = _mm256_fmadd_ps(mins, _mm256_set1_ps(dyf * (float)(bsum(yb, 2 * j) + bsum(yb, 2 * j + 1))),
                                          macc[c]);
                for (int p = 0; p < PAIRS; p++) {
                    const uint8_t *u = tile + unit_at(b, j, p);
                    __m512i i = _mm512_dpbusd_epi32(zero, x[p], yv);
                    __m512 d = _mm512_mul_ps(_mm512_loadu_ps((const float *)(const void *)(u + 64)), dy);
                    acc[p][c] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(i), acc[p][c]);
                }
            }
        }
    }
    for (int c = 0; c < nc; c++) {
        float m[8];
        _mm256_storeu_ps(m, macc[c]);
        for (int p = 0; p < PAIRS; p++) {
            float *o = &out[c * CPU_Q8TILE_ROWS + 2 * p];
            hsum_halves(acc[p][c], &o[0], &o[1]);
            o[0] -= m[2 * p];
            o[1] -= m[2 * p + 1];
        }
    }
}

void cpu_q4ktile_dot(const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out) {
    int64_t nb = K / QK;
    switch (ncols) {
    case 1: kernel(tile, nb, y, y_stride, 1, out); break;
    case 2: kernel(tile, nb, y, y_stride, 2, out); break;
    case 3: kernel(tile, nb, y, y_stride, 3, out); break;
    default: kernel(tile, nb, y, y_stride, 4, out); break;
    }
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* AVX2: the unsigned nibbles go straight into maddubs against the signed
 * Q8_K bytes (pair sums at most 2 * 15 * 128, no saturation).  Unpacked,
 * per super-block b, sub-block j and row r (ROWS = 8):
 *   vals[((b * 8 + j) * ROWS + r) * 32 + e]  the 32 nibbles,
 *   scls[(b * 8 + j) * ROWS + r]             d * sc[j],
 *   mins[(b * 8 + j) * ROWS + r]             dmin * m[j].
 * The kernel takes 4 rows x 2 columns at a time, as the Q8_0 one. */
#include <immintrin.h>

#define QK 256
#define Q4_K_BYTES 144
#define Q8_K_BYTES 292
#define Q8_K_QS 4
#define Q8_K_BSUMS 260
#define ROWS CPU_Q8TILE_ROWS

bool cpu_q4ktile_available(tport_type_id type) {
    return type == TPORT_TYPE_Q4_K;
}

size_t cpu_q4ktile_scratch(int64_t K) {
    return (size_t)(K / QK) * 8 * ROWS * (32 + 2 * sizeof(float)) + 64;
}

static float half_at(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* The 8 6-bit scales and mins from their 12 packed bytes (ggml's
 * get_scale_min_k4). */
static void scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

void cpu_q4ktile_unpack(const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / QK, units = nb * 8 * ROWS;
    uint8_t *vals = tile;
    float *scls = (float *)(void *)(tile + (size_t)units * 32), *mins = scls + units;
    for (int r = 0; r < ROWS; r++) {
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = r < nrows ? rows[r] + (size_t)b * Q4_K_BYTES : NULL;
            float d = blk ? half_at(blk) : 0.0f, dmin = blk ? half_at(blk + 2) : 0.0f;
            for (int j = 0; j < 8; j++) {
                size_t u = (size_t)((b * 8 + j) * ROWS + r);
                int sc = 0, m = 0;
                if (blk) {
                    /* sub-blocks 2c and 2c+1 are the low and high nibbles of qs[32c..32c+31] */
                    __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 16 + 32 * (j / 2)));
                    if (j & 1)
                        q = _mm256_srli_epi16(q, 4);
                    _mm256_storeu_si256((__m256i *)(void *)(vals + 32 * u), _mm256_and_si256(q, _mm256_set1_epi8(0x0F)));
                    scale_min(blk + 4, j, &sc, &m);
                } else {
                    memset(vals + 32 * u, 0, 32);
                }
                scls[u] = d * (float)sc;
                mins[u] = dmin * (float)m;
            }
        }
    }
}

static inline float hsum256(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

static int bsum(const uint8_t *yb, int i) {
    int16_t v;
    memcpy(&v, yb + Q8_K_BSUMS + 2 * i, sizeof v);
    return v;
}

/* Rows r0 .. r0 + 3 against columns c0 .. c0 + nc - 1 (nc 1 or 2). */
static inline __attribute__((always_inline)) void kernel4(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                          size_t y_stride, int r0, int c0, int nc, float *out) {
    int64_t units = nb * 8 * ROWS;
    const uint8_t *vals = tile;
    const float *scls = (const float *)(const void *)(tile + (size_t)units * 32), *mins = scls + units;
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[4][2];
    __m128 macc[2] = {_mm_setzero_ps(), _mm_setzero_ps()};
    for (int r = 0; r < 4; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        float dyf[2];
        for (int c = 0; c < nc; c++)
            memcpy(&dyf[c], y + (size_t)(c0 + c) * y_stride + (size_t)b * Q8_K_BYTES, sizeof(float));
        for (int j = 0; j < 8; j++) {
            size_t u0 = (size_t)((b * 8 + j) * ROWS + r0);
            __m256i yv[2];
            __m256 dy[2];
            for (int c = 0; c < nc; c++) {
                const uint8_t *yb = y + (size_t)(c0 + c) * y_stride + (size_t)b * Q8_K_BYTES;
                yv[c] = _mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_QS + 32 * j));
                dy[c] = _mm256_set1_ps(dyf[c]);
                __m128 s = _mm_set1_ps(dyf[c] * (float)(bsum(yb, 2 * j) + bsum(yb, 2 * j + 1)));
                macc[c] = _mm_fmadd_ps(_mm_loadu_ps(mins + u0), s, macc[c]);
            }
            for (int r = 0; r < 4; r++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(vals + 32 * (u0 + (size_t)r)));
                __m256 dx = _mm256_broadcast_ss(scls + u0 + r);
                for (int c = 0; c < nc; c++) {
                    __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(x, yv[c]), ones);
                    acc[r][c] = _mm256_fmadd_ps(_mm256_mul_ps(dx, dy[c]), _mm256_cvtepi32_ps(p), acc[r][c]);
                }
            }
        }
    }
    for (int c = 0; c < nc; c++) {
        float m[4];
        _mm_storeu_ps(m, macc[c]);
        for (int r = 0; r < 4; r++)
            out[(c0 + c) * ROWS + r0 + r] = hsum256(acc[r][c]) - m[r];
    }
}

void cpu_q4ktile_dot(const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out) {
    int64_t nb = K / QK;
    for (int r0 = 0; r0 < ROWS; r0 += 4) {
        int c = 0;
        for (; c + 2 <= ncols; c += 2)
            kernel4(tile, nb, y, y_stride, r0, c, 2, out);
        if (c < ncols)
            kernel4(tile, nb, y, y_stride, r0, c, 1, out);
    }
}

#else /* no kernel in this build */

bool cpu_q4ktile_available(tport_type_id type) {
    (void)type;
    return false;
}

size_t cpu_q4ktile_scratch(int64_t K) {
    (void)K;
    return 0;
}

void cpu_q4ktile_unpack(const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    (void)rows, (void)nrows, (void)K, (void)tile;
}

void cpu_q4ktile_dot(const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out) {
    (void)tile, (void)K, (void)y, (void)y_stride, (void)ncols, (void)out;
}
#endif
