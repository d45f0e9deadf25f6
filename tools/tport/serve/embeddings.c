/* POST /v1/embeddings (OpenAI's format): "input" is a string, an array of
 * strings, an array of token ids, or an array of such arrays; each input
 * gets the model's pooled embedding (tport_session_embed: the file's
 * pooling, last token for a decoder file without one), L2-normalised as
 * llama-server's default, or as "embd_normalize" says (its field: -1
 * none, 0 int16 range, 1 taxicab, p >= 2 the p-norm).  "encoding_format" "float" (default) or
 * "base64" (the little-endian f32 bytes).  Fields that would change the
 * answer and are not implemented ("dimensions") are refused
 * (embed_request.c parses the body).
 *
 * The inputs run one after another on one slot's session taken from the
 * pool like a completion's: the pool bounds the memory and the
 * concurrency, and the slot's cache afterwards holds the last input
 * (which a later prompt with that prefix may reuse: the cache is the
 * ordinary causal evaluation of those tokens). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "embed_request.h"
#include "prompt.h"
#include "serve.h"

typedef struct embed_input {
    tport_token *ids;
    int32_t n;
} embed_input;

/* The request's items as tokens (texts with BOS or [CLS]/[SEP], ids
 * checked against the vocabulary); false with err filled. */
static bool tokenize_items(const serve_server *srv, const embed_request *r, embed_input *out, serve_error *err) {
    for (int i = 0; i < r->n; i++) {
        const embed_item *it = &r->items[i];
        out[i].n = it->text ? prompt_from_text(srv->model, it->text, true, &out[i].ids, err)
                            : prompt_from_ids(srv->model, it->ids, it->n_ids, &out[i].ids, err);
        err->param = "input"; /* prompt.c names its own field "prompt" */
        if (out[i].n < 0)
            return false;
        if (out[i].n == 0 || out[i].n > srv->n_ctx) {
            snprintf(err->message, sizeof err->message, "'input' item %d has %d tokens; 1 to %d fit the context", i,
                     (int)out[i].n, (int)srv->n_ctx);
            return false;
        }
    }
    return true;
}

static char *base64(const float *v, int32_t n) {
    static const char abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = (size_t)n * 4;
    unsigned char *b = malloc(len ? len : 1);
    char *s = malloc((len + 2) / 3 * 4 + 1);
    if (!b || !s) {
        free(b);
        free(s);
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) { /* little-endian, whatever the host */
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int k = 0; k < 4; k++)
            b[(size_t)i * 4 + (size_t)k] = (unsigned char)(u >> (8 * k));
    }
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t w = (uint32_t)b[i] << 16 | (i + 1 < len ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < len ? b[i + 2] : 0);
        s[o++] = abc[w >> 18 & 63];
        s[o++] = abc[w >> 12 & 63];
        s[o++] = i + 1 < len ? abc[w >> 6 & 63] : '=';
        s[o++] = i + 2 < len ? abc[w & 63] : '=';
    }
    s[o] = 0;
    free(b);
    return s;
}

/* Runs the inputs on a slot and builds the answer; NULL with err filled. */
static cJSON *embed_all(serve_conn *c, const embed_input *in, int n, bool b64, int32_t norm, int32_t *n_tokens,
                        serve_error *err, unsigned *status) {
    serve_server *srv = c->srv;
    int32_t n_embd = tport_model_n_embd(srv->model);
    float *v = malloc((size_t)n_embd * sizeof *v);
    if (!v) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    int slot = -1;
    slot_wait w = atomic_load(&srv->stopping) ? SLOT_CLOSING
                                              : slot_acquire(&srv->slots, in[0].ids, in[0].n, serve_client_gone, c, &slot);
    if (w != SLOT_OK) {
        free(v);
        *status = w == SLOT_GAVE_UP ? SERVE_STATUS_CLIENT_GONE : 503;
        snprintf(err->message, sizeof err->message, w == SLOT_QUEUE_FULL ? "the server is busy: every slot is in "
                 "use and the queue is full; retry later" : "the server is shutting down");
        return NULL;
    }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(r, "data");
    tport_session *s = srv->slots.sessions[slot];
    for (int i = 0; i < n && r; i++) {
        if (tport_session_embed(s, in[i].ids, in[i].n, false, v, n_embd) != TPORT_STATUS_OK) {
            snprintf(err->message, sizeof err->message, "%s", tport_last_error());
            *status = strstr(err->message, "pooling") ? 400 : 500;
            cJSON_Delete(r);
            r = NULL;
            break;
        }
        tport_embd_normalize(v, v, n_embd, norm);
        *n_tokens += in[i].n;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToArray(data, e);
        cJSON_AddStringToObject(e, "object", "embedding");
        cJSON_AddNumberToObject(e, "index", i);
        if (b64) {
            char *text = base64(v, n_embd);
            cJSON_AddItemToObject(e, "embedding", text ? cJSON_CreateString(text) : cJSON_CreateNull());
            free(text);
        } else {
            cJSON *arr = cJSON_AddArrayToObject(e, "embedding");
            for (int32_t j = 0; j < n_embd; j++)
                cJSON_AddItemToArray(arr, cJSON_CreateNumber(v[j]));
        }
    }
    slot_release(&srv->slots, slot);
    free(v);
    return r;
}

enum MHD_Result serve_embeddings(serve_conn *c) {
    serve_server *srv = c->srv;
    atomic_fetch_add(&srv->metrics.requests, 1);
    embed_request req;
    serve_error err = {.param = NULL};
    if (!embed_request_parse(c->body, c->body_len, srv->n_ctx, &req, &err)) {
        atomic_fetch_add(&srv->metrics.requests_failed, 1);
        return serve_send_error(c, 400, err.param, "%s", err.message);
    }
    embed_input *in = calloc((size_t)req.n, sizeof *in);
    unsigned status = 400;
    if (!in) {
        snprintf(err.message, sizeof err.message, "out of memory");
        status = 500;
    }
    int32_t n_tokens = 0;
    cJSON *r = in && tokenize_items(srv, &req, in, &err)
                   ? embed_all(c, in, req.n, req.base64, req.embd_normalize, &n_tokens, &err, &status) : NULL;
    c->n_prompt = n_tokens;
    enum MHD_Result res;
    if (r) {
        cJSON_AddStringToObject(r, "model", srv->model_id);
        cJSON *usage = cJSON_AddObjectToObject(r, "usage");
        cJSON_AddNumberToObject(usage, "prompt_tokens", n_tokens);
        cJSON_AddNumberToObject(usage, "total_tokens", n_tokens);
        atomic_fetch_add(&srv->metrics.prompt_tokens, (uint_fast64_t)n_tokens);
        res = serve_send_json(c, 200, r);
    } else if (status == SERVE_STATUS_CLIENT_GONE) {
        c->status = SERVE_STATUS_CLIENT_GONE;
        res = MHD_NO;
    } else {
        atomic_fetch_add(&srv->metrics.requests_failed, 1);
        res = serve_send_error(c, status, status == 400 ? err.param : NULL, "%s", err.message);
    }
    for (int i = 0; in && i < req.n; i++)
        free(in[i].ids);
    free(in);
    embed_request_free(&req);
    return res;
}
