/* Hugging Face config.json -> an architecture of tensorport's table, its
 * GGUF keys and its GGUF tensor names and layouts, as llama.cpp's
 * convert_hf_to_gguf.py writes them (the keys it sets for that model
 * class, the names of gguf-py's tensor map, and its layout changes: Llama's
 * q/k un-permuted, GPT-2's Conv1D weights transposed and its tied output
 * written, Gemma's RMS-norm weights stored + 1).  One row per Hugging Face
 * model class; a class not listed is refused, naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/mf_internal.h"

#ifdef TPORT_HAVE_CJSON

#include <cjson/cJSON.h>

enum {
    HF_TRANSPOSE = 1u << 0, /* a Conv1D weight ([in, out]): stored transposed */
    HF_DROP = 1u << 1,      /* a buffer the converter leaves out               */
    HF_QKV_GROUPS = 1u << 2,/* fused QKV rows in kv groups [q.. k v] per group (GPT-NeoX,
                               BLOOM: one group per head; Falcon) -> [Q|K|V] */
    HF_EXPERT = 1u << 3,    /* one expert's matrix ("experts.%d." in the name): stacked
                               into GGUF's [in, out, n_expert] (a copy at load) */
    HF_KV_B = 1u << 5,      /* MLA's kv_b_proj [n_head (nope + v), kv_lora]: split into
                               attn_k_b [n_head, kv_lora, nope] (transposed) and attn_v_b
                               [n_head, v, kv_lora], as the converter does (copies) */
    HF_EXPERTS_T = 1u << 6, /* gpt-oss's [n_expert, in, out] experts: each transposed */
    HF_INTERLEAVED = 1u << 7, /* gpt-oss's gate_up: gate and up alternate (rows of a
                               weight, values of a bias): split into gate and up */
    HF_MXFP4_BLOCKS = 1u << 8, /* gpt-oss's MXFP4 experts, U8 codes: joined with their */
    HF_MXFP4_SCALES = 1u << 9, /* U8 exponents into one MXFP4 tensor (hf_mxfp4.c)  */
    HF_SPLIT_GATE_UP = 1u << 4, /* JetMoE's fused experts [n_expert, 2 ff, in]: the first ff
                               rows of each expert are the gate ("ffn_gate_exps"), the
                               rest the up projection ("ffn_up_exps"; a copy at load) */
};

static bool ends_with(const char *s, const char *suffix);

typedef struct hf_name {
    const char *hf, *gguf;  /* layer names: after the layer prefix, "blk.%d." + gguf */
    unsigned flags;
} hf_name;

typedef struct hf_ctx {
    tport_model_file *mf;
    const mf_cursor *c;
    const cJSON *cfg;
    const char *arch;
} hf_ctx;

typedef struct hf_arch {
    const char *gguf;                /* the architecture (general.architecture)   */
    const char *const *classes;      /* config.json "architectures" entries        */
    const char *model_type;          /* config.json "model_type" without them      */
    const char *const *layer_prefixes; /* printf patterns with one %d              */
    const hf_name *globals, *layer;
    bool permute_qk;                 /* Llama: HF's rotate-half q/k rows          */
    bool norm_plus_one;              /* Gemma: weights stored as w + 1            */
    bool tied_output_copy;           /* GPT-2, BLOOM: output.weight written from
                                        the embedding when the file has none     */
    tport_status (*keys)(hf_ctx *h);
} hf_arch;

/* ---- config values ------------------------------------------------------------ */
static bool cfg_u32(const cJSON *cfg, const char *key, uint32_t *out) {
    uint64_t v;
    if (!mf_json_uint(cJSON_GetObjectItemCaseSensitive(cfg, key), &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

static bool cfg_f32(const cJSON *cfg, const char *key, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!cJSON_IsNumber(j))
        return false;
    *out = (float)j->valuedouble;
    return true;
}

/* "<arch>.<suffix>" = config[key] (first of the `|`-separated keys given);
 * a required key that is absent is an error naming it. */
static tport_status key_u32(hf_ctx *h, const char *suffix, const char *keys, bool required, uint32_t *out) {
    char buf[128], full[96];
    snprintf(buf, sizeof buf, "%s", keys);
    uint32_t v = 0;
    bool found = false;
    for (char *k = strtok(buf, "|"); k && !found; k = strtok(NULL, "|"))
        found = cfg_u32(h->cfg, k, &v);
    if (!found) {
        if (required)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json has no %s (for %s.%s)", h->mf->path,
                               keys, h->arch, suffix);
        return TPORT_STATUS_OK;
    }
    if (out)
        *out = v;
    snprintf(full, sizeof full, "%s.%s", h->arch, suffix);
    return mf_kv_add_u32(h->mf, full, v);
}

static tport_status key_f32(hf_ctx *h, const char *suffix, const char *key, float dflt, bool always) {
    char full[96];
    float v = dflt;
    if (!cfg_f32(h->cfg, key, &v) && !always)
        return TPORT_STATUS_OK;
    snprintf(full, sizeof full, "%s.%s", h->arch, suffix);
    return mf_kv_add_f32(h->mf, full, v);
}

/* The keys TextModel.set_gguf_parameters writes for every model class. */
static tport_status common_keys(hf_ctx *h, uint32_t *n_embd, uint32_t *n_head) {
    MF_TRY(key_u32(h, "context_length", "max_position_embeddings|n_ctx|n_positions", false, NULL));
    MF_TRY(key_u32(h, "embedding_length", "hidden_size|n_embd", true, n_embd));
    MF_TRY(key_u32(h, "block_count", "num_hidden_layers|n_layer", true, NULL));
    MF_TRY(key_u32(h, "feed_forward_length", "intermediate_size|n_inner", false, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "num_attention_heads|n_head", true, n_head));
    uint32_t kv = *n_head;
    if (!cfg_u32(h->cfg, "num_key_value_heads", &kv))
        kv = *n_head;
    char full[96];
    snprintf(full, sizeof full, "%s.attention.head_count_kv", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, kv));
    if (*n_head == 0 || *n_embd % *n_head)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: hidden_size %u is not a multiple of "
                           "num_attention_heads %u", h->mf->path, *n_embd, *n_head);
    return TPORT_STATUS_OK;
}

static tport_status add_u32(hf_ctx *h, const char *suffix, uint32_t v);

static tport_status rope_keys(hf_ctx *h) {
    MF_TRY(key_f32(h, "rope.freq_base", "rope_theta", 10000.0f, false));
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(h->cfg, "rope_scaling");
    if (cJSON_IsNull(rs) || !rs)
        return TPORT_STATUS_OK;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    float factor;
    if (cJSON_IsString(t) && !strcmp(t->valuestring, "linear") && cfg_f32(rs, "factor", &factor) && factor > 0) {
        char full[96];
        snprintf(full, sizeof full, "%s.rope.scaling.type", h->arch);
        MF_TRY(mf_kv_add_str(h->mf, full, "linear"));
        snprintf(full, sizeof full, "%s.rope.scaling.factor", h->arch);
        return mf_kv_add_f32(h->mf, full, factor);
    }
    if (cJSON_IsString(t) && !strcmp(t->valuestring, "default"))
        return TPORT_STATUS_OK;
    /* YaRN, as TextModel writes it: the factor, the trained context
     * (required: the converter indexes it), the optional factors and betas */
    uint32_t orig;
    if (cJSON_IsString(t) && !strcmp(t->valuestring, "yarn") && cfg_f32(rs, "factor", &factor) && factor > 0) {
        if (!cfg_u32(rs, "original_max_position_embeddings", &orig) &&
            !cfg_u32(h->cfg, "original_max_position_embeddings", &orig))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: YaRN rope_scaling without "
                               "original_max_position_embeddings", h->mf->path);
        char full[96];
        snprintf(full, sizeof full, "%s.rope.scaling.type", h->arch);
        MF_TRY(mf_kv_add_str(h->mf, full, "yarn"));
        snprintf(full, sizeof full, "%s.rope.scaling.factor", h->arch);
        MF_TRY(mf_kv_add_f32(h->mf, full, factor));
        MF_TRY(add_u32(h, "rope.scaling.original_context_length", orig));
        static const char *const opt[][2] = {{"extrapolation_factor", "rope.scaling.yarn_ext_factor"},
                                             {"attention_factor", "rope.scaling.yarn_attn_factor"},
                                             {"attn_factor", "rope.scaling.yarn_attn_factor"},
                                             {"beta_fast", "rope.scaling.yarn_beta_fast"},
                                             {"beta_slow", "rope.scaling.yarn_beta_slow"}};
        bool attn = false;
        for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
            float v;
            bool is_attn = !strcmp(opt[i][1], "rope.scaling.yarn_attn_factor");
            if ((is_attn && attn) || !cfg_f32(rs, opt[i][0], &v))
                continue;
            attn |= is_attn;
            snprintf(full, sizeof full, "%s.%s", h->arch, opt[i][1]);
            MF_TRY(mf_kv_add_f32(h->mf, full, v));
        }
        return TPORT_STATUS_OK;
    }
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: rope_scaling type '%s' is not supported",
                       h->mf->path, cJSON_IsString(t) ? t->valuestring : "?");
}

static tport_status llama_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, head_dim;
    MF_TRY(key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(rope_keys(h));
    MF_TRY(key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    if (!cfg_u32(h->cfg, "head_dim", &head_dim))
        head_dim = n_embd / n_head;
    char full[96];
    snprintf(full, sizeof full, "%s.rope.dimension_count", h->arch);
    return mf_kv_add_u32(h->mf, full, head_dim);
}

static tport_status qwen2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(rope_keys(h));
    return key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true);
}

static tport_status gemma_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, head_dim;
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    if (!cfg_u32(h->cfg, "head_dim", &head_dim))
        head_dim = n_embd / n_head;
    char full[96];
    snprintf(full, sizeof full, "%s.attention.key_length", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, head_dim));
    snprintf(full, sizeof full, "%s.attention.value_length", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, head_dim));
    return rope_keys(h);
}

static tport_status gpt2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, n_ff;
    MF_TRY(key_u32(h, "block_count", "n_layer", true, NULL));
    MF_TRY(key_u32(h, "context_length", "n_ctx|n_positions", true, NULL));
    MF_TRY(key_u32(h, "embedding_length", "n_embd", true, &n_embd));
    if (!cfg_u32(h->cfg, "n_inner", &n_ff)) /* null in most configs: 4 * n_embd */
        n_ff = 4 * n_embd;
    char full[96];
    snprintf(full, sizeof full, "%s.feed_forward_length", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, n_ff));
    MF_TRY(key_u32(h, "attention.head_count", "n_head", true, &n_head));
    return key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}


static tport_status add_u32(hf_ctx *h, const char *suffix, uint32_t v) {
    char full[96];
    snprintf(full, sizeof full, "%s.%s", h->arch, suffix);
    return mf_kv_add_u32(h->mf, full, v);
}

/* Phi2Model: rotary dims from partial_rotary_factor; no BOS. */
static tport_status phi2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, ff;
    MF_TRY(common_keys(h, &n_embd, &n_head));
    if (!cfg_u32(h->cfg, "intermediate_size", &ff))
        MF_TRY(add_u32(h, "feed_forward_length", 4 * n_embd));
    float pct = 1.0f;
    cfg_f32(h->cfg, "partial_rotary_factor", &pct);
    MF_TRY(add_u32(h, "rope.dimension_count", (uint32_t)(pct * (float)n_embd) / n_head));
    MF_TRY(key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-5f, true));
    return mf_kv_add_bool(h->mf, "tokenizer.ggml.add_bos_token", false);
}

/* GPTNeoXModel: rotary_pct of the head; parallel residual unless said. */
static tport_status gptneox_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(key_u32(h, "context_length", "max_position_embeddings", true, NULL));
    MF_TRY(key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(key_u32(h, "block_count", "num_hidden_layers", true, NULL));
    MF_TRY(key_u32(h, "feed_forward_length", "intermediate_size", true, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "num_attention_heads", true, &n_head));
    if (!n_head || n_embd % n_head)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: hidden_size %u does not split into %u heads",
                           h->mf->path, n_embd, n_head);
    float pct = 1.0f;
    cfg_f32(h->cfg, "rotary_pct", &pct);
    MF_TRY(add_u32(h, "rope.dimension_count", (uint32_t)(pct * (float)(n_embd / n_head))));
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(h->cfg, "use_parallel_residual");
    char full[96];
    snprintf(full, sizeof full, "%s.use_parallel_residual", h->arch);
    MF_TRY(mf_kv_add_bool(h->mf, full, !cJSON_IsFalse(par)));
    MF_TRY(rope_keys(h));
    return key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-5f, true);
}

/* BloomModel: the context is seq_length (n_embd without it, as the
 * converter has it: ALiBi needs no trained length). */
static tport_status bloom_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, ctx;
    MF_TRY(key_u32(h, "embedding_length", "hidden_size|n_embed", true, &n_embd));
    MF_TRY(add_u32(h, "context_length", cfg_u32(h->cfg, "seq_length", &ctx) ? ctx : n_embd));
    MF_TRY(add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(key_u32(h, "block_count", "n_layer|num_hidden_layers", true, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "n_head|num_attention_heads", true, &n_head));
    MF_TRY(add_u32(h, "attention.head_count_kv", n_head));
    return key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* The kv heads of a Falcon config: num_kv_heads / n_head_kv; without
 * them multi-query (1), except a config that says multi_query false (the
 * converter takes 1 there too, which cannot fit such a file's QKV). */
static uint32_t falcon_kv_heads(const cJSON *cfg, uint32_t n_head) {
    uint32_t kv;
    if (cfg_u32(cfg, "num_kv_heads", &kv) || cfg_u32(cfg, "n_head_kv", &kv))
        return kv;
    return cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cfg, "multi_query")) ? n_head : 1;
}

static tport_status falcon_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(add_u32(h, "context_length", 2048)); /* not in config.json */
    char full[96];
    snprintf(full, sizeof full, "%s.tensor_data_layout", h->arch);
    MF_TRY(mf_kv_add_str(h->mf, full, "jploski"));
    MF_TRY(key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(key_u32(h, "block_count", "num_hidden_layers|n_layer", true, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "num_attention_heads|n_head", true, &n_head));
    MF_TRY(add_u32(h, "attention.head_count_kv", falcon_kv_heads(h->cfg, n_head)));
    return key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* MPTModel: attn_config holds kv_n_heads, clip_qkv and the ALiBi bias. */
static tport_status mpt_keys(hf_ctx *h) {
    uint32_t n_embd = 0, kv;
    MF_TRY(key_u32(h, "context_length", "max_seq_len", true, NULL));
    MF_TRY(key_u32(h, "embedding_length", "d_model", true, &n_embd));
    MF_TRY(key_u32(h, "block_count", "n_layers", true, NULL));
    MF_TRY(add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(key_u32(h, "attention.head_count", "n_heads", true, NULL));
    const cJSON *ac = cJSON_GetObjectItemCaseSensitive(h->cfg, "attn_config");
    if (ac && cfg_u32(ac, "kv_n_heads", &kv))
        MF_TRY(add_u32(h, "attention.head_count_kv", kv));
    char full[96];
    snprintf(full, sizeof full, "%s.attention.layer_norm_epsilon", h->arch);
    MF_TRY(mf_kv_add_f32(h->mf, full, 1e-5f));
    float v;
    if (ac && cfg_f32(ac, "clip_qkv", &v)) {
        snprintf(full, sizeof full, "%s.attention.clamp_kqv", h->arch);
        MF_TRY(mf_kv_add_f32(h->mf, full, v));
    }
    bool alibi = ac && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ac, "alibi"));
    if (!alibi || !cfg_f32(ac, "alibi_bias_max", &v))
        v = alibi ? 8.0f : 0.0f; /* transformers' MptAttentionConfig default */
    snprintf(full, sizeof full, "%s.attention.max_alibi_bias", h->arch);
    return mf_kv_add_f32(h->mf, full, v);
}

/* StarCoderModel (GPTBigCode): multi-query unless the config says not. */
static tport_status starcoder_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(key_u32(h, "context_length", "n_positions", true, NULL));
    MF_TRY(key_u32(h, "embedding_length", "n_embd", true, &n_embd));
    MF_TRY(add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(key_u32(h, "block_count", "n_layer", true, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "n_head", true, &n_head));
    bool mq = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(h->cfg, "multi_query"));
    MF_TRY(add_u32(h, "attention.head_count_kv", mq ? 1 : n_head));
    return key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* GPT-J: llama.cpp has no converter for it; the keys are tensorport's
 * gptj ones (those the ggml example's files give). */
static tport_status gptj_keys(hf_ctx *h) {
    uint32_t n_embd = 0, ff;
    MF_TRY(key_u32(h, "context_length", "n_positions", true, NULL));
    MF_TRY(key_u32(h, "embedding_length", "n_embd", true, &n_embd));
    MF_TRY(add_u32(h, "feed_forward_length", cfg_u32(h->cfg, "n_inner", &ff) ? ff : 4 * n_embd));
    MF_TRY(key_u32(h, "block_count", "n_layer", true, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "n_head", true, NULL));
    MF_TRY(key_u32(h, "rope.dimension_count", "rotary_dim", true, NULL));
    return key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* Qwen3Model (Qwen2Model's keys): head_dim, which need not be
 * hidden_size / heads (Qwen3-0.6B: 128, 1024 / 16), as key/value length. */
static tport_status qwen3_keys(hf_ctx *h) {
    uint32_t head_dim;
    MF_TRY(qwen2_keys(h));
    if (!cfg_u32(h->cfg, "head_dim", &head_dim))
        return TPORT_STATUS_OK;
    MF_TRY(add_u32(h, "attention.key_length", head_dim));
    return add_u32(h, "attention.value_length", head_dim);
}

/* Olmo2Model: TextModel's keys.  OLMo 3's sliding window (the same class
 * with sliding_window and layer_types) is not implemented: refused. */
static tport_status olmo2_keys(hf_ctx *h) {
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(h->cfg, "sliding_window");
    if (sw && !cJSON_IsNull(sw))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: olmo2 with a sliding_window (OLMo 3) is not "
                           "supported", h->mf->path);
    return qwen2_keys(h);
}

/* GraniteModel (LlamaModel's keys, head_dim ignored as the converter
 * does) and the four multipliers under their GGUF names. */
static tport_status granite_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(rope_keys(h));
    MF_TRY(key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    MF_TRY(add_u32(h, "rope.dimension_count", n_embd / n_head));
    static const char *const mult[][2] = {{"attention.scale", "attention_multiplier"},
                                          {"embedding_scale", "embedding_multiplier"},
                                          {"residual_scale", "residual_multiplier"},
                                          {"logit_scale", "logits_scaling"}};
    for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++) {
        float v;
        if (cfg_f32(h->cfg, mult[i][1], &v) && v != 0.0f) /* the converter skips 0 and absent */
            MF_TRY(key_f32(h, mult[i][0], mult[i][1], v, true));
    }
    return TPORT_STATUS_OK;
}

/* Gemma2Model: every key required, as the converter reads them. */
static tport_status gemma2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, head_dim;
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(key_u32(h, "attention.key_length", "head_dim", true, &head_dim));
    MF_TRY(add_u32(h, "attention.value_length", head_dim));
    MF_TRY(key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    static const char *const req[][2] = {{"attention.layer_norm_rms_epsilon", "rms_norm_eps"},
                                         {"attn_logit_softcapping", "attn_logit_softcapping"},
                                         {"final_logit_softcapping", "final_logit_softcapping"}};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        float v;
        if (!cfg_f32(h->cfg, req[i][1], &v))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json has no %s (for gemma2.%s)", h->mf->path,
                               req[i][1], req[i][0]);
        MF_TRY(key_f32(h, req[i][0], req[i][1], v, true));
    }
    return rope_keys(h);
}

/* Gemma3Model (text): the converter's defaults where config.json is
 * silent (head_dim 256, 8 heads, 4 kv heads, RoPE base 1e6), the local
 * layers' base from rope_local_base_freq, a window unless
 * sliding_window_pattern is 1, the final soft-cap only when set. */
static tport_status gemma3_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, v_u32, pattern = 0;
    float v;
    MF_TRY(key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(key_u32(h, "block_count", "num_hidden_layers", true, NULL));
    MF_TRY(key_u32(h, "feed_forward_length", "intermediate_size", false, NULL));
    MF_TRY(add_u32(h, "context_length", cfg_u32(h->cfg, "max_position_embeddings", &v_u32) ? v_u32 : 131072));
    MF_TRY(add_u32(h, "attention.head_count", cfg_u32(h->cfg, "num_attention_heads", &n_head) ? n_head : 8));
    MF_TRY(add_u32(h, "attention.head_count_kv", cfg_u32(h->cfg, "num_key_value_heads", &v_u32) ? v_u32 : 4));
    MF_TRY(key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    uint32_t head_dim = cfg_u32(h->cfg, "head_dim", &v_u32) ? v_u32 : 256;
    MF_TRY(add_u32(h, "attention.key_length", head_dim));
    MF_TRY(add_u32(h, "attention.value_length", head_dim));
    MF_TRY(rope_keys(h)); /* rope.freq_base where rope_theta is given */
    if (!cfg_f32(h->cfg, "rope_theta", &v))
        MF_TRY(key_f32(h, "rope.freq_base", "rope_theta", 1000000.0f, true));
    MF_TRY(key_f32(h, "rope.freq_base_swa", "rope_local_base_freq", 0.0f, false));
    if (cfg_f32(h->cfg, "final_logit_softcapping", &v) && v != 0.0f)
        MF_TRY(key_f32(h, "final_logit_softcapping", "final_logit_softcapping", v, true));
    if (!cfg_u32(h->cfg, "sliding_window_pattern", &pattern) || pattern != 1)
        MF_TRY(key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    return TPORT_STATUS_OK;
}

/* Cohere2Model: TextModel's keys, LayerNorm epsilon, the logit scale and
 * window (required), rotary dims rotary_pct of the head (1 when absent). */
static tport_status cohere2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    float pct = 1.0f, v;
    MF_TRY(key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(rope_keys(h));
    MF_TRY(key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-5f, true));
    if (!cfg_f32(h->cfg, "logit_scale", &v))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json has no logit_scale (for cohere2.logit_scale)",
                           h->mf->path);
    MF_TRY(key_f32(h, "logit_scale", "logit_scale", v, true));
    MF_TRY(key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    cfg_f32(h->cfg, "rotary_pct", &pct);
    if (!(pct > 0.0f && pct <= 1.0f))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: rotary_pct %g", h->mf->path, (double)pct);
    return add_u32(h, "rope.dimension_count", (uint32_t)(pct * (float)(n_embd / n_head)));
}

/* Phi3MiniModel: its own keys (no TextModel ones: no scaling type), the
 * trained context from rope_scaling or the top level, rotary dims
 * partial_rotary_factor * n_embd / n_head, sliding_window 0 when null; with
 * LongRoPE (rope_scaling long_factor/short_factor, type longrope or su)
 * the attention factor sqrt(1 + ln(s) / ln(orig)), s = context / orig, and
 * the factors as the tensors rope_factors_long/short.weight. */
static tport_status phi3_factors(hf_ctx *h, const cJSON *arr, const char *name, uint32_t n) {
    if (!cJSON_IsArray(arr) || (uint32_t)cJSON_GetArraySize(arr) != n)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: rope_scaling's %s factors must be %u numbers",
                           h->mf->path, name, n);
    float *f = mf_alloc_array(h->mf, n, sizeof(float));
    if (!f)
        return TPORT_STATUS_OUT_OF_MEMORY;
    uint32_t i = 0;
    for (const cJSON *e = arr->child; e; e = e->next, i++) {
        if (!cJSON_IsNumber(e))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: rope_scaling's %s factor %u is not a number",
                               h->mf->path, name, i);
        f[i] = (float)e->valuedouble;
    }
    char gguf[48];
    snprintf(gguf, sizeof gguf, "rope_factors_%s.weight", name);
    MF_TRY(mf_reserve_tensors(h->mf, 1));
    tport_mf_tensor t = {.type = TPORT_TYPE_F32, .n_dims = 1, .ne = {n, 1, 1, 1}, .nbytes = (uint64_t)n * 4,
                         .data = f};
    if (!(t.name = mf_strndup(h->mf, gguf, strlen(gguf))))
        return TPORT_STATUS_OUT_OF_MEMORY;
    h->mf->tensors[h->mf->n_tensors++] = t;
    return TPORT_STATUS_OK;
}

static tport_status phi3_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, ctx = 0, orig = 0, window = 0;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(h->cfg, "rope_scaling");
    if (!cJSON_IsObject(rs))
        rs = NULL;
    MF_TRY(common_keys(h, &n_embd, &n_head));
    if (!cfg_u32(h->cfg, "max_position_embeddings", &ctx) ||
        !((rs && cfg_u32(rs, "original_max_position_embeddings", &orig)) ||
          cfg_u32(h->cfg, "original_max_position_embeddings", &orig)) || !orig)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: phi3 needs max_position_embeddings and "
                           "original_max_position_embeddings", h->mf->path);
    MF_TRY(add_u32(h, "rope.scaling.original_context_length", orig));
    MF_TRY(key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-5f, true));
    float pct = 1.0f;
    cfg_f32(h->cfg, "partial_rotary_factor", &pct);
    if (!(pct > 0.0f && pct <= 1.0f))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: partial_rotary_factor %g", h->mf->path,
                           (double)pct);
    uint32_t rot = (uint32_t)(pct * (float)n_embd) / n_head;
    MF_TRY(add_u32(h, "rope.dimension_count", rot));
    MF_TRY(key_f32(h, "rope.freq_base", "rope_theta", 10000.0f, true));
    cfg_u32(h->cfg, "sliding_window", &window); /* null: 0 */
    MF_TRY(add_u32(h, "attention.sliding_window", window));
    const cJSON *lf = rs ? cJSON_GetObjectItemCaseSensitive(rs, "long_factor") : NULL;
    if (!lf || cJSON_IsNull(lf) || (cJSON_IsArray(lf) && !cJSON_GetArraySize(lf)))
        return TPORT_STATUS_OK;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    if (!cJSON_IsString(t) || (strcmp(t->valuestring, "longrope") && strcmp(t->valuestring, "su")))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: phi3 rope_scaling type '%s' is not supported",
                           h->mf->path, cJSON_IsString(t) ? t->valuestring : "?");
    double scale = (double)ctx / (double)orig;
    float attn = scale > 1.0 && orig > 1 ? (float)sqrt(1.0 + log(scale) / log((double)orig)) : 1.0f;
    char full[96];
    snprintf(full, sizeof full, "%s.rope.scaling.attn_factor", h->arch);
    MF_TRY(mf_kv_add_f32(h->mf, full, attn));
    MF_TRY(phi3_factors(h, lf, "long", rot / 2));
    return phi3_factors(h, cJSON_GetObjectItemCaseSensitive(rs, "short_factor"), "short", rot / 2);
}

/* The expert counts of a mixture of experts (required: the stacks need
 * them), and an expert's width where the class has its own key. */
static tport_status expert_keys(hf_ctx *h, const char *count, const char *expert_ff) {
    uint32_t n = 0, used = 0;
    MF_TRY(key_u32(h, "expert_count", count, true, &n));
    MF_TRY(key_u32(h, "expert_used_count", "num_experts_per_tok", true, &used));
    if (!n || !used || used > n || n > 4096)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: %u experts, %u used", h->mf->path, n, used);
    return expert_ff ? key_u32(h, "expert_feed_forward_length", expert_ff, true, NULL) : TPORT_STATUS_OK;
}

/* MixtralModel (LlamaModel's keys; q/k permuted). */
static tport_status mixtral_keys(hf_ctx *h) {
    MF_TRY(llama_keys(h));
    return expert_keys(h, "num_local_experts", NULL);
}

/* Qwen3MoeModel: Qwen3's keys, moe_intermediate_size. */
static tport_status qwen3moe_keys(hf_ctx *h) {
    MF_TRY(qwen3_keys(h));
    return expert_keys(h, "num_experts", "moe_intermediate_size");
}

/* OlmoeModel: TextModel's keys with the RMS epsilon fixed at 1e-5 (the
 * converter's add_layer_norm_rms_eps(1e-5)). */
static tport_status olmoe_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(rope_keys(h));
    char full[96];
    snprintf(full, sizeof full, "%s.attention.layer_norm_rms_epsilon", h->arch);
    MF_TRY(mf_kv_add_f32(h->mf, full, 1e-5f));
    return expert_keys(h, "num_experts", NULL);
}

/* Mistral3Model's text part (Ministral3Model: LlamaModel's keys, the head
 * size as key/value length).  Mistral 4 (text model_type mistral4, a
 * DeepSeek-V2 graph) and rope_parameters other than the default (Ministral
 * 3's YaRN with Llama 4 temperature scaling) are refused, naming them. */
static tport_status mistral3_keys(hf_ctx *h) {
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(h->cfg, "model_type");
    if (cJSON_IsString(mt) && strcmp(mt->valuestring, "mistral") && strcmp(mt->valuestring, "mistral3"))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: a mistral3 text model of model_type '%s' is "
                           "not supported (only 'mistral')", h->mf->path, mt->valuestring);
    const cJSON *rp = cJSON_GetObjectItemCaseSensitive(h->cfg, "rope_parameters");
    float theta;
    if (cJSON_IsObject(rp)) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(rp, "rope_type");
        if (cJSON_IsString(t) && strcmp(t->valuestring, "default"))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: rope_parameters type '%s' is not "
                               "supported", h->mf->path, t->valuestring);
    }
    MF_TRY(llama_keys(h));
    if (cJSON_IsObject(rp) && !cfg_f32(h->cfg, "rope_theta", &theta) && cfg_f32(rp, "rope_theta", &theta))
        MF_TRY(key_f32(h, "rope.freq_base", "rope_theta", theta, true));
    uint32_t head_dim;
    if (cfg_u32(h->cfg, "head_dim", &head_dim)) {
        MF_TRY(add_u32(h, "attention.key_length", head_dim));
        MF_TRY(add_u32(h, "attention.value_length", head_dim));
    }
    return TPORT_STATUS_OK;
}

/* Qwen2MoeModel: TextModel's keys, the experts' and the shared expert's
 * widths.  norm_topk_prob true is refused: the converter drops it and
 * llama.cpp's graph never renormalises the chosen experts' weights. */
static tport_status qwen2moe_keys(hf_ctx *h) {
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h->cfg, "norm_topk_prob")))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: qwen2moe with norm_topk_prob true is not "
                           "supported (llama.cpp's graph does not renormalise)", h->mf->path);
    MF_TRY(qwen2_keys(h));
    MF_TRY(expert_keys(h, "num_experts", "moe_intermediate_size"));
    return key_u32(h, "expert_shared_feed_forward_length", "shared_expert_intermediate_size", true, NULL);
}

/* sentence-transformers' pooling, as the converter's _try_set_pooling_type
 * reads it: modules.json names the Pooling module's folder, whose
 * config.json says mean, CLS or last token.  None without modules.json
 * (llama.cpp's default for an encoder); another mode is refused. */
static tport_status pooling_key(hf_ctx *h) {
    cJSON *mods = mf_read_beside(h->mf->path, "modules.json");
    const char *dir = NULL;
    for (const cJSON *m = cJSON_IsArray(mods) ? mods->child : NULL; m && !dir; m = m->next) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "type"), *p = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (cJSON_IsString(t) && ends_with(t->valuestring, "Pooling") && cJSON_IsString(p))
            dir = p->valuestring;
    }
    tport_status st = TPORT_STATUS_OK;
    if (dir) { /* a folder name beside config.json, nothing above it */
        char rel[96];
        bool plain = strlen(dir) > 0 && strlen(dir) < 64 && strspn(dir, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == strlen(dir);
        snprintf(rel, sizeof rel, "%s/config.json", plain ? dir : "");
        cJSON *pc = plain ? mf_read_beside(h->mf->path, rel) : NULL;
        const cJSON *mode = pc ? cJSON_GetObjectItemCaseSensitive(pc, "pooling_mode") : NULL;
        uint32_t type = 0;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pc, "pooling_mode_mean_tokens")))
            type = 1;
        else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pc, "pooling_mode_cls_token")))
            type = 2;
        else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(pc, "pooling_mode_lasttoken")))
            type = 3;
        else if (cJSON_IsString(mode))
            type = !strcmp(mode->valuestring, "mean") ? 1 : !strcmp(mode->valuestring, "cls") ? 2
                   : !strcmp(mode->valuestring, "lasttoken") ? 3 : 0;
        if (!type)
            st = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: modules.json's pooling module '%.64s': %s", h->mf->path,
                             dir, !plain ? "not a folder name beside config.json" : !pc ? "no readable config.json"
                                                                 : "only mean, CLS and last-token pooling are supported");
        else
            st = add_u32(h, "pooling_type", type);
        cJSON_Delete(pc);
    }
    cJSON_Delete(mods);
    return st;
}

static tport_status encoder_common(hf_ctx *h) {
    char full[96];
    snprintf(full, sizeof full, "%s.attention.causal", h->arch);
    MF_TRY(mf_kv_add_bool(h->mf, full, false));
    uint32_t types = 1;
    cfg_u32(h->cfg, "type_vocab_size", &types);
    MF_TRY(mf_kv_add_u32(h->mf, "tokenizer.ggml.token_type_count", types));
    return pooling_key(h);
}

/* BertModel: TextModel's keys, LayerNorm epsilon, non-causal attention,
 * the pooling of sentence-transformers' modules.json.  Position
 * embeddings other than absolute are refused. */
static tport_status bert_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    const cJSON *pe = cJSON_GetObjectItemCaseSensitive(h->cfg, "position_embedding_type");
    if (cJSON_IsString(pe) && strcmp(pe->valuestring, "absolute"))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: bert position_embedding_type '%s' is not "
                           "supported (absolute only)", h->mf->path, pe->valuestring);
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-12f, true));
    return encoder_common(h);
}

/* NomicBertModel (not its MoE variant): the converter's asserts as
 * refusals, its trained context (n_positions 8192 with 2048 trained:
 * 2048), rotary_emb_base as the RoPE base. */
static tport_status nomic_bert_keys(hf_ctx *h) {
    const cJSON *c = h->cfg;
    const char *bad = NULL;
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(c, "activation_function");
    float f = 1.0f;
    if (cJSON_GetObjectItemCaseSensitive(c, "moe_every_n_layers"))
        bad = "moe_every_n_layers (nomic-bert-moe)";
    else if (!cJSON_IsString(act) || strcmp(act->valuestring, "swiglu"))
        bad = "activation_function other than swiglu";
    else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "causal")))
        bad = "causal true";
    else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "qkv_proj_bias")) ||
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "mlp_fc1_bias")) ||
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "mlp_fc2_bias")))
        bad = "biases (qkv_proj_bias, mlp_fc1_bias, mlp_fc2_bias)";
    else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "prenorm")))
        bad = "prenorm true";
    else if ((cfg_f32(c, "rotary_emb_fraction", &f) && f != 1.0f) ||
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "rotary_emb_interleaved")) ||
             cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, "rotary_emb_scale_base")))
        bad = "partial, interleaved or scaled rotary embeddings";
    if (bad)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: nomic-bert with %s is not supported",
                           h->mf->path, bad);
    uint32_t npos = 0, mtp = 2048, n_embd = 0, n_head = 0;
    cfg_u32(c, "max_trained_positions", &mtp);
    if (!cfg_u32(c, "n_positions", &npos) || npos != 8192 || mtp != 2048)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: nomic-bert n_positions %u with %u trained is "
                           "not supported (8192 with 2048)", h->mf->path, npos, mtp);
    MF_TRY(add_u32(h, "context_length", 2048));
    MF_TRY(key_u32(h, "embedding_length", "n_embd|hidden_size", true, &n_embd));
    MF_TRY(key_u32(h, "block_count", "n_layer|num_hidden_layers", true, NULL));
    MF_TRY(key_u32(h, "feed_forward_length", "n_inner|intermediate_size", true, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "n_head|num_attention_heads", true, &n_head));
    if (!n_head || n_embd % n_head)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: n_embd %u does not split into %u heads",
                           h->mf->path, n_embd, n_head);
    MF_TRY(add_u32(h, "attention.head_count_kv", n_head));
    MF_TRY(add_u32(h, "rope.dimension_count", n_embd / n_head));
    MF_TRY(key_f32(h, "rope.freq_base", "rotary_emb_base", 10000.0f, true));
    MF_TRY(key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-12f, true));
    return encoder_common(h);
}

/* GraniteMoeModel: Granite's keys, the experts (required); the shared
 * MLP of GraniteMoeShared is refused (no such tensors in the graph). */
static tport_status granitemoe_keys(hf_ctx *h) {
    uint32_t shared = 0;
    if (cfg_u32(h->cfg, "shared_intermediate_size", &shared) && shared)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: granitemoe with a shared MLP "
                           "(shared_intermediate_size %u, GraniteMoeShared) is not supported", h->mf->path, shared);
    MF_TRY(granite_keys(h));
    return expert_keys(h, "num_local_experts", NULL);
}

/* DeepseekV2Model (DeepSeek-V2, V3): multi-head latent attention as one
 * kv head (the converter's num_key_value_heads 1), its ranks and head
 * sizes, the experts (softmax or sigmoid scoring, groups, routed scaling,
 * top-k renormalisation), YaRN with mscale_all_dim as the log multiplier. */
static tport_status deepseek2_keys(hf_ctx *h) {
    const cJSON *c = h->cfg;
    uint32_t n_embd = 0, n_head = 0, n_layer = 0, kv_lora = 512, rope = 0, nope = 0, v = 0, u;
    MF_TRY(key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(key_u32(h, "context_length", "max_position_embeddings", false, NULL));
    MF_TRY(key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(key_u32(h, "block_count", "num_hidden_layers", true, &n_layer));
    MF_TRY(key_u32(h, "feed_forward_length", "intermediate_size", false, NULL));
    MF_TRY(key_u32(h, "attention.head_count", "num_attention_heads", true, &n_head));
    MF_TRY(add_u32(h, "attention.head_count_kv", 1));
    MF_TRY(rope_keys(h));
    MF_TRY(key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    if (!cfg_u32(c, "qk_rope_head_dim", &rope) || !cfg_u32(c, "qk_nope_head_dim", &nope) ||
        !cfg_u32(c, "v_head_dim", &v) || !n_head || !rope || rope % 2)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: deepseek2 needs num_attention_heads, an even "
                           "qk_rope_head_dim, qk_nope_head_dim and v_head_dim", h->mf->path);
    cfg_u32(c, "kv_lora_rank", &kv_lora);
    if (cfg_u32(c, "q_lora_rank", &u)) /* null: no q compression */
        MF_TRY(add_u32(h, "attention.q_lora_rank", u));
    MF_TRY(add_u32(h, "attention.kv_lora_rank", kv_lora));
    MF_TRY(add_u32(h, "attention.key_length", kv_lora + rope));
    MF_TRY(add_u32(h, "attention.value_length", kv_lora));
    MF_TRY(add_u32(h, "attention.key_length_mla", nope + rope));
    MF_TRY(add_u32(h, "attention.value_length_mla", v));
    MF_TRY(add_u32(h, "rope.dimension_count", rope));
    bool moe = cfg_u32(c, "n_routed_experts", &u);
    uint32_t dense = moe ? 0 : n_layer, used = 0;
    cfg_u32(c, "first_k_dense_replace", &dense);
    MF_TRY(add_u32(h, "leading_dense_block_count", dense));
    MF_TRY(key_u32(h, "expert_feed_forward_length", "moe_intermediate_size|intermediate_size", true, NULL));
    if (moe) {
        MF_TRY(add_u32(h, "expert_count", u));
        MF_TRY(key_u32(h, "expert_used_count", "num_experts_per_tok", true, &used));
        if (!u || !used || used > u || u > 4096)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: %u experts, %u used", h->mf->path, u, used);
    }
    MF_TRY(add_u32(h, "expert_shared_count", cfg_u32(c, "n_shared_experts", &u) ? u : 0));
    MF_TRY(key_f32(h, "expert_weights_scale", "routed_scaling_factor", 1.0f, false));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "norm_topk_prob"))) {
        char full[96];
        snprintf(full, sizeof full, "%s.expert_weights_norm", h->arch);
        MF_TRY(mf_kv_add_bool(h->mf, full, true));
    }
    MF_TRY(key_u32(h, "expert_group_count", "n_group", false, NULL));
    MF_TRY(key_u32(h, "expert_group_used_count", "topk_group", false, NULL));
    /* YaRN's mscale_all_dim as the converter writes it (0.1 x, its legacy form) */
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c, "rope_scaling");
    float mall;
    if (cJSON_IsObject(rs) && cfg_f32(rs, "mscale_all_dim", &mall)) {
        char full[96];
        snprintf(full, sizeof full, "%s.rope.scaling.yarn_log_multiplier", h->arch);
        MF_TRY(mf_kv_add_f32(h->mf, full, 0.1f * mall));
    }
    const cJSON *sf = cJSON_GetObjectItemCaseSensitive(c, "scoring_func");
    if (cJSON_IsString(sf)) {
        if (strcmp(sf->valuestring, "softmax") && strcmp(sf->valuestring, "sigmoid"))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: deepseek2 scoring_func '%s' is not "
                               "supported", h->mf->path, sf->valuestring);
        MF_TRY(add_u32(h, "expert_gating_func", strcmp(sf->valuestring, "sigmoid") ? 1 : 2));
    }
    return TPORT_STATUS_OK;
}

/* GptOssModel: TextModel's keys, the head size, the window (required)
 * and the experts' width.  Its layer types must alternate sliding and
 * full from layer 0 (the graph's pattern) and swiglu_limit be 7 (the
 * graph's clamp).  Experts dense (bf16/f16/f32) or MXFP4 (U8 *_blocks and
 * *_scales, joined by map_tensors); quantization_config, when there,
 * must say mxfp4. */
static tport_status gptoss_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, head_dim;
    float limit;
    const cJSON *qc = cJSON_GetObjectItemCaseSensitive(h->cfg, "quantization_config");
    const cJSON *qm = cJSON_GetObjectItemCaseSensitive(qc, "quant_method");
    if (qc && !cJSON_IsNull(qc) && (!cJSON_IsString(qm) || strcmp(qm->valuestring, "mxfp4")))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: gpt-oss quantization_config quant_method "
                           "'%s' is not supported (mxfp4 only)", h->mf->path,
                           cJSON_IsString(qm) ? qm->valuestring : "?");
    if (cfg_f32(h->cfg, "swiglu_limit", &limit) && limit != 7.0f)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: gpt-oss swiglu_limit %g is not supported (7 "
                           "only)", h->mf->path, (double)limit);
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(h->cfg, "layer_types");
    int il = 0;
    for (const cJSON *e = cJSON_IsArray(lt) ? lt->child : NULL; e; e = e->next, il++)
        if (!cJSON_IsString(e) || strcmp(e->valuestring, il % 2 ? "full_attention" : "sliding_attention"))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: gpt-oss layer_types[%d] is not %s (only "
                               "alternating sliding and full layers are supported)", h->mf->path, il,
                               il % 2 ? "full_attention" : "sliding_attention");
    MF_TRY(common_keys(h, &n_embd, &n_head));
    MF_TRY(rope_keys(h));
    MF_TRY(key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-5f, true));
    if (!cfg_u32(h->cfg, "head_dim", &head_dim))
        head_dim = n_embd / n_head;
    MF_TRY(add_u32(h, "attention.key_length", head_dim));
    MF_TRY(add_u32(h, "attention.value_length", head_dim));
    MF_TRY(add_u32(h, "rope.dimension_count", head_dim));
    MF_TRY(key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    MF_TRY(expert_keys(h, "num_local_experts", NULL));
    return key_u32(h, "expert_feed_forward_length", "intermediate_size", true, NULL);
}

/* ---- the table ----------------------------------------------------------------- */
static const char *const LLAMA_LAYERS[] = {"model.layers.%d.", NULL};
static const char *const GPT2_LAYERS[] = {"transformer.h.%d.", "h.%d.", NULL};

/* Llama-style names; the reader already renamed the weights it knows
 * (tensor_names.c), these are the rest. */
static const hf_name LLAMA_GLOBALS[] = {{"model.embed_tokens.weight", "token_embd.weight", 0},
                                        {"model.norm.weight", "output_norm.weight", 0},
                                        {"lm_head.weight", "output.weight", 0},
                                        {NULL, NULL, 0}};
static const hf_name LLAMA_LAYER[] = {{"self_attn.q_proj.bias", "attn_q.bias", 0},
                                      {"self_attn.k_proj.bias", "attn_k.bias", 0},
                                      {"self_attn.v_proj.bias", "attn_v.bias", 0},
                                      {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                      {NULL, NULL, 0}};
static const hf_name GPT2_GLOBALS[] = {
    {"transformer.wte.weight", "token_embd.weight", 0}, {"wte.weight", "token_embd.weight", 0},
    {"transformer.wpe.weight", "position_embd.weight", 0}, {"wpe.weight", "position_embd.weight", 0},
    {"transformer.ln_f.weight", "output_norm.weight", 0}, {"ln_f.weight", "output_norm.weight", 0},
    {"transformer.ln_f.bias", "output_norm.bias", 0},     {"ln_f.bias", "output_norm.bias", 0},
    {"lm_head.weight", "output.weight", 0},               {NULL, NULL, 0}};
static const hf_name GPT2_LAYER[] = {
    {"ln_1.weight", "attn_norm.weight", 0},     {"ln_1.bias", "attn_norm.bias", 0},
    {"attn.c_attn.weight", "attn_qkv.weight", HF_TRANSPOSE}, {"attn.c_attn.bias", "attn_qkv.bias", 0},
    {"attn.c_proj.weight", "attn_output.weight", HF_TRANSPOSE}, {"attn.c_proj.bias", "attn_output.bias", 0},
    {"ln_2.weight", "ffn_norm.weight", 0},      {"ln_2.bias", "ffn_norm.bias", 0},
    {"mlp.c_fc.weight", "ffn_up.weight", HF_TRANSPOSE},       {"mlp.c_fc.bias", "ffn_up.bias", 0},
    {"mlp.c_proj.weight", "ffn_down.weight", HF_TRANSPOSE},   {"mlp.c_proj.bias", "ffn_down.bias", 0},
    {"attn.bias", NULL, HF_DROP},               {"attn.masked_bias", NULL, HF_DROP},
    {NULL, NULL, 0}};

static const char *const PHI2_LAYERS[] = {"model.layers.%d.", NULL};
static const hf_name PHI2_GLOBALS[] = {{"model.embed_tokens.weight", "token_embd.weight", 0},
                                       {"model.final_layernorm.weight", "output_norm.weight", 0},
                                       {"model.final_layernorm.bias", "output_norm.bias", 0},
                                       {"lm_head.weight", "output.weight", 0},
                                       {"lm_head.bias", "output.bias", 0},
                                       {NULL, NULL, 0}};
static const hf_name PHI2_LAYER[] = {
    {"input_layernorm.bias", "attn_norm.bias", 0},     {"self_attn.q_proj.bias", "attn_q.bias", 0},
    {"self_attn.k_proj.bias", "attn_k.bias", 0},       {"self_attn.v_proj.bias", "attn_v.bias", 0},
    {"self_attn.dense.weight", "attn_output.weight", 0}, {"self_attn.dense.bias", "attn_output.bias", 0},
    {"mlp.fc1.weight", "ffn_up.weight", 0},            {"mlp.fc1.bias", "ffn_up.bias", 0},
    {"mlp.fc2.weight", "ffn_down.weight", 0},          {"mlp.fc2.bias", "ffn_down.bias", 0},
    {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},  {NULL, NULL, 0}};

static const char *const NEOX_LAYERS[] = {"gpt_neox.layers.%d.", NULL};
static const hf_name NEOX_GLOBALS[] = {{"gpt_neox.embed_in.weight", "token_embd.weight", 0},
                                       {"gpt_neox.final_layer_norm.weight", "output_norm.weight", 0},
                                       {"gpt_neox.final_layer_norm.bias", "output_norm.bias", 0},
                                       {"embed_out.weight", "output.weight", 0},
                                       {NULL, NULL, 0}};
static const hf_name NEOX_LAYER[] = {
    {"input_layernorm.weight", "attn_norm.weight", 0},
    {"input_layernorm.bias", "attn_norm.bias", 0},
    {"post_attention_layernorm.weight", "ffn_norm.weight", 0},
    {"post_attention_layernorm.bias", "ffn_norm.bias", 0},
    {"attention.query_key_value.weight", "attn_qkv.weight", HF_QKV_GROUPS},
    {"attention.query_key_value.bias", "attn_qkv.bias", HF_QKV_GROUPS},
    {"attention.dense.weight", "attn_output.weight", 0},
    {"attention.dense.bias", "attn_output.bias", 0},
    {"mlp.dense_h_to_4h.weight", "ffn_up.weight", 0},
    {"mlp.dense_h_to_4h.bias", "ffn_up.bias", 0},
    {"mlp.dense_4h_to_h.weight", "ffn_down.weight", 0},
    {"mlp.dense_4h_to_h.bias", "ffn_down.bias", 0},
    {"attention.bias", NULL, HF_DROP},
    {"attention.masked_bias", NULL, HF_DROP},
    {"attention.rotary_emb.inv_freq", NULL, HF_DROP},
    {NULL, NULL, 0}};

static const char *const BLOOM_LAYERS[] = {"transformer.h.%d.", "h.%d.", NULL};
static const hf_name BLOOM_GLOBALS[] = {
    {"transformer.word_embeddings.weight", "token_embd.weight", 0},
    {"word_embeddings.weight", "token_embd.weight", 0},
    {"transformer.word_embeddings_layernorm.weight", "token_embd_norm.weight", 0},
    {"word_embeddings_layernorm.weight", "token_embd_norm.weight", 0},
    {"transformer.word_embeddings_layernorm.bias", "token_embd_norm.bias", 0},
    {"word_embeddings_layernorm.bias", "token_embd_norm.bias", 0},
    {"transformer.ln_f.weight", "output_norm.weight", 0},
    {"ln_f.weight", "output_norm.weight", 0},
    {"transformer.ln_f.bias", "output_norm.bias", 0},
    {"ln_f.bias", "output_norm.bias", 0},
    {"lm_head.weight", "output.weight", 0},
    {NULL, NULL, 0}};
static const hf_name BLOOM_LAYER[] = {
    {"input_layernorm.weight", "attn_norm.weight", 0},
    {"input_layernorm.bias", "attn_norm.bias", 0},
    {"self_attention.query_key_value.weight", "attn_qkv.weight", HF_QKV_GROUPS},
    {"self_attention.query_key_value.bias", "attn_qkv.bias", HF_QKV_GROUPS},
    {"self_attention.dense.weight", "attn_output.weight", 0},
    {"self_attention.dense.bias", "attn_output.bias", 0},
    {"post_attention_layernorm.weight", "ffn_norm.weight", 0},
    {"post_attention_layernorm.bias", "ffn_norm.bias", 0},
    {"mlp.dense_h_to_4h.weight", "ffn_up.weight", 0},
    {"mlp.dense_h_to_4h.bias", "ffn_up.bias", 0},
    {"mlp.dense_4h_to_h.weight", "ffn_down.weight", 0},
    {"mlp.dense_4h_to_h.bias", "ffn_down.bias", 0},
    {NULL, NULL, 0}};

static const char *const FALCON_LAYERS[] = {"transformer.h.%d.", NULL};
static const hf_name FALCON_GLOBALS[] = {{"transformer.word_embeddings.weight", "token_embd.weight", 0},
                                         {"transformer.ln_f.weight", "output_norm.weight", 0},
                                         {"transformer.ln_f.bias", "output_norm.bias", 0},
                                         {"lm_head.weight", "output.weight", 0},
                                         {NULL, NULL, 0}};
static const hf_name FALCON_LAYER[] = {
    {"input_layernorm.weight", "attn_norm.weight", 0},
    {"input_layernorm.bias", "attn_norm.bias", 0},
    {"ln_mlp.weight", "attn_norm.weight", 0}, /* Falcon-40B: the FFN's norm is GGUF's attn_norm */
    {"ln_mlp.bias", "attn_norm.bias", 0},
    {"ln_attn.weight", "attn_norm_2.weight", 0},
    {"ln_attn.bias", "attn_norm_2.bias", 0},
    {"self_attention.query_key_value.weight", "attn_qkv.weight", HF_QKV_GROUPS},
    {"self_attention.dense.weight", "attn_output.weight", 0},
    {"mlp.dense_h_to_4h.weight", "ffn_up.weight", 0},
    {"mlp.dense_4h_to_h.weight", "ffn_down.weight", 0},
    {NULL, NULL, 0}};

static const char *const MPT_LAYERS[] = {"transformer.blocks.%d.", NULL};
static const hf_name MPT_GLOBALS[] = {{"transformer.wte.weight", "token_embd.weight", 0},
                                      {"transformer.wpe.weight", "position_embd.weight", 0},
                                      {"transformer.norm_f.weight", "output_norm.weight", 0},
                                      {"transformer.norm_f.bias", "output_norm.bias", 0},
                                      {"lm_head.weight", "output.weight", 0},
                                      {NULL, NULL, 0}};
static const hf_name MPT_LAYER[] = {
    {"norm_1.weight", "attn_norm.weight", 0},     {"norm_1.bias", "attn_norm.bias", 0},
    {"attn.Wqkv.weight", "attn_qkv.weight", 0},   {"attn.Wqkv.bias", "attn_qkv.bias", 0},
    {"attn.out_proj.weight", "attn_output.weight", 0}, {"attn.out_proj.bias", "attn_output.bias", 0},
    {"norm_2.weight", "ffn_norm.weight", 0},      {"norm_2.bias", "ffn_norm.bias", 0},
    {"ffn.up_proj.weight", "ffn_up.weight", 0},   {"ffn.up_proj.bias", "ffn_up.bias", 0},
    {"ffn.down_proj.weight", "ffn_down.weight", 0}, {"ffn.down_proj.bias", "ffn_down.bias", 0},
    {NULL, NULL, 0}};

/* GPTBigCode: GPT-2's names, but Linear layers (no transposition). */
static const hf_name STARCODER_LAYER[] = {
    {"ln_1.weight", "attn_norm.weight", 0},     {"ln_1.bias", "attn_norm.bias", 0},
    {"attn.c_attn.weight", "attn_qkv.weight", 0}, {"attn.c_attn.bias", "attn_qkv.bias", 0},
    {"attn.c_proj.weight", "attn_output.weight", 0}, {"attn.c_proj.bias", "attn_output.bias", 0},
    {"ln_2.weight", "ffn_norm.weight", 0},      {"ln_2.bias", "ffn_norm.bias", 0},
    {"mlp.c_fc.weight", "ffn_up.weight", 0},    {"mlp.c_fc.bias", "ffn_up.bias", 0},
    {"mlp.c_proj.weight", "ffn_down.weight", 0}, {"mlp.c_proj.bias", "ffn_down.bias", 0},
    {NULL, NULL, 0}};

static const char *const GPTJ_LAYERS[] = {"transformer.h.%d.", NULL};
static const hf_name GPTJ_GLOBALS[] = {{"transformer.wte.weight", "token_embd.weight", 0},
                                       {"transformer.ln_f.weight", "output_norm.weight", 0},
                                       {"transformer.ln_f.bias", "output_norm.bias", 0},
                                       {"lm_head.weight", "output.weight", 0},
                                       {"lm_head.bias", "output.bias", 0},
                                       {NULL, NULL, 0}};
static const hf_name GPTJ_LAYER[] = {
    {"ln_1.weight", "attn_norm.weight", 0},       {"ln_1.bias", "attn_norm.bias", 0},
    {"attn.q_proj.weight", "attn_q.weight", 0},   {"attn.k_proj.weight", "attn_k.weight", 0},
    {"attn.v_proj.weight", "attn_v.weight", 0},   {"attn.out_proj.weight", "attn_output.weight", 0},
    {"mlp.fc_in.weight", "ffn_up.weight", 0},     {"mlp.fc_in.bias", "ffn_up.bias", 0},
    {"mlp.fc_out.weight", "ffn_down.weight", 0},  {"mlp.fc_out.bias", "ffn_down.bias", 0},
    {"attn.bias", NULL, HF_DROP},                 {"attn.masked_bias", NULL, HF_DROP},
    {NULL, NULL, 0}};

/* post_attention_layernorm (renamed ffn_norm by the reader) is a
 * post-norm in these classes; pre_feedforward_layernorm is their ffn_norm */
static const hf_name POST_NORM_RENAMED[] = {{"ffn_norm.weight", "post_attention_norm.weight", 0}, {NULL, NULL, 0}};
static const hf_name QWEN3_LAYER[] = {{"self_attn.q_norm.weight", "attn_q_norm.weight", 0},
                                      {"self_attn.k_norm.weight", "attn_k_norm.weight", 0},
                                      {"self_attn.q_proj.bias", "attn_q.bias", 0},
                                      {"self_attn.k_proj.bias", "attn_k.bias", 0},
                                      {"self_attn.v_proj.bias", "attn_v.bias", 0},
                                      {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                      {NULL, NULL, 0}};
static const hf_name OLMO2_LAYER[] = {{"self_attn.q_norm.weight", "attn_q_norm.weight", 0},
                                      {"self_attn.k_norm.weight", "attn_k_norm.weight", 0},
                                      {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", 0},
                                      {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                      {NULL, NULL, 0}};
static const hf_name GEMMA2_LAYER[] = {{"pre_feedforward_layernorm.weight", "ffn_norm.weight", 0},
                                       {"post_feedforward_layernorm.weight", "post_ffw_norm.weight", 0},
                                       {"self_attn.q_norm.weight", "attn_q_norm.weight", 0},
                                       {"self_attn.k_norm.weight", "attn_k_norm.weight", 0},
                                       {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                       {NULL, NULL, 0}};
/* Gemma 2's converter skips lm_head (llama.cpp ties the classifier) */
static const hf_name GEMMA2_GLOBALS[] = {{"model.embed_tokens.weight", "token_embd.weight", 0},
                                        {"model.norm.weight", "output_norm.weight", 0},
                                        {"lm_head.weight", NULL, HF_DROP},
                                        {NULL, NULL, 0}};

static const char *const LLAMA_CLASSES[] = {"LlamaForCausalLM", "MistralForCausalLM", "LLaMAForCausalLM", NULL};
static const char *const QWEN2_CLASSES[] = {"Qwen2ForCausalLM", NULL};
static const char *const GEMMA_CLASSES[] = {"GemmaForCausalLM", NULL};
static const char *const GPT2_CLASSES[] = {"GPT2LMHeadModel", NULL};
static const char *const PHI2_CLASSES[] = {"PhiForCausalLM", NULL};
static const char *const NEOX_CLASSES[] = {"GPTNeoXForCausalLM", NULL};
static const char *const BLOOM_CLASSES[] = {"BloomForCausalLM", "BloomModel", NULL};
static const char *const FALCON_CLASSES[] = {"FalconForCausalLM", "RWForCausalLM", NULL};
static const char *const MPT_CLASSES[] = {"MPTForCausalLM", NULL};
static const char *const STARCODER_CLASSES[] = {"GPTBigCodeForCausalLM", NULL};
static const char *const GPTJ_CLASSES[] = {"GPTJForCausalLM", NULL};
static const char *const QWEN3_CLASSES[] = {"Qwen3ForCausalLM", NULL};
static const char *const OLMO2_CLASSES[] = {"Olmo2ForCausalLM", NULL};
static const char *const GRANITE_CLASSES[] = {"GraniteForCausalLM", NULL};
static const char *const SMOLLM3_CLASSES[] = {"SmolLM3ForCausalLM", NULL};
static const char *const GEMMA2_CLASSES[] = {"Gemma2ForCausalLM", NULL};
static const char *const GEMMA3_CLASSES[] = {"Gemma3ForCausalLM", NULL};
static const char *const COHERE2_CLASSES[] = {"Cohere2ForCausalLM", NULL};
static const char *const PHI3_CLASSES[] = {"Phi3ForCausalLM", NULL};
static const char *const MIXTRAL_CLASSES[] = {"MixtralForCausalLM", NULL};
static const char *const QWEN3MOE_CLASSES[] = {"Qwen3MoeForCausalLM", NULL};
static const char *const OLMOE_CLASSES[] = {"OlmoeForCausalLM", NULL};
static const char *const MISTRAL3_CLASSES[] = {"Mistral3ForConditionalGeneration", NULL};
static const char *const QWEN2MOE_CLASSES[] = {"Qwen2MoeForCausalLM", NULL};
static const char *const GRANITEMOE_CLASSES[] = {"GraniteMoeForCausalLM", NULL};
static const char *const DEEPSEEK2_CLASSES[] = {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", NULL};
static const char *const GPTOSS_CLASSES[] = {"GptOssForCausalLM", NULL};
static const char *const BERT_CLASSES[] = {"BertModel", "BertForMaskedLM", NULL};
static const char *const NOMIC_CLASSES[] = {"NomicBertModel", NULL};
static const hf_name MIXTRAL_LAYER[] = {{"block_sparse_moe.gate.weight", "ffn_gate_inp.weight", 0},
                                        {"block_sparse_moe.experts.%d.w1.weight", "ffn_gate_exps.weight", HF_EXPERT},
                                        {"block_sparse_moe.experts.%d.w2.weight", "ffn_down_exps.weight", HF_EXPERT},
                                        {"block_sparse_moe.experts.%d.w3.weight", "ffn_up_exps.weight", HF_EXPERT},
                                        {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                        {NULL, NULL, 0}};
/* Qwen3-MoE and OLMoE: mlp.gate routes, mlp.experts.E.*_proj */
static const hf_name MOE_QK_NORM_LAYER[] = {{"self_attn.q_norm.weight", "attn_q_norm.weight", 0},
                                            {"self_attn.k_norm.weight", "attn_k_norm.weight", 0},
                                            {"mlp.gate.weight", "ffn_gate_inp.weight", 0},
                                            {"mlp.experts.%d.gate_proj.weight", "ffn_gate_exps.weight", HF_EXPERT},
                                            {"mlp.experts.%d.down_proj.weight", "ffn_down_exps.weight", HF_EXPERT},
                                            {"mlp.experts.%d.up_proj.weight", "ffn_up_exps.weight", HF_EXPERT},
                                            {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                            {NULL, NULL, 0}};
/* Qwen2-MoE: Qwen3-MoE's experts plus a shared expert with a gate row */
static const hf_name QWEN2MOE_LAYER[] = {{"self_attn.q_proj.bias", "attn_q.bias", 0},
                                         {"self_attn.k_proj.bias", "attn_k.bias", 0},
                                         {"self_attn.v_proj.bias", "attn_v.bias", 0},
                                         {"mlp.gate.weight", "ffn_gate_inp.weight", 0},
                                         {"mlp.experts.%d.gate_proj.weight", "ffn_gate_exps.weight", HF_EXPERT},
                                         {"mlp.experts.%d.down_proj.weight", "ffn_down_exps.weight", HF_EXPERT},
                                         {"mlp.experts.%d.up_proj.weight", "ffn_up_exps.weight", HF_EXPERT},
                                         {"mlp.shared_expert.gate_proj.weight", "ffn_gate_shexp.weight", 0},
                                         {"mlp.shared_expert.down_proj.weight", "ffn_down_shexp.weight", 0},
                                         {"mlp.shared_expert.up_proj.weight", "ffn_up_shexp.weight", 0},
                                         {"mlp.shared_expert_gate.weight", "ffn_gate_inp_shexp.weight", 0},
                                         {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                         {NULL, NULL, 0}};
/* BERT: with or without "bert." (BertForMaskedLM), old gamma/beta names;
 * the pooler, the masked-LM head and the position ids left out, as the
 * converter does */
static const char *const BERT_LAYERS[] = {"encoder.layer.%d.", "bert.encoder.layer.%d.", NULL};
#define BERT_G(hf, gguf) {hf, gguf, 0}, {"bert." hf, gguf, 0}
#define BERT_DROP(hf) {hf, NULL, HF_DROP}, {"bert." hf, NULL, HF_DROP}
static const hf_name BERT_GLOBALS[] = {BERT_G("embeddings.word_embeddings.weight", "token_embd.weight"),
                                       BERT_G("embeddings.token_type_embeddings.weight", "token_types.weight"),
                                       BERT_G("embeddings.position_embeddings.weight", "position_embd.weight"),
                                       BERT_G("embeddings.LayerNorm.weight", "token_embd_norm.weight"),
                                       BERT_G("embeddings.LayerNorm.bias", "token_embd_norm.bias"),
                                       BERT_G("embeddings.LayerNorm.gamma", "token_embd_norm.weight"),
                                       BERT_G("embeddings.LayerNorm.beta", "token_embd_norm.bias"),
                                       BERT_DROP("embeddings.position_ids"),
                                       BERT_DROP("pooler.dense.weight"),
                                       BERT_DROP("pooler.dense.bias"),
                                       /* BertForMaskedLM's head (the converter keeps only the encoder) */
                                       {"cls.predictions.bias", NULL, HF_DROP},
                                       {"cls.predictions.transform.dense.weight", NULL, HF_DROP},
                                       {"cls.predictions.transform.dense.bias", NULL, HF_DROP},
                                       {"cls.predictions.transform.LayerNorm.weight", NULL, HF_DROP},
                                       {"cls.predictions.transform.LayerNorm.bias", NULL, HF_DROP},
                                       {"cls.predictions.transform.LayerNorm.gamma", NULL, HF_DROP},
                                       {"cls.predictions.transform.LayerNorm.beta", NULL, HF_DROP},
                                       {"cls.predictions.decoder.weight", NULL, HF_DROP},
                                       {"cls.predictions.decoder.bias", NULL, HF_DROP},
                                       {NULL, NULL, 0}};
#define BERT_L(hf, gguf) {hf ".weight", gguf ".weight", 0}, {hf ".bias", gguf ".bias", 0}
#define BERT_LN(hf, gguf) BERT_L(hf, gguf), {hf ".gamma", gguf ".weight", 0}, {hf ".beta", gguf ".bias", 0}
static const hf_name BERT_LAYER[] = {BERT_L("attention.self.query", "attn_q"),
                                     BERT_L("attention.self.key", "attn_k"),
                                     BERT_L("attention.self.value", "attn_v"),
                                     BERT_L("attention.output.dense", "attn_output"),
                                     BERT_LN("attention.output.LayerNorm", "attn_output_norm"),
                                     BERT_L("intermediate.dense", "ffn_up"),
                                     BERT_L("output.dense", "ffn_down"),
                                     BERT_LN("output.LayerNorm", "layer_output_norm"),
                                     {NULL, NULL, 0}};
static const char *const NOMIC_LAYERS[] = {"encoder.layers.%d.", NULL};
static const hf_name NOMIC_GLOBALS[] = {{"embeddings.word_embeddings.weight", "token_embd.weight", 0},
                                        {"embeddings.token_type_embeddings.weight", "token_types.weight", 0},
                                        {"emb_ln.weight", "token_embd_norm.weight", 0},
                                        {"emb_ln.bias", "token_embd_norm.bias", 0},
                                        {NULL, NULL, 0}};
static const hf_name NOMIC_LAYER[] = {{"attn.Wqkv.weight", "attn_qkv.weight", 0},
                                      {"attn.out_proj.weight", "attn_output.weight", 0},
                                      BERT_L("norm1", "attn_output_norm"),
                                      {"mlp.fc11.weight", "ffn_up.weight", 0},
                                      {"mlp.fc12.weight", "ffn_gate.weight", 0},
                                      {"mlp.fc2.weight", "ffn_down.weight", 0},
                                      BERT_L("norm2", "layer_output_norm"),
                                      {NULL, NULL, 0}};
static const hf_name GRANITEMOE_LAYER[] = {
    {"block_sparse_moe.router.layer.weight", "ffn_gate_inp.weight", 0},
    {"block_sparse_moe.input_linear.weight", "ffn_gate_exps.weight", HF_SPLIT_GATE_UP},
    {"block_sparse_moe.output_linear.weight", "ffn_down_exps.weight", 0},
    {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
    {NULL, NULL, 0}};
static const hf_name DEEPSEEK2_LAYER[] = {
    {"self_attn.q_a_proj.weight", "attn_q_a.weight", 0},
    {"self_attn.q_a_layernorm.weight", "attn_q_a_norm.weight", 0},
    {"self_attn.q_b_proj.weight", "attn_q_b.weight", 0},
    {"self_attn.kv_a_proj_with_mqa.weight", "attn_kv_a_mqa.weight", 0},
    {"self_attn.kv_a_layernorm.weight", "attn_kv_a_norm.weight", 0},
    {"self_attn.kv_b_proj.weight", "attn_k_b.weight", HF_KV_B},
    {"mlp.gate.weight", "ffn_gate_inp.weight", 0},
    {"mlp.gate.e_score_correction_bias", "exp_probs_b.bias", 0},
    {"mlp.experts.%d.gate_proj.weight", "ffn_gate_exps.weight", HF_EXPERT},
    {"mlp.experts.%d.down_proj.weight", "ffn_down_exps.weight", HF_EXPERT},
    {"mlp.experts.%d.up_proj.weight", "ffn_up_exps.weight", HF_EXPERT},
    {"mlp.shared_experts.gate_proj.weight", "ffn_gate_shexp.weight", 0},
    {"mlp.shared_experts.down_proj.weight", "ffn_down_shexp.weight", 0},
    {"mlp.shared_experts.up_proj.weight", "ffn_up_shexp.weight", 0},
    {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
    {NULL, NULL, 0}};
static const hf_name GPTOSS_LAYER[] = {
    {"self_attn.q_proj.bias", "attn_q.bias", 0},
    {"self_attn.k_proj.bias", "attn_k.bias", 0},
    {"self_attn.v_proj.bias", "attn_v.bias", 0},
    {"self_attn.o_proj.bias", "attn_output.bias", 0},
    {"self_attn.sinks", "attn_sinks.weight", 0},
    {"mlp.router.weight", "ffn_gate_inp.weight", 0},
    {"mlp.router.bias", "ffn_gate_inp.bias", 0},
    {"mlp.experts.gate_up_proj", "ffn_gate_exps.weight", HF_EXPERTS_T | HF_INTERLEAVED},
    {"mlp.experts.gate_up_proj_bias", "ffn_gate_exps.bias", HF_INTERLEAVED},
    {"mlp.experts.down_proj", "ffn_down_exps.weight", HF_EXPERTS_T},
    {"mlp.experts.down_proj_bias", "ffn_down_exps.bias", 0},
    {"mlp.experts.gate_up_proj_blocks", "ffn_gate_exps.weight", HF_MXFP4_BLOCKS | HF_INTERLEAVED},
    {"mlp.experts.gate_up_proj_scales", "ffn_gate_exps.weight", HF_MXFP4_SCALES | HF_INTERLEAVED},
    {"mlp.experts.down_proj_blocks", "ffn_down_exps.weight", HF_MXFP4_BLOCKS},
    {"mlp.experts.down_proj_scales", "ffn_down_exps.weight", HF_MXFP4_SCALES},
    {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
    {NULL, NULL, 0}};
static const hf_name PHI3_LAYER[] = {{"self_attn.qkv_proj.weight", "attn_qkv.weight", 0},
                                     {"mlp.gate_up_proj.weight", "ffn_up.weight", 0}, /* [gate|up] as GGUF's */
                                     {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                     {NULL, NULL, 0}};

static const hf_arch HF_ARCHS[] = {
    {"llama", LLAMA_CLASSES, "llama", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, true, false, false, llama_keys},
    {"llama", LLAMA_CLASSES, "mistral", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, true, false, false, llama_keys},
    {"qwen2", QWEN2_CLASSES, "qwen2", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, false, false, false, qwen2_keys},
    {"gemma", GEMMA_CLASSES, "gemma", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, false, true, false, gemma_keys},
    {"gpt2", GPT2_CLASSES, "gpt2", GPT2_LAYERS, GPT2_GLOBALS, GPT2_LAYER, false, false, true, gpt2_keys},
    {"phi2", PHI2_CLASSES, "phi", PHI2_LAYERS, PHI2_GLOBALS, PHI2_LAYER, false, false, false, phi2_keys},
    {"gptneox", NEOX_CLASSES, "gpt_neox", NEOX_LAYERS, NEOX_GLOBALS, NEOX_LAYER, false, false, false, gptneox_keys},
    {"bloom", BLOOM_CLASSES, "bloom", BLOOM_LAYERS, BLOOM_GLOBALS, BLOOM_LAYER, false, false, true, bloom_keys},
    {"falcon", FALCON_CLASSES, "falcon", FALCON_LAYERS, FALCON_GLOBALS, FALCON_LAYER, false, false, false,
     falcon_keys},
    {"mpt", MPT_CLASSES, "mpt", MPT_LAYERS, MPT_GLOBALS, MPT_LAYER, false, false, false, mpt_keys},
    {"starcoder", STARCODER_CLASSES, "gpt_bigcode", GPT2_LAYERS, GPT2_GLOBALS, STARCODER_LAYER, false, false, false,
     starcoder_keys},
    {"gptj", GPTJ_CLASSES, "gptj", GPTJ_LAYERS, GPTJ_GLOBALS, GPTJ_LAYER, false, false, false, gptj_keys},
    /* issue 40's dense families (llama.cpp's Qwen3Model, Olmo2Model,
     * GraniteModel and SmolLM3Model (LlamaModel: q/k permuted), Gemma2Model,
     * Gemma3Model) */
    {"qwen3", QWEN3_CLASSES, "qwen3", LLAMA_LAYERS, LLAMA_GLOBALS, QWEN3_LAYER, false, false, false, qwen3_keys},
    {"olmo2", OLMO2_CLASSES, "olmo2", LLAMA_LAYERS, LLAMA_GLOBALS, OLMO2_LAYER, false, false, false, olmo2_keys},
    {"granite", GRANITE_CLASSES, "granite", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, true, false, false,
     granite_keys},
    {"smollm3", SMOLLM3_CLASSES, "smollm3", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, true, false, false,
     llama_keys},
    {"gemma2", GEMMA2_CLASSES, "gemma2", LLAMA_LAYERS, GEMMA2_GLOBALS, GEMMA2_LAYER, false, true, false,
     gemma2_keys},
    {"gemma3", GEMMA3_CLASSES, "gemma3_text", LLAMA_LAYERS, LLAMA_GLOBALS, GEMMA2_LAYER, false, true, false,
     gemma3_keys},
    {"cohere2", COHERE2_CLASSES, "cohere2", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, false, false, false,
     cohere2_keys},
    {"phi3", PHI3_CLASSES, "phi3", LLAMA_LAYERS, LLAMA_GLOBALS, PHI3_LAYER, false, false, false, phi3_keys},
    /* mixtures of experts: each expert's matrices stacked (a copy) */
    {"llama", MIXTRAL_CLASSES, "mixtral", LLAMA_LAYERS, LLAMA_GLOBALS, MIXTRAL_LAYER, true, false, false,
     mixtral_keys},
    {"qwen3moe", QWEN3MOE_CLASSES, "qwen3_moe", LLAMA_LAYERS, LLAMA_GLOBALS, MOE_QK_NORM_LAYER, false, false, false,
     qwen3moe_keys},
    {"olmoe", OLMOE_CLASSES, "olmoe", LLAMA_LAYERS, LLAMA_GLOBALS, MOE_QK_NORM_LAYER, false, false, false,
     olmoe_keys},
    {"qwen2moe", QWEN2MOE_CLASSES, "qwen2_moe", LLAMA_LAYERS, LLAMA_GLOBALS, QWEN2MOE_LAYER, false, false, false,
     qwen2moe_keys},
    /* a multimodal wrapper: its text_config and language_model.* tensors
     * (mf_hf_map_config), the vision tower dropped (llama.cpp's mmproj) */
    {"mistral3", MISTRAL3_CLASSES, "mistral3", LLAMA_LAYERS, LLAMA_GLOBALS, LLAMA_LAYER, true, false, false,
     mistral3_keys},
    {"granitemoe", GRANITEMOE_CLASSES, "granitemoe", LLAMA_LAYERS, LLAMA_GLOBALS, GRANITEMOE_LAYER, true, false,
     false, granitemoe_keys},
    /* multi-head latent attention (kv_b_proj split); V3's multi-token
     * prediction layers (past num_hidden_layers) dropped as the converter does */
    {"deepseek2", DEEPSEEK2_CLASSES, "deepseek_v2", LLAMA_LAYERS, LLAMA_GLOBALS, DEEPSEEK2_LAYER, false, false, false,
     deepseek2_keys},
    {"deepseek2", DEEPSEEK2_CLASSES, "deepseek_v3", LLAMA_LAYERS, LLAMA_GLOBALS, DEEPSEEK2_LAYER, false, false, false,
     deepseek2_keys},
    {"gpt-oss", GPTOSS_CLASSES, "gpt_oss", LLAMA_LAYERS, LLAMA_GLOBALS, GPTOSS_LAYER, false, false, false,
     gptoss_keys},
    /* encoders: embeddings only */
    {"bert", BERT_CLASSES, "bert", BERT_LAYERS, BERT_GLOBALS, BERT_LAYER, false, false, false, bert_keys},
    {"nomic-bert", NOMIC_CLASSES, "nomic_bert", NOMIC_LAYERS, NOMIC_GLOBALS, NOMIC_LAYER, false, false, false,
     nomic_bert_keys},
};
/* Layer names the reader's llama renaming (tensor_names.c) gave that mean
 * another tensor in these architectures. */
static const struct {
    const char *gguf;
    const hf_name *renamed;
} HF_RENAMED[] = {{"olmo2", POST_NORM_RENAMED}, {"gpt-oss", POST_NORM_RENAMED}, {"gemma2", POST_NORM_RENAMED}, {"gemma3", POST_NORM_RENAMED}};

static const hf_name *renamed_of(const hf_arch *a) {
    for (size_t i = 0; i < sizeof HF_RENAMED / sizeof HF_RENAMED[0]; i++)
        if (!strcmp(HF_RENAMED[i].gguf, a->gguf))
            return HF_RENAMED[i].renamed;
    return NULL;
}
enum { N_HF_ARCHS = sizeof HF_ARCHS / sizeof HF_ARCHS[0] };

/* The row for config.json: its first "architectures" entry, else its
 * "model_type", else (an old Llama config) llama. */
static tport_status find_arch(const tport_model_file *mf, const cJSON *cfg, const hf_arch **out) {
    const cJSON *archs = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
    const cJSON *first = cJSON_IsArray(archs) ? cJSON_GetArrayItem(archs, 0) : NULL;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    for (size_t i = 0; i < N_HF_ARCHS; i++) {
        if (cJSON_IsString(first)) {
            for (const char *const *c = HF_ARCHS[i].classes; *c; c++)
                if (!strcmp(*c, first->valuestring)) {
                    *out = &HF_ARCHS[i];
                    return TPORT_STATUS_OK;
                }
        } else if (!cJSON_IsString(mt) || !strcmp(mt->valuestring, HF_ARCHS[i].model_type)) {
            *out = &HF_ARCHS[i];
            return TPORT_STATUS_OK;
        }
    }
    char known[256] = "";
    size_t k = 0;
    for (size_t i = 0; i < N_HF_ARCHS; i++)
        for (const char *const *c = HF_ARCHS[i].classes; *c && (i == 0 || HF_ARCHS[i].classes != HF_ARCHS[i - 1].classes); c++)
            if (k < sizeof known)
                k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", k ? ", " : "", *c);
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: architecture '%s' is not supported (known: %s)",
                       mf->path, cJSON_IsString(first) ? first->valuestring
                                 : cJSON_IsString(mt)  ? mt->valuestring
                                                       : "?",
                       known);
}

/* ---- names and layouts ----------------------------------------------------------- */
static bool is_gguf_name(const char *n) {
    return !strncmp(n, "blk.", 4) || !strcmp(n, "token_embd.weight") || !strcmp(n, "output_norm.weight") ||
           !strcmp(n, "output.weight") || !strcmp(n, "rope_factors_long.weight") ||
           !strcmp(n, "rope_factors_short.weight"); /* phi3_keys makes these from config.json */
}

/* The GGUF name of an HF tensor: OK with *gguf set, or *gguf NULL to
 * drop it; UNSUPPORTED naming a tensor the architecture does not have. */
static tport_status rename_one(const tport_model_file *mf, const hf_arch *a, const char *name, char *out, size_t cap,
                               unsigned *flags, uint32_t *expert) {
    *flags = 0;
    *expert = 0;
    for (const hf_name *g = a->globals; g->hf; g++)
        if (!strcmp(name, g->hf)) {
            *flags = g->flags;
            if (g->gguf)
                snprintf(out, cap, "%s", g->gguf);
            return TPORT_STATUS_OK;
        }
    for (const char *const *p = a->layer_prefixes; *p; p++) {
        const char *pct = strstr(*p, "%d");
        size_t pre = (size_t)(pct - *p);
        if (strncmp(name, *p, pre) || name[pre] < '0' || name[pre] > '9')
            continue;
        char *end;
        unsigned long il = strtoul(name + pre, &end, 10);
        if (il > 100000 || strncmp(end, pct + 2, strlen(pct + 2)))
            continue;
        const char *rest = end + strlen(pct + 2);
        for (const hf_name *l = a->layer; l->hf; l++) {
            const char *e = (l->flags & HF_EXPERT) ? strstr(l->hf, "%d") : NULL;
            if (e) { /* "...experts.%d.rest": the expert index goes to *expert */
                size_t pre_e = (size_t)(e - l->hf);
                char *end_e;
                if (strncmp(rest, l->hf, pre_e) || rest[pre_e] < '0' || rest[pre_e] > '9')
                    continue;
                unsigned long ie = strtoul(rest + pre_e, &end_e, 10);
                if (ie > 65535 || strcmp(end_e, e + 2))
                    continue;
                *flags = l->flags;
                *expert = (uint32_t)ie;
                snprintf(out, cap, "blk.%lu.%s", il, l->gguf);
                return TPORT_STATUS_OK;
            }
            if (!strcmp(rest, l->hf)) {
                *flags = l->flags;
                if (l->gguf)
                    snprintf(out, cap, "blk.%lu.%s", il, l->gguf);
                return TPORT_STATUS_OK;
            }
        }
    }
    if (is_gguf_name(name)) {
        snprintf(out, cap, "%s", name);
        /* "blk.N." + a name the reader's llama renaming gave */
        const char *rest = !strncmp(name, "blk.", 4) ? strchr(name + 4, '.') : NULL;
        for (const hf_name *r = renamed_of(a); rest && r && r->hf; r++)
            if (!strcmp(rest + 1, r->hf))
                snprintf(out, cap, "%.*s%s", (int)(rest + 1 - name), name, r->gguf);
        return TPORT_STATUS_OK;
    }
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tensor '%.100s' is not part of a %s model", mf->path, name,
                       a->gguf);
}

tport_status mf_transpose_2d(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t) {
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    if (t->n_dims != 2 || !es)
        return mf_fail(c, t->offset, "tensor %s: a weight to transpose must be 2-D f32, f16 or bf16", t->name);
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    const uint8_t *src = t->data;
    int64_t r = t->ne[1], k = t->ne[0]; /* src: r rows of k; dst: k rows of r */
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < k; j++)
            memcpy(dst + ((uint64_t)j * (uint64_t)r + (uint64_t)i) * es, src + ((uint64_t)i * (uint64_t)k + (uint64_t)j) * es,
                   (size_t)es);
    t->data = dst;
    t->ne[0] = r;
    t->ne[1] = k;
    return TPORT_STATUS_OK;
}

/* Gemma stores RMS-norm weights as w - 1 (it multiplies by 1 + w); GGUF
 * has them + 1, in f32 as the converter writes every norm. */
static tport_status plus_one(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t) {
    if (t->n_dims != 1 || (t->type != TPORT_TYPE_F32 && t->type != TPORT_TYPE_F16 && t->type != TPORT_TYPE_BF16))
        return mf_fail(c, t->offset, "tensor %s: a norm weight must be 1-D f32, f16 or bf16", t->name);
    float *dst = mf_alloc_array(mf, (uint64_t)t->ne[0], sizeof(float));
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int64_t i = 0; i < t->ne[0]; i++) {
        float v;
        if (t->type == TPORT_TYPE_F32)
            memcpy(&v, (const uint8_t *)t->data + 4 * i, 4);
        else {
            uint16_t h;
            memcpy(&h, (const uint8_t *)t->data + 2 * i, 2);
            v = t->type == TPORT_TYPE_F16 ? tport_fp16_to_fp32(h) : tport_bf16_to_fp32(h);
        }
        dst[i] = v + 1.0f;
    }
    t->data = dst;
    t->type = TPORT_TYPE_F32;
    t->nbytes = (uint64_t)t->ne[0] * 4;
    return TPORT_STATUS_OK;
}

/* Hugging Face q/k rows of each head are [first halves of the pairs,
 * second halves]; Meta/GGUF order interleaves them.  Row r of the result
 * (head h, pair i, member j) comes from HF row h*hd + j*hd/2 + i. */
static tport_status unpermute(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t, uint32_t n_head) {
    if (t->n_dims != 2 || n_head == 0 || t->ne[1] % n_head || (t->ne[1] / n_head) % 2)
        return mf_fail(c, t->offset, "tensor %s: shape does not split into %u heads", t->name, n_head);
    int64_t rows = t->ne[1], hd = rows / n_head;
    uint64_t row_bytes = t->nbytes / (uint64_t)rows;
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, rem = r % hd, i = rem / 2, j = rem % 2;
        int64_t src = h * hd + j * (hd / 2) + i;
        memcpy(dst + (uint64_t)r * row_bytes, (const uint8_t *)t->data + (uint64_t)src * row_bytes, (size_t)row_bytes);
    }
    t->data = dst;
    return TPORT_STATUS_OK;
}

/* The kv heads key of the architecture (head_count without one). */
static uint32_t kv_u32(const tport_model_file *mf, const char *arch, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    for (int i = 0; i < mf->n_kv; i++)
        if (!strcmp(mf->kv[i].key, key) && mf->kv[i].type == TPORT_KV_U32)
            return (uint32_t)mf->kv[i].v.u;
    return 0;
}

/* Fused QKV rows stored as n_kv groups of (n_head/n_kv query heads, one
 * key head, one value head), head_dim rows each (GPT-NeoX and BLOOM: a
 * group per head; Falcon: the "jploski" rearrangement) -> GGUF's [Q|K|V].
 * Works for the weight (rows of ne[0]) and the bias (rows of 1). */
static tport_status regroup_qkv(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t, uint32_t n_head,
                                uint32_t n_kv) {
    int64_t rows = t->n_dims == 1 ? t->ne[0] : t->ne[1];
    if (t->n_dims > 2 || !n_head || !n_kv || n_head % n_kv || rows % (int64_t)(n_head + 2 * n_kv))
        return mf_fail(c, t->offset, "tensor %s: %lld rows do not split into %u query and 2 x %u kv heads", t->name,
                       (long long)rows, n_head, n_kv);
    int64_t hd = rows / (n_head + 2 * n_kv), q_per = n_head / n_kv;
    uint64_t row_bytes = t->nbytes / (uint64_t)rows;
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    const uint8_t *src = t->data;
    uint64_t block = (uint64_t)hd * row_bytes;
    for (int64_t g = 0; g < (int64_t)n_kv; g++) {
        const uint8_t *grp = src + (uint64_t)(g * (q_per + 2)) * block;
        memcpy(dst + (uint64_t)(g * q_per) * block, grp, (size_t)(q_per * (int64_t)block));
        memcpy(dst + (uint64_t)(n_head + g) * block, grp + (uint64_t)q_per * block, (size_t)block);
        memcpy(dst + (uint64_t)(n_head + n_kv + g) * block, grp + (uint64_t)(q_per + 1) * block, (size_t)block);
    }
    t->data = dst;
    return TPORT_STATUS_OK;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* Expert e's matrix t into the stack of its name among the kept tensors
 * (made at the first expert seen): every expert of the file's
 * expert_count exactly once, all of one type and shape. */
static tport_status stack_expert(hf_ctx *h, int kept, const tport_mf_tensor *t, const char *name, uint32_t e,
                                 uint8_t *seen) {
    tport_model_file *mf = h->mf;
    uint32_t n_exp = kv_u32(mf, h->arch, "expert_count");
    if (t->n_dims != 2 || !n_exp || e >= n_exp)
        return mf_fail(h->c, t->offset, "tensor %s: expert %u of %u, or not a matrix", t->name, e, n_exp);
    int k = 0;
    while (k < kept && strcmp(mf->tensors[k].name, name))
        k++;
    if (k == kept) {
        if (t->nbytes > UINT64_MAX / n_exp)
            return mf_fail(h->c, t->offset, "tensor %s: too large", t->name);
        uint8_t *data = mf_alloc(mf, (size_t)(t->nbytes * n_exp));
        char *nm = mf_strndup(mf, name, strlen(name));
        if (!data || !nm)
            return TPORT_STATUS_OUT_OF_MEMORY;
        tport_mf_tensor s = *t;
        s.name = nm;
        s.n_dims = 3;
        s.ne[2] = n_exp;
        s.nbytes = t->nbytes * n_exp;
        s.data = data;
        mf->tensors[kept] = s;
        memset(seen + (size_t)kept * n_exp, 0, n_exp);
    }
    tport_mf_tensor *s = &mf->tensors[k];
    if (s->type != t->type || s->ne[0] != t->ne[0] || s->ne[1] != t->ne[1] || seen[(size_t)k * n_exp + e])
        return mf_fail(h->c, t->offset, "tensor %s: expert %u repeated, or of another type or shape than the "
                       "others of %s", t->name, e, name);
    seen[(size_t)k * n_exp + e] = 1;
    memcpy((uint8_t *)s->data + (uint64_t)e * t->nbytes, t->data, (size_t)t->nbytes);
    return TPORT_STATUS_OK;
}

/* A multimodal wrapper's text tensor: "language_model." taken out of the
 * name (as the converter does) and the reader's llama renaming applied to
 * the rest; its vision tower and projector are not part of the text model
 * (the converter writes them to a separate mmproj file).  Returns false
 * for a tensor to drop. */
static bool text_part_name(const char *name, char *out, size_t cap) {
    if (strstr(name, "vision_tower.") || strstr(name, "multi_modal_projector."))
        return false;
    const char *lm = strstr(name, "language_model.");
    char tmp[192];
    if (!lm) {
        snprintf(out, cap, "%s", name);
        return true;
    }
    snprintf(tmp, sizeof tmp, "%.*s%s", (int)(lm - name), name, lm + strlen("language_model."));
    if (!mf_normalize_llama_name(tmp, out, cap))
        snprintf(out, cap, "%s", tmp);
    return true;
}

/* t (fused [in, 2 ff, n_expert] in GGUF's order) becomes its gate half;
 * *up its up half under the name with "gate" made "up". */
static tport_status split_gate_up(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t, tport_mf_tensor *up) {
    if (t->n_dims != 3 || t->ne[1] % 2 || t->ne[0] <= 0 || t->ne[2] <= 0)
        return mf_fail(c, t->offset, "tensor %s: fused experts must be [n_expert, 2 x ff, n_embd]", t->name);
    uint64_t rows = (uint64_t)t->ne[1] * (uint64_t)t->ne[2], half = t->nbytes / 2;
    if (t->nbytes % rows)
        return mf_fail(c, t->offset, "tensor %s: rows of a block-quantized type cannot be split", t->name);
    uint64_t row = t->nbytes / rows, part = (uint64_t)(t->ne[1] / 2) * row; /* one expert's half */
    uint8_t *g = mf_alloc(mf, (size_t)half), *u = mf_alloc(mf, (size_t)half);
    const char *at = strstr(t->name, "gate");
    char name[192];
    snprintf(name, sizeof name, "%.*sup%s", at ? (int)(at - t->name) : 0, t->name, at ? at + 4 : "");
    char *nm = mf_strndup(mf, name, strlen(name));
    if (!g || !u || !nm || !at)
        return at ? TPORT_STATUS_OUT_OF_MEMORY : mf_fail(c, t->offset, "tensor %s: not a gate", t->name);
    for (int64_t e = 0; e < t->ne[2]; e++) {
        const uint8_t *src = (const uint8_t *)t->data + (uint64_t)e * 2 * part;
        memcpy(g + (uint64_t)e * part, src, (size_t)part);
        memcpy(u + (uint64_t)e * part, src + part, (size_t)part);
    }
    t->ne[1] /= 2;
    t->nbytes = half;
    *up = *t;
    t->data = g;
    up->data = u;
    up->name = nm;
    return TPORT_STATUS_OK;
}

/* kv_b_proj (GGUF order: ne [kv_lora, n_head (nope + v)]) -> t = attn_k_b
 * ne [nope, kv_lora, n_head] (each head's nope rows transposed), *vb =
 * attn_v_b ne [kv_lora, v, n_head] (each head's v rows). */
static tport_status split_kv_b(hf_ctx *h, tport_mf_tensor *t, tport_mf_tensor *vb) {
    tport_model_file *mf = h->mf;
    uint32_t n_head = kv_u32(mf, h->arch, "attention.head_count"), k_mla = kv_u32(mf, h->arch, "attention.key_length_mla");
    uint32_t rope = kv_u32(mf, h->arch, "rope.dimension_count"), v = kv_u32(mf, h->arch, "attention.value_length_mla");
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    int64_t nope = (int64_t)k_mla - (int64_t)rope, rank = t->ne[0];
    if (t->n_dims != 2 || !es || !n_head || nope <= 0 || !v || t->ne[1] != (int64_t)n_head * (nope + v))
        return mf_fail(h->c, t->offset, "tensor %s: kv_b_proj must be 2-D f32, f16 or bf16 of %u heads x (%lld + %u) "
                       "rows", t->name, n_head, (long long)nope, v);
    uint64_t kb_bytes = (uint64_t)n_head * (uint64_t)nope * (uint64_t)rank * es;
    uint64_t vb_bytes = (uint64_t)n_head * v * (uint64_t)rank * es;
    uint8_t *kb = mf_alloc(mf, (size_t)kb_bytes), *vbd = mf_alloc(mf, (size_t)vb_bytes);
    char *nm = mf_strndup(mf, t->name, strlen(t->name));
    char *k_at = nm ? strstr(nm, "attn_k_b") : NULL;
    if (!kb || !vbd || !nm || !k_at)
        return TPORT_STATUS_OUT_OF_MEMORY;
    k_at[5] = 'v'; /* "attn_v_b..." */
    const uint8_t *src = t->data;
    for (int64_t hh = 0; hh < (int64_t)n_head; hh++) {
        const uint8_t *head = src + (uint64_t)hh * (uint64_t)(nope + v) * (uint64_t)rank * es;
        for (int64_t j = 0; j < nope; j++) /* k_b[h][r][j] = kv_b[h][j][r] */
            for (int64_t r = 0; r < rank; r++)
                memcpy(kb + (((uint64_t)hh * (uint64_t)rank + (uint64_t)r) * (uint64_t)nope + (uint64_t)j) * es,
                       head + ((uint64_t)j * (uint64_t)rank + (uint64_t)r) * es, (size_t)es);
        memcpy(vbd + (uint64_t)hh * v * (uint64_t)rank * es, head + (uint64_t)nope * (uint64_t)rank * es,
               (size_t)((uint64_t)v * (uint64_t)rank * es));
    }
    *vb = *t;
    vb->name = nm;
    vb->n_dims = 3;
    vb->ne[0] = rank;
    vb->ne[1] = v;
    vb->ne[2] = n_head;
    vb->nbytes = vb_bytes;
    vb->data = vbd;
    t->n_dims = 3;
    t->ne[0] = nope;
    t->ne[1] = rank;
    t->ne[2] = n_head;
    t->nbytes = kb_bytes;
    t->data = kb;
    return TPORT_STATUS_OK;
}

/* Each expert's matrix of a 3-D stack transposed (ne0 and ne1 swapped). */
static tport_status transpose_experts(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t) {
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    if (t->n_dims != 3 || !es)
        return mf_fail(c, t->offset, "tensor %s: experts to transpose must be 3-D f32, f16 or bf16", t->name);
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    uint64_t k = (uint64_t)t->ne[0], r = (uint64_t)t->ne[1], one = k * r * es;
    for (uint64_t e = 0; e < (uint64_t)t->ne[2]; e++)
        for (uint64_t i = 0; i < r; i++)
            for (uint64_t j = 0; j < k; j++)
                memcpy(dst + e * one + (j * r + i) * es, (const uint8_t *)t->data + e * one + (i * k + j) * es,
                       (size_t)es);
    t->data = dst;
    t->ne[0] = (int64_t)r;
    t->ne[1] = (int64_t)k;
    return TPORT_STATUS_OK;
}

/* gate and up alternating: a weight's rows of each expert (3-D), or a
 * bias's values of each expert (2-D [2 ff, n_expert]); t keeps the even
 * ones (gate), *up gets the odd ones under the name with "gate" -> "up". */
static tport_status split_interleaved(tport_model_file *mf, const mf_cursor *c, tport_mf_tensor *t,
                                      tport_mf_tensor *up) {
    bool w = t->n_dims == 3;
    uint64_t es = t->type == TPORT_TYPE_F32 ? 4 : t->type == TPORT_TYPE_F16 || t->type == TPORT_TYPE_BF16 ? 2 : 0;
    int64_t pairs_dim = w ? t->ne[1] : t->ne[0], outer = w ? t->ne[2] : t->ne[1];
    const char *at = strstr(t->name, "gate");
    if ((t->n_dims != 2 && !w) || !es || pairs_dim % 2 || !at)
        return mf_fail(c, t->offset, "tensor %s: interleaved gate/up must be f32, f16 or bf16 with an even size",
                       t->name);
    uint64_t unit = w ? (uint64_t)t->ne[0] * es : es; /* a row, or a value */
    uint64_t half = t->nbytes / 2, n_pairs = (uint64_t)pairs_dim / 2;
    uint8_t *g = mf_alloc(mf, (size_t)half), *u = mf_alloc(mf, (size_t)half);
    char name[192];
    snprintf(name, sizeof name, "%.*sup%s", (int)(at - t->name), t->name, at + 4);
    char *nm = mf_strndup(mf, name, strlen(name));
    if (!g || !u || !nm)
        return TPORT_STATUS_OUT_OF_MEMORY;
    const uint8_t *src = t->data;
    for (uint64_t o = 0; o < (uint64_t)outer; o++)
        for (uint64_t p = 0; p < n_pairs; p++) {
            memcpy(g + (o * n_pairs + p) * unit, src + (o * 2 * n_pairs + 2 * p) * unit, (size_t)unit);
            memcpy(u + (o * n_pairs + p) * unit, src + (o * 2 * n_pairs + 2 * p + 1) * unit, (size_t)unit);
        }
    if (w)
        t->ne[1] /= 2;
    else
        t->ne[0] /= 2;
    t->nbytes = half;
    *up = *t;
    t->data = g;
    up->data = u;
    up->name = nm;
    return TPORT_STATUS_OK;
}

/* DeepSeek-V3's multi-token-prediction layers: past block_count. */
static bool past_last_layer(const hf_ctx *h, const char *gguf_name) {
    uint32_t n_layer = kv_u32(h->mf, h->arch, "block_count");
    return !strcmp(h->arch, "deepseek2") && !strncmp(gguf_name, "blk.", 4) && strtoul(gguf_name + 4, NULL, 10) >= n_layer;
}

static tport_status map_tensors(hf_ctx *h, const hf_arch *a, bool wrapper) {
    tport_model_file *mf = h->mf;
    int kept = 0;
    uint32_t n_exp = kv_u32(mf, h->arch, "expert_count");
    uint8_t *seen = n_exp ? mf_alloc_array(mf, (uint64_t)mf->n_tensors * n_exp, 1) : NULL;
    /* the up halves of fused experts, appended after the loop */
    tport_mf_tensor *ups = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *ups);
    uint8_t *stacked = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, 1); /* kept index: a stack made here */
    int n_ups = 0, n_mx = 0;
    /* MXFP4 blocks or scales waiting for their other half */
    tport_mf_tensor *mx = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *mx);
    unsigned *mx_flags = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *mx_flags);
    char **mx_gguf = mf_alloc_array(mf, (uint64_t)mf->n_tensors + 1, sizeof *mx_gguf);
    int n_joined = 0;
    if ((n_exp && !seen) || !ups || !stacked || !mx || !mx_flags || !mx_gguf)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int i = 0; i < mf->n_tensors; i++) {
        tport_mf_tensor t = mf->tensors[i];
        char name[192];
        unsigned flags;
        uint32_t expert;
        name[0] = '\0';
        char text_name[192];
        if (wrapper && !text_part_name(t.name, text_name, sizeof text_name))
            continue;
        MF_TRY(rename_one(mf, a, wrapper ? text_name : t.name, name, sizeof name, &flags, &expert));
        if ((flags & HF_DROP) || past_last_layer(h, name[0] ? name : t.name))
            continue;
        if (t.type == MF_TYPE_U8 && !(flags & (HF_MXFP4_BLOCKS | HF_MXFP4_SCALES)))
            return mf_fail(h->c, t.offset, "tensor %s: dtype U8 is read only as MXFP4 blocks and scales (gpt-oss "
                           "experts), not as %s", t.name, name[0] ? name : t.name);
        if (flags & (HF_MXFP4_BLOCKS | HF_MXFP4_SCALES)) {
            int k = 0; /* its other half, if seen (the pending keep their HF names) */
            while (k < n_mx && (strcmp(mx_gguf[k], name) || mx_flags[k] == flags))
                k++;
            if (k == n_mx) {
                if (!(mx_gguf[n_mx] = mf_strndup(mf, name, strlen(name))))
                    return TPORT_STATUS_OUT_OF_MEMORY;
                mx[n_mx] = t;
                mx_flags[n_mx++] = flags;
                continue;
            }
            bool is_blocks = (flags & HF_MXFP4_BLOCKS) != 0;
            tport_mf_tensor b = is_blocks ? t : mx[k], sc = is_blocks ? mx[k] : t;
            MF_TRY(mf_hf_mxfp4_join(mf, h->c, &b, &sc, name, (flags & HF_INTERLEAVED) != 0, n_exp, &t,
                                    &ups[n_ups]));
            if (flags & HF_INTERLEAVED)
                n_ups++;
            n_mx--;
            mx[k] = mx[n_mx];
            mx_gguf[k] = mx_gguf[n_mx];
            mx_flags[k] = mx_flags[n_mx];
            if (!n_joined++)
                mf_add_note(mf, "gpt-oss MXFP4 experts (U8 blocks + E8M0 scales) repacked into ggml MXFP4 "
                            "blocks at load (lossless)");
            mf->tensors[kept++] = t;
            continue;
        }
        if (flags & HF_EXPERT) {
            int k = 0;
            while (k < kept && strcmp(mf->tensors[k].name, name))
                k++;
            MF_TRY(stack_expert(h, kept, &t, name, expert, seen));
            if (k == kept)
                stacked[kept++] = 1;
            continue;
        }
        if (strcmp(name, t.name) && !(t.name = mf_strndup(mf, name, strlen(name))))
            return TPORT_STATUS_OUT_OF_MEMORY;
        if (flags & HF_TRANSPOSE)
            MF_TRY(mf_transpose_2d(mf, h->c, &t));
        if (flags & HF_SPLIT_GATE_UP)
            MF_TRY(split_gate_up(mf, h->c, &t, &ups[n_ups++]));
        if (flags & HF_KV_B)
            MF_TRY(split_kv_b(h, &t, &ups[n_ups++]));
        if (flags & HF_EXPERTS_T)
            MF_TRY(transpose_experts(mf, h->c, &t));
        if (flags & HF_INTERLEAVED)
            MF_TRY(split_interleaved(mf, h->c, &t, &ups[n_ups++]));
        if (flags & HF_QKV_GROUPS) {
            uint32_t nh = kv_u32(mf, h->arch, "attention.head_count");
            uint32_t nkv = kv_u32(mf, h->arch, "attention.head_count_kv");
            MF_TRY(regroup_qkv(mf, h->c, &t, nh, nkv ? nkv : nh));
        }
        if (a->norm_plus_one && ends_with(t.name, "norm.weight"))
            MF_TRY(plus_one(mf, h->c, &t));
        mf->tensors[kept++] = t;
    }
    if (n_mx)
        return mf_fail(h->c, mx[0].offset, "tensor %s: MXFP4 %s without their %s (%s)", mx[0].name,
                       mx_flags[0] & HF_MXFP4_BLOCKS ? "blocks" : "scales",
                       mx_flags[0] & HF_MXFP4_BLOCKS ? "scales" : "blocks", mx_gguf[0]);
    for (int k = 0; seen && k < kept; k++)
        if (stacked[k] && memchr(seen + (size_t)k * n_exp, 0, n_exp))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %s: an expert's matrix is missing", mf->path,
                               mf->tensors[k].name);
    mf->n_tensors = kept;
    if (n_ups) {
        MF_TRY(mf_reserve_tensors(mf, n_ups));
        memcpy(mf->tensors + mf->n_tensors, ups, (size_t)n_ups * sizeof *ups);
        mf->n_tensors += n_ups;
        kept = mf->n_tensors;
    }
    MF_TRY(mf_check_unique_names(mf, h->c));
    if (a->permute_qk) {
        uint32_t nh = 0, nkv = 0;
        char key[96];
        snprintf(key, sizeof key, "%s.attention.head_count", h->arch);
        for (int i = 0; i < mf->n_kv; i++)
            if (!strcmp(mf->kv[i].key, key))
                nh = (uint32_t)mf->kv[i].v.u;
        snprintf(key, sizeof key, "%s.attention.head_count_kv", h->arch);
        for (int i = 0; i < mf->n_kv; i++)
            if (!strcmp(mf->kv[i].key, key))
                nkv = (uint32_t)mf->kv[i].v.u;
        for (int i = 0; i < mf->n_tensors; i++) {
            tport_mf_tensor *t = &mf->tensors[i];
            if (!strncmp(t->name, "blk.", 4) && ends_with(t->name, ".attn_q.weight"))
                MF_TRY(unpermute(mf, h->c, t, nh));
            else if (!strncmp(t->name, "blk.", 4) && ends_with(t->name, ".attn_k.weight"))
                MF_TRY(unpermute(mf, h->c, t, nkv ? nkv : nh));
        }
        mf_add_note(mf, "Hugging Face q/k weights un-permuted to Meta/GGUF order at load");
    }
    if (a->tied_output_copy && !tport_model_file_find(mf, "output.weight")) {
        const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
        if (e) { /* the same bytes under a second name, zero copy */
            tport_mf_tensor copy = *e;
            if (!(copy.name = mf_strndup(mf, "output.weight", 13)))
                return TPORT_STATUS_OUT_OF_MEMORY;
            MF_TRY(mf_reserve_tensors(mf, 1));
            mf->tensors[mf->n_tensors++] = copy;
        }
    }
    return TPORT_STATUS_OK;
}

tport_status mf_hf_map_config(tport_model_file *mf, const mf_cursor *c, const cJSON *cfg) {
    const hf_arch *a = NULL;
    MF_TRY(find_arch(mf, cfg, &a));
    hf_ctx h = {.mf = mf, .c = c, .cfg = cfg, .arch = a->gguf};
    MF_TRY(mf_kv_add_str(mf, "general.architecture", a->gguf));
    const char *base = strrchr(mf->path, '/');
    char name[128];
    /* the folder's name, as the converter names the model without a name in config.json */
    if (base && base > mf->path) {
        const char *dir = base - 1;
        while (dir > mf->path && dir[-1] != '/')
            dir--;
        snprintf(name, sizeof name, "%.*s", (int)(base - dir), dir);
    } else
        snprintf(name, sizeof name, "%s", mf->path);
    MF_TRY(mf_kv_add_str(mf, "general.name", name));
    /* a multimodal wrapper's text hyperparameters are in text_config: over
     * the top level, as the converter merges them */
    const cJSON *tc = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
    cJSON *merged = NULL;
    if (cJSON_IsObject(tc)) {
        if (!(merged = cJSON_Duplicate(cfg, true)))
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: config.json: out of memory", mf->path);
        for (const cJSON *e = tc->child; e; e = e->next) {
            cJSON *copy = e->string ? cJSON_Duplicate(e, true) : NULL;
            cJSON_DeleteItemFromObjectCaseSensitive(merged, e->string ? e->string : "");
            if (!copy || !cJSON_AddItemToObject(merged, e->string, copy)) {
                cJSON_Delete(copy);
                cJSON_Delete(merged);
                return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: config.json: out of memory", mf->path);
            }
        }
        h.cfg = merged;
    }
    tport_status st = a->keys(&h);
    if (st == TPORT_STATUS_OK)
        st = map_tensors(&h, a, merged != NULL);
    cJSON_Delete(merged);
    return st;
}

#endif
