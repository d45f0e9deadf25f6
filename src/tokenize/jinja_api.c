/* tport_template_render: the public entry to the Jinja engine.  The
 * context arrives as JSON, read by the engine's own reader (key order
 * kept, no optional library needed), and one arena serves the render. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenize/jinja.h"

static void free_chunks(jctx *c) {
    for (jchunk *k = c->chunks, *next; k; k = next) {
        next = k->next;
        free(k);
    }
}

char *tport_template_render(const char *tmpl, size_t len, const char *context_json,
                            const tport_template_limits *limits, size_t *out_len) {
    if (!tmpl) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tport_template_render: no template");
        return NULL;
    }
    tport_template_limits l = limits ? *limits : (tport_template_limits){0};
    jctx *c = calloc(1, sizeof *c);
    if (!c) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    c->out_limit = l.max_output ? l.max_output : (size_t)16 << 20;
    c->mem_limit = l.max_memory ? l.max_memory : (size_t)256 << 20;
    c->max_steps = l.max_steps ? l.max_steps : 50000000;
    c->max_depth = l.max_depth > 0 ? l.max_depth : 500;
    c->now = l.now;
    jv ctx = jv_none();
    char *result = NULL;
    if (context_json) {
        /* the reader fails by longjmp too (arena limit) */
        if (setjmp(c->fail)) {
            tport_error(TPORT_STATUS_OUT_OF_MEMORY, "chat template context: %s", c->err);
            goto done;
        }
        const char *err = jv_parse_json(c, context_json, strlen(context_json), &ctx);
        if (err || ctx.t != JT_DICT) {
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "chat template context: %s", err ? err : "not a JSON object");
            goto done;
        }
    }
    const jstr *out = jinja_render(c, tmpl, len, ctx);
    if (!out) {
        tport_error(TPORT_STATUS_ERROR, "chat template: %s", c->err);
        goto done;
    }
    result = malloc(out->len + 1);
    if (!result) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    memcpy(result, out->s, out->len + 1);
    if (out_len)
        *out_len = out->len;
done:
    free_chunks(c);
    free(c);
    return result;
}
