/* Shared transformer parts (see blocks.h).  The KV caches are f16 (the
 * default, as llama.cpp's) or f32 [head_dim, n_head_kv, n_ctx] per layer.
 * Attention is one flash_attn node reading both caches in place (with
 * ALiBi, mul_mat + soft_max_ext); each kv head serves n_head / n_head_kv
 * consecutive query heads (multi-query attention is n_head_kv = 1). */
#include <math.h>

#include "core/error.h"
#include "core/tensor.h"
#include "model/arch/arch.h"
#include "model/blocks.h"

tport_tensor *tport_blk_embed(tport_blk *b) {
    if (b->hidden_in)
        return b->hidden_in;
    const tport_globals *w = &b->m->w;
    tport_tensor *x = b->rows ? tport_get_rows(b->ctx, b->rows, b->row_ids)
                              : tport_get_rows(b->ctx, w->tok_embd, b->ids);
    if (w->pos_embd)
        x = tport_add(b->ctx, x, tport_get_rows(b->ctx, w->pos_embd, b->positions));
    return x;
}

tport_tensor *tport_blk_norm(tport_blk *b, tport_tensor *x, tport_tensor *w, tport_tensor *bias) {
    tport_tensor *y = b->m->arch->norm == NORM_RMS ? tport_rms_norm(b->ctx, x, b->sh->norm_eps)
                                                   : tport_norm(b->ctx, x, b->sh->norm_eps);
    if (w)
        y = tport_mul(b->ctx, y, w);
    if (bias)
        y = tport_add(b->ctx, y, bias);
    return y;
}

tport_tensor *tport_blk_linear(tport_blk *b, tport_tensor *w, tport_tensor *bias, tport_tensor *x) {
    tport_tensor *y = tport_mul_mat(b->ctx, w, x);
    return bias ? tport_add(b->ctx, y, bias) : y;
}

static tport_tensor *reshape3(tport_blk *b, tport_tensor *t, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    return tport_reshape(b->ctx, t, 3, ne);
}

/* RoPE of layer il (-1: a caller that knows no layer): none on a NoPE
 * layer; ROPE_EXT (ABI 1.3) only where frequency factors, YaRN or an
 * attention factor ask for it, so that plug-ins of older minors still run
 * the plain rope of every other model. */
static tport_tensor *rope(tport_blk *b, int il, tport_tensor *t) {
    const tport_model_shape *sh = b->sh;
    if (sh->rope_mode < 0 || (il >= 0 && sh->nope_every > 0 && (il + 1) % sh->nope_every == 0))
        return t;
    const tport_globals *w = &b->m->w;
    tport_tensor *ff = w->rope_freqs;
    /* LongRoPE (phi3): the long factors when the context, padded to a
     * multiple of 256 as llama.cpp pads it, exceeds the trained one */
    if (!ff && (w->rope_long || w->rope_short))
        ff = (b->n_ctx + 255) / 256 * 256 > sh->rope_n_ctx_orig ? w->rope_long : w->rope_short;
    if (!ff && sh->rope_ext_factor == 0.0f && sh->rope_attn_factor == 1.0f)
        return tport_rope(b->ctx, t, b->positions, sh->n_rot, sh->rope_mode, sh->rope_base, sh->rope_scale);
    tport_params_rope_ext p = {
        .n_dims = sh->n_rot, .mode = sh->rope_mode, .freq_base = sh->rope_base, .freq_scale = sh->rope_scale,
        .ext_factor = sh->rope_ext_factor, .attn_factor = sh->rope_attn_factor, .beta_fast = sh->rope_beta_fast,
        .beta_slow = sh->rope_beta_slow, .n_ctx_orig = sh->rope_n_ctx_orig,
    };
    return tport_rope_ext(b->ctx, t, b->positions, ff, &p);
}

/* x [hd, heads, n] normed per head, or over all heads (qk_norm_whole),
 * times w */
static tport_tensor *qk_norm(tport_blk *b, tport_tensor *x, tport_tensor *w) {
    if (!w || !x)
        return x;
    if (!b->sh->qk_norm_whole)
        return tport_blk_norm(b, x, w, NULL);
    const int64_t flat[2] = {tport_tensor_ne(x, 0) * tport_tensor_ne(x, 1), tport_tensor_ne(x, 2)};
    const int64_t heads[3] = {tport_tensor_ne(x, 0), tport_tensor_ne(x, 1), tport_tensor_ne(x, 2)};
    tport_tensor *y = tport_blk_norm(b, tport_reshape(b->ctx, x, 2, flat), w, NULL);
    return tport_reshape(b->ctx, y, 3, heads);
}

/* Heads [head_dim, n_heads, n] at float offset `first` of each row of the
 * fused [n_qkv, n] projection, made contiguous. */
static tport_tensor *split_heads(tport_blk *b, tport_tensor *qkv, int64_t first, int64_t n_heads) {
    const size_t f = sizeof(float);
    const int64_t hd = b->sh->head_dim;
    const int64_t ne[3] = {hd, n_heads, b->n};
    const size_t nb[3] = {f, (size_t)hd * f, tport_tensor_nb(qkv, 1)};
    return tport_cont(b->ctx, tport_view(b->ctx, qkv, 3, ne, nb, (size_t)first * f));
}

tport_status tport_blk_qkv(tport_blk *b, const tport_layer *l, tport_tensor *h, tport_tensor **q,
                           tport_tensor **k, tport_tensor **v) {
    return tport_blk_qkv_layer(b, -1, l, h, q, k, v);
}

tport_status tport_blk_qkv_layer(tport_blk *b, int il, const tport_layer *l, tport_tensor *h, tport_tensor **q,
                                 tport_tensor **k, tport_tensor **v) {
    const tport_model_shape *sh = b->sh;
    const int64_t hd = sh->head_dim, nh = sh->n_head, nkv = sh->n_head_kv;
    if (l->wqkv) {
        tport_tensor *qkv = tport_blk_linear(b, l->wqkv, l->bqkv, h);
        if (sh->clamp_kqv > 0)
            qkv = tport_clamp(b->ctx, qkv, -sh->clamp_kqv, sh->clamp_kqv);
        *q = split_heads(b, qkv, 0, nh);
        *k = split_heads(b, qkv, hd * nh, nkv);
        *v = split_heads(b, qkv, hd * (nh + nkv), nkv);
    } else {
        tport_tensor *pq = tport_blk_linear(b, l->wq, l->bq, h);
        tport_tensor *pk = tport_blk_linear(b, l->wk, l->bk, h);
        tport_tensor *pv = tport_blk_linear(b, l->wv, l->bv, h);
        /* The three read the same activations.  Side by side in the graph
         * (else each would come just before its first reader), a backend
         * can run them together: the CPU backend packs h once and waits
         * for its threads once. */
        if (tport_graph_expand(b->g, pq) || tport_graph_expand(b->g, pk) || tport_graph_expand(b->g, pv))
            return TPORT_STATUS_ERROR;
        *q = reshape3(b, pq, hd, nh, b->n);
        *k = reshape3(b, pk, hd, nkv, b->n);
        *v = reshape3(b, pv, hd, nkv, b->n);
        if (sh->clamp_kqv > 0) {
            *q = tport_clamp(b->ctx, *q, -sh->clamp_kqv, sh->clamp_kqv);
            *k = tport_clamp(b->ctx, *k, -sh->clamp_kqv, sh->clamp_kqv);
            *v = tport_clamp(b->ctx, *v, -sh->clamp_kqv, sh->clamp_kqv);
        }
    }
    *q = rope(b, il, qk_norm(b, *q, l->attn_q_norm));
    *k = rope(b, il, qk_norm(b, *k, l->attn_k_norm));
    return *q && *k && *v ? TPORT_STATUS_OK : TPORT_STATUS_ERROR;
}

tport_tensor *tport_blk_attention(tport_blk *b, int il, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                                  float kq_scale) {
    const tport_model_shape *sh = b->sh;
    tport_ctx *ctx = b->ctx;
    int64_t hd = sh->head_dim, nkv = sh->n_head_kv;
    tport_type_id type = b->kv[il].type;
    size_t f = tport_type_block_bytes(type), row = (size_t)(hd * nkv) * f; /* one cache position */

    tport_tensor *kc = tport_new_tensor_3d(ctx, type, hd, nkv, b->n_ctx);
    tport_tensor *vc = tport_new_tensor_3d(ctx, type, hd, nkv, b->n_ctx);
    if (!kc || !vc || !q || !k || !v)
        return NULL;
    /* the cache lives in host memory or, as a resident leaf, on a device */
    tport_tensor_set_data(kc, b->kv[il].k);
    tport_tensor_set_data(vc, b->kv[il].v);
    kc->res = b->kv[il].k_res;
    vc->res = b->kv[il].v_res;

    /* The copies join the graph before anything reads the cache, so the
     * topological order runs them first. */
    const int64_t new_ne[3] = {hd, nkv, b->n};
    const size_t new_nb[3] = {f, (size_t)hd * f, row};
    tport_tensor *k_dst = tport_view(ctx, kc, 3, new_ne, new_nb, (size_t)b->pos * row);
    tport_tensor *v_dst = tport_view(ctx, vc, 3, new_ne, new_nb, (size_t)b->pos * row);
    if (tport_graph_add(b->g, tport_cpy(ctx, k, k_dst)) != TPORT_STATUS_OK ||
        tport_graph_add(b->g, tport_cpy(ctx, v, v_dst)) != TPORT_STATUS_OK)
        return NULL;
    if (b->stores) {
        if (b->n_stores + 2 > b->cap_stores) {
            tport_error(TPORT_STATUS_ERROR, "attention: more cache stores than layers");
            return NULL;
        }
        b->stores[b->n_stores++] = (tport_blk_store){k_dst, row};
        b->stores[b->n_stores++] = (tport_blk_store){v_dst, row};
    }

    /* K (and V, for flash_attn) as [hd, n_kv, nkv] views of the caches */
    const int64_t k_ne[3] = {hd, b->n_kv, nkv};
    const size_t k_nb[3] = {f, row, (size_t)hd * f};
    tport_tensor *keys = tport_view(ctx, kc, 3, k_ne, k_nb, 0);
    const int64_t o_ne[2] = {hd * sh->n_head, b->n};
    if (sh->max_alibi_bias <= 0 && b->fused_attn) {
        /* one node reads both caches in place: no transposed copy of V */
        tport_tensor *values = tport_view(ctx, vc, 3, k_ne, k_nb, 0);
        tport_tensor *o = tport_flash_attn(ctx, q, keys, values, b->mask, kq_scale); /* [hd, n_head, n] */
        return tport_reshape(ctx, o, 2, o_ne);
    }
    /* ALiBi, or a forced backend: the unfused path, V transposed as [n_kv,
     * hd, nkv] (made contiguous) */
    const int64_t vt_ne[3] = {b->n_kv, hd, nkv};
    const size_t vt_nb[3] = {row, f, (size_t)hd * f};
    tport_tensor *values_t = tport_cont(ctx, tport_view(ctx, vc, 3, vt_ne, vt_nb, 0));

    tport_tensor *qp = tport_permute(ctx, q, 0, 2, 1, 3);           /* [hd, n, n_head]    */
    tport_tensor *kq = tport_mul_mat(ctx, keys, qp);                 /* [n_kv, n, n_head]  */
    kq = sh->max_alibi_bias > 0 ? tport_soft_max_ext(ctx, kq, b->mask, kq_scale, sh->max_alibi_bias)
                                : tport_soft_max(ctx, kq, b->mask, kq_scale);
    tport_tensor *kqv = tport_mul_mat(ctx, values_t, kq);            /* [hd, n, n_head]    */
    tport_tensor *o = tport_cont(ctx, tport_permute(ctx, kqv, 0, 2, 1, 3)); /* [hd, n_head, n] */
    return tport_reshape(ctx, o, 2, o_ne);
}

tport_tensor *tport_blk_self_attention(tport_blk *b, int il, tport_tensor *h, float kq_scale) {
    const tport_layer *l = &b->m->layers[il];
    tport_tensor *q, *k, *v;
    if (tport_blk_qkv_layer(b, il, l, h, &q, &k, &v) != TPORT_STATUS_OK)
        return NULL;
    return tport_blk_linear(b, l->wo, l->bo, tport_blk_attention(b, il, q, k, v, kq_scale));
}

tport_tensor *tport_blk_ffn_swiglu(tport_blk *b, const tport_layer *l, tport_tensor *h) {
    tport_ctx *ctx = b->ctx;
    tport_tensor *gate = tport_mul_mat(ctx, l->w_gate, h);
    tport_tensor *up = tport_mul_mat(ctx, l->w_up, h);
    return tport_mul_mat(ctx, l->w_down, tport_swiglu(ctx, gate, up));
}

tport_tensor *tport_blk_ffn_geglu(tport_blk *b, const tport_layer *l, tport_tensor *h) {
    tport_ctx *ctx = b->ctx;
    tport_tensor *gate = tport_gelu_f16(ctx, tport_mul_mat(ctx, l->w_gate, h));
    tport_tensor *up = tport_mul_mat(ctx, l->w_up, h);
    return tport_mul_mat(ctx, l->w_down, tport_mul(ctx, gate, up));
}

tport_tensor *tport_blk_ffn_gelu(tport_blk *b, const tport_layer *l, tport_tensor *h) {
    tport_tensor *up = tport_gelu_f16(b->ctx, tport_blk_linear(b, l->w_up, l->b_up, h));
    return tport_blk_linear(b, l->w_down, l->b_down, up);
}

static tport_tensor *last_row(tport_blk *b, tport_tensor *x) {
    const int64_t last_ne[1] = {b->sh->n_embd};
    return x ? tport_view(b->ctx, x, 1, last_ne, NULL, (size_t)(b->n - 1) * (size_t)b->sh->n_embd * sizeof(float))
             : NULL;
}

tport_tensor *tport_blk_output(tport_blk *b, tport_tensor *x) {
    if (b->hidden_out)
        return b->hidden_out_last && x ? tport_cont(b->ctx, last_row(b, x)) : x;
    const tport_globals *w = &b->m->w;
    x = tport_blk_norm(b, x, w->output_norm, w->output_norm_b);
    return tport_blk_linear(b, w->output, w->output_b, last_row(b, x));
}
