/* llama (also Mistral-style files, TinyLlama, llama2.c checkpoints, and
 * Mixtral: llama with experts): RMSNorm, rotary embedding, SwiGLU
 * feed-forward, or a mixture of SwiGLU experts (blocks_moe.c) with
 * softmax routing, the chosen experts' weights renormalised.
 *
 *   x = token_embd[ids]
 *   per layer:  x += Wo attn(rope(Wq h), rope(Wk h), Wv h),  h = rms_norm(x) * attn_norm
 *               x += W_down (silu(W_gate h) * W_up h),       h = rms_norm(x) * ffn_norm
 *               (Mixtral: x += sum_i w_i down_i(silu(gate_i h) * up_i h) over
 *                the top experts i of softmax(W_router h), w renormalised)
 *   logits = output (rms_norm(x_last) * output_norm)       (output tied to token_embd if absent)
 *
 * RoPE as llama.cpp's: Llama 3.1-3.3's frequency factors (rope_freqs.weight,
 * theta_i / ff_i; their scaling has no key of its own) and the scaling
 * types none, linear and yarn (blocks.c, weights.c: TPORT_OP_ROPE_EXT). */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, TENSOR_DENSE),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, TENSOR_DENSE),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, TENSOR_DENSE),
    /* Mixtral: llama's experts are feed_forward_length wide */
    ARCH_F("ffn_gate_inp.weight", ffn_gate_inp, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS),
    ARCH_X("ffn_gate_exps.weight", ffn_gate_exps, DIM_EMBD, DIM_FF, 0),
    ARCH_X("ffn_down_exps.weight", ffn_down_exps, DIM_FF, DIM_EMBD, 0),
    ARCH_X("ffn_up_exps.weight", ffn_up_exps, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
    /* Llama 3.1+: written by synth with --with rope_freqs.weight */
    ARCH_G("rope_freqs.weight", rope_freqs, DIM_ROT_HALF, DIM_1, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

static tport_tensor *build(tport_blk *b) {
    return tport_blk_decoder(b, true);
}

const tport_arch tport_arch_llama = {
    .name = "llama",
    .about = "LLaMA 1-3.3, Mistral, Mixtral, TinyLlama, llama2.c",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NORMAL,
    .build = build,
    .math_keys = "expert_count|expert_used_count",
};
