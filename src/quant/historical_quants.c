/* Historical layout revisions of the legacy types (formats.md 3.1-3.6).
 * QNTn = ggml's quantization version at the time:
 *   QNT0 (until 2023-05-12): nibbles interleaved, qs[j] = q[2j] | q[2j+1]<<4
 *   QNT1 (2023-05-12..05-19): nibbles split, qs[j] = q[j] | q[j+16]<<4,
 *                             Q4_0/Q4_1/Q8_0 scales still f32
 * Each quantizer is the last reference rule of its revision:
 *   Q4_0 QNT0: d = max/-8 (#729 "full range"), q = MIN(15, (int8)roundf(x*id) + 8)
 *   Q4_0 QNT1: d = max/-8, q = MIN(15, (int8)(x*id + 8.5f))
 *   Q4_1 QNT0: d = (max-min)/15, q = roundf((x-min)*id)
 *   Q4_1 QNT1: q = MIN(15, (int8)((x-min)*id + 0.5f))
 *   Q4_2 QNT0: {f16 d; u8 qs[8]}, 16/block, d = max/-8, q = MIN(15, (uint8)(x*id + 8.5f))
 *   Q4_3 QNT0: {f16 d, m; u8 qs[8]}, 16/block, d = (max-min)/15, q = (int)((x-min)*id + 0.5f)
 *   Q5_0 QNT0: d = max/-16, q = MIN(31, (int)(x*id + 16.5f)), interleaved nibbles
 *   Q5_1 QNT0: d = (max-min)/31, q = (int)((x-min)*id + 0.5f), interleaved nibbles
 *   Q8_0 QNT0/QNT1 (same bytes): {f32 d; i8 qs[32]}, d = amax/127, q = roundf(x*id)
 * f16 scales are stored rounded but the quants use the f32 id, as upstream.
 * Float -> integer conversions of NaN/Inf behave as on x86-64 (q_cvtt).
 * Each revision is a layout and a rule for legacy_block.h. */
#include "legacy_block.h"
#include "quant_rows.h"

/*                name       layout: qk bits f32   min    nibbles               rule: d from            div  per element */
Q_LEGACY_ROW_PAIR(q4_0_qnt0, Q_LAYOUT(32, 4, true, false, Q_NIB_INTERLEAVED), Q_RULE(Q_D_SIGNED_ABSMAX, -8, q_rule_round_i8_plus8_max15))
Q_LEGACY_ROW_PAIR(q4_0_qnt1, Q_LAYOUT(32, 4, true, false, Q_NIB_SPLIT), Q_RULE(Q_D_SIGNED_ABSMAX, -8, q_rule_add_8_5_i8_max15))
Q_LEGACY_ROW_PAIR(q4_1_qnt0, Q_LAYOUT(32, 4, true, true, Q_NIB_INTERLEAVED), Q_RULE(Q_D_MIN_MAX, 15, q_rule_round))
Q_LEGACY_ROW_PAIR(q4_1_qnt1, Q_LAYOUT(32, 4, true, true, Q_NIB_SPLIT), Q_RULE(Q_D_MIN_MAX, 15, q_rule_add_half_i8_max15))
Q_LEGACY_ROW_PAIR(q4_2_qnt0, Q_LAYOUT(16, 4, false, false, Q_NIB_INTERLEAVED), Q_RULE(Q_D_SIGNED_ABSMAX, -8, q_rule_add_8_5_u8_max15))
Q_LEGACY_ROW_PAIR(q4_3_qnt0, Q_LAYOUT(16, 4, false, true, Q_NIB_INTERLEAVED), Q_RULE(Q_D_MIN_MAX, 15, q_rule_add_half))
Q_LEGACY_ROW_PAIR(q5_0_qnt0, Q_LAYOUT(32, 5, false, false, Q_NIB_INTERLEAVED), Q_RULE(Q_D_SIGNED_ABSMAX, -16, q_rule_add_16_5_max31))
Q_LEGACY_ROW_PAIR(q5_1_qnt0, Q_LAYOUT(32, 5, false, true, Q_NIB_INTERLEAVED), Q_RULE(Q_D_MIN_MAX, 31, q_rule_add_half))
Q_LEGACY_ROW_PAIR(q8_0_qnt1, Q_LAYOUT(32, 8, true, false, Q_NIB_SPLIT), Q_RULE(Q_D_ABSMAX, 127, q_rule_round))
