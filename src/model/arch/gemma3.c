/* gemma3 (Gemma 3's text part: 270M, 1B, 4B, 12B, 27B): Gemma 2's layer
 * with per-head Q/K RMS norms, five local layers to one global, and no
 * attention soft-cap.
 *
 *   x = token_embd[ids] * sqrt(n_embd)
 *   per layer:  q = rope(rms_norm(Wq h) * attn_q_norm) * q_scale,  k = rope(rms_norm(Wk h) * attn_k_norm)
 *               x += post_norm(Wo attn(q, k, Wv h)),               h = rms_norm(x) * attn_norm
 *               x += ffn_post_norm(W_down (gelu(W_gate h) * W_up h)), h = rms_norm(x) * ffn_norm
 *   logits = output (rms_norm(x_last) * output_norm)   (tied to token_embd if absent;
 *            soft-capped only if the file has final_logit_softcapping)
 *
 * With attention.sliding_window, layer il is local when il % period <
 * period - 1 (period = attention.sliding_window_pattern, default 6); local
 * layers rotate with base rope.freq_base_swa, 10000 when absent, and no
 * linear scaling (the file's rope.scaling applies to the global layers
 * only).  Without the key every layer is global.  q_scale as gemma2's
 * (the 27B has 62 layers).  Norm weights are stored as 1 + w by llama.cpp's
 * converter, the Q/K norms included. */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_q_norm.weight", attn_q_norm, DIM_HEAD, DIM_1, 0),
    ARCH_A("attn_k_norm.weight", attn_k_norm, DIM_HEAD, DIM_1, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("post_attention_norm.weight", attn_post_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("post_ffw_norm.weight", ffn_post_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

#define GEMMA3_27B_LAYERS 62

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = b->hidden_in ? b->hidden_in : tport_scale(b->ctx, tport_blk_embed(b), sqrtf((float)b->sh->n_embd));
    float q_scale = tport_arch_gemma_q_scale(b->sh, GEMMA3_27B_LAYERS);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++)
        x = tport_arch_gemma_layer(b, x, il, q_scale);
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_swa > 0) {
        tport_status st = tport_arch_swa_period(mf, 6, &sh->swa_period);
        if (st)
            return st;
        sh->rope_base_swa = 10000.0f; /* llama.cpp's default, not the global base */
        sh->rope_scale_swa = 1.0f;
        tport_arch_f32(mf, "rope.freq_base_swa", &sh->rope_base_swa);
        if (!(sh->rope_base_swa > 0))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: local RoPE base %g", mf->path,
                               (double)sh->rope_base_swa);
    }
    sh->logit_softcap = 0.0f;
    tport_arch_f32(mf, "final_logit_softcapping", &sh->logit_softcap);
    if (sh->logit_softcap < 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: final logit soft-cap %g", mf->path,
                           (double)sh->logit_softcap);
    return TPORT_STATUS_OK;
}

static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    tport_status st = TPORT_STATUS_OK;
    if (sh->n_swa > 0)
        st = tport_gguf_set_u32(w, "gemma3.attention.sliding_window", (uint32_t)sh->n_swa);
    if (!st && sh->n_swa > 0 && sh->rope_base_swa > 0)
        st = tport_gguf_set_f32(w, "gemma3.rope.freq_base_swa", sh->rope_base_swa);
    if (!st && sh->rope_scale > 0 && sh->rope_scale != 1.0f) {
        st = tport_gguf_set_str(w, "gemma3.rope.scaling.type", "linear");
        if (!st)
            st = tport_gguf_set_f32(w, "gemma3.rope.scaling.factor", 1.0f / sh->rope_scale);
    }
    if (!st && sh->logit_softcap > 0)
        st = tport_gguf_set_f32(w, "gemma3.final_logit_softcapping", sh->logit_softcap);
    return st;
}

const tport_arch tport_arch_gemma3 = {
    .name = "gemma3",
    .about = "Gemma 3 text (270M, 1B, 4B, 12B, 27B)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .whole_head_rope_unwritten = true,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "rope.freq_base_swa|attention.sliding_window_pattern|final_logit_softcapping",
};
