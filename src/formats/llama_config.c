/* The JSON configs beside checkpoint files: Hugging Face's config.json
 * (safetensors, pytorch_model.bin) and Meta's params.json
 * (consolidated.00.pth).  Hugging Face stores the q/k projections
 * permuted for its rotate-half (NEOX-style) RoPE; they are un-permuted at
 * load into Meta/GGUF order, so every llama file runs with
 * TPORT_ROPE_NORMAL and converts to GGUF as is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

#ifndef TPORT_HAVE_CJSON

tport_status mf_apply_hf_config(tport_model_file *mf, const mf_cursor *c) {
    (void)c;
    snprintf(mf->notes, sizeof mf->notes, "built without cJSON: config.json not read, hyperparameters unknown");
    return TPORT_STATUS_OK;
}
tport_status mf_apply_meta_params(tport_model_file *mf, const mf_cursor *c) {
    (void)c;
    snprintf(mf->notes, sizeof mf->notes, "built without cJSON: params.json not read, hyperparameters unknown");
    return TPORT_STATUS_OK;
}

#else

#include <cjson/cJSON.h>

#define MAX_CONFIG_BYTES (4u << 20)

bool mf_json_uint(const struct cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j))
        return false;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
        return false;
    *out = (uint64_t)d;
    return true;
}

/* NAME in the folder of model_path, parsed; NULL if absent or not JSON. */
static cJSON *read_beside(const char *model_path, const char *name) {
    const char *slash = strrchr(model_path, '/');
    size_t dir_len = slash ? (size_t)(slash - model_path) + 1 : 0, name_len = strlen(name);
    char *path = malloc(dir_len + name_len + 1);
    if (!path)
        return NULL;
    memcpy(path, model_path, dir_len);
    memcpy(path + dir_len, name, name_len + 1);
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f)
        return NULL;
    char *buf = malloc(MAX_CONFIG_BYTES);
    size_t n = buf ? fread(buf, 1, MAX_CONFIG_BYTES, f) : 0;
    fclose(f);
    cJSON *j = n ? cJSON_ParseWithLength(buf, n) : NULL;
    free(buf);
    return j;
}

static uint32_t cfg_u32(const cJSON *cfg, const char *key) {
    uint64_t v;
    return mf_json_uint(cJSON_GetObjectItemCaseSensitive(cfg, key), &v) && v <= UINT32_MAX ? (uint32_t)v : 0;
}

static bool cfg_f32(const cJSON *cfg, const char *key, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!cJSON_IsNumber(j))
        return false;
    *out = (float)j->valuedouble;
    return true;
}

static void apply_config(tport_model_file *mf, const cJSON *cfg) {
    tport_mf_hparams *hp = &mf->hp;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    snprintf(mf->arch, sizeof mf->arch, "%s", cJSON_IsString(mt) ? mt->valuestring : "llama");
    hp->n_embd = cfg_u32(cfg, "hidden_size");
    hp->n_ff = cfg_u32(cfg, "intermediate_size");
    hp->n_layer = cfg_u32(cfg, "num_hidden_layers");
    hp->n_head = cfg_u32(cfg, "num_attention_heads");
    hp->n_head_kv = cfg_u32(cfg, "num_key_value_heads");
    hp->n_vocab = cfg_u32(cfg, "vocab_size");
    hp->n_ctx = cfg_u32(cfg, "max_position_embeddings");
    if (!cfg_f32(cfg, "rms_norm_eps", &hp->norm_eps))
        hp->norm_eps = 1e-6f; /* transformers' LlamaConfig default */
    if (!cfg_f32(cfg, "rope_theta", &hp->rope_freq_base))
        hp->rope_freq_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling");
    const cJSON *rt = rs ? cJSON_GetObjectItemCaseSensitive(rs, "type") : NULL;
    float factor;
    if (cJSON_IsString(rt) && !strcmp(rt->valuestring, "linear") && cfg_f32(rs, "factor", &factor) && factor > 0)
        hp->rope_freq_scale = 1.0f / factor;
    hp->rope_mode = TPORT_ROPE_NORMAL;
}

/* Hugging Face q/k rows of each head are [first halves of the pairs,
 * second halves]; Meta/GGUF order interleaves them.  Row r of the result
 * (head h, pair i, member j) comes from HF row h*hd + j*hd/2 + i. */
static tport_status unpermute(tport_model_file *mf, const mf_cursor *c, const char *name, uint32_t n_head) {
    tport_mf_tensor *t = (tport_mf_tensor *)tport_model_file_find(mf, name);
    if (!t)
        return TPORT_STATUS_OK;
    if (t->n_dims != 2 || n_head == 0 || t->ne[1] % n_head || (t->ne[1] / n_head) % 2)
        return mf_fail(c, t->offset, "tensor %s: shape does not split into %u heads", name, n_head);
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

static void embedding_only(tport_model_file *mf, const char *what) {
    char note[96];
    snprintf(note, sizeof note, "no %s beside the file: hyperparameters unknown", what);
    mf_add_note(mf, note);
    const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
    if (e && e->n_dims == 2 && e->ne[1] <= UINT32_MAX) {
        mf->hp.n_embd = (uint32_t)e->ne[0];
        mf->hp.n_vocab = (uint32_t)e->ne[1];
    }
}

tport_status mf_apply_hf_config(tport_model_file *mf, const mf_cursor *c) {
    cJSON *cfg = mf->borrowed ? NULL : read_beside(mf->path, "config.json");
    if (!cfg) {
        embedding_only(mf, "config.json");
        return TPORT_STATUS_OK;
    }
    apply_config(mf, cfg);
    cJSON_Delete(cfg);
    if (!strcmp(mf->arch, "llama") || !strcmp(mf->arch, "mistral")) {
        uint32_t nh = mf->hp.n_head, nkv = mf->hp.n_head_kv ? mf->hp.n_head_kv : nh;
        for (uint32_t l = 0; l < mf->hp.n_layer && l < (uint32_t)mf->n_tensors; l++) {
            char q[64], k[64];
            snprintf(q, sizeof q, "blk.%u.attn_q.weight", l);
            snprintf(k, sizeof k, "blk.%u.attn_k.weight", l);
            MF_TRY(unpermute(mf, c, q, nh));
            MF_TRY(unpermute(mf, c, k, nkv));
        }
        mf_add_note(mf, "Hugging Face q/k weights un-permuted to Meta/GGUF order at load");
        snprintf(mf->arch, sizeof mf->arch, "llama");
    }
    return TPORT_STATUS_OK;
}

/* Meta's params.json: dim, n_layers, n_heads, n_kv_heads, norm_eps,
 * rope_theta, vocab_size (-1 in the LLaMA-1 release: the embedding says);
 * the feed-forward width comes from w1's shape.  Meta's q/k are already
 * in GGUF order. */
tport_status mf_apply_meta_params(tport_model_file *mf, const mf_cursor *c) {
    (void)c;
    cJSON *p = mf->borrowed ? NULL : read_beside(mf->path, "params.json");
    if (!p) {
        embedding_only(mf, "params.json");
        return TPORT_STATUS_OK;
    }
    tport_mf_hparams *hp = &mf->hp;
    snprintf(mf->arch, sizeof mf->arch, "llama");
    hp->n_embd = cfg_u32(p, "dim");
    hp->n_layer = cfg_u32(p, "n_layers");
    hp->n_head = cfg_u32(p, "n_heads");
    hp->n_head_kv = cfg_u32(p, "n_kv_heads");
    hp->n_ctx = cfg_u32(p, "max_seq_len");
    if (!hp->n_ctx)
        hp->n_ctx = 2048; /* not in Meta's params.json; LLaMA's training context */
    if (!cfg_f32(p, "norm_eps", &hp->norm_eps))
        hp->norm_eps = 1e-5f; /* Meta's ModelArgs default */
    if (!cfg_f32(p, "rope_theta", &hp->rope_freq_base))
        hp->rope_freq_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->rope_mode = TPORT_ROPE_NORMAL;
    cJSON_Delete(p);
    const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
    if (e && e->n_dims == 2 && e->ne[1] <= UINT32_MAX)
        hp->n_vocab = (uint32_t)e->ne[1];
    const tport_mf_tensor *w1 = tport_model_file_find(mf, "blk.0.ffn_gate.weight");
    if (w1 && w1->n_dims == 2 && w1->ne[1] <= UINT32_MAX)
        hp->n_ff = (uint32_t)w1->ne[1];
    return TPORT_STATUS_OK;
}

#endif
