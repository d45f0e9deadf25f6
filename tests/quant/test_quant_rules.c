/* Quantizer rules (src/quant/quant_rules.h): the table's invariants, and
 * every historical rule against expectations worked out by hand from the
 * formulas of formats.md section 3 on crafted blocks: rounding ties
 * (positive and negative, where roundf and "+0.5 then truncate" differ),
 * all-zero blocks, the first-wins tie of "max-8", Q4_1's FLT_MIN quirk and
 * the Q4_2 RMSE search. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "quant/quant_rules.h"
#include "quant/type_table.h"

static float rd_f32(const uint8_t *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}
static uint16_t rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* 4-bit quant i of a block whose nibbles start at qs; n elements. */
static int nib(const uint8_t *qs, int i, int n, int interleaved) {
    if (interleaved)
        return i % 2 ? qs[i / 2] >> 4 : qs[i / 2] & 15;
    return i < n / 2 ? qs[i] & 15 : qs[i - n / 2] >> 4;
}

/* Quantizes one block with the named rule (must exist). */
static void quant(tport_type_id type, const char *rule, const float *x, int n, uint8_t *out) {
    const tport_quant_rule *r = tport_quant_rule_find(type, rule);
    CHECK(r != NULL, "type %u has no rule %s", type, rule ? rule : "(default)");
    if (r)
        r->quantize(x, out, n);
}

static void check_table(void) {
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *t = tport_traits_at(i);
        const tport_type_id id = t->info.id;
        const int n = tport_quant_rules_count(id);
        if (!t->from_float) {
            CHECK(n == 0, "%s has no quantizer but %d rules", t->info.name, n);
            continue;
        }
        CHECK(n >= 1, "%s has a quantizer but no rule", t->info.name);
        int defaults = 0;
        for (int k = 0; k < n; k++) {
            const tport_quant_rule *r = tport_quant_rule_at(id, k);
            CHECK(r && r->quantize && r->name[0] && r->about[0], "%s rule %d incomplete", t->info.name, k);
            if (!r)
                continue;
            defaults += r->is_default;
            /* The default is the last rule: the newest of the layout. */
            CHECK(r->is_default == (k == n - 1), "%s: rule %s default flag", t->info.name, r->name);
            CHECK(tport_quant_rule_find(id, r->name) == r, "%s: rule %s not found by name", t->info.name, r->name);
        }
        CHECK(defaults == 1, "%s has %d default rules", t->info.name, defaults);
        CHECK(tport_quant_rule_at(id, n) == NULL && tport_quant_rule_at(id, -1) == NULL, "%s: out of range",
              t->info.name);

        /* The default rule writes what the type table's from_float writes. */
        enum { N = 512 };
        float x[N];
        unsigned long long s = 0x1234567ull + id;
        for (int j = 0; j < N; j++)
            x[j] = test_rng_uniform(&s) * 3.0f;
        static uint8_t a[N * 16], b[N * 16];
        const size_t bytes = (size_t)(N / t->info.block_size) * t->info.block_bytes;
        memset(a, 0xAA, sizeof a);
        memset(b, 0x55, sizeof b);
        tport_quant_rule_find(id, NULL)->quantize(x, a, N);
        t->from_float(x, b, N);
        CHECK(memcmp(a, b, bytes) == 0, "%s: default rule differs from the table's from_float", t->info.name);
    }
    CHECK(tport_quant_rule_find(TPORT_TYPE_Q4_0, "no-such-rule") == NULL, "unknown rule found");
    CHECK(tport_quant_rules_count(9999) == 0, "unknown type has rules");
    CHECK(tport_quant_rules_count(TPORT_TYPE_Q4_0_QNT0) == 2 && tport_quant_rules_count(TPORT_TYPE_Q4_2_QNT0) == 3 &&
              tport_quant_rules_count(TPORT_TYPE_Q4_1_QNT0) == 2,
          "historical rule counts");
}

/* Q4_0 QNT0 "amax7": d = amax/7 = 1, q = (int8)roundf(x) + 8. */
static void check_q4_0_amax7(void) {
    float x[32] = {7.0f, 2.5f, -2.5f, 0.5f, -0.5f, 1.4f, -1.6f, -7.0f};
    const int want[8] = {15, 11, 5, 9, 7, 9, 6, 1};
    uint8_t y[20];
    quant(TPORT_TYPE_Q4_0_QNT0, "amax7", x, 32, y);
    CHECK(rd_f32(y) == 1.0f, "amax7 d = %g", rd_f32(y));
    for (int i = 0; i < 32; i++)
        CHECK(nib(y + 4, i, 32, 1) == (i < 8 ? want[i] : 8), "amax7 q[%d] = %d", i, nib(y + 4, i, 32, 1));
    /* The same block under "max-8": the signed max is the first 7 (7 and -7
     * tie in |x|), so d = 7/-8, a different scale. */
    quant(TPORT_TYPE_Q4_0_QNT0, "max-8", x, 32, y);
    CHECK(rd_f32(y) == 7.0f / -8, "max-8 d = %g", rd_f32(y));
}

/* Q4_0 "max-8" with d = -8/-8 = 1: QNT0 rounds with roundf (half away from
 * zero), QNT1 and today add 8.5 and truncate, so -2.5 and -0.5 differ. */
static void check_q4_0_max8_ties(void) {
    float x[32] = {-8.0f, 2.5f, -2.5f, 0.5f, -0.5f, 7.5f, 1.5f, -1.5f};
    const int want_qnt0[8] = {0, 11, 5, 9, 7, 15, 10, 6};
    const int want_trunc[8] = {0, 11, 6, 9, 8, 15, 10, 7};
    uint8_t y[20];
    quant(TPORT_TYPE_Q4_0_QNT0, "max-8", x, 32, y);
    CHECK(rd_f32(y) == 1.0f, "qnt0 max-8 d");
    for (int i = 0; i < 32; i++)
        CHECK(nib(y + 4, i, 32, 1) == (i < 8 ? want_qnt0[i] : 8), "qnt0 max-8 q[%d] = %d", i, nib(y + 4, i, 32, 1));
    quant(TPORT_TYPE_Q4_0_QNT1, "max-8-trunc", x, 32, y);
    CHECK(rd_f32(y) == 1.0f, "qnt1 d");
    for (int i = 0; i < 32; i++)
        CHECK(nib(y + 4, i, 32, 0) == (i < 8 ? want_trunc[i] : 8), "qnt1 q[%d] = %d", i, nib(y + 4, i, 32, 0));
    uint8_t z[18];
    quant(TPORT_TYPE_Q4_0, "ggml-ref", x, 32, z);
    CHECK(rd_u16(z) == 0x3c00, "current d = f16 1.0");
    for (int i = 0; i < 32; i++)
        CHECK(nib(z + 2, i, 32, 0) == (i < 8 ? want_trunc[i] : 8), "current q[%d]", i);
}

/* "max-8" takes the first of two values of equal |x|: d = 4/-8 for
 * {4, -4}, d = -4/-8 for {-4, 4}.  Both give quants 0 and 15. */
static void check_first_wins(void) {
    const tport_type_id types[] = {TPORT_TYPE_Q4_0_QNT0, TPORT_TYPE_Q4_0_QNT1, TPORT_TYPE_Q4_0, TPORT_TYPE_Q4_2_QNT0};
    for (int order = 0; order < 2; order++) {
        float x[32] = {order ? -4.0f : 4.0f, order ? 4.0f : -4.0f};
        const float want_d = order ? 0.5f : -0.5f;
        for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
            const tport_type_traits *t = tport_traits(types[k]);
            uint8_t y[40];
            float back[32];
            quant(types[k], NULL, x, (int)t->info.block_size, y);
            t->to_float(y, back, t->info.block_size);
            const int f32_scale = types[k] == TPORT_TYPE_Q4_0_QNT0 || types[k] == TPORT_TYPE_Q4_0_QNT1;
            const float d = f32_scale ? rd_f32(y) : tport_fp16_to_fp32(rd_u16(y));
            CHECK(d == want_d, "%s order %d: d = %g, want %g", t->info.name, order, d, want_d);
            /* x0 * (1/d) = -8 -> quant 0; x1 -> +8 -> clamped to 15 (7*|d|). */
            CHECK(back[0] == x[0] && back[1] == 7.0f * want_d, "%s order %d: decoded %g %g",
                  t->info.name, order, back[0], back[1]);
        }
    }
}

/* All-zero blocks: every rule of every quantized type decodes to exact
 * zeros; the scales are 0 except under Q4_1's "flt-min" quirk. */
static void check_zero_blocks(void) {
    enum { N = 256 };
    static const float zeros[N];
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *t = tport_traits_at(i);
        for (int k = 0; k < tport_quant_rules_count(t->info.id); k++) {
            const tport_quant_rule *r = tport_quant_rule_at(t->info.id, k);
            static uint8_t y[N * 8];
            float back[N];
            r->quantize(zeros, y, N);
            t->to_float(y, back, N);
            int bad = 0;
            for (int j = 0; j < N; j++)
                bad += back[j] != 0.0f;
            CHECK(bad == 0, "%s/%s: %d of %d zeros decode to non-zero", t->info.name, r->name, bad, N);
        }
    }
    uint8_t y[24];
    quant(TPORT_TYPE_Q4_1_QNT0, "flt-min", zeros, 32, y);
    CHECK(rd_f32(y) == FLT_MIN / 15 && rd_f32(y) > 0.0f, "flt-min zero block: d = %g, want FLT_MIN/15", rd_f32(y));
    CHECK(rd_f32(y + 4) == 0.0f, "flt-min zero block: m");
    for (int i = 0; i < 32; i++)
        CHECK(nib(y + 8, i, 32, 1) == 0, "flt-min zero block q[%d]", i);
    quant(TPORT_TYPE_Q4_1_QNT0, "roundf", zeros, 32, y);
    CHECK(rd_f32(y) == 0.0f && rd_f32(y + 4) == 0.0f, "roundf zero block: d, m = 0");
    uint8_t z[20];
    quant(TPORT_TYPE_Q4_0_QNT0, "amax7", zeros, 32, z);
    CHECK(rd_f32(z) == 0.0f && z[4] == 0x88 && z[19] == 0x88, "amax7 zero block: d = 0, quants 8");
}

/* Q4_1: the FLT_MIN quirk on an all-negative block, and roundf against
 * "+0.5 then truncate" at 0.49999997 (which +0.5 rounds up to 1.0). */
static void check_q4_1(void) {
    float x[32];
    for (int i = 0; i < 32; i++)
        x[i] = -1.5f;
    uint8_t y[24];
    float back[32];
    quant(TPORT_TYPE_Q4_1_QNT0, "flt-min", x, 32, y);
    CHECK(rd_f32(y) == (FLT_MIN - -1.5f) / 15 && rd_f32(y + 4) == -1.5f, "flt-min negative block: d %g m %g",
          rd_f32(y), rd_f32(y + 4));
    tport_traits(TPORT_TYPE_Q4_1_QNT0)->to_float(y, back, 32);
    CHECK(back[0] == -1.5f && back[31] == -1.5f, "flt-min negative block decodes");
    quant(TPORT_TYPE_Q4_1_QNT0, "roundf", x, 32, y);
    CHECK(rd_f32(y) == 0.0f && rd_f32(y + 4) == -1.5f, "roundf negative block: d = 0");

    float t[32] = {0.0f, 15.0f, 0.49999997f, 2.5f, 7.5f};
    quant(TPORT_TYPE_Q4_1_QNT0, "roundf", t, 32, y);
    CHECK(rd_f32(y) == 1.0f && rd_f32(y + 4) == 0.0f, "q4_1 qnt0 d m");
    const int want0[5] = {0, 15, 0, 3, 8}, want1[5] = {0, 15, 1, 3, 8};
    for (int i = 0; i < 5; i++)
        CHECK(nib(y + 8, i, 32, 1) == want0[i], "q4_1 qnt0 q[%d] = %d", i, nib(y + 8, i, 32, 1));
    quant(TPORT_TYPE_Q4_1_QNT1, "min-max-trunc", t, 32, y);
    for (int i = 0; i < 5; i++)
        CHECK(nib(y + 8, i, 32, 0) == want1[i], "q4_1 qnt1 q[%d] = %d", i, nib(y + 8, i, 32, 0));
}

/* Q4_2 (16 elements, f16 d): "amax7" truncates after +8.5 (so -2.5 -> 6,
 * unlike Q4_0's roundf amax7), "max-8" clamps at 15. */
static void check_q4_2_simple(void) {
    float a[16] = {7.0f, 2.5f, -2.5f, 0.5f, -0.5f, -7.0f};
    const int want_a[6] = {15, 11, 6, 9, 8, 1};
    uint8_t y[10];
    quant(TPORT_TYPE_Q4_2_QNT0, "amax7", a, 16, y);
    CHECK(rd_u16(y) == 0x3c00, "q4_2 amax7 d = 1");
    for (int i = 0; i < 16; i++)
        CHECK(nib(y + 2, i, 16, 1) == (i < 6 ? want_a[i] : 8), "q4_2 amax7 q[%d] = %d", i, nib(y + 2, i, 16, 1));
    float m[16] = {-8.0f, 7.5f, 2.5f, -2.5f};
    const int want_m[4] = {0, 15, 11, 6};
    quant(TPORT_TYPE_Q4_2_QNT0, "max-8", m, 16, y);
    CHECK(rd_u16(y) == 0x3c00, "q4_2 max-8 d = 1");
    for (int i = 0; i < 16; i++)
        CHECK(nib(y + 2, i, 16, 1) == (i < 4 ? want_m[i] : 8), "q4_2 max-8 q[%d] = %d", i, nib(y + 2, i, 16, 1));
}

/* Q4_2 "rmse", worked by hand.  Candidates c/amax, c in {8.7, 8.3, 8.1,
 * 7.8, 7.3, 7.0, 6.3, 5.7}; quants clamped to [-8, 7] for +iscale and
 * -iscale; the winner maximises (sum l*x)^2 / sum l*l.
 *
 * x = {1, 0.3 x 15}: at 8.7, + gives l = (7, 3): 20.5^2/184 = 2.284, - gives
 * (-8, -3): 21.5^2/199 = 2.323 (wins).  At 8.3, + gives (7, 2): 16^2/109 =
 * 2.349, better than - (-8, -2): 17^2/124 = 2.331 and than 2.323: it wins.
 * No later candidate beats it (8.1, 7.8 give the same l; 7.3 and 7.0 tie
 * with it; 6.3, 5.7 give (6, 2): 15^2/96 = 2.344).  So L = (7, 2 x 15) and
 * d = (7 + 15*0.6)/109 = 16/109; the quants are L + 8 = (15, 10 x 15).
 *
 * x = {1 x 16}: + and - tie at every candidate (16 each), the first -
 * (iscale -8.7) is kept: L = -8, d = -128/1024 = -0.125, quants 0.
 *
 * "max-8" on the first block gives d = 1/-8, so the rules differ there. */
static void check_q4_2_rmse(void) {
    float x[16];
    x[0] = 1.0f;
    for (int i = 1; i < 16; i++)
        x[i] = 0.3f;
    uint8_t y[10];
    quant(TPORT_TYPE_Q4_2_QNT0, "rmse", x, 16, y);
    CHECK(rd_u16(y) == tport_fp32_to_fp16(16.0f / 109.0f), "rmse d = %g, want 16/109",
          tport_fp16_to_fp32(rd_u16(y)));
    for (int i = 0; i < 16; i++)
        CHECK(nib(y + 2, i, 16, 1) == (i ? 10 : 15), "rmse q[%d] = %d", i, nib(y + 2, i, 16, 1));
    quant(TPORT_TYPE_Q4_2_QNT0, "max-8", x, 16, y);
    CHECK(rd_u16(y) == tport_fp32_to_fp16(-0.125f), "max-8 d on the rmse block");

    for (int i = 0; i < 16; i++)
        x[i] = 1.0f;
    quant(TPORT_TYPE_Q4_2_QNT0, "rmse", x, 16, y);
    CHECK(rd_u16(y) == tport_fp32_to_fp16(-0.125f), "rmse constant block d = %g", tport_fp16_to_fp32(rd_u16(y)));
    for (int i = 0; i < 16; i++)
        CHECK(nib(y + 2, i, 16, 1) == 0, "rmse constant block q[%d]", i);

    /* Sanity on random blocks in [-1, 1): every value within a 4-bit step
     * of amax/8 plus the refit's slack. */
    unsigned long long s = 77;
    float r[16 * 64], back[16 * 64];
    static uint8_t q[10 * 64];
    for (int i = 0; i < 16 * 64; i++)
        r[i] = test_rng_uniform(&s);
    quant(TPORT_TYPE_Q4_2_QNT0, "rmse", r, 16 * 64, q);
    tport_traits(TPORT_TYPE_Q4_2_QNT0)->to_float(q, back, 16 * 64);
    double worst = 0;
    for (int i = 0; i < 16 * 64; i++)
        worst = fmax(worst, fabs((double)back[i] - r[i]));
    CHECK(worst < 0.2, "rmse random blocks: max error %g", worst);
}

/* Q5_0/Q5_1 QNT0 (interleaved nibbles, (int) casts), Q4_3, Q8_0 QNT1. */
static int q5(const uint8_t *qh, const uint8_t *qs, int i, int interleaved) {
    const uint32_t h = (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
    return nib(qs, i, 32, interleaved) | (int)((h >> i) & 1) << 4;
}

static void check_others(void) {
    float a[32] = {-16.0f, 2.5f, -2.5f, 15.5f, 0.25f};
    const int want_a[5] = {0, 19, 14, 31, 16};
    uint8_t y[36];
    quant(TPORT_TYPE_Q5_0_QNT0, "max-16-int", a, 32, y);
    CHECK(rd_u16(y) == 0x3c00, "q5_0 qnt0 d = 1");
    for (int i = 0; i < 32; i++)
        CHECK(q5(y + 2, y + 6, i, 1) == (i < 5 ? want_a[i] : 16), "q5_0 qnt0 q[%d] = %d", i, q5(y + 2, y + 6, i, 1));
    quant(TPORT_TYPE_Q5_0, "ggml-ref", a, 32, y);
    for (int i = 0; i < 32; i++)
        CHECK(q5(y + 2, y + 6, i, 0) == (i < 5 ? want_a[i] : 16), "q5_0 q[%d]", i);

    float b[32] = {0.0f, 31.0f, 0.5f, 1.49f, 30.5f};
    const int want_b[5] = {0, 31, 1, 1, 31};
    quant(TPORT_TYPE_Q5_1_QNT0, "min-max-int", b, 32, y);
    CHECK(rd_u16(y) == 0x3c00 && rd_u16(y + 2) == 0, "q5_1 qnt0 d = 1, m = 0");
    for (int i = 0; i < 32; i++)
        CHECK(q5(y + 4, y + 8, i, 1) == (i < 5 ? want_b[i] : 0), "q5_1 qnt0 q[%d] = %d", i, q5(y + 4, y + 8, i, 1));

    float c[16] = {0.0f, 15.0f, 2.5f, 0.49999997f};
    const int want_c[4] = {0, 15, 3, 1};
    quant(TPORT_TYPE_Q4_3_QNT0, "min-max", c, 16, y);
    CHECK(rd_u16(y) == 0x3c00 && rd_u16(y + 2) == 0, "q4_3 d = 1, m = 0");
    for (int i = 0; i < 16; i++)
        CHECK(nib(y + 4, i, 16, 1) == (i < 4 ? want_c[i] : 0), "q4_3 q[%d] = %d", i, nib(y + 4, i, 16, 1));

    float d[32] = {127.0f, -63.5f, 63.5f, 0.5f, -0.5f};
    const int want_d[5] = {127, -64, 64, 1, -1};
    quant(TPORT_TYPE_Q8_0_QNT1, "amax127", d, 32, y);
    CHECK(rd_f32(y) == 1.0f, "q8_0 qnt1 d = 1");
    for (int i = 0; i < 32; i++)
        CHECK((int8_t)y[4 + i] == (i < 5 ? want_d[i] : 0), "q8_0 qnt1 q[%d] = %d", i, (int8_t)y[4 + i]);
}

/* The 2023 k-quant rules on blocks whose sub-blocks hit every level of an
 * exact grid, worked by hand (kquants_2023.c):
 *  Q2_K: sub-blocks of 16 = {0, .5, 1, 1.5} x 4.  make_qkx1_quants: min 0,
 *    iscale 3/1.5 = 2, l = 2x, scale 0.5, residual mean 0 so min stays 0.
 *    Every scale is 0.5: nibble 15, d = f16(0.5/15); all mins 0: dmin = 0.
 *  Q4_K: sub-blocks of 32 = {0, .25, .., 3.75} x 2: iscale 15/3.75 = 4,
 *    l = 4x, scale .25.  Every 6-bit scale is 63 (63/.25 * .25), mins 0:
 *    scales[0..3] = 63 | (63>>4)<<6 = 0xff, [4..7] = 0, [8..11] = 63&15.
 *  Q5_K: sub-blocks of 32 = {0, .25, .., 7.75}: iscale 31/7.75 = 4, same.
 *  Q8_K: iscale = -128/max: 1 -> -128, 0.5 -> -64, -1 -> 128 -> 127;
 *    d = 1/-128 (today's rule: -127/max, d = -1/127). */
static void check_kquants_2023(void) {
    enum { N = 256 };
    float x[N];
    uint8_t y[292];
    float back[N];

    for (int i = 0; i < N; i++)
        x[i] = 0.5f * (float)(i % 4);
    quant(TPORT_TYPE_Q2_K, "2023", x, N, y);
    CHECK(rd_u16(y + 80) == tport_fp32_to_fp16(0.5f / 15) && rd_u16(y + 82) == 0, "q2_K 2023 d, dmin");
    for (int j = 0; j < 16; j++)
        CHECK(y[j] == 15, "q2_K 2023 scale %d = %d", j, y[j]);
    for (int i = 0; i < N; i++) {
        const int l = y[16 + (i / 128) * 32 + i % 32] >> (2 * ((i % 128) / 32)) & 3;
        CHECK(l == i % 4, "q2_K 2023 q[%d] = %d", i, l);
    }

    for (int i = 0; i < N; i++)
        x[i] = 0.25f * (float)(i % 16);
    quant(TPORT_TYPE_Q4_K, "2023", x, N, y);
    CHECK(rd_u16(y) == tport_fp32_to_fp16(0.25f / 63) && rd_u16(y + 2) == 0, "q4_K 2023 d, dmin");
    for (int j = 0; j < 12; j++)
        CHECK(y[4 + j] == (j < 4 ? 0xff : j < 8 ? 0 : 15), "q4_K 2023 scales[%d] = %#x", j, y[4 + j]);
    for (int i = 0; i < N; i++) {
        const int l = i % 64 < 32 ? y[16 + (i / 64) * 32 + i % 32] & 15 : y[16 + (i / 64) * 32 + i % 32] >> 4;
        CHECK(l == i % 16, "q4_K 2023 q[%d] = %d", i, l);
    }

    for (int i = 0; i < N; i++)
        x[i] = 0.25f * (float)(i % 32);
    quant(TPORT_TYPE_Q5_K, "2023", x, N, y);
    CHECK(rd_u16(y) == tport_fp32_to_fp16(0.25f / 63) && rd_u16(y + 2) == 0, "q5_K 2023 d, dmin");
    for (int j = 0; j < 12; j++)
        CHECK(y[4 + j] == (j < 4 ? 0xff : j < 8 ? 0 : 15), "q5_K 2023 scales[%d] = %#x", j, y[4 + j]);
    for (int i = 0; i < N; i++) {
        const int g = i / 64, hi = i % 64 >= 32, l = i % 32;
        const int q = (hi ? y[48 + 32 * g + l] >> 4 : y[48 + 32 * g + l] & 15) |
                      ((y[16 + l] >> (2 * g + hi)) & 1) << 4;
        CHECK(q == i % 32, "q5_K 2023 q[%d] = %d", i, q);
    }
    tport_traits(TPORT_TYPE_Q5_K)->to_float(y, back, N);
    for (int i = 0; i < N; i++)
        CHECK(fabsf(back[i] - x[i]) <= 0.01f, "q5_K 2023 decodes %g as %g", x[i], back[i]);

    memset(x, 0, sizeof x);
    x[0] = 1.0f;
    x[1] = 0.5f;
    x[2] = -1.0f; /* ties with x[0] in |x|: the first is the max */
    quant(TPORT_TYPE_Q8_K, "2023", x, N, y);
    CHECK(rd_f32(y) == 1.0f / -128, "q8_K 2023 d = %g", rd_f32(y));
    CHECK((int8_t)y[4] == -128 && (int8_t)y[5] == -64 && (int8_t)y[6] == 127 && y[7] == 0, "q8_K 2023 qs");
    CHECK((int16_t)rd_u16(y + 260) == -128 - 64 + 127 && rd_u16(y + 262) == 0, "q8_K 2023 bsums");
    quant(TPORT_TYPE_Q8_K, "ggml-ref", x, N, y);
    CHECK(rd_f32(y) == 1.0f / -127 && (int8_t)y[4] == -127 && (int8_t)y[5] == -64 && (int8_t)y[6] == 127,
          "q8_K today: -127/max");

    /* 2023's make_qkx1_quants returns scale 0 and min 0 for a constant
     * sub-block (max == min), so a constant 0.5 decodes to 0; today's rule
     * keeps it. */
    for (int i = 0; i < N; i++)
        x[i] = 0.5f;
    quant(TPORT_TYPE_Q4_K, "2023", x, N, y);
    tport_traits(TPORT_TYPE_Q4_K)->to_float(y, back, N);
    CHECK(back[0] == 0.0f && back[255] == 0.0f, "q4_K 2023 constant block decodes to %g", back[0]);
    quant(TPORT_TYPE_Q4_K, "ggml-ref", x, N, y);
    tport_traits(TPORT_TYPE_Q4_K)->to_float(y, back, N);
    CHECK(fabsf(back[0] - 0.5f) < 0.01f, "q4_K today constant block decodes to %g", back[0]);

    /* Sanity on random data: every 2023 rule decodes close to its input. */
    const tport_type_id ks[] = {TPORT_TYPE_Q2_K, TPORT_TYPE_Q4_K, TPORT_TYPE_Q5_K, TPORT_TYPE_Q6_K, TPORT_TYPE_Q8_K};
    const double tol[] = {0.45, 0.12, 0.06, 0.03, 0.01};
    unsigned long long s = 2023;
    for (int i = 0; i < N; i++)
        x[i] = test_rng_uniform(&s);
    for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
        quant(ks[k], "2023", x, N, y);
        tport_traits(ks[k])->to_float(y, back, N);
        double worst = 0;
        for (int i = 0; i < N; i++)
            worst = fmax(worst, fabs((double)back[i] - x[i]));
        CHECK(worst < tol[k], "%s 2023: max error %g on uniform [-1, 1)", tport_traits(ks[k])->info.name, worst);
    }
}

/* NaN and Inf inputs: no rule may crash or trip the sanitizers, and every
 * rule writes every byte of its blocks deterministically (two runs into
 * differently pre-filled buffers agree), for these and for ordinary data. */
static void check_special_values(void) {
    enum { N = 256 };
    float x[N];
    for (int i = 0; i < N; i++)
        x[i] = (i % 7 == 3) ? NAN : (i % 11 == 5) ? INFINITY : (i % 13 == 1) ? -INFINITY : (float)i / 16;
    float r[N];
    unsigned long long s = 31;
    for (int i = 0; i < N; i++)
        r[i] = test_rng_uniform(&s) * 10.0f;
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *t = tport_traits_at(i);
        const size_t bytes = (size_t)(N / t->info.block_size) * t->info.block_bytes;
        for (int k = 0; k < tport_quant_rules_count(t->info.id); k++) {
            const tport_quant_rule *rule = tport_quant_rule_at(t->info.id, k);
            static uint8_t a[N * 8], b[N * 8];
            float back[N];
            for (int pass = 0; pass < 2; pass++) {
                const float *in = pass ? r : x;
                memset(a, 0xAA, sizeof a);
                memset(b, 0x55, sizeof b);
                rule->quantize(in, a, N);
                rule->quantize(in, b, N);
                CHECK(memcmp(a, b, bytes) == 0, "%s/%s: bytes depend on the buffer's old contents (%s input)",
                      t->info.name, rule->name, pass ? "random" : "NaN/Inf");
                t->to_float(a, back, N);
            }
        }
    }
}

int main(void) {
    check_table();
    check_q4_0_amax7();
    check_q4_0_max8_ties();
    check_first_wins();
    check_zero_blocks();
    check_q4_1();
    check_q4_2_simple();
    check_q4_2_rmse();
    check_others();
    check_kquants_2023();
    check_special_values();
    return test_finish("test_quant_rules");
}
