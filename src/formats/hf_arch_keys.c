/* The parts of a Hugging Face config.json -> GGUF keys mapping that every
 * family's row shares (hf_arch.h): reading config values, writing
 * "<arch>.<suffix>" keys, TextModel's common keys and RoPE scaling, the
 * Llama-style tensor names, and the base keys (Llama's, Qwen2's) that
 * later families extend. */
#include <stdio.h>
#include <string.h>

#include "formats/hf_arch.h"

#ifdef TPORT_HAVE_CJSON

#include <cjson/cJSON.h>

/* ---- config values ------------------------------------------------------------ */
bool hf_cfg_u32(const cJSON *cfg, const char *key, uint32_t *out) {
    uint64_t v;
    if (!mf_json_uint(cJSON_GetObjectItemCaseSensitive(cfg, key), &v) || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

bool hf_cfg_f32(const cJSON *cfg, const char *key, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!cJSON_IsNumber(j))
        return false;
    *out = (float)j->valuedouble;
    return true;
}

/* "<arch>.<suffix>" = config[key] (first of the `|`-separated keys given);
 * a required key that is absent is an error naming it. */
tport_status hf_key_u32(hf_ctx *h, const char *suffix, const char *keys, bool required, uint32_t *out) {
    char buf[128], full[96];
    snprintf(buf, sizeof buf, "%s", keys);
    uint32_t v = 0;
    bool found = false;
    for (char *k = strtok(buf, "|"); k && !found; k = strtok(NULL, "|"))
        found = hf_cfg_u32(h->cfg, k, &v);
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

tport_status hf_key_f32(hf_ctx *h, const char *suffix, const char *key, float dflt, bool always) {
    char full[96];
    float v = dflt;
    if (!hf_cfg_f32(h->cfg, key, &v) && !always)
        return TPORT_STATUS_OK;
    snprintf(full, sizeof full, "%s.%s", h->arch, suffix);
    return mf_kv_add_f32(h->mf, full, v);
}

/* The keys TextModel.set_gguf_parameters writes for every model class. */
tport_status hf_common_keys(hf_ctx *h, uint32_t *n_embd, uint32_t *n_head) {
    MF_TRY(hf_key_u32(h, "context_length", "max_position_embeddings|n_ctx|n_positions", false, NULL));
    MF_TRY(hf_key_u32(h, "embedding_length", "hidden_size|n_embd", true, n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "num_hidden_layers|n_layer", true, NULL));
    MF_TRY(hf_key_u32(h, "feed_forward_length", "intermediate_size|n_inner", false, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "num_attention_heads|n_head", true, n_head));
    uint32_t kv = *n_head;
    if (!hf_cfg_u32(h->cfg, "num_key_value_heads", &kv))
        kv = *n_head;
    char full[96];
    snprintf(full, sizeof full, "%s.attention.head_count_kv", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, kv));
    if (*n_head == 0 || *n_embd % *n_head)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: hidden_size %u is not a multiple of "
                           "num_attention_heads %u", h->mf->path, *n_embd, *n_head);
    return TPORT_STATUS_OK;
}

tport_status hf_add_u32(hf_ctx *h, const char *suffix, uint32_t v) {
    char full[96];
    snprintf(full, sizeof full, "%s.%s", h->arch, suffix);
    return mf_kv_add_u32(h->mf, full, v);
}

tport_status hf_rope_keys(hf_ctx *h) {
    MF_TRY(hf_key_f32(h, "rope.freq_base", "rope_theta", 10000.0f, false));
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(h->cfg, "rope_scaling");
    if (cJSON_IsNull(rs) || !rs)
        return TPORT_STATUS_OK;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(rs, "type");
    if (!cJSON_IsString(t))
        t = cJSON_GetObjectItemCaseSensitive(rs, "rope_type");
    float factor;
    if (cJSON_IsString(t) && !strcmp(t->valuestring, "linear") && hf_cfg_f32(rs, "factor", &factor) && factor > 0) {
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
    if (cJSON_IsString(t) && !strcmp(t->valuestring, "yarn") && hf_cfg_f32(rs, "factor", &factor) && factor > 0) {
        if (!hf_cfg_u32(rs, "original_max_position_embeddings", &orig) &&
            !hf_cfg_u32(h->cfg, "original_max_position_embeddings", &orig))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: YaRN rope_scaling without "
                               "original_max_position_embeddings", h->mf->path);
        char full[96];
        snprintf(full, sizeof full, "%s.rope.scaling.type", h->arch);
        MF_TRY(mf_kv_add_str(h->mf, full, "yarn"));
        snprintf(full, sizeof full, "%s.rope.scaling.factor", h->arch);
        MF_TRY(mf_kv_add_f32(h->mf, full, factor));
        MF_TRY(hf_add_u32(h, "rope.scaling.original_context_length", orig));
        static const char *const opt[][2] = {{"extrapolation_factor", "rope.scaling.yarn_ext_factor"},
                                             {"attention_factor", "rope.scaling.yarn_attn_factor"},
                                             {"attn_factor", "rope.scaling.yarn_attn_factor"},
                                             {"beta_fast", "rope.scaling.yarn_beta_fast"},
                                             {"beta_slow", "rope.scaling.yarn_beta_slow"}};
        bool attn = false;
        for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
            float v;
            bool is_attn = !strcmp(opt[i][1], "rope.scaling.yarn_attn_factor");
            if ((is_attn && attn) || !hf_cfg_f32(rs, opt[i][0], &v))
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

tport_status hf_llama_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, head_dim;
    MF_TRY(hf_key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_rope_keys(h));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    if (!hf_cfg_u32(h->cfg, "head_dim", &head_dim))
        head_dim = n_embd / n_head;
    char full[96];
    snprintf(full, sizeof full, "%s.rope.dimension_count", h->arch);
    return mf_kv_add_u32(h->mf, full, head_dim);
}

tport_status hf_qwen2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_rope_keys(h));
    return hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true);
}

bool hf_ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* ---- names most rows share ---- */
const char *const HF_LLAMA_LAYERS[] = {"model.layers.%d.", NULL};

/* Llama-style names; the reader already renamed the weights it knows
 * (tensor_names.c), these are the rest. */
const hf_name HF_LLAMA_GLOBALS[] = {{"model.embed_tokens.weight", "token_embd.weight", 0},
                                    {"model.norm.weight", "output_norm.weight", 0},
                                    {"lm_head.weight", "output.weight", 0},
                                    {NULL, NULL, 0}};

const hf_name HF_LLAMA_LAYER[] = {{"self_attn.q_proj.bias", "attn_q.bias", 0},
                                  {"self_attn.k_proj.bias", "attn_k.bias", 0},
                                  {"self_attn.v_proj.bias", "attn_v.bias", 0},
                                  {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                  {NULL, NULL, 0}};

/* post_attention_layernorm (renamed ffn_norm by the reader) is a
 * post-norm in these classes; pre_feedforward_layernorm is their ffn_norm */
const hf_name HF_POST_NORM_RENAMED[] = {{"ffn_norm.weight", "post_attention_norm.weight", 0}, {NULL, NULL, 0}};

#endif /* TPORT_HAVE_CJSON */
