/* Tiled mul_mat for the K-quant weights Q4_K, Q5_K, Q6_K and IQ4_XS against
 * Q8_K activations, for batches: the same scheme as cpu_mul_mat_q8tile.c (8
 * weight rows unpacked once, swept over the activation columns 4 at a
 * time).  All three are super-blocks of 256 elements whose values are
 * small unsigned integers q with a scale and an offset per sub-block:
 *
 *   Q4_K  x = d sc[j] q - dmin m[j],  q in [0, 15], sub-blocks of 32
 *   Q5_K  the same with q in [0, 31] (a fifth bit from qh)
 *   Q6_K  x = d sc[k] (q - 32),       q in [0, 63], sub-blocks of 16
 *
 * so one unpacked form serves them: per 32 elements, the 32 unsigned
 * values (which dpbusd / maddubs take as they are, against the signed Q8_K
 * bytes), the scale of each half (16 elements; the two are equal for
 * Q4_K/Q5_K), and the offset of each half, whose products with dy * the
 * half's sum of y (Q8_K's bsums are per 16) are taken off at the end:
 *
 *   dot(x, y) = dy * sum_halves (scale * (q . y) - offset * sum(y))
 *
 * with offset = dmin m[j] (Q4_K/Q5_K, both halves) or 32 d sc[k] (Q6_K).
 *
 * IQ4_XS, x = d (ls[j] - 32) kvalues_iq4nl[q] with sub-blocks of 32, fits
 * the same form with signed values (the table's int8, |v| <= 127), the
 * integer sub-scale ls[j] - 32 and no offset.  The kernels take the signed
 * values apart (KQ_SIGNED): AVX2 as its per-row kernel, maddubs of |v|
 * against y with v's sign (pairs at most 2 * 127 * 127, no saturation);
 * AVX-512 stores v + 128 (unsigned, for dpbusd, which does not saturate)
 * and starts each 4-element int32 lane at -128 sum(y), then weights the
 * exact lane sums by the sub-scale in int32.
 * Integer sums are exact; the float additions are ordered differently
 * from the per-row kernels. */
#include <string.h>

#include "cpu_internal.h"
#include "quant/quant_kernels.h"

#define QK 256
#define Q4_K_BYTES 144
#define Q5_K_BYTES 176
#define Q6_K_BYTES 210
#define IQ4_XS_BYTES 136
#define Q8_K_BYTES 292
#define Q8_K_QS 4
#define Q8_K_BSUMS 260

#if (defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
     defined(__F16C__)) ||                                                                                 \
    (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>

#include "cpu_unpack_x86.h"

bool cpu_kqtile_available(tport_type_id type) {
    return type == TPORT_TYPE_Q4_K || type == TPORT_TYPE_Q5_K || type == TPORT_TYPE_Q6_K || type == TPORT_TYPE_IQ4_XS;
}

/* How a kernel treats the unpacked values: unsigned with one offset per
 * sub-block (Q4_K, Q5_K), with one per half (Q6_K), or signed (IQ4_XS). */
enum { KQ_PLAIN, KQ_SPLIT, KQ_SIGNED };

static int kq_mode(tport_type_id type) {
    return type == TPORT_TYPE_Q6_K ? KQ_SPLIT : type == TPORT_TYPE_IQ4_XS ? KQ_SIGNED : KQ_PLAIN;
}

/* The 8 6-bit scales and mins of Q4_K/Q5_K from their 12 packed bytes
 * (ggml's get_scale_min_k4). */
static void scale_min(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* One 32-element sub-block j (0..7) of a super-block: its unsigned values,
 * and the scale and offset of each 16-element half (see the top). */
typedef struct kq_part {
    uint8_t q[32];
    float scale[2], offset[2];
    int isc[2]; /* scale[h] = d * isc[h] */
    float d;
} kq_part;

static size_t block_bytes(tport_type_id type) {
    return type == TPORT_TYPE_Q4_K     ? Q4_K_BYTES
           : type == TPORT_TYPE_Q5_K   ? Q5_K_BYTES
           : type == TPORT_TYPE_IQ4_XS ? IQ4_XS_BYTES
                                       : Q6_K_BYTES;
}

/* Bytes of v shifted right by n (0..7) bits, each byte on its own. */
static __m256i bytes_srl(__m256i v, int n) { return _mm256_srl_epi16(v, _mm_cvtsi32_si128(n)); }

static void part_of(tport_type_id type, const uint8_t *blk, int j, kq_part *o) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    if (type == TPORT_TYPE_IQ4_XS) {
        /* {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: sub-block j is
         * qs[16 j ..], low nibbles elements 0..15, high ones 16..31; the
         * values looked up in the table 32 at once, as int8 */
        const __m128i nib = _mm_loadu_si128((const __m128i *)(const void *)(blk + 8 + 16 * j));
        const __m256i idx = _mm256_and_si256(
            _mm256_set_m128i(_mm_srli_epi16(nib, 4), nib), m4);
        const __m256i tbl =
            _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)CPUQ(kvalues_iq4nl)));
        _mm256_storeu_si256((__m256i *)(void *)o->q, _mm256_shuffle_epi8(tbl, idx));
        o->d = half_at(blk);
        o->isc[0] = o->isc[1] = cpuq_iq4xs_scale(blk, (unsigned)(blk[2] | blk[3] << 8), j);
        o->scale[0] = o->scale[1] = o->d * (float)o->isc[0];
        o->offset[0] = o->offset[1] = 0.0f;
        return;
    }
    if (type == TPORT_TYPE_Q6_K) {
        /* {ql[128], qh[64], int8 scales[16], f16 d}: element 32 j + l of
         * half h = j / 4 takes its low nibble from ql[64 h + l (+ 32 for odd
         * j)], low or high by (j / 2) % 2, and its top two bits from
         * qh[32 h + l] at bit 2 (j % 4); 32 bytes at once, the 16-bit
         * shifts' spill into the next byte masked off */
        const uint8_t *ql = blk + 64 * (j / 4) + 32 * (j & 1), *qh = blk + 128 + 32 * (j / 4);
        const int8_t *sc = (const int8_t *)(const void *)(blk + 192);
        const __m256i lo = _mm256_and_si256(bytes_srl(_mm256_loadu_si256((const __m256i *)(const void *)ql), (j & 2) ? 4 : 0), m4);
        const __m256i hi = _mm256_and_si256(bytes_srl(_mm256_loadu_si256((const __m256i *)(const void *)qh), 2 * (j % 4)),
                                            _mm256_set1_epi8(3));
        _mm256_storeu_si256((__m256i *)(void *)o->q, _mm256_or_si256(lo, _mm256_slli_epi16(hi, 4)));
        float d = half_at(blk + 208);
        o->d = d;
        for (int h = 0; h < 2; h++) {
            o->isc[h] = sc[2 * j + h];
            o->scale[h] = d * (float)sc[2 * j + h];
            o->offset[h] = 32.0f * o->scale[h];
        }
        return;
    }
    /* Q4_K {f16 d, dmin; scales[12]; qs[128]}, Q5_K {f16 d, dmin;
     * scales[12]; qh[32]; qs[128]}: sub-blocks 2c and 2c + 1 are the low
     * and high nibbles of qs[32 c ..]; Q5_K's fifth bit of element l of
     * sub-block j is bit j of qh[l] */
    bool five = type == TPORT_TYPE_Q5_K;
    const uint8_t *qs = blk + (five ? 48 : 16) + 32 * (j / 2), *qh = blk + 16;
    __m256i q = _mm256_and_si256(bytes_srl(_mm256_loadu_si256((const __m256i *)(const void *)qs), (j & 1) ? 4 : 0), m4);
    if (five) {
        const __m256i h = _mm256_and_si256(bytes_srl(_mm256_loadu_si256((const __m256i *)(const void *)qh), j),
                                           _mm256_set1_epi8(1));
        q = _mm256_or_si256(q, _mm256_slli_epi16(h, 4));
    }
    _mm256_storeu_si256((__m256i *)(void *)o->q, q);
    int sc, m;
    scale_min(blk + 4, j, &sc, &m);
    o->d = half_at(blk);
    o->isc[0] = o->isc[1] = sc;
    o->scale[0] = o->scale[1] = o->d * (float)sc;
    o->offset[0] = o->offset[1] = half_at(blk + 2) * (float)m;
}

/* Sub-block j of a super-block for the AMX kernel (cpu_mul_mat_amx_kq.c),
 * as part_of unpacks it: the 32 values, the integer sub-scale of each
 * half, d, and for Q4_K/Q5_K the integer min m and dmin (else 0). */
void cpu_kqtile_sub(tport_type_id type, const uint8_t *blk, int j, uint8_t q[32], int isc[2], int *m, float *d,
                    float *dmin) {
    kq_part part;
    part_of(type, blk, j, &part);
    memcpy(q, part.q, 32);
    isc[0] = part.isc[0];
    isc[1] = part.isc[1];
    *d = part.d;
    *m = 0;
    *dmin = 0.0f;
    if (type == TPORT_TYPE_Q4_K || type == TPORT_TYPE_Q5_K) {
        int sc;
        scale_min(blk + 4, j, &sc, m);
        *dmin = half_at(blk + 2);
    }
}

#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
    defined(__F16C__)
/* AVX-512 VNNI.  Unpacked, per super-block b, sub-block j and row pair p
 * (rows 2p, 2p+1):
 *   vals: 64 bytes, the pair's 32 values each,
 *   iscl: 32 int16, the integer sub-scale of each maddubs pair: words
 *         0-7 and 8-15 the halves of row 2p, 16-23 and 24-31 those of
 *         row 2p+1,
 * after all of those, per (b, j), offs: 16 floats, the offsets of the
 * first halves of the 8 rows, then of the second halves, whose products
 * with dy * sum(y) build up in one 8-lane accumulator per column; and
 * per (b, p), dsup: 16 floats, the super-block scale d of row 2p (lanes
 * 0-7) and of row 2p+1 (8-15).
 * The values times y go through maddubs (unsigned values <= 63 against
 * signed bytes: pairs at most 2 * 63 * 128, no saturation) and dpwssd
 * with the integer sub-scales into int32 lanes that sum a whole
 * super-block exactly (at most 8 * 4 * 63 * 128 * 128 < 2^31), then one
 * conversion and FMA by d * dy per super-block, as the per-row kernels
 * do; the float scaling per sub-block is gone from the inner loop.
 * KQ_SIGNED (IQ4_XS): vals hold v + 128 and iscl, as 16 int32, the
 * sub-scale of each dpbusd lane (lanes 0-3 and 4-7 the halves of row 2p,
 * 8-15 row 2p+1); a lane's dpbusd started at -128 sum(y) is its exact
 * v . y (|.| <= 4 * 127 * 128), times the sub-scale (|ls - 32| <= 32)
 * summed over a super-block at most 8 * 32 * 4 * 127 * 128 < 2^31. */
#define PAIRS (CPU_Q8TILE_ROWS / 2)
#define COLS 4
#define UNIT ((size_t)64 * 2) /* vals, iscl of one (sub-block, pair) */

size_t cpu_kqtile_scratch(int64_t K) {
    return (size_t)(K / QK) * (8 * (PAIRS * UNIT + 16 * sizeof(float)) + PAIRS * 16 * sizeof(float)) + 64;
}

static size_t unit_at(int64_t b, int j, int p) {
    return (size_t)((b * 8 + j) * PAIRS + p) * UNIT;
}

/* The offsets of sub-block j of super-block b: 16 floats after every unit. */
static size_t offs_at(int64_t nb, int64_t b, int j) {
    return (size_t)(nb * 8) * PAIRS * UNIT + (size_t)(b * 8 + j) * 16 * sizeof(float);
}

/* The super-block scales of pair p in super-block b, after the offsets. */
static size_t dsup_at(int64_t nb, int64_t b, int p) {
    return (size_t)(nb * 8) * (PAIRS * UNIT + 16 * sizeof(float)) + (size_t)(b * PAIRS + p) * 16 * sizeof(float);
}

void cpu_kqtile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / QK;
    size_t bb = block_bytes(type);
    const bool signed_vals = kq_mode(type) == KQ_SIGNED;
    for (int r = 0; r < CPU_Q8TILE_ROWS; r++) {
        int p = r / 2, half = r & 1;
        for (int64_t b = 0; b < nb; b++) {
            float d = 0.0f;
            for (int j = 0; j < 8; j++) {
                kq_part part = {0};
                if (r < nrows)
                    part_of(type, rows[r] + (size_t)b * bb, j, &part);
                d = part.d;
                uint8_t *u = tile + unit_at(b, j, p);
                float *offs = (float *)(void *)(tile + offs_at(nb, b, j));
                if (signed_vals) {
                    /* v + 128, unsigned for dpbusd (a missing row's 0 too:
                     * its sub-scale is 0) */
                    int32_t *isc = (int32_t *)(void *)(u + 64);
                    for (int l = 0; l < 32; l++)
                        part.q[l] ^= 0x80;
                    for (int l = 0; l < 4; l++) {
                        isc[8 * half + l] = part.isc[0];
                        isc[8 * half + 4 + l] = part.isc[1];
                    }
                } else {
                    int16_t *isc = (int16_t *)(void *)(u + 64);
                    for (int l = 0; l < 8; l++) {
                        isc[16 * half + l] = (int16_t)part.isc[0];
                        isc[16 * half + 8 + l] = (int16_t)part.isc[1];
                    }
                }
                memcpy(u + 32 * half, part.q, 32);
                offs[r] = part.offset[0];
                offs[8 + r] = part.offset[1];
            }
            float *ds = (float *)(void *)(tile + dsup_at(nb, b, p));
            for (int l = 0; l < 8; l++)
                ds[8 * half + l] = d;
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

/* KQ_SPLIT: the halves have offsets of their own (Q6_K); KQ_PLAIN: one
 * offset times the sum of both halves, as the Q4_K kernel always did;
 * KQ_SIGNED: no offsets, v + 128 through dpbusd (see above) */
static inline __attribute__((always_inline)) void kernel(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                         size_t y_stride, int nc, int mode, float *out) {
    const bool split = mode == KQ_SPLIT;
    const __m512i k128 = _mm512_set1_epi8((char)0x80);
    __m512 acc[PAIRS][COLS];
    __m256 oacc[COLS];
    for (int c = 0; c < COLS; c++) {
        oacc[c] = _mm256_setzero_ps();
        for (int p = 0; p < PAIRS; p++)
            acc[p][c] = _mm512_setzero_ps();
    }
    for (int64_t b = 0; b < nb; b++) {
        /* dy * the super-block's group sums of y, per column, converted
         * together once: split, per 16 (ys[c][2j + h]); else per 32
         * (ys[c][j], the exact integer pair sum first) */
        float ys[COLS][16], dyf[COLS];
        for (int c = 0; c < nc; c++) {
            const uint8_t *yb = y + (size_t)c * y_stride + (size_t)b * Q8_K_BYTES;
            memcpy(&dyf[c], yb, sizeof dyf[c]);
            if (mode == KQ_SIGNED)
                continue;
            const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_BSUMS));
            if (split)
                _mm512_storeu_ps(ys[c], _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(bs)),
                                                      _mm512_set1_ps(dyf[c])));
            else
                _mm256_storeu_ps(ys[c], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, _mm256_set1_epi16(1))),
                                                      _mm256_set1_ps(dyf[c])));
        }
        __m512i isum[PAIRS][COLS];
        for (int p = 0; p < PAIRS; p++)
            for (int c = 0; c < COLS; c++)
                isum[p][c] = _mm512_setzero_si512();
        for (int j = 0; j < 8; j++) {
            __m512i x[PAIRS];
            for (int p = 0; p < PAIRS; p++)
                x[p] = _mm512_loadu_si512((const void *)(tile + unit_at(b, j, p)));
            const float *offs = (const float *)(const void *)(tile + offs_at(nb, b, j));
            const __m256 off0 = _mm256_loadu_ps(offs), off1 = _mm256_loadu_ps(offs + 8);
            for (int c = 0; c < nc; c++) {
                const uint8_t *yb = y + (size_t)c * y_stride + (size_t)b * Q8_K_BYTES;
                __m512i yv = _mm512_broadcast_i64x4(
                    _mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_QS + 32 * j)));
                if (mode == KQ_SIGNED) {
                    const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                                           _mm512_dpbusd_epi32(_mm512_setzero_si512(), k128, yv));
                    for (int p = 0; p < PAIRS; p++) {
                        const __m512i sc = _mm512_loadu_si512((const void *)(tile + unit_at(b, j, p) + 64));
                        isum[p][c] = _mm512_add_epi32(isum[p][c],
                                                      _mm512_mullo_epi32(_mm512_dpbusd_epi32(start, x[p], yv), sc));
                    }
                    continue;
                }
                if (split) {
                    oacc[c] = _mm256_fmadd_ps(off0, _mm256_broadcast_ss(&ys[c][2 * j]), oacc[c]);
                    oacc[c] = _mm256_fmadd_ps(off1, _mm256_broadcast_ss(&ys[c][2 * j + 1]), oacc[c]);
                } else {
                    oacc[c] = _mm256_fmadd_ps(off0, _mm256_broadcast_ss(&ys[c][j]), oacc[c]);
                }
                for (int p = 0; p < PAIRS; p++) {
                    const __m512i sc = _mm512_loadu_si512((const void *)(tile + unit_at(b, j, p) + 64));
                    isum[p][c] = _mm512_dpwssd_epi32(isum[p][c], _mm512_maddubs_epi16(x[p], yv), sc);
                }
            }
        }
        for (int p = 0; p < PAIRS; p++) {
            const __m512 ds = _mm512_loadu_ps((const float *)(const void *)(tile + dsup_at(nb, b, p)));
            for (int c = 0; c < nc; c++)
                acc[p][c] = _mm512_fmadd_ps(_mm512_mul_ps(ds, _mm512_set1_ps(dyf[c])), _mm512_cvtepi32_ps(isum[p][c]),
                                            acc[p][c]);
        }
    }
    for (int c = 0; c < nc; c++) {
        float m[8];
        _mm256_storeu_ps(m, oacc[c]);
        for (int p = 0; p < PAIRS; p++) {
            float *o = &out[c * CPU_Q8TILE_ROWS + 2 * p];
            hsum_halves(acc[p][c], &o[0], &o[1]);
            o[0] -= m[2 * p];
            o[1] -= m[2 * p + 1];
        }
    }
}

void cpu_kqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    int64_t nb = K / QK;
    /* ncols and the mode constant in each call: the loops over them unroll */
#define KQ_RUN(m)                                                                                                  \
    switch (ncols) {                                                                                               \
    case 1: kernel(tile, nb, y, y_stride, 1, m, out); break;                                                      \
    case 2: kernel(tile, nb, y, y_stride, 2, m, out); break;                                                      \
    case 3: kernel(tile, nb, y, y_stride, 3, m, out); break;                                                      \
    default: kernel(tile, nb, y, y_stride, 4, m, out); break;                                                     \
    }
    switch (kq_mode(type)) {
    case KQ_SPLIT: KQ_RUN(KQ_SPLIT) break;
    case KQ_SIGNED: KQ_RUN(KQ_SIGNED) break;
    default: KQ_RUN(KQ_PLAIN) break;
    }
#undef KQ_RUN
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* AVX2: the unsigned values go straight into maddubs against the signed
 * Q8_K bytes (pair sums at most 2 * 63 * 128, no saturation), then madd
 * with the integer sub-scales into int32 lanes that sum a super-block
 * exactly, as in the AVX-512 kernel.  Unpacked, per super-block b,
 * sub-block j and row r (ROWS = 8), u = (b 8 + j) ROWS + r:
 *   vals[32 u + e]            the 32 values,
 *   iscl[16 u + w]            the integer sub-scale of maddubs word w
 *                             (words 0-7 the first half, 8-15 the second),
 *   offs[u], offs[units + u]  the halves' offsets,
 * and per (b, r) dsup[b ROWS + r], the super-block scale d.
 * KQ_SIGNED (IQ4_XS): vals hold the int8 values as they are; the kernel
 * multiplies |v| by y with v's sign, as the per-row kernel does (Q8_K
 * bytes are within +-127, so the sign flip cannot overflow).
 * The kernel takes 4 rows x 2 columns at a time, as the Q8_0 one. */
#define ROWS CPU_Q8TILE_ROWS

size_t cpu_kqtile_scratch(int64_t K) {
    return (size_t)(K / QK) * ROWS * (8 * (32 + 32 + 2 * sizeof(float)) + sizeof(float)) + 64;
}

void cpu_kqtile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    int64_t nb = K / QK, units = nb * 8 * ROWS;
    size_t bb = block_bytes(type);
    uint8_t *vals = tile;
    int16_t *iscl = (int16_t *)(void *)(tile + (size_t)units * 32);
    float *offs = (float *)(void *)(tile + (size_t)units * 64), *dsup = offs + 2 * units;
    for (int r = 0; r < ROWS; r++) {
        for (int64_t b = 0; b < nb; b++) {
            float d = 0.0f;
            for (int j = 0; j < 8; j++) {
                size_t u = (size_t)((b * 8 + j) * ROWS + r);
                kq_part part = {0};
                if (r < nrows)
                    part_of(type, rows[r] + (size_t)b * bb, j, &part);
                d = part.d;
                memcpy(vals + 32 * u, part.q, 32);
                for (int w = 0; w < 8; w++) {
                    iscl[16 * u + w] = (int16_t)part.isc[0];
                    iscl[16 * u + 8 + w] = (int16_t)part.isc[1];
                }
                offs[u] = part.offset[0];
                offs[units + u] = part.offset[1];
            }
            dsup[b * ROWS + r] = d;
        }
    }
}

static inline float hsum256(__m256 v) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    x = _mm_add_ss(x, _mm_movehdup_ps(x));
    return _mm_cvtss_f32(x);
}

/* Rows r0 .. r0 + 3 against columns c0 .. c0 + nc - 1 (nc 1 or 2); mode
 * as in the AVX-512 kernel, but KQ_SIGNED by the sign trick (see above). */
static inline __attribute__((always_inline)) void kernel4(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                          size_t y_stride, int r0, int c0, int nc, int mode,
                                                          float *out) {
    const bool split = mode == KQ_SPLIT;
    int64_t units = nb * 8 * ROWS;
    const uint8_t *vals = tile, *iscl = tile + (size_t)units * 32;
    const float *offs = (const float *)(const void *)(tile + (size_t)units * 64), *dsup = offs + 2 * units;
    __m256 acc[4][2];
    __m128 oacc[2] = {_mm_setzero_ps(), _mm_setzero_ps()};
    for (int r = 0; r < 4; r++)
        acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        /* dy * the group sums of y, converted together (see the AVX-512
         * kernel) */
        float ys[2][16], dyf[2];
        for (int c = 0; c < nc; c++) {
            const uint8_t *yb = y + (size_t)(c0 + c) * y_stride + (size_t)b * Q8_K_BYTES;
            memcpy(&dyf[c], yb, sizeof dyf[c]);
            if (mode == KQ_SIGNED)
                continue;
            const __m256 dy = _mm256_set1_ps(dyf[c]);
            const __m256i bs = _mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_BSUMS));
            if (split) {
                _mm256_storeu_ps(ys[c], _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(bs))),
                                                      dy));
                _mm256_storeu_ps(ys[c] + 8,
                                 _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(bs, 1))),
                                               dy));
            } else {
                _mm256_storeu_ps(ys[c],
                                 _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_madd_epi16(bs, _mm256_set1_epi16(1))), dy));
            }
        }
        __m256i isum[4][2];
        for (int r = 0; r < 4; r++)
            isum[r][0] = isum[r][1] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            size_t u0 = (size_t)((b * 8 + j) * ROWS + r0);
            __m256i yv[2];
            for (int c = 0; c < nc; c++) {
                const uint8_t *yb = y + (size_t)(c0 + c) * y_stride + (size_t)b * Q8_K_BYTES;
                yv[c] = _mm256_loadu_si256((const __m256i *)(const void *)(yb + Q8_K_QS + 32 * j));
                if (mode == KQ_SIGNED) {
                    /* no offsets */
                } else if (split) {
                    oacc[c] = _mm_fmadd_ps(_mm_loadu_ps(offs + u0), _mm_broadcast_ss(&ys[c][2 * j]), oacc[c]);
                    oacc[c] = _mm_fmadd_ps(_mm_loadu_ps(offs + units + u0), _mm_broadcast_ss(&ys[c][2 * j + 1]),
                                           oacc[c]);
                } else {
                    oacc[c] = _mm_fmadd_ps(_mm_loadu_ps(offs + u0), _mm_broadcast_ss(&ys[c][j]), oacc[c]);
                }
            }
            for (int r = 0; r < 4; r++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(vals + 32 * (u0 + (size_t)r)));
                __m256i sc = _mm256_loadu_si256((const __m256i *)(const void *)(iscl + 32 * (u0 + (size_t)r)));
                if (mode == KQ_SIGNED) {
                    const __m256i ax = _mm256_sign_epi8(x, x);
                    for (int c = 0; c < nc; c++)
                        isum[r][c] = _mm256_add_epi32(
                            isum[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(ax, _mm256_sign_epi8(yv[c], x)), sc));
                } else {
                    for (int c = 0; c < nc; c++)
                        isum[r][c] =
                            _mm256_add_epi32(isum[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(x, yv[c]), sc));
                }
            }
        }
        for (int r = 0; r < 4; r++) {
            const float d = dsup[b * ROWS + r0 + r];
            for (int c = 0; c < nc; c++)
                acc[r][c] = _mm256_fmadd_ps(_mm256_set1_ps(d * dyf[c]), _mm256_cvtepi32_ps(isum[r][c]), acc[r][c]);
        }
    }
    for (int c = 0; c < nc; c++) {
        float m[4];
        _mm_storeu_ps(m, oacc[c]);
        for (int r = 0; r < 4; r++)
            out[(c0 + c) * ROWS + r0 + r] = hsum256(acc[r][c]) - m[r];
    }
}

/* mode constant in each call, so kernel4's branches on it fold */
static inline __attribute__((always_inline)) void dot_rows(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                           size_t y_stride, int ncols, int mode, float *out) {
    for (int r0 = 0; r0 < ROWS; r0 += 4) {
        int c = 0;
        for (; c + 2 <= ncols; c += 2)
            kernel4(tile, nb, y, y_stride, r0, c, 2, mode, out);
        if (c < ncols)
            kernel4(tile, nb, y, y_stride, r0, c, 1, mode, out);
    }
}

void cpu_kqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    int64_t nb = K / QK;
    switch (kq_mode(type)) {
    case KQ_SPLIT: dot_rows(tile, nb, y, y_stride, ncols, KQ_SPLIT, out); break;
    case KQ_SIGNED: dot_rows(tile, nb, y, y_stride, ncols, KQ_SIGNED, out); break;
    default: dot_rows(tile, nb, y, y_stride, ncols, KQ_PLAIN, out); break;
    }
}

#else /* no kernel in this build */

bool cpu_kqtile_available(tport_type_id type) {
    (void)type;
    return false;
}

size_t cpu_kqtile_scratch(int64_t K) {
    (void)K;
    return 0;
}

void cpu_kqtile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    (void)type, (void)rows, (void)nrows, (void)K, (void)tile;
}

void cpu_kqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    (void)type, (void)tile, (void)K, (void)y, (void)y_stride, (void)ncols, (void)out;
}
#endif
