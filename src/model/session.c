/* tport_session: a KV cache, a position and the logits of the last token.
 * Prompts are evaluated in batches of n_batch tokens, generation one token
 * at a time; both go through tport_llama_eval_batch.  A model loaded as a
 * pipeline stage has caches for its own layers only, and its evaluations
 * take and give hidden states (tport_session_eval_stage). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"

struct tport_session {
    tport_model *m;
    int32_t n_ctx, n_batch, pos;
    int n_threads;
    float *cache;            /* all layers' K then V, one allocation */
    float **k, **v;          /* per layer                            */
    float *logits;
    bool have_logits;
    tport_node_tally tally;  /* what ran where in the last evaluation */
};

static bool n_gt_room(const tport_session *s, int32_t n) { return n > s->n_ctx - s->pos; }

tport_session *tport_session_new(tport_model *m, const tport_session_params *params) {
    if (!m) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_new: no model");
        return NULL;
    }
    tport_session_params p = params ? *params : (tport_session_params){0};
    const tport_llama_shape *sh = &m->sh;
    if (p.n_ctx < 0 || p.n_batch < 0 || p.n_threads < 0) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_new: negative parameter");
        return NULL;
    }
    tport_session *s = calloc(1, sizeof *s);
    if (!s) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_new: out of memory");
        return NULL;
    }
    s->m = m;
    s->n_ctx = p.n_ctx ? p.n_ctx : sh->n_ctx;
    s->n_batch = p.n_batch ? p.n_batch : 64;
    s->n_threads = p.n_threads ? p.n_threads : m->n_threads;
    size_t per_layer = (size_t)s->n_ctx * (size_t)sh->head_dim * (size_t)sh->n_head_kv;
    size_t n_layers = (size_t)(m->layer_end - m->layer_begin);
    size_t total = 2 * per_layer * n_layers;
    if (per_layer && total / per_layer / 2 != n_layers) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_new: KV cache size overflows");
        free(s);
        return NULL;
    }
    s->cache = calloc(total ? total : 1, sizeof *s->cache);
    s->k = calloc((size_t)sh->n_layer, sizeof *s->k);
    s->v = calloc((size_t)sh->n_layer, sizeof *s->v);
    s->logits = calloc((size_t)sh->n_vocab, sizeof *s->logits);
    if (!s->cache || !s->k || !s->v || !s->logits) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_new: cannot allocate a KV cache of %zu MiB "
                    "for %d positions", total * sizeof(float) >> 20, (int)s->n_ctx);
        tport_session_free(s);
        return NULL;
    }
    for (int32_t i = m->layer_begin; i < m->layer_end; i++) {
        size_t j = (size_t)(i - m->layer_begin);
        s->k[i] = s->cache + 2 * j * per_layer;
        s->v[i] = s->cache + (2 * j + 1) * per_layer;
    }
    return s;
}

void tport_session_free(tport_session *s) {
    if (!s)
        return;
    free(s->cache);
    free(s->k);
    free(s->v);
    free(s->logits);
    free(s);
}

tport_status tport_session_eval_stage(tport_session *s, const tport_stage_io *io) {
    if (!s || !io || io->n <= 0 || !io->ids == !io->hidden_in)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: no tokens, or both ids and a hidden state");
    const tport_model *m = s->m;
    if (io->head_only && (!io->hidden_in || io->hidden_out))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: the head alone takes a hidden state "
                           "and gives logits");
    if (!io->head_only && n_gt_room(s, io->n))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "session_eval: %d tokens at position %d do not fit the context of %d",
                           (int)io->n, (int)s->pos, (int)s->n_ctx);
    size_t row = (size_t)m->sh.n_embd;
    s->have_logits = false;
    for (int32_t done = 0; done < io->n;) {
        int32_t chunk = io->n - done < s->n_batch ? io->n - done : s->n_batch;
        tport_llama_eval e = {
            .m = m, .k_cache = s->k, .v_cache = s->v, .n_ctx = s->n_ctx, .pos = s->pos,
            .ids = io->ids ? io->ids + done : NULL,
            .hidden_in = io->hidden_in ? io->hidden_in + (size_t)done * row : NULL, .n = chunk,
            .layer_begin = io->head_only ? m->sh.n_layer : m->layer_begin,
            .layer_end = io->head_only ? m->sh.n_layer : m->layer_end,
            .n_threads = s->n_threads, .backend = m->backend, .logits = s->logits, .tally = &s->tally,
        };
        if (io->hidden_out) {
            /* all rows in place, or the last row (the last chunk's wins) */
            e.hidden_out = io->out_last_only ? io->hidden_out : io->hidden_out + (size_t)done * row;
            e.hidden_out_last = io->out_last_only;
        }
        tport_status st = tport_llama_eval_batch(&e);
        if (st != TPORT_STATUS_OK)
            return st;
        if (!io->head_only)
            s->pos += chunk;
        done += chunk;
    }
    s->have_logits = !io->hidden_out;
    return TPORT_STATUS_OK;
}

tport_status tport_session_eval(tport_session *s, const tport_token *ids, int32_t n) {
    if (!s || !ids || n <= 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: no tokens");
    tport_stage_io io = {.ids = ids, .n = n};
    return tport_session_eval_stage(s, &io);
}

const float *tport_session_logits(const tport_session *s) {
    return s && s->have_logits ? s->logits : NULL;
}

int32_t tport_session_pos(const tport_session *s) { return s ? s->pos : 0; }

int32_t tport_session_placement(const tport_session *s, int32_t i, const char **backend, const char **op) {
    if (!s || i < 0 || i >= s->tally.n_rows)
        return 0;
    if (backend)
        *backend = s->tally.rows[i].backend;
    if (op)
        *op = s->tally.rows[i].op;
    return s->tally.rows[i].count;
}

void tport_session_reset(tport_session *s) {
    if (!s)
        return;
    s->pos = 0;
    s->have_logits = false;
}
