/* The one block engine behind every legacy quant type (Q4_0 .. Q8_0) and
 * every layout revision of it (QNT0, QNT1, today's QNT2).
 *
 * All those types share one block shape, {d; [m]; [qh u32]; qs}, and one
 * quantizer shape: find the block's scale (and minimum), compute one quant
 * per element into q[], then pack q[] by layout.  What really differs
 * between revisions and historical rules is small and is given as data:
 *  - q_layout: elements per block, quant bits, f16 or f32 scales, whether a
 *    minimum is stored, nibble order (split or interleaved);
 *  - q_rule: how d is found (signed absmax, absmax, or min/max with the
 *    running max starting at -FLT_MAX or FLT_MIN), its divisor, and the
 *    per-element rounding/cast rule.
 *
 * Float operations keep ggml's reference order: d = max / div,
 * id = d ? 1/d : 0, v = x*id or (x - min)*id, then the rule on v (as a
 * separate statement, so no FMA contraction can join them).  Dequantizing is
 * (float)(q - zero) * d, or (float)q * d + m with a minimum.
 *
 * Everything here is forced inline (Q_INLINE) so each caller's constant
 * layout and rule fold into a plain loop as fast as a hand-written one:
 * without it the generic loop runs several times slower. */
#ifndef TPORT_QUANT_LEGACY_BLOCK_H
#define TPORT_QUANT_LEGACY_BLOCK_H

#include <float.h>
#include <stdbool.h>

#include "quant_impl.h"

#if defined(__GNUC__)
#define Q_INLINE static inline __attribute__((always_inline))
#else
#define Q_INLINE static inline
#endif

typedef enum { Q_NIB_SPLIT, Q_NIB_INTERLEAVED } q_nibble_order;

typedef struct {
    int qk;               /* elements per block: 16 or 32 */
    int bits;             /* 4, 5 or 8 */
    bool f32_scale;       /* d (and m) stored as f32, else f16 */
    bool has_min;         /* m follows d */
    q_nibble_order order; /* for 4 and 5 bits */
} q_layout;

typedef enum {
    Q_D_SIGNED_ABSMAX, /* d = (the signed value of largest |x|) / div */
    Q_D_ABSMAX,        /* d = max |x| / div */
    Q_D_MIN_MAX,       /* d = (max - min) / div, m = min */
    Q_D_MIN_MAX_FLT_MIN /* the same with the running max starting at FLT_MIN */
} q_scale_kind;

/* v is x*id (no minimum) or (x - min)*id; returns the quant's byte. */
typedef uint8_t (*q_rule_fn)(float v);

typedef struct {
    q_scale_kind kind;
    float div;
    q_rule_fn rule;
} q_rule;

/* ---- block statistics -------------------------------------------------- */

/* The signed value of largest magnitude; the first one wins a tie. */
Q_INLINE float q_signed_absmax(const float *x, int n) {
    float amax;
    return q_max_by_abs(x, n, &amax);
}

/* ggml's MAX(amax, |x|) loop: a NaN wins only if it is last. */
Q_INLINE float q_absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

Q_INLINE void q_min_max(const float *x, int n, float max_start, float *mn, float *mx) {
    float min = FLT_MAX, max = max_start;
    for (int j = 0; j < n; j++) {
        if (x[j] < min)
            min = x[j];
        if (x[j] > max)
            max = x[j];
    }
    *mn = min;
    *mx = max;
}

/* ---- block layout ------------------------------------------------------ */

Q_INLINE int q_scale_bytes(const q_layout *L) { return L->f32_scale ? 4 : 2; }
Q_INLINE int q_qh_offset(const q_layout *L) { return q_scale_bytes(L) * (L->has_min ? 2 : 1); }
Q_INLINE int q_qs_offset(const q_layout *L) { return q_qh_offset(L) + (L->bits == 5 ? 4 : 0); }
Q_INLINE int q_block_bytes(const q_layout *L) {
    return q_qs_offset(L) + (L->bits == 8 ? L->qk : L->qk / 2);
}

Q_INLINE void q_wr_scale(const q_layout *L, uint8_t *p, float v) {
    if (L->f32_scale)
        q_wr_f32(p, v);
    else
        q_wr_f16(p, v);
}
Q_INLINE float q_rd_scale(const q_layout *L, const uint8_t *p) {
    return L->f32_scale ? q_rd_f32(p) : q_rd_f16(p);
}

/* Element j of a nibble pair: split puts j and j+n/2 in one byte,
 * interleaved puts 2j and 2j+1. */
Q_INLINE int q_lo_index(q_nibble_order o, int j) { return o == Q_NIB_SPLIT ? j : 2 * j; }
Q_INLINE int q_hi_index(q_nibble_order o, int j, int n) { return o == Q_NIB_SPLIT ? j + n / 2 : 2 * j + 1; }

/* Writes q[0..qk) into the block's qh/qs.  4-bit quants are OR-ed in whole,
 * as ggml's reference does (its rules keep them in 0..15); 5-bit quants
 * keep their low nibble in qs and bit 4 in qh bit j. */
Q_INLINE void q_pack(const q_layout *L, uint8_t *blk, const uint8_t *q) {
    uint8_t *qs = blk + q_qs_offset(L);
    const int n = L->qk;
    if (L->bits == 8) {
        memcpy(qs, q, (size_t)n);
        return;
    }
    const unsigned mask = L->bits == 5 ? 0x0Fu : 0xFFu;
    for (int j = 0; j < n / 2; j++) {
        const unsigned lo = q[q_lo_index(L->order, j)], hi = q[q_hi_index(L->order, j, n)];
        qs[j] = (uint8_t)((lo & mask) | (hi & mask) << 4);
    }
    if (L->bits == 5) {
        uint32_t qh = 0;
        for (int j = 0; j < n; j++)
            qh |= (uint32_t)((q[j] >> 4) & 1) << j;
        q_wr_u32(blk + q_qh_offset(L), qh);
    }
}

/* ---- per-element rules, named after what they do to v ----------------- */
/* Each is exactly one historical reference expression; see the callers for
 * which type and revision used it.  q_cvtt/q_to_* reproduce x86-64's
 * float -> int conversion and the compilers' narrowing. */
Q_INLINE uint8_t q_rule_round(float v) { return q_to_u8(q_cvtt(roundf(v))); }
Q_INLINE uint8_t q_rule_add_half(float v) { return q_to_u8(q_cvtt(v + 0.5f)); }
Q_INLINE uint8_t q_rule_add_half_i8_max15(float v) {
    return q_to_u8(q_min_i(15, q_to_i8(q_cvtt(v + 0.5f))));
}
Q_INLINE uint8_t q_rule_add_8_5(float v) { return q_to_u8(q_cvtt(v + 8.5f)); }
Q_INLINE uint8_t q_rule_add_8_5_i8_max15(float v) {
    return q_to_u8(q_min_i(15, q_to_i8(q_cvtt(v + 8.5f))));
}
Q_INLINE uint8_t q_rule_add_8_5_u8_max15(float v) {
    return q_to_u8(q_min_i(15, q_to_u8(q_cvtt(v + 8.5f))));
}
Q_INLINE uint8_t q_rule_add_16_5_max31(float v) { return q_to_u8(q_min_i(31, q_cvtt(v + 16.5f))); }
Q_INLINE uint8_t q_rule_add_16_5_i8_max31(float v) {
    return q_to_u8(q_min_i(31, q_to_i8(q_cvtt(v + 16.5f))));
}
Q_INLINE uint8_t q_rule_round_i8_plus8(float v) { return q_to_u8(q_to_i8(q_cvtt(roundf(v))) + 8); }
Q_INLINE uint8_t q_rule_round_i8_plus8_max15(float v) {
    return q_to_u8(q_min_i(15, q_to_i8(q_cvtt(roundf(v))) + 8));
}

/* ---- rows -------------------------------------------------------------- */

/* Writes one block from its scale, minimum (ignored without one) and quants. */
Q_INLINE void q_write_block(const q_layout *L, uint8_t *blk, float d, float m, const uint8_t *q) {
    q_wr_scale(L, blk, d);
    if (L->has_min)
        q_wr_scale(L, blk + q_scale_bytes(L), m);
    q_pack(L, blk, q);
}

Q_INLINE void q_quantize_row(const q_layout *L, const q_rule *R, const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    const int qk = L->qk, bytes = q_block_bytes(L);
    for (int64_t b = 0; b < n / qk; b++, x += qk, y += bytes) {
        uint8_t q[32];
        float d, min = 0.0f;
        if (R->kind == Q_D_SIGNED_ABSMAX || R->kind == Q_D_ABSMAX) {
            const float max = R->kind == Q_D_SIGNED_ABSMAX ? q_signed_absmax(x, qk) : q_absmax(x, qk);
            d = max / R->div;
            const float id = d ? 1.0f / d : 0.0f;
            for (int j = 0; j < qk; j++) {
                const float v = x[j] * id;
                q[j] = R->rule(v);
            }
        } else {
            float max;
            q_min_max(x, qk, R->kind == Q_D_MIN_MAX_FLT_MIN ? FLT_MIN : -FLT_MAX, &min, &max);
            d = (max - min) / R->div;
            const float id = d ? 1.0f / d : 0.0f;
            for (int j = 0; j < qk; j++) {
                const float v = (x[j] - min) * id;
                q[j] = R->rule(v);
            }
        }
        q_write_block(L, y, d, min, q);
    }
}

/* One decoded value: (q - zero) * d, or q * d + m with a minimum. */
Q_INLINE float q_value(const q_layout *L, int q, int zero, float d, float m) {
    return L->has_min ? (float)q * d + m : (float)(q - zero) * d;
}

Q_INLINE void q_dequantize_row(const q_layout *L, const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    const int qk = L->qk, bytes = q_block_bytes(L);
    const int zero = L->bits == 8 ? 0 : 1 << (L->bits - 1);
    for (int64_t b = 0; b < n / qk; b++, x += bytes, y += qk) {
        const float d = q_rd_scale(L, x);
        const float m = L->has_min ? q_rd_scale(L, x + q_scale_bytes(L)) : 0.0f;
        const uint8_t *qs = x + q_qs_offset(L);
        if (L->bits == 8) {
            for (int j = 0; j < qk; j++)
                y[j] = q_value(L, (int8_t)qs[j], zero, d, m);
            continue;
        }
        /* One pass per qs byte: its two nibbles, plus bit 4 from qh for Q5. */
        const uint32_t qh = L->bits == 5 ? q_rd_u32(x + q_qh_offset(L)) : 0;
        for (int j = 0; j < qk / 2; j++) {
            const int il = q_lo_index(L->order, j), ih = q_hi_index(L->order, j, qk);
            const int lo = (qs[j] & 15) | (int)((qh >> il) & 1) << 4;
            const int hi = (qs[j] >> 4) | (int)((qh >> ih) & 1) << 4;
            y[il] = q_value(L, lo, zero, d, m);
            y[ih] = q_value(L, hi, zero, d, m);
        }
    }
}

/* Defines tport_quant_<name> and tport_dequant_<name> for one layout and
 * rule, each given as a braced initializer. */
#define Q_LEGACY_ROW_PAIR(name, layout, rule)                                  \
    static const q_layout name##_layout = layout;                              \
    static const q_rule name##_rule = rule;                                    \
    void tport_quant_##name(const float *x, void *y, int64_t n) {              \
        q_quantize_row(&name##_layout, &name##_rule, x, y, n);                 \
    }                                                                          \
    void tport_dequant_##name(const void *x, float *y, int64_t n) {            \
        q_dequantize_row(&name##_layout, x, y, n);                             \
    }
#define Q_LAYOUT(qk, bits, f32_scale, has_min, order) {qk, bits, f32_scale, has_min, order}
#define Q_RULE(kind, div, fn) {kind, div, fn}

#endif
