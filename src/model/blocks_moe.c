/* The mixture-of-experts feed-forward, as llama.cpp's build_moe_ffn builds
 * it for softmax gating (Mixtral, Qwen-MoE, OLMoE):
 *
 *   probs   = softmax(router h)                      [n_expert, n]
 *   ids     = the n_used largest probs, descending   [n_used, n]
 *   w       = probs[ids]                 (renormalised: w / max(sum w, 2^-14))
 *   out     = sum_i w_i down_i(silu(gate_i h) * up_i h),  i over ids
 *
 * and for sigmoid gating (DeepSeek-V3): probs = sigmoid(router h), the
 * experts chosen by probs + exp_probs_b, their weights renormalised and
 * scaled by the routed scaling factor where the file says so.
 *
 * The experts' products are mul_mat_id nodes, which read only the chosen
 * experts; the weighted slots are added in slot order, as llama.cpp does.
 *
 * gpt-oss's experts (build_moe_ffn with SOFTMAX_WEIGHT gating and
 * SWIGLU_OAI_MOE) route on the raw logits and weigh the chosen ones alone:
 *
 *   logits  = router h + router_b                   [n_expert, n]
 *   ids     = the n_used largest logits, descending
 *   w       = softmax(logits[ids])                  (over the n_used only)
 *   out     = sum_i w_i (down_i(swiglu_oai(gate_i h + bg_i, up_i h + bu_i)) + bd_i) */
#include <math.h>

#include "model/blocks.h"

/* sum_i w_i experts_i over the slots: experts [n_embd, n_used, n] times
 * w [1, n_used, n], the slots added in slot order, as llama.cpp does. */
static tport_tensor *weighted_sum(tport_ctx *ctx, tport_tensor *experts, tport_tensor *w, int64_t n_embd,
                                  int64_t n_used, int64_t n) {
    experts = tport_mul(ctx, experts, w); /* [n_embd, n_used, n] */
    if (!experts)
        return NULL;
    tport_tensor *out = NULL;
    for (int64_t i = 0; i < n_used; i++) {
        const int64_t ne[2] = {n_embd, n};
        const size_t nb[2] = {tport_tensor_nb(experts, 0), tport_tensor_nb(experts, 2)};
        tport_tensor *slot = tport_view(ctx, experts, 2, ne, nb, (size_t)i * tport_tensor_nb(experts, 1));
        out = out ? tport_add(ctx, out, slot) : slot;
    }
    return n_used == 1 ? tport_cont(ctx, out) : out;
}

tport_tensor *tport_blk_ffn_moe(tport_blk *b, const tport_layer *l, tport_tensor *h, bool renormalise) {
    const tport_moe_routing r = {.renormalise = renormalise};
    return tport_blk_ffn_moe_routed(b, l, h, &r);
}

tport_tensor *tport_blk_ffn_moe_routed(tport_blk *b, const tport_layer *l, tport_tensor *h,
                                       const tport_moe_routing *r) {
    tport_ctx *ctx = b->ctx;
    const int64_t n_expert = b->sh->n_expert, n_used = b->sh->n_expert_used, n_embd = tport_tensor_ne(h, 0),
                  n = tport_tensor_ne(h, 1);
    const bool renormalise = r->renormalise;
    tport_tensor *logits = tport_mul_mat(ctx, l->ffn_gate_inp, h);
    tport_tensor *probs = r->sigmoid ? tport_sigmoid(ctx, logits) : tport_soft_max(ctx, logits, NULL, 1.0f);
    /* DeepSeek-V3: the bias steers the choice only; the weights are the
     * unbiased probabilities of the chosen experts */
    tport_tensor *select = r->probs_bias ? tport_add(ctx, probs, r->probs_bias) : probs;
    if (r->n_groups > 1)
        select = tport_expert_groups(ctx, select, r->n_groups, r->n_group_used);
    tport_tensor *ids = tport_argsort_top_k(ctx, select, (int)n_used);
    const int64_t p3[3] = {1, n_expert, n};
    tport_tensor *w = tport_get_rows(ctx, tport_reshape(ctx, probs, 3, p3), ids); /* [1, n_used, n] */
    if (renormalise) {
        const int64_t w2[2] = {n_used, n}, w3[3] = {1, n_used, n};
        tport_tensor *flat = tport_reshape(ctx, w, 2, w2);
        /* llama.cpp keeps the sum at least the smallest normal f16 */
        tport_tensor *sum = tport_clamp(ctx, tport_sum_rows(ctx, flat), 6.103515625e-5f, INFINITY);
        w = tport_reshape(ctx, tport_div(ctx, flat, sum), 3, w3);
    }
    if (r->scale != 0.0f && r->scale != 1.0f)
        w = tport_scale(ctx, w, r->scale);
    const int64_t h3[3] = {n_embd, 1, n};
    tport_tensor *x = tport_reshape(ctx, h, 3, h3);
    tport_tensor *up = tport_mul_mat_id(ctx, l->ffn_up_exps, x, ids);
    tport_tensor *gate = tport_mul_mat_id(ctx, l->ffn_gate_exps, x, ids);
    tport_tensor *experts = tport_mul_mat_id(ctx, l->ffn_down_exps, tport_swiglu(ctx, gate, up), ids);
    return weighted_sum(ctx, experts, w, n_embd, n_used, n);
}

tport_tensor *tport_blk_ffn_moe_oai(tport_blk *b, const tport_layer *l, tport_tensor *h, float alpha, float limit) {
    tport_ctx *ctx = b->ctx;
    const int64_t n_expert = b->sh->n_expert, n_used = b->sh->n_expert_used, n_embd = tport_tensor_ne(h, 0),
                  n = tport_tensor_ne(h, 1);
    tport_tensor *logits = tport_blk_linear(b, l->ffn_gate_inp, l->ffn_gate_inp_b, h); /* [n_expert, n] */
    tport_tensor *ids = tport_argsort_top_k(ctx, logits, (int)n_used);
    const int64_t p3[3] = {1, n_expert, n}, w2[2] = {n_used, n}, w3[3] = {1, n_used, n};
    tport_tensor *w = tport_get_rows(ctx, tport_reshape(ctx, logits, 3, p3), ids); /* [1, n_used, n] */
    w = tport_reshape(ctx, tport_soft_max(ctx, tport_reshape(ctx, w, 2, w2), NULL, 1.0f), 3, w3);
    const int64_t h3[3] = {n_embd, 1, n};
    tport_tensor *x = tport_reshape(ctx, h, 3, h3);
    tport_tensor *up = tport_mul_mat_id(ctx, l->ffn_up_exps, x, ids);
    up = tport_add_id(ctx, up, l->ffn_up_exps_b, ids);
    tport_tensor *gate = tport_mul_mat_id(ctx, l->ffn_gate_exps, x, ids);
    gate = tport_add_id(ctx, gate, l->ffn_gate_exps_b, ids);
    tport_tensor *act = tport_swiglu_oai(ctx, gate, up, alpha, limit);
    tport_tensor *experts = tport_mul_mat_id(ctx, l->ffn_down_exps, act, ids);
    experts = tport_add_id(ctx, experts, l->ffn_down_exps_b, ids);
    return weighted_sum(ctx, experts, w, n_embd, n_used, n);
}

tport_tensor *tport_blk_ffn_shared_expert(tport_blk *b, const tport_layer *l, tport_tensor *h) {
    tport_ctx *ctx = b->ctx;
    tport_layer shexp = {.w_gate = l->ffn_gate_shexp, .w_up = l->ffn_up_shexp, .w_down = l->ffn_down_shexp};
    tport_tensor *out = tport_blk_ffn_swiglu(b, &shexp, h);
    if (!l->ffn_gate_inp_shexp)
        return out;
    /* sigmoid as llama.cpp computes it here: silu(g) / g */
    tport_tensor *g = tport_mul_mat(ctx, l->ffn_gate_inp_shexp, h); /* [1, n] */
    return tport_mul(ctx, out, tport_div(ctx, tport_silu(ctx, g), g));
}

tport_tensor *tport_blk_ffn_swiglu_or_moe(tport_blk *b, const tport_layer *l, tport_tensor *h, bool renormalise) {
    if (l->ffn_gate_inp)
        return tport_blk_ffn_moe(b, l, h, renormalise);
    if (!l->w_up)
        return NULL; /* the loader bound neither: never reached */
    return tport_blk_ffn_swiglu(b, l, h);
}
