/* phi3 (Phi-3, Phi-3.5, Phi-4-mini; llama.cpp's phi3.cpp): RMSNorm, a
 * fused [Q|K|V] projection (or separate ones), NeoX RoPE over the first
 * rope.dimension_count dimensions (partial rotary) with LongRoPE's
 * frequency factors, Q scaled by 1/sqrt(head size) before attention, and a
 * fused [gate|up] feed-forward.
 *
 *   per layer:  q, k, v = split(Wqkv h),                   h = rms_norm(x) * attn_norm
 *               x += Wo attn(rope(q) / sqrt(hd), rope(k), v; kq scale 1)
 *               g, u = split(W_up h);  x += W_down (silu(g) * u),  h = rms_norm(x) * ffn_norm
 *   logits = output (rms_norm(x_last) * output_norm)   (tied when absent)
 *
 * LongRoPE as llama.cpp: rope_factors_long when the context, padded to a
 * multiple of 256, exceeds rope.scaling.original_context_length, else
 * rope_factors_short (blocks.c); rope.scaling.attn_factor multiplies cos
 * and sin; the converter writes no scaling type.  llama.cpp runs Phi's
 * sliding window as full attention ("Phi SWA is currently disabled"), and
 * so does this file. */
#include <math.h>
#include <stdio.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_qkv.weight", wqkv, DIM_EMBD, DIM_QKV, TENSOR_OPTIONAL),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF2, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
    ARCH_G("output.weight", output, DIM_EMBD, DIM_VOCAB, TENSOR_OPTIONAL),
    /* LongRoPE (Phi-3-*-128k, Phi-3.5, Phi-4-mini): synth writes them with --with */
    ARCH_G("rope_factors_long.weight", rope_long, DIM_ROT_HALF, DIM_1, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
    ARCH_G("rope_factors_short.weight", rope_short, DIM_ROT_HALF, DIM_1, TENSOR_OPTIONAL | TENSOR_NO_SYNTH),
};

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    bool fused = tport_model_file_find(mf, "blk.0.attn_qkv.weight") != NULL;
    bool split = tport_model_file_find(mf, "blk.0.attn_q.weight") && tport_model_file_find(mf, "blk.0.attn_k.weight") &&
                 tport_model_file_find(mf, "blk.0.attn_v.weight");
    if (!fused && !split)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: phi3 needs blk.N.attn_qkv.weight or attn_q/k/v", mf->path);
    if (sh->head_dim * sh->n_head != sh->n_embd)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: phi3's head size is n_embd / n_head (%d / %d), not %d",
                           mf->path, sh->n_embd, sh->n_head, sh->head_dim);
    /* llama.cpp ignores Phi's sliding window: full attention, full context */
    if (sh->n_ctx_train > 0)
        sh->n_ctx = sh->n_ctx_train;
    return TPORT_STATUS_OK;
}

static tport_tensor *ffn_fused(tport_blk *b, const tport_layer *l, tport_tensor *h) {
    tport_tensor *gu = tport_mul_mat(b->ctx, l->w_up, h); /* [2 ff, n]: gate rows, then up rows */
    if (!gu)
        return NULL;
    const int64_t ff = b->sh->n_ff, ne[2] = {ff, tport_tensor_ne(gu, 1)};
    const size_t nb[2] = {sizeof(float), tport_tensor_nb(gu, 1)};
    tport_tensor *gate = tport_cont(b->ctx, tport_view(b->ctx, gu, 2, ne, nb, 0));
    tport_tensor *up = tport_cont(b->ctx, tport_view(b->ctx, gu, 2, ne, nb, (size_t)ff * sizeof(float)));
    return tport_mul_mat(b->ctx, l->w_down, tport_swiglu(b->ctx, gate, up));
}

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = tport_blk_embed(b);
    const float q_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *q, *k, *v;
        if (tport_blk_qkv_layer(b, il, l, tport_blk_norm(b, x, l->attn_norm, NULL), &q, &k, &v) != TPORT_STATUS_OK)
            return NULL;
        q = tport_scale(b->ctx, q, q_scale); /* llama.cpp scales Q, then attends with scale 1 */
        tport_tensor *att = tport_blk_linear(b, l->wo, l->bo, tport_blk_attention(b, il, q, k, v, 1.0f));
        x = tport_add(b->ctx, att, x);
        x = tport_add(b->ctx, x, ffn_fused(b, l, tport_blk_norm(b, x, l->ffn_norm, NULL)));
    }
    return tport_blk_output(b, x);
}

const tport_arch tport_arch_phi3 = {
    .name = "phi3",
    .about = "Phi-3, Phi-3.5, Phi-4-mini",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    .hparams = hparams,
    .build = build,
};
