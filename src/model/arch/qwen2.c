/* qwen2 (Qwen1.5, Qwen2, Qwen2.5): llama's graph with biases on Q, K and
 * V and NeoX-style RoPE.  (Files with a fused attn_qkv are not handled.) */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    /* synthesized tied, as Qwen2-0.5B/1.5B are (and the files stay small) */
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_G("output.bias", output_b, DIM_VOCAB, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

static tport_tensor *build(tport_blk *b) {
    return tport_blk_decoder(b, true);
}

const tport_arch tport_arch_qwen2 = {
    .name = "qwen2",
    .about = "Qwen1.5, Qwen2, Qwen2.5",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .build = build,
};
