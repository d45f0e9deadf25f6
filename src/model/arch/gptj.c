/* gptj (GPT-J-6B, GPT4All-J): one LayerNorm feeds attention and the GELU
 * feed-forward in parallel; separate Q, K, V and the attention output
 * without biases; RoPE in the normal (interleaved pairs) mode on the first
 * n_rot dims of each head; an output bias.  llama.cpp knows the name only
 * (no load_tensors case, no graph), so the graph follows ggml's
 * examples/gpt-j (main.cpp gptj_eval); the GGUF names are gguf-py's
 * (MODEL_ARCH.GPTJ in constants.py, the gpt-j rows of tensor_mapping.py)
 * with the biases GPT-J has.
 *
 *   h = ln_1(x);  x = attn_output(attn(rope q(h), rope k(h), v(h))) + ffn(h) + x
 *   logits = output(ln_f x) + output.bias */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.bias", b_up, DIM_FF, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_down.bias", b_down, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.bias", output_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_G("output.bias", output_b, DIM_VOCAB, DIM_1, TENSOR_BIAS),
};


static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *h = tport_blk_norm(b, x, l->attn_norm, l->attn_norm_b);
        tport_tensor *att = tport_blk_self_attention(b, il, h, kq_scale);
        tport_tensor *ffn = tport_blk_ffn_gelu(b, l, h);
        x = tport_add(b->ctx, tport_add(b->ctx, ffn, att), x);
    }
    return tport_blk_output(b, x);
}

const tport_arch tport_arch_gptj = {
    .name = "gptj",
    .about = "GPT-J-6B, GPT4All-J",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = TPORT_ROPE_NORMAL,
    .build = build,
};
