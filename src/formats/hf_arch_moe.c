/* config.json rows of the mixtures of experts of issue 41 (hf_arch.h):
 * Mixtral, Qwen3-MoE, OLMoE, Qwen2-MoE, Granite-MoE, DeepSeek-V2/V3,
 * gpt-oss.  Each expert's matrices are stacked into GGUF's 3-D tensors
 * (a copy at load) by the HF_EXPERT rows. */
#include <stdio.h>
#include <string.h>

#include "formats/hf_arch.h"

#ifdef TPORT_HAVE_CJSON

#include <cjson/cJSON.h>

/* The expert counts of a mixture of experts (required: the stacks need
 * them), and an expert's width where the class has its own key. */
static tport_status expert_keys(hf_ctx *h, const char *count, const char *expert_ff) {
    uint32_t n = 0, used = 0;
    MF_TRY(hf_key_u32(h, "expert_count", count, true, &n));
    MF_TRY(hf_key_u32(h, "expert_used_count", "num_experts_per_tok", true, &used));
    if (!n || !used || used > n || n > 4096)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: %u experts, %u used", h->mf->path, n, used);
    return expert_ff ? hf_key_u32(h, "expert_feed_forward_length", expert_ff, true, NULL) : TPORT_STATUS_OK;
}

/* MixtralModel (LlamaModel's keys; q/k permuted). */
static tport_status mixtral_keys(hf_ctx *h) {
    MF_TRY(hf_llama_keys(h));
    return expert_keys(h, "num_local_experts", NULL);
}

/* Qwen3MoeModel: Qwen3's keys, moe_intermediate_size. */
static tport_status qwen3moe_keys(hf_ctx *h) {
    MF_TRY(hf_qwen3_keys(h));
    return expert_keys(h, "num_experts", "moe_intermediate_size");
}

/* OlmoeModel: TextModel's keys with the RMS epsilon fixed at 1e-5 (the
 * converter's add_layer_norm_rms_eps(1e-5)). */
static tport_status olmoe_keys(hf_ctx *h) {
    uint32_t n_embd = 0, n_head = 0;
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_rope_keys(h));
    char full[96];
    snprintf(full, sizeof full, "%s.attention.layer_norm_rms_epsilon", h->arch);
    MF_TRY(mf_kv_add_f32(h->mf, full, 1e-5f));
    return expert_keys(h, "num_experts", NULL);
}

/* Qwen2MoeModel: TextModel's keys, the experts' and the shared expert's
 * widths.  norm_topk_prob true is refused: the converter drops it and
 * llama.cpp's graph never renormalises the chosen experts' weights. */
static tport_status qwen2moe_keys(hf_ctx *h) {
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(h->cfg, "norm_topk_prob")))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: qwen2moe with norm_topk_prob true is not "
                           "supported (llama.cpp's graph does not renormalise)", h->mf->path);
    MF_TRY(hf_qwen2_keys(h));
    MF_TRY(expert_keys(h, "num_experts", "moe_intermediate_size"));
    return hf_key_u32(h, "expert_shared_feed_forward_length", "shared_expert_intermediate_size", true, NULL);
}

/* GraniteMoeModel: Granite's keys, the experts (required); the shared
 * MLP of GraniteMoeShared is refused (no such tensors in the graph). */
static tport_status granitemoe_keys(hf_ctx *h) {
    uint32_t shared = 0;
    if (hf_cfg_u32(h->cfg, "shared_intermediate_size", &shared) && shared)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: granitemoe with a shared MLP "
                           "(shared_intermediate_size %u, GraniteMoeShared) is not supported", h->mf->path, shared);
    MF_TRY(hf_granite_keys(h));
    return expert_keys(h, "num_local_experts", NULL);
}

/* DeepseekV2Model (DeepSeek-V2, V3): multi-head latent attention as one
 * kv head (the converter's num_key_value_heads 1), its ranks and head
 * sizes, the experts (softmax or sigmoid scoring, groups, routed scaling,
 * top-k renormalisation), YaRN with mscale_all_dim as the log multiplier. */
static tport_status deepseek2_keys(hf_ctx *h) {
    const cJSON *c = h->cfg;
    uint32_t n_embd = 0, n_head = 0, n_layer = 0, kv_lora = 512, rope = 0, nope = 0, v = 0, u;
    MF_TRY(hf_key_u32(h, "vocab_size", "vocab_size", false, NULL));
    MF_TRY(hf_key_u32(h, "context_length", "max_position_embeddings", false, NULL));
    MF_TRY(hf_key_u32(h, "embedding_length", "hidden_size", true, &n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "num_hidden_layers", true, &n_layer));
    MF_TRY(hf_key_u32(h, "feed_forward_length", "intermediate_size", false, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "num_attention_heads", true, &n_head));
    MF_TRY(hf_add_u32(h, "attention.head_count_kv", 1));
    MF_TRY(hf_rope_keys(h));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-6f, true));
    if (!hf_cfg_u32(c, "qk_rope_head_dim", &rope) || !hf_cfg_u32(c, "qk_nope_head_dim", &nope) ||
        !hf_cfg_u32(c, "v_head_dim", &v) || !n_head || !rope || rope % 2)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: deepseek2 needs num_attention_heads, an even "
                           "qk_rope_head_dim, qk_nope_head_dim and v_head_dim", h->mf->path);
    hf_cfg_u32(c, "kv_lora_rank", &kv_lora);
    if (hf_cfg_u32(c, "q_lora_rank", &u)) /* null: no q compression */
        MF_TRY(hf_add_u32(h, "attention.q_lora_rank", u));
    MF_TRY(hf_add_u32(h, "attention.kv_lora_rank", kv_lora));
    MF_TRY(hf_add_u32(h, "attention.key_length", kv_lora + rope));
    MF_TRY(hf_add_u32(h, "attention.value_length", kv_lora));
    MF_TRY(hf_add_u32(h, "attention.key_length_mla", nope + rope));
    MF_TRY(hf_add_u32(h, "attention.value_length_mla", v));
    MF_TRY(hf_add_u32(h, "rope.dimension_count", rope));
    bool moe = hf_cfg_u32(c, "n_routed_experts", &u);
    uint32_t dense = moe ? 0 : n_layer, used = 0;
    hf_cfg_u32(c, "first_k_dense_replace", &dense);
    MF_TRY(hf_add_u32(h, "leading_dense_block_count", dense));
    MF_TRY(hf_key_u32(h, "expert_feed_forward_length", "moe_intermediate_size|intermediate_size", true, NULL));
    if (moe) {
        MF_TRY(hf_add_u32(h, "expert_count", u));
        MF_TRY(hf_key_u32(h, "expert_used_count", "num_experts_per_tok", true, &used));
        if (!u || !used || used > u || u > 4096)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: %u experts, %u used", h->mf->path, u, used);
    }
    MF_TRY(hf_add_u32(h, "expert_shared_count", hf_cfg_u32(c, "n_shared_experts", &u) ? u : 0));
    MF_TRY(hf_key_f32(h, "expert_weights_scale", "routed_scaling_factor", 1.0f, false));
    if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "norm_topk_prob"))) {
        char full[96];
        snprintf(full, sizeof full, "%s.expert_weights_norm", h->arch);
        MF_TRY(mf_kv_add_bool(h->mf, full, true));
    }
    MF_TRY(hf_key_u32(h, "expert_group_count", "n_group", false, NULL));
    MF_TRY(hf_key_u32(h, "expert_group_used_count", "topk_group", false, NULL));
    /* YaRN's mscale_all_dim as the converter writes it (0.1 x, its legacy form) */
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(c, "rope_scaling");
    float mall;
    if (cJSON_IsObject(rs) && hf_cfg_f32(rs, "mscale_all_dim", &mall)) {
        char full[96];
        snprintf(full, sizeof full, "%s.rope.scaling.yarn_log_multiplier", h->arch);
        MF_TRY(mf_kv_add_f32(h->mf, full, 0.1f * mall));
    }
    const cJSON *sf = cJSON_GetObjectItemCaseSensitive(c, "scoring_func");
    if (cJSON_IsString(sf)) {
        if (strcmp(sf->valuestring, "softmax") && strcmp(sf->valuestring, "sigmoid"))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: deepseek2 scoring_func '%s' is not "
                               "supported", h->mf->path, sf->valuestring);
        MF_TRY(hf_add_u32(h, "expert_gating_func", strcmp(sf->valuestring, "sigmoid") ? 1 : 2));
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
    if (hf_cfg_f32(h->cfg, "swiglu_limit", &limit) && limit != 7.0f)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: gpt-oss swiglu_limit %g is not supported (7 "
                           "only)", h->mf->path, (double)limit);
    const cJSON *lt = cJSON_GetObjectItemCaseSensitive(h->cfg, "layer_types");
    int il = 0;
    for (const cJSON *e = cJSON_IsArray(lt) ? lt->child : NULL; e; e = e->next, il++)
        if (!cJSON_IsString(e) || strcmp(e->valuestring, il % 2 ? "full_attention" : "sliding_attention"))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: gpt-oss layer_types[%d] is not %s (only "
                               "alternating sliding and full layers are supported)", h->mf->path, il,
                               il % 2 ? "full_attention" : "sliding_attention");
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_rope_keys(h));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_rms_epsilon", "rms_norm_eps", 1e-5f, true));
    if (!hf_cfg_u32(h->cfg, "head_dim", &head_dim))
        head_dim = n_embd / n_head;
    MF_TRY(hf_add_u32(h, "attention.key_length", head_dim));
    MF_TRY(hf_add_u32(h, "attention.value_length", head_dim));
    MF_TRY(hf_add_u32(h, "rope.dimension_count", head_dim));
    MF_TRY(hf_key_u32(h, "attention.sliding_window", "sliding_window", true, NULL));
    MF_TRY(expert_keys(h, "num_local_experts", NULL));
    return hf_key_u32(h, "expert_feed_forward_length", "intermediate_size", true, NULL);
}

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

static const char *const MIXTRAL_CLASSES[] = {"MixtralForCausalLM", NULL};

static const char *const QWEN3MOE_CLASSES[] = {"Qwen3MoeForCausalLM", NULL};

static const char *const OLMOE_CLASSES[] = {"OlmoeForCausalLM", NULL};

static const char *const QWEN2MOE_CLASSES[] = {"Qwen2MoeForCausalLM", NULL};

static const char *const GRANITEMOE_CLASSES[] = {"GraniteMoeForCausalLM", NULL};

static const char *const DEEPSEEK2_CLASSES[] = {"DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", NULL};

static const char *const GPTOSS_CLASSES[] = {"GptOssForCausalLM", NULL};

const hf_arch hf_archs_moe[] = {
    {.gguf = "llama", .classes = MIXTRAL_CLASSES, .model_type = "mixtral",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = MIXTRAL_LAYER,
     .permute_qk = true, .keys = mixtral_keys},
    {.gguf = "qwen3moe", .classes = QWEN3MOE_CLASSES, .model_type = "qwen3_moe",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = MOE_QK_NORM_LAYER,
     .keys = qwen3moe_keys},
    {.gguf = "olmoe", .classes = OLMOE_CLASSES, .model_type = "olmoe",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = MOE_QK_NORM_LAYER,
     .keys = olmoe_keys},
    {.gguf = "qwen2moe", .classes = QWEN2MOE_CLASSES, .model_type = "qwen2_moe",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = QWEN2MOE_LAYER,
     .keys = qwen2moe_keys},
    {.gguf = "granitemoe", .classes = GRANITEMOE_CLASSES, .model_type = "granitemoe",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = GRANITEMOE_LAYER,
     .permute_qk = true, .keys = granitemoe_keys},
    /* multi-head latent attention (kv_b_proj split); V3's multi-token
     * prediction layers (past num_hidden_layers) dropped as the converter does */
    {.gguf = "deepseek2", .classes = DEEPSEEK2_CLASSES, .model_type = "deepseek_v2",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = DEEPSEEK2_LAYER,
     .keys = deepseek2_keys},
    {.gguf = "deepseek2", .classes = DEEPSEEK2_CLASSES, .model_type = "deepseek_v3",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = DEEPSEEK2_LAYER,
     .keys = deepseek2_keys},
    {.gguf = "gpt-oss", .classes = GPTOSS_CLASSES, .model_type = "gpt_oss",
     .layer_prefixes = HF_LLAMA_LAYERS, .globals = HF_LLAMA_GLOBALS, .layer = GPTOSS_LAYER,
     .keys = gptoss_keys, .renamed = HF_POST_NORM_RENAMED},
};
const size_t hf_archs_moe_count = sizeof hf_archs_moe / sizeof hf_archs_moe[0];

#endif /* TPORT_HAVE_CJSON */
