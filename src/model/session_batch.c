/* tport_batch: continuous batching over the public session API.  One
 * call evaluates tokens of several sessions in one graph
 * (tport_model_eval_seqs): every product runs over all their rows, the
 * attention of each over its own cache.  The batch owns that graph (kept
 * for the next step of the same shape) and the memory it runs in; the
 * sessions lend their caches, positions and logits. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/arch/arch.h"
#include "model/model.h"
#include "model/session.h"

struct tport_batch {
    tport_model *m;
    tport_workspace *ws;
    tport_eval_cache *cache;
    tport_node_tally tally;
    tport_eval_seq *seqs; /* room for cap */
    int32_t cap;
};

tport_batch *tport_batch_new(tport_model *m) {
    if (!m) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_new: no model");
        return NULL;
    }
    tport_batch *b = calloc(1, sizeof *b);
    if (b) {
        b->m = m;
        b->ws = tport_workspace_new();
        b->cache = tport_eval_cache_new();
    }
    if (!b || !b->ws || !b->cache) {
        tport_batch_free(b);
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "batch_new: out of memory");
        return NULL;
    }
    return b;
}

void tport_batch_free(tport_batch *b) {
    if (!b)
        return;
    tport_eval_cache_free(b->cache); /* its graph borrows ws */
    tport_workspace_free(b->ws);
    free(b->seqs);
    free(b);
}

/* What the items ask is possible: the model's distinct sessions, each
 * with tokens that fit, one context for all. */
static tport_status check_items(const tport_batch *b, const tport_batch_item *items, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        const tport_session *s = items[i].session;
        if (!s || !items[i].ids || items[i].n <= 0)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_eval: item %d has no session or no tokens",
                               (int)i);
        if (s->m != b->m)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_eval: item %d's session is of another model",
                               (int)i);
        if (s->n_ctx != items[0].session->n_ctx)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_eval: sessions of contexts %d and %d",
                               (int)items[0].session->n_ctx, (int)s->n_ctx);
        if (items[i].n > s->n_batch)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_eval: item %d has %d tokens, more than its "
                               "session's batch of %d", (int)i, (int)items[i].n, (int)s->n_batch);
        if (items[i].n > s->n_ctx - s->pos)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_eval: item %d: %d tokens at position %d do "
                               "not fit the context of %d", (int)i, (int)items[i].n, (int)s->pos, (int)s->n_ctx);
        for (int32_t j = 0; j < i; j++)
            if (items[j].session == s)
                return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_eval: items %d and %d are the same "
                                   "session", (int)j, (int)i);
    }
    return TPORT_STATUS_OK;
}

tport_status tport_batch_eval(tport_batch *b, const tport_batch_item *items, int32_t n_items) {
    if (!b || !items || n_items <= 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "batch_eval: no items");
    /* until it moves on, no item's session has logits: after a failure
     * they tell which did */
    for (int32_t i = 0; i < n_items; i++)
        if (items[i].session)
            items[i].session->have_logits = false;
    tport_status st = check_items(b, items, n_items);
    if (st)
        return st;
    if (n_items > b->cap) {
        tport_eval_seq *q = realloc(b->seqs, (size_t)n_items * sizeof *q);
        if (!q)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "batch_eval: out of memory");
        b->seqs = q;
        b->cap = n_items;
    }
    for (int32_t i = 0; i < n_items; i++) {
        tport_session *s = items[i].session;
        b->seqs[i] = (tport_eval_seq){.kv = s->kv, .kv_id = s->kv_id, .pos = s->pos, .n = items[i].n,
                                      .ids = items[i].ids, .logits = s->logits};
    }
    const tport_session *s0 = items[0].session;
    tport_model_eval e = {.m = b->m, .n_ctx = s0->n_ctx, .n_threads = s0->n_threads, .backend = b->m->backend,
                          .tally = &b->tally, .ws = b->ws, .cache = b->cache};
    st = tport_model_eval_seqs(&e, b->seqs, n_items);
    if (st == TPORT_STATUS_DEVICE_LOST && !b->m->backend) {
        /* each session re-places its own work (session.c's recovery) */
        tport_log(TPORT_LOG_WARN, "%s; the batch's sessions go on one at a time", tport_last_error());
        st = TPORT_STATUS_OK;
        for (int32_t i = 0; i < n_items && !st; i++)
            st = tport_session_eval(items[i].session, items[i].ids, items[i].n);
        return st;
    }
    if (st)
        return st;
    for (int32_t i = 0; i < n_items; i++) {
        tport_session *s = items[i].session;
        s->tally = b->tally;
        tport_session_advance(s, items[i].ids, items[i].n);
    }
    return TPORT_STATUS_OK;
}
