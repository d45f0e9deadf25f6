/* A text file tokenized whole, as llama.cpp's tools (llama-perplexity,
 * llama-imatrix) tokenize their -f file: BOS/EOS as the model file says,
 * special-token text as plain text; and how both score a token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

#define MAX_TEXT_BYTES ((size_t)1 << 31)

tport_token *tool_tokenize_file(const tport_model *m, const char *path, const char *what, int32_t *n_out) {
    size_t size = 0;
    char *text = tool_read_all(path, MAX_TEXT_BYTES, &size);
    if (!text)
        return NULL;
    char *z = realloc(text, size + 1);
    if (!z) {
        free(text);
        tool_fail(2, "%s: out of memory", what);
        return NULL;
    }
    z[size] = '\0';
    if (strlen(z) != size) {
        free(z);
        tool_fail(2, "%s: %s holds a NUL byte; it must be text", what, path);
        return NULL;
    }
    int32_t n = tport_tokenize(m, z, true, NULL, 0);
    tport_token *ids = n > 0 ? malloc((size_t)n * sizeof *ids) : NULL;
    if (n < 0 || (n > 0 && !ids) || (ids && tport_tokenize(m, z, true, ids, n) != n)) {
        free(z);
        free(ids);
        tool_fail(2, "%s: %s", what, n < 0 ? "the model has no vocabulary" : "out of memory");
        return NULL;
    }
    free(z);
    *n_out = n;
    return ids;
}

bool tool_adds_bos(const tport_model *m) {
    /* llama.cpp's add_bos: what tokenizing nothing with add_special gives */
    tport_token probe[2];
    return tport_tokenize(m, "", true, probe, 2) == 1 && probe[0] == tport_model_bos(m);
}

double tool_neg_log_prob(const float *logits, int32_t n_vocab, tport_token tok) {
    float max = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        max = logits[i] > max ? logits[i] : max;
    double sum = 0.0;
    for (int32_t i = 0; i < n_vocab; i++)
        sum += expf(logits[i] - max);
    return -(logits[tok] - max - log(sum));
}
