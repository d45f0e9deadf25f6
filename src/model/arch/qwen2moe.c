/* qwen2moe (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): qwen2's attention (biases
 * on Q, K and V, NeoX RoPE) and a mixture of SwiGLU experts beside one
 * shared expert whose output is gated per token (blocks_moe.c).
 *
 *   x = token_embd[ids]
 *   per layer:  x += Wo attn(rope(Wq h + bq), rope(Wk h + bk), Wv h + bv),  h = rms_norm(x) * attn_norm
 *               x += moe(h) + sigmoid(w_shexp_gate . h) shexp(h),         h = rms_norm(x) * ffn_norm
 *               moe(h) = sum_i p_i down_i(silu(gate_i h) * up_i h) over the top n_used experts of
 *               p = softmax(W_router h), not renormalised
 *   logits = output (rms_norm(x_last) * output_norm) */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_q.bias", bq, DIM_Q, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_k.bias", bk, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.bias", bv, DIM_KV, DIM_1, TENSOR_BIAS | TENSOR_OPTIONAL),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate_inp.weight", ffn_gate_inp, DIM_EMBD, DIM_EXPERT, TENSOR_EXPERTS),
    ARCH_X("ffn_gate_exps.weight", ffn_gate_exps, DIM_EMBD, DIM_FF_EXP, 0),
    ARCH_X("ffn_down_exps.weight", ffn_down_exps, DIM_FF_EXP, DIM_EMBD, 0),
    ARCH_X("ffn_up_exps.weight", ffn_up_exps, DIM_EMBD, DIM_FF_EXP, 0),
    /* the shared expert's gate is one row, [n_embd] */
    ARCH_F("ffn_gate_inp_shexp.weight", ffn_gate_inp_shexp, DIM_EMBD, DIM_1, TENSOR_EXPERTS),
    ARCH_F("ffn_gate_shexp.weight", ffn_gate_shexp, DIM_EMBD, DIM_FF_SHEXP, TENSOR_EXPERTS),
    ARCH_F("ffn_down_shexp.weight", ffn_down_shexp, DIM_FF_SHEXP, DIM_EMBD, TENSOR_EXPERTS),
    ARCH_F("ffn_up_shexp.weight", ffn_up_shexp, DIM_EMBD, DIM_FF_SHEXP, TENSOR_EXPERTS),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, 0),
};

/* llama.cpp's defaults for widths the file leaves out; experts required */
static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    if (sh->n_expert <= 0 || sh->n_expert_used <= 0)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: qwen2moe without experts", mf->path);
    if (!sh->n_ff_exp)
        sh->n_ff_exp = sh->n_ff / sh->n_expert_used;
    if (!sh->n_ff_shexp)
        sh->n_ff_shexp = sh->n_ff;
    return TPORT_STATUS_OK;
}

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        x = tport_add(b->ctx, tport_blk_self_attention(b, il, tport_blk_norm(b, x, l->attn_norm, NULL), kq_scale), x);
        tport_tensor *h = tport_blk_norm(b, x, l->ffn_norm, NULL);
        tport_tensor *ffn = tport_add(b->ctx, tport_blk_ffn_moe(b, l, h, false), tport_blk_ffn_shared_expert(b, l, h));
        x = tport_add(b->ctx, ffn, x);
    }
    return tport_blk_output(b, x);
}

const tport_arch tport_arch_qwen2moe = {
    .name = "qwen2moe",
    .about = "Qwen1.5-MoE, Qwen2-MoE (experts and a gated shared expert)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
    .math_keys = "expert_count|expert_used_count|expert_feed_forward_length|"
                 "expert_shared_feed_forward_length",
};
