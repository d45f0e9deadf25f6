/* falcon (Falcon-7B/40B): multi-query (or grouped) attention from a fused
 * [Q|K|V] without biases, NeoX RoPE over the whole head, attention and the
 * GELU feed-forward in parallel; the FFN reads ln1 x, attention reads
 * ln2 x where the file has attn_norm_2 (40B) and ln1 x otherwise.
 *
 *   x = ffn(ln1 x) + attn(ln x) + x */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_norm.bias", attn_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_norm_2.weight", attn_norm2, DIM_EMBD, DIM_1, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_norm_2.bias", attn_norm2_b, DIM_EMBD, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_qkv.weight", wqkv, DIM_EMBD, DIM_QKV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.bias", output_norm_b, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
};

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *h = tport_blk_norm(b, x, l->attn_norm, l->attn_norm_b);
        tport_tensor *h_att = l->attn_norm2 ? tport_blk_norm(b, x, l->attn_norm2, l->attn_norm2_b) : h;
        tport_tensor *att = tport_blk_self_attention(b, il, h_att, kq_scale);
        tport_tensor *ffn = tport_blk_ffn_gelu(b, l, h);
        x = tport_add(b->ctx, tport_add(b->ctx, ffn, att), x);
    }
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_rot != sh->head_dim)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: falcon rotates whole heads, but rope dimensions are %d "
                           "for head size %d", mf->path, sh->n_rot, sh->head_dim);
    return TPORT_STATUS_OK;
}

const tport_arch tport_arch_falcon = {
    .name = "falcon",
    .about = "Falcon-7B, Falcon-40B",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
};
