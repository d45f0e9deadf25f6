/* Special tokens against llama.cpp (data/tokenizer_special_refs.json, see
 * data/README.md): for every vocabulary of ../shared/models/vocab, strings
 * holding special-token text tokenized with parse_special off (the text is
 * plain, only user-defined tokens are split out) and on; BOS/EOS ids and
 * whether add_special adds them, as llama.cpp decides from the metadata
 * and the tokenizer type. */
#include <stdio.h>
#include <string.h>

#include "../test_util.h"
#include "json_min.h"
#include "tokenize/tokenizer.h"

static void check_vocab(const char *name, const json *v) {
    char rel[128], path[512];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf", name);
    if (!test_shared_path(rel, path, sizeof path)) {
        CHECK(0, "%s missing", rel);
        return;
    }
    tport_tokenizer *tk = tport_tokenizer_load(path);
    CHECK(tk != NULL, "%s: %s", name, tport_last_error());
    if (!tk)
        return;
    const json *bos = json_get(v, "bos"), *eos = json_get(v, "eos"), *cases = json_get(v, "cases");
    const json *add_bos = json_get(v, "add_bos"), *add_eos = json_get(v, "add_eos");
    CHECK(bos && (int)bos->number == tport_tokenizer_bos(tk), "%s: bos %d", name, (int)tport_tokenizer_bos(tk));
    CHECK(eos && (int)eos->number == tport_tokenizer_eos(tk), "%s: eos %d", name, (int)tport_tokenizer_eos(tk));
    int ok = 0, total = 0;
    for (size_t i = 0; cases && i < cases->n; i++) {
        const json *c = &cases->items[i];
        const json *text = json_get(c, "text"), *ps = json_get(c, "parse_special"), *ids = json_get(c, "ids");
        if (!text || !ps || !ids)
            continue;
        tport_token got[512];
        int32_t n = tport_tokenizer_tokenize(tk, text->str, text->str_len, false, ps->number != 0, got, 512);
        int same = n == (int32_t)ids->n;
        for (int32_t k = 0; same && k < n; k++)
            same = got[k] == (tport_token)ids->items[k].number;
        CHECK(same, "%s: \"%s\" (parse_special %d): %d ids, want %d", name, text->str, (int)ps->number, (int)n,
              (int)ids->n);
        ok += same;
        total++;
        /* add_special puts BOS before and EOS after exactly when llama.cpp's flags say */
        if (!ps->number) {
            tport_token with[514];
            int32_t m = tport_tokenizer_tokenize(tk, text->str, text->str_len, true, false, with, 514);
            int want_n = n + (add_bos->number != 0) + (add_eos->number != 0);
            int good = m == want_n && (!add_bos->number || with[0] == (tport_token)bos->number) &&
                       (!add_eos->number || with[m - 1] == (tport_token)eos->number);
            CHECK(good, "%s: add_special on \"%s\": %d ids, want %d", name, text->str, (int)m, want_n);
        }
    }
    printf("%s: %d/%d special-token cases match llama.cpp\n", name, ok, total);
    tport_tokenizer_free(tk);
}

int main(void) {
    char probe[512];
    if (!test_shared_path("models/vocab/ggml-vocab-gpt-2.gguf", probe, sizeof probe))
        test_skip("test_tokenizer_special", "../shared/models/vocab absent");
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/tokenizer_special_refs.json");
    CHECK(refs != NULL, "cannot read tokenizer_special_refs.json");
    const json *vocabs = refs ? json_get(refs, "vocabs") : NULL;
    for (size_t i = 0; vocabs && i < vocabs->n; i++)
        check_vocab(vocabs->keys[i], &vocabs->items[i]);
    CHECK(vocabs && vocabs->n == 9, "nine vocabularies");
    json_free(refs);
    return test_finish("test_tokenizer_special");
}
