/* libFuzzer target: the body parser of tport serve's POST /v1/embeddings
 * (the bytes an HTTP client controls).  Whatever parses must hold 1 to
 * EMBED_MAX_INPUTS items, each a text or 1 to max_ids ids. */
#include <stdlib.h>
#include <string.h>

#include "embed_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    embed_request r;
    serve_error err;
    if (!embed_request_parse((const char *)data, size, 512, &r, &err))
        return 0;
    if (r.n < 1 || r.n > EMBED_MAX_INPUTS)
        abort();
    for (int i = 0; i < r.n; i++) {
        const embed_item *it = &r.items[i];
        if (!it->text == !it->ids || (it->ids && (it->n_ids < 1 || it->n_ids > 512)) ||
            (it->text && strlen(it->text) > size))
            abort();
    }
    embed_request_free(&r);
    return 0;
}
