/* qwen3 (Qwen3 dense: 0.6B to 32B): llama's graph with NeoX RoPE and an
 * RMS norm on each head of Q and K before RoPE (llama.cpp's qwen3.cpp);
 * the head size is attention.key_length (128 in every size), not
 * n_embd / n_head.
 *
 *   per layer:  q = rope(rms_norm_head(Wq h) * attn_q_norm), k likewise,
 *               x += Wo attn(q, k, Wv h),              h = rms_norm(x) * attn_norm
 *               x += W_down (silu(W_gate h) * W_up h), h = rms_norm(x) * ffn_norm
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
    ARCH_A("attn_q_norm.weight", attn_q_norm, DIM_HEAD, DIM_1, 0),
    ARCH_A("attn_k_norm.weight", attn_k_norm, DIM_HEAD, DIM_1, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    /* tied in the small sizes (0.6B to 4B), as synth writes it */
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

static tport_tensor *build(tport_blk *b) {
    return tport_blk_decoder(b, true);
}

const tport_arch tport_arch_qwen3 = {
    .name = "qwen3",
    .about = "Qwen3 (dense)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .build = build,
};
