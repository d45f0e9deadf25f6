/* llama-quantize's per-tensor type choice (see quant_mix.h) as tables:
 * the ftypes, the tensors it never quantizes, the categories of tensor
 * names, and the rules.  Facts from llama.cpp src/llama-quant.cpp (the
 * version of the node-llama-cpp 3.21.1 bundle).
 *
 * How a type is chosen, as llama_tensor_get_type does:
 *  1. a tensor llama-quantize does not quantize keeps its type;
 *  2. --token-embedding-type / --output-tensor-type override;
 *  3. the base type; unless --pure, the first rule of the tensor's
 *     section that matches (category, ftype, condition) replaces it, then
 *     the post rules (attn_v) apply in turn;
 *  4. a row length that is not whole blocks of the type falls back.
 * The section is the first of: OUT (output, or a token_embd tied to it),
 * MOE (MXFP4_MOE), EMBD (token_embd), LOW (the IQ1/IQ2 mixes), MAIN.
 * Rules are evaluated first match wins, which reproduces llama.cpp's
 * if / else-if chains (a KEEP rule stops a chain without a change). */
#include "quant_mix.h"

#include "tport/tport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* llama_ftype numbers (llama.h) */
enum {
    F_ALL_F32 = 0, F_F16 = 1, F_Q4_0 = 2, F_Q4_1 = 3, F_Q8_0 = 7, F_Q5_0 = 8, F_Q5_1 = 9, F_Q2_K = 10,
    F_Q3_K_S = 11, F_Q3_K_M = 12, F_Q3_K_L = 13, F_Q4_K_S = 14, F_Q4_K_M = 15, F_Q5_K_S = 16, F_Q5_K_M = 17,
    F_Q6_K = 18, F_IQ2_XXS = 19, F_IQ2_XS = 20, F_Q2_K_S = 21, F_IQ3_XS = 22, F_IQ3_XXS = 23, F_IQ1_S = 24,
    F_IQ4_NL = 25, F_IQ3_S = 26, F_IQ3_M = 27, F_IQ2_S = 28, F_IQ2_M = 29, F_IQ4_XS = 30, F_IQ1_M = 31,
    F_BF16 = 32, F_TQ1_0 = 36, F_TQ2_0 = 37, F_MXFP4_MOE = 38, F_Q1_0 = 40, F_Q2_0 = 41,
};

#define T(x) TPORT_TYPE_##x
/* llama-quantize's QUANT_OPTIONS with llama_ftype_get_default_type; the
 * aliases after their ftype.  NVFP4 (39) is not listed: this llama.cpp has
 * no default type for it and refuses it. */
static const qmix_ftype ftypes[] = {
    {"Q1_0", F_Q1_0, T(Q1_0), "1.125 bpw"},
    {"Q2_0", F_Q2_0, T(Q2_0), "2.25 bpw (group 64)"},
    {"Q4_0", F_Q4_0, T(Q4_0), "4.5 bpw"},
    {"Q4_1", F_Q4_1, T(Q4_1), "5 bpw"},
    {"MXFP4_MOE", F_MXFP4_MOE, T(MXFP4), "MXFP4 experts, Q8_0 elsewhere"},
    {"Q5_0", F_Q5_0, T(Q5_0), "5.5 bpw"},
    {"Q5_1", F_Q5_1, T(Q5_1), "6 bpw"},
    {"IQ2_XXS", F_IQ2_XXS, T(IQ2_XXS), "2.06 bpw (needs --imatrix)"},
    {"IQ2_XS", F_IQ2_XS, T(IQ2_XS), "2.31 bpw (needs --imatrix)"},
    {"IQ2_S", F_IQ2_S, T(IQ2_XS), "2.5 bpw (needs --imatrix)"},
    {"IQ2_M", F_IQ2_M, T(IQ2_S), "2.7 bpw (needs --imatrix)"},
    {"IQ1_S", F_IQ1_S, T(IQ1_S), "1.56 bpw (needs --imatrix)"},
    {"IQ1_M", F_IQ1_M, T(IQ1_M), "1.75 bpw (needs --imatrix)"},
    {"TQ1_0", F_TQ1_0, T(TQ1_0), "1.69 bpw ternary"},
    {"TQ2_0", F_TQ2_0, T(TQ2_0), "2.06 bpw ternary"},
    {"Q2_K", F_Q2_K, T(Q2_K), "Q2_K mix"},
    {"Q2_K_S", F_Q2_K_S, T(Q2_K), "Q2_K small mix (needs --imatrix)"},
    {"IQ3_XXS", F_IQ3_XXS, T(IQ3_XXS), "3.06 bpw (needs --imatrix)"},
    {"IQ3_S", F_IQ3_S, T(IQ3_S), "3.44 bpw"},
    {"IQ3_M", F_IQ3_M, T(IQ3_S), "3.66 bpw mix"},
    {"Q3_K", F_Q3_K_M, T(Q3_K), "alias for Q3_K_M"},
    {"IQ3_XS", F_IQ3_XS, T(IQ3_S), "3.3 bpw"},
    {"Q3_K_S", F_Q3_K_S, T(Q3_K), "Q3_K small mix"},
    {"Q3_K_M", F_Q3_K_M, T(Q3_K), "Q3_K medium mix"},
    {"Q3_K_L", F_Q3_K_L, T(Q3_K), "Q3_K large mix"},
    {"IQ4_NL", F_IQ4_NL, T(IQ4_NL), "4.50 bpw non-linear"},
    {"IQ4_XS", F_IQ4_XS, T(IQ4_XS), "4.25 bpw non-linear"},
    {"Q4_K", F_Q4_K_M, T(Q4_K), "alias for Q4_K_M"},
    {"Q4_K_S", F_Q4_K_S, T(Q4_K), "Q4_K small mix"},
    {"Q4_K_M", F_Q4_K_M, T(Q4_K), "Q4_K medium mix"},
    {"Q5_K", F_Q5_K_M, T(Q5_K), "alias for Q5_K_M"},
    {"Q5_K_S", F_Q5_K_S, T(Q5_K), "Q5_K small mix"},
    {"Q5_K_M", F_Q5_K_M, T(Q5_K), "Q5_K medium mix"},
    {"Q6_K", F_Q6_K, T(Q6_K), "Q6_K mix"},
    {"Q8_0", F_Q8_0, T(Q8_0), "Q8_0 mix"},
    {"F16", F_F16, T(F16), "f16 weights"},
    {"BF16", F_BF16, T(BF16), "bf16 weights"},
    {"F32", F_ALL_F32, T(F32), "f32 weights"},
};
#define N_FTYPES ((int)(sizeof ftypes / sizeof ftypes[0]))

const qmix_ftype *qmix_find(const char *name) {
    for (int i = 0; name && i < N_FTYPES; i++)
        if (!strcasecmp(ftypes[i].name, name))
            return &ftypes[i];
    return NULL;
}

const qmix_ftype *qmix_at(int i) { return i >= 0 && i < N_FTYPES ? &ftypes[i] : NULL; }

/* ---- tensors llama-quantize never quantizes ------------------------------ */
/* Names containing one of these (tensor_allows_quantization). */
static const char *const never_quantized[] = {
    "_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
    "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
    "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
    "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
    "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
    "time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
    "sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};
/* ...and these exact names (LLM_TENSOR_POS_EMBD, LLM_TENSOR_TOKEN_TYPES). */
static const char *const never_quantized_exact[] = {"position_embd.weight", "token_types.weight"};

static bool allows_quantization(const qmix_tensor *t) {
    const size_t n = strlen(t->name);
    if (t->n_dims < 2 || n < 6 || strcmp(t->name + n - 6, "weight"))
        return false;
    for (size_t i = 0; i < sizeof never_quantized / sizeof never_quantized[0]; i++)
        if (strstr(t->name, never_quantized[i]))
            return false;
    for (size_t i = 0; i < sizeof never_quantized_exact / sizeof never_quantized_exact[0]; i++)
        if (!strcmp(t->name, never_quantized_exact[i]))
            return false;
    return true;
}

/* ---- categories ------------------------------------------------------------ */
enum cat { C_OTHER, C_OUTPUT, C_EMBD, C_ATTN_V, C_ATTN_K, C_ATTN_Q, C_ATTN_OUT, C_FFN_UP, C_FFN_GATE, C_FFN_DOWN,
           C_ANY };

/* tensor_get_category: exact names, then the first substring found.
 * attn_qkv and attn_kv_b count as attn_v (category_is_attn_v); llama.cpp's
 * own attn_qkv rules come after the attn_v ones and never apply. */
static const struct {
    const char *part;
    bool exact;
    enum cat cat;
} categories[] = {
    {"output.weight", true, C_OUTPUT},        {"token_embd.weight", true, C_EMBD},
    {"per_layer_token_embd.weight", true, C_EMBD},
    {"attn_qkv.weight", false, C_ATTN_V},     {"attn_kv_b.weight", false, C_ATTN_V},
    {"attn_v.weight", false, C_ATTN_V},       {"attn_k.weight", false, C_ATTN_K},
    {"attn_q.weight", false, C_ATTN_Q},       {"attn_output.weight", false, C_ATTN_OUT},
    {"ffn_up", false, C_FFN_UP},              {"ffn_gate", false, C_FFN_GATE},
    {"ffn_down", false, C_FFN_DOWN},
};

static enum cat category_of(const char *name) {
    for (size_t i = 0; i < sizeof categories / sizeof categories[0]; i++)
        if (categories[i].exact ? !strcmp(name, categories[i].part) : strstr(name, categories[i].part) != NULL)
            return categories[i].cat;
    return C_OTHER;
}

/* ---- rules ---------------------------------------------------------------- */
enum section { S_OUT, S_MOE, S_EMBD, S_LOW, S_MAIN, S_POST };

/* Conditions.  "layer" is the tensor's layer as llama.cpp counts it for
 * ffn_* (its position among the tensors of the category, or with experts
 * the number in its name), "wv" the position among the attn_v tensors. */
enum cond {
    ALWAYS,
    OUT_Q8,           /* falcon, or a row that is not whole blocks of the base type */
    BASE_NOT_Q8_0,    /* the type so far is not Q8_0 */
    NE2_EXPERTS,      /* ne[2] > 1 (and for bailingmoe3 an ffn tensor) */
    GQA4,             /* n_head / n_head_kv >= 4 */
    GQA4_OR_EXPERT4,  /* ... or n_expert >= 4 */
    EXPERT8,          /* n_expert == 8 */
    COUNT_LT_N8,      /* the category's count < n_layer/8 (no name parsing) */
    LAYER_LT_N8, LAYER_LT_N16, MORE_BITS,
    LAYER_LT_N8_OR_EXPERT8_MORE_BITS,
    LAYER_MID,        /* n/8 <= layer < 7n/8 */
    NOT_FALCON_OR_MORE_BITS,
    FALCON, FALCON_LAYER_LT_N16, FALCON_MORE_BITS, NOT_FALCON_LAYER_LT_N8,
    NOT_FALCON_EXPERT8, NOT_FALCON_NOT_EXPERT8,
    NO_IMATRIX, IMATRIX_LAYER_LT_N8, NO_IMATRIX_LAYER_LT_N8,
    WV_LT2, WV_LT4, WV_MORE_BITS,
    IS_70B_Q3K_Q4K,   /* llama 70B (80 layers, GQA) and the type so far is Q3_K or Q4_K */
};

#define KEEP ((tport_type_id)0xffff) /* stop the chain, type unchanged */
#define B(f) (1ull << F_##f)
#define LOW_MIXES (B(IQ2_XXS) | B(IQ2_XS) | B(IQ1_S) | B(IQ2_S) | B(IQ2_M) | B(IQ1_M))

typedef struct rule {
    enum section section;
    enum cat cat;
    uint64_t ftypes; /* bit f: llama_ftype f */
    enum cond cond;
    tport_type_id type;
} rule;

static const rule rules[] = {
    /* output.weight, and token_embd when it is also the output */
    {S_OUT, C_ANY, B(MXFP4_MOE), ALWAYS, T(Q8_0)},
    {S_OUT, C_ANY, ~0ull, OUT_Q8, T(Q8_0)},
    {S_OUT, C_ANY, B(IQ2_XXS) | B(IQ2_XS) | B(IQ3_XXS) | B(IQ1_S) | B(IQ2_S) | B(IQ2_M) | B(IQ1_M), ALWAYS, T(Q5_K)},
    {S_OUT, C_ANY, ~0ull, BASE_NOT_Q8_0, T(Q6_K)},
    /* MXFP4_MOE: experts MXFP4, the rest Q8_0 */
    {S_MOE, C_ANY, ~0ull, NE2_EXPERTS, T(MXFP4)},
    {S_MOE, C_ANY, ~0ull, ALWAYS, T(Q8_0)},
    /* token_embd, untied */
    {S_EMBD, C_EMBD, B(IQ2_XXS) | B(IQ2_XS) | B(IQ1_S) | B(IQ1_M), ALWAYS, T(Q2_K)},
    {S_EMBD, C_EMBD, B(IQ2_S) | B(IQ2_M) | B(IQ3_XXS), ALWAYS, T(IQ3_S)},
    {S_EMBD, C_EMBD, B(TQ1_0) | B(TQ2_0) | B(Q2_0), ALWAYS, T(Q4_K)},
    /* the IQ1 / IQ2 mixes */
    {S_LOW, C_ATTN_V, ~0ull, GQA4_OR_EXPERT4, T(Q4_K)},
    {S_LOW, C_ATTN_V, B(IQ2_S) | B(IQ2_M), ALWAYS, T(IQ3_S)},
    {S_LOW, C_ATTN_V, ~0ull, ALWAYS, T(Q2_K)},
    {S_LOW, C_ATTN_K, ~0ull, EXPERT8, T(Q4_K)},
    {S_LOW, C_FFN_DOWN, B(IQ2_S) | B(IQ2_M), COUNT_LT_N8, T(IQ3_S)},
    {S_LOW, C_FFN_DOWN, ~0ull, COUNT_LT_N8, T(Q2_K)},
    {S_LOW, C_ATTN_OUT, ~0ull, EXPERT8, T(Q5_K)},
    {S_LOW, C_ATTN_OUT, B(IQ1_S) | B(IQ1_M), ALWAYS, T(IQ2_XXS)},
    {S_LOW, C_ATTN_OUT, B(IQ2_S) | B(IQ2_M), ALWAYS, T(IQ3_S)},
    /* attn_v (attn_qkv, attn_kv_b) */
    {S_MAIN, C_ATTN_V, B(Q2_K), GQA4, T(Q4_K)},
    {S_MAIN, C_ATTN_V, B(Q2_K), ALWAYS, T(Q3_K)},
    {S_MAIN, C_ATTN_V, B(Q2_K_S), GQA4, T(Q4_K)},
    {S_MAIN, C_ATTN_V, B(IQ3_XXS), GQA4, T(Q4_K)},
    {S_MAIN, C_ATTN_V, B(IQ3_XXS), NO_IMATRIX, T(IQ3_S)},
    {S_MAIN, C_ATTN_V, B(IQ3_XXS), ALWAYS, T(IQ3_XXS)},
    {S_MAIN, C_ATTN_V, B(IQ3_XS) | B(IQ3_S), GQA4, T(Q4_K)},
    {S_MAIN, C_ATTN_V, B(IQ3_M), ALWAYS, T(Q4_K)},
    {S_MAIN, C_ATTN_V, B(Q3_K_M), WV_LT2, T(Q5_K)},
    {S_MAIN, C_ATTN_V, B(Q3_K_M), ALWAYS, T(Q4_K)},
    {S_MAIN, C_ATTN_V, B(Q3_K_L), ALWAYS, T(Q5_K)},
    {S_MAIN, C_ATTN_V, B(IQ4_NL) | B(IQ4_XS), GQA4, T(Q5_K)},
    {S_MAIN, C_ATTN_V, B(Q4_K_M) | B(Q5_K_M), WV_MORE_BITS, T(Q6_K)},
    {S_MAIN, C_ATTN_V, B(Q4_K_S), WV_LT4, T(Q5_K)},
    /* attn_k, attn_q */
    {S_MAIN, C_ATTN_K, ~0ull, EXPERT8, T(Q8_0)},
    {S_MAIN, C_ATTN_K, B(IQ3_XS), ALWAYS, T(IQ3_XXS)},
    {S_MAIN, C_ATTN_K, B(IQ3_XXS), ALWAYS, T(IQ2_S)},
    {S_MAIN, C_ATTN_Q, B(IQ3_XS), ALWAYS, T(IQ3_XXS)},
    {S_MAIN, C_ATTN_Q, B(IQ3_XXS), ALWAYS, T(IQ2_S)},
    /* ffn_down */
    {S_MAIN, C_FFN_DOWN, B(Q2_K), ALWAYS, T(Q3_K)},
    {S_MAIN, C_FFN_DOWN, B(Q2_K_S), LAYER_LT_N8, T(Q4_K)},
    {S_MAIN, C_FFN_DOWN, B(Q2_K_S), ALWAYS, KEEP},
    {S_MAIN, C_FFN_DOWN, B(IQ3_XXS), NO_IMATRIX_LAYER_LT_N8, T(Q4_K)},
    {S_MAIN, C_FFN_DOWN, B(IQ3_XXS), NO_IMATRIX, T(Q3_K)},
    {S_MAIN, C_FFN_DOWN, B(Q3_K_M), LAYER_LT_N16, T(Q5_K)},
    {S_MAIN, C_FFN_DOWN, B(Q3_K_M), NOT_FALCON_OR_MORE_BITS, T(Q4_K)},
    {S_MAIN, C_FFN_DOWN, B(Q3_K_M), ALWAYS, T(Q3_K)},
    {S_MAIN, C_FFN_DOWN, B(IQ3_M), LAYER_LT_N8_OR_EXPERT8_MORE_BITS, T(Q4_K)},
    {S_MAIN, C_FFN_DOWN, B(Q3_K_L), FALCON, T(Q4_K)},
    {S_MAIN, C_FFN_DOWN, B(Q3_K_L), ALWAYS, T(Q5_K)},
    {S_MAIN, C_FFN_DOWN, B(Q4_K_M), FALCON_LAYER_LT_N16, T(Q6_K)},
    {S_MAIN, C_FFN_DOWN, B(Q4_K_M), FALCON_MORE_BITS, T(Q5_K)},
    {S_MAIN, C_FFN_DOWN, B(Q4_K_M), FALCON, T(Q4_K)},
    {S_MAIN, C_FFN_DOWN, B(Q4_K_M), MORE_BITS, T(Q6_K)},
    {S_MAIN, C_FFN_DOWN, B(Q4_K_M), ALWAYS, KEEP},
    {S_MAIN, C_FFN_DOWN, B(IQ4_NL) | B(IQ4_XS), NO_IMATRIX_LAYER_LT_N8, T(Q5_K)},
    {S_MAIN, C_FFN_DOWN, B(Q5_K_M), MORE_BITS, T(Q6_K)},
    {S_MAIN, C_FFN_DOWN, B(Q4_K_S), NOT_FALCON_LAYER_LT_N8, T(Q5_K)},
    {S_MAIN, C_FFN_DOWN, B(Q4_0), IMATRIX_LAYER_LT_N8, T(Q4_1)},
    {S_MAIN, C_FFN_DOWN, B(Q5_0), IMATRIX_LAYER_LT_N8, T(Q5_1)},
    /* attn_output */
    {S_MAIN, C_ATTN_OUT,
     B(Q2_K) | B(IQ3_XS) | B(IQ3_XXS) | B(Q3_K_S) | B(Q3_K_M) | B(IQ4_NL) | B(Q4_K_S) | B(Q4_K_M) | B(IQ3_S) |
         B(IQ3_M) | B(IQ4_XS),
     NOT_FALCON_EXPERT8, T(Q5_K)},
    {S_MAIN, C_ATTN_OUT, B(Q2_K), NOT_FALCON_NOT_EXPERT8, T(Q3_K)},
    {S_MAIN, C_ATTN_OUT, B(IQ3_XXS), NOT_FALCON_NOT_EXPERT8, T(IQ3_S)},
    {S_MAIN, C_ATTN_OUT, B(Q3_K_M), NOT_FALCON_NOT_EXPERT8, T(Q4_K)},
    {S_MAIN, C_ATTN_OUT, B(Q3_K_L), NOT_FALCON_NOT_EXPERT8, T(Q5_K)},
    {S_MAIN, C_ATTN_OUT, B(IQ3_M), NOT_FALCON_NOT_EXPERT8, T(Q4_K)},
    {S_MAIN, C_ATTN_OUT, B(Q3_K_L), FALCON, T(Q4_K)},
    /* ffn_gate, ffn_up */
    {S_MAIN, C_FFN_GATE, B(IQ3_XS), LAYER_MID, T(IQ3_XXS)},
    {S_MAIN, C_FFN_UP, B(IQ3_XS), LAYER_MID, T(IQ3_XXS)},
    /* after the MAIN section's attn_v rule, each of these in turn */
    {S_POST, C_ATTN_V, ~0ull, IS_70B_Q3K_Q4K, T(Q5_K)},
    {S_POST, C_ATTN_V, ~0ull, EXPERT8, T(Q8_0)},
};
#define N_RULES ((int)(sizeof rules / sizeof rules[0]))

/* Row-length fallbacks (tensor_type_fallback): a type whose block does
 * not divide the row becomes this one; F16 when that does not divide it
 * either.  Types not listed with blocks of <= 32 go straight to F16;
 * others (Q1_0) are refused, as llama-quantize refuses them. */
static const struct {
    tport_type_id from, to;
} fallbacks[] = {
    {T(IQ1_S), T(IQ4_NL)}, {T(IQ1_M), T(IQ4_NL)}, {T(IQ2_XXS), T(IQ4_NL)}, {T(IQ2_XS), T(IQ4_NL)},
    {T(IQ2_S), T(IQ4_NL)}, {T(IQ3_XXS), T(IQ4_NL)}, {T(IQ3_S), T(IQ4_NL)}, {T(IQ4_XS), T(IQ4_NL)},
    {T(Q2_0), T(Q4_0)},    {T(Q2_K), T(Q4_0)},      {T(Q3_K), T(Q4_0)},    {T(TQ1_0), T(Q4_0)},
    {T(TQ2_0), T(Q4_0)},   {T(Q4_K), T(Q5_0)},      {T(Q5_K), T(Q5_1)},    {T(Q6_K), T(Q8_0)},
};

/* ---- evaluation ------------------------------------------------------------ */
typedef struct state {
    const qmix_ftype *ft;
    const qmix_model *m;
    const qmix_options *o;
    int n_attn_v, i_attn_v, i_ffn_down, i_ffn_gate, i_ffn_up;
    bool tied; /* no output.weight: token_embd is the output too */
} state;

static int64_t block_of(tport_type_id t) {
    const tport_type_info *ti = tport_type_get(t);
    return ti && ti->block_size > 0 ? ti->block_size : 1;
}

static bool is_quantized(tport_type_id t) {
    return t != T(F32) && t != T(F16) && t != T(BF16);
}

static bool more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static bool cond_holds(const state *s, enum cond c, const qmix_tensor *t, enum cat cat, int layer, int n_layer,
                       tport_type_id cur) {
    const qmix_model *m = s->m;
    const bool falcon = !strcmp(m->arch, "falcon");
    const uint32_t gqa = m->n_head_kv ? m->n_head / m->n_head_kv : 0;
    switch (c) {
    case ALWAYS: return true;
    case OUT_Q8: return falcon || t->ne[0] % block_of(cur) != 0;
    case BASE_NOT_Q8_0: return cur != T(Q8_0);
    case NE2_EXPERTS:
        return t->ne[2] > 1 &&
               (strcmp(m->arch, "bailingmoe3") || cat == C_FFN_UP || cat == C_FFN_GATE || cat == C_FFN_DOWN);
    case GQA4: return gqa >= 4;
    case GQA4_OR_EXPERT4: return gqa >= 4 || m->n_expert >= 4;
    case EXPERT8: return m->n_expert == 8;
    case COUNT_LT_N8: return s->i_ffn_down < (int)m->n_layer / 8;
    case LAYER_LT_N8: return layer < n_layer / 8;
    case LAYER_LT_N16: return layer < n_layer / 16;
    case MORE_BITS: return more_bits(layer, n_layer);
    case LAYER_LT_N8_OR_EXPERT8_MORE_BITS: return layer < n_layer / 8 || (m->n_expert == 8 && more_bits(layer, n_layer));
    case LAYER_MID: return layer >= n_layer / 8 && layer < 7 * n_layer / 8;
    case NOT_FALCON_OR_MORE_BITS: return !falcon || more_bits(layer, n_layer);
    case FALCON: return falcon;
    case FALCON_LAYER_LT_N16: return falcon && layer < n_layer / 16;
    case FALCON_MORE_BITS: return falcon && more_bits(layer, n_layer);
    case NOT_FALCON_LAYER_LT_N8: return !falcon && layer < n_layer / 8;
    case NOT_FALCON_EXPERT8: return !falcon && m->n_expert == 8;
    case NOT_FALCON_NOT_EXPERT8: return !falcon && m->n_expert != 8;
    case NO_IMATRIX: return !s->o->has_imatrix;
    case IMATRIX_LAYER_LT_N8: return s->o->has_imatrix && layer < n_layer / 8;
    case NO_IMATRIX_LAYER_LT_N8: return !s->o->has_imatrix && layer < n_layer / 8;
    case WV_LT2: return s->i_attn_v < 2;
    case WV_LT4: return s->i_attn_v < 4;
    case WV_MORE_BITS: return more_bits(s->i_attn_v, s->n_attn_v);
    case IS_70B_Q3K_Q4K:
        return !strcmp(m->arch, "llama") && m->n_layer == 80 && m->n_head != m->n_head_kv &&
               (cur == T(Q3_K) || cur == T(Q4_K));
    }
    return false;
}

/* The layer of an ffn_* tensor as llama.cpp's layer_info gives it. */
static int layer_of(const state *s, const char *name, int counter, int *layer, char *err, size_t err_len) {
    *layer = counter;
    if (s->m->n_expert > 1) {
        if (sscanf(name, "blk.%d.", layer) != 1) {
            snprintf(err, err_len, "cannot tell the layer of tensor %s", name);
            return -1;
        }
        if (*layer < 0 || *layer >= (int)s->m->n_layer) {
            snprintf(err, err_len, "tensor %s: layer %d is not in [0, %u)", name, *layer, s->m->n_layer);
            return -1;
        }
    }
    return 0;
}

/* llama_tensor_get_type_impl */
static int mix_type(state *s, const qmix_tensor *t, enum cat cat, tport_type_id *type, char *err, size_t err_len) {
    const int ft = s->ft->ftype;
    enum section sec;
    if (cat == C_OUTPUT || (s->tied && cat == C_EMBD)) {
        if (s->o->output_type >= 0) {
            *type = (tport_type_id)s->o->output_type;
            return 0;
        }
        sec = S_OUT;
    } else if (ft == F_MXFP4_MOE) {
        sec = S_MOE;
    } else if (cat == C_EMBD) {
        if (s->o->token_embd_type >= 0) {
            *type = (tport_type_id)s->o->token_embd_type;
            return 0;
        }
        sec = S_EMBD;
    } else if (LOW_MIXES >> ft & 1) {
        sec = S_LOW;
    } else {
        sec = S_MAIN;
    }
    int layer = 0, n_layer = (int)s->m->n_layer;
    if (sec == S_MAIN) {
        const int counter = cat == C_FFN_DOWN ? s->i_ffn_down : cat == C_FFN_GATE ? s->i_ffn_gate : s->i_ffn_up;
        if ((cat == C_FFN_DOWN || cat == C_FFN_GATE || cat == C_FFN_UP) &&
            layer_of(s, t->name, counter, &layer, err, err_len))
            return -1;
    }
    for (int i = 0; i < N_RULES; i++) {
        const rule *r = &rules[i];
        if (r->section == sec && (r->cat == C_ANY || r->cat == cat) && (r->ftypes >> ft & 1) &&
            cond_holds(s, r->cond, t, cat, layer, n_layer, *type)) {
            if (r->type != KEEP)
                *type = r->type;
            break;
        }
    }
    if (sec == S_MAIN && cat == C_ATTN_V)
        for (int i = 0; i < N_RULES; i++)
            if (rules[i].section == S_POST && cond_holds(s, rules[i].cond, t, cat, layer, n_layer, *type))
                *type = rules[i].type;
    if (sec == S_LOW || sec == S_MAIN) {
        s->i_attn_v += cat == C_ATTN_V;
        s->i_ffn_down += cat == C_FFN_DOWN;
        s->i_ffn_gate += cat == C_FFN_GATE;
        s->i_ffn_up += cat == C_FFN_UP;
    }
    return 0;
}

static int fallback(const qmix_tensor *t, tport_type_id *type, int *n_fallback, char *err, size_t err_len) {
    if (t->ne[0] % block_of(*type) == 0)
        return 0;
    ++*n_fallback;
    tport_type_id to = *type;
    bool found = block_of(*type) <= 32; /* no smaller block: F16 below */
    for (size_t i = 0; i < sizeof fallbacks / sizeof fallbacks[0]; i++)
        if (fallbacks[i].from == *type)
            to = fallbacks[i].to, found = true;
    if (!found) {
        const tport_type_info *ti = tport_type_get(*type);
        snprintf(err, err_len, "tensor %s: row of %lld is not whole blocks of %s, and llama-quantize has no "
                 "fallback type for %s", t->name, (long long)t->ne[0], ti ? ti->name : "?", ti ? ti->name : "?");
        return -1;
    }
    *type = t->ne[0] % block_of(to) ? T(F16) : to;
    return 0;
}

/* llama_model_loader's weight_name_comparer: by the layer of "blk.N."
 * (-1 for none), then bytewise by name. */
static const qmix_tensor *sort_base;
static int layer_in_name(const char *name) {
    int l = -1;
    if (sscanf(name, "blk.%d.", &l) != 1)
        l = -1;
    return l;
}
static int by_layer_then_name(const void *a, const void *b) {
    const char *na = sort_base[*(const int *)a].name, *nb = sort_base[*(const int *)b].name;
    const int la = layer_in_name(na), lb = layer_in_name(nb);
    return la != lb ? (la < lb ? -1 : 1) : strcmp(na, nb);
}

int qmix_plan(const qmix_ftype *ft, const qmix_model *m, const qmix_options *o, const qmix_tensor *tensors, int n,
              tport_type_id *out, bool *quantize, int *n_fallback, char *err, size_t err_len) {
    state s = {.ft = ft, .m = m, .o = o, .tied = true};
    *n_fallback = 0;
    for (int i = 0; i < n; i++) {
        const enum cat c = category_of(tensors[i].name);
        s.n_attn_v += c == C_ATTN_V;
        s.tied &= c != C_OUTPUT;
    }
    if (m->n_layer == 0) {
        snprintf(err, err_len, "the file does not say its number of layers (%s.block_count)", m->arch);
        return -1;
    }
    /* llama.cpp walks the tensors in its weights_map's order */
    int *order = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!order) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    sort_base = tensors;
    qsort(order, (size_t)n, sizeof(int), by_layer_then_name);
    int rc = 0;
    for (int k = 0; !rc && k < n; k++) {
        const int i = order[k];
        const qmix_tensor *t = &tensors[i];
        const enum cat c = category_of(t->name);
        out[i] = t->type;
        quantize[i] = allows_quantization(t);
        if (!quantize[i])
            continue;
        /* the overrides of llama_tensor_get_type, before any rule */
        if (o->token_embd_type >= 0 && c == C_EMBD) {
            out[i] = (tport_type_id)o->token_embd_type;
            continue;
        }
        if (o->output_type >= 0 && c == C_OUTPUT) {
            out[i] = (tport_type_id)o->output_type;
            continue;
        }
        tport_type_id type = ft->base;
        if (!is_quantized(type)) {
            out[i] = type;
            continue;
        }
        if (!o->pure)
            rc = mix_type(&s, t, c, &type, err, err_len);
        if (!rc)
            rc = fallback(t, &type, n_fallback, err, err_len);
        out[i] = type;
    }
    free(order);
    return rc;
}

bool qmix_requires_imatrix(const qmix_ftype *ft, const char *name, tport_type_id type) {
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight") ||
        !strcmp(name, "output.weight"))
        return false;
    switch (type) {
    case T(IQ3_XXS): case T(IQ2_XXS): case T(IQ2_XS): case T(IQ2_S): case T(IQ1_M): case T(IQ1_S): return true;
    case T(Q2_K): return ft->ftype == F_Q2_K_S;
    default: return false;
    }
}
