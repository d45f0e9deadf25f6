/* See model_writer.h. */
#include "model_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../formats/byte_builder.h"
#include "formats/gguf_write.h"
#include "quant/type_table.h"

void mw_temp_path(char *path, const char *tag) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, 256, "%s/tport-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
}

static bool is_matrix(const tport_mf_tensor *t) {
    return t->ne[1] > 1 && t->ne[2] == 1 && t->ne[3] == 1;
}

/* The tensor's data in `type` (malloc'd), or NULL. */
static void *converted(const tport_mf_tensor *t, tport_type_id type, uint64_t *nbytes, mw_result *res) {
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    size_t row = tport_row_size(type, t->ne[0]);
    if (!row)
        return NULL;
    *nbytes = (uint64_t)row * (uint64_t)(n / t->ne[0]);
    void *dst = malloc(*nbytes ? *nbytes : 1);
    tport_convert_report rep;
    if (!dst || tport_convert(t->type, t->data, type, dst, n, &rep) != TPORT_STATUS_OK) {
        fprintf(stderr, "model_writer: %s: %s\n", t->name, tport_last_error());
        free(dst);
        return NULL;
    }
    if (rep.kind > res->worst)
        res->worst = rep.kind;
    return dst;
}

/* The type a tensor is written in: mat_type for matrices whose rows are
 * whole blocks of it, else f32. */
static tport_type_id type_for(const tport_mf_tensor *t, tport_type_id mat_type, mw_result *res) {
    if (!is_matrix(t))
        return TPORT_TYPE_F32;
    if (t->ne[0] % tport_type_get(mat_type)->block_size) {
        res->n_kept_f32++;
        return TPORT_TYPE_F32;
    }
    if (mat_type != t->type)
        res->n_converted++;
    return mat_type;
}

bool mw_write_gguf(const tport_model_file *src, tport_type_id mat_type, const char *path, mw_result *res) {
    memset(res, 0, sizeof *res);
    const tport_mf_hparams *hp = &src->hp;
    tport_gguf_writer *w = tport_gguf_writer_new();
    void **bufs = calloc((size_t)src->n_tensors, sizeof *bufs);
    bool ok = w && bufs;
    ok = ok && !tport_gguf_set_str(w, "general.architecture", "llama");
    ok = ok && !tport_gguf_set_u32(w, "llama.context_length", hp->n_ctx);
    ok = ok && !tport_gguf_set_u32(w, "llama.embedding_length", hp->n_embd);
    ok = ok && !tport_gguf_set_u32(w, "llama.block_count", hp->n_layer);
    ok = ok && !tport_gguf_set_u32(w, "llama.feed_forward_length", hp->n_ff);
    ok = ok && !tport_gguf_set_u32(w, "llama.attention.head_count", hp->n_head);
    ok = ok && !tport_gguf_set_u32(w, "llama.attention.head_count_kv", hp->n_head_kv);
    ok = ok && !tport_gguf_set_u32(w, "llama.rope.dimension_count", hp->n_rot);
    ok = ok && !tport_gguf_set_f32(w, "llama.attention.layer_norm_rms_epsilon", hp->norm_eps);
    ok = ok && !tport_gguf_set_f32(w, "llama.rope.freq_base", hp->rope_freq_base);
    for (int i = 0; ok && i < src->n_tensors; i++) {
        const tport_mf_tensor *t = &src->tensors[i];
        tport_type_id type = type_for(t, mat_type, res);
        uint64_t nbytes = 0;
        ok = (bufs[i] = converted(t, type, &nbytes, res)) != NULL &&
             !tport_gguf_add_tensor(w, t->name, type, t->n_dims, t->ne, bufs[i], nbytes);
    }
    if (ok && tport_gguf_write(w, path) != TPORT_STATUS_OK) {
        fprintf(stderr, "model_writer: %s: %s\n", path, tport_last_error());
        ok = false;
    }
    for (int i = 0; bufs && i < src->n_tensors; i++)
        free(bufs[i]);
    free(bufs);
    tport_gguf_writer_free(w);
    return ok;
}

/* GGUF names -> the names of the original LLaMA checkpoints. */
static bool legacy_name(const char *name, char *out, size_t cap) {
    static const struct { const char *gguf, *legacy; } whole[] = {
        {"token_embd.weight", "tok_embeddings.weight"},
        {"output_norm.weight", "norm.weight"},
        {"output.weight", "output.weight"},
    };
    static const struct { const char *gguf, *legacy; } layer[] = {
        {"attn_q.weight", "attention.wq.weight"},       {"attn_k.weight", "attention.wk.weight"},
        {"attn_v.weight", "attention.wv.weight"},       {"attn_output.weight", "attention.wo.weight"},
        {"attn_norm.weight", "attention_norm.weight"},  {"ffn_norm.weight", "ffn_norm.weight"},
        {"ffn_gate.weight", "feed_forward.w1.weight"},  {"ffn_down.weight", "feed_forward.w2.weight"},
        {"ffn_up.weight", "feed_forward.w3.weight"},
    };
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        if (!strcmp(name, whole[i].gguf))
            return snprintf(out, cap, "%s", whole[i].legacy) > 0;
    unsigned layer_no;
    int used = 0;
    if (sscanf(name, "blk.%u.%n", &layer_no, &used) != 1 || !used)
        return false;
    for (size_t i = 0; i < sizeof layer / sizeof layer[0]; i++)
        if (!strcmp(name + used, layer[i].gguf))
            return snprintf(out, cap, "layers.%u.%s", layer_no, layer[i].legacy) > 0;
    return false;
}

static uint32_t code_of(tport_type_id type, tport_type_id mat_type, uint32_t mat_code) {
    return type == mat_type ? mat_code : type == TPORT_TYPE_F16 ? 1 : 0;
}

static bool put_tensor(bb *b, const tport_mf_tensor *t, const char *name, bool aligned, tport_type_id mat_type,
                       uint32_t mat_code, mw_result *res) {
    char lname[128];
    if (!legacy_name(name, lname, sizeof lname)) {
        fprintf(stderr, "model_writer: no legacy name for %s\n", name);
        return false;
    }
    tport_type_id type = type_for(t, mat_type, res);
    uint64_t nbytes = 0;
    void *data = converted(t, type, &nbytes, res);
    if (!data)
        return false;
    int n_dims = is_matrix(t) ? 2 : 1;
    bb_i32(b, n_dims);
    bb_i32(b, (int32_t)strlen(lname));
    bb_u32(b, code_of(type, mat_type, mat_code));
    for (int d = 0; d < n_dims; d++)
        bb_i32(b, (int32_t)t->ne[d]);
    bb_raw(b, lname, strlen(lname));
    if (aligned)
        bb_pad_to(b, 32);
    bb_raw(b, data, (size_t)nbytes);
    free(data);
    return true;
}

bool mw_write_legacy(const tport_model_file *src, uint32_t magic, uint32_t version, tport_type_id mat_type,
                     uint32_t mat_code, const char *path, mw_result *res) {
    memset(res, 0, sizeof *res);
    const tport_mf_hparams *hp = &src->hp;
    const tport_mf_tensor *embd = tport_model_file_find(src, "token_embd.weight");
    if (!embd)
        return false;
    uint32_t n_vocab = (uint32_t)embd->ne[1];
    bb b = {0};
    bb_u32(&b, magic);
    if (magic != MW_MAGIC_GGML)
        bb_u32(&b, version);
    /* n_vocab, n_embd, n_mult (unused when ffn_gate is present), n_head,
     * n_layer, n_rot, ftype (2 = mostly q4_0) */
    uint32_t header[7] = {n_vocab, hp->n_embd, 1, hp->n_head, hp->n_layer, hp->n_rot,
                          mat_type == TPORT_TYPE_F32 ? 0u : mat_code == 1 ? 1u : 2u};
    for (int i = 0; i < 7; i++)
        bb_u32(&b, header[i]);
    for (uint32_t i = 0; i < n_vocab; i++) {
        char tok[16];
        int len = snprintf(tok, sizeof tok, "t%u", i);
        bb_u32(&b, (uint32_t)len);
        bb_raw(&b, tok, (size_t)len);
        if (magic != MW_MAGIC_GGML)
            bb_f32(&b, -(float)i);
    }
    bool aligned = magic == MW_MAGIC_GGJT, ok = true;
    for (int i = 0; ok && i < src->n_tensors; i++)
        ok = put_tensor(&b, &src->tensors[i], src->tensors[i].name, aligned, mat_type, mat_code, res);
    if (ok && !tport_model_file_find(src, "output.weight")) /* tied classifier: store it */
        ok = put_tensor(&b, embd, "output.weight", aligned, mat_type, mat_code, res);
    FILE *f = ok ? fopen(path, "wb") : NULL;
    ok = f && fwrite(b.p, 1, b.n, f) == b.n;
    if (f && fclose(f) != 0)
        ok = false;
    bb_free(&b);
    return ok;
}
