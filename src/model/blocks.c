/* Shared transformer parts (see blocks.h).  The KV caches are f16 (the
 * default, as llama.cpp's) or f32 [head_dim, n_head_kv, n_ctx] per layer.
 * Attention is one flash_attn node reading both caches in place (with
 * ALiBi, mul_mat + soft_max_ext); each kv head serves n_head / n_head_kv
 * consecutive query heads (multi-query attention is n_head_kv = 1). */
#include <math.h>
#include <stdlib.h>

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

/* RoPE of layer il: none on a NoPE layer (smollm3, granite without
 * rope.scaling.finetuned); a sliding-window layer's own base and scale
 * (gemma2, gemma3); ROPE_EXT (ABI 1.3) only where frequency factors, YaRN
 * or an attention factor ask for it, so that plug-ins of older minors
 * still run the plain rope of every other model. */
tport_tensor *tport_blk_rope(tport_blk *b, int il, tport_tensor *t) {
    const tport_model_shape *sh = b->sh;
    if (sh->rope_mode < 0 || !t || (il >= 0 && sh->nope_every > 0 && (il + 1) % sh->nope_every == 0))
        return t;
    const bool swa = il >= 0 && tport_shape_layer_swa(sh, il);
    const float base = swa ? sh->rope_base_swa : sh->rope_base, scale = swa ? sh->rope_scale_swa : sh->rope_scale;
    const tport_globals *w = &b->m->w;
    tport_tensor *ff = w->rope_freqs;
    /* LongRoPE (phi3): the long factors when the context, padded to a
     * multiple of 256 as llama.cpp pads it, exceeds the trained one */
    if (!ff && (w->rope_long || w->rope_short))
        ff = (b->n_ctx + 255) / 256 * 256 > sh->rope_n_ctx_orig ? w->rope_long : w->rope_short;
    if (!ff && sh->rope_ext_factor == 0.0f && sh->rope_attn_factor == 1.0f)
        return tport_rope(b->ctx, t, b->positions, sh->n_rot, sh->rope_mode, base, scale);
    tport_params_rope_ext p = {
        .n_dims = sh->n_rot, .mode = sh->rope_mode, .freq_base = base, .freq_scale = scale,
        .ext_factor = sh->rope_ext_factor, .attn_factor = sh->rope_attn_factor, .beta_fast = sh->rope_beta_fast,
        .beta_slow = sh->rope_beta_slow, .n_ctx_orig = sh->rope_n_ctx_orig,
    };
    return tport_rope_ext(b->ctx, t, b->positions, ff, &p);
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
        /* Q/K norms over the whole projection (OLMoE, OLMo 2), told by the
         * norm's length */
        if (l->attn_q_norm && tport_tensor_ne(l->attn_q_norm, 0) == hd * nh && hd * nh != hd)
            pq = tport_blk_norm(b, pq, l->attn_q_norm, NULL);
        if (l->attn_k_norm && tport_tensor_ne(l->attn_k_norm, 0) == hd * nkv && hd * nkv != hd)
            pk = tport_blk_norm(b, pk, l->attn_k_norm, NULL);
        *q = reshape3(b, pq, hd, nh, b->n);
        *k = reshape3(b, pk, hd, nkv, b->n);
        *v = reshape3(b, pv, hd, nkv, b->n);
        /* or per head (Qwen3, Gemma 3), before the rotation either way */
        if (l->attn_q_norm && tport_tensor_ne(l->attn_q_norm, 0) == hd)
            *q = tport_blk_norm(b, *q, l->attn_q_norm, NULL);
        if (l->attn_k_norm && tport_tensor_ne(l->attn_k_norm, 0) == hd)
            *k = tport_blk_norm(b, *k, l->attn_k_norm, NULL);
        if (sh->clamp_kqv > 0) {
            *q = tport_clamp(b->ctx, *q, -sh->clamp_kqv, sh->clamp_kqv);
            *k = tport_clamp(b->ctx, *k, -sh->clamp_kqv, sh->clamp_kqv);
            *v = tport_clamp(b->ctx, *v, -sh->clamp_kqv, sh->clamp_kqv);
        }
    }
    if (il < 0) /* a caller that does not say: the layer l is */
        il = (int)(l - b->m->layers);
    *q = tport_blk_rope(b, il, *q);
    *k = tport_blk_rope(b, il, *k);
    return *q && *k && *v ? TPORT_STATUS_OK : TPORT_STATUS_ERROR;
}

/* Copies src [hd, nkv, n] into n cells of the cache c from cell `at` on
 * (the rows of one cache position are `row` bytes apart); notes the store
 * when it moves with the position. */
static bool store(tport_blk *b, tport_tensor *c, tport_tensor *src, int64_t first, int64_t n, int32_t at,
                  int32_t cells, bool moves, int32_t seq) {
    const size_t f = tport_type_block_bytes(c->type), row = (size_t)(c->ne[0] * c->ne[1]) * f;
    const int64_t ne[3] = {c->ne[0], c->ne[1], n};
    const size_t nb[3] = {f, (size_t)c->ne[0] * f, row};
    tport_tensor *dst = tport_view(b->ctx, c, 3, ne, nb, (size_t)at * row);
    if (n != src->ne[2])
        src = tport_view(b->ctx, src, 3, ne, (const size_t[3]){src->nb[0], src->nb[1], src->nb[2]},
                         (size_t)first * src->nb[2]);
    if (!dst || !src || tport_graph_add(b->g, tport_cpy(b->ctx, src, dst)) != TPORT_STATUS_OK)
        return false;
    if (b->stores && moves) {
        if (b->n_stores + 1 > b->cap_stores) {
            tport_error(TPORT_STATUS_ERROR, "attention: more cache stores than layers");
            return false;
        }
        b->stores[b->n_stores++] = (tport_blk_store){dst, row, cells, seq};
    }
    return true;
}

/* Attention of sequence si (q, k, v its rows) over its own cache of layer il. */
static tport_tensor *attend(tport_blk *b, int il, int32_t si, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                            float kq_scale) {
    const tport_model_shape *sh = b->sh;
    const tport_blk_seq *sq = &b->seqs[si];
    const tport_kv_layer *kv = &sq->kv[il];
    tport_ctx *ctx = b->ctx;
    int64_t hd = sh->head_dim, nkv = sh->n_head_kv;
    tport_type_id type = kv->type;
    size_t f = tport_type_block_bytes(type), row = (size_t)(hd * nkv) * f; /* one cache position */
    int32_t cells = kv->n_cells > 0 ? kv->n_cells : b->n_ctx, n = sq->n;
    bool swa = tport_shape_layer_swa(sh, il);
    tport_tensor *mask = swa ? sq->mask_swa : sq->mask;
    int32_t n_kv = swa ? sq->n_kv_swa : sq->n_kv;

    /* deepseek2 keeps no V cache: V is read from K's rows (the caller
     * passes v == k and keeps what the first values of V give) */
    const bool v_in_k = tport_shape_v_in_k(sh);
    tport_tensor *kc = tport_new_tensor_3d(ctx, type, hd, nkv, cells);
    tport_tensor *vc = v_in_k ? kc : tport_new_tensor_3d(ctx, type, hd, nkv, cells);
    if (!kc || !vc || !q || !k || !v || !mask)
        return NULL;
    /* the cache lives in host memory or, as a resident leaf, on a device */
    tport_tensor_set_data(kc, kv->k);
    kc->res = kv->k_res;
    if (!v_in_k) {
        tport_tensor_set_data(vc, kv->v);
        vc->res = kv->v_res;
    }

    /* The copies join the graph before anything reads the cache, so the
     * topological order runs them first.  Position p goes to cell p % cells
     * (p itself unless the layer keeps a ring); a batch reaching past the
     * ring's end writes the rest from cell 0. */
    int32_t at = sq->pos % cells, first = cells - at < n ? cells - at : n;
    if (!store(b, kc, k, 0, first, at, cells, true, si) ||
        (!v_in_k && !store(b, vc, v, 0, first, at, cells, true, si)))
        return NULL;
    if (first < n && (!store(b, kc, k, first, n - first, 0, cells, false, si) ||
                      (!v_in_k && !store(b, vc, v, first, n - first, 0, cells, false, si))))
        return NULL;

    /* K (and V, for flash_attn) as [hd, n_kv, nkv] views of the caches */
    const int64_t k_ne[3] = {hd, n_kv, nkv};
    const size_t k_nb[3] = {f, row, (size_t)hd * f};
    tport_tensor *keys = tport_view(ctx, kc, 3, k_ne, k_nb, 0);
    const int64_t o_ne[2] = {hd * sh->n_head, n};
    /* attention sinks (gpt-oss): each head's logit joins its softmax
     * denominator, which only FLASH_ATTN_EXT expresses */
    tport_tensor *sinks = b->m->layers[il].attn_sinks;
    if (sh->max_alibi_bias <= 0 && b->fused_attn) {
        /* one node reads both caches in place: no transposed copy of V;
         * sinks (gpt-oss) and soft-capped scores (gemma2) through
         * FLASH_ATTN_EXT, which caps the scaled score before the mask as
         * the unfused ops below do (a plug-in without ABI 1.3 declines it:
         * it runs on the CPU) */
        tport_tensor *values = tport_view(ctx, vc, 3, k_ne, k_nb, 0);
        tport_tensor *o = sinks || sh->attn_softcap > 0
                              ? tport_flash_attn_ext(ctx, q, keys, values, mask, sinks, kq_scale,
                                                     sh->attn_softcap > 0 ? sh->attn_softcap : 0.0f)
                              : tport_flash_attn(ctx, q, keys, values, mask, kq_scale); /* [hd, n_head, n] */
        return tport_reshape(ctx, o, 2, o_ne);
    }
    if (sinks) {
        tport_error(TPORT_STATUS_UNSUPPORTED, "attention sinks need the fused attention (flash_attn_ext), "
                    "which a forced backend other than the CPU does not get");
        return NULL;
    }
    /* ALiBi or a forced backend: the unfused path, V
     * transposed as [n_kv, hd, nkv] (made contiguous) */
    const int64_t vt_ne[3] = {n_kv, hd, nkv};
    const size_t vt_nb[3] = {row, f, (size_t)hd * f};
    tport_tensor *values_t = tport_cont(ctx, tport_view(ctx, vc, 3, vt_ne, vt_nb, 0));

    tport_tensor *qp = tport_permute(ctx, q, 0, 2, 1, 3);           /* [hd, n, n_head]    */
    tport_tensor *kq = tport_mul_mat(ctx, keys, qp);                 /* [n_kv, n, n_head]  */
    if (sh->attn_softcap > 0) {
        /* llama.cpp: scale by 1/cap, tanh, scale by cap, then the softmax
         * with the mask (its kq_scale, 1 for gemma, folded in first) */
        kq = tport_scale(ctx, kq, kq_scale / sh->attn_softcap);
        kq = tport_scale(ctx, tport_tanh(ctx, kq), sh->attn_softcap);
        kq_scale = 1.0f;
    }
    kq = sh->max_alibi_bias > 0 ? tport_soft_max_ext(ctx, kq, mask, kq_scale, sh->max_alibi_bias)
                                : tport_soft_max(ctx, kq, mask, kq_scale);
    tport_tensor *kqv = tport_mul_mat(ctx, values_t, kq);            /* [hd, n, n_head]    */
    tport_tensor *o = tport_cont(ctx, tport_permute(ctx, kqv, 0, 2, 1, 3)); /* [hd, n_head, n] */
    return tport_reshape(ctx, o, 2, o_ne);
}

/* Sequence si's rows of t [ne0, ne1, n]: a view (contiguous when t is). */
static tport_tensor *seq_rows(tport_blk *b, tport_tensor *t, int32_t si) {
    if (!t)
        return NULL;
    const int64_t ne[3] = {t->ne[0], t->ne[1], b->seqs[si].n};
    const size_t nb[3] = {t->nb[0], t->nb[1], t->nb[2]};
    return tport_view(b->ctx, t, 3, ne, nb, (size_t)b->seqs[si].first * t->nb[2]);
}

/* The sequences attended one by one and joined in row order.  Every
 * sequence's cache stores come first (attend puts them in the graph),
 * then every sequence's attention, then the joins level by level, as a
 * tree of concatenations (each row is copied log2(n_seqs) times, not
 * n_seqs): the nodes of one kind touch nothing of each other's, so the
 * CPU backend runs each kind without barriers between them (cpu_graph.c's
 * joins), where a sequence at a time and the tree depth first put a
 * barrier before nearly every flash_attn and concat (a step of 8
 * one-token sequences of stories110M: 206 barriers, not 314; one
 * sequence alone: 145). */
static tport_tensor *attend_seqs(tport_blk *b, int il, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                                 float kq_scale) {
    int32_t n = b->n_seqs;
    tport_tensor **o = malloc((size_t)n * sizeof *o);
    if (!o) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "attention: out of memory");
        return NULL;
    }
    bool ok = true;
    for (int32_t i = 0; i < n && ok; i++)
        ok = (o[i] = attend(b, il, i, seq_rows(b, q, i), seq_rows(b, k, i), seq_rows(b, v, i), kq_scale)) != NULL;
    for (int32_t i = 0; i < n && ok; i++)
        ok = tport_graph_expand(b->g, o[i]) == TPORT_STATUS_OK;
    /* level by level: pairs joined, an odd last one carried up */
    while (n > 1 && ok) {
        int32_t m = 0;
        for (int32_t i = 0; i + 1 < n && ok; i += 2)
            ok = (o[m++] = tport_concat(b->ctx, o[i], o[i + 1], 1)) != NULL &&
                 tport_graph_expand(b->g, o[m - 1]) == TPORT_STATUS_OK;
        if (n % 2)
            o[m++] = o[n - 1];
        n = m;
    }
    tport_tensor *out = ok ? o[0] : NULL;
    free(o);
    return out;
}

tport_tensor *tport_blk_attention(tport_blk *b, int il, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                                  float kq_scale) {
    if (b->n_seqs == 1) /* the whole batch: no views */
        return attend(b, il, 0, q, k, v, kq_scale);
    return attend_seqs(b, il, q, k, v, kq_scale);
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
    const tport_globals *w = &b->m->w;
    if (b->hidden_out && b->hidden_normed && x && w->output_norm) /* bert has none: its last layer ends in a norm */
        x = tport_blk_norm(b, x, w->output_norm, w->output_norm_b);
    if (b->hidden_out)
        return b->hidden_out_last && x ? tport_cont(b->ctx, last_row(b, x)) : x;
    x = tport_blk_norm(b, x, w->output_norm, w->output_norm_b);
    if (b->n_seqs > 1) /* each sequence's last row (all rows when each is one) */
        x = b->out_rows && x ? tport_get_rows(b->ctx, x, b->out_rows) : x;
    else if (!b->logits_all)
        x = last_row(b, x);
    x = tport_blk_linear(b, w->output, w->output_b, x);
    if (b->sh->logit_softcap > 0 && x)
        x = tport_scale(b->ctx, tport_tanh(b->ctx, tport_scale(b->ctx, x, 1.0f / b->sh->logit_softcap)),
                        b->sh->logit_softcap);
    return x;
}

tport_tensor *tport_blk_decoder(tport_blk *b, bool renormalise_experts) {
    tport_tensor *x = tport_blk_embed(b);
    float kq_scale = 1.0f / sqrtf((float)b->sh->head_dim);
    for (int32_t il = b->layer_begin; il < b->layer_end && x; il++) {
        const tport_layer *l = &b->m->layers[il];
        x = tport_add(b->ctx, x, tport_blk_self_attention(b, il, tport_blk_norm(b, x, l->attn_norm, NULL), kq_scale));
        x = tport_add(b->ctx, x,
                      tport_blk_ffn_swiglu_or_moe(b, l, tport_blk_norm(b, x, l->ffn_norm, NULL), renormalise_experts));
    }
    return tport_blk_output(b, x);
}
