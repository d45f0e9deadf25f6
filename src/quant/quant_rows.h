/* Reference (de)quantizers of every quantized type, one pair per type id.
 * Signatures match tport_to_float_fn / tport_from_float_fn: n elements,
 * a multiple of the type's block size (checked by the callers). */
#ifndef TPORT_QUANT_ROWS_H
#define TPORT_QUANT_ROWS_H

#include <stdint.h>

#define TPORT_QUANT_ROW_PAIR(name)                                          \
    void tport_dequant_##name(const void *src, float *dst, int64_t n);      \
    void tport_quant_##name(const float *src, void *dst, int64_t n);

/* today's legacy types (legacy_quants.c) */
TPORT_QUANT_ROW_PAIR(q4_0)
TPORT_QUANT_ROW_PAIR(q4_1)
TPORT_QUANT_ROW_PAIR(q5_0)
TPORT_QUANT_ROW_PAIR(q5_1)
TPORT_QUANT_ROW_PAIR(q8_0)
TPORT_QUANT_ROW_PAIR(q8_1)
/* k-quants (kquants.c) */
TPORT_QUANT_ROW_PAIR(q2_K)
TPORT_QUANT_ROW_PAIR(q3_K)
TPORT_QUANT_ROW_PAIR(q4_K)
TPORT_QUANT_ROW_PAIR(q5_K)
TPORT_QUANT_ROW_PAIR(q6_K)
TPORT_QUANT_ROW_PAIR(q8_K)
/* non-linear 4-bit (iq4.c) */
TPORT_QUANT_ROW_PAIR(iq4_nl)
TPORT_QUANT_ROW_PAIR(iq4_xs)
/* OCP microscaling FP4 (mxfp4_quants.c) */
TPORT_QUANT_ROW_PAIR(mxfp4)
/* NVFP4 (nvfp4_quants.c), ternary (ternary_quants.c), Q1_0/Q2_0 (q1q2_quants.c) */
TPORT_QUANT_ROW_PAIR(nvfp4)
TPORT_QUANT_ROW_PAIR(tq1_0)
TPORT_QUANT_ROW_PAIR(tq2_0)
TPORT_QUANT_ROW_PAIR(q1_0)
TPORT_QUANT_ROW_PAIR(q2_0)
/* historical layout revisions (historical_quants.c) */
TPORT_QUANT_ROW_PAIR(q4_0_qnt0)
TPORT_QUANT_ROW_PAIR(q4_1_qnt0)
TPORT_QUANT_ROW_PAIR(q4_2_qnt0)
TPORT_QUANT_ROW_PAIR(q4_3_qnt0)
TPORT_QUANT_ROW_PAIR(q5_0_qnt0)
TPORT_QUANT_ROW_PAIR(q5_1_qnt0)
TPORT_QUANT_ROW_PAIR(q8_0_qnt1)
TPORT_QUANT_ROW_PAIR(q4_0_qnt1)
TPORT_QUANT_ROW_PAIR(q4_1_qnt1)

/* GGML_QKK_64 k-quants (kquants_qk64.c): dequantize only */
void tport_dequant_q2_K_qk64(const void *src, float *dst, int64_t n);
void tport_dequant_q3_K_qk64(const void *src, float *dst, int64_t n);
void tport_dequant_q4_K_qk64(const void *src, float *dst, int64_t n);
void tport_dequant_q5_K_qk64(const void *src, float *dst, int64_t n);
void tport_dequant_q6_K_qk64(const void *src, float *dst, int64_t n);

/* grid types (iq2_quants.c, iq3_quants.c, iq1_quants.c): dequantize only */
void tport_dequant_iq2_xxs(const void *src, float *dst, int64_t n);
void tport_dequant_iq2_xs(const void *src, float *dst, int64_t n);
void tport_dequant_iq2_s(const void *src, float *dst, int64_t n);
void tport_dequant_iq3_xxs(const void *src, float *dst, int64_t n);
void tport_dequant_iq3_s(const void *src, float *dst, int64_t n);
void tport_dequant_iq1_s(const void *src, float *dst, int64_t n);
void tport_dequant_iq1_m(const void *src, float *dst, int64_t n);

/* The IQ3 quantizers (iq3_search.c); _weighted: ggml's quantize_iq3_<t>
 * with n importance weights (those of one row), NULL for none. */
void tport_quant_iq3_xxs(const float *src, void *dst, int64_t n);
void tport_quant_iq3_xxs_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_iq3_s(const float *src, void *dst, int64_t n);
void tport_quant_iq3_s_weighted(const float *src, void *dst, int64_t n, const float *weights);
/* IQ2_XXS's quantizer (iq2_search.c): ggml has it only with importance
 * weights (n of them, one row's); NULL weights give zero blocks. */
void tport_quant_iq2_xxs_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_iq2_xs_weighted(const float *src, void *dst, int64_t n, const float *weights);
/* IQ1_S's (iq1_search.c): weighted only, as ggml's; IQ1_M's with or
 * without weights (ggml's quantize_iq1_m; it has no _ref function). */
void tport_quant_iq1_s_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_iq1_m(const float *src, void *dst, int64_t n);
void tport_quant_iq1_m_weighted(const float *src, void *dst, int64_t n, const float *weights);
/* IQ2_S's (iq2_search.c), with or without weights (NULL) as ggml's. */
void tport_quant_iq2_s(const float *src, void *dst, int64_t n);
void tport_quant_iq2_s_weighted(const float *src, void *dst, int64_t n, const float *weights);

/* IQ4_NL's and IQ4_XS's quantizers as ggml's quantize_iq4_nl/_xs (what
 * llama-quantize calls): weights NULL or n importance weights.  IQ4_NL's
 * differs from its _ref row function (no scale search there). */
void tport_quant_iq4_nl_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_iq4_xs_weighted(const float *src, void *dst, int64_t n, const float *weights);

/* The importance-weighted quantizers of ggml's chunk functions
 * (quants_weighted.c); NULL weights: the type's _ref row quantizer. */
void tport_quant_q4_0_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q4_1_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q5_0_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q5_1_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q2_K_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q3_K_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q4_K_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q5_K_weighted(const float *src, void *dst, int64_t n, const float *weights);
void tport_quant_q6_K_weighted(const float *src, void *dst, int64_t n, const float *weights);

#undef TPORT_QUANT_ROW_PAIR

/* ggml's table of IQ4_NL / IQ4_XS code values. */
extern const int8_t tport_kvalues_iq4nl[16];
/* ggml's kvalues_mxfp4: the E2M1 code values, doubled. */
extern const int8_t tport_kvalues_mxfp4[16];

#endif
