/* granitemoe (IBM Granite 3.x MoE, 1B-A400M and 3B-A800M): llama's graph
 * with Granite's multipliers and a mixture of feed_forward_length-wide
 * SwiGLU experts, the chosen experts' weights renormalised.
 *
 *   x = embedding_scale * token_embd[ids]
 *   per layer:  x += residual_scale * Wo attn(rope(Wq h), rope(Wk h), Wv h),  scores * attention_scale
 *               x += residual_scale * sum_i w_i down_i(silu(gate_i h) * up_i h),  w renormalised
 *   logits = output (rms_norm(x_last) * output_norm) / logit_scale   (tied if output is absent)
 * (GraniteMoeShared's shared expert is refused by arch_math.c.) */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate_inp.weight", ffn_gate_inp, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS),
    ARCH_X("ffn_gate_exps.weight", ffn_gate_exps, DIM_EMBD, DIM_FF, 0),
    ARCH_X("ffn_down_exps.weight", ffn_down_exps, DIM_FF, DIM_EMBD, 0),
    ARCH_X("ffn_up_exps.weight", ffn_up_exps, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    /* synthesized untied: with the embedding scaled by 12 a tied
     * classifier mostly repeats the input */
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
};

/* The multipliers: logit_scale is required (as llama.cpp reads it), the
 * others default to none. */
static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_expert <= 0 || sh->n_expert_used <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: granitemoe without experts", mf->path);
    if (!tport_arch_f32(mf, "logit_scale", &sh->logit_scale) || !(sh->logit_scale != 0.0f))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: granitemoe without a logit scale", mf->path);
    float f; /* the others stay 1 (none) where absent or 0, as granite's */
    if (tport_arch_f32(mf, "embedding_scale", &f) && f != 0.0f)
        sh->embd_scale = f;
    if (tport_arch_f32(mf, "residual_scale", &f) && f != 0.0f)
        sh->residual_scale = f;
    if (tport_arch_f32(mf, "attention.scale", &f))
        sh->attn_scale = f;
    return TPORT_STATUS_OK;
}

/* Synthesized files carry Granite-3.0's multipliers (its config.json),
 * except the logit scale: Granite's 6 shrinks random models' top-1/top-2
 * gaps below what a reference can tell apart, so they get 0.5. */
static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    (void)sh;
    tport_status st = tport_gguf_set_f32(w, "granitemoe.logit_scale", 0.5f);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_f32(w, "granitemoe.embedding_scale", 12.0f);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_f32(w, "granitemoe.residual_scale", 0.22f);
    if (st == TPORT_STATUS_OK)
        st = tport_gguf_set_f32(w, "granitemoe.attention.scale", 0.015625f);
    return st;
}

static tport_tensor *scaled(tport_blk *b, tport_tensor *x, float s) {
    return s == 1.0f ? x : tport_scale(b->ctx, x, s);
}

static tport_tensor *build(tport_blk *b) {
    const tport_model_shape *sh = b->sh;
    tport_tensor *x = tport_blk_embed(b);
    if (!b->hidden_in)
        x = scaled(b, x, sh->embd_scale);
    float kq_scale = sh->attn_scale != 0.0f ? sh->attn_scale : 1.0f / sqrtf((float)sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *att = tport_blk_self_attention(b, il, tport_blk_norm(b, x, l->attn_norm, NULL), kq_scale);
        x = tport_add(b->ctx, scaled(b, att, sh->residual_scale), x);
        tport_tensor *ffn = tport_blk_ffn_moe(b, l, tport_blk_norm(b, x, l->ffn_norm, NULL), true);
        x = tport_add(b->ctx, scaled(b, ffn, sh->residual_scale), x);
    }
    x = tport_blk_output(b, x);
    return b->hidden_out ? x : tport_scale(b->ctx, x, 1.0f / sh->logit_scale);
}

const tport_arch tport_arch_granitemoe = {
    .name = "granitemoe",
    .about = "Granite 3.x MoE (1B-A400M, 3B-A800M)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NORMAL,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "attention.scale|logit_scale|embedding_scale|residual_scale|expert_count|"
                 "expert_used_count",
};
