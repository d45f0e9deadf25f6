/* gpt2 (GPT-2, Cerebras-GPT): learned position embeddings, pre-LayerNorm
 * with biases, fused [Q|K|V] projection, GELU feed-forward, no RoPE.
 *
 *   x = token_embd[ids] + position_embd[pos]
 *   per layer:  x += attn_output(attn(split(attn_qkv(ln1 x))))
 *               x += ffn_down(gelu(ffn_up(ln2 x)))
 *   logits = output(ln_f x_last)               (output tied to token_embd if absent) */
#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_G("position_embd.weight", pos_embd, DIM_EMBD, DIM_CTX, 0),
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
    tport_tensor *x = tport_blk_embed(b);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++)
        x = tport_arch_sequential_ln_block(b, x, il);
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_ctx_train <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %s needs %s.context_length (the position embeddings)",
                           mf->path, mf->arch, mf->arch);
    return TPORT_STATUS_OK;
}

const tport_arch tport_arch_gpt2 = {
    .name = "gpt2",
    .about = "GPT-2, Cerebras-GPT",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = -1,
    .hparams = hparams,
    .build = build,
};

/* starcoder (StarCoder-1, SantaCoder, WizardCoder; GPTBigCode): gpt2's
 * graph and tensors with multi-query attention (head_count_kv = 1). */
const tport_arch tport_arch_starcoder = {
    .name = "starcoder",
    .about = "StarCoder 1, SantaCoder, WizardCoder (GPTBigCode)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = -1,
    .hparams = hparams,
    .build = build,
};
