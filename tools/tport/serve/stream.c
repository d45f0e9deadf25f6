/* Streaming responses: libmicrohttpd pulls bytes through a reader callback
 * on the connection's thread; each pull generates at least one token.  A
 * client that disconnects makes the next send fail, and libmicrohttpd then
 * frees the response — which frees the slot at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harmony.h"
#include "stream.h"

typedef struct serve_stream {
    serve_server *srv;
    gen_spec spec;             /* owned: the request is gone by now      */
    gen_job job;
    int choice;                /* the job's index among spec.n_choices    */
    int slot;
    bool chat, include_usage, sent_role, ended;
    char id[48];
    atomic_int refs;           /* the response and the connection        */
    atomic_bool released;      /* the slot went back to the pool         */
    atomic_int n_prompt, n_gen;
    int32_t gen_before, n_cached; /* tokens of the finished choices     */
    char *out;
    size_t out_len, out_pos, out_cap;
    char *hm;                  /* harmony: the choice's text so far       */
    size_t hm_len, sent_r, sent_c; /* ... and the bytes of reasoning and content sent */
} serve_stream;

cJSON *serve_envelope(const serve_server *srv, const char *id, bool chat, bool chunk) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", id);
    cJSON_AddStringToObject(root, "object",
                            chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)srv->created);
    cJSON_AddStringToObject(root, "model", srv->model_id);
    cJSON_AddArrayToObject(root, "choices");
    return root;
}

cJSON *serve_choice(bool chat, bool chunk, int index, const char *text, bool with_role, const char *finish,
                    cJSON *logprobs) {
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddNumberToObject(ch, "index", index);
    if (chat) {
        cJSON *msg = cJSON_AddObjectToObject(ch, chunk ? "delta" : "message");
        if (with_role || !chunk)
            cJSON_AddStringToObject(msg, "role", "assistant");
        if (text)
            cJSON_AddStringToObject(msg, "content", text);
    } else {
        cJSON_AddStringToObject(ch, "text", text ? text : "");
    }
    if (logprobs)
        cJSON_AddItemToObject(ch, "logprobs", logprobs);
    else
        cJSON_AddNullToObject(ch, "logprobs");
    if (finish)
        cJSON_AddStringToObject(ch, "finish_reason", finish);
    else
        cJSON_AddNullToObject(ch, "finish_reason");
    return ch;
}

cJSON *serve_body(const serve_server *srv, const char *id, bool chat, bool chunk, const char *text, bool with_role,
                  const char *finish) {
    cJSON *root = serve_envelope(srv, id, chat, chunk);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(root, "choices"),
                         serve_choice(chat, chunk, 0, text, with_role, finish, NULL));
    return root;
}

void serve_add_usage(cJSON *body, int32_t n_prompt, int32_t n_gen, int32_t n_cached) {
    cJSON *u = cJSON_AddObjectToObject(body, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", n_prompt + n_gen);
    /* OpenAI's name for the prompt tokens a cache supplied */
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "prompt_tokens_details"), "cached_tokens", n_cached);
}

/* A token's text as JSON wants it (valid UTF-8), and its raw bytes. */
static void add_token(cJSON *o, const tport_model *m, tport_token prev, tport_token id, float lp, bool bytes) {
    char piece[256];
    int32_t n = tport_token_to_text(m, prev, id, piece, (int32_t)sizeof piece);
    if (n < 0)
        n = 0;
    char *text = utf8_clean(piece, (size_t)n);
    cJSON_AddStringToObject(o, "token", text ? text : "");
    free(text);
    cJSON_AddNumberToObject(o, "logprob", lp);
    if (bytes) {
        cJSON *b = cJSON_AddArrayToObject(o, "bytes");
        for (int32_t i = 0; i < n; i++)
            cJSON_AddItemToArray(b, cJSON_CreateNumber((unsigned char)piece[i]));
    }
}

cJSON *serve_logprobs(const tport_model *m, const gen_job *j, int32_t from, int32_t to, bool chat) {
    cJSON *root = cJSON_CreateObject();
    cJSON *content = chat ? cJSON_AddArrayToObject(root, "content") : NULL;
    cJSON *tokens = chat ? NULL : cJSON_AddArrayToObject(root, "tokens");
    cJSON *token_lp = chat ? NULL : cJSON_AddArrayToObject(root, "token_logprobs");
    cJSON *top = chat ? NULL : cJSON_AddArrayToObject(root, "top_logprobs");
    cJSON *offset = chat ? NULL : cJSON_AddArrayToObject(root, "text_offset");
    int32_t n_prompt = j->spec->n_prompt;
    for (int32_t k = from; k < to; k++) {
        const gen_logprob *r = &j->lp[k];
        tport_token prev = k ? j->lp[k - 1].id : n_prompt ? j->spec->prompt[n_prompt - 1] : -1;
        if (chat) {
            cJSON *t = cJSON_CreateObject();
            add_token(t, m, prev, r->id, r->logprob, true);
            cJSON *alts = cJSON_AddArrayToObject(t, "top_logprobs");
            for (int a = 0; a < r->n_top; a++) {
                cJSON *o = cJSON_CreateObject();
                add_token(o, m, prev, r->top_id[a], r->top_lp[a], true);
                cJSON_AddItemToArray(alts, o);
            }
            cJSON_AddItemToArray(content, t);
        } else {
            cJSON *t = cJSON_CreateObject();
            add_token(t, m, prev, r->id, r->logprob, false);
            cJSON_AddItemToArray(tokens, cJSON_CreateString(cJSON_GetObjectItem(t, "token")->valuestring));
            cJSON_AddItemToArray(token_lp, cJSON_CreateNumber(r->logprob));
            cJSON_AddItemToArray(offset, cJSON_CreateNumber((double)r->start));
            cJSON_Delete(t);
            cJSON *alts = cJSON_CreateObject();
            for (int a = 0; a < r->n_top; a++) {
                cJSON *o = cJSON_CreateObject();
                add_token(o, m, prev, r->top_id[a], r->top_lp[a], false);
                const char *key = cJSON_GetObjectItem(o, "token")->valuestring;
                if (!cJSON_GetObjectItemCaseSensitive(alts, key)) /* two ids may print alike */
                    cJSON_AddNumberToObject(alts, key, r->top_lp[a]);
                cJSON_Delete(o);
            }
            cJSON_AddItemToArray(top, alts);
        }
    }
    return root;
}

void serve_choice_tools(cJSON *choice, bool chunk, int format, const char *text, uint64_t id) {
    char *content = NULL;
    cJSON *calls = tool_calls_parse((tool_format)format, text, id, &content);
    if (calls) {
        cJSON *msg = cJSON_GetObjectItemCaseSensitive(choice, chunk ? "delta" : "message");
        cJSON_DeleteItemFromObjectCaseSensitive(msg, "content");
        if (content && content[0])
            cJSON_AddStringToObject(msg, "content", content);
        else if (!chunk)
            cJSON_AddNullToObject(msg, "content");
        if (chunk) { /* deltas name their call by index */
            int i = 0;
            for (cJSON *call = calls->child; call; call = call->next)
                cJSON_AddNumberToObject(call, "index", i++);
        }
        cJSON_AddItemToObject(msg, "tool_calls", calls);
        if (!chunk)
            cJSON_ReplaceItemInObjectCaseSensitive(choice, "finish_reason", cJSON_CreateString("tool_calls"));
    }
    free(content);
}

/* A harmony reply's parts into a message (or delta): reasoning_content,
 * content (null when there are calls and no text), tool_calls. */
static void choice_parts(cJSON *choice, bool chunk, const char *reasoning, const char *content, cJSON *calls) {
    cJSON *msg = cJSON_GetObjectItemCaseSensitive(choice, chunk ? "delta" : "message");
    cJSON_DeleteItemFromObjectCaseSensitive(msg, "content");
    if (content && (content[0] || (!chunk && !calls)))
        cJSON_AddStringToObject(msg, "content", content);
    else if (!chunk)
        cJSON_AddNullToObject(msg, "content");
    if (reasoning && reasoning[0])
        cJSON_AddStringToObject(msg, "reasoning_content", reasoning);
    if (calls) {
        if (chunk) { /* deltas name their call by index */
            int i = 0;
            for (cJSON *call = calls->child; call; call = call->next)
                cJSON_AddNumberToObject(call, "index", i++);
        }
        cJSON_AddItemToObject(msg, "tool_calls", calls);
        if (!chunk)
            cJSON_ReplaceItemInObjectCaseSensitive(choice, "finish_reason", cJSON_CreateString("tool_calls"));
    }
}

void serve_choice_harmony(cJSON *choice, bool chunk, const char *text, bool want_calls, uint64_t id) {
    harmony_reply r;
    if (!harmony_parse(text, want_calls, id, &r))
        return; /* out of memory: the text stays as it is */
    choice_parts(choice, chunk, r.reasoning, r.content ? r.content : "", r.calls);
    r.calls = NULL; /* the choice has them */
    harmony_reply_free(&r);
}

static void release_slot(serve_stream *st) {
    if (atomic_exchange(&st->released, true))
        return;
    gen_leave(&st->job); /* before the slot's next request can join */
    slot_release(&st->srv->slots, st->slot);
}

static void unref(serve_stream *st) {
    if (atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    release_slot(st);
    gen_free(&st->job);
    gen_spec_free(&st->spec);
    free(st->out);
    free(st->hm);
    atomic_fetch_sub(&st->srv->open_streams, 1);
    free(st);
}

static void put(serve_stream *st, const char *s, size_t n) {
    if (st->out_len + n > st->out_cap) {
        size_t cap = st->out_cap ? st->out_cap : 1024;
        while (cap < st->out_len + n)
            cap *= 2;
        char *b = realloc(st->out, cap);
        if (!b)
            return; /* the event is lost; the stream still ends with [DONE] */
        st->out = b;
        st->out_cap = cap;
    }
    memcpy(st->out + st->out_len, s, n);
    st->out_len += n;
}

static void put_event(serve_stream *st, cJSON *body) {
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (!text)
        return;
    put(st, "data: ", 6);
    put(st, text, strlen(text));
    put(st, "\n\n", 2);
    free(text);
}

static void put_choice(serve_stream *st, const char *text, bool with_role, const char *finish, cJSON *logprobs) {
    cJSON *body = serve_envelope(st->srv, st->id, st->chat, true);
    cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(body, "choices"),
                         serve_choice(st->chat, true, st->choice, text, with_role, finish, logprobs));
    put_event(st, body);
}

static void put_error(serve_stream *st, const char *msg) {
    char *why = utf8_clean(msg, strlen(msg));
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "message", why ? why : "generation failed");
    cJSON_AddStringToObject(e, "type", "server_error");
    cJSON_AddNumberToObject(e, "code", 500);
    free(why);
    put_event(st, root);
}

static void end_stream(serve_stream *st) {
    if (st->include_usage) {
        cJSON *u = serve_envelope(st->srv, st->id, st->chat, true);
        serve_add_usage(u, st->spec.n_prompt, st->gen_before, st->n_cached);
        put_event(st, u);
    }
    put(st, "data: [DONE]\n\n", 14);
    st->ended = true;
    release_slot(st); /* the model work is over: hand the slot on before the last bytes go out */
}

/* Harmony: the new text joins the choice's text, which is parsed again;
 * what reasoning and content gained is the delta (the calls at the end).
 * true if the delta had tool calls. */
static bool harmony_delta(serve_stream *st, const char *text, int32_t from, int32_t to) {
    gen_job *j = &st->job;
    size_t n = strlen(text);
    char *g = realloc(st->hm, st->hm_len + n + 1);
    if (!g)
        return false;
    st->hm = g;
    memcpy(st->hm + st->hm_len, text, n + 1);
    st->hm_len += n;
    bool last = j->done && !j->failed;
    /* a marker still being spelled waits for its end (not at the end) */
    size_t keep = last ? st->hm_len : harmony_settled(st->hm, st->hm_len);
    char held = st->hm[keep];
    st->hm[keep] = 0;
    harmony_reply r;
    uint64_t id = last && st->spec.tool_format ? atomic_fetch_add(&st->srv->next_id, 1) : 0;
    bool ok = harmony_parse(st->hm, last && st->spec.tool_format, id, &r);
    st->hm[keep] = held;
    if (!ok)
        return false;
    size_t nr = r.reasoning ? strlen(r.reasoning) : 0, nc = r.content ? strlen(r.content) : 0;
    const char *dr = nr > st->sent_r ? r.reasoning + st->sent_r : "";
    const char *dc = nc > st->sent_c ? r.content + st->sent_c : "";
    bool calls = r.calls != NULL;
    if (dr[0] || dc[0] || calls || (st->chat && !st->sent_role) || to > from) {
        cJSON *body = serve_envelope(st->srv, st->id, st->chat, true);
        cJSON *choice = serve_choice(st->chat, true, st->choice, "", st->chat && !st->sent_role, NULL,
                                     st->spec.logprobs && to > from ? serve_logprobs(st->srv->model, j, from, to, st->chat)
                                                                    : NULL);
        choice_parts(choice, true, dr, dc, r.calls);
        r.calls = NULL;
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(body, "choices"), choice);
        put_event(st, body);
        st->sent_role = true;
    }
    if (nr > st->sent_r)
        st->sent_r = nr;
    if (nc > st->sent_c)
        st->sent_c = nc;
    harmony_reply_free(&r);
    return calls;
}

/* Generates until there is something to send, then queues its events. */
static void produce(serve_stream *st) {
    gen_job *j = &st->job;
    if (atomic_load(&st->srv->stopping))
        gen_cut(j);
    if (!j->done)
        gen_step(j);
    atomic_store(&st->n_gen, st->gen_before + j->n_gen);
    /* with tools the text is held to the end: it may turn out to be a call
     * (harmony's channels say what each part is: sent as it comes) */
    bool hold = st->spec.tool_format && !st->spec.harmony && !j->done;
    char *text = hold ? strdup("") : gen_take(j);
    int32_t from = 0, to = 0;
    if (!hold)
        gen_take_logprobs(j, &from, &to);
    bool calls = false;
    if (st->spec.harmony && text) {
        calls = harmony_delta(st, text, from, to);
        free(text);
        text = NULL;
    }
    if (text && (text[0] || (st->chat && !st->sent_role) || to > from)) {
        cJSON *body = serve_envelope(st->srv, st->id, st->chat, true);
        cJSON *choice = serve_choice(st->chat, true, st->choice, text, st->chat && !st->sent_role, NULL,
                                     st->spec.logprobs && to > from ? serve_logprobs(st->srv->model, j, from, to, st->chat)
                                                                    : NULL);
        if (st->spec.tool_format && j->done && !j->failed) {
            serve_choice_tools(choice, true, st->spec.tool_format, text, atomic_fetch_add(&st->srv->next_id, 1));
            calls = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(choice, "delta"), "tool_calls");
        }
        cJSON_AddItemToArray(cJSON_GetObjectItemCaseSensitive(body, "choices"), choice);
        put_event(st, body);
        st->sent_role = true;
    }
    free(text);
    if (!j->done)
        return;
    if (j->failed) {
        put_error(st, j->error);
        put(st, "data: [DONE]\n\n", 14);
        st->ended = true;
        release_slot(st);
        return;
    }
    put_choice(st, NULL, false, calls ? "tool_calls" : j->finish_reason, NULL);
    serve_count_job(st->srv, j);
    st->gen_before += j->n_gen;
    if (st->choice == 0)
        st->n_cached = j->n_cached;
    if (st->choice + 1 >= st->spec.n_choices || atomic_load(&st->srv->stopping)) {
        end_stream(st);
        return;
    }
    /* the next choice, on the same slot: its prompt is in the cache */
    gen_free(j);
    st->choice++;
    st->sent_role = false;
    st->hm_len = st->sent_r = st->sent_c = 0;
    if (!gen_init(j, st->srv->model, st->srv->slots.sessions[st->slot], &st->srv->slots.batcher, st->slot,
                  st->srv->n_ctx, &st->spec, st->choice,
                  st->chat ? st->srv->end_of_turn : NULL)) {
        put_error(st, j->error);
        put(st, "data: [DONE]\n\n", 14);
        st->ended = true;
        release_slot(st);
    }
}

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    serve_stream *st = cls;
    while (st->out_pos == st->out_len) {
        if (st->ended)
            return MHD_CONTENT_READER_END_OF_STREAM;
        st->out_pos = st->out_len = 0;
        produce(st);
    }
    size_t n = st->out_len - st->out_pos;
    if (n > max)
        n = max;
    memcpy(buf, st->out + st->out_pos, n);
    st->out_pos += n;
    return (ssize_t)n;
}

static void response_done(void *cls) { unref(cls); }

enum MHD_Result serve_stream_start(serve_conn *c, gen_spec *spec, int slot, bool chat, bool include_usage,
                                   const char *id) {
    serve_stream *st = calloc(1, sizeof *st);
    if (!st) {
        gen_spec_free(spec);
        slot_release(&c->srv->slots, slot);
        return serve_send_error(c, 500, NULL, "out of memory");
    }
    st->srv = c->srv;
    st->spec = *spec;
    memset(spec, 0, sizeof *spec);
    st->slot = slot;
    st->chat = chat;
    st->include_usage = include_usage;
    snprintf(st->id, sizeof st->id, "%s", id);
    atomic_init(&st->refs, 2);
    atomic_init(&st->released, false);
    atomic_init(&st->n_prompt, st->spec.n_prompt);
    atomic_init(&st->n_gen, 0);
    atomic_fetch_add(&c->srv->open_streams, 1);
    if (!gen_init(&st->job, c->srv->model, c->srv->slots.sessions[slot], &c->srv->slots.batcher, slot,
                  c->srv->n_ctx, &st->spec, 0,
                  chat ? c->srv->end_of_turn : NULL)) {
        enum MHD_Result r = serve_send_error(c, 500, NULL, "%s", st->job.error);
        atomic_store(&st->refs, 1);
        unref(st);
        return r;
    }
    struct MHD_Response *r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, reader, st, response_done);
    if (!r) {
        atomic_store(&st->refs, 1);
        unref(st);
        return MHD_NO;
    }
    c->stream = st;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    c->status = 200;
    enum MHD_Result ok = MHD_queue_response(c->mhd, 200, r);
    MHD_destroy_response(r);
    return ok;
}

void serve_stream_detach(serve_conn *c) {
    serve_stream *st = c->stream;
    c->stream = NULL;
    c->n_prompt = atomic_load(&st->n_prompt);
    c->n_gen = atomic_load(&st->n_gen);
    release_slot(st);
    unref(st);
}
