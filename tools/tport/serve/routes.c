/* The endpoints: GET /health, GET /v1/models, POST /v1/completions,
 * POST /v1/chat/completions, POST /tokenize, POST /detokenize. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "serve.h"
#include "stream.h"

static enum MHD_Result health(serve_conn *c) {
    int idle, busy, waiting;
    slot_pool_counts(&c->srv->slots, &idle, &busy, &waiting);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "status", atomic_load(&c->srv->stopping) ? "shutting down" : "ok");
    cJSON_AddNumberToObject(r, "slots_idle", idle);
    cJSON_AddNumberToObject(r, "slots_processing", busy);
    cJSON_AddNumberToObject(r, "requests_waiting", waiting);
    return serve_send_json(c, atomic_load(&c->srv->stopping) ? 503 : 200, r);
}

static enum MHD_Result models(serve_conn *c) {
    const serve_server *srv = c->srv;
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "object", "list");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(r, "data"), m);
    cJSON_AddStringToObject(m, "id", srv->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)srv->created);
    cJSON_AddStringToObject(m, "owned_by", "tensorport");
    cJSON *meta = cJSON_AddObjectToObject(m, "meta");
    cJSON_AddNumberToObject(meta, "n_vocab", tport_model_n_vocab(srv->model));
    cJSON_AddNumberToObject(meta, "n_ctx_train", tport_model_n_ctx(srv->model));
    cJSON_AddNumberToObject(meta, "n_ctx", srv->n_ctx);
    cJSON_AddStringToObject(meta, "chat_template", srv->jinja.tmpl ? "jinja" : chat_name(srv->chat));
    return serve_send_json(c, 200, r);
}

static enum MHD_Result tokenize(serve_conn *c, const serve_request *req) {
    tport_token *ids = NULL;
    serve_error err;
    int32_t n = prompt_from_text(c->srv->model, req->content, req->add_special, &ids, &err);
    if (n < 0)
        return serve_send_error(c, 400, NULL, "%s", err.message);
    cJSON *r = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(r, "tokens");
    for (int32_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(ids[i]));
    free(ids);
    return serve_send_json(c, 200, r);
}

static enum MHD_Result detokenize(serve_conn *c, const serve_request *req) {
    const tport_model *m = c->srv->model;
    int32_t n = tport_detokenize(m, req->tokens, req->n_tokens, NULL, 0);
    if (n < 0)
        return serve_send_error(c, 400, "tokens", "%s", tport_last_error());
    char *buf = malloc((size_t)n + 1);
    char *text = buf ? (tport_detokenize(m, req->tokens, req->n_tokens, buf, n), utf8_clean(buf, (size_t)n)) : NULL;
    free(buf);
    if (!text)
        return serve_send_error(c, 500, NULL, "out of memory");
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "content", text);
    free(text);
    return serve_send_json(c, 200, r);
}

/* The prompt as tokens: the rendered chat, or the completion prompt. */
static int32_t prompt_tokens(serve_conn *c, const serve_request *req, bool chat, tport_token **ids, serve_error *err) {
    const serve_server *srv = c->srv;
    if (!chat)
        return req->prompt_is_ids ? prompt_from_ids(srv->model, req->prompt_ids, req->n_prompt_ids, ids, err)
                                  : prompt_from_text(srv->model, req->prompt, true, ids, err);
    if (srv->jinja.tmpl)
        return chat_jinja_prompt(srv->model, &srv->jinja, req->messages, req->n_messages, ids, err);
    chat_prompt p;
    if (!chat_render(srv->chat, req->messages, req->n_messages, &p)) {
        chat_prompt_free(&p);
        snprintf(err->message, sizeof err->message, "out of memory");
        return -1;
    }
    int32_t n = prompt_from_chat(srv->model, &p, chat_markers(srv->chat), ids, err);
    chat_prompt_free(&p);
    return n;
}

static tport_sampler *make_sampler(serve_server *srv, const serve_request *req) {
    tport_sampler_params sp = tport_sampler_defaults();
    if (req->have_temperature)
        sp.temperature = req->temperature;
    if (req->have_top_p)
        sp.top_p = req->top_p;
    if (req->have_top_k)
        sp.top_k = req->top_k;
    if (req->have_min_p)
        sp.min_p = req->min_p;
    if (req->have_presence)
        sp.presence_penalty = req->presence_penalty;
    if (req->have_frequency)
        sp.frequency_penalty = req->frequency_penalty;
    if (req->have_repeat_penalty)
        sp.repeat_penalty = req->repeat_penalty;
    if (req->have_repeat_last_n)
        sp.repeat_last_n = req->repeat_last_n;
    /* without a seed, each request draws its own */
    sp.seed = req->have_seed ? req->seed
                             : (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ atomic_fetch_add(&srv->next_id, 1);
    return tport_sampler_new(&sp);
}

enum MHD_Result serve_completion(serve_conn *c, serve_request *req, bool chat) {
    serve_server *srv = c->srv;
    serve_error err = {.param = NULL};
    tport_token *ids = NULL;
    int32_t n = prompt_tokens(c, req, chat, &ids, &err);
    const char *param = chat ? "messages" : "prompt";
    if (n < 0)
        return serve_send_error(c, 400, err.param ? err.param : param, "%s", err.message);
    c->n_prompt = n;
    if (n == 0 || n >= srv->n_ctx) {
        free(ids);
        if (!n)
            return serve_send_error(c, 400, param, "the prompt is empty");
        return serve_send_error(c, 400, param, "the prompt has %d tokens but the context holds %d", (int)n,
                                (int)srv->n_ctx);
    }
    tport_sampler *sm = make_sampler(srv, req);
    if (!sm) {
        free(ids);
        return serve_send_error(c, 400, NULL, "%s", tport_last_error());
    }
    int slot = -1;
    slot_wait w = atomic_load(&srv->stopping) ? SLOT_CLOSING : slot_acquire(&srv->slots, serve_client_gone, c, &slot);
    if (w != SLOT_OK) {
        free(ids);
        tport_sampler_free(sm);
        if (w == SLOT_GAVE_UP) {
            c->status = SERVE_STATUS_CLIENT_GONE;
            return MHD_NO; /* nobody to answer */
        }
        return serve_send_error(c, 503, NULL, w == SLOT_QUEUE_FULL ? "the server is busy: every slot is in use "
                                "and the queue is full; retry later" : "the server is shutting down");
    }
    int32_t max_tokens = req->max_tokens > 0 ? (int32_t)req->max_tokens : srv->default_max_tokens;
    gen_job job;
    if (!gen_init(&job, srv->model, srv->slots.sessions[slot], srv->n_ctx, sm, ids, n, max_tokens, req->stop,
                  req->n_stop, chat ? srv->end_of_turn : NULL)) {
        gen_free(&job);
        tport_sampler_free(sm);
        slot_release(&srv->slots, slot);
        return serve_send_error(c, 500, NULL, "out of memory");
    }
    char id[48];
    snprintf(id, sizeof id, "%s-%llu", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)atomic_fetch_add(&srv->next_id, 1));
    if (req->stream)
        return serve_stream_start(c, &job, sm, slot, chat, req->include_usage, id);

    bool left = false;
    while (!job.done) {
        if (atomic_load(&srv->stopping))
            gen_cut(&job);
        else if (serve_client_gone(c))
            left = true, gen_cut(&job); /* stop spending the slot on nobody */
        gen_step(&job);
    }
    c->n_gen = job.n_gen;
    tport_sampler_free(sm);
    slot_release(&srv->slots, slot);
    char *text = gen_take(&job);
    enum MHD_Result res;
    if (left) {
        c->status = SERVE_STATUS_CLIENT_GONE;
        res = MHD_NO;
    } else if (job.failed || !text) {
        res = serve_send_error(c, 500, NULL, "%s", text ? job.error : "out of memory");
    } else {
        cJSON *body = serve_body(srv, id, chat, false, text, true, job.finish_reason);
        serve_add_usage(body, job.n_prompt, job.n_gen);
        res = serve_send_json(c, 200, body);
    }
    free(text);
    gen_free(&job);
    return res;
}

typedef struct route {
    const char *method, *path;
    int kind; /* a serve_kind, or -1 for GET routes */
    enum MHD_Result (*get)(serve_conn *c);
} route;

static const route routes[] = {
    {"GET", "/health", -1, health},
    {"GET", "/v1/models", -1, models},
    {"GET", "/models", -1, models},
    {"POST", "/v1/completions", SERVE_REQ_COMPLETION, NULL},
    {"POST", "/completions", SERVE_REQ_COMPLETION, NULL},
    {"POST", "/v1/chat/completions", SERVE_REQ_CHAT, NULL},
    {"POST", "/chat/completions", SERVE_REQ_CHAT, NULL},
    {"POST", "/tokenize", SERVE_REQ_TOKENIZE, NULL},
    {"POST", "/detokenize", SERVE_REQ_DETOKENIZE, NULL},
};

enum MHD_Result serve_route(serve_conn *c) {
    const route *r = NULL;
    bool path_known = false;
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++)
        if (!strcmp(c->path, routes[i].path)) {
            path_known = true;
            if (!strcmp(c->method, routes[i].method))
                r = &routes[i];
        }
    if (!r && path_known)
        return serve_send_error(c, 405, NULL, "%s is not allowed on %s", c->method, c->path);
    if (!r)
        return serve_send_error(c, 404, NULL, "no such endpoint: %s %s", c->method, c->path);
    if (r->get)
        return r->get(c);
    serve_request req;
    serve_error err;
    enum MHD_Result res;
    if (!serve_request_parse((serve_kind)r->kind, c->body, c->body_len, c->srv->n_ctx, &req, &err))
        res = serve_send_error(c, 400, err.param, "%s", err.message);
    else if (r->kind == SERVE_REQ_TOKENIZE)
        res = tokenize(c, &req);
    else if (r->kind == SERVE_REQ_DETOKENIZE)
        res = detokenize(c, &req);
    else
        res = serve_completion(c, &req, r->kind == SERVE_REQ_CHAT);
    serve_request_free(&req);
    return res;
}
