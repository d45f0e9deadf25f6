/* What Gemma 2 and Gemma 3 share (gemma2.c, gemma3.c): the layer with its
 * post-norms, the Q scale and the sliding-window pattern key. */
#include <math.h>
#include <stdio.h>

#include "model/arch/arch.h"

tport_status tport_arch_swa_period(const tport_model_file *mf, int32_t default_period, int32_t *out) {
    char key[96];
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", mf->arch);
    const tport_kv *kv = tport_model_file_kv(mf, key);
    *out = default_period;
    if (!kv)
        return TPORT_STATUS_OK;
    if ((kv->type == TPORT_KV_U32 || kv->type == TPORT_KV_U16 || kv->type == TPORT_KV_U8) && kv->v.u < 4096) {
        *out = (int32_t)kv->v.u;
        return TPORT_STATUS_OK;
    }
    if ((kv->type == TPORT_KV_I32 || kv->type == TPORT_KV_I16 || kv->type == TPORT_KV_I8) && kv->v.i >= 0 &&
        kv->v.i < 4096) {
        *out = (int32_t)kv->v.i;
        return TPORT_STATUS_OK;
    }
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %s is not a layer count (a per-layer pattern is not "
                       "implemented)", mf->path, key);
}

float tport_arch_gemma_q_scale(const tport_model_shape *sh, int32_t layers_27b) {
    return sh->n_layer == layers_27b ? 1.0f / sqrtf((float)(sh->n_embd / sh->n_head))
                                     : 1.0f / sqrtf((float)sh->head_dim);
}

tport_tensor *tport_arch_gemma_layer(tport_blk *b, tport_tensor *x, int il, float q_scale) {
    const tport_layer *l = &b->m->layers[il];
    tport_tensor *q, *k, *v;
    if (tport_blk_qkv(b, l, tport_blk_norm(b, x, l->attn_norm, NULL), &q, &k, &v) != TPORT_STATUS_OK)
        return NULL;
    /* Q scaled before the product, the attention itself unscaled: the
     * soft-cap sees the scaled scores (llama.cpp) */
    tport_tensor *att = tport_blk_attention(b, il, tport_scale(b->ctx, q, q_scale), k, v, 1.0f);
    att = tport_blk_norm(b, tport_blk_linear(b, l->wo, NULL, att), l->attn_post_norm, NULL);
    x = tport_add(b->ctx, att, x);
    tport_tensor *ff = tport_blk_ffn_geglu(b, l, tport_blk_norm(b, x, l->ffn_norm, NULL));
    return tport_add(b->ctx, tport_blk_norm(b, ff, l->ffn_post_norm, NULL), x);
}
