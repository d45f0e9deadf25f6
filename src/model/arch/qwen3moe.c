/* qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): llama's graph with per-head
 * RMS norms of Q and K before NeoX RoPE, no biases, and a mixture of
 * SwiGLU experts with the chosen experts' weights renormalised.
 *
 *   x = token_embd[ids]
 *   per layer:  x += Wo attn(rope(qn * rms(Wq h)), rope(kn * rms(Wk h)), Wv h),  per head of head_dim
 *               x += sum_i w_i down_i(silu(gate_i h) * up_i h),   top n_used of softmax(W_router h), w / sum w
 *   logits = output (rms_norm(x_last) * output_norm)    (tied to token_embd if absent) */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_q_norm.weight", attn_q_norm, DIM_HEAD, DIM_1, 0),
    ARCH_A("attn_k_norm.weight", attn_k_norm, DIM_HEAD, DIM_1, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate_inp.weight", ffn_gate_inp, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS),
    ARCH_X("ffn_gate_exps.weight", ffn_gate_exps, DIM_EMBD, DIM_FF_EXP, 0),
    ARCH_X("ffn_down_exps.weight", ffn_down_exps, DIM_FF_EXP, DIM_EMBD, 0),
    ARCH_X("ffn_up_exps.weight", ffn_up_exps, DIM_EMBD, DIM_FF_EXP, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
};

/* experts required; an expert's width is n_ff / n_used when not given */
static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_expert <= 0 || sh->n_expert_used <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: qwen3moe without experts", mf->path);
    if (!sh->n_ff_exp)
        sh->n_ff_exp = sh->n_ff / sh->n_expert_used;
    if (sh->n_rot != sh->head_dim)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: qwen3moe rotating %d of %d dimensions", mf->path,
                           sh->n_rot, sh->head_dim);
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    return tport_blk_decoder(b, true);
}

const tport_arch tport_arch_qwen3moe = {
    .name = "qwen3moe",
    .about = "Qwen3-MoE (30B-A3B, 235B-A22B)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
    .math_keys = "expert_count|expert_used_count|expert_feed_forward_length",
};
