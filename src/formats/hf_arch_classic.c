/* config.json rows of the families of before 2024 (hf_arch.h): Llama,
 * Mistral, Qwen2, Gemma, GPT-2, Phi-2, GPT-NeoX, BLOOM, Falcon, MPT,
 * StarCoder, GPT-J. */
#include <stdio.h>
#include <string.h>

#include "formats/hf_arch.h"

#ifdef TPORT_HAVE_CJSON

#include <cjson/cJSON.h>

static tport_status gemma_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, head_dim;
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    if (!hf_cfg_u32(h->cfg, "head_dim", &head_dim))
        head_dim = n_embd / n_head;
    char full[96];
    snprintf(full, sizeof full, "%s.attention.key_length", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, head_dim));
    snprintf(full, sizeof full, "%s.attention.value_length", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, head_dim));
    return hf_rope_keys(h);
}

static tport_status gpt2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, n_ff;
    MF_TRY(hf_key_u32(h, "block_count", "n_layer", true, NULL));
    MF_TRY(hf_key_u32(h, "context_length", "n_ctx|n_positions", true, NULL));
    MF_TRY(hf_key_u32(h, "embedding_length", "n_embd", true, &n_embd));
    if (!hf_cfg_u32(h->cfg, "n_inner", &n_ff)) /* null in most configs: 4 * n_embd */
        n_ff = 4 * n_embd;
    char full[96];
    snprintf(full, sizeof full, "%s.feed_forward_length", h->arch);
    MF_TRY(mf_kv_add_u32(h->mf, full, n_ff));
    MF_TRY(hf_key_u32(h, "attention.head_count", "n_head", true, &n_head));
    return hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* Phi2Model: rotary dims from partial_rotary_factor; no BOS. */
static tport_status phi2_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, ff;
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    if (!hf_cfg_u32(h->cfg, "intermediate_size", &ff))
        MF_TRY(hf_add_u32(h, "feed_forward_length", 4 * n_embd));
    float pct = 1.0f;
    hf_cfg_f32(h->cfg, "partial_rotary_factor", &pct);
    MF_TRY(hf_add_u32(h, "rope.dimension_count", (uint32_t)(pct * (float)n_embd) / n_head));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-5f, true));
    return mf_kv_add_bool(h->mf, "tokenizer.ggml.add_bos_token", false);
}

/* GPTNeoXModel: rotary_pct of the head; parallel residual unless said. */
static tport_status gptneox_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(hf_key_u32(h, "context_length", "max_position_embeddings", true, NULL));
    MF_TRY(hf_key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "num_hidden_layers", true, NULL));
    MF_TRY(hf_key_u32(h, "feed_forward_length", "intermediate_size", true, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "num_attention_heads", true, &n_head));
    if (!n_head || n_embd % n_head)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: hidden_size %u does not split into %u heads",
                           h->mf->path, n_embd, n_head);
    float pct = 1.0f;
    hf_cfg_f32(h->cfg, "rotary_pct", &pct);
    MF_TRY(hf_add_u32(h, "rope.dimension_count", (uint32_t)(pct * (float)(n_embd / n_head))));
    const cJSON *par = cJSON_GetObjectItemCaseSensitive(h->cfg, "use_parallel_residual");
    char full[96];
    snprintf(full, sizeof full, "%s.use_parallel_residual", h->arch);
    MF_TRY(mf_kv_add_bool(h->mf, full, !cJSON_IsFalse(par)));
    MF_TRY(hf_rope_keys(h));
    return hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-5f, true);
}

/* BloomModel: the context is seq_length (n_embd without it, as the
 * converter has it: ALiBi needs no trained length). */
static tport_status bloom_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0, ctx;
    MF_TRY(hf_key_u32(h, "embedding_length", "hidden_size|n_embed", true, &n_embd));
    MF_TRY(hf_add_u32(h, "context_length", hf_cfg_u32(h->cfg, "seq_length", &ctx) ? ctx : n_embd));
    MF_TRY(hf_add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "n_layer|num_hidden_layers", true, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "n_head|num_attention_heads", true, &n_head));
    MF_TRY(hf_add_u32(h, "attention.head_count_kv", n_head));
    return hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* The kv heads of a Falcon config: num_kv_heads / n_head_kv; without
 * them multi-query (1), except a config that says multi_query false (the
 * converter takes 1 there too, which cannot fit such a file's QKV). */
static uint32_t falcon_kv_heads(const cJSON *cfg, uint32_t n_head) {
    uint32_t kv;
    if (hf_cfg_u32(cfg, "num_kv_heads", &kv) || hf_cfg_u32(cfg, "n_head_kv", &kv))
        return kv;
    return cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cfg, "multi_query")) ? n_head : 1;
}

static tport_status falcon_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(hf_add_u32(h, "context_length", 2048)); /* not in config.json */
    char full[96];
    snprintf(full, sizeof full, "%s.tensor_data_layout", h->arch);
    MF_TRY(mf_kv_add_str(h->mf, full, "jploski"));
    MF_TRY(hf_key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(hf_add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "num_hidden_layers|n_layer", true, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "num_attention_heads|n_head", true, &n_head));
    MF_TRY(hf_add_u32(h, "attention.head_count_kv", falcon_kv_heads(h->cfg, n_head)));
    return hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* MPTModel: attn_config holds kv_n_heads, clip_qkv and the ALiBi bias. */
static tport_status mpt_keys(hf_ctx *h) {
    uint32_t n_embd = 0, kv;
    MF_TRY(hf_key_u32(h, "context_length", "max_seq_len", true, NULL));
    MF_TRY(hf_key_u32(h, "embedding_length", "d_model", true, &n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "n_layers", true, NULL));
    MF_TRY(hf_add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(hf_key_u32(h, "attention.head_count", "n_heads", true, NULL));
    const cJSON *ac = cJSON_GetObjectItemCaseSensitive(h->cfg, "attn_config");
    if (ac && hf_cfg_u32(ac, "kv_n_heads", &kv))
        MF_TRY(hf_add_u32(h, "attention.head_count_kv", kv));
    char full[96];
    snprintf(full, sizeof full, "%s.attention.layer_norm_epsilon", h->arch);
    MF_TRY(mf_kv_add_f32(h->mf, full, 1e-5f));
    float v;
    if (ac && hf_cfg_f32(ac, "clip_qkv", &v)) {
        snprintf(full, sizeof full, "%s.attention.clamp_kqv", h->arch);
        MF_TRY(mf_kv_add_f32(h->mf, full, v));
    }
    bool alibi = ac && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ac, "alibi"));
    if (!alibi || !hf_cfg_f32(ac, "alibi_bias_max", &v))
        v = alibi ? 8.0f : 0.0f; /* transformers' MptAttentionConfig default */
    snprintf(full, sizeof full, "%s.attention.max_alibi_bias", h->arch);
    return mf_kv_add_f32(h->mf, full, v);
}

/* StarCoderModel (GPTBigCode): multi-query unless the config says not. */
static tport_status starcoder_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(hf_key_u32(h, "context_length", "n_positions", true, NULL));
    MF_TRY(hf_key_u32(h, "embedding_length", "n_embd", true, &n_embd));
    MF_TRY(hf_add_u32(h, "feed_forward_length", 4 * n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "n_layer", true, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "n_head", true, &n_head));
    bool mq = !cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(h->cfg, "multi_query"));
    MF_TRY(hf_add_u32(h, "attention.head_count_kv", mq ? 1 : n_head));
    return hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

/* GPT-J: llama.cpp has no converter for it; the keys are tensorport's
 * gptj ones (those the ggml example's files give). */
static tport_status gptj_keys(hf_ctx *h) {
    uint32_t n_embd = 0, ff;
    MF_TRY(hf_key_u32(h, "context_length", "n_positions", true, NULL));
    MF_TRY(hf_key_u32(h, "embedding_length", "n_embd", true, &n_embd));
    MF_TRY(hf_add_u32(h, "feed_forward_length", hf_cfg_u32(h->cfg, "n_inner", &ff) ? ff : 4 * n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "n_layer", true, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "n_head", true, NULL));
    MF_TRY(hf_key_u32(h, "rope.dimension_count", "rotary_dim", true, NULL));
    return hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-5f, true);
}

static const char *const GPT2_LAYERS[] = {"transformer.h.%d.", "h.%d.", NULL};

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

const hf_arch hf_archs_classic[] = {
    {.gguf = "llama", .classes = LLAMA_CLASSES, .model_type = "llama",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .permute_qk = true, .keys = hf_llama_keys},
    {.gguf = "llama", .classes = LLAMA_CLASSES, .model_type = "mistral",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .permute_qk = true, .keys = hf_llama_keys},
    {.gguf = "qwen2", .classes = QWEN2_CLASSES, .model_type = "qwen2",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .keys = hf_qwen2_keys},
    {.gguf = "gemma", .classes = GEMMA_CLASSES, .model_type = "gemma",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = HF_LLAMA_LAYER,
     .norm_plus_one = true, .keys = gemma_keys},
    {.gguf = "gpt2", .classes = GPT2_CLASSES, .model_type = "gpt2",
     .layer_prefixes = GPT2_LAYERS, .globals = GPT2_GLOBALS, .layer = GPT2_LAYER,
     .tied_output_copy = true, .keys = gpt2_keys},
    {.gguf = "phi2", .classes = PHI2_CLASSES, .model_type = "phi",
     .layer_prefixes = PHI2_LAYERS, .globals = PHI2_GLOBALS, .layer = PHI2_LAYER,
     .keys = phi2_keys},
    {.gguf = "gptneox", .classes = NEOX_CLASSES, .model_type = "gpt_neox",
     .layer_prefixes = NEOX_LAYERS, .globals = NEOX_GLOBALS, .layer = NEOX_LAYER,
     .keys = gptneox_keys},
    {.gguf = "bloom", .classes = BLOOM_CLASSES, .model_type = "bloom",
     .layer_prefixes = BLOOM_LAYERS, .globals = BLOOM_GLOBALS, .layer = BLOOM_LAYER,
     .tied_output_copy = true, .keys = bloom_keys},
    {.gguf = "falcon", .classes = FALCON_CLASSES, .model_type = "falcon",
     .layer_prefixes = FALCON_LAYERS, .globals = FALCON_GLOBALS, .layer = FALCON_LAYER,
     .keys = falcon_keys},
    {.gguf = "mpt", .classes = MPT_CLASSES, .model_type = "mpt",
     .layer_prefixes = MPT_LAYERS, .globals = MPT_GLOBALS, .layer = MPT_LAYER,
     .keys = mpt_keys},
    {.gguf = "starcoder", .classes = STARCODER_CLASSES, .model_type = "gpt_bigcode",
     .layer_prefixes = GPT2_LAYERS, .globals = GPT2_GLOBALS, .layer = STARCODER_LAYER,
     .keys = starcoder_keys},
    {.gguf = "gptj", .classes = GPTJ_CLASSES, .model_type = "gptj",
     .layer_prefixes = GPTJ_LAYERS, .globals = GPTJ_GLOBALS, .layer = GPTJ_LAYER,
     .keys = gptj_keys},
};
const size_t hf_archs_classic_count = sizeof hf_archs_classic / sizeof hf_archs_classic[0];

#endif /* TPORT_HAVE_CJSON */
