/* cohere2 (Cohere Command R7B, Command A): one LayerNorm (weight, no
 * bias) feeds attention and the SwiGLU feed-forward in parallel; three
 * of every four layers attend through a sliding window and only those
 * rotate Q and K (the global layers have no position encoding at all);
 * the classifier is the embedding, its logits multiplied by logit_scale
 * (llama.cpp's cohere2.cpp).
 *
 *   h = ln(x) * attn_norm
 *   per layer:  x = x + Wo attn(rope?(Wq h), rope?(Wk h), Wv h) + W_down (silu(W_gate h) * W_up h)
 *   logits = token_embd (ln(x_last) * output_norm) * logit_scale
 *
 * Layer il is local when il % period < period - 1 (period =
 * attention.sliding_window_pattern, default 4): so the global layers are
 * exactly those with (il + 1) % period == 0, the shape's NoPE layers.
 * The local layers rotate with rope.freq_base and the file's scaling:
 * llama.cpp reads rope.freq_base_swa but its graph does not use it. */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
};

/* Command R7B's window, and a logit scale for synthesized files (R7B's is
 * 0.25; the ids do not depend on it, the logits and perplexity do) */
#define COHERE2_WINDOW 4096
static const float synth_logit_scale = 0.25f;

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (tport_model_file_find(mf, "output.weight"))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: cohere2 ties its classifier to token_embd, but the file "
                           "has output.weight", mf->path);
    /* llama.cpp requires both keys */
    if (sh->n_swa <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: cohere2 needs %s.attention.sliding_window", mf->path,
                           mf->arch);
    if (!tport_arch_f32(mf, "logit_scale", &sh->logit_scale) || !(sh->logit_scale != 0.0f) ||
        !isfinite(sh->logit_scale))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: cohere2 needs a finite non-zero %s.logit_scale", mf->path,
                           mf->arch);
    tport_status st = tport_arch_swa_period(mf, 4, &sh->swa_period);
    if (st)
        return st;
    if (sh->swa_period < 1)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: cohere2 with a sliding-window pattern of %d", mf->path,
                           (int)sh->swa_period);
    sh->nope_every = sh->swa_period; /* RoPE on the local layers only */
    sh->rope_base_swa = sh->rope_base;
    sh->rope_scale_swa = sh->rope_scale;
    return TPORT_STATUS_OK;
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    tport_status st =
        tport_gguf_set_u32(w, "cohere2.attention.sliding_window", (uint32_t)(sh->n_swa ? sh->n_swa : COHERE2_WINDOW));
    if (!st)
        st = tport_gguf_set_f32(w, "cohere2.logit_scale", sh->logit_scale != 0.0f ? sh->logit_scale
                                                                                   : synth_logit_scale);
    return st;
}

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *h = tport_blk_norm(b, x, l->attn_norm, NULL);
        tport_tensor *att = tport_blk_self_attention(b, il, h, kq_scale);
        tport_tensor *ffn = tport_blk_ffn_swiglu(b, l, h);
        x = tport_add(b->ctx, tport_add(b->ctx, ffn, x), att);
    }
    tport_tensor *logits = tport_blk_output(b, x);
    return b->hidden_out || !logits ? logits : tport_scale(b->ctx, logits, b->sh->logit_scale);
}

const tport_arch tport_arch_cohere2 = {
    .name = "cohere2",
    .about = "Cohere Command R7B, Command A",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_LAYER,
    .rope_mode = TPORT_ROPE_NORMAL,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "rope.freq_base_swa|attention.sliding_window_pattern|logit_scale",
};
