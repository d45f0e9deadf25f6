/* config.json rows of the encoders (hf_arch.h): BERT and nomic-bert,
 * embeddings only, with sentence-transformers' pooling. */
#include <stdio.h>
#include <string.h>

#include "formats/hf_arch.h"

#ifdef TPORT_HAVE_CJSON

#include <cjson/cJSON.h>

/* sentence-transformers' pooling, as the converter's _try_set_pooling_type
 * reads it: modules.json names the Pooling module's folder, whose
 * config.json says mean, CLS or last token.  None without modules.json
 * (llama.cpp's default for an encoder); another mode is refused. */
static tport_status pooling_key(hf_ctx *h) {
    cJSON *mods = mf_read_beside(h->mf->path, "modules.json");
    const char *dir = NULL;
    for (const cJSON *m = cJSON_IsArray(mods) ? mods->child : NULL; m && !dir; m = m->next) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(m, "type"), *p = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (cJSON_IsString(t) && hf_ends_with(t->valuestring, "Pooling") && cJSON_IsString(p))
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
            st = hf_add_u32(h, "pooling_type", type);
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
    hf_cfg_u32(h->cfg, "type_vocab_size", &types);
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
    MF_TRY(hf_common_keys(h, &n_embd, &n_head));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_eps", 1e-12f, true));
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
    else if ((hf_cfg_f32(c, "rotary_emb_fraction", &f) && f != 1.0f) ||
             cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(c, "rotary_emb_interleaved")) ||
             cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(c, "rotary_emb_scale_base")))
        bad = "partial, interleaved or scaled rotary embeddings";
    if (bad)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: nomic-bert with %s is not supported",
                           h->mf->path, bad);
    uint32_t npos = 0, mtp = 2048, n_embd = 0, n_head = 0;
    hf_cfg_u32(c, "max_trained_positions", &mtp);
    if (!hf_cfg_u32(c, "n_positions", &npos) || npos != 8192 || mtp != 2048)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: config.json: nomic-bert n_positions %u with %u trained is "
                           "not supported (8192 with 2048)", h->mf->path, npos, mtp);
    MF_TRY(hf_add_u32(h, "context_length", 2048));
    MF_TRY(hf_key_u32(h, "embedding_length", "n_embd|hidden_size", true, &n_embd));
    MF_TRY(hf_key_u32(h, "block_count", "n_layer|num_hidden_layers", true, NULL));
    MF_TRY(hf_key_u32(h, "feed_forward_length", "n_inner|intermediate_size", true, NULL));
    MF_TRY(hf_key_u32(h, "attention.head_count", "n_head|num_attention_heads", true, &n_head));
    if (!n_head || n_embd % n_head)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: config.json: n_embd %u does not split into %u heads",
                           h->mf->path, n_embd, n_head);
    MF_TRY(hf_add_u32(h, "attention.head_count_kv", n_head));
    MF_TRY(hf_add_u32(h, "rope.dimension_count", n_embd / n_head));
    MF_TRY(hf_key_f32(h, "rope.freq_base", "rotary_emb_base", 10000.0f, true));
    MF_TRY(hf_key_f32(h, "attention.layer_norm_epsilon", "layer_norm_epsilon", 1e-12f, true));
    return encoder_common(h);
}

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

static const char *const BERT_CLASSES[] = {"BertModel", "BertForMaskedLM", NULL};

static const char *const NOMIC_CLASSES[] = {"NomicBertModel", NULL};

const hf_arch hf_archs_encoder[] = {
    {.gguf = "bert", .classes = BERT_CLASSES, .model_type = "bert",
     .layer_prefixes = BERT_LAYERS, .globals = BERT_GLOBALS, .layer = BERT_LAYER,
     .keys = bert_keys},
    {.gguf = "nomic-bert", .classes = NOMIC_CLASSES, .model_type = "nomic_bert",
     .layer_prefixes = NOMIC_LAYERS, .globals = NOMIC_GLOBALS, .layer = NOMIC_LAYER,
     .keys = nomic_bert_keys},
};
const size_t hf_archs_encoder_count = sizeof hf_archs_encoder / sizeof hf_archs_encoder[0];

#endif /* TPORT_HAVE_CJSON */
