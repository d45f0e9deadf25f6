/* GET /metrics (Prometheus text format, version 0.0.4) with llama-server's
 * metric names where it has one, so its dashboards and scrapers work
 * unchanged, plus tport's own for what it lacks (prompt-cache hits); and
 * GET /slots, llama-server's slot list (the fields tport has). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

void serve_count_job(serve_server *srv, const gen_job *j) {
    serve_metrics *m = &srv->metrics;
    if (j->failed)
        atomic_fetch_add(&m->requests_failed, 1);
    if (!j->started)
        return;
    atomic_fetch_add(&m->prompt_tokens, (uint64_t)(j->n_prompt - j->n_cached));
    atomic_fetch_add(&m->prompt_cached, (uint64_t)j->n_cached);
    atomic_fetch_add(&m->predicted, (uint64_t)j->n_gen);
    atomic_fetch_add(&m->decodes, (uint64_t)j->n_gen + 1);
    atomic_fetch_add(&m->prompt_us, (uint64_t)(j->prompt_ms * 1e3));
    atomic_fetch_add(&m->predicted_us, (uint64_t)(j->gen_ms * 1e3));
}

typedef struct page {
    char *s;
    size_t n, cap;
} page;

static void metric(page *p, const char *name, const char *type, const char *help, double value) {
    char line[512];
    int k = snprintf(line, sizeof line, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, value);
    if (k <= 0 || (size_t)k >= sizeof line)
        return;
    if (p->n + (size_t)k + 1 > p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 4096;
        char *b = realloc(p->s, cap);
        if (!b)
            return;
        p->s = b;
        p->cap = cap;
    }
    memcpy(p->s + p->n, line, (size_t)k + 1);
    p->n += (size_t)k;
}

enum MHD_Result serve_metrics_page(serve_conn *c) {
    serve_metrics *m = &c->srv->metrics;
    int idle, busy, waiting;
    slot_pool_counts(&c->srv->slots, &idle, &busy, &waiting);
    double prompt = (double)atomic_load(&m->prompt_tokens), pred = (double)atomic_load(&m->predicted);
    double prompt_s = (double)atomic_load(&m->prompt_us) / 1e6, pred_s = (double)atomic_load(&m->predicted_us) / 1e6;
    page p = {0};
    metric(&p, "llamacpp:prompt_tokens_total", "counter", "Number of prompt tokens processed.", prompt);
    metric(&p, "llamacpp:prompt_seconds_total", "counter", "Prompt process time", prompt_s);
    metric(&p, "llamacpp:tokens_predicted_total", "counter", "Number of generation tokens processed.", pred);
    metric(&p, "llamacpp:tokens_predicted_seconds_total", "counter", "Predict process time", pred_s);
    metric(&p, "llamacpp:n_decode_total", "counter", "Total number of llama_decode() calls",
           (double)atomic_load(&m->decodes));
    metric(&p, "llamacpp:prompt_tokens_seconds", "gauge", "Average prompt throughput in tokens/s.",
           prompt_s > 0 ? prompt / prompt_s : 0);
    metric(&p, "llamacpp:predicted_tokens_seconds", "gauge", "Average generation throughput in tokens/s.",
           pred_s > 0 ? pred / pred_s : 0);
    metric(&p, "llamacpp:requests_processing", "gauge", "Number of requests processing.", busy);
    metric(&p, "llamacpp:requests_deferred", "gauge", "Number of requests deferred.", waiting);
    metric(&p, "tport:slots_idle", "gauge", "Slots without a request.", idle);
    metric(&p, "tport:requests_total", "counter", "Completion and chat requests received.",
           (double)atomic_load(&m->requests));
    metric(&p, "tport:requests_failed_total", "counter", "Generations that ended in an error.",
           (double)atomic_load(&m->requests_failed));
    metric(&p, "tport:prompt_tokens_cached_total", "counter",
           "Prompt tokens taken from a slot's cache instead of evaluated (prompt cache hits).",
           (double)atomic_load(&m->prompt_cached));
    batcher *bt = &c->srv->slots.batcher;
    metric(&p, "tport:decode_steps_total", "counter",
           "Steps (one evaluation each for the tokens and prompt chunks of every busy slot).",
           (double)atomic_load(&bt->steps));
    metric(&p, "tport:decode_step_tokens_total", "counter", "Tokens evaluated in those steps.",
           (double)atomic_load(&bt->rows));
    metric(&p, "tport:decode_steps_shared_total", "counter", "Steps that held the tokens of several slots.",
           (double)atomic_load(&bt->shared));
    metric(&p, "tport:decode_step_seconds_total", "counter",
           "Time the model spent in those steps; the rest of a busy server's time is the serving between them.",
           (double)atomic_load(&bt->busy_us) / 1e6);
    metric(&p, "tport:admitted_total", "counter", "Requests whose prompt has been in a step.",
           (double)atomic_load(&bt->admitted));
    metric(&p, "tport:admission_steps_total", "counter",
           "Steps from each admitted request's taking its slot to the end of its prompt's first step, summed "
           "(1 a request: its prompt in the next step).",
           (double)atomic_load(&bt->admit_steps));
    struct MHD_Response *r =
        MHD_create_response_from_buffer(p.n, p.s ? p.s : (char *)"", p.s ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(p.s);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; version=0.0.4");
    c->status = 200;
    enum MHD_Result ok = MHD_queue_response(c->mhd, 200, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result serve_slots_page(serve_conn *c) {
    serve_server *srv = c->srv;
    slot_pool *p = &srv->slots;
    cJSON *arr = cJSON_CreateArray();
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->n; i++) {
        cJSON *s = cJSON_CreateObject();
        cJSON_AddNumberToObject(s, "id", i);
        cJSON_AddNumberToObject(s, "n_ctx", srv->n_ctx);
        cJSON_AddBoolToObject(s, "is_processing", p->busy[i]);
        /* an idle slot's cache (what the next request may reuse); a busy
         * one's session belongs to its request's thread */
        if (!p->busy[i])
            cJSON_AddNumberToObject(s, "n_cached", tport_session_pos(p->sessions[i]));
        cJSON_AddItemToArray(arr, s);
    }
    pthread_mutex_unlock(&p->lock);
    return serve_send_json(c, 200, arr);
}
