/* tport serve: the body of POST /v1/embeddings, parsed and checked before
 * any model work.  Needs only cJSON, so the fuzz target
 * (tests/fuzz/fuzz_embed_request.c) drives it without a model. */
#ifndef TPORT_SERVE_EMBED_REQUEST_H
#define TPORT_SERVE_EMBED_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

#define EMBED_MAX_INPUTS 2048 /* OpenAI's limit on inputs per request */

/* One input: a text (ids NULL) or token ids (text NULL; not yet checked
 * against a vocabulary). */
typedef struct embed_item {
    char *text;
    int32_t *ids;
    int32_t n_ids;
} embed_item;

typedef struct embed_request {
    embed_item *items;
    int n;
    bool base64; /* encoding_format "base64" (else "float") */
    int32_t embd_normalize; /* llama-server's field: -1 none, 0 int16 range, 1 taxicab,
                               2 Euclidean (the default), p > 2 the p-norm */
} embed_request;

/* Parses len bytes of body: "input" a string, an array of strings, an
 * array of token ids or an array of such arrays (1 to EMBED_MAX_INPUTS
 * items, each of at most max_ids ids); "encoding_format"; "embd_normalize"
 * (an integer >= -1, as llama-server's); "dimensions" is refused (not
 * implemented).  false with err filled (and nothing to free). */
bool embed_request_parse(const char *body, size_t len, int32_t max_ids, embed_request *r, serve_error *err);
void embed_request_free(embed_request *r);

#endif
