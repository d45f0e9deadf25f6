/* The ggml examples' unversioned 'ggml' files (formats.md 1.3-1.6):
 * gpt-2 (and starcoder, which shares its layout), gpt-j, gpt-neox (also
 * dolly-v2 and stablelm) and mpt.  Nothing in the header names the
 * architecture, so each known hparams layout is tried as a dry run: the
 * vocabulary must start with an i32 count equal to hparams n_vocab (not
 * in gpt-neox and mpt files), the tensor records must parse exactly to the end of the
 * file, and every tensor name must follow that example's naming.  The one
 * layout that passes is then read for real, keeping the original tensor
 * names (no GGUF mapping is certain for these) and putting the
 * hyperparameters in the kv list under GGUF's key names for the arch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

enum { HP_VOCAB, HP_CTX, HP_EMBD, HP_HEAD, HP_LAYER, HP_ROT, HP_PAR_RES, HP_FTYPE, HP_ALIBI, HP_CLIP, HP_COUNT };

/* A tensor of an example's file: its GGUF name and the example's, "%d"
 * the layer in both; a complete model has every one not optional. */
typedef struct example_name {
    const char *gguf, *file;
    bool optional;
} example_name;

typedef struct example_layout {
    const char *arch;  /* mf->arch, GGUF's architecture name */
    const char *label; /* the ggml example's name            */
    int n_fields;
    int fields[HP_COUNT];          /* on-disk order of the hparams (i32; alibi, clip f32) */
    bool count_prefix;             /* the vocabulary starts with i32 n_vocab */
    const char *const *prefixes;   /* every tensor name starts with one */
    const example_name *names;     /* {NULL} ends them                 */
} example_layout;

/* gpt-2 and starcoder (ggml's starcoder example writes gpt-2's names) */
static const char *const gpt2_prefixes[] = {"model/", NULL};
static const example_name gpt2_names[] = {
    {"token_embd.weight", "model/wte", false},
    {"position_embd.weight", "model/wpe", false},
    {"blk.%d.attn_norm.weight", "model/h%d/ln_1/g", false},
    {"blk.%d.attn_norm.bias", "model/h%d/ln_1/b", false},
    {"blk.%d.attn_qkv.weight", "model/h%d/attn/c_attn/w", false},
    {"blk.%d.attn_qkv.bias", "model/h%d/attn/c_attn/b", false},
    {"blk.%d.attn_output.weight", "model/h%d/attn/c_proj/w", false},
    {"blk.%d.attn_output.bias", "model/h%d/attn/c_proj/b", false},
    {"blk.%d.ffn_norm.weight", "model/h%d/ln_2/g", false},
    {"blk.%d.ffn_norm.bias", "model/h%d/ln_2/b", false},
    {"blk.%d.ffn_up.weight", "model/h%d/mlp/c_fc/w", false},
    {"blk.%d.ffn_up.bias", "model/h%d/mlp/c_fc/b", false},
    {"blk.%d.ffn_down.weight", "model/h%d/mlp/c_proj/w", false},
    {"blk.%d.ffn_down.bias", "model/h%d/mlp/c_proj/b", false},
    {"output_norm.weight", "model/ln_f/g", false},
    {"output_norm.bias", "model/ln_f/b", false},
    {"output.weight", "model/lm_head", true},
    {NULL, NULL, false},
};

static const char *const gptj_prefixes[] = {"transformer.", "lm_head.", NULL};
static const example_name gptj_names[] = {
    {"token_embd.weight", "transformer.wte.weight", false},
    {"blk.%d.attn_norm.weight", "transformer.h.%d.ln_1.weight", false},
    {"blk.%d.attn_norm.bias", "transformer.h.%d.ln_1.bias", false},
    {"blk.%d.attn_q.weight", "transformer.h.%d.attn.q_proj.weight", false},
    {"blk.%d.attn_k.weight", "transformer.h.%d.attn.k_proj.weight", false},
    {"blk.%d.attn_v.weight", "transformer.h.%d.attn.v_proj.weight", false},
    {"blk.%d.attn_output.weight", "transformer.h.%d.attn.out_proj.weight", false},
    {"blk.%d.ffn_up.weight", "transformer.h.%d.mlp.fc_in.weight", false},
    {"blk.%d.ffn_up.bias", "transformer.h.%d.mlp.fc_in.bias", false},
    {"blk.%d.ffn_down.weight", "transformer.h.%d.mlp.fc_out.weight", false},
    {"blk.%d.ffn_down.bias", "transformer.h.%d.mlp.fc_out.bias", false},
    {"output_norm.weight", "transformer.ln_f.weight", false},
    {"output_norm.bias", "transformer.ln_f.bias", false},
    {"output.weight", "lm_head.weight", false},
    {"output.bias", "lm_head.bias", false},
    {NULL, NULL, false},
};

/* gpt-neox (also dolly-v2 and stablelm); query_key_value keeps its rows
 * per head as [q,k,v] (the architecture re-orders them) */
static const char *const neox_prefixes[] = {"gpt_neox.", "embed_out.", NULL};
static const example_name neox_names[] = {
    {"token_embd.weight", "gpt_neox.embed_in.weight", false},
    {"blk.%d.attn_norm.weight", "gpt_neox.layers.%d.input_layernorm.weight", false},
    {"blk.%d.attn_norm.bias", "gpt_neox.layers.%d.input_layernorm.bias", false},
    {"blk.%d.attn_qkv.weight", "gpt_neox.layers.%d.attention.query_key_value.weight", false},
    {"blk.%d.attn_qkv.bias", "gpt_neox.layers.%d.attention.query_key_value.bias", false},
    {"blk.%d.attn_output.weight", "gpt_neox.layers.%d.attention.dense.weight", false},
    {"blk.%d.attn_output.bias", "gpt_neox.layers.%d.attention.dense.bias", false},
    {"blk.%d.ffn_norm.weight", "gpt_neox.layers.%d.post_attention_layernorm.weight", false},
    {"blk.%d.ffn_norm.bias", "gpt_neox.layers.%d.post_attention_layernorm.bias", false},
    {"blk.%d.ffn_up.weight", "gpt_neox.layers.%d.mlp.dense_h_to_4h.weight", false},
    {"blk.%d.ffn_up.bias", "gpt_neox.layers.%d.mlp.dense_h_to_4h.bias", false},
    {"blk.%d.ffn_down.weight", "gpt_neox.layers.%d.mlp.dense_4h_to_h.weight", false},
    {"blk.%d.ffn_down.bias", "gpt_neox.layers.%d.mlp.dense_4h_to_h.bias", false},
    {"output_norm.weight", "gpt_neox.final_layer_norm.weight", false},
    {"output_norm.bias", "gpt_neox.final_layer_norm.bias", false},
    {"output.weight", "embed_out.weight", false},
    {NULL, NULL, false},
};

static const char *const mpt_prefixes[] = {"transformer.", NULL};
static const example_name mpt_names[] = {
    {"token_embd.weight", "transformer.wte.weight", false},
    {"blk.%d.attn_norm.weight", "transformer.blocks.%d.norm_1.weight", false},
    {"blk.%d.attn_qkv.weight", "transformer.blocks.%d.attn.Wqkv.weight", false},
    {"blk.%d.attn_output.weight", "transformer.blocks.%d.attn.out_proj.weight", false},
    {"blk.%d.ffn_norm.weight", "transformer.blocks.%d.norm_2.weight", false},
    {"blk.%d.ffn_up.weight", "transformer.blocks.%d.ffn.up_proj.weight", false},
    {"blk.%d.ffn_down.weight", "transformer.blocks.%d.ffn.down_proj.weight", false},
    {"output_norm.weight", "transformer.norm_f.weight", false},
    {NULL, NULL, false},
};

static const example_layout layouts[] = {
    {"gpt2", "gpt-2", 6, {HP_VOCAB, HP_CTX, HP_EMBD, HP_HEAD, HP_LAYER, HP_FTYPE}, true, gpt2_prefixes, gpt2_names},
    {"gptj", "gpt-j", 7, {HP_VOCAB, HP_CTX, HP_EMBD, HP_HEAD, HP_LAYER, HP_ROT, HP_FTYPE}, true, gptj_prefixes,
     gptj_names},
    /* gpt-neox (and dolly-v2): no count before the vocabulary either (its converter and main.cpp at
     * ggml@2a75bd43 and @d5c4ce0b read n_vocab entries straight after ftype) */
    {"gptneox", "gpt-neox", 8, {HP_VOCAB, HP_CTX, HP_EMBD, HP_HEAD, HP_LAYER, HP_ROT, HP_PAR_RES, HP_FTYPE}, false,
     neox_prefixes, neox_names},
    /* mpt: d_model, max_seq_len, n_heads, n_layers, n_vocab, f32 alibi_bias_max, f32 clip_qkv, ftype; the
     * vocabulary has no count prefix */
    {"mpt", "mpt", 8, {HP_EMBD, HP_CTX, HP_HEAD, HP_LAYER, HP_VOCAB, HP_ALIBI, HP_CLIP, HP_FTYPE}, false,
     mpt_prefixes, mpt_names},
};
#define N_LAYOUTS ((int)(sizeof layouts / sizeof layouts[0]))

/* Copies the last error, without its "PATH: " prefix, into why. */
static void keep_reason(const char *path, char *why, size_t cap) {
    const char *e = tport_last_error();
    size_t n = strlen(path);
    if (!strncmp(e, path, n) && e[n] == ':' && e[n + 1] == ' ')
        e += n + 2;
    snprintf(why, cap, "%s", e);
}

typedef struct probe {
    int32_t hp[HP_COUNT];
    int qnt;
    bool qk64;
    uint64_t vocab_at, tensors_at;
    int progress; /* 0 header, 1 vocab count matched, 2 vocab read, 3 records read */
} probe;

static bool has_field(const example_layout *l, int f) {
    for (int i = 0; i < l->n_fields; i++)
        if (l->fields[i] == f)
            return true;
    return false;
}

static float field_f32(int32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static bool name_allowed(const example_layout *l, const uint8_t *name, size_t len) {
    for (int i = 0; l->prefixes[i]; i++) {
        size_t n = strlen(l->prefixes[i]);
        if (len > n && !memcmp(name, l->prefixes[i], n))
            return true;
    }
    return false;
}

/* One tensor record: header checks, type at the quantization version,
 * size (QK_K = 64 k-quant sizes when qk64), data inside the file.  With
 * mf != NULL the tensor is appended. */
static tport_status example_record(tport_model_file *mf, mf_cursor *c, const example_layout *l, int qnt, bool qk64,
                                   bool *saw_kquant) {
    mf_legacy_record rec;
    MF_TRY(mf_read_legacy_record(c, &rec));
    const uint64_t at = rec.at;
    const int32_t n_dims = rec.n_dims, name_len = rec.name_len;
    const uint32_t code = rec.code;
    int64_t *ne = rec.ne;
    const uint8_t *name = rec.name;
    if (!name_allowed(l, name, (size_t)name_len))
        return mf_fail(c, at, "tensor name '%.*s' is not a %s name", name_len > 64 ? 64 : name_len,
                       (const char *)name, l->label);
    tport_type_id type;
    if (!mf_legacy_map_type(code, qnt, &type))
        return mf_fail(c, at + 8, "tensor '%.*s': type %u does not exist at quantization version %d",
                       name_len > 64 ? 64 : name_len, (const char *)name, code, qnt);
    if (type >= TPORT_TYPE_Q2_K && type <= TPORT_TYPE_Q6_K) {
        *saw_kquant = true;
        if (qk64)
            mf_qk64_type(type, &type);
    }
    uint64_t nbytes;
    MF_TRY(mf_tensor_bytes(c, at, type, n_dims, ne, &nbytes));
    if (nbytes > mf_left(c))
        return mf_fail(c, c->pos, "tensor '%.*s': %llu bytes of data, only %llu left in the file",
                       name_len > 64 ? 64 : name_len, (const char *)name, (unsigned long long)nbytes,
                       (unsigned long long)mf_left(c));
    uint64_t data_at = c->pos;
    c->pos += nbytes;
    if (!mf)
        return TPORT_STATUS_OK;
    return mf_add_tensor(mf, c, at, (const char *)name, (size_t)name_len, type, n_dims, ne, data_at);
}

static tport_status example_records(tport_model_file *mf, mf_cursor *c, const example_layout *l, int qnt,
                                    bool qk64, bool *saw_kquant) {
    while (c->pos < c->size)
        MF_TRY(example_record(mf, c, l, qnt, qk64, saw_kquant));
    return TPORT_STATUS_OK;
}

/* Dry run of one layout over the whole file; nothing is stored. */
static tport_status probe_layout(const mf_cursor *in, const example_layout *l, probe *p) {
    mf_cursor c = *in;
    c.pos = 4;
    memset(p, 0, sizeof *p);
    p->hp[HP_PAR_RES] = -1;
    static const char *const names[HP_COUNT] = {"n_vocab", "n_ctx", "n_embd",  "n_head",         "n_layer",
                                                "n_rot",   "par_res", "ftype", "alibi_bias_max", "clip_qkv"};
    for (int i = 0; i < l->n_fields; i++)
        MF_TRY(mf_read_i32(&c, &p->hp[l->fields[i]], names[l->fields[i]]));
    for (int i = HP_VOCAB; i <= HP_LAYER; i++)
        if (p->hp[i] <= 0 || p->hp[i] > (1 << 24))
            return mf_fail(&c, 4, "implausible %s = %d", names[i], p->hp[i]);
    if (p->hp[HP_EMBD] % p->hp[HP_HEAD])
        return mf_fail(&c, 4, "n_embd %d is not a multiple of n_head %d", p->hp[HP_EMBD], p->hp[HP_HEAD]);
    if (has_field(l, HP_ROT) && (p->hp[HP_ROT] < 0 || p->hp[HP_ROT] > p->hp[HP_EMBD] / p->hp[HP_HEAD]))
        return mf_fail(&c, 4, "n_rot %d is not within the head size %d", p->hp[HP_ROT],
                       p->hp[HP_EMBD] / p->hp[HP_HEAD]);
    if (has_field(l, HP_PAR_RES) && p->hp[HP_PAR_RES] != 0 && p->hp[HP_PAR_RES] != 1)
        return mf_fail(&c, 4, "par_res %d is not 0 or 1", p->hp[HP_PAR_RES]);
    for (int f = HP_ALIBI; f <= HP_CLIP; f++) {
        float v = field_f32(p->hp[f]);
        if (has_field(l, f) && !(v >= 0.0f && v <= 1e6f)) /* also rejects NaN */
            return mf_fail(&c, 4, "%s %g is implausible", names[f], (double)v);
    }
    if (p->hp[HP_FTYPE] < 0 || p->hp[HP_FTYPE] / 1000 > 2)
        return mf_fail(&c, c.pos - 4, "ftype %d: unknown quantization version", p->hp[HP_FTYPE]);
    p->qnt = p->hp[HP_FTYPE] / 1000;
    /* mpt came to ggml (1d6a133b, 2023-05-17) after GGML_QNT_VERSION 1, but
     * its quantize tool wrote the plain ftype until c2fab8a3 (05-20): such
     * files hold QNT1 blocks (or QNT2 ones for the three hours after
     * b0d536bb; nothing in the file tells those apart), never QNT0 */
    if (!strcmp(l->arch, "mpt") && p->qnt == 0)
        p->qnt = 1;
    uint64_t at = c.pos;
    int32_t count = p->hp[HP_VOCAB];
    if (l->count_prefix) {
        MF_TRY(mf_read_i32(&c, &count, "vocabulary count"));
        if (count != p->hp[HP_VOCAB])
            return mf_fail(&c, at, "vocabulary count %d differs from n_vocab %d", count, p->hp[HP_VOCAB]);
        p->progress = 1;
    }
    if ((uint64_t)count > mf_left(&c) / 4)
        return mf_fail(&c, at, "vocabulary of %d entries cannot fit in the %llu bytes left", count,
                       (unsigned long long)mf_left(&c));
    p->vocab_at = c.pos;
    for (int32_t i = 0; i < count; i++) {
        uint32_t len;
        MF_TRY(mf_read_u32(&c, &len, "token length"));
        MF_TRY(mf_skip(&c, len, "token text"));
    }
    if (l->count_prefix) /* without one, a vocabulary that parses proves little */
        p->progress = 2;
    p->tensors_at = c.pos;
    bool saw_kquant = false;
    tport_status s = example_records(NULL, &c, l, p->qnt, false, &saw_kquant);
    if (s && saw_kquant) { /* a QK_K = 64 build? (formats.md 3.7) */
        char first[256];
        keep_reason(in->path, first, sizeof first);
        c.pos = p->tensors_at;
        if (example_records(NULL, &c, l, p->qnt, true, &saw_kquant) == TPORT_STATUS_OK) {
            p->qk64 = true;
            s = TPORT_STATUS_OK;
        } else {
            s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %s", in->path, first);
        }
    }
    if (s == TPORT_STATUS_OK)
        p->progress = 3;
    return s;
}

static tport_status add_kv_u32(tport_model_file *mf, int *n, const char *arch, const char *key, uint32_t v) {
    char full[96];
    snprintf(full, sizeof full, "%s.%s", arch, key);
    tport_kv *kv = &mf->kv[(*n)++];
    if (!(kv->key = mf_strndup(mf, full, strlen(full))))
        return TPORT_STATUS_OUT_OF_MEMORY;
    kv->type = TPORT_KV_U32;
    kv->v.u = v;
    return TPORT_STATUS_OK;
}

static tport_status fill_metadata(tport_model_file *mf, const example_layout *l, const probe *p, bool mqa) {
    const char *a = mf->arch;
    mf->kv = mf_alloc_array(mf, 12, sizeof(tport_kv));
    if (!mf->kv)
        return TPORT_STATUS_OUT_OF_MEMORY;
    int n = 0;
    MF_TRY(add_kv_u32(mf, &n, a, "vocab_size", (uint32_t)p->hp[HP_VOCAB]));
    MF_TRY(add_kv_u32(mf, &n, a, "context_length", (uint32_t)p->hp[HP_CTX]));
    MF_TRY(add_kv_u32(mf, &n, a, "embedding_length", (uint32_t)p->hp[HP_EMBD]));
    MF_TRY(add_kv_u32(mf, &n, a, "feed_forward_length", 4u * (uint32_t)p->hp[HP_EMBD])); /* all three use 4*n_embd */
    MF_TRY(add_kv_u32(mf, &n, a, "block_count", (uint32_t)p->hp[HP_LAYER]));
    MF_TRY(add_kv_u32(mf, &n, a, "attention.head_count", (uint32_t)p->hp[HP_HEAD]));
    if (mqa)
        MF_TRY(add_kv_u32(mf, &n, a, "attention.head_count_kv", 1));
    if (has_field(l, HP_ROT))
        MF_TRY(add_kv_u32(mf, &n, a, "rope.dimension_count", (uint32_t)p->hp[HP_ROT]));
    /* the examples hard-code LayerNorm's epsilon as 1e-5 */
    tport_kv *kv = &mf->kv[n];
    char key[96];
    snprintf(key, sizeof key, "%s.attention.layer_norm_epsilon", a);
    if (!(kv->key = mf_strndup(mf, key, strlen(key))))
        return TPORT_STATUS_OUT_OF_MEMORY;
    kv->type = TPORT_KV_F32;
    kv->v.f = 1e-5f;
    n++;
    for (int f = HP_ALIBI; f <= HP_CLIP; f++) {
        /* llama.cpp's mpt keys; a clip of 0 means none and is left out */
        if (!has_field(l, f) || (f == HP_CLIP && field_f32(p->hp[f]) == 0.0f))
            continue;
        kv = &mf->kv[n];
        snprintf(key, sizeof key, "%s.attention.%s", a, f == HP_ALIBI ? "max_alibi_bias" : "clamp_kqv");
        if (!(kv->key = mf_strndup(mf, key, strlen(key))))
            return TPORT_STATUS_OUT_OF_MEMORY;
        kv->type = TPORT_KV_F32;
        kv->v.f = field_f32(p->hp[f]);
        n++;
    }
    if (has_field(l, HP_PAR_RES)) {
        kv = &mf->kv[n];
        snprintf(key, sizeof key, "%s.use_parallel_residual", a);
        if (!(kv->key = mf_strndup(mf, key, strlen(key))))
            return TPORT_STATUS_OUT_OF_MEMORY;
        kv->type = TPORT_KV_BOOL;
        kv->v.b = p->hp[HP_PAR_RES] != 0;
        n++;
    }
    mf->n_kv = n;
    return TPORT_STATUS_OK;
}

static tport_status read_vocab(tport_model_file *mf, mf_cursor *c, int32_t n_vocab) {
    tport_vocab *v = &mf->vocab;
    v->tokens = mf_alloc_array(mf, (uint64_t)n_vocab, sizeof(char *));
    v->token_len = mf_alloc_array(mf, (uint64_t)n_vocab, sizeof(uint32_t));
    if (!v->tokens || !v->token_len)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int32_t i = 0; i < n_vocab; i++) {
        uint32_t len;
        const uint8_t *p;
        MF_TRY(mf_read_u32(c, &len, "token length"));
        MF_TRY(mf_read_bytes(c, len, &p, "token text"));
        if (!(v->tokens[i] = mf_strndup(mf, p, len)))
            return TPORT_STATUS_OUT_OF_MEMORY;
        v->token_len[i] = len;
        if (len == 13 && !memcmp(p, "<|endoftext|>", 13))
            v->bos = v->eos = i; /* GPT-2's BPE vocabularies (also gpt-j, neox) */
    }
    v->n_tokens = n_vocab;
    snprintf(v->model, sizeof v->model, "gpt2");
    v->add_bos = false;
    return TPORT_STATUS_OK;
}

static tport_status read_layout(tport_model_file *mf, mf_cursor *c, const example_layout *l, const probe *p) {
    mf->quant_version = p->qnt;
    mf->file_type = (uint32_t)(p->hp[HP_FTYPE] % 1000);
    snprintf(mf->arch, sizeof mf->arch, "%s", l->arch);
    c->pos = p->vocab_at;
    MF_TRY(read_vocab(mf, c, p->hp[HP_VOCAB]));
    bool saw_kquant = false;
    MF_TRY(example_records(mf, c, l, p->qnt, p->qk64, &saw_kquant));
    MF_TRY(mf_check_unique_names(mf, c));
    /* records run to EOF and nothing counts them: a file with some of the
     * tensors is a valid container; say what a complete model also needs */
    char label[48];
    snprintf(label, sizeof label, "%d-layer %s", p->hp[HP_LAYER], l->label);
    const char *globals[24], *per_layer[24];
    int n_globals = 0, n_per_layer = 0;
    for (const example_name *e = l->names; e->gguf; e++)
        if (!e->optional) {
            if (strstr(e->file, "%d"))
                per_layer[n_per_layer++] = e->file;
            else
                globals[n_globals++] = e->file;
        }
    globals[n_globals] = per_layer[n_per_layer] = NULL;
    MF_TRY(mf_list_missing(mf, label, globals, per_layer, (uint32_t)p->hp[HP_LAYER]));
    /* ggml's starcoder example writes gpt-2's layout and names.  Its own
     * converter (convert-hf-to-ggml.py) repeats the one K,V head n_head
     * times, so those files are gpt-2 files with a model/lm_head and run
     * as gpt2 (the same arithmetic); a file that keeps the multi-query
     * c_attn (n_embd + 2 head sizes of outputs instead of 3 * n_embd) is
     * read as starcoder */
    bool mqa = false;
    const tport_mf_tensor *qkv = tport_model_file_find(mf, "model/h0/attn/c_attn/w");
    int64_t E = p->hp[HP_EMBD], head = E / p->hp[HP_HEAD];
    if (!strcmp(l->arch, "gpt2") && qkv && qkv->n_dims == 2 && qkv->ne[1] == E + 2 * head && qkv->ne[1] != 3 * E) {
        snprintf(mf->arch, sizeof mf->arch, "starcoder");
        mqa = true;
    }
    MF_TRY(fill_metadata(mf, l, p, mqa));
    if (p->qk64)
        snprintf(mf->notes, sizeof mf->notes, "k-quant tensors in the QK_K = 64 layout (a GGML_QKK_64 build)");
    /* what applies of the llama-only struct, for generic readers */
    tport_mf_hparams *h = &mf->hp;
    h->n_vocab = (uint32_t)p->hp[HP_VOCAB];
    h->n_ctx = (uint32_t)p->hp[HP_CTX];
    h->n_embd = (uint32_t)p->hp[HP_EMBD];
    h->n_ff = 4u * h->n_embd;
    h->n_head = h->n_head_kv = (uint32_t)p->hp[HP_HEAD];
    if (mqa)
        h->n_head_kv = 1;
    h->n_layer = (uint32_t)p->hp[HP_LAYER];
    h->n_rot = has_field(l, HP_ROT) ? (uint32_t)p->hp[HP_ROT] : 0;
    h->norm_eps = 1e-5f;
    h->rope_mode = TPORT_ROPE_NEOX;
    return TPORT_STATUS_OK;
}

tport_status mf_read_ggml_example(tport_model_file *mf, mf_cursor *c, char *why, size_t cap, int *progress) {
    probe probes[N_LAYOUTS];
    char reasons[N_LAYOUTS][160];
    int match = -1, first = -1, n_match = 0;
    *progress = 0;
    why[0] = '\0';
    for (int i = 0; i < N_LAYOUTS; i++) {
        reasons[i][0] = '\0';
        if (probe_layout(c, &layouts[i], &probes[i]) == TPORT_STATUS_OK) {
            if (first < 0)
                first = i;
            match = i;
            n_match++;
        } else {
            keep_reason(c->path, reasons[i], sizeof reasons[i]);
        }
        if (probes[i].progress > *progress)
            *progress = probes[i].progress;
    }
    if (n_match > 1)
        return mf_fail(c, 4, "ambiguous ggml-example file: it parses both as %s and as %s",
                       layouts[first].label, layouts[match].label);
    if (n_match == 1)
        return read_layout(mf, c, &layouts[match], &probes[match]);
    /* what each layout tripped on, the one that got furthest first */
    int n = 0;
    for (int level = 3; level >= 0; level--)
        for (int i = 0; i < N_LAYOUTS; i++) {
            if (probes[i].progress != level)
                continue;
            n += snprintf(why + n, n < (int)cap ? cap - (size_t)n : 0, "%s%s: %s", n ? "; " : "",
                          layouts[i].label, reasons[i]);
            if (n >= (int)cap)
                n = (int)cap - 1;
        }
    return TPORT_STATUS_UNSUPPORTED; /* not an example file: the caller tries llama */
}

bool mf_example_name_at(const char *arch, int i, const char **gguf, const char **file) {
    if (!arch || i < 0)
        return false;
    if (!strcmp(arch, "starcoder"))
        arch = "gpt2";
    for (int k = 0; k < N_LAYOUTS; k++) {
        if (strcmp(layouts[k].arch, arch))
            continue;
        for (int j = 0; layouts[k].names[j].gguf; j++)
            if (j == i) {
                *gguf = layouts[k].names[j].gguf;
                *file = layouts[k].names[j].file;
                return true;
            }
        return false;
    }
    return false;
}
