/* The llama model's shape and weights, taken from a model file and checked:
 * files are untrusted, so every tensor must have exactly the shape the
 * hyperparameters imply and data of the right size. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "quant/type_table.h"

#define MAX_DIM (1 << 24) /* far above any real model dimension */

static const tport_mf_tensor *find(const tport_model_file *mf, const char *name) {
    return tport_model_file_find(mf, name);
}

tport_status tport_llama_shape_from_file(const tport_model_file *mf, tport_llama_shape *sh) {
    const tport_llama_hparams *hp = &mf->hp;
    memset(sh, 0, sizeof *sh);
    if (mf->n_missing) /* a valid container with only some of the model's tensors */
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: not a complete model: %s", mf->path, mf->missing);
    if (mf->arch[0] && strcmp(mf->arch, "llama") != 0)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: architecture '%s' is not llama",
                           mf->path, mf->arch);
    const tport_mf_tensor *emb = find(mf, "token_embd.weight");
    const tport_mf_tensor *up = find(mf, "blk.0.ffn_up.weight");
    if (!emb)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: no token_embd.weight", mf->path);
    if (emb->ne[0] < 1 || emb->ne[0] >= MAX_DIM || emb->ne[1] < 1 || emb->ne[1] >= MAX_DIM)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: token_embd.weight has shape [%lld, %lld]",
                           mf->path, (long long)emb->ne[0], (long long)emb->ne[1]);
    /* the embedding is authoritative: GGUF files often omit n_vocab */
    sh->n_vocab = (int32_t)emb->ne[1];
    sh->n_embd = hp->n_embd ? (int32_t)hp->n_embd : (int32_t)emb->ne[0];
    sh->n_layer = (int32_t)hp->n_layer;
    sh->n_head = (int32_t)hp->n_head;
    sh->n_head_kv = hp->n_head_kv ? (int32_t)hp->n_head_kv : sh->n_head;
    sh->n_ff = hp->n_ff ? (int32_t)hp->n_ff : up && up->ne[1] < MAX_DIM ? (int32_t)up->ne[1] : 0;
    sh->n_ctx = hp->n_ctx ? (int32_t)(hp->n_ctx < (1u << 20) ? hp->n_ctx : (1u << 20)) : 2048;
    sh->norm_eps = hp->norm_eps > 0 ? hp->norm_eps : 1e-5f;
    sh->rope_base = hp->rope_freq_base > 0 ? hp->rope_freq_base : 10000.0f;
    sh->rope_scale = hp->rope_freq_scale > 0 ? hp->rope_freq_scale : 1.0f;
    sh->rope_mode = hp->rope_mode;
    if (hp->n_embd >= MAX_DIM || hp->n_layer >= 4096 || hp->n_head >= MAX_DIM ||
        hp->n_head_kv >= MAX_DIM || hp->n_ff >= MAX_DIM || hp->n_rot >= MAX_DIM)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: hyperparameters out of range", mf->path);
    if (sh->n_vocab <= 0 || sh->n_embd <= 0 || sh->n_layer <= 0 || sh->n_head <= 0 ||
        sh->n_head_kv <= 0 || sh->n_ff <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: incomplete hyperparameters (vocab %d, embd %d, layers %d, heads %d/%d, ff %d)",
                           mf->path, sh->n_vocab, sh->n_embd, sh->n_layer, sh->n_head,
                           sh->n_head_kv, sh->n_ff);
    if (sh->n_embd % sh->n_head || sh->n_head % sh->n_head_kv)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: %d heads do not divide n_embd %d or are not a multiple of %d kv heads",
                           mf->path, sh->n_head, sh->n_embd, sh->n_head_kv);
    sh->head_dim = sh->n_embd / sh->n_head;
    /* Pre-GGUF headers have no kv-head count (llama.cpp took LLaMA-2 70B's
     * from its -gqa option), so their readers report n_head: the width of
     * attn_k says how many kv heads the model really has. */
    const tport_mf_tensor *wk = find(mf, "blk.0.attn_k.weight");
    if ((mf->container == TPORT_CONTAINER_GGML || mf->container == TPORT_CONTAINER_GGMF ||
         mf->container == TPORT_CONTAINER_GGJT) && wk && wk->ne[1] > 0 && wk->ne[1] < sh->n_embd &&
        wk->ne[1] % sh->head_dim == 0 && sh->n_head % (int32_t)(wk->ne[1] / sh->head_dim) == 0) {
        sh->n_head_kv = (int32_t)(wk->ne[1] / sh->head_dim);
        tport_log(TPORT_LOG_INFO, "%s: %d kv heads, from the shape of blk.0.attn_k.weight", mf->path,
                  sh->n_head_kv);
    }
    sh->n_rot = hp->n_rot ? (int32_t)hp->n_rot : sh->head_dim;
    if (sh->n_rot > sh->head_dim || sh->n_rot % 2)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: rope dimensions %d for head size %d",
                           mf->path, sh->n_rot, sh->head_dim);
    if (sh->rope_mode != TPORT_ROPE_NORMAL && sh->rope_mode != TPORT_ROPE_NEOX)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: unknown rope mode %d", mf->path, sh->rope_mode);
    return TPORT_STATUS_OK;
}

/* A weight record for tensor `name`, which must have shape {ne0, ne1}
 * (ne1 = 0: one dimension). */
static tport_status bind(tport_model *m, const char *name, int64_t ne0, int64_t ne1,
                         bool optional, tport_tensor **out) {
    const tport_model_file *mf = m->file;
    const tport_mf_tensor *t = find(mf, name);
    *out = NULL;
    if (!t) {
        if (optional)
            return TPORT_STATUS_OK;
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor %s is missing", mf->path, name);
    }
    int64_t want1 = ne1 ? ne1 : 1;
    if (t->ne[0] != ne0 || t->ne[1] != want1 || t->ne[2] != 1 || t->ne[3] != 1)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]",
                           mf->path, name, (long long)t->ne[0], (long long)t->ne[1],
                           (long long)t->ne[2], (long long)t->ne[3], (long long)ne0, (long long)want1);
    const tport_type_traits *tr = tport_traits(t->type);
    if (!tr || !tr->to_float)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tensor %s has type %u, which cannot be computed",
                           mf->path, name, (unsigned)t->type);
    if (ne0 % tr->info.block_size)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor %s: row of %lld is not a multiple of "
                           "the block size %lld", mf->path, name, (long long)ne0,
                           (long long)tr->info.block_size);
    uint64_t need = (uint64_t)(ne0 / tr->info.block_size) * tr->info.block_bytes * (uint64_t)want1;
    if (!t->data || t->nbytes < need)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor %s holds %llu bytes, needs %llu",
                           mf->path, name, (unsigned long long)t->nbytes, (unsigned long long)need);
    void *data = (void *)t->data; /* zero copy: the file's read-only mapping */
    tport_type_id type = t->type;
    /* GGML and GGMF files do not align tensor data: a weight whose blocks'
     * scalars would be misaligned is copied, as reading it in place is
     * undefined behaviour */
    size_t align = tr->info.block_bytes % 4 == 0 ? 4 : tr->info.block_bytes % 2 == 0 ? 2 : 1;
    bool misaligned = (uintptr_t)data % align != 0;
    if (misaligned) {
        void *copy = aligned_alloc(64, (need + 63) / 64 * 64);
        tport_status st = copy ? tport_model_own(m, copy)
                               : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory copying %s",
                                             mf->path, name);
        if (st != TPORT_STATUS_OK)
            return st;
        memcpy(copy, t->data, need);
        data = copy;
        tport_log(TPORT_LOG_DEBUG, "%s: %s copied: its data in the file is not %zu-byte aligned", mf->path, name,
                  align);
    }
    if (!ne1 && type != TPORT_TYPE_F32) {
        /* norms are multiplied elementwise, which needs f32 */
        if (m->norm_cap - m->norm_used < (size_t)ne0)
            return tport_error(TPORT_STATUS_ERROR, "%s: too many norm weights", mf->path);
        float *dst = m->norm_f32 + m->norm_used;
        m->norm_used += (size_t)ne0;
        tr->to_float(data, dst, ne0);
        data = dst;
        type = TPORT_TYPE_F32;
    }
    tport_tensor *w = ne1 ? tport_new_tensor_2d(m->wctx, type, ne0, ne1)
                          : tport_new_tensor_1d(m->wctx, type, ne0);
    if (!w)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: cannot record tensor %s", mf->path, name);
    tport_tensor_set_data(w, data);
    tport_tensor_set_weight(w);
    tport_tensor_set_name(w, name);
    *out = w;
    return TPORT_STATUS_OK;
}

tport_status tport_llama_bind_weights(tport_model *m) {
    const tport_llama_shape *sh = &m->sh;
    int64_t e = sh->n_embd, kv = (int64_t)sh->head_dim * sh->n_head_kv, ff = sh->n_ff;
    tport_status st;
    m->norm_cap = (size_t)(2 * sh->n_layer + 1) * (size_t)sh->n_embd;
    m->norm_f32 = malloc(m->norm_cap * sizeof *m->norm_f32);
    if (!m->norm_f32)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory for norm weights");
    if ((st = bind(m, "token_embd.weight", e, sh->n_vocab, false, &m->tok_embd)) ||
        (st = bind(m, "output_norm.weight", e, 0, false, &m->output_norm)) ||
        (st = bind(m, "output.weight", e, sh->n_vocab, true, &m->output)))
        return st;
    if (!m->output)
        m->output = m->tok_embd; /* tied classifier */
    m->layers = calloc((size_t)sh->n_layer, sizeof *m->layers);
    if (!m->layers)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory for %d layers", sh->n_layer);
    for (int32_t i = 0; i < sh->n_layer; i++) {
        tport_llama_layer *l = &m->layers[i];
        struct {
            const char *what;
            int64_t ne0, ne1;
            tport_tensor **dst;
        } w[] = {
            {"attn_norm", e, 0, &l->attn_norm}, {"attn_q", e, e, &l->wq},
            {"attn_k", e, kv, &l->wk},          {"attn_v", e, kv, &l->wv},
            {"attn_output", e, e, &l->wo},      {"ffn_norm", e, 0, &l->ffn_norm},
            {"ffn_gate", e, ff, &l->w_gate},    {"ffn_up", e, ff, &l->w_up},
            {"ffn_down", ff, e, &l->w_down},
        };
        for (size_t k = 0; k < sizeof w / sizeof w[0]; k++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", (int)i, w[k].what);
            if ((st = bind(m, name, w[k].ne0, w[k].ne1, false, w[k].dst)))
                return st;
        }
    }
    return TPORT_STATUS_OK;
}
