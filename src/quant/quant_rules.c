/* The table of quantizer rules: for each type id, every reference rule
 * that produced its layout, in historical order (formats.md section 3;
 * quant_rules.h says what a rule is).  Periods and commits are those of
 * formats.md. */
#include "quant_rules.h"

#include <string.h>

#include "core/fp16.h"
#include "quant_rows.h"

#define RULE(ID, name, about, fn, dflt) {TPORT_TYPE_##ID, name, about, fn, dflt}
/* Today's types have one rule: ggml's current reference quantizer. */
#define TODAY(ID, fn) \
    RULE(ID, "ggml-ref", "today's ggml reference quantizer (quantize_row_" #fn "_ref, ggml@d99724f2)", tport_quant_##fn, true)
/* The k-quants whose quantizer changed after 2023 have two rules: the
 * 2023 one (kquants_2023.c), then today's (the default). */
#define KQUANT_2023_ABOUT                                                                                   \
    "2023-06-05 .. later in 2023, llama.cpp@99009e7 (#1684) .. at least @181e8d9 (2023-06-27): "         \
    "make_qkx1_quants / make_qx_quants(rmse_type 1) era, read from a mid-2023 copy of k_quants.c; "      \
    "not checked against 2023 vectors"
#define TODAY_K(ID, fn)                                                                                   \
    RULE(ID, "2023", KQUANT_2023_ABOUT, tport_quant_##fn##_2023, false),                                  \
    RULE(ID, "ggml-ref", "today's ggml reference quantizer (quantize_row_" #fn "_ref, ggml@d99724f2)",   \
         tport_quant_##fn, true)

static void f32_copy(const float *src, void *dst, int64_t n) { memcpy(dst, src, (size_t)n * sizeof(float)); }

static void f16_round(const float *src, void *dst, int64_t n) {
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) {
        const uint16_t h = tport_fp32_to_fp16(src[i]);
        memcpy(d + 2 * i, &h, 2);
    }
}

static void bf16_round(const float *src, void *dst, int64_t n) {
    uint8_t *d = dst;
    for (int64_t i = 0; i < n; i++) {
        const uint16_t h = tport_fp32_to_bf16(src[i]);
        memcpy(d + 2 * i, &h, 2);
    }
}

static const tport_quant_rule rules[] = {
    RULE(F32, "ggml-ref", "f32 values stored as they are", f32_copy, true),
    RULE(F16, "ggml-ref", "round to nearest even f16 (ggml_fp32_to_fp16)", f16_round, true),
    RULE(BF16, "ggml-ref", "round to nearest even bf16 (ggml_fp32_to_bf16)", bf16_round, true),
    TODAY(Q4_0, q4_0),
    TODAY(Q4_1, q4_1),
    TODAY(Q5_0, q5_0),
    TODAY(Q5_1, q5_1),
    TODAY(Q8_0, q8_0),
    TODAY(Q8_1, q8_1),
    TODAY_K(Q2_K, q2_K),
    TODAY(Q3_K, q3_K),
    TODAY_K(Q4_K, q4_K),
    TODAY_K(Q5_K, q5_K),
    TODAY_K(Q6_K, q6_K),
    TODAY_K(Q8_K, q8_K),
    TODAY(IQ4_NL, iq4_nl),
    TODAY(IQ4_XS, iq4_xs),
    TODAY(MXFP4, mxfp4),
    TODAY(IQ3_XXS, iq3_xxs),
    TODAY(IQ3_S, iq3_s),
    TODAY(IQ2_S, iq2_s),
    RULE(IQ1_M, "ggml-ref", "today's ggml quantizer without weights (quantize_iq1_m(..., NULL); no _ref function)",
         tport_quant_iq1_m, true),
    TODAY(NVFP4, nvfp4),
    TODAY(TQ1_0, tq1_0),
    TODAY(TQ2_0, tq2_0),
    TODAY(Q1_0, q1_0),
    TODAY(Q2_0, q2_0),

    RULE(Q4_0_QNT0, "amax7",
         "2023-03-11 .. 04-25, llama.cpp@007a8f6 .. dd0eabc^ / ggml@acd4aeee .. 32f22c0e: d = amax/7, "
         "q = (int8)roundf(x*id) + 8",
         tport_quant_q4_0_qnt0_amax7, false),
    RULE(Q4_0_QNT0, "max-8",
         "2023-04-25 .. 05-12, llama.cpp@dd0eabc (#729) / ggml@abea4b76: d = max/-8 (first of equal |x| "
         "wins), q = MIN(15, (int8)roundf(x*id) + 8)",
         tport_quant_q4_0_qnt0, true),

    RULE(Q4_1_QNT0, "flt-min",
         "2023-03-20 .. 03-29, llama.cpp utils.cpp @5cb63e2 .. a017390^: the running max starts at FLT_MIN, "
         "so an all-zero block stores d = FLT_MIN/15",
         tport_quant_q4_1_qnt0_flt_min, false),
    RULE(Q4_1_QNT0, "roundf",
         "2023-03-17 .. 05-12, llama.cpp@904d2a8 (#193) / ggml@acd4aeee (llama.cpp's utils.cpp had the "
         "flt-min quirk 03-20 .. 03-29): d = (max-min)/15, q = roundf((x-min)*id)",
         tport_quant_q4_1_qnt0, true),

    RULE(Q4_2_QNT0, "amax7",
         "2023-04-18, llama.cpp@77a7340 (#1046) / ggml@c86c70f9: d = amax/7, q = (uint8)(x*id + 8.5f)",
         tport_quant_q4_2_qnt0_amax7, false),
    RULE(Q4_2_QNT0, "rmse",
         "2023-04-19 .. 04-25, llama.cpp@f7d0509 (#1062) / ggml@92b961cd .. 32f22c0e: quantize_row_q4_2_rmse, "
         "search over 8 candidate scales, then a least-squares refit; an all-zero block stores d = 1 "
         "(bit-exact with ggml@32f22c0e's output)",
         tport_quant_q4_2_qnt0_rmse, false),
    RULE(Q4_2_QNT0, "max-8",
         "2023-04-25 .. 05-12, llama.cpp@dd0eabc (#729) / ggml@abea4b76: d = max/-8, "
         "q = MIN(15, (uint8)(x*id + 8.5f))",
         tport_quant_q4_2_qnt0, true),

    RULE(Q4_3_QNT0, "min-max",
         "2023-04-20 .. 04-28, llama.cpp@e0305ea (#1082) .. 36d19a6 / ggml@92b961cd .. 583c5a3a: "
         "d = (max-min)/15, q = (int)((x-min)*id + 0.5f)",
         tport_quant_q4_3_qnt0, true),
    RULE(Q5_0_QNT0, "max-16-int",
         "2023-04-26 .. 05-12, llama.cpp@574406d (#1187) / ggml@abea4b76: d = max/-16, "
         "q = MIN(31, (int)(x*id + 16.5f))",
         tport_quant_q5_0_qnt0, true),
    RULE(Q5_1_QNT0, "min-max-int",
         "2023-04-26 .. 05-12, llama.cpp@574406d (#1187) / ggml@abea4b76: d = (max-min)/31, "
         "q = (int)((x-min)*id + 0.5f)",
         tport_quant_q5_1_qnt0, true),
    RULE(Q8_0_QNT1, "amax127",
         "2023-04-25 .. 05-19, llama.cpp@7a32fcb (#1179) .. 2d5db48^: d = amax/127, q = roundf(x*id) "
         "(QNT0 and QNT1 bytes are the same)",
         tport_quant_q8_0_qnt1, true),
    RULE(Q4_0_QNT1, "max-8-trunc",
         "2023-05-12 .. 05-19, llama.cpp@b9fd7ee (#1405) / ggml@fe48e22f: d = max/-8, "
         "q = MIN(15, (int8)(x*id + 8.5f))",
         tport_quant_q4_0_qnt1, true),
    RULE(Q4_1_QNT1, "min-max-trunc",
         "2023-05-12 .. 05-19, llama.cpp@b9fd7ee (#1405) / ggml@fe48e22f: d = (max-min)/15, "
         "q = MIN(15, (int8)((x-min)*id + 0.5f))",
         tport_quant_q4_1_qnt1, true),
};

#define N_RULES ((int)(sizeof rules / sizeof rules[0]))

int tport_quant_rules_count(tport_type_id type) {
    int count = 0;
    for (int i = 0; i < N_RULES; i++)
        count += rules[i].type == type;
    return count;
}

const tport_quant_rule *tport_quant_rule_at(tport_type_id type, int i) {
    if (i < 0)
        return NULL;
    for (int k = 0; k < N_RULES; k++)
        if (rules[k].type == type && i-- == 0)
            return &rules[k];
    return NULL;
}

const tport_quant_rule *tport_quant_rule_find(tport_type_id type, const char *name) {
    for (int k = 0; k < N_RULES; k++)
        if (rules[k].type == type && (name ? !strcmp(rules[k].name, name) : rules[k].is_default))
            return &rules[k];
    return NULL;
}
