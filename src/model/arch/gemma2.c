/* gemma2 (Gemma 2: 2B, 9B, 27B): Gemma's layout with post-norms, soft-caps
 * and sliding-window attention on alternate layers.
 *
 *   x = token_embd[ids] * sqrt(n_embd)
 *   per layer:  x += post_norm(Wo attn(rope(Wq h) * q_scale, rope(Wk h), Wv h)),  h = rms_norm(x) * attn_norm
 *               x += ffn_post_norm(W_down (gelu(W_gate h) * W_up h)),            h = rms_norm(x) * ffn_norm
 *   attention scores: s = a tanh(s / a) on the scaled Q.K, before the mask
 *               (a = attn_logit_softcapping, default 50)
 *   logits = f tanh(token_embd (rms_norm(x_last) * output_norm) / f)  (f = final_logit_softcapping, 30)
 *
 * Layer il is local (a window of attention.sliding_window, default 4096)
 * when il % period < period - 1, period = attention.sliding_window_pattern
 * (default 2: the even layers); local layers rotate with rope.freq_base_swa
 * if the file has it, else the global base and scale.  q_scale is
 * 1/sqrt(head_dim), or 1/sqrt(n_embd / n_head) for the 46-layer 27B
 * (llama.cpp's gemma2 loader).  llama.cpp's converter writes the norm
 * weights as 1 + w, so every norm is a plain RMSNorm times its weight.
 * The classifier is always token_embd: llama.cpp reads no output.weight. */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("post_attention_norm.weight", attn_post_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("post_ffw_norm.weight", ffn_post_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
};

#define GEMMA2_27B_LAYERS 46

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = b->hidden_in ? b->hidden_in : tport_scale(b->ctx, tport_blk_embed(b), sqrtf((float)b->sh->n_embd));
    float q_scale = tport_arch_gemma_q_scale(b->sh, GEMMA2_27B_LAYERS);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++)
        x = tport_arch_gemma_layer(b, x, il, q_scale);
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (tport_model_file_find(mf, "output.weight"))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: gemma2 ties its classifier to token_embd, but the file "
                           "has output.weight", mf->path);
    if (!sh->n_swa)
        sh->n_swa = 4096; /* llama.cpp's default for Gemma 2 */
    tport_status st = tport_arch_swa_period(mf, 2, &sh->swa_period);
    if (st)
        return st;
    tport_arch_f32(mf, "rope.freq_base_swa", &sh->rope_base_swa);
    sh->attn_softcap = 50.0f;
    sh->logit_softcap = 30.0f;
    tport_arch_f32(mf, "attn_logit_softcapping", &sh->attn_softcap);
    tport_arch_f32(mf, "final_logit_softcapping", &sh->logit_softcap);
    if (!(sh->attn_softcap > 0) || !(sh->logit_softcap > 0) || !(sh->rope_base_swa > 0))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: gemma2 soft-caps %g and %g, local RoPE base %g", mf->path,
                           (double)sh->attn_softcap, (double)sh->logit_softcap, (double)sh->rope_base_swa);
    return TPORT_STATUS_OK;
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    tport_status st = tport_gguf_set_u32(w, "gemma2.attention.sliding_window", (uint32_t)(sh->n_swa ? sh->n_swa : 4096));
    if (!st)
        st = tport_gguf_set_f32(w, "gemma2.attn_logit_softcapping", sh->attn_softcap > 0 ? sh->attn_softcap : 50.0f);
    if (!st)
        st = tport_gguf_set_f32(w, "gemma2.final_logit_softcapping",
                                sh->logit_softcap > 0 ? sh->logit_softcap : 30.0f);
    return st;
}

const tport_arch tport_arch_gemma2 = {
    .name = "gemma2",
    .about = "Gemma 2 (2B, 9B, 27B)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .whole_head_rope_unwritten = true,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "rope.freq_base_swa|attention.sliding_window_pattern|attn_logit_softcapping|"
                 "final_logit_softcapping",
};
