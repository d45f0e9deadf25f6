/* tport_session: a KV cache, a position and the logits of the last token.
 * Prompts are evaluated in batches of n_batch tokens, generation one token
 * at a time; both go through tport_llama_eval_batch. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"

struct tport_session {
    tport_model *m;
    int32_t n_ctx, n_batch, pos;
    int n_threads;
    uint8_t *cache;          /* all layers' K then V, one allocation */
    void **k, **v;           /* per layer                            */
    tport_type_id kv_type;   /* f16 or f32                           */
    float *logits;
    bool have_logits;
    tport_node_tally tally;  /* what ran where in the last evaluation */
};

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
    s->kv_type = p.kv_f32 ? TPORT_TYPE_F32 : TPORT_TYPE_F16;
    size_t elt = p.kv_f32 ? sizeof(float) : sizeof(uint16_t);
    size_t per_layer = (size_t)s->n_ctx * (size_t)sh->head_dim * (size_t)sh->n_head_kv * elt;
    size_t total = 2 * per_layer * (size_t)sh->n_layer;
    if (per_layer && total / per_layer / 2 != (size_t)sh->n_layer) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_new: KV cache size overflows");
        free(s);
        return NULL;
    }
    s->cache = calloc(total ? total : 1, 1);
    s->k = malloc((size_t)sh->n_layer * sizeof *s->k);
    s->v = malloc((size_t)sh->n_layer * sizeof *s->v);
    s->logits = calloc((size_t)sh->n_vocab, sizeof *s->logits);
    if (!s->cache || !s->k || !s->v || !s->logits) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_new: cannot allocate a KV cache of %zu MiB "
                    "for %d positions", total >> 20, (int)s->n_ctx);
        tport_session_free(s);
        return NULL;
    }
    for (int32_t i = 0; i < sh->n_layer; i++) {
        s->k[i] = s->cache + (size_t)(2 * i) * per_layer;
        s->v[i] = s->cache + (size_t)(2 * i + 1) * per_layer;
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

tport_status tport_session_eval(tport_session *s, const tport_token *ids, int32_t n) {
    if (!s || !ids || n <= 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: no tokens");
    if (n > s->n_ctx - s->pos)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "session_eval: %d tokens at position %d do not fit the context of %d",
                           (int)n, (int)s->pos, (int)s->n_ctx);
    for (int32_t done = 0; done < n;) {
        int32_t chunk = n - done < s->n_batch ? n - done : s->n_batch;
        tport_llama_eval e = {
            .m = s->m, .k_cache = s->k, .v_cache = s->v, .kv_type = s->kv_type, .n_ctx = s->n_ctx, .pos = s->pos,
            .ids = ids + done, .n = chunk, .n_threads = s->n_threads, .backend = s->m->backend,
            .logits = s->logits, .tally = &s->tally,
        };
        tport_status st = tport_llama_eval_batch(&e);
        if (st != TPORT_STATUS_OK) {
            s->have_logits = false;
            return st;
        }
        s->pos += chunk;
        done += chunk;
    }
    s->have_logits = true;
    return TPORT_STATUS_OK;
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
