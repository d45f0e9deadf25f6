/* tport_quantize_rows (tport.h): ggml_quantize_chunk's choice of
 * quantizer per type, with and without importance weights, as a table.
 * Without weights ggml's chunk functions call the type's _ref row
 * quantizer (the type table's from_float) except where a row says
 * otherwise; with weights they call the importance-aware search, or
 * ignore the weights (Q8_0, MXFP4, NVFP4, TQ1_0, TQ2_0, Q1_0, Q2_0). */
#include <stdbool.h>
#include <stdint.h>

#include "core/error.h"
#include "quant_rows.h"
#include "tport/tport.h"
#include "type_table.h"

typedef void (*weighted_fn)(const float *src, void *dst, int64_t n, const float *weights);

typedef struct chunk_row {
    tport_type_id type;
    weighted_fn weighted;   /* NULL: tport has no weighted quantizer (yet) */
    bool ignores_weights;   /* ggml's chunk function does not read them   */
    bool unweighted_too;    /* also used without weights (not the _ref)   */
    bool needs_weights;     /* ggml quantizes it only with weights        */
} chunk_row;

#define TT(x) TPORT_TYPE_##x
static const chunk_row chunk_rows[] = {
    {TT(F32), NULL, true, false, false},
    {TT(F16), NULL, true, false, false},
    {TT(BF16), NULL, true, false, false},
    {TT(Q8_0), NULL, true, false, false},
    {TT(MXFP4), NULL, true, false, false},
    {TT(NVFP4), NULL, true, false, false},
    {TT(TQ1_0), NULL, true, false, false},
    {TT(TQ2_0), NULL, true, false, false},
    {TT(Q1_0), NULL, true, false, false},
    {TT(Q2_0), NULL, true, false, false},
    {TT(IQ4_NL), tport_quant_iq4_nl_weighted, false, true, false},
    {TT(IQ4_XS), tport_quant_iq4_xs_weighted, false, true, false},
    {TT(IQ3_XXS), tport_quant_iq3_xxs_weighted, false, false, false},
    {TT(IQ3_S), tport_quant_iq3_s_weighted, false, false, false},
    {TT(IQ2_S), tport_quant_iq2_s_weighted, false, false, false},
    {TT(IQ1_M), tport_quant_iq1_m_weighted, false, false, false},
    {TT(IQ2_XXS), tport_quant_iq2_xxs_weighted, false, false, true},
    {TT(IQ2_XS), tport_quant_iq2_xs_weighted, false, false, true},
    {TT(IQ1_S), tport_quant_iq1_s_weighted, false, false, true},
    {TT(Q4_0), tport_quant_q4_0_weighted, false, false, false},
    {TT(Q4_1), tport_quant_q4_1_weighted, false, false, false},
    {TT(Q5_0), tport_quant_q5_0_weighted, false, false, false},
    {TT(Q5_1), tport_quant_q5_1_weighted, false, false, false},
    {TT(Q2_K), tport_quant_q2_K_weighted, false, false, false},
    {TT(Q3_K), tport_quant_q3_K_weighted, false, false, false},
    {TT(Q4_K), tport_quant_q4_K_weighted, false, false, false},
    {TT(Q5_K), tport_quant_q5_K_weighted, false, false, false},
    {TT(Q6_K), tport_quant_q6_K_weighted, false, false, false},
};

static const chunk_row *find_row(tport_type_id type) {
    for (size_t i = 0; i < sizeof chunk_rows / sizeof chunk_rows[0]; i++)
        if (chunk_rows[i].type == type)
            return &chunk_rows[i];
    return NULL;
}

tport_status tport_quantize_rows(tport_type_id type, const float *src, void *dst, int64_t nrows, int64_t n_per_row,
                                 const float *weights) {
    const tport_type_traits *t = tport_traits(type);
    const chunk_row *r = find_row(type);
    if (!t || !r)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "quantize rows: type %s is not one llama-quantize writes",
                           t ? t->info.name : "(unknown)");
    if (nrows < 0 || n_per_row <= 0 || n_per_row % t->info.block_size || (nrows > 0 && n_per_row > INT64_MAX / 64 / nrows))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "quantize rows %s: bad shape %lld x %lld (block %lld)",
                           t->info.name, (long long)nrows, (long long)n_per_row, (long long)t->info.block_size);
    if (nrows > 0 && (!src || !dst))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "quantize rows %s: NULL buffer", t->info.name);
    if (r->needs_weights && !weights)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "quantize rows %s: ggml quantizes this type only with an importance matrix",
                           t->info.name);
    if (weights && !r->ignores_weights && !r->weighted)
        return tport_error(TPORT_STATUS_UNSUPPORTED,
                           "quantize rows %s: tport has no importance-weighted %s quantizer yet", t->info.name,
                           t->info.name);
    const size_t row_bytes = (size_t)(n_per_row / t->info.block_size) * t->info.block_bytes;
    for (int64_t i = 0; i < nrows; i++) {
        const float *x = src + i * n_per_row;
        void *y = (uint8_t *)dst + (size_t)i * row_bytes;
        if (r->weighted && (weights || r->unweighted_too))
            r->weighted(x, y, n_per_row, weights);
        else if (t->from_float)
            t->from_float(x, y, n_per_row);
        else
            return tport_error(TPORT_STATUS_UNSUPPORTED, "quantize rows %s: no quantizer", t->info.name);
    }
    return TPORT_STATUS_OK;
}
