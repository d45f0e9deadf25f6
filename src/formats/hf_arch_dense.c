/* config.json rows of the dense families of issue 40 (hf_arch.h):
 * Qwen3, OLMo 2, Granite, SmolLM3, Gemma 2, Gemma 3, Command R7B (cohere2),
 * Phi-3/4, Mistral 3's text part. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "formats/hf_arch.h"

#ifdef TPORT_HAVE_CJSON

#include <cjson/cJSON.h>

/* Qwen3Model (Qwen2Model's keys): head_dim, which need not be
 * hidden_size / heads (Qwen3-0.6B: 128, 1024 / 16), as key/value length. */
tport_status hf_qwen3_keys(hf_ctx *h) {
    uint32_t head_dim;
    MF_TRY(hf_qwen2_keys(h));
    if (!hf_cfg_u32(h->cfg, "head_dim", &head_dim))
        return TPORT_STATUS_OK;
    MF_TRY(hf_add_u32(h, "attention.key_length", head_dim));
    return hf_add_u32(h, "attention.value_length", head_dim);
}

/* Olmo2Model: TextModel's keys.  OLMo 3's sliding window (the same class
 * with sliding_window and layer_types) is not implemented: refused. */
static tport_status olmo2_keys(hf_ctx *h) {
    const cJSON *sw = cJSON_GetObjectItemCaseSensitive(h->cfg, "sliding_window");
    if (sw && !cJSON_IsNull(sw))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: olmo2 with a sliding_window (OLMo 3) is not "
                           "supported", h->mf->path);
    return hf_qwen2_keys(h);
}

/* GraniteModel (LlamaModel's keys, head_dim ignored as the converter
 * does) and the four multipliers under their GGUF names. */
tport_status hf_granite_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(hf_key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_rope_keys(h));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    MF_TRY(hf_add_u32(h, "rope.dimension_count", n_embd / n_head));
    static const char *const mult[][2] = {{"attention.scale", "attention_multiplier"},
                                          {"embedding_scale", "embedding_multiplier"},
                                          {"residual_scale", "residual_multiplier"},
                                          {"logit_scale", "logits_scaling"}};
    for (size_t i = 0; i < sizeof mult / sizeof mult[0]; i++) {
        float v;
        if (hf_cfg_f32(h->cfg, mult[i][1], &v) && v != 0.0f) /* the converter skips 0 and absent */
            MF_TRY(hf_key_f32(h, mult[i][0], mult[i][1], v, true));
    }
    return TPORT_STATUS_OK;
}

/* Gemma2Model: every key required, as the converter reads them. */
static tport_status gemma2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, head_dim;
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_key_u32(h, "attention.key_length", "head_dim", true, &head_dim));
    MF_TRY(hf_add_u32(h, "attention.value_length", head_dim));
    MF_TRY(hf_key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    static const char *const req[][2] = {{"attention.layer_norm_rms_epsilon", "rms_norm_eps"},
                                         {"attn_logit_softcapping", "attn_logit_softcapping"},
                                         {"final_logit_softcapping", "final_logit_softcapping"}};
    for (size_t i = 0; i < sizeof req / sizeof req[0]; i++) {
        float v;
        if (!hf_cfg_f32(h->cfg, req[i][1], &v))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json has no %s (for gemma2.%s)", h->mf->path,
                               req[i][1], req[i][0]);
        MF_TRY(hf_key_f32(h, req[i][0], req[i][1], v, true));
    }
    return hf_rope_keys(h);
}

/* Gemma3Model (text): the converter's defaults where config.json is
 * silent (head_dim 256, 8 heads, 4 kv heads, RoPE base 1e6), the local
 * layers' base from rope_local_base_freq, a window unless
 * sliding_window_pattern is 1, the final soft-cap only when set. */
static tport_status gemma3_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, v_u32, pattern = 0;
    float v;
    MF_TRY(hf_key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "num_hidden_layers", true, NULL));
    MF_TRY(hf_key_u32(h, "feed_forward_length", "intermediate_size", false, NULL));
    MF_TRY(hf_add_u32(h, "context_length", hf_cfg_u32(h->cfg, "max_position_embeddings", &v_u32) ? v_u32 : 131072));
    MF_TRY(hf_add_u32(h, "attention.head_count", hf_cfg_u32(h->cfg, "num_attention_heads", &n_head) ? n_head : 8));
    MF_TRY(hf_add_u32(h, "attention.head_count_kv", hf_cfg_u32(h->cfg, "num_key_value_heads", &v_u32) ? v_u32 : 4));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    uint32_t head_dim = hf_cfg_u32(h->cfg, "head_dim", &v_u32) ? v_u32 : 256;
    MF_TRY(hf_add_u32(h, "attention.key_length", head_dim));
    MF_TRY(hf_add_u32(h, "attention.value_length", head_dim));
    MF_TRY(hf_rope_keys(h)); /* rope.freq_base where rope_theta is given */
    if (!hf_cfg_f32(h->cfg, "rope_theta", &v))
        MF_TRY(hf_key_f32(h, "rope.freq_base", "rope_theta", 1000000.0f, true));
    MF_TRY(hf_key_f32(h, "rope.freq_base_swa", "rope_local_base_freq", 0.0f, false));
    if (hf_cfg_f32(h->cfg, "final_logit_softcapping", &v) && v != 0.0f)
        MF_TRY(hf_key_f32(h, "final_logit_softcapping", "final_logit_softcapping", v, true));
    if (!hf_cfg_u32(h->cfg, "sliding_window_pattern", &pattern) || pattern != 1)
        MF_TRY(hf_key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    return TPORT_STATUS_OK;
}

/* Cohere2Model: TextModel's keys, LayerNorm epsilon, the logit scale and
 * window (required), rotary dims rotary_pct of the head (1 when absent). */
static tport_status cohere2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    float pct = 1.0f, v;
    MF_TRY(hf_key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_rope_keys(h));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-5f, true));
    if (!hf_cfg_f32(h->cfg, "logit_scale", &v))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json has no logit_scale (for cohere2.logit_scale)",
                           h->mf->path);
    MF_TRY(hf_key_f32(h, "logit_scale", "logit_scale", v, true));
    MF_TRY(hf_key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    hf_cfg_f32(h->cfg, "rotary_pct", &pct);
    if (!(pct > 0.0f && pct <= 1.0f))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: rotary_pct %g", h->mf->path, (double)pct);
    return hf_add_u32(h, "rope.dimension_count", (uint32_t)(pct * (float)(n_embd / n_head)));
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
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    if (!hf_cfg_u32(h->cfg, "max_position_embeddings", &ctx) ||
        !((rs && hf_cfg_u32(rs, "original_max_position_embeddings", &orig)) ||
          hf_cfg_u32(h->cfg, "original_max_position_embeddings", &orig)) || !orig)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: phi3 needs max_position_embeddings and "
                           "original_max_position_embeddings", h->mf->path);
    MF_TRY(hf_add_u32(h, "rope.scaling.original_context_length", orig));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-5f, true));
    float pct = 1.0f;
    hf_cfg_f32(h->cfg, "partial_rotary_factor", &pct);
    if (!(pct > 0.0f && pct <= 1.0f))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: partial_rotary_factor %g", h->mf->path,
                           (double)pct);
    uint32_t rot = (uint32_t)(pct * (float)n_embd) / n_head;
    MF_TRY(hf_add_u32(h, "rope.dimension_count", rot));
    MF_TRY(hf_key_f32(h, "rope.freq_base", "rope_theta", 10000.0f, true));
    hf_cfg_u32(h->cfg, "sliding_window", &window); /* null: 0 */
    MF_TRY(hf_add_u32(h, "attention.sliding_window", window));
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
    MF_TRY(hf_llama_keys(h));
    if (cJSON_IsObject(rp) && !hf_cfg_f32(h->cfg, "rope_theta", &theta) && hf_cfg_f32(rp, "rope_theta", &theta))
        MF_TRY(hf_key_f32(h, "rope.freq_base", "rope_theta", theta, true));
    uint32_t head_dim;
    if (hf_cfg_u32(h->cfg, "head_dim", &head_dim)) {
        MF_TRY(hf_add_u32(h, "attention.key_length", head_dim));
        MF_TRY(hf_add_u32(h, "attention.value_length", head_dim));
    }
    return TPORT_STATUS_OK;
}

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

static const hf_name PHI3_LAYER[] = {{"self_attn.qkv_proj.weight", "attn_qkv.weight", 0},
                                     {"mlp.gate_up_proj.weight", "ffn_up.weight", 0}, /* [gate|up] as GGUF's */
                                     {"self_attn.rotary_emb.inv_freq", NULL, HF_DROP},
                                     {NULL, NULL, 0}};

static const char *const QWEN3_CLASSES[] = {"Qwen3ForCausalLM", NULL};

static const char *const OLMO2_CLASSES[] = {"Olmo2ForCausalLM", NULL};

static const char *const GRANITE_CLASSES[] = {"GraniteForCausalLM", NULL};

static const char *const SMOLLM3_CLASSES[] = {"SmolLM3ForCausalLM", NULL};

static const char *const GEMMA2_CLASSES[] = {"Gemma2ForCausalLM", NULL};

static const char *const GEMMA3_CLASSES[] = {"Gemma3ForCausalLM", NULL};

static const char *const COHERE2_CLASSES[] = {"Cohere2ForCausalLM", NULL};

static const char *const PHI3_CLASSES[] = {"Phi3ForCausalLM", NULL};

static const char *const MISTRAL3_CLASSES[] = {"Mistral3ForConditionalGeneration", NULL};

const hf_arch hf_archs_dense[] = {
    {.gguf = "qwen3", .classes = QWEN3_CLASSES, .model_type = "qwen3",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = QWEN3_LAYER,
     .keys = hf_qwen3_keys},
    {.gguf = "olmo2", .classes = OLMO2_CLASSES, .model_type = "olmo2",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = OLMO2_LAYER,
     .keys = olmo2_keys, .renamed = HF_POST_NORM_RENAMED},
    {.gguf = "granite", .classes = GRANITE_CLASSES, .model_type = "granite",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .permute_qk = true, .keys = hf_granite_keys},
    {.gguf = "smollm3", .classes = SMOLLM3_CLASSES, .model_type = "smollm3",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .permute_qk = true, .keys = hf_llama_keys},
    {.gguf = "gemma2", .classes = GEMMA2_CLASSES, .model_type = "gemma2",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = GEMMA2_GLOBALS, .layer = GEMMA2_LAYER,
     .norm_plus_one = true, .keys = gemma2_keys, .renamed = HF_POST_NORM_RENAMED},
    {.gguf = "gemma3", .classes = GEMMA3_CLASSES, .model_type = "gemma3_text",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = GEMMA2_LAYER,
     .norm_plus_one = true, .keys = gemma3_keys, .renamed = HF_POST_NORM_RENAMED},
    {.gguf = "cohere2", .classes = COHERE2_CLASSES, .model_type = "cohere2",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .keys = cohere2_keys},
    {.gguf = "phi3", .classes = PHI3_CLASSES, .model_type = "phi3",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = PHI3_LAYER,
     .keys = phi3_keys},
    /* a multimodal wrapper: its text_config and language_model.* tensors
     * (mf_hf_map_config), the vision tower dropped (llama.cpp's mmproj) */
    {.gguf = "mistral3", .classes = MISTRAL3_CLASSES, .model_type = "mistral3",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .permute_qk = true, .keys = mistral3_keys},
};
const size_t hf_archs_dense_count = sizeof hf_archs_dense / sizeof hf_archs_dense[0];

#endif /* TPORT_HAVE_CJSON */
