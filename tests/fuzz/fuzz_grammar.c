/* libFuzzer target: any bytes as a GBNF grammar (tport_grammar_parse; it
 * comes from HTTP requests).  Up to the first NUL byte is the grammar;
 * each byte after it picks a token of a small raw-byte vocabulary (the 256
 * bytes, then a few multi-byte pieces) that is accepted when the grammar
 * allows it, with the mask computed at every step: parsing and matching
 * must succeed or fail cleanly, and the mask must agree with allows(). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenizer_impl.h"
#include "tport/tport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const extra[] = {"{\"", "\":", "true", "\xc3\xa9", "\xe6\x97", "\xa5", "\xf0\x9f\x98\x80", "  "};
#define N_EXTRA (sizeof extra / sizeof *extra)

static tport_tokenizer *vocab(void) {
    static tport_tokenizer *tk;
    if (tk)
        return tk;
    tk = tport_tokenizer_alloc(256 + (int32_t)N_EXTRA);
    if (!tk)
        abort();
    for (int32_t i = 0; i < 256 + (int32_t)N_EXTRA; i++) {
        char b[2] = {(char)i, 0};
        const char *s = i < 256 ? b : extra[i - 256];
        size_t n = i < 256 ? 1 : strlen(s);
        tk->text[i] = malloc(n + 1);
        memcpy(tk->text[i], s, n);
        tk->text[i][n] = 0;
        tk->len[i] = (uint32_t)n;
        tk->type[i] = TPORT_TOKEN_NORMAL;
    }
    tk->kind = TPORT_TOK_GREEDY;
    tk->bos = tk->eos = tk->unk = -1;
    tport_tokenizer_attrs_from_types(tk);
    if (tport_tokenizer_index(tk) != TPORT_STATUS_OK)
        abort();
    return tk;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t glen = nul ? (size_t)(nul - data) : size;
    tport_grammar *g = tport_grammar_parse((const char *)data, glen, NULL);
    if (!g)
        return 0;
    const tport_tokenizer *tk = vocab();
    tport_grammar_state *st = tport_grammar_state_new(g, tk);
    int32_t nv = tport_tokenizer_n_tokens(tk);
    float logits[256 + N_EXTRA];
    for (size_t i = nul ? glen + 1 : size; st && i < size && i < glen + 1 + 64; i++) {
        for (int32_t k = 0; k < nv; k++)
            logits[k] = 0;
        tport_token end = 0;
        if (tport_grammar_apply(st, logits, nv, &end, 1) != TPORT_STATUS_OK)
            break;
        for (int32_t k = 1; k < nv; k++)
            if ((logits[k] == 0) != tport_grammar_allows(st, k))
                abort(); /* the mask and allows() disagree */
        tport_token id = data[i] < 250 ? data[i] : 256 + data[i] % (int32_t)N_EXTRA;
        if (tport_grammar_allows(st, id) && tport_grammar_accept(st, id) != TPORT_STATUS_OK)
            abort(); /* allowed, then refused */
        if (tport_grammar_must_end(st))
            break;
    }
    tport_grammar_state_free(st);
    tport_grammar_free(g);
    return 0;
}
