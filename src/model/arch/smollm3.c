/* smollm3 (SmolLM3-3B): llama's graph without RoPE on every fourth layer
 * (il + 1 a multiple of 4: llama.cpp's n_no_rope_layer_step, fixed at 4,
 * no key says so).
 *
 *   per layer:  x += Wo attn(rope?(Wq h), rope?(Wk h), Wv h), h = rms_norm(x) * attn_norm
 *               x += W_down (silu(W_gate h) * W_up h),       h = rms_norm(x) * ffn_norm
 *   logits = output (rms_norm(x_last) * output_norm)   (tied when absent) */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    (void)mf;
    sh->nope_every = 4;
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    return tport_blk_decoder(b, true);
}

const tport_arch tport_arch_smollm3 = {
    .name = "smollm3",
    .about = "SmolLM3",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NORMAL,
    .hparams = hparams,
    .build = build,
};
