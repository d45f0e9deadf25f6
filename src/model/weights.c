/* A model's shape and weights, taken from a model file through its
 * architecture's table and checked: files are untrusted, so every tensor
 * must have exactly the shape the hyperparameters imply and data of the
 * right size. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/arch/arch.h"
#include "model/arch/arch_math.h"
#include "model/model.h"
#include "quant/row_groups.h"
#include "quant/type_table.h"

#define MAX_DIM (1 << 24) /* far above any real model dimension */

static bool grouped_type(tport_type_id type) {
    return tport_row_group_of(type) != NULL;
}

static const tport_mf_tensor *find(const tport_model_file *mf, const char *name) {
    return tport_model_file_find(mf, name);
}

/* "<arch>.<suffix>" as an unsigned count, 0 when absent. */
static uint32_t arch_u32(const tport_model_file *mf, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    const tport_kv *kv = tport_model_file_kv(mf, key);
    if (!kv)
        return 0;
    switch (kv->type) {
    case TPORT_KV_U8: case TPORT_KV_U16: case TPORT_KV_U32: case TPORT_KV_U64:
        return kv->v.u < MAX_DIM ? (uint32_t)kv->v.u : MAX_DIM;
    case TPORT_KV_I8: case TPORT_KV_I16: case TPORT_KV_I32: case TPORT_KV_I64:
        return kv->v.i > 0 && kv->v.i < MAX_DIM ? (uint32_t)kv->v.i : kv->v.i > 0 ? MAX_DIM : 0;
    default:
        return 0;
    }
}

/* RoPE scaling's parameters as llama.cpp's llama_context derives them
 * (the types arch_math.c lets through): "none" never scales; YaRN's
 * ext_factor is 1, and its attention factor get_mscale(f) / (1 + 0.1 ln f)
 * cancels the (1 + 0.1 ln f) ggml's rope multiplies in, so the net factor
 * on cos and sin is get_mscale(f) = 1 + 0.1 ln f; rope.scaling.attn_factor
 * multiplies either way.  Betas are ggml's defaults (32, 1): llama.cpp reads
 * no key for them. */
static void rope_scaling(const tport_mf_hparams *hp, tport_model_shape *sh) {
    if (hp->rope_scaling == TPORT_MF_ROPE_SCALING_NONE)
        sh->rope_scale = 1.0f;
    sh->rope_ext_factor = hp->rope_scaling == TPORT_MF_ROPE_SCALING_YARN ? 1.0f : 0.0f;
    sh->rope_attn_factor = 1.0f;
    if (sh->rope_ext_factor != 0.0f) {
        const float factor = 1.0f / sh->rope_scale;
        sh->rope_attn_factor = factor <= 1.0f ? 1.0f : 0.1f * logf(factor) + 1.0f;
        sh->rope_attn_factor *= 1.0f / (1.0f + 0.1f * logf(factor));
    }
    if (hp->rope_attn_factor > 0.0f)
        sh->rope_attn_factor *= hp->rope_attn_factor;
    sh->rope_beta_fast = 32.0f;
    sh->rope_beta_slow = 1.0f;
    sh->rope_n_ctx_orig = hp->rope_n_ctx_orig && hp->rope_n_ctx_orig < (1u << 24) ? (int32_t)hp->rope_n_ctx_orig
                                                                                   : sh->n_ctx_train;
}

tport_status tport_model_shape_from_file(const tport_model_file *mf, const tport_arch *arch,
                                         tport_model_shape *sh) {
    const tport_mf_hparams *hp = &mf->hp;
    memset(sh, 0, sizeof *sh);
    char why[512];
    if (tport_arch_refusal(mf, arch, why, sizeof why))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: not run: it needs what this build's %s does not "
                           "implement: %s", mf->path, arch->name, why);
    if (mf->n_missing) /* a valid container with only some of the model's tensors */
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: not a complete model: %s", mf->path, mf->missing);
    char name[96];
    const tport_mf_tensor *emb = tport_arch_file_tensor(mf, arch, "token_embd.weight", 0, name, sizeof name);
    const tport_mf_tensor *up = tport_arch_file_tensor(mf, arch, "blk.%d.ffn_up.weight", 0, name, sizeof name);
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
    sh->n_ctx_train = (int32_t)(hp->n_ctx < (1u << 20) ? hp->n_ctx : (1u << 20));
    sh->n_ctx = sh->n_ctx_train ? sh->n_ctx_train : 2048;
    sh->rope_base = hp->rope_freq_base > 0 ? hp->rope_freq_base : 10000.0f;
    sh->rope_scale = hp->rope_freq_scale > 0 ? hp->rope_freq_scale : 1.0f;
    sh->rope_mode = arch->rope_mode;
    rope_scaling(hp, sh);
    sh->embd_scale = sh->residual_scale = sh->logit_scale = 1.0f;
    if (arch->norm == NORM_RMS)
        sh->norm_eps = hp->norm_eps > 0 ? hp->norm_eps : 1e-5f;
    else if (!tport_arch_f32(mf, "attention.layer_norm_epsilon", &sh->norm_eps) || !(sh->norm_eps > 0))
        sh->norm_eps = 1e-5f;
    if (hp->n_embd >= MAX_DIM || hp->n_layer >= 4096 || hp->n_head >= MAX_DIM ||
        hp->n_head_kv >= MAX_DIM || hp->n_ff >= MAX_DIM || hp->n_rot >= MAX_DIM)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: hyperparameters out of range", mf->path);
    if (sh->n_vocab <= 0 || sh->n_embd <= 0 || sh->n_layer <= 0 || sh->n_head <= 0 ||
        sh->n_head_kv <= 0 || sh->n_ff <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: incomplete hyperparameters (vocab %d, embd %d, layers %d, heads %d/%d, ff %d)",
                           mf->path, sh->n_vocab, sh->n_embd, sh->n_layer, sh->n_head,
                           sh->n_head_kv, sh->n_ff);
    /* the head size is n_embd / n_head unless the file says otherwise (gemma) */
    uint32_t key_length = arch_u32(mf, "attention.key_length");
    uint32_t value_length = arch_u32(mf, "attention.value_length");
    if (key_length != value_length && !arch->value_length_own)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: key length %u differs from value length %u",
                           mf->path, key_length, value_length);
    if (sh->n_head % sh->n_head_kv || (!key_length && sh->n_embd % sh->n_head))
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: %d heads do not divide n_embd %d or are not a multiple of %d kv heads",
                           mf->path, sh->n_head, sh->n_embd, sh->n_head_kv);
    sh->head_dim = key_length ? (int32_t)key_length : sh->n_embd / sh->n_head;
    if (sh->head_dim <= 0 || (int64_t)sh->head_dim * sh->n_head >= MAX_DIM)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: head size %d for %d heads", mf->path, sh->head_dim,
                           sh->n_head);
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
    if (sh->rope_mode >= 0 && (sh->n_rot > sh->head_dim || sh->n_rot % 2 || sh->n_rot <= 0))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: rope dimensions %d for head size %d",
                           mf->path, sh->n_rot, sh->head_dim);
    /* Sliding-window attention (every layer unless the architecture says
     * which): local layers keep a ring of the window (session.c), so the
     * context is not limited by it.  Their RoPE is the global one unless
     * the architecture sets its own. */
    sh->n_swa = (int32_t)arch_u32(mf, "attention.sliding_window");
    /* BERT: token types (a tokenizer key), non-causal attention */
    const tport_kv *types = tport_model_file_kv(mf, "tokenizer.ggml.token_type_count");
    if (types && (types->type == TPORT_KV_U32 || types->type == TPORT_KV_I32))
        sh->n_token_types = types->type == TPORT_KV_U32 ? (types->v.u <= 64 ? (int32_t)types->v.u : 65)
                                                        : (types->v.i >= 0 && types->v.i <= 64 ? (int32_t)types->v.i : 65);
    if (sh->n_token_types > 64)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tokenizer.ggml.token_type_count out of range", mf->path);
    bool causal = true;
    sh->non_causal = tport_arch_bool(mf, "attention.causal", &causal) && !causal;
    /* embeddings' pooling: absent (-1) differs from 0, "none" */
    char pooling_key[96];
    snprintf(pooling_key, sizeof pooling_key, "%s.pooling_type", mf->arch);
    sh->pooling = tport_model_file_kv(mf, pooling_key) ? (int32_t)arch_u32(mf, "pooling_type") : -1;
    sh->rope_base_swa = sh->rope_base;
    sh->rope_scale_swa = sh->rope_scale;
    /* mixture of experts: the counts, and the widths where the
     * architecture's table uses them (DIM_FF_EXP, DIM_FF_SHEXP) */
    sh->n_expert = (int32_t)arch_u32(mf, "expert_count");
    sh->n_expert_used = (int32_t)arch_u32(mf, "expert_used_count");
    sh->n_ff_exp = (int32_t)arch_u32(mf, "expert_feed_forward_length");
    sh->n_ff_shexp = (int32_t)arch_u32(mf, "expert_shared_feed_forward_length");
    if (sh->n_expert > 4096 || sh->n_expert_used > sh->n_expert || (sh->n_expert && !sh->n_expert_used))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %d of %d experts used", mf->path, sh->n_expert_used,
                           sh->n_expert);
    if (sh->n_expert_used > 256)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %d experts used a token (at most 256 are implemented)",
                           mf->path, sh->n_expert_used);
    return arch->hparams ? arch->hparams(mf, sh) : TPORT_STATUS_OK;
}

bool tport_arch_row_applies(const tport_arch_tensor *t, const tport_model_shape *sh) {
    if ((t->flags & TENSOR_Q_LORA) && sh->n_lora_q <= 0)
        return false;
    if ((t->flags & TENSOR_NO_Q_LORA) && sh->n_lora_q > 0)
        return false;
    if ((t->flags & (sh->mla_kv_b_unsplit ? TENSOR_KV_B_SPLIT : TENSOR_KV_B_UNSPLIT)))
        return false;
    if (t->flags & TENSOR_EXPERTS)
        return sh->n_expert > 0 && sh->n_layer_dense_lead < sh->n_layer;
    if (t->flags & TENSOR_DENSE)
        return sh->n_expert == 0 || sh->n_layer_dense_lead > 0;
    return true;
}

bool tport_arch_layer_row_applies(const tport_arch_tensor *t, const tport_model_shape *sh, int il) {
    if (!tport_arch_row_applies(t, sh))
        return false;
    if (!(t->flags & TENSOR_LAYER) || il < 0 || sh->n_expert == 0)
        return true;
    bool lead = il < sh->n_layer_dense_lead;
    return t->flags & TENSOR_EXPERTS ? !lead : t->flags & TENSOR_DENSE ? lead : true;
}

/* A weight record for tensor `name`, which must have shape {ne0, ne1, ne2}
 * (ne1 = 0: one dimension; ne2 = 0: at most two). */
static tport_status bind(tport_model *m, const char *name, int64_t ne0, int64_t ne1, int64_t ne2,
                         bool optional, tport_tensor **out) {
    const tport_model_file *mf = m->file;
    const tport_mf_tensor *t = find(mf, name);
    *out = NULL;
    if (!t) {
        if (optional)
            return TPORT_STATUS_OK;
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor %s is missing", mf->path, name);
    }
    int64_t want1 = ne1 ? ne1 : 1, want2 = ne2 ? ne2 : 1;
    if (t->ne[0] != ne0 || t->ne[1] != want1 || t->ne[2] != want2 || t->ne[3] != 1)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld]",
                           mf->path, name, (long long)t->ne[0], (long long)t->ne[1],
                           (long long)t->ne[2], (long long)t->ne[3], (long long)ne0, (long long)want1,
                           (long long)want2);
    if (ne2 && grouped_type(t->type))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tensor %s: a stack of experts of a row-grouped type",
                           mf->path, name);
    const tport_type_traits *tr = tport_traits(t->type);
    /* a row-grouped type (no to_float) is placed re-encoded, whole */
    const tport_row_group *grouped = tport_row_group_of(t->type);
    if (!tr || (!tr->to_float && !(grouped && ne1)))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: tensor %s has type %u, which cannot be computed",
                           mf->path, name, (unsigned)t->type);
    if (grouped && tport_row_group_check(grouped, ne0, want1) != TPORT_STATUS_OK)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor %s: %s", mf->path, name, tport_last_error());
    if (ne0 % tr->info.block_size)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor %s: row of %lld is not a multiple of "
                           "the block size %lld", mf->path, name, (long long)ne0,
                           (long long)tr->info.block_size);
    uint64_t need = (uint64_t)(ne0 / tr->info.block_size) * tr->info.block_bytes * (uint64_t)want1 * (uint64_t)want2;
    if (!t->data || t->nbytes < need)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor %s holds %llu bytes, needs %llu",
                           mf->path, name, (unsigned long long)t->nbytes, (unsigned long long)need);
    void *data = (void *)t->data; /* zero copy: the file's read-only mapping */
    tport_type_id type = t->type;
    if (!ne1) {
        /* 1-D weights (norms, biases: a few KiB, read by every evaluation)
         * are kept in f32 in the model's memory, read from the file without
         * touching its mapping: a page-cache folio of the mapping (up to
         * 2 MiB) that held one stayed mapped whole after the weights around
         * it had been released, 44 MiB of stories110M q8_0's 197 MiB */
        if (m->norm_cap - m->norm_used < (size_t)ne0)
            return tport_error(TPORT_STATUS_ERROR, "%s: too many norm weights", mf->path);
        float *dst = m->norm_f32 + m->norm_used;
        void *raw = type == TPORT_TYPE_F32 ? (void *)dst : malloc(need);
        if (!raw)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory reading %s", mf->path, name);
        tport_status st = tport_model_file_copy(mf, t->data, raw, need);
        if (st == TPORT_STATUS_OK && raw != dst)
            tr->to_float(raw, dst, ne0);
        if (raw != dst)
            free(raw);
        if (st != TPORT_STATUS_OK)
            return st;
        m->norm_used += (size_t)ne0;
        data = dst;
        type = TPORT_TYPE_F32;
    }
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
    tport_tensor *w = ne2   ? tport_new_tensor_3d(m->wctx, type, ne0, ne1, ne2)
                      : ne1 ? tport_new_tensor_2d(m->wctx, type, ne0, ne1)
                            : tport_new_tensor_1d(m->wctx, type, ne0);
    if (!w)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: cannot record tensor %s", mf->path, name);
    tport_tensor_set_data(w, data);
    tport_tensor_set_weight(w);
    tport_tensor_set_name(w, name);
    *out = w;
    return TPORT_STATUS_OK;
}

int64_t tport_arch_dim_size(const tport_model_shape *sh, int dim) {
    int64_t q = (int64_t)sh->n_head * sh->head_dim, kv = (int64_t)sh->n_head_kv * sh->head_dim;
    switch (dim) {
    case DIM_EMBD: return sh->n_embd;
    case DIM_VOCAB: return sh->n_vocab;
    case DIM_FF: return sh->n_ff;
    case DIM_Q: return q;
    case DIM_KV: return kv;
    case DIM_QKV: return q + 2 * kv;
    case DIM_CTX: return sh->n_ctx_train;
    case DIM_EXPERT: return sh->n_expert;
    case DIM_FF_EXP: return sh->n_ff_exp;
    case DIM_FF_SHEXP: return sh->n_ff_shexp;
    case DIM_HEAD: return sh->head_dim;
    case DIM_ROT_HALF: return sh->n_rot / 2;
    case DIM_FF2: return 2 * (int64_t)sh->n_ff;
    case DIM_Q_LORA: return sh->n_lora_q;
    case DIM_KV_LORA: return sh->n_lora_kv;
    case DIM_KV_A: return (int64_t)sh->n_lora_kv + sh->n_rot;
    case DIM_QK_NOPE: return (int64_t)sh->head_dim_k_mla - sh->n_rot;
    case DIM_V_MLA: return sh->head_dim_v_mla;
    case DIM_Q_MLA: return (int64_t)sh->n_head * sh->head_dim_k_mla;
    case DIM_O_MLA: return (int64_t)sh->n_head * sh->head_dim_v_mla;
    case DIM_HEADS: return sh->n_head;
    case DIM_KV_B: return (int64_t)sh->n_head * ((int64_t)sh->head_dim_k_mla - sh->n_rot + sh->head_dim_v_mla);
    case DIM_FF_SHEXPS: return (int64_t)sh->n_ff_exp * sh->n_expert_shared;
    case DIM_TOKEN_TYPES: return sh->n_token_types;
    default: return 0;
    }
}

static tport_tensor **slot_of(tport_model *m, const tport_arch_tensor *t, int32_t layer) {
    uint8_t *base = t->flags & TENSOR_LAYER ? (uint8_t *)&m->layers[layer] : (uint8_t *)&m->w;
    return (tport_tensor **)(void *)(base + t->slot);
}

/* Does this model (a pipeline stage, or the whole) bind table entry t of
 * layer `layer`?  Its layers, the embedding's globals if it embeds, the
 * head's if it has the head, and token_embd also for a head whose
 * classifier is tied to it.  What it does not bind is never read. */
static bool stage_binds(const tport_model *m, const tport_arch_tensor *t, int32_t layer) {
    if (t->flags & TENSOR_LAYER)
        return layer >= m->layer_begin && layer < m->layer_end;
    size_t s = t->slot;
    bool embedding = s == offsetof(tport_globals, tok_embd) || s == offsetof(tport_globals, pos_embd) ||
                     s == offsetof(tport_globals, tok_norm) || s == offsetof(tport_globals, tok_norm_b);
    if (embedding ? m->has_embedding : m->has_head)
        return true;
    if (s != offsetof(tport_globals, tok_embd) || !m->has_head)
        return false;
    char name[96];
    for (int k = 0; k < m->arch->n_tensors; k++)
        if (m->arch->tensors[k].slot == offsetof(tport_globals, output) && !(m->arch->tensors[k].flags & TENSOR_LAYER))
            return !tport_arch_file_tensor(m->file, m->arch, m->arch->tensors[k].name, 0, name, sizeof name);
    return true;
}

tport_status tport_model_bind_weights(tport_model *m) {
    const tport_model_shape *sh = &m->sh;
    const tport_arch *arch = m->arch;
    tport_status st;
    if (m->layer_begin < 0 || m->layer_begin > m->layer_end || m->layer_end > sh->n_layer)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: layers [%d, %d) of a model with %d",
                           m->file->path, (int)m->layer_begin, (int)m->layer_end, (int)sh->n_layer);
    m->layers = calloc((size_t)sh->n_layer, sizeof *m->layers);
    if (!m->layers)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory for %d layers", sh->n_layer);
    /* room for every 1-D weight in f32 */
    m->norm_cap = 0;
    for (int k = 0; k < arch->n_tensors; k++) {
        const tport_arch_tensor *t = &arch->tensors[k];
        if (t->ne1 == DIM_1)
            m->norm_cap += (size_t)tport_arch_dim_size(sh, t->ne0) * (t->flags & TENSOR_LAYER ? (size_t)sh->n_layer : 1);
    }
    m->norm_f32 = malloc((m->norm_cap ? m->norm_cap : 1) * sizeof *m->norm_f32);
    if (!m->norm_f32)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory for norm weights");
    int n_bound = 0;
    for (int k = 0; k < arch->n_tensors; k++) {
        const tport_arch_tensor *t = &arch->tensors[k];
        int32_t n_copies = t->flags & TENSOR_LAYER ? sh->n_layer : 1;
        for (int32_t i = 0; i < n_copies; i++) {
            char name[96];
            tport_arch_file_tensor(m->file, arch, t->name, (int)i, name, sizeof name);
            tport_tensor **dst = slot_of(m, t, i);
            if (!stage_binds(m, t, i) || !tport_arch_layer_row_applies(t, sh, t->flags & TENSOR_LAYER ? i : -1))
                continue;
            if (t->ne2 && (tport_arch_dim_size(sh, t->ne0) <= 0 || tport_arch_dim_size(sh, t->ne1) <= 0))
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %s needs the experts' widths, which the file "
                                   "does not give", m->file->path, name);
            if ((st = bind(m, name, tport_arch_dim_size(sh, t->ne0), tport_arch_dim_size(sh, t->ne1),
                           t->ne2 ? tport_arch_dim_size(sh, t->ne2) : 0, (t->flags & TENSOR_OPTIONAL) != 0, dst)))
                return st;
            n_bound += *dst != NULL;
        }
    }
    if (m->file->container == TPORT_CONTAINER_GGML && arch->fix_legacy && (st = arch->fix_legacy(m)))
        return st;
    if (arch->after_bind && (st = arch->after_bind(m)))
        return st;
    if (!m->w.output && m->has_head)
        m->w.output = m->w.tok_embd; /* tied classifier */
    bool whole = m->layer_begin == 0 && m->layer_end == sh->n_layer && m->has_embedding && m->has_head;
    if (whole && n_bound < m->file->n_tensors)
        tport_log(TPORT_LOG_WARN, "%s: %d of the file's %d tensors are not part of architecture %s and are "
                  "ignored", m->file->path, m->file->n_tensors - n_bound, m->file->n_tensors, arch->name);
    return TPORT_STATUS_OK;
}

int tport_model_layer_weights(tport_model *m, int32_t il, unsigned kinds, tport_tensor ***out, int cap) {
    int n = 0;
    for (int k = 0; k < m->arch->n_tensors && n < cap; k++) {
        const tport_arch_tensor *t = &m->arch->tensors[k];
        if (!(t->flags & TENSOR_LAYER))
            continue;
        /* a 2-D bias (gpt-oss's experts': one row per expert) is added,
         * never multiplied: a vector that stays f32 with its side */
        bool ffn = (t->flags & TENSOR_FFN) != 0, matrix = t->ne1 != DIM_1 && !(t->flags & TENSOR_BIAS);
        unsigned kind = matrix ? (ffn ? TPORT_LAYER_FFN_MATRICES : TPORT_LAYER_ATTN_MATRICES)
                               : (ffn ? TPORT_LAYER_FFN_VECTORS : TPORT_LAYER_ATTN_VECTORS);
        if (kinds & kind)
            out[n++] = slot_of(m, t, il);
    }
    return n;
}

const tport_tensor *tport_layer_attention_weight(const tport_layer *l) {
    return l->wk ? l->wk : l->wqkv ? l->wqkv : l->wkv_a_mqa; /* deepseek2: the latent's */
}
