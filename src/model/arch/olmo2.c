/* olmo2 (OLMo 2: 1B to 32B): no norm before attention or the feed-forward;
 * RMS norms of the whole Q and K vectors (every head at once, not per
 * head) before NeoX RoPE; RMS norms after attention and after the
 * feed-forward, before each joins the residual (llama.cpp's olmo2.cpp).
 * The head size is n_embd / n_head.  OLMo 3's sliding-window layers are
 * refused.
 *
 *   per layer:  q = rope(rms_norm(Wq x) * attn_q_norm), k = rope(rms_norm(Wk x) * attn_k_norm)
 *               x += rms_norm(Wo attn(q, k, Wv x)) * attn_post_norm
 *               x += rms_norm(W_down (silu(W_gate x) * W_up x)) * ffn_post_norm
 *   logits = output (rms_norm(x_last) * output_norm) */
#include <math.h>
#include <stdio.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_q_norm.weight", attn_q_norm, DIM_Q, DIM_1, 0),
    ARCH_A("attn_k_norm.weight", attn_k_norm, DIM_KV, DIM_1, 0),
    ARCH_A("post_attention_norm.weight", attn_post_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("post_ffw_norm.weight", ffn_post_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
};

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    char key[96];
    snprintf(key, sizeof key, "%s.attention.sliding_window", mf->arch);
    if (tport_model_file_kv(mf, key))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: not run: %s (OLMo 3's sliding-window layers) is not "
                           "implemented for olmo2", mf->path, key);
    if (sh->head_dim * sh->n_head != sh->n_embd)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: olmo2's head size is n_embd / n_head (%d / %d), not %d",
                           mf->path, sh->n_embd, sh->n_head, sh->head_dim);
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *att = tport_blk_self_attention(b, il, x, kq_scale);
        x = tport_add(b->ctx, tport_blk_norm(b, att, l->attn_post_norm, NULL), x);
        tport_tensor *ffn = tport_blk_ffn_swiglu(b, l, x);
        x = tport_add(b->ctx, tport_blk_norm(b, ffn, l->ffn_post_norm, NULL), x);
    }
    return tport_blk_output(b, x);
}

const tport_arch tport_arch_olmo2 = {
    .name = "olmo2",
    .about = "OLMo 2",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
};
