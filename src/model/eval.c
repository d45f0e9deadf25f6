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

/* What the sliding-window layers of a sequence read: cells (0 when the
 * evaluation runs none), how many of them (n_kv), and how many of the
 * sequence's cells come before the ring's end (the rest wrap to cell 0). */
typedef struct swa_view {
    int32_t cells, n_kv, first;
} swa_view;

/* What a kept graph was built for, per sequence, and where its masks lie
 * in the inputs (in 32-bit words). */
typedef struct seq_shape {
    const tport_kv_layer *kv;
    uint64_t kv_id;
    int32_t n, n_kv;
    swa_view w;
    size_t mask_at, mask_swa_at;
} seq_shape;

struct tport_eval_cache {
    tport_ctx *ctx;
    tport_graph *g;
    int32_t *in; /* ids [n], positions [n], per sequence its mask [n_kv, n_s]
                    and sliding-window mask [n_kv_swa, n_s], then 0..n-1
                    when rows are staged, then the rows the head reads */
    tport_tensor *hidden_in, *out;
    uint8_t *rows;    /* the batch's token_embd rows, or NULL: get_rows reads token_embd */
    size_t row_bytes; /* of one of them */
    tport_blk_store *stores;
    int n_stores;
    /* what the graph was built for */
    const tport_model *m;
    const char *backend;
    seq_shape *seqs;
    int32_t n_seqs;
    int32_t n, n_ctx, n_swa, layer_begin, layer_end;
    bool hidden_out, hidden_out_last, hidden_normed, logits_all;
    bool watch; /* the weight products' inputs are results */
    tport_weight_stage stage;
    int64_t n_built, n_reused;
};

/* What the sliding-window layers of e read for sequence q. */
static tport_status swa_of(const tport_model_eval *e, const tport_eval_seq *q, swa_view *w) {
    const tport_model_shape *sh = &e->m->sh;
    *w = (swa_view){0};
    for (int32_t il = e->layer_begin; il < e->layer_end; il++) {
        if (!tport_shape_layer_swa(sh, il))
            continue;
        int32_t cells = q->kv[il].n_cells > 0 ? q->kv[il].n_cells : e->n_ctx;
        if (w->cells && cells != w->cells)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: sliding-window caches of %d and %d cells",
                               (int)w->cells, (int)cells);
        w->cells = cells;
    }
    if (!w->cells)
        return TPORT_STATUS_OK;
    /* a batch must not overwrite what its own first query still sees */
    if (w->cells < e->n_ctx && q->n > w->cells - sh->n_swa + 1)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: a batch of %d tokens does not fit a "
                           "sliding-window cache of %d cells for a window of %d", (int)q->n, (int)w->cells,
                           (int)sh->n_swa);
    int32_t filled = q->pos + q->n < w->cells ? q->pos + q->n : w->cells;
    w->n_kv = (filled + 31) / 32 * 32;
    if (w->n_kv > w->cells)
        w->n_kv = w->cells;
    int32_t at = q->pos % w->cells;
    w->first = w->cells - at < q->n ? w->cells - at : q->n;
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
    free(c->seqs);
    tport_weight_stage_free(&c->stage);
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

/* Whether c's graph is the one e needs for the sequences of shapes sh
 * (the backend compared by name: a caller may pass equal strings from
 * different places). */
static bool fits(const tport_eval_cache *c, const tport_model_eval *e, const seq_shape *sh, int32_t n_seqs,
                 int32_t n) {
    bool same_backend = !c->backend == !e->backend && (!c->backend || !strcmp(c->backend, e->backend));
    if (!(c->m == e->m && same_backend && c->n == n && c->n_seqs == n_seqs && c->n_ctx == e->n_ctx &&
          c->layer_begin == e->layer_begin && c->layer_end == e->layer_end && !c->hidden_in == !e->hidden_in &&
          c->hidden_out == (e->hidden_out != NULL) && c->hidden_out_last == e->hidden_out_last &&
          c->hidden_normed == e->hidden_normed && c->logits_all == e->logits_all &&
          c->watch == (e->watch != NULL)))
        return false;
    for (int32_t i = 0; i < n_seqs; i++) {
        const seq_shape *a = &c->seqs[i], *b = &sh[i];
        if (a->kv != b->kv || a->kv_id != b->kv_id || a->n != b->n || a->n_kv != b->n_kv ||
            a->w.cells != b->w.cells || a->w.n_kv != b->w.n_kv || a->w.first != b->w.first)
            return false;
    }
    return true;
}

/* The inputs of this call, and the cache stores moved to each sequence's
 * position. */
static tport_status fill_inputs(tport_eval_cache *c, const tport_model_eval *e, const tport_eval_seq *seqs) {
    int32_t *ids = c->in, *positions = c->in + c->n;
    bool alibi = e->m->sh.max_alibi_bias > 0;
    bool non_causal = e->m->sh.non_causal; /* every filled cell is visible */
    for (int32_t si = 0, row = 0; si < c->n_seqs; row += seqs[si].n, si++) {
        const tport_eval_seq *q = &seqs[si];
        const seq_shape *sh = &c->seqs[si];
        int32_t n = q->n, n_kv = sh->n_kv, n_kv_swa = sh->w.n_kv, cells = sh->w.cells;
        float *mask = (float *)(c->in + sh->mask_at), *mask_swa = (float *)(c->in + sh->mask_swa_at);
        int32_t last = q->pos + n - 1;
        for (int32_t i = 0; i < n; i++) {
            int32_t p_q = q->pos + i;
            ids[row + i] = q->ids ? q->ids[i] : 0;
            positions[row + i] = p_q;
            for (int32_t j = 0; j < n_kv; j++)
                mask[(size_t)i * (size_t)n_kv + (size_t)j] =
                    j > (non_causal ? last : p_q) ? -INFINITY : alibi ? -(float)(p_q - j) : 0.0f;
            /* cell j of a ring holds the latest position p <= last with
             * p % cells == j (none yet when j > last); llama.cpp masks a key
             * when p_query - p_key >= n_swa */
            for (int32_t j = 0; j < n_kv_swa; j++) {
                int32_t p = j > last ? -1 : last - (last - j) % cells;
                mask_swa[(size_t)i * (size_t)n_kv_swa + (size_t)j] =
                    p < 0 || p > p_q || p_q - p >= c->n_swa ? -INFINITY : alibi ? -(float)(p_q - p) : 0.0f;
            }
        }
    }
    if (c->hidden_in)
        tport_tensor_set_data(c->hidden_in, (void *)e->hidden_in);
    tport_status st = TPORT_STATUS_OK;
    const tport_tensor *te = e->m->w.tok_embd;
    for (int32_t i = 0; c->rows && i < c->n && !st; i++)
        st = tport_model_file_copy(e->m->file, (const uint8_t *)te->data + (size_t)ids[i] * te->nb[1],
                                   c->rows + (size_t)i * c->row_bytes, c->row_bytes);
    for (int i = 0; i < c->n_stores && !st; i++) {
        const tport_blk_store *sr = &c->stores[i];
        st = tport_view_move(sr->dst, (size_t)(seqs[sr->seq].pos % sr->cells) * sr->row);
    }
    return st;
}

/* Whether the host stages the batch's rows of token_embd: when get_rows
 * would read them from host memory (a device keeps its own copy). */
static bool stages_rows(const tport_model_eval *e, bool ids) {
    const tport_tensor *te = e->m->w.tok_embd;
    return ids && te && te->data && !(te->res.backend && te->res.backend->mem.device_memory);
}

/* The head reads rows of its own (the last of each sequence) when there
 * are several sequences and one of them has more than one token. */
static bool picks_rows(const seq_shape *sh, int32_t n_seqs) {
    for (int32_t i = 0; n_seqs > 1 && i < n_seqs; i++)
        if (sh[i].n > 1)
            return true;
    return false;
}

/* A new graph into c (empty) for e's sequences of shapes sh, n rows in
 * all; the inputs are filled by fill_inputs. */
static tport_status build(tport_eval_cache *c, const tport_model_eval *e, const tport_eval_seq *seqs,
                          const seq_shape *sh_in, int32_t n_seqs, int32_t n) {
    const tport_model *m = e->m;
    const tport_model_shape *sh = &m->sh;
    *c = (tport_eval_cache){.m = m, .backend = e->backend, .n_seqs = n_seqs, .n = n, .n_ctx = e->n_ctx,
                            .n_swa = sh->n_swa, .layer_begin = e->layer_begin, .layer_end = e->layer_end,
                            .hidden_out = e->hidden_out != NULL, .hidden_out_last = e->hidden_out_last,
                            .hidden_normed = e->hidden_normed, .logits_all = e->logits_all,
                            .watch = e->watch != NULL, .n_built = c->n_built, .n_reused = c->n_reused};
    int cap_stores = 2 * (e->layer_end - e->layer_begin) * n_seqs;
    bool stage = stages_rows(e, seqs[0].ids != NULL), pick = picks_rows(sh_in, n_seqs);
    c->seqs = malloc((size_t)n_seqs * sizeof *c->seqs);
    tport_blk_seq *bseqs = calloc((size_t)n_seqs, sizeof *bseqs);
    size_t n_in = 2 * (size_t)n;
    for (int32_t i = 0; c->seqs && i < n_seqs; i++) {
        c->seqs[i] = sh_in[i];
        c->seqs[i].mask_at = n_in;
        n_in += (size_t)sh_in[i].n_kv * (size_t)sh_in[i].n;
        c->seqs[i].mask_swa_at = n_in;
        n_in += (size_t)sh_in[i].w.n_kv * (size_t)sh_in[i].n;
    }
    size_t order_at = n_in, out_at = n_in + (stage ? (size_t)n : 0);
    c->in = malloc((out_at + (pick ? (size_t)n_seqs : 0)) * sizeof *c->in);
    c->row_bytes = stage ? tport_row_size(m->w.tok_embd->type, m->w.tok_embd->ne[0]) : 0;
    c->rows = stage ? malloc((size_t)n * c->row_bytes) : NULL;
    c->stores = malloc((size_t)(cap_stores ? cap_stores : 1) * sizeof *c->stores);
    c->ctx = tport_ctx_new(0);
    c->g = c->ctx ? tport_graph_new(c->ctx) : NULL;
    if (!c->seqs || !bseqs || !c->in || (stage && !c->rows) || !c->stores || !c->g) {
        free(bseqs);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "eval: out of memory");
    }
    if (e->ws)
        tport_graph_set_workspace(c->g, e->ws);
    tport_ctx *ctx = c->ctx;
    tport_blk b = {.ctx = ctx, .g = c->g, .m = m, .sh = sh, .n = n, .n_ctx = e->n_ctx, .seqs = bseqs,
                   .n_seqs = n_seqs, .layer_begin = e->layer_begin, .layer_end = e->layer_end,
                   .hidden_out = e->hidden_out != NULL, .hidden_out_last = e->hidden_out_last,
                   .hidden_normed = e->hidden_normed, .logits_all = e->logits_all,
                   .fused_attn = tport_blk_fused_attn(e->backend),
                   .stores = c->stores, .cap_stores = cap_stores};
    b.ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
    b.positions = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
    bool ok = b.ids && b.positions;
    for (int32_t i = 0, row = 0; ok && i < n_seqs; row += sh_in[i].n, i++) {
        const seq_shape *q = &c->seqs[i];
        tport_blk_seq *bq = &bseqs[i];
        *bq = (tport_blk_seq){.kv = q->kv, .first = row, .n = q->n, .pos = seqs[i].pos, .n_kv = q->n_kv,
                              .n_kv_swa = q->w.n_kv};
        bq->mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, q->n_kv, q->n);
        bq->mask_swa = q->w.cells ? tport_new_tensor_2d(ctx, TPORT_TYPE_F32, q->w.n_kv, q->n) : NULL;
        ok = bq->mask && (!q->w.cells || bq->mask_swa);
        if (ok) {
            tport_tensor_set_data(bq->mask, c->in + q->mask_at);
            if (bq->mask_swa)
                tport_tensor_set_data(bq->mask_swa, c->in + q->mask_swa_at);
        }
    }
    tport_tensor *out = NULL;
    if (ok) {
        tport_tensor_set_data(b.ids, c->in);
        tport_tensor_set_data(b.positions, c->in + n);
        if (stage) {
            int32_t *order = c->in + order_at;
            for (int32_t i = 0; i < n; i++)
                order[i] = i;
            b.rows = tport_new_tensor_2d(ctx, m->w.tok_embd->type, m->w.tok_embd->ne[0], n);
            b.row_ids = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
            if (b.rows && b.row_ids) {
                tport_tensor_set_data(b.rows, c->rows);
                tport_tensor_set_data(b.row_ids, order);
            }
        }
        if (pick && (b.out_rows = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n_seqs))) {
            int32_t *last = c->in + out_at;
            for (int32_t i = 0; i < n_seqs; i++)
                last[i] = bseqs[i].first + bseqs[i].n - 1;
            tport_tensor_set_data(b.out_rows, last);
        }
        /* a later pipeline stage: the graph only reads its inputs */
        if (e->hidden_in && (b.hidden_in = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, sh->n_embd, n)))
            tport_tensor_set_data(b.hidden_in, (void *)e->hidden_in);
        if ((!e->hidden_in || b.hidden_in) && (!stage || (b.rows && b.row_ids)) && (!pick || b.out_rows))
            out = m->arch->build(&b);
    }
    free(bseqs); /* the builder has read it: the graph keeps nothing of it */
    if (!out)
        return tport_error(TPORT_STATUS_ERROR, "building the %s graph: %s", m->arch->name, tport_last_error());
    c->hidden_in = b.hidden_in;
    c->n_stores = b.n_stores;
    c->out = out;
    tport_status st = tport_graph_add(c->g, out);
    return st || !c->watch ? st : tport_weight_inputs_mark(c->g);
}

/* Checks one sequence of e: its tokens fit its context and the model. */
static tport_status check_seq(const tport_model_eval *e, const tport_eval_seq *q) {
    const tport_model_shape *sh = &e->m->sh;
    int32_t end = q->pos + q->n;
    if (q->n <= 0 || q->pos < 0 || end > e->n_ctx)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: %d tokens at position %d exceed "
                           "the context of %d", (int)q->n, (int)q->pos, (int)e->n_ctx);
    if (e->m->w.pos_embd && end > sh->n_ctx_train)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: position %d is past the %d positions the model's "
                           "position embeddings cover", (int)(end - 1), (int)sh->n_ctx_train);
    for (int32_t i = 0; q->ids && i < q->n; i++)
        if (q->ids[i] < 0 || q->ids[i] >= sh->n_vocab)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: token id %d outside [0, %d)",
                               (int)q->ids[i], (int)sh->n_vocab);
    return TPORT_STATUS_OK;
}

/* Evaluates e's sequences (checked) in one graph. */
static tport_status eval_run(const tport_model_eval *e, const tport_eval_seq *seqs, int32_t n_seqs) {
    const tport_model *m = e->m;
    const tport_model_shape *sh = &m->sh;
    seq_shape one, *shapes = n_seqs == 1 ? &one : malloc((size_t)n_seqs * sizeof *shapes);
    if (!shapes)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "eval: out of memory");
    /* Attention reads n_kv cache positions rounded up to a multiple of 32
     * (as llama.cpp does): the masked tail adds exact zeros, and 32 tokens
     * in a row share one graph structure, so the graph is kept and run
     * again (tport_eval_cache), and a device can replay what it recorded
     * for the graph key. */
    tport_status st = TPORT_STATUS_OK;
    int32_t n = 0;
    for (int32_t i = 0; i < n_seqs && !st; i++) {
        const tport_eval_seq *q = &seqs[i];
        int32_t n_kv = (q->pos + q->n + 31) / 32 * 32;
        shapes[i] = (seq_shape){.kv = q->kv, .kv_id = q->kv_id, .n = q->n,
                                .n_kv = n_kv > e->n_ctx ? e->n_ctx : n_kv};
        st = swa_of(e, q, &shapes[i].w);
        n += q->n;
    }
    tport_eval_cache scratch = {0}, *c = e->cache ? e->cache : &scratch;
    if (st) {
    } else if (c->g && fits(c, e, shapes, n_seqs, n)) {
        c->n_reused++;
    } else {
        tport_eval_cache_drop(c);
        st = build(c, e, seqs, shapes, n_seqs, n);
        c->n_built++;
    }
    if (shapes != &one)
        free(shapes);
    if (!st)
        st = tport_model_settle_uploads(m, n);
    if (!st)
        st = fill_inputs(c, e, seqs);
    if (!st) {
        tport_compute_params cp = {.n_threads = e->n_threads, .backend = e->backend};
        st = tport_graph_compute(c->g, &cp);
    }
    if (!st && e->watch)
        st = tport_weight_inputs_report(c->g, &c->stage, e->watch, e->watch_user);
    if (!st && e->tally) {
        tally_nodes(c->g, e->tally);
        e->tally->stats = tport_graph_stats(c->g);
    }
    if (!st) {
        const float *out = tport_tensor_data(c->out);
        size_t nv = (size_t)sh->n_vocab;
        if (!out)
            st = tport_error(TPORT_STATUS_ERROR, "eval: the graph produced no %s",
                             e->hidden_out ? "hidden state" : "logits");
        else if (n_seqs > 1)
            for (int32_t i = 0; i < n_seqs; i++)
                memcpy(seqs[i].logits, out + (size_t)i * nv, nv * sizeof(float));
        else if (e->hidden_out)
            memcpy(e->hidden_out, out, (size_t)sh->n_embd * (size_t)(e->hidden_out_last ? 1 : n) * sizeof(float));
        else
            memcpy(seqs[0].logits, out, nv * (size_t)(e->logits_all ? n : 1) * sizeof(float));
    }
    /* a failed graph is not kept: what failed may have been its state */
    if (st || c == &scratch)
        tport_eval_cache_drop(c);
    return st;
}

tport_status tport_model_eval_batch(const tport_model_eval *e) {
    const tport_model *m = e->m;
    const tport_model_shape *sh = &m->sh;
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
                           m->arch->name, (int)e->n, (int)e->pos);
    if (e->hidden_normed && (!e->hidden_out || e->layer_end != sh->n_layer))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: the normed hidden state is the last layer's");
    for (int32_t il = e->layer_begin; il < e->layer_end; il++)
        if (!tport_layer_attention_weight(&m->layers[il]))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: layer %d is not loaded", (int)il);
    if ((e->ids && !m->has_embedding) || ((!e->hidden_out || e->hidden_normed) && !m->has_head))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: the model was loaded without its %s",
                           e->ids && !m->has_embedding ? "embedding" : "output head");
    tport_eval_seq q = {.kv = e->kv, .pos = e->pos, .n = e->n, .ids = e->ids, .logits = e->logits};
    tport_status st = check_seq(e, &q);
    return st ? st : eval_run(e, &q, 1);
}

tport_status tport_model_eval_seqs(const tport_model_eval *e, const tport_eval_seq *seqs, int32_t n_seqs) {
    const tport_model *m = e->m;
    if (n_seqs <= 0 || !seqs)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: no sequences");
    if (m->layer_begin != 0 || m->layer_end != m->sh.n_layer || !m->has_embedding || !m->has_head)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: several sequences need the whole model (this is "
                           "a pipeline stage)");
    tport_model_eval w = *e;
    w.layer_begin = 0;
    w.layer_end = m->sh.n_layer;
    w.hidden_in = w.hidden_out = NULL;
    w.hidden_out_last = w.hidden_normed = w.logits_all = false;
    if (m->sh.non_causal)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: %s attends non-causally and gives embeddings only: "
                           "no batched steps", m->arch->name);
    for (int32_t i = 0; i < n_seqs; i++) {
        if (!seqs[i].ids || !seqs[i].kv || !seqs[i].logits)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "eval: sequence %d has no tokens, caches or logits",
                               (int)i);
        tport_status st = check_seq(&w, &seqs[i]);
        if (st)
            return st;
    }
    return eval_run(&w, seqs, n_seqs);
}
