/* bloom (BLOOM, BLOOMZ): a LayerNorm right after the embedding, ALiBi with
 * max_bias 8 (fixed, as llama.cpp has it), gpt2's sequential LayerNorm
 * block with biases. */
#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_G("token_embd_norm.weight", tok_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("token_embd_norm.bias", tok_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
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
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
};

static tport_tensor *build(tport_blk *b) {
    const tport_globals *w = &b->m->w;
    tport_tensor *x = b->hidden_in ? b->hidden_in : tport_blk_norm(b, tport_blk_embed(b), w->tok_norm, w->tok_norm_b);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++)
        x = tport_arch_sequential_ln_block(b, x, il);
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    (void)mf;
    sh->max_alibi_bias = 8.0f;
    return TPORT_STATUS_OK;
}

const tport_arch tport_arch_bloom = {
    .name = "bloom",
    .about = "BLOOM, BLOOMZ",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = -1,
    .hparams = hparams,
    .build = build,
    .math_keys = "attention.max_alibi_bias",
};
