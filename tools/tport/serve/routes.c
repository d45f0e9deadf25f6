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
    bool tools = req->tool_choice != SERVE_TOOLS_NONE;
    if (srv->jinja.tmpl)
        return chat_jinja_prompt(srv->model, &srv->jinja, req->messages, req->n_messages,
                                 tools ? req->tools_json : NULL, ids, err);
    /* the built-in formats have no place for tools or their results */
    for (int i = 0; i < req->n_messages; i++)
        if (req->messages[i].tool_json || req->messages[i].role == SERVE_ROLE_TOOL) {
            snprintf(err->message, sizeof err->message, "tool calls and results in 'messages' need the model's own "
                     "chat template (tokenizer.chat_template); this model is served with the built-in %s format",
                     chat_name(srv->chat));
            err->param = "messages";
            return -1;
        }
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

/* What to generate, from the request: sampler settings, biases checked
 * against the vocabulary, the grammar parsed.  false with a 400 sent. */
static bool make_spec(serve_conn *c, const serve_request *req, gen_spec *g, enum MHD_Result *res) {
    serve_server *srv = c->srv;
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
    tport_sampler *probe = tport_sampler_new(&sp);
    if (!probe) {
        *res = serve_send_error(c, 400, NULL, "%s", tport_last_error());
        return false;
    }
    tport_sampler_free(probe);
    g->sp = sp;
    g->n_choices = req->n_choices;
    g->logprobs = req->logprobs;
    g->top_logprobs = req->top_logprobs;
    g->ignore_eos = req->ignore_eos;
    int32_t n_vocab = tport_model_n_vocab(srv->model);
    if (req->n_bias && !(g->bias = malloc((size_t)req->n_bias * sizeof *g->bias))) {
        *res = serve_send_error(c, 500, NULL, "out of memory");
        return false;
    }
    for (int i = 0; i < req->n_bias; i++) {
        if (req->bias_ids[i] >= n_vocab) {
            *res = serve_send_error(c, 400, "logit_bias", "'logit_bias' names token %d, outside the vocabulary "
                                    "[0, %d)", (int)req->bias_ids[i], (int)n_vocab);
            return false;
        }
        g->bias[g->n_bias++] = (tport_logit_bias){req->bias_ids[i], req->bias_vals[i]};
    }
    for (int i = 0; i < req->n_stop; i++)
        if (!(g->stop[g->n_stop++] = strdup(req->stop[i]))) {
            *res = serve_send_error(c, 500, NULL, "out of memory");
            return false;
        }
    /* gpt-oss: every chat reply is split into its channels */
    g->harmony = req->kind == SERVE_REQ_CHAT && srv->jinja.tmpl && srv->tools == TOOL_FMT_HARMONY;
    if (req->tool_choice != SERVE_TOOLS_NONE) {
        if (!srv->jinja.tmpl || srv->tools == TOOL_FMT_NONE) {
            *res = serve_send_error(c, 400, "tools", "'tools': the model's chat template shows no tool-call format "
                                    "tport serve parses (Hermes <tool_call>, Llama 3.x JSON, Mistral [TOOL_CALLS], gpt-oss "
                                    "harmony, DeepSeek)");
            return false;
        }
        g->tool_format = srv->tools;
        if (req->tool_choice >= SERVE_TOOLS_REQUIRED) { /* a call it must make: a grammar */
            if (req->grammar) {
                *res = serve_send_error(c, 400, "tool_choice", "'tool_choice' \"required\" or a named function "
                                        "cannot be combined with '%s'", req->grammar_param);
                return false;
            }
            serve_error err = {.param = NULL};
            char *gbnf = tool_grammar(srv->tools, req->tools_json,
                                      req->tool_choice == SERVE_TOOLS_NAMED ? req->tool_name : NULL, &err);
            g->grammar = gbnf ? tport_grammar_parse(gbnf, strlen(gbnf), NULL) : NULL;
            if (gbnf && !g->grammar)
                snprintf(err.message, sizeof err.message, "'tools': %s", tport_last_error());
            free(gbnf);
            if (!g->grammar) {
                *res = serve_send_error(c, 400, err.param ? err.param : "tools", "%s", err.message);
                return false;
            }
        }
    }
    if (req->grammar && !(g->grammar = tport_grammar_parse(req->grammar, strlen(req->grammar), NULL))) {
        *res = serve_send_error(c, 400, req->grammar_param, "'%s': %s", req->grammar_param, tport_last_error());
        return false;
    }
    g->max_tokens = req->max_tokens > 0 ? (int32_t)req->max_tokens : srv->default_max_tokens;
    return true;
}

/* Runs every choice to its end on the slot and answers with all of them. */
static enum MHD_Result answer_whole(serve_conn *c, gen_spec *spec, int slot, bool chat, const char *id) {
    serve_server *srv = c->srv;
    cJSON *body = serve_envelope(srv, id, chat, false);
    cJSON *choices = cJSON_GetObjectItemCaseSensitive(body, "choices");
    int32_t n_gen = 0, n_cached = 0;
    bool left = false;
    const char *error = NULL;
    char errbuf[256];
    for (int i = 0; i < spec->n_choices && !left && !error; i++) {
        gen_job job;
        if (gen_init(&job, srv->model, srv->slots.sessions[slot], &srv->slots.batcher, slot, srv->n_ctx, spec, i,
                     chat ? srv->end_of_turn : NULL)) {
            while (!job.done) {
                if (atomic_load(&srv->stopping))
                    gen_cut(&job);
                else if (serve_client_gone(c))
                    left = true, gen_cut(&job); /* stop spending the slot on nobody */
                gen_step(&job);
            }
        }
        n_gen += job.n_gen;
        serve_count_job(srv, &job);
        if (i == 0)
            n_cached = job.n_cached;
        char *text = job.failed ? NULL : gen_take(&job);
        if (job.failed || !text) {
            snprintf(errbuf, sizeof errbuf, "%s", job.failed ? job.error : "out of memory");
            error = errbuf;
        } else {
            int32_t from, to;
            gen_take_logprobs(&job, &from, &to);
            cJSON *lp = spec->logprobs ? serve_logprobs(srv->model, &job, from, to, chat) : NULL;
            cJSON *choice = serve_choice(chat, false, i, text, true, job.finish_reason, lp);
            if (spec->harmony)
                serve_choice_harmony(choice, false, text, spec->tool_format != 0,
                                     atomic_fetch_add(&srv->next_id, 1));
            else if (spec->tool_format)
                serve_choice_tools(choice, false, spec->tool_format, text,
                                   atomic_fetch_add(&srv->next_id, 1));
            cJSON_AddItemToArray(choices, choice);
        }
        free(text);
        gen_free(&job);
    }
    c->n_gen = n_gen;
    slot_release(&srv->slots, slot);
    if (left) {
        cJSON_Delete(body);
        c->status = SERVE_STATUS_CLIENT_GONE;
        return MHD_NO;
    }
    if (error) {
        cJSON_Delete(body);
        return serve_send_error(c, 500, NULL, "%s", error);
    }
    serve_add_usage(body, spec->n_prompt, n_gen, n_cached);
    return serve_send_json(c, 200, body);
}

enum MHD_Result serve_completion(serve_conn *c, serve_request *req, bool chat) {
    serve_server *srv = c->srv;
    if (!tport_model_generates(srv->model))
        return serve_send_error(c, 400, NULL, "the model (%s) is an encoder: it gives embeddings "
                                "(POST /v1/embeddings), not completions", tport_model_arch(srv->model));
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
    gen_spec spec = {.prompt = ids, .n_prompt = n};
    enum MHD_Result res;
    if (!make_spec(c, req, &spec, &res)) {
        gen_spec_free(&spec);
        return res;
    }
    int slot = -1;
    slot_wait w = atomic_load(&srv->stopping) ? SLOT_CLOSING
                                              : slot_acquire(&srv->slots, ids, n, serve_client_gone, c, &slot);
    if (w != SLOT_OK) {
        gen_spec_free(&spec);
        if (w == SLOT_GAVE_UP) {
            c->status = SERVE_STATUS_CLIENT_GONE;
            return MHD_NO; /* nobody to answer */
        }
        return serve_send_error(c, 503, NULL, w == SLOT_QUEUE_FULL ? "the server is busy: every slot is in use "
                                "and the queue is full; retry later" : "the server is shutting down");
    }
    char id[48];
    snprintf(id, sizeof id, "%s-%llu", chat ? "chatcmpl" : "cmpl",
             (unsigned long long)atomic_fetch_add(&srv->next_id, 1));
    if (req->stream)
        return serve_stream_start(c, &spec, slot, chat, req->include_usage, id);
    res = answer_whole(c, &spec, slot, chat, id);
    gen_spec_free(&spec);
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
    {"GET", "/metrics", -1, serve_metrics_page},
    {"GET", "/slots", -1, serve_slots_page},
    {"GET", "/models", -1, models},
    {"POST", "/v1/completions", SERVE_REQ_COMPLETION, NULL},
    {"POST", "/completions", SERVE_REQ_COMPLETION, NULL},
    {"POST", "/v1/chat/completions", SERVE_REQ_CHAT, NULL},
    {"POST", "/chat/completions", SERVE_REQ_CHAT, NULL},
    {"POST", "/tokenize", SERVE_REQ_TOKENIZE, NULL},
    {"POST", "/detokenize", SERVE_REQ_DETOKENIZE, NULL},
    /* embeddings.c parses its own body */
    {"POST", "/v1/embeddings", -1, serve_embeddings},
    {"POST", "/embeddings", -1, serve_embeddings},
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
    if (r->kind == SERVE_REQ_COMPLETION || r->kind == SERVE_REQ_CHAT)
        atomic_fetch_add(&c->srv->metrics.requests, 1);
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
