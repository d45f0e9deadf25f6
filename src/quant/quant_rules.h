/* Quantizer rules ("variants"): every reference quantizer that ever
 * produced a given layout, by type id.  A layout revision such as
 * Q4_0_QNT0 was written by more than one rule over its life (formats.md
 * section 3): the bytes differ, the decoder does not.  Each rule has a short
 * stable name, the period and commit it was in use, and a function with the
 * tport_from_float_fn signature (n a multiple of the block size).
 *
 * Exactly one rule per type is the default, and it is the type's LAST rule
 * (rules are listed oldest first): it writes what the type table's
 * from_float writes (today's rule for current types, the last rule of the
 * period for historical revisions).  tests/quant/test_quant_rules.c checks
 * this; `tport quantize --list-rules` relies on it. */
#ifndef TPORT_QUANT_RULES_H
#define TPORT_QUANT_RULES_H

#include <stdbool.h>

#include "type_table.h"

typedef struct tport_quant_rule {
    tport_type_id type;
    const char *name;  /* "amax7", "max-8", "ggml-ref", ...            */
    const char *about; /* period and commit                             */
    tport_from_float_fn quantize;
    bool is_default;
} tport_quant_rule;

/* Number of rules for `type` (0 for an unknown type or one with no
 * quantizer). */
int tport_quant_rules_count(tport_type_id type);
/* The i-th rule of `type` (in historical order), NULL if out of range. */
const tport_quant_rule *tport_quant_rule_at(tport_type_id type, int i);
/* The rule called `name`, or the default rule when name is NULL; NULL if
 * there is none. */
const tport_quant_rule *tport_quant_rule_find(tport_type_id type, const char *name);

/* The historical rules that are not a type's default (historical_rules.c). */
void tport_quant_q4_0_qnt0_amax7(const float *src, void *dst, int64_t n);
void tport_quant_q4_1_qnt0_flt_min(const float *src, void *dst, int64_t n);
void tport_quant_q4_2_qnt0_amax7(const float *src, void *dst, int64_t n);
void tport_quant_q4_2_qnt0_rmse(const float *src, void *dst, int64_t n);
/* The 2023 k-quant quantizers (kquants_2023.c). */
void tport_quant_q2_K_2023(const float *src, void *dst, int64_t n);
void tport_quant_q4_K_2023(const float *src, void *dst, int64_t n);
void tport_quant_q5_K_2023(const float *src, void *dst, int64_t n);
void tport_quant_q6_K_2023(const float *src, void *dst, int64_t n);
void tport_quant_q8_K_2023(const float *src, void *dst, int64_t n);

#endif
