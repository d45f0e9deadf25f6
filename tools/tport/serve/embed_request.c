/* The body of POST /v1/embeddings (embed_request.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "embed_request.h"

static bool fail(serve_error *err, const char *param, const char *msg) {
    snprintf(err->message, sizeof err->message, "%s", msg);
    err->param = param;
    return false;
}

/* item: a string or an array of integer ids */
static bool parse_item(const cJSON *item, int32_t max_ids, embed_item *out, serve_error *err) {
    if (cJSON_IsString(item)) {
        out->text = strdup(item->valuestring);
        return out->text ? true : fail(err, NULL, "out of memory");
    }
    int n = cJSON_GetArraySize(item);
    if (!cJSON_IsArray(item) || n < 1 || n > max_ids) {
        snprintf(err->message, sizeof err->message, "'input' items are strings or arrays of 1 to %d token ids",
                 (int)max_ids);
        err->param = "input";
        return false;
    }
    out->ids = malloc((size_t)n * sizeof *out->ids);
    if (!out->ids)
        return fail(err, NULL, "out of memory");
    int i = 0;
    for (const cJSON *t = item->child; t && i < n; t = t->next, i++) {
        /* an integer of int32's range (a vocabulary checks it further) */
        if (!cJSON_IsNumber(t) || !(t->valuedouble >= -2147483648.0 && t->valuedouble <= 2147483647.0) ||
            t->valuedouble != (double)(int32_t)t->valuedouble) {
            snprintf(err->message, sizeof err->message, "'input': token %d is not a 32-bit integer", i);
            err->param = "input";
            return false;
        }
        out->ids[i] = (int32_t)t->valuedouble;
    }
    out->n_ids = i;
    return true;
}

bool embed_request_parse(const char *body, size_t len, int32_t max_ids, embed_request *r, serve_error *err) {
    memset(r, 0, sizeof *r);
    err->param = NULL;
    cJSON *root = cJSON_ParseWithLength(body ? body : "", len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return fail(err, NULL, "the body is not a JSON object");
    }
    bool ok = true;
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "encoding_format");
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input");
    const cJSON *norm = cJSON_GetObjectItemCaseSensitive(root, "embd_normalize");
    if (cJSON_GetObjectItemCaseSensitive(root, "dimensions"))
        ok = fail(err, "dimensions", "'dimensions': shortened embeddings are not implemented");
    else if (fmt && !cJSON_IsNull(fmt) &&
             (!cJSON_IsString(fmt) || (strcmp(fmt->valuestring, "float") && strcmp(fmt->valuestring, "base64"))))
        ok = fail(err, "encoding_format", "'encoding_format' is \"float\" or \"base64\"");
    else if (norm && !cJSON_IsNull(norm) &&
             !(cJSON_IsNumber(norm) && norm->valuedouble >= -1.0 && norm->valuedouble <= 2147483647.0 &&
               norm->valuedouble == (double)(int32_t)norm->valuedouble))
        ok = fail(err, "embd_normalize", "'embd_normalize' is an integer >= -1 (-1 none, 0 int16 range, "
                  "1 taxicab, 2 Euclidean, p > 2 the p-norm)");
    else if (!cJSON_IsString(input) && !(cJSON_IsArray(input) && input->child))
        ok = fail(err, "input", "'input' must be a string, an array of strings, token ids, or arrays of them");
    r->base64 = ok && cJSON_IsString(fmt) && !strcmp(fmt->valuestring, "base64");
    r->embd_normalize = ok && cJSON_IsNumber(norm) ? (int32_t)norm->valuedouble : 2;
    /* an array of numbers is one input; other arrays are lists */
    bool list = ok && cJSON_IsArray(input) && !cJSON_IsNumber(input->child);
    int n = list ? cJSON_GetArraySize(input) : 1;
    if (ok && n > EMBED_MAX_INPUTS) {
        snprintf(err->message, sizeof err->message, "'input' has %d items; at most %d", n, EMBED_MAX_INPUTS);
        err->param = "input";
        ok = false;
    }
    if (ok && !(r->items = calloc((size_t)n, sizeof *r->items)))
        ok = fail(err, NULL, "out of memory");
    const cJSON *it = list ? input->child : input;
    for (int i = 0; ok && i < n && it; i++, it = it->next) {
        r->n = i + 1; /* freed with what it holds so far */
        ok = parse_item(it, max_ids, &r->items[i], err);
    }
    cJSON_Delete(root);
    if (!ok)
        embed_request_free(r);
    return ok;
}

void embed_request_free(embed_request *r) {
    for (int i = 0; r->items && i < r->n; i++) {
        free(r->items[i].text);
        free(r->items[i].ids);
    }
    free(r->items);
    memset(r, 0, sizeof *r);
}
