/* tport embed -m FILE (-p TEXT | --ids I,J,...): the pooled embedding of a
 * text or of token ids (tport_session_embed: the file's pooling, the last
 * token for a decoder file without one), normalised as --embd-normalize
 * says (llama.cpp's option: L2 by default; --no-normalize is -1), as one
 * JSON object. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tport/tport.h"

#define MAX_IDS 65536

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport embed -m FILE (-p TEXT | --ids I,J,...) [--embd-normalize N] [--threads N]\n\n"
            "Prints {\"n_tokens\": N, \"pooling\": \"...\", \"embedding\": [...]}: the sequence's\n"
            "embedding pooled as the file's pooling_type says (mean, cls, last; a decoder\n"
            "file without the key: its last token), divided by its Euclidean norm (as\n"
            "llama-server's /v1/embeddings) unless --embd-normalize says another norm.\n"
            "TEXT is tokenized with BOS or [CLS]/[SEP] where the vocabulary adds them.\n"
            "KV cache in f32.\n\n"
            "  -m, --model FILE    the model file\n"
            "  -p, --prompt TEXT   the text\n"
            "  --ids I,J,...       token ids instead of a text\n"
            "  --embd-normalize N  -1 none, 0 largest magnitude to 32760 (int16 range),\n"
            "                      1 taxicab, 2 Euclidean (default), N > 2 the N-norm\n"
            "  --no-normalize      the pooled vector as it is (--embd-normalize -1)\n"
            "  --threads N         CPU threads (default: the model's setting)\n"
            "  --help              this text\n");
}

/* "1,2,3" into ids; -1 on a malformed list. */
static int32_t parse_ids(const char *s, tport_token *ids, int32_t cap) {
    int32_t n = 0;
    while (*s) {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (end == s || errno || v < 0 || v > INT32_MAX || n == cap || (*end && *end != ','))
            return -1;
        ids[n++] = (tport_token)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

static const char *pooling_name(tport_pooling p) {
    switch (p) {
    case TPORT_POOLING_MEAN: return "mean";
    case TPORT_POOLING_CLS: return "cls";
    case TPORT_POOLING_LAST: return "last";
    case TPORT_POOLING_RANK: return "rank";
    default: return "none";
    }
}

int cmd_embed(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL, *id_list = NULL;
    int32_t norm = 2;
    int threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--no-normalize")) {
            norm = -1;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-p") || !strcmp(a, "--prompt") ||
                   !strcmp(a, "--ids") || !strcmp(a, "--threads") ||
                   !strcmp(a, "--embd-normalize")) {
            if (i + 1 >= argc)
                return tool_fail(2, "embed: %s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "-m") || !strcmp(a, "--model"))
                model = v;
            else if (!strcmp(a, "-p") || !strcmp(a, "--prompt"))
                prompt = v;
            else if (!strcmp(a, "--ids"))
                id_list = v;
            else if (!strcmp(a, "--embd-normalize")) {
                char *end = NULL;
                errno = 0;
                long nv = strtol(v, &end, 10);
                if (end == v || *end || errno || nv < -1 || nv > INT32_MAX)
                    return tool_fail(2, "embed: --embd-normalize needs an integer >= -1 (-1 none, 0 int16 range, "
                                     "1 taxicab, 2 Euclidean, N > 2 the N-norm), not '%s'", v);
                norm = (int32_t)nv;
            }
            else if ((threads = atoi(v)) < 1 || threads > 1024)
                return tool_fail(2, "embed: --threads needs a number in [1, 1024]");
        } else {
            return tool_fail(2, "embed: unknown argument '%s' (see tport embed --help)", a);
        }
    }
    if (!model)
        return tool_fail(2, "embed: no model file (-m FILE)");
    if (!prompt == !id_list)
        return tool_fail(2, "embed: give exactly one of -p TEXT and --ids I,J,...");
    tport_model_params mp = {.n_threads = threads};
    tport_model *m = tport_model_load(model, &mp);
    if (!m)
        return tool_fail(2, "%s", tport_last_error());
    int rc = 0;
    tport_token *ids = malloc(MAX_IDS * sizeof *ids);
    int32_t n_embd = tport_model_n_embd(m);
    float *out = malloc((size_t)(n_embd > 0 ? n_embd : 1) * sizeof *out);
    int32_t n = !ids || !out ? -2 : id_list ? parse_ids(id_list, ids, MAX_IDS) : tport_tokenize(m, prompt, true, ids, MAX_IDS);
    tport_session_params sp = {.kv_f32 = true};
    tport_session *s = n > 0 ? tport_session_new(m, &sp) : NULL;
    if (n == -2)
        rc = tool_fail(2, "embed: out of memory");
    else if (n <= 0)
        rc = tool_fail(2, "embed: %s", id_list ? "--ids needs ids separated by commas" :
                       n < 0 ? tport_last_error() : "the text has no tokens");
    else if (!s || tport_session_embed(s, ids, n, false, out, n_embd) != TPORT_STATUS_OK)
        rc = tool_fail(2, "embed: %s", tport_last_error());
    else {
        tport_embd_normalize(out, out, n_embd, norm);
        printf("{\"n_tokens\": %d, \"pooling\": \"%s\", \"embedding\": [", (int)n,
               pooling_name(tport_model_pooling(m)));
        for (int32_t i = 0; i < n_embd; i++)
            printf(i ? ", %.9g" : "%.9g", out[i]);
        printf("]}\n");
    }
    tport_session_free(s);
    free(out);
    free(ids);
    tport_model_free(m);
    return rc;
}
