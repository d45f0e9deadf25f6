/* GGUF metadata -> hyperparameters and vocabulary (formats.md 2.5; keys as
 * llama.cpp writes them). */
#include <stdio.h>
#include <string.h>

#include "formats/gguf_meta.h"

size_t mf_kv_elem_size(uint32_t type) {
    switch (type) {
    case TPORT_KV_U8: return sizeof(uint8_t);
    case TPORT_KV_I8: return sizeof(int8_t);
    case TPORT_KV_BOOL: return sizeof(bool);
    case TPORT_KV_U16: return sizeof(uint16_t);
    case TPORT_KV_I16: return sizeof(int16_t);
    case TPORT_KV_U32: return sizeof(uint32_t);
    case TPORT_KV_I32: return sizeof(int32_t);
    case TPORT_KV_F32: return sizeof(float);
    case TPORT_KV_U64: return sizeof(uint64_t);
    case TPORT_KV_I64: return sizeof(int64_t);
    case TPORT_KV_F64: return sizeof(double);
    case TPORT_KV_STRING: return sizeof(char *);
    case TPORT_KV_ARRAY: return sizeof(tport_kv);
    default: return 0;
    }
}

const tport_kv *mf_kv_find(const tport_model_file *mf, const char *key) {
    for (int i = 0; i < mf->n_kv; i++)
        if (mf->kv[i].key && !strcmp(mf->kv[i].key, key))
            return &mf->kv[i];
    return NULL;
}

const tport_kv *tport_model_file_kv(const tport_model_file *mf, const char *key) {
    return mf && key ? mf_kv_find(mf, key) : NULL;
}

bool mf_kv_u32(const tport_model_file *mf, const char *key, uint32_t *out) {
    const tport_kv *kv = mf_kv_find(mf, key);
    if (!kv)
        return false;
    switch (kv->type) {
    case TPORT_KV_U8: case TPORT_KV_U16: case TPORT_KV_U32: case TPORT_KV_U64:
        if (kv->v.u > UINT32_MAX)
            return false;
        *out = (uint32_t)kv->v.u;
        return true;
    case TPORT_KV_I8: case TPORT_KV_I16: case TPORT_KV_I32: case TPORT_KV_I64:
        if (kv->v.i < 0 || kv->v.i > (int64_t)UINT32_MAX)
            return false;
        *out = (uint32_t)kv->v.i;
        return true;
    default:
        return false;
    }
}

bool mf_kv_f32(const tport_model_file *mf, const char *key, float *out) {
    const tport_kv *kv = mf_kv_find(mf, key);
    if (!kv || (kv->type != TPORT_KV_F32 && kv->type != TPORT_KV_F64))
        return false;
    *out = (float)kv->v.f;
    return true;
}

static uint32_t arch_u32(const tport_model_file *mf, const char *suffix) {
    char key[96];
    uint32_t v = 0;
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    return mf_kv_u32(mf, key, &v) ? v : 0;
}

static bool arch_f32(const tport_model_file *mf, const char *suffix, float *out) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    return mf_kv_f32(mf, key, out);
}

/* Architectures whose RoPE rotates pairs (i, i + n/2), as llama.cpp has it. */
static int rope_mode_of(const char *arch) {
    static const char *const neox[] = {"falcon", "gptneox", "stablelm", "qwen", "qwen2", "phi2",
                                       "phi3", "gemma", "gemma2", "gemma3", "starcoder2", "olmo", "bert"};
    for (size_t i = 0; i < sizeof neox / sizeof neox[0]; i++)
        if (!strcmp(arch, neox[i]))
            return TPORT_ROPE_NEOX;
    return TPORT_ROPE_NORMAL;
}

static void read_hparams(tport_model_file *mf) {
    tport_mf_hparams *hp = &mf->hp;
    hp->n_ctx = arch_u32(mf, "context_length");
    hp->n_embd = arch_u32(mf, "embedding_length");
    hp->n_ff = arch_u32(mf, "feed_forward_length");
    hp->n_layer = arch_u32(mf, "block_count");
    hp->n_head = arch_u32(mf, "attention.head_count");
    hp->n_head_kv = arch_u32(mf, "attention.head_count_kv");
    /* Without rope.dimension_count RoPE turns the whole head, as llama.cpp
     * does (n_rot = n_embd_head_k): the key length where the file has one,
     * which need not be n_embd / n_head (Gemma-7B: 16 heads of 256 in a
     * 3072-wide embedding; Hugging Face's converter writes no rotary
     * count for gemma). */
    hp->n_rot = arch_u32(mf, "rope.dimension_count");
    if (!hp->n_rot)
        hp->n_rot = arch_u32(mf, "attention.key_length");
    hp->n_vocab = arch_u32(mf, "vocab_size");
    if (!arch_f32(mf, "attention.layer_norm_rms_epsilon", &hp->norm_eps) || !(hp->norm_eps > 0))
        hp->norm_eps = 1e-5f;
    if (!arch_f32(mf, "rope.freq_base", &hp->rope_freq_base))
        hp->rope_freq_base = 10000.0f;
    float factor;
    if ((arch_f32(mf, "rope.scaling.factor", &factor) || arch_f32(mf, "rope.scale_linear", &factor)) &&
        factor > 0)
        hp->rope_freq_scale = 1.0f / factor;
    else
        hp->rope_freq_scale = 1.0f;
    hp->rope_mode = rope_mode_of(mf->arch);
    char key[96];
    snprintf(key, sizeof key, "%s.rope.scaling.type", mf->arch);
    const tport_kv *scaling = mf_kv_find(mf, key);
    hp->rope_scaling = TPORT_MF_ROPE_SCALING_LINEAR;
    if (scaling && scaling->type == TPORT_KV_STRING) {
        static const char *const names[] = {"linear", "none", "yarn", "longrope"};
        hp->rope_scaling = TPORT_MF_ROPE_SCALING_OTHER;
        for (int i = 0; i < 4; i++)
            if (!strcmp(scaling->v.s, names[i]))
                hp->rope_scaling = i;
    }
    if (!arch_f32(mf, "rope.scaling.attn_factor", &hp->rope_attn_factor))
        hp->rope_attn_factor = 1.0f;
    hp->rope_n_ctx_orig = arch_u32(mf, "rope.scaling.original_context_length");
}

/* A token id kv; out-of-range ids are dropped with a warning rather than
 * handed to code that would index with them. */
static int32_t token_id(const tport_model_file *mf, const char *key) {
    uint32_t v;
    if (!mf_kv_u32(mf, key, &v))
        return -1;
    if ((int64_t)v >= mf->vocab.n_tokens) {
        tport_log(TPORT_LOG_WARN, "%s: %s = %u is outside the vocabulary of %d tokens; ignored", mf->path, key,
                  v, mf->vocab.n_tokens);
        return -1;
    }
    return (int32_t)v;
}

static tport_status read_vocab(tport_model_file *mf, const mf_cursor *c) {
    tport_vocab *v = &mf->vocab;
    const tport_kv *model = mf_kv_find(mf, "tokenizer.ggml.model");
    if (model && model->type == TPORT_KV_STRING)
        snprintf(v->model, sizeof v->model, "%s", model->v.s);
    const tport_kv *tokens = mf_kv_find(mf, "tokenizer.ggml.tokens");
    if (!tokens)
        return TPORT_STATUS_OK;
    if (tokens->type != TPORT_KV_ARRAY || tokens->elem_type != TPORT_KV_STRING)
        return mf_fail(c, 0, "tokenizer.ggml.tokens is not an array of strings");
    if (tokens->n_elems > INT32_MAX)
        return mf_fail(c, 0, "tokenizer.ggml.tokens has too many entries");
    int32_t n = (int32_t)tokens->n_elems;
    v->n_tokens = n;
    v->tokens = tokens->v.arr;
    v->token_len = mf_alloc_array(mf, n ? (uint64_t)n : 1, sizeof(uint32_t));
    if (!v->token_len)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int32_t i = 0; i < n; i++)
        v->token_len[i] = (uint32_t)strlen(v->tokens[i]);
    const tport_kv *scores = mf_kv_find(mf, "tokenizer.ggml.scores");
    if (scores) {
        if (scores->type != TPORT_KV_ARRAY || scores->elem_type != TPORT_KV_F32 || scores->n_elems != (uint64_t)n)
            return mf_fail(c, 0, "tokenizer.ggml.scores must be %d f32 values", n);
        v->scores = scores->v.arr;
    }
    const tport_kv *types = mf_kv_find(mf, "tokenizer.ggml.token_type");
    if (types) {
        if (types->type != TPORT_KV_ARRAY || types->elem_type != TPORT_KV_I32 || types->n_elems != (uint64_t)n)
            return mf_fail(c, 0, "tokenizer.ggml.token_type must be %d i32 values", n);
        v->token_type = types->v.arr;
    }
    v->bos = token_id(mf, "tokenizer.ggml.bos_token_id");
    v->eos = token_id(mf, "tokenizer.ggml.eos_token_id");
    v->unk = token_id(mf, "tokenizer.ggml.unknown_token_id");
    v->pad = token_id(mf, "tokenizer.ggml.padding_token_id");
    const tport_kv *add_bos = mf_kv_find(mf, "tokenizer.ggml.add_bos_token");
    if (add_bos && add_bos->type == TPORT_KV_BOOL)
        v->add_bos = add_bos->v.b;
    else
        v->add_bos = !strcmp(v->model, "llama") && v->bos >= 0; /* llama.cpp's default for SPM */
    return TPORT_STATUS_OK;
}

tport_status mf_gguf_apply_metadata(tport_model_file *mf, const mf_cursor *c) {
    const tport_kv *arch = mf_kv_find(mf, "general.architecture");
    if (arch && arch->type == TPORT_KV_STRING)
        snprintf(mf->arch, sizeof mf->arch, "%s", arch->v.s);
    uint32_t u;
    mf->quant_version = mf_kv_u32(mf, "general.quantization_version", &u) && u <= INT32_MAX ? (int32_t)u : -1;
    if (mf_kv_u32(mf, "general.file_type", &u))
        mf->file_type = u;
    read_hparams(mf);
    MF_TRY(read_vocab(mf, c));
    if (mf->hp.n_vocab == 0) {
        if (mf->vocab.n_tokens > 0)
            mf->hp.n_vocab = (uint32_t)mf->vocab.n_tokens;
        else {
            const tport_mf_tensor *t = tport_model_file_find(mf, "token_embd.weight");
            if (t && t->ne[1] <= UINT32_MAX)
                mf->hp.n_vocab = (uint32_t)t->ne[1];
        }
    }
    return TPORT_STATUS_OK;
}
