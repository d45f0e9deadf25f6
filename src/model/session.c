/* tport_session: a KV cache, a position and the logits of the last token.
 * Prompts are evaluated in batches of n_batch tokens, generation one token
 * at a time; both go through tport_model_eval_batch.
 *
 * A model loaded as a pipeline stage (src/dist) has caches for its own
 * layers only, and its evaluations take and give hidden states
 * (tport_session_eval_stage); those are not replayed after a lost device.
 *
 * Each layer's cache lives where that layer's attention runs: on the
 * device holding the layer's weights when it has memory of its own and
 * runs the attention over the cache (cache_probe.c), else in host memory.
 * When a device is lost mid-way, the session moves its work to the
 * remaining backends (weights fall back to the file's bytes), rebuilds the
 * caches by evaluating its tokens again, and retries. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/blocks.h"
#include "model/model.h"
#include "model/session.h"
#include "sched/sched.h"

#define MAX_RECOVERIES 4

/* Positions layer il's cache holds: the context, or for a sliding-window
 * layer a ring of the window plus one batch less one (what the batch's
 * first query still sees, and the batch's own keys), as llama.cpp's iSWA
 * cache keeps n_swa + n_ubatch cells: memory that does not grow with the
 * context. */
static int32_t layer_cells(const tport_session *s, int32_t il) {
    const tport_model_shape *sh = &s->m->sh;
    if (!tport_shape_layer_swa(sh, il))
        return s->n_ctx;
    int64_t ring = (int64_t)sh->n_swa + s->n_batch - 1;
    return ring < s->n_ctx ? (int32_t)ring : s->n_ctx;
}

/* Elements of layer il's K (or V) cache. */
static size_t layer_elements(const tport_session *s, int32_t il) {
    const tport_model_shape *sh = &s->m->sh;
    return (size_t)layer_cells(s, il) * (size_t)sh->head_dim * (size_t)sh->n_head_kv;
}

static size_t kv_element_size(const tport_session *s) {
    return s->kv_type == TPORT_TYPE_F32 ? sizeof(float) : sizeof(uint16_t);
}

static void free_layer(tport_kv_layer *kv) {
    free(kv->k);
    free(kv->v);
    tport_sched_free(&kv->k_res);
    tport_sched_free(&kv->v_res);
    memset(kv, 0, sizeof *kv);
}

/* The cache of layer il, on the device of its attention weights if that
 * device has memory of its own, runs the nodes that read the cache (and
 * it or a host backend the copy into it), and has room for it; else in
 * host memory. */
static tport_status place_layer(tport_session *s, int32_t il) {
    tport_kv_layer *kv = &s->kv[il];
    size_t n = layer_elements(s, il), e = kv_element_size(s);
    kv->type = s->kv_type;
    kv->n_cells = layer_cells(s, il);
    const tport_active_backend *b = tport_layer_attention_weight(&s->m->layers[il])->res.backend;
    if (b && b->mem.device_memory && !tport_sched_backend_lost(b) && b != s->probed) {
        s->probed = b;
        s->probed_ok = tport_blk_cache_runs_on(b, s->m, s->kv_type, s->n_ctx, s->n_batch);
    }
    /* deepseek2: V is read from the K cache, there is no V cache */
    const bool v_in_k = tport_shape_v_in_k(&s->m->sh);
    if (b && b->mem.device_memory && !tport_sched_backend_lost(b) && s->probed_ok) {
        uint64_t bytes = (uint64_t)n * e;
        if (tport_sched_alloc(b, bytes, &kv->k_res) == TPORT_STATUS_OK &&
            (v_in_k || tport_sched_alloc(b, bytes, &kv->v_res) == TPORT_STATUS_OK))
            return TPORT_STATUS_OK;
        tport_log(TPORT_LOG_WARN, "backend %s: no device memory for the KV cache of layer %d (%s); it stays in "
                  "host memory", b->name, (int)il, tport_last_error());
        tport_sched_free(&kv->k_res);
        tport_sched_free(&kv->v_res);
    }
    kv->k = calloc(n, e);
    kv->v = v_in_k ? NULL : calloc(n, e);
    if (!kv->k || (!v_in_k && !kv->v))
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_new: cannot allocate the KV cache of layer %d "
                           "(%zu MiB for %d positions)", (int)il, 2 * n * e >> 20, (int)kv->n_cells);
    return TPORT_STATUS_OK;
}

uint64_t tport_session_next_kv_id(void) {
    static atomic_uint_fast64_t next = 1;
    return (uint64_t)atomic_fetch_add(&next, 1);
}

tport_session *tport_session_new(tport_model *m, const tport_session_params *params) {
    if (!m) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_new: no model");
        return NULL;
    }
    tport_session_params p = params ? *params : (tport_session_params){0};
    const tport_model_shape *sh = &m->sh;
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
    /* f16 as llama.cpp; f32 when asked, or when one forced backend other
     * than the CPU must run every node (its cache ops may be f32 only) */
    s->kv_type = p.kv_f32 || (m->backend && strcmp(m->backend, "cpu")) ? TPORT_TYPE_F32 : TPORT_TYPE_F16;
    size_t per_layer = (size_t)s->n_ctx * (size_t)sh->head_dim * (size_t)sh->n_head_kv; /* the largest */
    size_t total = 2 * per_layer * (size_t)sh->n_layer;
    if (per_layer && (total / per_layer / 2 != (size_t)sh->n_layer || total > SIZE_MAX / sizeof(float))) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_new: KV cache size overflows");
        free(s);
        return NULL;
    }
    s->kv = calloc((size_t)sh->n_layer, sizeof *s->kv);
    s->history = malloc((size_t)s->n_ctx * sizeof *s->history);
    s->logits = calloc((size_t)sh->n_vocab, sizeof *s->logits);
    s->ws = tport_workspace_new();
    s->cache = tport_eval_cache_new();
    s->kv_id = tport_session_next_kv_id();
    tport_status st = s->kv && s->history && s->logits && s->ws && s->cache ? TPORT_STATUS_OK
                      : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_new: out of memory");
    for (int32_t i = m->layer_begin; i < m->layer_end && st == TPORT_STATUS_OK; i++)
        st = place_layer(s, i);
    if (st != TPORT_STATUS_OK) {
        tport_session_free(s);
        return NULL;
    }
    return s;
}

void tport_session_free(tport_session *s) {
    if (!s)
        return;
    tport_eval_cache_free(s->cache); /* its graph borrows ws and reads kv */
    for (int32_t i = 0; s->kv && i < s->m->sh.n_layer; i++)
        free_layer(&s->kv[i]);
    free(s->kv);
    free(s->history);
    free(s->logits);
    tport_workspace_free(s->ws);
    free(s);
}

/* One more evaluation in the counts: what its tally says it moved. */
static void count_eval(tport_session *s) {
    s->n_evals++;
    s->total.n_splits += s->tally.stats.n_splits;
    s->total.n_uploads += s->tally.stats.n_uploads;
    s->total.n_downloads += s->tally.stats.n_downloads;
    s->total.bytes_up += s->tally.stats.bytes_up;
    s->total.bytes_down += s->tally.stats.bytes_down;
}

void tport_session_advance(tport_session *s, const tport_token *ids, int32_t n) {
    count_eval(s);
    memcpy(s->history + s->pos, ids, (size_t)n * sizeof *ids);
    s->pos += n;
    s->have_logits = true;
}

/* Evaluates io at the current position in batches through the model's
 * layers (none for the head alone); no recovery. */
static tport_status eval_io(tport_session *s, const tport_stage_io *io, float *logits_all) {
    const tport_model *m = s->m;
    size_t row = (size_t)m->sh.n_embd;
    for (int32_t done = 0; done < io->n;) {
        int32_t chunk = io->n - done < s->n_batch ? io->n - done : s->n_batch;
        tport_model_eval e = {
            .m = m, .kv = s->kv, .n_ctx = s->n_ctx, .pos = s->pos,
            .ids = io->ids ? io->ids + done : NULL,
            .hidden_in = io->hidden_in ? io->hidden_in + (size_t)done * row : NULL, .n = chunk,
            .layer_begin = io->head_only ? m->sh.n_layer : m->layer_begin,
            .layer_end = io->head_only ? m->sh.n_layer : m->layer_end,
            .n_threads = s->n_threads, .backend = m->backend,
            .logits = s->logits, .tally = &s->tally, .ws = s->ws, .cache = s->cache,
            .watch = s->replaying ? NULL : s->watch, .watch_user = s->watch_user,
        };
        if (logits_all) {
            e.logits = logits_all + (size_t)done * (size_t)m->sh.n_vocab;
            e.logits_all = true;
        }
        if (io->hidden_out) {
            /* all rows in place, or the last row (the last chunk's wins) */
            e.hidden_out = io->out_last_only ? io->hidden_out : io->hidden_out + (size_t)done * row;
            e.hidden_out_last = io->out_last_only;
            e.hidden_normed = io->normed;
        }
        tport_status st = tport_model_eval_batch(&e);
        if (st != TPORT_STATUS_OK)
            return st;
        count_eval(s);
        if (!io->head_only)
            s->pos += chunk;
        done += chunk;
    }
    return TPORT_STATUS_OK;
}

static tport_status eval_tokens(tport_session *s, const tport_token *ids, int32_t n, float *logits_all) {
    tport_stage_io io = {.ids = ids, .n = n};
    tport_status st = eval_io(s, &io, logits_all);
    if (st == TPORT_STATUS_OK && logits_all) /* the last token's, as after tport_session_eval */
        memcpy(s->logits, logits_all + (size_t)(n - 1) * (size_t)s->m->sh.n_vocab,
               (size_t)s->m->sh.n_vocab * sizeof *s->logits);
    return st;
}

/* After a lost device: weights back to the file's bytes, caches that were
 * on a lost device to host memory (or another device), and the tokens so
 * far evaluated again to refill them. */
static tport_status recover(tport_session *s) {
    int32_t replay = s->pos;
    tport_eval_cache_drop(s->cache); /* its graph holds the old caches' places */
    s->kv_id = tport_session_next_kv_id(); /* and so may a batch's */
    pthread_mutex_lock(&s->m->lost_lock);
    tport_model_release_weights(s->m, true);
    pthread_mutex_unlock(&s->m->lost_lock);
    for (int32_t i = 0; i < s->m->sh.n_layer; i++) {
        tport_kv_layer *kv = &s->kv[i];
        if (!kv->k_res.backend || !tport_sched_backend_lost(kv->k_res.backend))
            continue;
        free_layer(kv);
        tport_status st = place_layer(s, i);
        if (st)
            return st;
    }
    tport_log(TPORT_LOG_WARN, "re-placed the lost backend's work on the remaining backends; evaluating %d "
              "token%s again", (int)replay, replay == 1 ? "" : "s");
    s->pos = 0;
    s->replaying = true;
    tport_status st = replay ? eval_tokens(s, s->history, replay, NULL) : TPORT_STATUS_OK;
    s->replaying = false;
    return st;
}

static tport_status session_eval(tport_session *s, const tport_token *ids, int32_t n, float *logits_all) {
    if (!s || !ids || n <= 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: no tokens");
    if (n > s->n_ctx - s->pos)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "session_eval: %d tokens at position %d do not fit the context of %d",
                           (int)n, (int)s->pos, (int)s->n_ctx);
    int32_t start = s->pos;
    tport_status st = eval_tokens(s, ids, n, logits_all);
    /* a lost device costs only that device: the user's forced backend
     * excepted, there is always another one to finish on */
    for (int tries = 0; (st == TPORT_STATUS_DEVICE_LOST) && !s->m->backend && tries < MAX_RECOVERIES; tries++) {
        tport_log(TPORT_LOG_WARN, "%s", tport_last_error());
        s->pos = start;
        st = recover(s);
        if (st == TPORT_STATUS_OK)
            st = eval_tokens(s, ids, n, logits_all);
    }
    if (st != TPORT_STATUS_OK) {
        s->have_logits = false;
        return st;
    }
    memcpy(s->history + start, ids, (size_t)n * sizeof *ids);
    s->have_logits = true;
    if (n == 1 && !s->plan_logged && tport_log_level() >= TPORT_LOG_INFO) {
        char plan[4096];
        s->plan_logged = true;
        if (tport_session_plan(s, s->m, plan, sizeof plan) > 0)
            tport_log(TPORT_LOG_INFO, "plan for one token:\n%s", plan);
    }
    return TPORT_STATUS_OK;
}

tport_status tport_session_eval(tport_session *s, const tport_token *ids, int32_t n) {
    return session_eval(s, ids, n, NULL);
}

tport_status tport_session_eval_all(tport_session *s, const tport_token *ids, int32_t n, float *logits) {
    if (!logits)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval_all: nowhere to put the logits");
    return session_eval(s, ids, n, logits);
}

tport_status tport_session_eval_stage(tport_session *s, const tport_stage_io *io) {
    if (!s || !io || io->n <= 0 || !io->ids == !io->hidden_in)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: no tokens, or both ids and a hidden state");
    const tport_model *m = s->m;
    bool whole = m->layer_begin == 0 && m->layer_end == m->sh.n_layer && m->has_embedding && m->has_head;
    if (io->ids && !io->hidden_out && !io->head_only && whole)
        return tport_session_eval(s, io->ids, io->n); /* the ordinary path, with recovery */
    if (io->normed && !io->hidden_out)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: normed applies to a hidden state out");
    if (io->head_only && (!io->hidden_in || io->hidden_out))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: the head alone takes a hidden state "
                           "and gives logits");
    if (!io->head_only && io->n > s->n_ctx - s->pos)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "session_eval: %d tokens at position %d do not fit the context of %d",
                           (int)io->n, (int)s->pos, (int)s->n_ctx);
    int32_t start = s->pos;
    s->have_logits = false;
    tport_status st = eval_io(s, io, NULL);
    if (st != TPORT_STATUS_OK)
        return st;
    if (io->ids)
        memcpy(s->history + start, io->ids, (size_t)io->n * sizeof *io->ids);
    s->have_logits = !io->hidden_out;
    return TPORT_STATUS_OK;
}

const float *tport_session_logits(const tport_session *s) {
    return s && s->have_logits ? s->logits : NULL;
}

int32_t tport_session_pos(const tport_session *s) { return s ? s->pos : 0; }

tport_status tport_session_watch_weights(tport_session *s, tport_weight_input_fn fn, void *user) {
    if (!s)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_watch_weights: no session");
    s->watch = fn;
    s->watch_user = fn ? user : NULL;
    return TPORT_STATUS_OK;
}

void tport_session_graph_counts(const tport_session *s, int64_t *built, int64_t *reused) {
    tport_eval_cache_counts(s ? s->cache : NULL, built, reused);
}

int32_t tport_session_placement(const tport_session *s, int32_t i, const char **backend, const char **op) {
    if (!s || i < 0 || i >= s->tally.n_rows)
        return 0;
    if (backend)
        *backend = s->tally.rows[i].backend;
    if (op)
        *op = s->tally.rows[i].op;
    return s->tally.rows[i].count;
}

tport_status tport_session_stats(const tport_session *s, tport_sched_stats *last, tport_sched_stats *total,
                                 int32_t *n_evals) {
    if (!s)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_stats: no session");
    if (last)
        *last = s->tally.stats;
    if (total)
        *total = s->total;
    if (n_evals)
        *n_evals = s->n_evals;
    return TPORT_STATUS_OK;
}

tport_tensor *tport_session_cache_leaf(tport_ctx *ctx, const tport_session *s, int32_t il, bool value) {
    const tport_model_shape *sh = &s->m->sh;
    const tport_kv_layer *kv = &s->kv[il];
    tport_tensor *t = tport_new_tensor_3d(ctx, kv->type, sh->head_dim, sh->n_head_kv, kv->n_cells);
    if (value && tport_shape_v_in_k(sh))
        value = false; /* V's rows are K's */
    if (t) {
        tport_tensor_set_data(t, value ? kv->v : kv->k);
        t->res = value ? kv->v_res : kv->k_res;
    }
    return t;
}

tport_status tport_session_compute(const tport_session *s, tport_graph *g) {
    tport_compute_params cp = {.n_threads = s->n_threads, .backend = s->m->backend};
    return tport_graph_compute(g, &cp);
}

int32_t tport_session_n_ctx(const tport_session *s) { return s ? s->n_ctx : 0; }

const tport_token *tport_session_tokens(const tport_session *s) { return s ? s->history : NULL; }

tport_status tport_session_truncate(tport_session *s, int32_t n) {
    if (!s || n < 0 || n > s->pos)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_truncate: %d is not in [0, %d]", (int)n,
                           s ? (int)s->pos : 0);
    /* a ring (sliding-window layer) has overwritten what the window before
     * n needs once more than a batch less one was evaluated past it */
    for (int32_t il = s->m->layer_begin; n > 0 && il < s->m->layer_end; il++)
        if (s->kv[il].n_cells < s->n_ctx && s->pos - n > s->kv[il].n_cells - s->m->sh.n_swa)
            return tport_error(TPORT_STATUS_UNSUPPORTED, "session_truncate: layer %d keeps only a window of %d "
                               "positions; going back %d from %d is not possible", (int)il,
                               (int)s->m->sh.n_swa, (int)(s->pos - n), (int)s->pos);
    /* the positions past n stay in the cache, masked, until overwritten */
    s->pos = n;
    s->have_logits = false;
    return TPORT_STATUS_OK;
}

int32_t tport_session_reuse_prefix(tport_session *s, const tport_token *prompt, int32_t n) {
    if (!s || n < 0 || (n && !prompt)) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_reuse_prefix: no session or no prompt");
        return -1;
    }
    int32_t k = 0;
    while (k < s->pos && k < n && s->history[k] == prompt[k])
        k++;
    if (k == n && n > 0)
        k = n - 1; /* the last token again, for its logits */
    if (tport_session_truncate(s, k) != TPORT_STATUS_OK) {
        /* a sliding-window ring has overwritten what the prefix needs */
        tport_session_reset(s);
        k = 0;
    }
    return k;
}

size_t tport_session_layer_cache_bytes(const tport_session *s, int32_t il) {
    if (!s || il < s->m->layer_begin || il >= s->m->layer_end)
        return 0;
    return 2 * layer_elements(s, il) * kv_element_size(s);
}

void tport_session_reset(tport_session *s) {
    if (!s)
        return;
    s->pos = 0;
    s->have_logits = false;
    s->n_evals = 0;
    memset(&s->total, 0, sizeof s->total);
}

