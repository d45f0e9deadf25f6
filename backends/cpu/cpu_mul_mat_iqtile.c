/* Tiled mul_mat for the lattice i-quants IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
 * IQ3_S, IQ1_S and IQ1_M, for Q2_K (which llama.cpp's IQ2/IQ1 file
 * types put beside them) and for the ternary TQ2_0, against Q8_K activations, for batches: the
 * scheme of cpu_mul_mat_q8tile.c and _kqtile.c (8 weight rows unpacked
 * once, swept over the activation columns a few at a time).  The per-row
 * kernels (quant/dot_*_iq.c) look every grid entry up and apply every
 * sign again for each activation column; here that happens once per tile.
 *
 * All nine are super-blocks of 256 elements x = d c ls w: a block scale
 * d, a constant c of the type, an odd integer scale ls = 2 s + 1 per 16
 * or 32 elements and small signed integers w:
 *
 *   IQ2_XXS, IQ2_XS, IQ2_S  w = +-grid byte (8, 25, 43), c = 1/8
 *   IQ3_XXS                 w = +-grid byte (4 .. 62),   c = 1/4
 *   IQ3_S                   w = +-grid byte (1 .. 15),   c = 1
 *   IQ1_S, IQ1_M            w = 8 g + delta, g in {-1, 0, 1}, delta = +-1
 *                           (per 32 or per 8 elements), c = 1/8
 *   Q2_K                    w in [0, 3], ls in [0, 15] per 16, c = 1, and a
 *                           minimum: x = d ls w - dmin m, m in [0, 15]
 *   TQ2_0                   w in {-1, 0, 1}, ls 1, c = 1
 *
 * (IQ1's g + delta/8 times 8: integers, the shift folded in.)  Unpacked,
 * every type is the same: per element u = w + 64 in [2, 126] (unsigned,
 * as maddubs wants its first operand), per 16 elements ls, per row d c.
 * maddubs(u, y) pairs stay within int16 (2 * 126 * 128 < 32768); madd /
 * dpwssd with ls as int16 sums them into int32 lanes scaled by ls; the
 * offset's part, 64 sum_g ls_g sum(y over g), comes off once per
 * super-block from Q8_K's bsums (sums of 16).  So each super-block gives
 * exactly the integer the per-row kernels form (IQ1: 8 times theirs plus
 * the delta sum), scaled by d c dy in f32; Q2_K's sum_g m_g sum(y over g)
 * is a second integer, scaled by -dmin dy.  Only the order of the float
 * additions differs from the per-row kernels.
 *
 * Unpacked tile, per super-block b (SB_BYTES each), for j2 = 0..3 (64
 * elements each) and row r, a UNIT of 128 bytes at (j2 ROWS + r) UNIT:
 *   u[64]       the offset values of elements 64 j2 ..,
 *   ls16[32]    int16: lane i the ls of elements 2 i, 2 i + 1 (maddubs'
 *               lanes), i.e. ls of group 4 j2 + i / 8, 8 times each;
 * then at NLS_AT + 32 r the row's 16 values -64 ls (int16), at MIN_AT +
 * 32 r its 16 m (int16, Q2_K), at D_AT + 4 r its d c and at DMIN_AT + 4 r
 * its -dmin (f32). */
#include <string.h>

#include "cpu_internal.h"

#include "../../src/quant/iq_grids.h"

#define QK 256
#define Q8_K_BYTES 292
#define Q8_K_QS 4
#define Q8_K_BSUMS 260
#define ROWS CPU_Q8TILE_ROWS
#define OFFSET 64
#define UNIT 128
#define NLS_AT (4 * ROWS * UNIT)
#define MIN_AT (NLS_AT + ROWS * 32)
#define D_AT (MIN_AT + ROWS * 32)
#define DMIN_AT (D_AT + ROWS * 4)
#define SB_BYTES (D_AT + 64)

#if (defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
     defined(__AVX2__) && defined(__F16C__)) ||                                                             \
    (defined(__AVX2__) && defined(__FMA__) && defined(__F16C__))
#include <immintrin.h>

#include "cpu_unpack_x86.h"

/* One super-block of one row, decoded (see the top). */
typedef struct iq_sb {
    uint8_t u[QK];
    uint8_t ls[16], m[16]; /* m: Q2_K's minimum per 16, else 0 */
    float d, dmin;
} iq_sb;

static unsigned u16_at(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

static uint32_t u32_at(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ggml's 7 stored sign bits and their parity as the 8th (iq_grids.h) */
static uint32_t signs8(uint32_t seven) {
    seven &= 127;
    return seven | (uint32_t)__builtin_parity(seven) << 7;
}

/* 0xFF in byte i where bit i of s is set. */
static __m256i bit_bytes(uint32_t s) {
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                            3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32((int)s), spread);
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, bit), bit);
}

/* 32 offset values OFFSET +- magnitude, minus where bit i of `signs`. */
static void put_signed(uint8_t *u, __m256i mag, uint32_t signs) {
    const __m256i off = _mm256_set1_epi8(OFFSET);
    const __m256i v = _mm256_blendv_epi8(_mm256_add_epi8(off, mag), _mm256_sub_epi8(off, mag), bit_bytes(signs));
    _mm256_storeu_si256((__m256i *)(void *)u, v);
}

/* 32 IQ1 offset values base + 8 g: base holds OFFSET + delta. */
static void put_iq1(uint8_t *u, __m256i g, __m256i base) {
    const __m256i g2 = _mm256_add_epi8(g, g), g4 = _mm256_add_epi8(g2, g2);
    _mm256_storeu_si256((__m256i *)(void *)u, _mm256_add_epi8(base, _mm256_add_epi8(g4, g4)));
}

/* Four 8-byte grid entries: 32 elements. */
static __m256i grid4(const uint64_t *g, unsigned a, unsigned b, unsigned c, unsigned d) {
    return _mm256_setr_epi64x((long long)g[a], (long long)g[b], (long long)g[c], (long long)g[d]);
}

/* Eight 4-byte IQ3 grid entries: 32 elements. */
static __m256i grid8(const uint32_t *g, const unsigned i[8]) {
    return _mm256_setr_epi32((int)g[i[0]], (int)g[i[1]], (int)g[i[2]], (int)g[i[3]], (int)g[i[4]], (int)g[i[5]],
                             (int)g[i[6]], (int)g[i[7]]);
}

/* The two 4-bit scales of sub-block ib (IQ2_XS, IQ2_S). */
static void ls_nibbles(const uint8_t *sc, int ib, iq_sb *o) {
    o->ls[2 * ib] = (uint8_t)(2 * (sc[ib] & 0xf) + 1);
    o->ls[2 * ib + 1] = (uint8_t)(2 * (sc[ib] >> 4) + 1);
}

/* IQ2_XXS {f16 d; per 32: 4 grid bytes, u32 of four 7-bit sign indices
 * and a 4-bit scale} */
static void dec_iq2_xxs(const uint8_t *x, iq_sb *o) {
    o->d = 0.125f * half_at(x);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *q = x + 2 + 8 * ib;
        const uint32_t aux = u32_at(q + 4);
        uint32_t s = 0;
        for (int l = 0; l < 4; l++)
            s |= signs8(aux >> 7 * l) << 8 * l;
        put_signed(o->u + 32 * ib, grid4(tport_iq2xxs_grid, q[0], q[1], q[2], q[3]), s);
        o->ls[2 * ib] = o->ls[2 * ib + 1] = (uint8_t)(2 * (aux >> 28) + 1);
    }
}

/* IQ2_XS {f16 d; u16 qs[32] (9-bit grid index, 7-bit sign index);
 * u8 scales[8]} */
static void dec_iq2_xs(const uint8_t *x, iq_sb *o) {
    o->d = 0.125f * half_at(x);
    for (int ib = 0; ib < 8; ib++) {
        unsigned v[4];
        uint32_t s = 0;
        for (int l = 0; l < 4; l++) {
            v[l] = u16_at(x + 2 + 8 * ib + 2 * l);
            s |= signs8(v[l] >> 9) << 8 * l;
        }
        put_signed(o->u + 32 * ib, grid4(tport_iq2xs_grid, v[0] & 511, v[1] & 511, v[2] & 511, v[3] & 511), s);
        ls_nibbles(x + 66, ib, o);
    }
}

/* IQ2_S {f16 d; u8 qs[32]; u8 signs[32]; u8 qh[8]; u8 scales[8]}: index
 * bits 8, 9 of entry l of sub-block ib are bits 2 l, 2 l + 1 of qh[ib] */
static void dec_iq2_s(const uint8_t *x, iq_sb *o) {
    const uint8_t *qs = x + 2, *qh = x + 66;
    o->d = 0.125f * half_at(x);
    for (int ib = 0; ib < 8; ib++) {
        unsigned i[4];
        for (int l = 0; l < 4; l++)
            i[l] = qs[4 * ib + l] | ((unsigned)qh[ib] << (8 - 2 * l) & 0x300);
        put_signed(o->u + 32 * ib, grid4(tport_iq2s_grid, i[0], i[1], i[2], i[3]), u32_at(x + 34 + 4 * ib));
        ls_nibbles(x + 74, ib, o);
    }
}

/* IQ3_XXS {f16 d; u8 qs[64]; per 32 a u32 of four 7-bit sign indices and
 * a 4-bit scale} */
static void dec_iq3_xxs(const uint8_t *x, iq_sb *o) {
    o->d = 0.25f * half_at(x);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *q3 = x + 2 + 8 * ib;
        const uint32_t aux = u32_at(x + 66 + 4 * ib);
        unsigned i[8];
        uint32_t s = 0;
        for (int k = 0; k < 8; k++)
            i[k] = q3[k];
        for (int l = 0; l < 4; l++)
            s |= signs8(aux >> 7 * l) << 8 * l;
        put_signed(o->u + 32 * ib, grid8(tport_iq3xxs_grid, i), s);
        o->ls[2 * ib] = o->ls[2 * ib + 1] = (uint8_t)(2 * (aux >> 28) + 1);
    }
}

/* IQ3_S {f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]}: index
 * bit 8 of entry k of sub-block ib is bit k of qh[ib] */
static void dec_iq3_s(const uint8_t *x, iq_sb *o) {
    const uint8_t *qs = x + 2, *qh = x + 66, *sc = x + 106;
    o->d = half_at(x);
    for (int ib = 0; ib < 8; ib++) {
        unsigned i[8];
        for (int k = 0; k < 8; k++)
            i[k] = qs[8 * ib + k] | ((unsigned)qh[ib] >> k & 1) << 8;
        put_signed(o->u + 32 * ib, grid8(tport_iq3s_grid, i), u32_at(x + 74 + 4 * ib));
        o->ls[2 * ib] = o->ls[2 * ib + 1] = (uint8_t)(2 * (sc[ib / 2] >> 4 * (ib % 2) & 0xf) + 1);
    }
}

/* IQ1_S {f16 d; u8 qs[32]; u16 qh[8]}: per 32, qh holds four 3-bit high
 * index parts, a 3-bit scale and the sign of delta */
static void dec_iq1_s(const uint8_t *x, iq_sb *o) {
    const uint8_t *qs = x + 2;
    o->d = 0.125f * half_at(x);
    for (int ib = 0; ib < 8; ib++) {
        const unsigned qh = u16_at(x + 34 + 2 * ib);
        unsigned i[4];
        for (int l = 0; l < 4; l++)
            i[l] = qs[4 * ib + l] | (qh >> 3 * l & 7) << 8;
        const int base = OFFSET + (qh & 0x8000 ? -1 : 1);
        put_iq1(o->u + 32 * ib, grid4(tport_iq1s_grid, i[0], i[1], i[2], i[3]), _mm256_set1_epi8((char)base));
        o->ls[2 * ib] = o->ls[2 * ib + 1] = (uint8_t)(2 * (qh >> 12 & 7) + 1);
    }
}

/* IQ1_M {u8 qs[32]; u8 qh[16]; u8 scales[8]}: the f16 d in the top
 * nibbles of the four u16 scale words; per 8 elements a 3-bit high index
 * part and the sign of delta; two 3-bit scales per 32 */
static void dec_iq1_m(const uint8_t *x, iq_sb *o) {
    const uint8_t *qs = x, *qh = x + 32;
    unsigned sc[4];
    for (int k = 0; k < 4; k++)
        sc[k] = u16_at(x + 48 + 2 * k);
    const unsigned d16 = (sc[0] >> 12) | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000);
    const uint8_t db[2] = {(uint8_t)d16, (uint8_t)(d16 >> 8)};
    o->d = 0.125f * half_at(db);
    for (int ib = 0; ib < 8; ib++) {
        unsigned i[4];
        long long base[4];
        for (int l = 0; l < 4; l++) {
            const unsigned h = qh[2 * ib + l / 2];
            i[l] = qs[4 * ib + l] | (h << (8 - 4 * (l % 2)) & 0x700);
            const unsigned b = (unsigned)(OFFSET + (h & (l % 2 ? 0x80 : 0x08) ? -1 : 1));
            base[l] = (long long)(0x0101010101010101ULL * b);
        }
        put_iq1(o->u + 32 * ib, grid4(tport_iq1s_grid, i[0], i[1], i[2], i[3]),
                _mm256_setr_epi64x(base[0], base[1], base[2], base[3]));
        o->ls[2 * ib] = (uint8_t)(2 * (sc[ib / 2] >> (6 * (ib % 2)) & 7) + 1);
        o->ls[2 * ib + 1] = (uint8_t)(2 * (sc[ib / 2] >> (6 * (ib % 2) + 3) & 7) + 1);
    }
}

/* Q2_K {u8 scales[16] (ls low nibble, m high); u8 qs[64]; f16 d, dmin}:
 * element 128 k + 32 j + l is bits 2 j, 2 j + 1 of qs[32 k + l] */
static void dec_q2_k(const uint8_t *x, iq_sb *o) {
    o->d = half_at(x + 80);
    o->dmin = half_at(x + 82);
    const __m256i three = _mm256_set1_epi8(3), off = _mm256_set1_epi8(OFFSET);
    for (int k = 0; k < 2; k++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(x + 16 + 32 * k));
        for (int j = 0; j < 4; j++)
            _mm256_storeu_si256((__m256i *)(void *)(o->u + 128 * k + 32 * j),
                                _mm256_add_epi8(off, _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three)));
    }
    for (int g = 0; g < 16; g++) {
        o->ls[g] = x[g] & 0xf;
        o->m[g] = x[g] >> 4;
    }
}

/* TQ2_0 {u8 qs[64]; f16 d}: w = q - 1 in {-1, 0, 1}, laid out as Q2_K's
 * quants (element 128 k + 32 j + l is bits 2 j, 2 j + 1 of qs[32 k + l]),
 * with ls 1 for every group and no minimum. */
static void dec_tq2_0(const uint8_t *x, iq_sb *o) {
    o->d = half_at(x + 64);
    o->dmin = 0.0f;
    const __m256i three = _mm256_set1_epi8(3), off = _mm256_set1_epi8(OFFSET - 1);
    for (int k = 0; k < 2; k++) {
        const __m256i q = _mm256_loadu_si256((const __m256i *)(const void *)(x + 32 * k));
        for (int j = 0; j < 4; j++)
            _mm256_storeu_si256((__m256i *)(void *)(o->u + 128 * k + 32 * j),
                                _mm256_add_epi8(off, _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), three)));
    }
    memset(o->ls, 1, sizeof o->ls);
    memset(o->m, 0, sizeof o->m);
}

/* The types, their block bytes and decoders: a new type is a row.  mins:
 * the type has Q2_K's minimum term. */
typedef struct iq_kind {
    tport_type_id type;
    size_t bytes;
    void (*decode)(const uint8_t *blk, iq_sb *o);
    bool mins;
} iq_kind;

static const iq_kind kinds[] = {
    {TPORT_TYPE_IQ2_XXS, 66, dec_iq2_xxs, false}, {TPORT_TYPE_IQ2_XS, 74, dec_iq2_xs, false},
    {TPORT_TYPE_IQ2_S, 82, dec_iq2_s, false},     {TPORT_TYPE_IQ3_XXS, 98, dec_iq3_xxs, false},
    {TPORT_TYPE_IQ3_S, 110, dec_iq3_s, false},    {TPORT_TYPE_IQ1_S, 50, dec_iq1_s, false},
    {TPORT_TYPE_IQ1_M, 56, dec_iq1_m, false},     {TPORT_TYPE_Q2_K, 84, dec_q2_k, true},
    {TPORT_TYPE_TQ2_0, 66, dec_tq2_0, false},
};

static const iq_kind *kind_of(tport_type_id type) {
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].type == type)
            return &kinds[i];
    return NULL;
}

bool cpu_iqtile_available(tport_type_id type) { return kind_of(type) != NULL; }

size_t cpu_iqtile_scratch(int64_t K) { return (size_t)(K / QK) * SB_BYTES + 64; }

void cpu_iqtile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    const iq_kind *kind = kind_of(type);
    for (int64_t b = 0; b < K / QK; b++) {
        uint8_t *sb = tile + (size_t)b * SB_BYTES;
        for (int r = 0; r < ROWS; r++) {
            iq_sb o;
            memset(o.m, 0, sizeof o.m);
            o.dmin = 0.0f;
            if (r < nrows && kind) {
                kind->decode(rows[r] + (size_t)b * kind->bytes, &o);
            } else { /* a missing row: zero scales, values 0 */
                memset(o.u, OFFSET, sizeof o.u);
                memset(o.ls, 0, sizeof o.ls);
                o.d = 0.0f;
            }
            for (int j2 = 0; j2 < 4; j2++) {
                uint8_t *unit = sb + (size_t)(j2 * ROWS + r) * UNIT;
                int16_t ls16[32];
                for (int i = 0; i < 32; i++)
                    ls16[i] = o.ls[4 * j2 + i / 8];
                memcpy(unit, o.u + 64 * j2, 64);
                memcpy(unit + 64, ls16, sizeof ls16);
            }
            int16_t nls[16], m[16];
            for (int g = 0; g < 16; g++) {
                nls[g] = (int16_t)(-OFFSET * o.ls[g]);
                m[g] = o.m[g];
            }
            const float ndmin = -o.dmin;
            memcpy(sb + NLS_AT + 32 * r, nls, sizeof nls);
            memcpy(sb + MIN_AT + 32 * r, m, sizeof m);
            memcpy(sb + D_AT + 4 * r, &o.d, sizeof o.d);
            memcpy(sb + DMIN_AT + 4 * r, &ndmin, sizeof ndmin);
        }
    }
}

static bool has_mins(tport_type_id type) {
    const iq_kind *kind = kind_of(type);
    return kind && kind->mins;
}

static float col_d(const uint8_t *yb) {
    float d;
    memcpy(&d, yb, sizeof d);
    return d;
}

static __m256i load256(const uint8_t *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }

/* Lane sums of a, b, c, d: lanes 4 k .. 4 k + 3 hold those of the k-th
 * 128-bit half of each. */
static __m256i sum4_256(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
    const __m256i cd = _mm256_add_epi32(_mm256_unpacklo_epi32(c, d), _mm256_unpackhi_epi32(c, d));
    return _mm256_add_epi32(_mm256_unpacklo_epi64(ab, cd), _mm256_unpackhi_epi64(ab, cd));
}

/* Q2_K's minimum term of rows r0 .. r0 + 3 against one column: lanes 0-3
 * and 4-7 each a part of the rows' -dmin dy sum_g m_g bsum_g. */
static __m256 min_term(const uint8_t *sb, int r0, const uint8_t *yb) {
    const __m256i bs = load256(yb + Q8_K_BSUMS);
    __m256i m[4];
    for (int r = 0; r < 4; r++)
        m[r] = _mm256_madd_epi16(bs, load256(sb + MIN_AT + 32 * (r0 + r)));
    const __m128 dm = _mm_mul_ps(_mm_loadu_ps((const float *)(const void *)(sb + DMIN_AT + 4 * r0)),
                                 _mm_set1_ps(col_d(yb)));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(sum4_256(m[0], m[1], m[2], m[3])), _mm256_set_m128(dm, dm));
}
#endif

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VNNI__) && \
    defined(__AVX2__) && defined(__F16C__)
/* AVX-512 VNNI: 4 rows x up to 4 columns at a time, 64 elements (two
 * sub-blocks of a row) per register; 16 int32 accumulators per
 * super-block, then folded into one f32 vector per column. */
#define RG 4
#define COLS 4

/* Lane sums of a, b, c, d: lanes 4 k .. 4 k + 3 hold those of the k-th
 * 128-bit quarter of each. */
static __m512i sum4(__m512i a, __m512i b, __m512i c, __m512i d) {
    const __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    const __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
    return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

static __m512i zext256(const uint8_t *p) {
    return _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_loadu_si256((const __m256i *)(const void *)p), 0);
}

/* Rows r0 .. r0 + 3 against nc columns; nc and mins are constants at
 * each call. */
static inline __attribute__((always_inline)) void kernel(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                         size_t y_stride, int r0, int nc, bool mins, float *out) {
    __m512 facc[COLS];
    for (int c = 0; c < COLS; c++)
        facc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *sb = tile + (size_t)b * SB_BYTES, *yb[COLS];
        for (int c = 0; c < nc; c++)
            yb[c] = y + (size_t)c * y_stride + (size_t)b * Q8_K_BYTES;
        __m512i acc[RG][COLS];
        for (int r = 0; r < RG; r++)
            for (int c = 0; c < COLS; c++)
                acc[r][c] = _mm512_setzero_si512();
        for (int j2 = 0; j2 < 4; j2++) {
            __m512i yv[COLS];
            for (int c = 0; c < nc; c++)
                yv[c] = _mm512_loadu_si512((const void *)(yb[c] + Q8_K_QS + 64 * j2));
            for (int r = 0; r < RG; r++) {
                const uint8_t *unit = sb + (size_t)(j2 * ROWS + r0 + r) * UNIT;
                const __m512i x = _mm512_loadu_si512((const void *)unit);
                const __m512i ls = _mm512_loadu_si512((const void *)(unit + 64));
                for (int c = 0; c < nc; c++)
                    acc[r][c] = _mm512_dpwssd_epi32(acc[r][c], _mm512_maddubs_epi16(x, yv[c]), ls);
            }
        }
        const __m128 d4 = _mm_loadu_ps((const float *)(const void *)(sb + D_AT + 4 * r0));
        for (int c = 0; c < nc; c++) {
            /* the offset's part: -64 ls_g times the sum of y over each group g */
            const __m512i bs = zext256(yb[c] + Q8_K_BSUMS);
            for (int r = 0; r < RG; r++)
                acc[r][c] = _mm512_dpwssd_epi32(acc[r][c], bs, zext256(sb + NLS_AT + 32 * (r0 + r)));
            const __m512i s = sum4(acc[0][c], acc[1][c], acc[2][c], acc[3][c]);
            const __m512 dd = _mm512_broadcast_f32x4(_mm_mul_ps(d4, _mm_set1_ps(col_d(yb[c]))));
            facc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), dd, facc[c]);
            if (mins)
                facc[c] = _mm512_add_ps(facc[c],
                                        _mm512_insertf32x8(_mm512_setzero_ps(), min_term(sb, r0, yb[c]), 0));
        }
    }
    for (int c = 0; c < nc; c++) {
        const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(facc[c]), _mm512_extractf32x8_ps(facc[c], 1));
        _mm_storeu_ps(out + c * ROWS + r0, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
    }
}

static void dot_rows(const uint8_t *tile, int64_t nb, const uint8_t *y, size_t y_stride, int ncols, bool mins,
                     float *out) {
    for (int r0 = 0; r0 < ROWS; r0 += RG) {
        switch (ncols) {
        case 1: kernel(tile, nb, y, y_stride, r0, 1, mins, out); break;
        case 2: kernel(tile, nb, y, y_stride, r0, 2, mins, out); break;
        case 3: kernel(tile, nb, y, y_stride, r0, 3, mins, out); break;
        default: kernel(tile, nb, y, y_stride, r0, 4, mins, out); break;
        }
    }
}

void cpu_iqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    if (has_mins(type))
        dot_rows(tile, K / QK, y, y_stride, ncols, true, out);
    else
        dot_rows(tile, K / QK, y, y_stride, ncols, false, out);
}

#elif defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
/* AVX2: 4 rows x up to 2 columns at a time (8 int32 accumulators of the
 * 16 registers), 32 elements (one sub-block) per register. */
#define RG 4
#define COLS 2

/* Rows r0 .. r0 + 3 against columns c0 .. c0 + nc - 1 (nc 1 or 2). */
static inline __attribute__((always_inline)) void kernel(const uint8_t *tile, int64_t nb, const uint8_t *y,
                                                         size_t y_stride, int r0, int c0, int nc, bool mins,
                                                         float *out) {
    __m256 facc[COLS] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *sb = tile + (size_t)b * SB_BYTES, *yb[COLS];
        for (int c = 0; c < nc; c++)
            yb[c] = y + (size_t)(c0 + c) * y_stride + (size_t)b * Q8_K_BYTES;
        __m256i acc[RG][COLS];
        for (int r = 0; r < RG; r++)
            acc[r][0] = acc[r][1] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            __m256i yv[COLS];
            for (int c = 0; c < nc; c++)
                yv[c] = load256(yb[c] + Q8_K_QS + 32 * j);
            for (int r = 0; r < RG; r++) {
                const uint8_t *unit = sb + (size_t)((j / 2) * ROWS + r0 + r) * UNIT + 32 * (j & 1);
                const __m256i x = load256(unit), ls = load256(unit + 64);
                for (int c = 0; c < nc; c++)
                    acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(_mm256_maddubs_epi16(x, yv[c]), ls));
            }
        }
        const __m128 d4 = _mm_loadu_ps((const float *)(const void *)(sb + D_AT + 4 * r0));
        for (int c = 0; c < nc; c++) {
            const __m256i bs = load256(yb[c] + Q8_K_BSUMS);
            for (int r = 0; r < RG; r++)
                acc[r][c] = _mm256_add_epi32(acc[r][c], _mm256_madd_epi16(bs, load256(sb + NLS_AT + 32 * (r0 + r))));
            const __m256i s = sum4_256(acc[0][c], acc[1][c], acc[2][c], acc[3][c]);
            const __m128 dd = _mm_mul_ps(d4, _mm_set1_ps(col_d(yb[c])));
            facc[c] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set_m128(dd, dd), facc[c]);
            if (mins)
                facc[c] = _mm256_add_ps(facc[c], min_term(sb, r0, yb[c]));
        }
    }
    for (int c = 0; c < nc; c++)
        _mm_storeu_ps(out + (c0 + c) * ROWS + r0,
                      _mm_add_ps(_mm256_castps256_ps128(facc[c]), _mm256_extractf128_ps(facc[c], 1)));
}

static void dot_rows(const uint8_t *tile, int64_t nb, const uint8_t *y, size_t y_stride, int ncols, bool mins,
                     float *out) {
    for (int r0 = 0; r0 < ROWS; r0 += RG) {
        int c = 0;
        for (; c + 2 <= ncols; c += 2)
            mins ? kernel(tile, nb, y, y_stride, r0, c, 2, true, out)
                 : kernel(tile, nb, y, y_stride, r0, c, 2, false, out);
        if (c < ncols)
            mins ? kernel(tile, nb, y, y_stride, r0, c, 1, true, out)
                 : kernel(tile, nb, y, y_stride, r0, c, 1, false, out);
    }
}

void cpu_iqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    dot_rows(tile, K / QK, y, y_stride, ncols, has_mins(type), out);
}

#else /* no kernel in this build */

bool cpu_iqtile_available(tport_type_id type) {
    (void)type;
    return false;
}

size_t cpu_iqtile_scratch(int64_t K) {
    (void)K;
    return 0;
}

void cpu_iqtile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile) {
    (void)type, (void)rows, (void)nrows, (void)K, (void)tile;
}

void cpu_iqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride,
                    int ncols, float *out) {
    (void)type, (void)tile, (void)K, (void)y, (void)y_stride, (void)ncols, (void)out;
}
#endif
