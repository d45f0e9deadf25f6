/* POST /v1/embeddings (OpenAI's, as llama-server answers it): each input
 * (a string, a list of them, a list of token ids or a list of such lists)
 * is evaluated on a free slot's session from position 0 and pooled as the
 * server's pooling says (tport_session_embed: the final norm's output,
 * mean, CLS or last), then scaled to unit length, as OpenAI's vectors
 * are.  "encoding_format" may be "float" or "base64" (the floats' little-
 * endian bytes); "dimensions" only as the model's width; "model" and
 * "user" are ignored. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve.h"

#define MAX_INPUTS 256

/* The inputs as token lists: *ids[i] of n[i] tokens; -1 with err filled. */
static int parse_inputs(const serve_server *srv, const cJSON *input, tport_token **ids, int32_t *n,
                        serve_error *err) {
    const cJSON *items[MAX_INPUTS];
    int count = 0;
    bool one_id_list = cJSON_IsArray(input) && cJSON_GetArraySize(input) > 0 && cJSON_IsNumber(input->child);
    if (cJSON_IsString(input) || one_id_list) {
        items[count++] = input;
    } else if (cJSON_IsArray(input)) {
        for (const cJSON *it = input->child; it; it = it->next) {
            if (count == MAX_INPUTS) {
                snprintf(err->message, sizeof err->message, "'input' has more than %d items", MAX_INPUTS);
                return -1;
            }
            items[count++] = it;
        }
    }
    if (!count) {
        snprintf(err->message, sizeof err->message, "'input' must be a string, a list of strings, a list of "
                 "token ids or a list of such lists, and not empty");
        return -1;
    }
    for (int i = 0; i < count; i++) {
        const cJSON *it = items[i];
        ids[i] = NULL;
        if (cJSON_IsString(it)) {
            n[i] = prompt_from_text(srv->model, it->valuestring, true, &ids[i], err);
        } else if (cJSON_IsArray(it)) {
            int k = cJSON_GetArraySize(it);
            int32_t *raw = malloc((size_t)(k ? k : 1) * sizeof *raw);
            int j = 0;
            for (const cJSON *t = it->child; raw && t; t = t->next, j++) {
                if (!cJSON_IsNumber(t) || t->valuedouble != floor(t->valuedouble) || t->valuedouble < 0 ||
                    t->valuedouble > 2147483647.0) {
                    snprintf(err->message, sizeof err->message, "'input' item %d: token ids are integers", i);
                    free(raw);
                    return -1;
                }
                raw[j] = (int32_t)t->valuedouble;
            }
            n[i] = raw ? prompt_from_ids(srv->model, raw, k, &ids[i], err) : -1;
            if (!raw)
                snprintf(err->message, sizeof err->message, "out of memory");
            free(raw);
        } else {
            snprintf(err->message, sizeof err->message, "'input' item %d is neither text nor token ids", i);
            n[i] = -1;
        }
        if (n[i] == 0) {
            snprintf(err->message, sizeof err->message, "'input' item %d is empty", i);
            n[i] = -1;
        } else if (n[i] > srv->n_ctx) {
            snprintf(err->message, sizeof err->message, "'input' item %d has %d tokens but the context holds %d",
                     i, (int)n[i], (int)srv->n_ctx);
            n[i] = -1;
        }
        if (n[i] < 0) {
            for (int k = 0; k <= i; k++)
                free(ids[k]);
            return -1;
        }
    }
    return count;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* The floats' bytes (little-endian, as the x86 and arm64 hosts hold them) in base64. */
static char *base64_floats(const float *v, int32_t n) {
    const unsigned char *p = (const unsigned char *)v;
    size_t len = (size_t)n * sizeof *v, o = 0;
    char *out = malloc((len + 2) / 3 * 4 + 1);
    for (size_t i = 0; out && i < len; i += 3) {
        unsigned x = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) | (i + 2 < len ? p[i + 2] : 0);
        out[o++] = b64[x >> 18 & 63];
        out[o++] = b64[x >> 12 & 63];
        out[o++] = i + 1 < len ? b64[x >> 6 & 63] : '=';
        out[o++] = i + 2 < len ? b64[x & 63] : '=';
    }
    if (out)
        out[o] = 0;
    return out;
}

enum MHD_Result serve_embeddings(serve_conn *c) {
    serve_server *srv = c->srv;
    atomic_fetch_add(&srv->metrics.requests, 1);
    if (srv->pooling != TPORT_POOLING_MEAN && srv->pooling != TPORT_POOLING_CLS && srv->pooling != TPORT_POOLING_LAST)
        return serve_send_error(c, 400, NULL, "the model file declares pooling %d (%s), which gives no embedding "
                                "of a whole input; start the server with --pooling mean|cls|last", srv->pooling,
                                srv->pooling == TPORT_POOLING_RANK ? "rank: a reranker" : "none: per token");
    cJSON *root = cJSON_ParseWithLength(c->body ? c->body : "", c->body_len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return serve_send_error(c, 400, NULL, "the body is not a JSON object");
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "encoding_format");
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(root, "dimensions");
    int32_t ne = tport_model_n_embd(srv->model);
    bool base64 = cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "base64");
    enum MHD_Result res = MHD_NO;
    bool answered = false;
    if (fmt && !cJSON_IsNull(fmt) && !base64 && !(cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "float"))) {
        res = serve_send_error(c, 400, "encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
        answered = true;
    } else if (dims && !cJSON_IsNull(dims) && !(cJSON_IsNumber(dims) && dims->valuedouble == ne)) {
        res = serve_send_error(c, 400, "dimensions", "'dimensions' other than the model's %d is not implemented",
                               (int)ne);
        answered = true;
    }
    tport_token *ids[MAX_INPUTS];
    int32_t n[MAX_INPUTS];
    serve_error err = {.param = "input"};
    int count = answered ? 0 : parse_inputs(srv, cJSON_GetObjectItemCaseSensitive(root, "input"), ids, n, &err);
    cJSON_Delete(root);
    if (answered)
        return res;
    if (count < 0)
        return serve_send_error(c, 400, "input", "%s", err.message);
    int slot = -1;
    slot_wait w = atomic_load(&srv->stopping) ? SLOT_CLOSING
                                              : slot_acquire(&srv->slots, NULL, 0, serve_client_gone, c, &slot);
    float *v = w == SLOT_OK ? malloc((size_t)ne * sizeof *v) : NULL;
    cJSON *body = cJSON_CreateObject(), *data = cJSON_AddArrayToObject(body, "data");
    cJSON_AddStringToObject(body, "object", "list");
    int64_t total = 0;
    char why[256] = "";
    for (int i = 0; v && i < count && !why[0]; i++) {
        if (tport_session_embed(srv->slots.sessions[slot], ids[i], n[i], (tport_pooling)srv->pooling, v)) {
            snprintf(why, sizeof why, "%s", tport_last_error());
            break;
        }
        double sum = 0;
        for (int32_t j = 0; j < ne; j++)
            sum += (double)v[j] * v[j];
        float scale = sum > 0 ? (float)(1.0 / sqrt(sum)) : 0.0f;
        for (int32_t j = 0; j < ne; j++)
            v[j] *= scale;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "object", "embedding");
        cJSON_AddNumberToObject(e, "index", i);
        if (base64) {
            char *s = base64_floats(v, ne);
            cJSON_AddStringToObject(e, "embedding", s ? s : "");
            free(s);
        } else {
            cJSON_AddItemToObject(e, "embedding", cJSON_CreateFloatArray(v, ne));
        }
        cJSON_AddItemToArray(data, e);
        total += n[i];
    }
    if (w == SLOT_OK)
        slot_release(&srv->slots, slot);
    for (int i = 0; i < count; i++)
        free(ids[i]);
    c->n_prompt = (int32_t)total;
    if (w != SLOT_OK || !v || why[0]) {
        free(v);
        cJSON_Delete(body);
        if (w == SLOT_GAVE_UP) {
            c->status = SERVE_STATUS_CLIENT_GONE;
            return MHD_NO;
        }
        if (w != SLOT_OK)
            return serve_send_error(c, 503, NULL, w == SLOT_QUEUE_FULL ? "the server is busy: every slot is in use "
                                    "and the queue is full; retry later" : "the server is shutting down");
        atomic_fetch_add(&srv->metrics.requests_failed, 1);
        return serve_send_error(c, 500, NULL, "%s", why[0] ? why : "out of memory");
    }
    free(v);
    cJSON_AddStringToObject(body, "model", srv->model_id);
    cJSON *usage = cJSON_AddObjectToObject(body, "usage");
    cJSON_AddNumberToObject(usage, "prompt_tokens", (double)total);
    cJSON_AddNumberToObject(usage, "total_tokens", (double)total);
    return serve_send_json(c, 200, body);
}
