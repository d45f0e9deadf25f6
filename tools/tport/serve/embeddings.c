/* POST /v1/embeddings (OpenAI's format): "input" is a string, an array of
 * strings, an array of token ids, or an array of such arrays; each input
 * gets the model's pooled embedding (tport_session_embed: the file's
 * pooling, last token for a decoder file without one), L2-normalised as
 * llama-server's default.  "encoding_format" "float" (default) or
 * "base64" (the little-endian f32 bytes).  Fields that would change the
 * answer and are not implemented ("dimensions") are refused.
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

#include "prompt.h"
#include "serve.h"

#define MAX_INPUTS 2048 /* OpenAI's limit on inputs per request */

typedef struct embed_input {
    tport_token *ids;
    int32_t n;
} embed_input;

/* One input's tokens from item (a string or an array of ids); -1 with
 * err filled. */
static int32_t input_tokens(const serve_server *srv, const cJSON *item, tport_token **ids, serve_error *err) {
    if (cJSON_IsString(item))
        return prompt_from_text(srv->model, item->valuestring, true, ids, err);
    int n = cJSON_GetArraySize(item);
    if (!cJSON_IsArray(item) || n > srv->n_ctx) {
        snprintf(err->message, sizeof err->message, "'input' items are strings or arrays of at most %d token ids",
                 (int)srv->n_ctx);
        return -1;
    }
    int32_t *raw = malloc((size_t)(n ? n : 1) * sizeof *raw);
    if (!raw) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return -1;
    }
    int i = 0;
    for (const cJSON *t = item->child; t; t = t->next, i++) {
        if (!cJSON_IsNumber(t) || t->valuedouble != (double)(int32_t)t->valuedouble) {
            free(raw);
            snprintf(err->message, sizeof err->message, "'input': token %d is not an integer", i);
            return -1;
        }
        raw[i] = (int32_t)t->valuedouble;
    }
    int32_t got = prompt_from_ids(srv->model, raw, n, ids, err);
    free(raw);
    return got;
}

/* The inputs of body["input"]; -1 with err filled. */
static int parse_inputs(const serve_server *srv, const cJSON *input, embed_input *out, serve_error *err) {
    const cJSON *one = input;
    int n = 1;
    /* an array of strings or of arrays is a list; an array of numbers is one input */
    if (cJSON_IsArray(input) && input->child && !cJSON_IsNumber(input->child)) {
        n = cJSON_GetArraySize(input);
        one = NULL;
    }
    if (!input || (!cJSON_IsString(input) && !cJSON_IsArray(input)) || (cJSON_IsArray(input) && !input->child)) {
        snprintf(err->message, sizeof err->message, "'input' must be a string, an array of strings, or token ids");
        return -1;
    }
    if (n > MAX_INPUTS) {
        snprintf(err->message, sizeof err->message, "'input' has %d items; at most %d", n, MAX_INPUTS);
        return -1;
    }
    int i = 0;
    for (const cJSON *it = one ? one : input->child; it && i < n; it = one ? NULL : it->next, i++) {
        out[i].n = input_tokens(srv, it, &out[i].ids, err);
        if (out[i].n < 0)
            return -1;
        if (out[i].n == 0 || out[i].n > srv->n_ctx) {
            snprintf(err->message, sizeof err->message, "'input' item %d has %d tokens; 1 to %d fit the context", i,
                     (int)out[i].n, (int)srv->n_ctx);
            return -1;
        }
    }
    return n;
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
static cJSON *embed_all(serve_conn *c, const embed_input *in, int n, bool b64, int32_t *n_tokens, serve_error *err,
                        unsigned *status) {
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
        if (tport_session_embed(s, in[i].ids, in[i].n, true, v, n_embd) != TPORT_STATUS_OK) {
            snprintf(err->message, sizeof err->message, "%s", tport_last_error());
            *status = strstr(err->message, "pooling") ? 400 : 500;
            cJSON_Delete(r);
            r = NULL;
            break;
        }
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
    cJSON *body = cJSON_ParseWithLength(c->body ? c->body : "", c->body_len);
    if (!cJSON_IsObject(body)) {
        cJSON_Delete(body);
        return serve_send_error(c, 400, NULL, "the body is not a JSON object");
    }
    serve_error err = {.param = "input"};
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(body, "encoding_format");
    if (cJSON_GetObjectItemCaseSensitive(body, "dimensions")) {
        cJSON_Delete(body);
        return serve_send_error(c, 400, "dimensions", "'dimensions': shortened embeddings are not implemented");
    }
    if (fmt && !cJSON_IsNull(fmt) && (!cJSON_IsString(fmt) || (strcmp(fmt->valuestring, "float") &&
                                                               strcmp(fmt->valuestring, "base64")))) {
        cJSON_Delete(body);
        return serve_send_error(c, 400, "encoding_format", "'encoding_format' is \"float\" or \"base64\"");
    }
    bool b64 = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "base64");
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(body, "input");
    int cap = cJSON_IsArray(input) ? cJSON_GetArraySize(input) : 1;
    cap = cap > 0 && cap <= MAX_INPUTS ? cap : 1; /* parse_inputs refuses more */
    embed_input *in = calloc((size_t)cap, sizeof *in);
    int n = in ? parse_inputs(srv, input, in, &err) : -1;
    err.param = "input"; /* prompt.c names its own field "prompt" */
    if (!in)
        snprintf(err.message, sizeof err.message, "out of memory");
    cJSON_Delete(body);
    enum MHD_Result res;
    int32_t n_tokens = 0;
    unsigned status = 400;
    cJSON *r = n > 0 ? embed_all(c, in, n, b64, &n_tokens, &err, &status) : NULL;
    c->n_prompt = n_tokens;
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
    for (int i = 0; in && i < cap; i++)
        free(in[i].ids);
    free(in);
    return res;
}
