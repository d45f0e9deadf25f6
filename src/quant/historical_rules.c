/* Historical quantizer rules that are not their layout's default
 * (formats.md 3.1-3.3).  Every rule here writes the QNT0 layout with
 * interleaved nibbles, qs[j] = q[2j] | q[2j+1] << 4:
 *
 *  q4_0_qnt0 "amax7"   (2023-03-11 .. 04-25): d = amax/7, f32 d,
 *                      q = (int8)roundf(x*id) + 8
 *  q4_1_qnt0 "flt-min" (llama.cpp utils.cpp, 2023-03-20 .. 03-29): the
 *                      running max starts at FLT_MIN (positive) instead of
 *                      -FLT_MAX, so a block with no value above FLT_MIN
 *                      (all zero, or all negative) gets max = FLT_MIN
 *  q4_2_qnt0 "amax7"   (ggml@c86c70f9): d = amax/7, f16 d,
 *                      q = (uint8)(x*id + 8.5f)
 *  q4_2_qnt0 "rmse"    (ggml@92b961cd .. @32f22c0e, quantize_row_q4_2_rmse
 *                      and kquantize_q4_with_bounds): a search over eight
 *                      candidate scales for the one that minimises the
 *                      squared error, then a least-squares scale; an
 *                      all-zero block stores d = 1.0.  Bit-exact with
 *                      that source (tests/quant/data/historical).
 *
 * As elsewhere in src/quant: no FMA contraction, the f32 id is used even
 * when d is stored as f16, and float -> int conversions of NaN/Inf behave
 * as on x86-64 (q_cvtt). */
#include "legacy_block.h"
#include "quant_rules.h"

/* q4_0_qnt0 "amax7": {f32 d; u8 qs[16]}, d = amax/7, q = (int8)roundf(x*id) + 8 */
static const q_layout q4_0_qnt0 = Q_LAYOUT(32, 4, true, false, Q_NIB_INTERLEAVED);
static const q_rule q4_0_amax7 = Q_RULE(Q_D_ABSMAX, 7, q_rule_round_i8_plus8);
/* q4_1_qnt0 "flt-min": {f32 d; f32 m; u8 qs[16]}, q = roundf((x-min)*id) */
static const q_layout q4_1_qnt0 = Q_LAYOUT(32, 4, true, true, Q_NIB_INTERLEAVED);
static const q_rule q4_1_flt_min = Q_RULE(Q_D_MIN_MAX_FLT_MIN, 15, q_rule_round);
/* q4_2_qnt0 "amax7": {f16 d; u8 qs[8]}, 16 elements, q = (uint8)(x*id + 8.5f) */
static const q_layout q4_2_qnt0 = Q_LAYOUT(16, 4, false, false, Q_NIB_INTERLEAVED);
static const q_rule q4_2_amax7 = Q_RULE(Q_D_ABSMAX, 7, q_rule_add_8_5);

void tport_quant_q4_0_qnt0_amax7(const float *x, void *y, int64_t n) {
    q_quantize_row(&q4_0_qnt0, &q4_0_amax7, x, y, n);
}
void tport_quant_q4_1_qnt0_flt_min(const float *x, void *y, int64_t n) {
    q_quantize_row(&q4_1_qnt0, &q4_1_flt_min, x, y, n);
}
void tport_quant_q4_2_qnt0_amax7(const float *x, void *y, int64_t n) {
    q_quantize_row(&q4_2_qnt0, &q4_2_amax7, x, y, n);
}

/* ---- q4_2_qnt0 "rmse" -------------------------------------------------- */
/* For each candidate c, iscale = c/amax; quantize with +iscale and with
 * -iscale (quants clamped to [-8, 7]) and keep the sign and candidate whose
 * (sum l*x)^2 / (sum l*l) is largest, i.e. whose least-squares fit leaves
 * the smallest squared error.  The stored scale is that fit,
 * sum(l*x) / sum(l*l), for the winning quants.  Sums of l*x are f32 in
 * element order, sums of l*l are ints, as upstream. */
#define RMSE_NMIN (-8)
#define RMSE_NMAX 7
static const float rmse_candidates[8] = {8.7f, 8.3f, 8.1f, 7.8f, 7.3f, 7.0f, 6.3f, 5.7f};

static int clamp_q(int l) { return q_max_i(RMSE_NMIN, q_min_i(RMSE_NMAX, l)); }

static float rmse_block(const float *x, int n, int8_t *L) {
    const float amax = q_absmax(x, n);
    if (!amax) { /* upstream returns scale 1 here: an all-zero block stores d = 1.0 */
        for (int i = 0; i < n; i++)
            L[i] = 0;
        return 1.0f;
    }
    float best = 0.0f, best_iscale = 0.0f;
    for (int c = 0; c < 8; c++) {
        const float iscale = rmse_candidates[c] / amax;
        float sumlx_p = 0.0f, sumlx_m = 0.0f;
        int suml2_p = 0, suml2_m = 0;
        for (int i = 0; i < n; i++) {
            const int l = q_nearest_int(iscale * x[i]);
            const int lp = clamp_q(l), lm = clamp_q(-l);
            sumlx_p += x[i] * (float)lp;
            suml2_p += lp * lp;
            sumlx_m += x[i] * (float)lm;
            suml2_m += lm * lm;
        }
        const float p2 = sumlx_p * sumlx_p, m2 = sumlx_m * sumlx_m;
        if (p2 * (float)suml2_m > m2 * (float)suml2_p) {
            if (p2 > best * (float)suml2_p) {
                best = p2 / (float)suml2_p;
                best_iscale = iscale;
            }
        } else if (m2 > best * (float)suml2_m) {
            best = m2 / (float)suml2_m;
            best_iscale = -iscale;
        }
    }
    float sumlx = 0.0f;
    int suml2 = 0;
    for (int i = 0; i < n; i++) {
        const int l = clamp_q(q_nearest_int(best_iscale * x[i]));
        sumlx += x[i] * (float)l;
        suml2 += l * l;
        L[i] = (int8_t)l;
    }
    /* suml2 == 0 only when no candidate won (a NaN input); then sumlx is 0
     * too and upstream's 0/0 stored NaN. */
    return suml2 ? sumlx / (float)suml2 : NAN;
}

void tport_quant_q4_2_qnt0_rmse(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 16; b++, x += 16, y += 10) {
        int8_t L[16];
        const float d = rmse_block(x, 16, L);
        uint8_t q[16];
        for (int j = 0; j < 16; j++)
            q[j] = (uint8_t)(L[j] + 8);
        q_write_block(&q4_2_qnt0, y, d, 0.0f, q);
    }
}
