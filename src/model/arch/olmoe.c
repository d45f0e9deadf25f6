/* olmoe (OLMoE-1B-7B): RMS norms of the whole Q and K projections before
 * NeoX RoPE, no biases, and a mixture of feed_forward_length-wide SwiGLU
 * experts whose weights are not renormalised.
 *
 *   x = token_embd[ids]
 *   per layer:  x += Wo attn(rope(qn * rms(Wq h)), rope(kn * rms(Wk h)), Wv h),  norms over all heads
 *               x += sum_i p_i down_i(silu(gate_i h) * up_i h),   top n_used of p = softmax(W_router h)
 *   logits = output (rms_norm(x_last) * output_norm) */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_A("attn_q_norm.weight", attn_q_norm, DIM_Q, DIM_1, 0),
    ARCH_A("attn_k_norm.weight", attn_k_norm, DIM_KV, DIM_1, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate_inp.weight", ffn_gate_inp, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS),
    ARCH_X("ffn_gate_exps.weight", ffn_gate_exps, DIM_EMBD, DIM_FF, 0),
    ARCH_X("ffn_down_exps.weight", ffn_down_exps, DIM_FF, DIM_EMBD, 0),
    ARCH_X("ffn_up_exps.weight", ffn_up_exps, DIM_EMBD, DIM_FF, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
};

/* experts required; llama.cpp reads the norms as [n_embd]: one kv head
 * per head */
static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_expert <= 0 || sh->n_expert_used <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: olmoe without experts", mf->path);
    if (sh->n_head_kv != sh->n_head || sh->head_dim * sh->n_head != sh->n_embd)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: olmoe with %d kv heads of %d, head size %d", mf->path,
                           sh->n_head_kv, sh->n_head, sh->head_dim);
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    return tport_blk_decoder(b, false);
}

const tport_arch tport_arch_olmoe = {
    .name = "olmoe",
    .about = "OLMoE (1B-7B)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
    .math_keys = "expert_count|expert_used_count",
};
