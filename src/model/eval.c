/* One evaluation of a batch: the inputs (ids, positions, the causal mask),
 * the architecture's graph (src/model/arch/), compute, and the logits of
 * the last token (or, for a pipeline stage, the hidden state it passes on).
 * The graph is kept for the next batch of the same shape.  With ALiBi the
 * visible mask cells hold -|pos_k - pos_q| instead of 0, which soft_max_ext
 * scales by each head's slope (as llama.cpp fills its mask).
 *
 * The batch's rows of a token embedding kept in host memory are copied
 * here from the file (tport_model_file_copy) into an input of the graph,
 * which dequantizes them with get_rows: reading them through the mapping
 * kept up to 64 KiB of neighbouring rows resident per token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tensor.h"
#include "model/arch/arch.h"
#include "model/blocks.h"
#include "model/model.h"
#include "registry/registry.h"

/* Rows are matched by pointer: backend and op names are the backends' and
 * the op table's own strings (strcmp here was 0.15 % of generation). */
static void tally_nodes(const tport_graph *g, tport_node_tally *t) {
    t->n_rows = 0;
    for (int i = 0; i < tport_graph_n_nodes(g); i++) {
        const char *backend = tport_graph_node_backend(g, i);
        const char *op = tport_op_name(tport_graph_node(g, i)->op);
        if (!backend)
            continue;
        int r = 0;
        while (r < t->n_rows && (t->rows[r].backend != backend || t->rows[r].op != op))
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

struct tport_eval_cache {
    tport_ctx *ctx;
    tport_graph *g;
    int32_t *in; /* ids [n], positions [n], mask [n_kv, n], the sliding-window
                    mask [n_kv_swa, n], then 0..n-1 when rows are staged */
    tport_tensor *hidden_in, *out;
    uint8_t *rows;    /* the batch's token_embd rows, or NULL: get_rows reads token_embd */
    size_t row_bytes; /* of one of them */
    tport_blk_store *stores;
    int n_stores;
    /* what the graph was built for */
    const tport_model *m;
    const tport_kv_layer *kv;
    const char *backend;
    int32_t n, n_kv, n_ctx, layer_begin, layer_end;
    /* sliding-window layers: their cells and window (0: none in the
     * batch), cells read, and the batch's cells before a ring's end */
    int32_t swa_cells, n_swa, n_kv_swa, swa_first;
    bool hidden_out, hidden_out_last, hidden_normed, logits_all;
    int64_t n_built, n_reused;
};

/* What the sliding-window layers of e read: cells (0 when e runs none),
 * how many of them (n_kv_swa), and how many of the batch's cells come
 * before the ring's end (the rest wrap to cell 0). */
typedef struct swa_view {
    int32_t cells, n_kv, first;
} swa_view;

static tport_status swa_of(const tport_model_eval *e, swa_view *w) {
    const tport_model_shape *sh = &e->m->sh;
    *w = (swa_view){0};
    for (int32_t il = e->layer_begin; il < e->layer_end; il++) {
        if (!tport_shape_layer_swa(sh, il))
            continue;
        int32_t cells = e->kv[il].n_cells > 0 ? e->kv[il].n_cells : e->n_ctx;
        if (w->cells && cells != w->cells)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: sliding-window caches of %d and %d cells",
                               (int)w->cells, (int)cells);
        w->cells = cells;
    }
    if (!w->cells)
        return TPORT_STATUS_OK;
    /* a batch must not overwrite what its own first query still sees */
    if (w->cells < e->n_ctx && e->n > w->cells - sh->n_swa + 1)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: a batch of %d tokens does not fit a "
                           "sliding-window cache of %d cells for a window of %d", (int)e->n, (int)w->cells,
                           (int)sh->n_swa);
    int32_t filled = e->pos + e->n < w->cells ? e->pos + e->n : w->cells;
    w->n_kv = (filled + 31) / 32 * 32;
    if (w->n_kv > w->cells)
        w->n_kv = w->cells;
    int32_t at = e->pos % w->cells;
    w->first = w->cells - at < e->n ? w->cells - at : e->n;
    return TPORT_STATUS_OK;
}

tport_eval_cache *tport_eval_cache_new(void) {
    tport_eval_cache *c = calloc(1, sizeof *c);
    if (!c)
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    return c;
}

void tport_eval_cache_drop(tport_eval_cache *c) {
    if (!c)
        return;
    tport_graph_free(c->g);
    tport_ctx_free(c->ctx);
    free(c->in);
    free(c->rows);
    free(c->stores);
    int64_t built = c->n_built, reused = c->n_reused;
    *c = (tport_eval_cache){.n_built = built, .n_reused = reused};
}

void tport_eval_cache_free(tport_eval_cache *c) {
    tport_eval_cache_drop(c);
    free(c);
}

void tport_eval_cache_counts(const tport_eval_cache *c, int64_t *built, int64_t *reused) {
    *built = c ? c->n_built : 0;
    *reused = c ? c->n_reused : 0;
}

/* Whether c's graph is the one e needs (the backend compared by name: a
 * caller may pass equal strings from different places). */
static bool fits(const tport_eval_cache *c, const tport_model_eval *e, int32_t n_kv, const swa_view *w) {
    bool same_backend = !c->backend == !e->backend && (!c->backend || !strcmp(c->backend, e->backend));
    return c->m == e->m && c->kv == e->kv && same_backend && c->n == e->n && c->n_kv == n_kv &&
           c->swa_cells == w->cells && c->n_kv_swa == w->n_kv && c->swa_first == w->first &&
           c->n_ctx == e->n_ctx && c->layer_begin == e->layer_begin && c->layer_end == e->layer_end &&
           !c->hidden_in == !e->hidden_in && c->hidden_out == (e->hidden_out != NULL) &&
           c->hidden_out_last == e->hidden_out_last && c->hidden_normed == e->hidden_normed &&
           c->logits_all == e->logits_all;
}

/* The inputs of this call, and the cache stores moved to its position. */
static tport_status fill_inputs(tport_eval_cache *c, const tport_model_eval *e) {
    int32_t n = c->n, n_kv = c->n_kv, n_kv_swa = c->n_kv_swa, cells = c->swa_cells;
    int32_t *ids = c->in, *positions = c->in + n;
    float *mask = (float *)(c->in + 2 * (size_t)n);
    float *mask_swa = mask + (size_t)n_kv * (size_t)n;
    bool alibi = e->m->sh.max_alibi_bias > 0;
    bool non_causal = e->m->sh.non_causal; /* every filled cell is visible */
    int32_t last = e->pos + n - 1;
    for (int32_t i = 0; i < n; i++) {
        int32_t q = e->pos + i;
        ids[i] = e->ids ? e->ids[i] : 0;
        positions[i] = q;
        for (int32_t j = 0; j < n_kv; j++)
            mask[(size_t)i * (size_t)n_kv + (size_t)j] =
                j > (non_causal ? last : q) ? -INFINITY : alibi ? -(float)(q - j) : 0.0f;
        /* cell j of a ring holds the latest position p <= last with
         * p % cells == j (none yet when j > last); llama.cpp masks a key
         * when p_query - p_key >= n_swa */
        for (int32_t j = 0; j < n_kv_swa; j++) {
            int32_t p = j > last ? -1 : last - (last - j) % cells;
            mask_swa[(size_t)i * (size_t)n_kv_swa + (size_t)j] =
                p < 0 || p > q || q - p >= c->n_swa ? -INFINITY : alibi ? -(float)(q - p) : 0.0f;
        }
    }
    if (c->hidden_in)
        tport_tensor_set_data(c->hidden_in, (void *)e->hidden_in);
    tport_status st = TPORT_STATUS_OK;
    const tport_tensor *te = e->m->w.tok_embd;
    for (int32_t i = 0; c->rows && i < n && !st; i++)
        st = tport_model_file_copy(e->m->file, (const uint8_t *)te->data + (size_t)ids[i] * te->nb[1],
                                   c->rows + (size_t)i * c->row_bytes, c->row_bytes);
    for (int i = 0; i < c->n_stores && !st; i++)
        st = tport_view_move(c->stores[i].dst, (size_t)(e->pos % c->stores[i].cells) * c->stores[i].row);
    return st;
}

/* Whether the host stages the batch's rows of token_embd: when get_rows
 * would read them from host memory (a device keeps its own copy). */
static bool stages_rows(const tport_model_eval *e) {
    const tport_tensor *te = e->m->w.tok_embd;
    return e->ids && te && te->data && !(te->res.backend && te->res.backend->mem.device_memory);
}

/* A new graph for e into c (empty); the inputs are filled by fill_inputs. */
static tport_status build(tport_eval_cache *c, const tport_model_eval *e, int32_t n_kv, const swa_view *w) {
    const tport_model *m = e->m;
    const tport_model_shape *sh = &m->sh;
    int32_t n = e->n;
    *c = (tport_eval_cache){.m = m, .kv = e->kv, .backend = e->backend, .n = n, .n_kv = n_kv,
                            .n_ctx = e->n_ctx, .layer_begin = e->layer_begin, .layer_end = e->layer_end,
                            .swa_cells = w->cells, .n_swa = sh->n_swa, .n_kv_swa = w->n_kv,
                            .swa_first = w->first, .hidden_out = e->hidden_out != NULL,
                            .hidden_out_last = e->hidden_out_last, .hidden_normed = e->hidden_normed,
                            .logits_all = e->logits_all, .n_built = c->n_built, .n_reused = c->n_reused};
    int cap_stores = 2 * (e->layer_end - e->layer_begin);
    bool stage = stages_rows(e);
    size_t n_in = 2 * (size_t)n + (size_t)n_kv * (size_t)n + (size_t)w->n_kv * (size_t)n;
    c->in = malloc((n_in + (stage ? (size_t)n : 0)) * sizeof *c->in);
    c->row_bytes = stage ? tport_row_size(m->w.tok_embd->type, m->w.tok_embd->ne[0]) : 0;
    c->rows = stage ? malloc((size_t)n * c->row_bytes) : NULL;
    c->stores = malloc((size_t)(cap_stores ? cap_stores : 1) * sizeof *c->stores);
    c->ctx = tport_ctx_new(0);
    c->g = c->ctx ? tport_graph_new(c->ctx) : NULL;
    if (!c->in || (stage && !c->rows) || !c->stores || !c->g)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "eval: out of memory");
    if (e->ws)
        tport_graph_set_workspace(c->g, e->ws);
    tport_ctx *ctx = c->ctx;
    tport_blk b = {.ctx = ctx, .g = c->g, .m = m, .sh = sh, .n = n, .pos = e->pos, .n_kv = n_kv,
                   .n_kv_swa = w->n_kv,
                   .n_ctx = e->n_ctx, .kv = e->kv, .layer_begin = e->layer_begin, .layer_end = e->layer_end,
                   .hidden_out = e->hidden_out != NULL, .hidden_out_last = e->hidden_out_last,
                   .hidden_normed = e->hidden_normed, .logits_all = e->logits_all,
                   .fused_attn = tport_blk_fused_attn(e->backend),
                   .stores = c->stores, .cap_stores = cap_stores};
    b.ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
    b.positions = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
    b.mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, n_kv, n);
    b.mask_swa = w->cells ? tport_new_tensor_2d(ctx, TPORT_TYPE_F32, w->n_kv, n) : NULL;
    tport_tensor *out = NULL;
    if (b.ids && b.positions && b.mask && (!w->cells || b.mask_swa)) {
        tport_tensor_set_data(b.ids, c->in);
        tport_tensor_set_data(b.positions, c->in + n);
        tport_tensor_set_data(b.mask, c->in + 2 * (size_t)n);
        if (b.mask_swa)
            tport_tensor_set_data(b.mask_swa, c->in + 2 * (size_t)n + (size_t)n_kv * (size_t)n);
        if (stage) {
            int32_t *order = c->in + n_in;
            for (int32_t i = 0; i < n; i++)
                order[i] = i;
            b.rows = tport_new_tensor_2d(ctx, m->w.tok_embd->type, m->w.tok_embd->ne[0], n);
            b.row_ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
            if (b.rows && b.row_ids) {
                tport_tensor_set_data(b.rows, c->rows);
                tport_tensor_set_data(b.row_ids, order);
            }
        }
        /* a later pipeline stage: the graph only reads its inputs */
        if (e->hidden_in && (b.hidden_in = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, sh->n_embd, n)))
            tport_tensor_set_data(b.hidden_in, (void *)e->hidden_in);
        if ((!e->hidden_in || b.hidden_in) && (!stage || (b.rows && b.row_ids)))
            out = m->arch->build(&b);
    }
    if (!out)
        return tport_error(TPORT_STATUS_ERROR, "building the %s graph: %s", m->arch->name, tport_last_error());
    c->hidden_in = b.hidden_in;
    c->n_stores = b.n_stores;
    c->out = out;
    return tport_graph_add(c->g, out);
}

tport_status tport_model_eval_batch(const tport_model_eval *e) {
    const tport_model *m = e->m;
    const tport_model_shape *sh = &m->sh;
    int32_t n = e->n, n_kv = e->pos + e->n;
    if (n <= 0 || e->pos < 0 || n_kv > e->n_ctx)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: %d tokens at position %d exceed "
                           "the context of %d", (int)n, (int)e->pos, (int)e->n_ctx);
    if (m->w.pos_embd && n_kv > sh->n_ctx_train)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: position %d is past the %d positions the model's "
                           "position embeddings cover", (int)(n_kv - 1), (int)sh->n_ctx_train);
    if (e->layer_begin < 0 || e->layer_begin > e->layer_end || e->layer_end > sh->n_layer ||
        !e->ids == !e->hidden_in || (e->layer_begin == e->layer_end && e->hidden_out))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: layers [%d, %d) of %d with %s input",
                           (int)e->layer_begin, (int)e->layer_end, (int)sh->n_layer,
                           e->ids ? "token" : "hidden-state");
    /* a query of a non-causal model sees later positions: they must be in
     * its batch, so the sequence is one batch from position 0 */
    if (sh->non_causal && e->pos != 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: %s attends non-causally: the whole sequence is one "
                           "batch from position 0 (tport_session_embed), not %d tokens at position %d",
                           m->arch->name, (int)n, (int)e->pos);
    if (e->hidden_normed && (!e->hidden_out || e->layer_end != sh->n_layer))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: the normed hidden state is the last layer's");
    for (int32_t il = e->layer_begin; il < e->layer_end; il++)
        if (!tport_layer_attention_weight(&m->layers[il]))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: layer %d is not loaded", (int)il);
    if ((e->ids && !m->has_embedding) || ((!e->hidden_out || e->hidden_normed) && !m->has_head))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: the model was loaded without its %s",
                           e->ids && !m->has_embedding ? "embedding" : "output head");
    for (int32_t i = 0; e->ids && i < n; i++)
        if (e->ids[i] < 0 || e->ids[i] >= sh->n_vocab)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: token id %d outside [0, %d)",
                               (int)e->ids[i], (int)sh->n_vocab);

    /* Attention reads n_kv cache positions rounded up to a multiple of 32
     * (as llama.cpp does): the masked tail adds exact zeros, and 32 tokens
     * in a row share one graph structure, so the graph is kept and run
     * again (tport_eval_cache), and a device can replay what it recorded
     * for the graph key. */
    n_kv = (n_kv + 31) / 32 * 32;
    if (n_kv > e->n_ctx)
        n_kv = e->n_ctx;
    swa_view w;
    tport_status st = swa_of(e, &w);
    if (st)
        return st;
    tport_eval_cache scratch = {0}, *c = e->cache ? e->cache : &scratch;
    if (c->g && fits(c, e, n_kv, &w)) {
        c->n_reused++;
    } else {
        tport_eval_cache_drop(c);
        st = build(c, e, n_kv, &w);
        c->n_built++;
    }
    if (!st)
        st = tport_model_settle_uploads(m, n);
    if (!st)
        st = fill_inputs(c, e);
    if (!st) {
        tport_compute_params cp = {.n_threads = e->n_threads, .backend = e->backend};
        st = tport_graph_compute(c->g, &cp);
    }
    if (!st && e->tally) {
        tally_nodes(c->g, e->tally);
        e->tally->stats = tport_graph_stats(c->g);
    }
    if (!st) {
        const float *out = tport_tensor_data(c->out);
        size_t n_out = !e->hidden_out ? (size_t)sh->n_vocab * (size_t)(e->logits_all ? n : 1)
                       : (size_t)sh->n_embd * (size_t)(e->hidden_out_last ? 1 : n);
        if (out)
            memcpy(e->hidden_out ? e->hidden_out : e->logits, out, n_out * sizeof(float));
        else
            st = tport_error(TPORT_STATUS_ERROR, "eval: the graph produced no %s",
                             e->hidden_out ? "hidden state" : "logits");
    }
    /* a failed graph is not kept: what failed may have been its state */
    if (st || c == &scratch)
        tport_eval_cache_drop(c);
    return st;
}
