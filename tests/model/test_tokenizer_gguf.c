/* The tokenizer fed by a GGUF file's own vocabulary (tokenizer.ggml.*) via
 * the public API: llama.cpp's ids for refs.json's rows and for
 * data/tokenizer_refs.json, decoding back to the text, and agreement with
 * llama2.c's tokenizer.bin of the same vocabulary. */
#include "json_min.h"
#include "../test_util.h"
#include "tport/tport.h"

#ifndef TPORT_MODEL_TEST_DATA
#define TPORT_MODEL_TEST_DATA "."
#endif

static int compare_rows(const tport_model *m, const json *rows, const char *what) {
    int n_rows = 0;
    for (size_t r = 0; rows && rows->kind == JSON_ARRAY && r < rows->n; r++) {
        const json *text = json_get(&rows->items[r], "text"), *want = json_get(&rows->items[r], "ids");
        if (!text || text->kind != JSON_STRING || !want || want->kind != JSON_ARRAY)
            continue;
        tport_token ids[512];
        int32_t n = tport_tokenize(m, text->str, true, ids, 512);
        int same = n == (int32_t)want->n;
        for (int32_t i = 0; same && i < n; i++)
            same = ids[i] == (tport_token)want->items[i].number;
        CHECK(same, "%s: \"%s\" tokenized differently (%d ids, want %zu)", what, text->str, (int)n, want->n);
        /* decoding the ids after BOS gives the text back */
        char out[2048];
        size_t len = 0;
        for (int32_t i = 1; same && i < n; i++) {
            char piece[64];
            int32_t k = tport_token_to_text(m, ids[i - 1], ids[i], piece, (int32_t)sizeof piece);
            for (int32_t j = 0; j < k && len < sizeof out; j++)
                out[len++] = piece[j];
        }
        CHECK(!same || (len == text->str_len && !memcmp(out, text->str, len)),
              "%s: \"%s\" decoded as \"%.*s\"", what, text->str, (int)len, out);
        n_rows++;
    }
    return n_rows;
}

int main(void) {
    char path[1024], refs_path[1024], tok_path[1024];
    if (!test_shared_path("models/llama-2-tiny-random.gguf", path, sizeof path))
        test_skip("test_tokenizer_gguf", "../shared/models/llama-2-tiny-random.gguf absent");
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (!m)
        return test_finish("test_tokenizer_gguf");
    CHECK(tport_model_bos(m) == 1 && tport_model_eos(m) == 2, "BOS/EOS from the GGUF metadata");
    int rows = 0;
    if (test_shared_path("refs/refs.json", refs_path, sizeof refs_path)) {
        json *refs = json_load(refs_path);
        const json *tok = json_get(refs, "tokenizer (llama-2-tiny-random.gguf vocabulary == llama2-tokenizer.bin)");
        rows += compare_rows(m, json_get(tok, "rows"), "refs.json");
        json_free(refs);
    }
    json *local = json_load(TPORT_MODEL_TEST_DATA "/tokenizer_refs.json");
    CHECK(local != NULL, "data/tokenizer_refs.json is part of the repository");
    rows += compare_rows(m, json_get(local, "rows"), "tokenizer_refs.json");
    json_free(local);
    printf("test_tokenizer_gguf: %d rows compared with llama.cpp\n", rows);

    /* the same vocabulary from llama2.c's tokenizer.bin gives the same ids */
    if (test_shared_path("models/llama2-tokenizer.bin", tok_path, sizeof tok_path)) {
        tport_model_params p = {.tokenizer_path = tok_path};
        tport_model *m2 = tport_model_load(path, &p);
        CHECK(m2 != NULL, "load with --tokenizer: %s", tport_last_error());
        const char *text = "Mixed: caf\xc3\xa9, \xe4\xbd\xa0\xe5\xa5\xbd, 42 \xf0\x9f\x98\x80!\n  end";
        tport_token a[128], b[128];
        int32_t na = tport_tokenize(m, text, true, a, 128);
        int32_t nb = m2 ? tport_tokenize(m2, text, true, b, 128) : -1;
        CHECK(na > 0 && na == nb && !memcmp(a, b, (size_t)na * sizeof a[0]),
              "GGUF vocabulary and tokenizer.bin disagree (%d vs %d ids)", (int)na, (int)nb);
        tport_model_free(m2);
    }
    /* the count is returned even when it does not fit */
    tport_token few[2];
    CHECK(tport_tokenize(m, "Once upon a time", true, few, 2) == 5, "needed count when cap is short");
    tport_model_free(m);
    return test_finish("test_tokenizer_gguf");
}
