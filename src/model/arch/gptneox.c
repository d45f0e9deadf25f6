/* gptneox (Pythia, RedPajama-INCITE, StableLM-alpha, Dolly-v2): LayerNorm
 * with biases, fused [Q|K|V] with bias, NeoX RoPE on the first n_rot dims
 * of each head (partial rotary), GELU feed-forward; with
 * use_parallel_residual x + attn(ln1 x) + ffn(ln2 x), else sequential. */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_L("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_L("attn_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_L("attn_qkv.weight", wqkv, DIM_EMBD, DIM_QKV, 0),
    ARCH_L("attn_qkv.bias", bqkv, DIM_QKV, DIM_1, TENSOR_BIAS),
    ARCH_L("attn_output.weight", wo, DIM_EMBD, DIM_EMBD, 0),
    ARCH_L("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_L("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_L("ffn_norm.bias", ffn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_L("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_L("ffn_down.bias", b_down, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_L("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_L("ffn_up.bias", b_up, DIM_FF, DIM_1, TENSOR_BIAS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.bias", output_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
};

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = 0; il < b->sh->n_layer && x; il++) {
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
};
