/* The llama forward pass as a tensorport graph, rebuilt for every batch:
 *
 *   x = token_embd[ids]
 *   per layer:  h = rms_norm(x) * attn_norm
 *               q, k, v = Wq h, Wk h, Wv h;  q, k = rope(q), rope(k)
 *               k, v -> the KV cache at positions pos..pos+n-1
 *               x += Wo softmax(K^T q / sqrt(head_dim) + causal mask) V
 *               h = rms_norm(x) * ffn_norm
 *               x += W_down (silu(W_gate h) * W_up h)
 *   logits = output (rms_norm(x_last) * output_norm)
 *
 * The caches are f16 (default, as llama.cpp's) or f32 [head_dim, n_head_kv,
 * n_ctx] per layer.  Attention is one flash_attn node that reads them in
 * place; with grouped-query attention each kv head serves n_head /
 * n_head_kv consecutive query heads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tensor.h"
#include "model/model.h"

typedef struct builder {
    tport_ctx *ctx;
    tport_graph *g;
    const tport_llama_shape *sh;
    tport_tensor *positions, *mask;
    int32_t n, pos, n_kv, n_ctx;
    tport_type_id kv_type;
} builder;

static tport_tensor *norm(builder *b, tport_tensor *x, tport_tensor *w) {
    return tport_mul(b->ctx, tport_rms_norm(b->ctx, x, b->sh->norm_eps), w);
}

static tport_tensor *reshape3(builder *b, tport_tensor *t, int64_t ne0, int64_t ne1, int64_t ne2) {
    const int64_t ne[3] = {ne0, ne1, ne2};
    return tport_reshape(b->ctx, t, 3, ne);
}

static tport_tensor *rope(builder *b, tport_tensor *t) {
    const tport_llama_shape *sh = b->sh;
    return tport_rope(b->ctx, t, b->positions, sh->n_rot, sh->rope_mode, sh->rope_base, sh->rope_scale);
}

/* Self-attention of one layer; writes k and v into the caches first, then
 * one flash_attn node reads both caches in place. */
static tport_tensor *attention(builder *b, const tport_llama_layer *l, tport_tensor *h,
                               void *k_cache, void *v_cache) {
    const tport_llama_shape *sh = b->sh;
    tport_ctx *ctx = b->ctx;
    int64_t hd = sh->head_dim, nkv = sh->n_head_kv;
    size_t f = tport_type_block_bytes(b->kv_type), row = (size_t)(hd * nkv) * f; /* one cache position */

    tport_tensor *q = rope(b, reshape3(b, tport_mul_mat(ctx, l->wq, h), hd, sh->n_head, b->n));
    tport_tensor *k = rope(b, reshape3(b, tport_mul_mat(ctx, l->wk, h), hd, nkv, b->n));
    tport_tensor *v = reshape3(b, tport_mul_mat(ctx, l->wv, h), hd, nkv, b->n);

    tport_tensor *kc = tport_new_tensor_3d(ctx, b->kv_type, hd, nkv, b->n_ctx);
    tport_tensor *vc = tport_new_tensor_3d(ctx, b->kv_type, hd, nkv, b->n_ctx);
    if (!kc || !vc)
        return NULL;
    tport_tensor_set_data(kc, k_cache);
    tport_tensor_set_data(vc, v_cache);

    /* The copies join the graph before anything reads the cache, so the
     * topological order runs them first. */
    const int64_t new_ne[3] = {hd, nkv, b->n};
    const size_t new_nb[3] = {f, (size_t)hd * f, row};
    tport_tensor *k_dst = tport_view(ctx, kc, 3, new_ne, new_nb, (size_t)b->pos * row);
    tport_tensor *v_dst = tport_view(ctx, vc, 3, new_ne, new_nb, (size_t)b->pos * row);
    if (tport_graph_add(b->g, tport_cpy(ctx, k, k_dst)) != TPORT_STATUS_OK ||
        tport_graph_add(b->g, tport_cpy(ctx, v, v_dst)) != TPORT_STATUS_OK)
        return NULL;

    /* K and V as [hd, n_kv, nkv] views of the caches */
    const int64_t kv_ne[3] = {hd, b->n_kv, nkv};
    const size_t kv_nb[3] = {f, row, (size_t)hd * f};
    tport_tensor *keys = tport_view(ctx, kc, 3, kv_ne, kv_nb, 0);
    tport_tensor *values = tport_view(ctx, vc, 3, kv_ne, kv_nb, 0);
    tport_tensor *o = tport_flash_attn(ctx, q, keys, values, b->mask, 1.0f / sqrtf((float)hd)); /* [hd, n_head, n] */
    const int64_t o_ne[2] = {sh->n_embd, b->n};
    return tport_mul_mat(ctx, l->wo, tport_reshape(ctx, o, 2, o_ne));
}

static tport_tensor *feed_forward(builder *b, const tport_llama_layer *l, tport_tensor *h) {
    tport_ctx *ctx = b->ctx;
    tport_tensor *gate = tport_mul_mat(ctx, l->w_gate, h);
    tport_tensor *up = tport_mul_mat(ctx, l->w_up, h);
    return tport_mul_mat(ctx, l->w_down, tport_swiglu(ctx, gate, up));
}

static void tally_nodes(const tport_graph *g, tport_node_tally *t) {
    t->n_rows = 0;
    for (int i = 0; i < tport_graph_n_nodes(g); i++) {
        const char *backend = tport_graph_node_backend(g, i);
        const char *op = tport_op_name(tport_graph_node(g, i)->op);
        if (!backend)
            continue;
        int r = 0;
        while (r < t->n_rows && (strcmp(t->rows[r].backend, backend) || strcmp(t->rows[r].op, op)))
            r++;
        if (r == t->n_rows) {
            if (r == TPORT_TALLY_ROWS)
                continue;
            t->rows[r].backend = backend;
            t->rows[r].op = op;
            t->rows[r].count = 0;
            t->n_rows++;
        }
        t->rows[r].count++;
    }
}

tport_status tport_llama_eval_batch(const tport_llama_eval *e) {
    const tport_model *m = e->m;
    const tport_llama_shape *sh = &m->sh;
    int32_t n = e->n, n_kv = e->pos + e->n;
    if (n <= 0 || e->pos < 0 || n_kv > e->n_ctx)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: %d tokens at position %d exceed "
                           "the context of %d", (int)n, (int)e->pos, (int)e->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (e->ids[i] < 0 || e->ids[i] >= sh->n_vocab)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: token id %d outside [0, %d)",
                               (int)e->ids[i], (int)sh->n_vocab);

    /* inputs: ids, positions, the causal mask [n_kv, n] */
    size_t n_in = 2 * (size_t)n + (size_t)n_kv * (size_t)n;
    int32_t *in = malloc(n_in * sizeof *in);
    tport_ctx *ctx = tport_ctx_new(0);
    tport_graph *g = ctx ? tport_graph_new(ctx) : NULL;
    if (!in || !g) {
        free(in);
        tport_graph_free(g);
        tport_ctx_free(ctx);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "eval: out of memory");
    }
    int32_t *ids = in, *positions = in + n;
    float *mask = (float *)(in + 2 * (size_t)n);
    for (int32_t i = 0; i < n; i++) {
        ids[i] = e->ids[i];
        positions[i] = e->pos + i;
        for (int32_t j = 0; j < n_kv; j++)
            mask[(size_t)i * (size_t)n_kv + (size_t)j] = j <= e->pos + i ? 0.0f : -INFINITY;
    }

    builder b = {.ctx = ctx, .g = g, .sh = sh, .n = n, .pos = e->pos, .n_kv = n_kv, .n_ctx = e->n_ctx,
                 .kv_type = e->kv_type};
    tport_tensor *t_ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
    b.positions = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
    b.mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, n_kv, n);
    tport_tensor *logits = NULL;
    if (t_ids && b.positions && b.mask) {
        tport_tensor_set_data(t_ids, ids);
        tport_tensor_set_data(b.positions, positions);
        tport_tensor_set_data(b.mask, mask);
        tport_tensor *x = tport_get_rows(ctx, m->tok_embd, t_ids);
        for (int32_t il = 0; il < sh->n_layer && x; il++) {
            const tport_llama_layer *l = &m->layers[il];
            tport_tensor *att = attention(&b, l, norm(&b, x, l->attn_norm), e->k_cache[il], e->v_cache[il]);
            x = tport_add(ctx, x, att);
            x = tport_add(ctx, x, feed_forward(&b, l, norm(&b, x, l->ffn_norm)));
        }
        x = norm(&b, x, m->output_norm);
        const int64_t last_ne[1] = {sh->n_embd};
        tport_tensor *last = x ? tport_view(ctx, x, 1, last_ne, NULL,
                                            (size_t)(n - 1) * (size_t)sh->n_embd * sizeof(float)) : NULL;
        logits = tport_mul_mat(ctx, m->output, last);
    }
    tport_status st = TPORT_STATUS_OK;
    if (!logits) {
        st = tport_error(TPORT_STATUS_ERROR, "building the llama graph: %s", tport_last_error());
    } else if ((st = tport_graph_add(g, logits)) == TPORT_STATUS_OK) {
        tport_compute_params cp = {.n_threads = e->n_threads, .backend = e->backend};
        st = tport_graph_compute(g, &cp);
        if (st == TPORT_STATUS_OK && e->tally)
            tally_nodes(g, e->tally);
        const float *out = st == TPORT_STATUS_OK ? tport_tensor_data(logits) : NULL;
        if (out)
            memcpy(e->logits, out, (size_t)sh->n_vocab * sizeof(float));
        else if (st == TPORT_STATUS_OK)
            st = tport_error(TPORT_STATUS_ERROR, "eval: the graph produced no logits");
    }
    tport_graph_free(g);
    tport_ctx_free(ctx);
    free(in);
    return st;
}
