/* libFuzzer target: the request parser of tport serve (the bytes an HTTP
 * client controls).  The first byte picks the endpoint; the rest is the
 * body.  Whatever parses is rendered with every chat format, and the
 * UTF-8 cleaner must give valid UTF-8 that it leaves unchanged. */
#include <stdlib.h>
#include <string.h>

#include "chat_template.h"
#include "utf8.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    serve_kind kind = (serve_kind)(data[0] % 4);
    const char *body = (const char *)data + 1;
    size_t len = size - 1;
    serve_request req;
    serve_error err;
    if (serve_request_parse(kind, body, len, 4096, &req, &err)) {
        if (req.max_tokens != -1 && (req.max_tokens < 1 || req.max_tokens > 4096))
            abort();
        if (req.n_stop > SERVE_MAX_STOP || (req.kind == SERVE_REQ_CHAT && req.n_messages < 1))
            abort();
        for (int f = 0; kind == SERVE_REQ_CHAT && f < CHAT_N_FORMATS; f++) {
            chat_prompt p;
            if (chat_render((chat_format)f, req.messages, req.n_messages, &p) && strlen(p.text) > p.len)
                abort();
            chat_prompt_free(&p);
        }
    } else if (!err.message[0]) {
        abort(); /* a refusal always says why */
    }
    serve_request_free(&req);

    char *clean = utf8_clean(body, len);
    if (clean) {
        char *again = utf8_clean(clean, strlen(clean));
        if (!again || strcmp(again, clean))
            abort();
        free(again);
        free(clean);
    }
    return 0;
}
