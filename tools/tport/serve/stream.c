/* Streaming responses: libmicrohttpd pulls bytes through a reader callback
 * on the connection's thread; each pull generates at least one token.  A
 * client that disconnects makes the next send fail, and libmicrohttpd then
 * frees the response — which frees the slot at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream.h"

typedef struct serve_stream {
    serve_server *srv;
    gen_job job;
    tport_sampler *sm;
    int slot;
    bool chat, include_usage, sent_role, ended;
    char id[48];
    atomic_int refs;           /* the response and the connection        */
    atomic_bool released;      /* the slot went back to the pool         */
    atomic_int n_prompt, n_gen;
    char *out;
    size_t out_len, out_pos, out_cap;
} serve_stream;

cJSON *serve_body(const serve_server *srv, const char *id, bool chat, bool chunk, const char *text, bool with_role,
                  const char *finish) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", id);
    cJSON_AddStringToObject(root, "object",
                            chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)srv->created);
    cJSON_AddStringToObject(root, "model", srv->model_id);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON *ch = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, ch);
    cJSON_AddNumberToObject(ch, "index", 0);
    if (chat) {
        cJSON *msg = cJSON_AddObjectToObject(ch, chunk ? "delta" : "message");
        if (with_role || !chunk)
            cJSON_AddStringToObject(msg, "role", "assistant");
        if (text)
            cJSON_AddStringToObject(msg, "content", text);
    } else {
        cJSON_AddStringToObject(ch, "text", text ? text : "");
    }
    cJSON_AddNullToObject(ch, "logprobs");
    if (finish)
        cJSON_AddStringToObject(ch, "finish_reason", finish);
    else
        cJSON_AddNullToObject(ch, "finish_reason");
    return root;
}

void serve_add_usage(cJSON *body, int32_t n_prompt, int32_t n_gen) {
    cJSON *u = cJSON_AddObjectToObject(body, "usage");
    cJSON_AddNumberToObject(u, "prompt_tokens", n_prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", n_gen);
    cJSON_AddNumberToObject(u, "total_tokens", n_prompt + n_gen);
}

static void release_slot(serve_stream *st) {
    if (atomic_exchange(&st->released, true))
        return;
    tport_sampler_free(st->sm);
    st->sm = NULL;
    slot_release(&st->srv->slots, st->slot);
}

static void unref(serve_stream *st) {
    if (atomic_fetch_sub(&st->refs, 1) != 1)
        return;
    release_slot(st);
    gen_free(&st->job);
    free(st->out);
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

/* Generates until there is something to send, then queues its events. */
static void produce(serve_stream *st) {
    gen_job *j = &st->job;
    if (atomic_load(&st->srv->stopping))
        gen_cut(j);
    if (!j->done)
        gen_step(j);
    atomic_store(&st->n_gen, j->n_gen);
    char *text = gen_take(j);
    if (text && (text[0] || (st->chat && !st->sent_role))) {
        put_event(st, serve_body(st->srv, st->id, st->chat, true, text, st->chat && !st->sent_role, NULL));
        st->sent_role = true;
    }
    free(text);
    if (!j->done)
        return;
    if (j->failed) {
        char *why = utf8_clean(j->error, strlen(j->error));
        cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
        cJSON_AddStringToObject(e, "message", why ? why : "generation failed");
        cJSON_AddStringToObject(e, "type", "server_error");
        cJSON_AddNumberToObject(e, "code", 500);
        free(why);
        put_event(st, root);
    } else {
        put_event(st, serve_body(st->srv, st->id, st->chat, true, NULL, false, j->finish_reason));
        if (st->include_usage) {
            cJSON *u = serve_body(st->srv, st->id, st->chat, true, NULL, false, NULL);
            cJSON_DeleteItemFromObject(u, "choices");
            cJSON_AddArrayToObject(u, "choices");
            serve_add_usage(u, j->n_prompt, j->n_gen);
            put_event(st, u);
        }
    }
    put(st, "data: [DONE]\n\n", 14);
    st->ended = true;
    release_slot(st); /* the model work is over: hand the slot on before the last bytes go out */
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

enum MHD_Result serve_stream_start(serve_conn *c, gen_job *job, tport_sampler *sm, int slot, bool chat,
                                   bool include_usage, const char *id) {
    serve_stream *st = calloc(1, sizeof *st);
    if (!st) {
        gen_free(job);
        tport_sampler_free(sm);
        slot_release(&c->srv->slots, slot);
        return serve_send_error(c, 500, NULL, "out of memory");
    }
    st->srv = c->srv;
    st->job = *job;
    st->sm = sm;
    st->slot = slot;
    st->chat = chat;
    st->include_usage = include_usage;
    snprintf(st->id, sizeof st->id, "%s", id);
    atomic_init(&st->refs, 2);
    atomic_init(&st->released, false);
    atomic_init(&st->n_prompt, job->n_prompt);
    atomic_init(&st->n_gen, 0);
    atomic_fetch_add(&c->srv->open_streams, 1);
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
