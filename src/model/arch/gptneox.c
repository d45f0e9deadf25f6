/* gptneox (Pythia, RedPajama-INCITE, StableLM-alpha, Dolly-v2): LayerNorm
 * with biases, fused [Q|K|V] with bias, NeoX RoPE on the first n_rot dims
 * of each head (partial rotary), GELU feed-forward; with
 * use_parallel_residual x + attn(ln1 x) + ffn(ln2 x), else sequential. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_qkv.weight", wqkv, DIM_EMBD, DIM_QKV, 0),
    ARCH_A("attn_qkv.bias", bqkv, DIM_QKV, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_norm.bias", ffn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_down.bias", b_down, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.bias", b_up, DIM_FF, DIM_1, TENSOR_BIAS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.bias", output_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
};


/* Rows (or elements, rows of 1) of t from HF's per-head [q|k|v] order to
 * GGUF's [Q|K|V], into memory the model owns. */
static tport_status deinterleave(tport_model *m, tport_tensor *t, size_t row_bytes) {
    const tport_model_shape *sh = &m->sh;
    size_t hd = (size_t)sh->head_dim, nh = (size_t)sh->n_head, rows = 3 * nh * hd;
    uint8_t *copy = aligned_alloc(64, (rows * row_bytes + 63) / 64 * 64);
    tport_status st = copy ? tport_model_own(m, copy)
                           : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory re-ordering %s", tport_tensor_name(t));
    if (st != TPORT_STATUS_OK)
        return st;
    tport_qkv_deinterleave(copy, tport_tensor_data(t), nh, hd, row_bytes);
    tport_tensor_set_data(t, copy);
    return TPORT_STATUS_OK;
}

static tport_status fix_legacy(tport_model *m) {
    if (m->sh.n_head_kv != m->sh.n_head)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: a gpt-neox example file with grouped kv heads",
                           m->file->path);
    for (int32_t il = m->layer_begin; il < m->layer_end; il++) { /* a stage's layers */
        tport_layer *l = &m->layers[il];
        tport_status st = deinterleave(m, l->wqkv, tport_row_size(tport_tensor_type(l->wqkv), m->sh.n_embd));
        if (st == TPORT_STATUS_OK)
            st = deinterleave(m, l->bqkv, sizeof(float));
        if (st != TPORT_STATUS_OK)
            return st;
    }
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *att = tport_blk_self_attention(b, il, tport_blk_norm(b, x, l->attn_norm, l->attn_norm_b), kq_scale);
        if (b->sh->parallel_residual) {
            tport_tensor *ffn = tport_blk_ffn_gelu(b, l, tport_blk_norm(b, x, l->ffn_norm, l->ffn_norm_b));
            x = tport_add(b->ctx, tport_add(b->ctx, ffn, x), att);
        } else {
            x = tport_add(b->ctx, att, x);
            x = tport_add(b->ctx, tport_blk_ffn_gelu(b, l, tport_blk_norm(b, x, l->ffn_norm, l->ffn_norm_b)), x);
        }
    }
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (!tport_arch_bool(mf, "use_parallel_residual", &sh->parallel_residual))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: gptneox.use_parallel_residual is missing", mf->path);
    return TPORT_STATUS_OK;
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    return tport_gguf_set_bool(w, "gptneox.use_parallel_residual", sh->parallel_residual);
}

const tport_arch tport_arch_gptneox = {
    .name = "gptneox",
    .about = "Pythia, RedPajama-INCITE, StableLM-alpha, Dolly-v2 (GPT-NeoX)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .fix_legacy = fix_legacy,
};
