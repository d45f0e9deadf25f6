/* gemma (Gemma 1): llama's layout with the embedding scaled by
 * sqrt(n_embd), a head size of its own (key_length, 256 for the real
 * models), NeoX RoPE, Q scaled by 1/sqrt(head_dim) before the product,
 * a GeGLU feed-forward and the classifier always tied to token_embd.
 * (The converter stores norm weights as 1 + w, so RMSNorm is unchanged.)
 * Its files have no rope.dimension_count: RoPE turns the whole head of
 * key_length dimensions, not n_embd / n_head. */
#include <math.h>

#include "model/arch/arch.h"

static const tport_arch_tensor tensors[] = {
    ARCH_G("token_embd.weight", tok_embd, DIM_EMBD, DIM_VOCAB, 0),
    ARCH_A("attn_norm.weight", attn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_A("attn_q.weight", wq, DIM_EMBD, DIM_Q, 0),
    ARCH_A("attn_k.weight", wk, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_v.weight", wv, DIM_EMBD, DIM_KV, 0),
    ARCH_A("attn_output.weight", wo, DIM_Q, DIM_EMBD, 0),
    ARCH_F("ffn_norm.weight", ffn_norm, DIM_EMBD, DIM_1, 0),
    ARCH_F("ffn_gate.weight", w_gate, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_up.weight", w_up, DIM_EMBD, DIM_FF, 0),
    ARCH_F("ffn_down.weight", w_down, DIM_FF, DIM_EMBD, 0),
    ARCH_G("output_norm.weight", output_norm, DIM_EMBD, DIM_1, 0),
};

static tport_tensor *build(tport_blk *b) {
    tport_tensor *x = b->hidden_in ? b->hidden_in : tport_scale(b->ctx, tport_blk_embed(b), sqrtf((float)b->sh->n_embd));
    float q_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        tport_tensor *q, *k, *v;
        if (tport_blk_qkv(b, l, tport_blk_norm(b, x, l->attn_norm, NULL), &q, &k, &v) != TPORT_STATUS_OK)
            return NULL;
        tport_tensor *att = tport_blk_linear(b, l->wo, NULL,
                                             tport_blk_attention(b, il, tport_scale(b->ctx, q, q_scale), k, v, 1.0f));
        x = tport_add(b->ctx, att, x);
        x = tport_add(b->ctx, tport_blk_ffn_geglu(b, l, tport_blk_norm(b, x, l->ffn_norm, NULL)), x);
    }
    return tport_blk_output(b, x);
}

static tport_status hparams(const tport_model_file *mf, tport_model_shape *sh) {
    (void)sh;
    if (tport_model_file_find(mf, "output.weight"))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: gemma ties its classifier to token_embd, but the file "
                           "has output.weight", mf->path);
    return TPORT_STATUS_OK;
}

const tport_arch tport_arch_gemma = {
    .name = "gemma",
    .about = "Gemma 1 (2B, 7B)",
    .tensors = tensors,
    .n_tensors = sizeof tensors / sizeof tensors[0],
    .norm = NORM_RMS,
    .rope_mode = TPORT_ROPE_NEOX,
    /* Hugging Face's convert_hf_to_gguf.py writes key_length, not the
     * rotary count: readers must take the head size (gguf_meta.c) */
    .whole_head_rope_unwritten = true,
    .hparams = hparams,
    .build = build,
};
