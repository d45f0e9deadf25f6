/* Private to src/model: the session's state, shared by session.c (evaluation),
 * session_shift.c (context shift) and session_state.c (sessions on disk). */
#ifndef TPORT_MODEL_SESSION_H
#define TPORT_MODEL_SESSION_H

#include "model/model.h"
#include "registry/registry.h"

struct tport_session {
    tport_model *m;
    int32_t n_ctx, n_batch, pos;
    int n_threads;
    tport_type_id kv_type;   /* f16 (default) or f32                 */
    tport_kv_layer *kv;      /* per layer                            */
    uint64_t kv_id;          /* new whenever kv is placed (new, recover):
                                a batch's kept graph names caches by it */
    tport_token *history;    /* the n_ctx tokens evaluated so far    */
    float *logits;
    bool have_logits;
    tport_workspace *ws;     /* every evaluation's intermediates      */
    tport_eval_cache *cache; /* the last evaluation's graph, kept     */
    tport_node_tally tally;  /* what ran where in the last evaluation */
    int32_t n_evals;         /* evaluations since the last reset     */
    tport_sched_stats total; /* summed over them                     */
    bool plan_logged;        /* TPORT_LOG=info shows the plan once   */
    tport_weight_input_fn watch; /* tport_session_watch_weights      */
    void *watch_user;
    bool replaying;          /* recover: the steps were reported once */
    /* the cache probe's answer for the last backend asked: every layer
     * has the same cache shape, so one question per backend, not layer */
    const tport_active_backend *probed;
    bool probed_ok;
};

/* A leaf of ctx bound to layer il's K cache (V with value), [head_dim,
 * n_head_kv, n_ctx] in host memory or a device's (as the attention reads
 * it), or NULL. */
tport_tensor *tport_session_cache_leaf(tport_ctx *ctx, const tport_session *s, int32_t il, bool value);
/* Computes g (small graphs over the caches: shift, save, load) with the
 * session's threads and forced backend. */
tport_status tport_session_compute(const tport_session *s, tport_graph *g);
/* A number no session's caches had before (process-wide). */
uint64_t tport_session_next_kv_id(void);
/* After n tokens ids were evaluated into s at its position (its logits
 * written, the tally filled): the position, history and counts move on. */
void tport_session_advance(tport_session *s, const tport_token *ids, int32_t n);

#endif
