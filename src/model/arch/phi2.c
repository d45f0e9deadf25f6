/* phi2 (Phi-1.5, Phi-2): one LayerNorm feeds attention and the GELU
 * feed-forward in parallel, NeoX RoPE on the first n_rot dims (partial
 * rotary), Q scaled by 1/sqrt(head_dim) before the product (kq scale 1),
 * an output bias.
 *
 *   h = ln(x);  x = attn(h) + ffn(h) + x;  logits = output(ln_f x) + output.bias */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_down.bias", b_down, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.bias", b_up, DIM_FF, DIM_1, TENSOR_BIAS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.bias", output_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_G("output.bias", output_b, DIM_VOCAB, DIM_1, TENSOR_BIAS),
};

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float q_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *h = tport_blk_norm(b, x, l->attn_norm, l->attn_norm_b);
        tport_tensor *q, *k, *v;
        if (tport_blk_qkv(b, l, h, &q, &k, &v) != TPORT_STATUS_OK)
            return NULL;
        tport_tensor *att = tport_blk_linear(b, l->wo, l->bo,
                                             tport_blk_attention(b, il, tport_scale(b->ctx, q, q_scale), k, v, 1.0f));
        tport_tensor *ffn = tport_blk_ffn_gelu(b, l, h);
        x = tport_add(b->ctx, tport_add(b->ctx, att, ffn), x);
    }
    return tport_blk_output(b, x);
}

const tport_arch tport_arch_phi2 = {
    .name = "phi2",
    .about = "Phi-1.5, Phi-2",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = TPORT_ROPE_NEOX,
    .build = build,
};
