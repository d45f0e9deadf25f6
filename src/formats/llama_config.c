/* The JSON configs beside checkpoint files: Hugging Face's config.json
 * (safetensors, pytorch_model.bin; mapped by hf_arch.c, with the tokenizer
 * of hf_tokenizer.c) and Meta's params.json (consolidated.00.pth). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf_meta.h"
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
cJSON *mf_read_beside(const char *model_path, const char *name) {
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

/* config.json gives the architecture, its keys and its tensors' names and
 * layouts (hf_arch.c), tokenizer.json the tokenizer (hf_tokenizer.c), both
 * as GGUF keys; the hyperparameters and vocabulary then come from those
 * keys as from a GGUF file's. */
/* A safetensors U8 tensor the mapping did not take as MXFP4 blocks or
 * scales (no config.json, or an architecture without them). */
static tport_status refuse_u8(const tport_model_file *mf, const mf_cursor *c) {
    for (int i = 0; i < mf->n_tensors; i++)
        if (mf->tensors[i].type == MF_TYPE_U8)
            return mf_fail(c, mf->tensors[i].offset, "tensor %s: dtype U8 is read only as MXFP4 blocks and scales "
                           "of an architecture that has them (gpt-oss, with its config.json)", mf->tensors[i].name);
    return TPORT_STATUS_OK;
}

tport_status mf_apply_hf_config(tport_model_file *mf, const mf_cursor *c) {
    cJSON *cfg = mf->borrowed ? NULL : mf_read_beside(mf->path, "config.json");
    if (!cfg) {
        MF_TRY(refuse_u8(mf, c));
        embedding_only(mf, "config.json");
        return TPORT_STATUS_OK;
    }
    tport_status st = mf_hf_map_config(mf, c, cfg);
    if (!st)
        st = refuse_u8(mf, c);
    if (!st)
        st = mf_hf_tokenizer(mf, c, cfg);
    cJSON_Delete(cfg);
    return st ? st : mf_gguf_apply_metadata(mf, c);
}

/* Meta's params.json: dim, n_layers, n_heads, n_kv_heads, norm_eps,
 * rope_theta, vocab_size (-1 in the LLaMA-1 release: the embedding says);
 * the feed-forward width comes from w1's shape.  Meta's q/k are already
 * in GGUF order. */
tport_status mf_apply_meta_params(tport_model_file *mf, const mf_cursor *c) {
    (void)c;
    cJSON *p = mf->borrowed ? NULL : mf_read_beside(mf->path, "params.json");
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
