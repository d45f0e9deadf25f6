/* gpt-oss (gpt-oss-20b, gpt-oss-120b; llama.cpp's LLM_ARCH_OPENAI_MOE):
 * a pre-norm decoder with biases on Q, K, V and the output projection,
 * attention sinks, sliding-window attention on alternate layers, and a
 * mixture of experts with biases and a clamped SwiGLU.
 *
 *   x = token_embd[ids]
 *   per layer:  x += Wo attn(rope(Wq h + bq), rope(Wk h + bk), Wv h + bv) + bo,  h = rms_norm(x) * attn_norm
 *               x += sum_i w_i (down_i(swiglu_oai(gate_i h + bg_i, up_i h + bu_i)) + bd_i),
 *                    h = rms_norm(x) * post_attention_norm,
 *                    i over the n_used largest of l = W_router h + b_router, w = softmax(l[i]) over those
 *   attention:  softmax over the keys and the head's sink s_h: the sink's
 *               exp(s_h - max) joins the denominator only (unscaled, no value)
 *   swiglu_oai(g, u) = min(g, 7) sigmoid(1.702 min(g, 7)) (clamp(u, -7, 7) + 1)
 *   logits = output (rms_norm(x_last) * output_norm)
 *
 * Layer il is local (a window of attention.sliding_window) when
 * il % period < period - 1, period = attention.sliding_window_pattern
 * (default 2: the even layers); local layers rotate with
 * rope.freq_base_swa when the file has it.  RoPE is NeoX's over the whole
 * head, with YaRN where rope.scaling says so (ROPE_EXT); the scores are
 * scaled by 1/sqrt(head_dim).  The experts' matrices are MXFP4 in the
 * published files; their biases are f32 (ADD_ID reads f32). */
#include <math.h>
#include <stdio.h>

#include "model/arch/arch.h"

#define BIAS_OPT (TENSOR_BIAS | TENSOR_OPTIONAL)

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, BIAS_OPT),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, BIAS_OPT),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, BIAS_OPT),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_output.bias", bo, DIM_EMBD, DIM_1, TENSOR_BIAS),
    ARCH_A("attn_sinks.weight", attn_sinks, DIM_HEADS, DIM_1, TENSOR_BIAS),
    /* the feed-forward's pre-norm, under llama.cpp's ATTN_POST_NORM name */
    ARCH_F("post_attention_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate_inp.weight", ffn_gate_inp, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS),
    ARCH_F("ffn_gate_inp.bias", ffn_gate_inp_b, DIM_EXPERT, DIM_1, TENSOR_EXPERTS | TENSOR_BIAS),
    ARCH_X("ffn_gate_exps.weight", ffn_gate_exps, DIM_EMBD, DIM_FF_EXP, 0),
    ARCH_F("ffn_gate_exps.bias", ffn_gate_exps_b, DIM_FF_EXP, DIM_EXPERT, TENSOR_EXPERTS | TENSOR_BIAS),
    ARCH_X("ffn_down_exps.weight", ffn_down_exps, DIM_FF_EXP, DIM_EMBD, 0),
    ARCH_F("ffn_down_exps.bias", ffn_down_exps_b, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS | TENSOR_BIAS),
    ARCH_X("ffn_up_exps.weight", ffn_up_exps, DIM_EMBD, DIM_FF_EXP, 0),
    ARCH_F("ffn_up_exps.bias", ffn_up_exps_b, DIM_FF_EXP, DIM_EXPERT, TENSOR_EXPERTS | TENSOR_BIAS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
};

/* llama.cpp's constants for LLM_FFN_SWIGLU_OAI_MOE (no GGUF key) */
#define OAI_ALPHA 1.702f
#define OAI_LIMIT 7.0f

/* llama.cpp requires the experts, their width and the window; the biases
 * of the experts (a row per expert) must be f32, as ADD_ID reads them */
static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_expert <= 0 || sh->n_expert_used <= 0 || sh->n_ff_exp <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: gpt-oss needs expert_count, expert_used_count and "
                           "expert_feed_forward_length", mf->path);
    if (sh->n_swa <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: gpt-oss without attention.sliding_window", mf->path);
    tport_status st = tport_arch_swa_period(mf, 2, &sh->swa_period);
    if (st)
        return st;
    tport_arch_f32(mf, "rope.freq_base_swa", &sh->rope_base_swa);
    if (!(sh->rope_base_swa > 0))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: gpt-oss local RoPE base %g", mf->path,
                           (double)sh->rope_base_swa);
    if (sh->n_rot != sh->head_dim)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: gpt-oss rotating %d of %d dimensions", mf->path,
                           sh->n_rot, sh->head_dim);
    static const char *const biases[] = {"blk.%d.ffn_gate_exps.bias", "blk.%d.ffn_up_exps.bias",
                                         "blk.%d.ffn_down_exps.bias"};
    for (int32_t il = 0; il < sh->n_layer; il++)
        for (size_t k = 0; k < sizeof biases / sizeof biases[0]; k++) {
            char name[64];
            snprintf(name, sizeof name, biases[k], (int)il);
            const tport_mf_tensor *t = tport_model_file_find(mf, name);
            if (t && t->type != TPORT_TYPE_F32)
                return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %s of type %u (the experts' biases are "
                                   "implemented in f32)", mf->path, name, (unsigned)t->type);
        }
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    tport_ctx *ctx = b->ctx;
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        x = tport_add(ctx, tport_blk_self_attention(b, il, tport_blk_norm(b, x, l->attn_norm, NULL), kq_scale), x);
        tport_tensor *h = tport_blk_norm(b, x, l->ffn_norm, NULL);
        x = tport_add(ctx, tport_blk_ffn_moe_oai(b, l, h, OAI_ALPHA, OAI_LIMIT), x);
    }
    return tport_blk_output(b, x);
}

/* the window llama.cpp requires (128, the published models', when the
 * shape has none) and the local layers' RoPE base when it differs */
static tport_status write_keys(tport_gguf_writer *w, const tport_model_shape *sh) {
    tport_status st = tport_gguf_set_u32(w, "gpt-oss.attention.sliding_window", (uint32_t)(sh->n_swa ? sh->n_swa : 128));
    if (!st && sh->rope_base_swa > 0 && sh->rope_base_swa != sh->rope_base)
        st = tport_gguf_set_f32(w, "gpt-oss.rope.freq_base_swa", sh->rope_base_swa);
    return st;
}

const tport_arch tport_arch_gptoss = {
    .name = "gpt-oss",
    .about = "gpt-oss (20b, 120b)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
    .write_keys = write_keys,
    .math_keys = "rope.freq_base_swa|attention.sliding_window_pattern|expert_count|"
                 "expert_used_count|expert_feed_forward_length",
};
