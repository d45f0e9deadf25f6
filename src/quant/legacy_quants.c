/* Today's (QNT2) Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q8_1: bit-exact with
 * ggml's quantize_row_<type>_ref and dequantize_row_<type>.  Each type is a
 * layout and a rule for the shared block engine (legacy_block.h): split
 * nibble order (element j in the low nibble of qs[j], j+16 in the high one)
 * and f16 scales.
 *   Q4_0 {f16 d; u8 qs[16]}:               d = max/-8, q = MIN(15, (int8)(x*id + 8.5f))
 *   Q4_1 {f16 d; f16 m; u8 qs[16]}:        d = (max-min)/15, q = MIN(15, (int8)((x-min)*id + 0.5f))
 *   Q5_0 {f16 d; u8 qh[4]; u8 qs[16]}:     d = max/-16, q = MIN(31, (int8)(x*id + 16.5f))
 *   Q5_1 {f16 d; f16 m; u8 qh[4]; qs[16]}: d = (max-min)/31, q = (uint8)((x-min)*id + 0.5f)
 *   Q8_0 {f16 d; i8 qs[32]}:               d = amax/127, q = roundf(x*id)
 *
 * Special values, as ggml's reference does on x86-64 (see q_cvtt):
 *  - all-zero block: d = 0, id = 0, every quant is the zero point
 *    (8 for Q4_0, 16 for Q5_0, 0 for Q8_0); decodes to exact zeros.
 *  - NaN never becomes the block maximum (the comparisons are false), so a
 *    NaN element gets quant (int8)INT32_MIN = 0 and d comes from the others.
 *  - +-Inf becomes the maximum: d = Inf, id = +-0, every finite element
 *    gets the zero point, the Inf element itself (Inf*0 = NaN) gets 0;
 *    decoding gives NaN/Inf. */
#include "legacy_block.h"
#include "quant_rows.h"

/*                name  layout: qk bits f32    min    nibbles          rule: d from            div  per element */
Q_LEGACY_ROW_PAIR(q4_0, Q_LAYOUT(32, 4, false, false, Q_NIB_SPLIT), Q_RULE(Q_D_SIGNED_ABSMAX, -8, q_rule_add_8_5_i8_max15))
Q_LEGACY_ROW_PAIR(q4_1, Q_LAYOUT(32, 4, false, true, Q_NIB_SPLIT), Q_RULE(Q_D_MIN_MAX, 15, q_rule_add_half_i8_max15))
Q_LEGACY_ROW_PAIR(q5_0, Q_LAYOUT(32, 5, false, false, Q_NIB_SPLIT), Q_RULE(Q_D_SIGNED_ABSMAX, -16, q_rule_add_16_5_i8_max31))
Q_LEGACY_ROW_PAIR(q5_1, Q_LAYOUT(32, 5, false, true, Q_NIB_SPLIT), Q_RULE(Q_D_MIN_MAX, 31, q_rule_add_half))
Q_LEGACY_ROW_PAIR(q8_0, Q_LAYOUT(32, 8, false, false, Q_NIB_SPLIT), Q_RULE(Q_D_ABSMAX, 127, q_rule_round))

/* ---- Q8_1: {f16 d; f16 s; i8 qs[32]}, s = d * sum(qs) ------------------ */
/* Not a q_layout: its second field is a sum, not a minimum. */
void tport_quant_q8_1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 36) {
        const float d = q_absmax(x, 32) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            const float v = x[j] * id;
            const uint8_t q = q_rule_round(v);
            y[4 + j] = q;
            sum += (int8_t)q;
        }
        q_wr_f16(y + 2, (float)sum * d);
    }
}

void tport_dequant_q8_1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 36, y += 32) {
        const float d = q_rd_f16(x);
        for (int j = 0; j < 32; j++)
            y[j] = (float)(int8_t)x[4 + j] * d;
    }
}
