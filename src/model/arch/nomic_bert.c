/* nomic-bert (nomic-embed-text v1/v1.5): bert's encoder (bert.c) with
 * rotary embedding (NeoX) instead of learned positions, a fused QKV
 * projection and a SwiGLU feed-forward, without biases in the blocks.
 *
 *   x = LN(token_embd[ids] + token_types[0]) * token_embd_norm + b
 *   per layer:  x = LN(x + Wo attn(rope(Q), rope(K), V)) * attn_output_norm + b,   [Q|K|V] = W_qkv x
 *               x = LN(x + W_down (silu(W_gate x) * W_up x)) * layer_output_norm + b
 *   embedding = x (per token; pooled by the session) */
#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_G("token_types.weight", type_embd, DIM_EMBD, DIM_TOKEN_TYPES, TENSOR_OPTIONAL),
    ARCH_G("token_embd_norm.weight", tok_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("token_embd_norm.bias", tok_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_qkv.weight", wqkv, DIM_EMBD, DIM_QKV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_output_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("layer_output_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("layer_output_norm.bias", ffn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
};

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_arch_bert_embed(b); /* NULL: logits asked for */
    return x ? tport_blk_output(b, tport_arch_bert_layers(b, x, true)) : NULL;
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    return tport_arch_bert_write_keys(w, "nomic-bert", sh);
}

const tport_arch tport_arch_nomic_bert = {
    .name = "nomic-bert",
    .about = "nomic-embed-text v1, v1.5 (embeddings only)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = TPORT_ROPE_NEOX,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "attention.causal",
};
