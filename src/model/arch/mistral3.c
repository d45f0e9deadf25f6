/* mistral3 (Mistral-Small 3.x, Ministral 3, Magistral as llama.cpp lays
 * them out, text part; llama.cpp's mistral3.cpp): llama's graph with the
 * head size from attention.key_length, optional attention-output and
 * feed-forward biases, and YaRN whose betas and log multiplier the file
 * gives (rope.scaling.yarn_beta_fast/_slow, yarn_log_multiplier: the
 * attention factor get_mscale(f, 1) / get_mscale(f, log_mul), as
 * llama_context computes it).  Attention temperature scaling (Llama 4
 * style, attention.temperature_scale) is refused, as an unknown key.
 *
 *   per layer:  x += Wo attn(rope(Wq h), rope(Wk h), Wv h) + bo,   h = rms_norm(x) * attn_norm
 *               x += W_down (silu(W_gate h) * W_up h),            h = rms_norm(x) * ffn_norm
 *   logits = output (rms_norm(x_last) * output_norm)   (tied when absent) */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
    ARCH_G("rope_freqs.weight", rope_freqs, DIM_ROT_HALF, DIM_1, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

static float mscale(float factor, float m) {
    return factor <= 1.0f ? 1.0f : 0.1f * m * logf(factor) + 1.0f;
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    tport_arch_f32(mf, "rope.scaling.yarn_beta_fast", &sh->rope_beta_fast);
    tport_arch_f32(mf, "rope.scaling.yarn_beta_slow", &sh->rope_beta_slow);
    float log_mul = 0.0f, attn = 1.0f;
    tport_arch_f32(mf, "rope.scaling.yarn_log_multiplier", &log_mul);
    if (sh->rope_ext_factor != 0.0f && log_mul != 0.0f) {
        const float factor = 1.0f / sh->rope_scale;
        sh->rope_attn_factor = mscale(factor, 1.0f) / mscale(factor, log_mul);
        sh->rope_attn_factor *= 1.0f / (1.0f + 0.1f * logf(factor));
        if (tport_arch_f32(mf, "rope.scaling.attn_factor", &attn) && attn > 0.0f)
            sh->rope_attn_factor *= attn;
    }
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    return tport_blk_decoder(b, true);
}

const tport_arch tport_arch_mistral3 = {
    .name = "mistral3",
    .about = "Mistral-Small 3.x, Ministral 3 (text)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NORMAL,
    .hparams = hparams,
    .build = build,
    .math_keys = "rope.scaling.yarn_log_multiplier",
};
