/* The SentencePiece BPE tokenizer on llama2.c's tokenizer.bin (the Llama-2
 * vocabulary): the rows of ../shared/refs/refs.json (llama.cpp's and
 * llama2.c's output), the llama.cpp tokenizations in data/tokenizer_refs.json
 * and properties that hold for any text: decode(encode(text)) == text, byte
 * fallback, the space prefix. */
#include <stdint.h>

#include "json_min.h"
#include "tokenize/tokenizer.h"
#include "../test_util.h"

#ifndef TPORT_MODEL_TEST_DATA
#define TPORT_MODEL_TEST_DATA "."
#endif

static const char *tricky[] = {
    "", " ", "  ", "a", " leading space", "trailing space ", "two  spaces   three",
    "line one\nline two\n\n", "\ttab\tseparated\t", "digits 0123456789 3.14159 1,000,000",
    "punctuation!?.,;:'\"()[]{}<>@#$%^&*-_=+/\\|~`",
    "caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \303\234ber Stra\303\237e",
    "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c", /* CJK */
    "emoji \xf0\x9f\x98\x80\xf0\x9f\x8e\x89 done",
    "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87", /* Devanagari */
    "<s> </s> <unk> <0x41>", "\x01\x02\x7f control bytes", "stray \200continuation, cut \303",
};

/* Concatenated decode of ids[from..n). */
static size_t decode_all(const tport_tokenizer *tk, const tport_token *ids, int from, int n,
                         char *buf, size_t cap) {
    size_t len = 0;
    tport_token prev = from > 0 ? ids[from - 1] : -1;
    for (int i = from; i < n; i++) {
        char piece[64];
        int32_t k = tport_tokenizer_decode(tk, prev, ids[i], piece, (int32_t)sizeof piece);
        if (k > (int32_t)sizeof piece)
            k = (int32_t)sizeof piece;
        for (int32_t j = 0; j < k && len < cap; j++)
            buf[len++] = piece[j];
        prev = ids[i];
    }
    return len;
}

static void check_ids(const char *what, const char *text, const tport_token *got, int n_got,
                      const json *want) {
    int same = want && want->kind == JSON_ARRAY && (int)want->n == n_got;
    for (int i = 0; same && i < n_got; i++)
        same = (double)got[i] == want->items[i].number;
    CHECK(same, "%s: tokenization of \"%s\" differs (%d ids)", what, text, n_got);
    if (!same) {
        fprintf(stderr, "  got:");
        for (int i = 0; i < n_got; i++)
            fprintf(stderr, " %d", (int)got[i]);
        fprintf(stderr, "\n  want:");
        for (size_t i = 0; want && i < want->n; i++)
            fprintf(stderr, " %d", (int)want->items[i].number);
        fputc('\n', stderr);
    }
}

static int run_ref_rows(const tport_tokenizer *tk, const json *rows, const char *what) {
    int n_rows = 0;
    for (size_t r = 0; rows && rows->kind == JSON_ARRAY && r < rows->n; r++) {
        const json *text = json_get(&rows->items[r], "text");
        const json *ids = json_get(&rows->items[r], "ids");
        if (!text || text->kind != JSON_STRING || !ids)
            continue;
        tport_token got[512];
        int32_t n = tport_tokenizer_encode(tk, text->str, text->str_len, true, got, 512);
        CHECK(n >= 0 && n <= 512, "%s: encode returned %d", what, (int)n);
        if (n < 0 || n > 512)
            continue;
        check_ids(what, text->str, got, n, ids);
        n_rows++;
    }
    return n_rows;
}

static void check_round_trip(const tport_tokenizer *tk, const char *text) {
    size_t len = strlen(text);
    tport_token ids[256];
    int32_t n = tport_tokenizer_encode(tk, text, len, true, ids, 256);
    CHECK(n >= 1 && n <= 256, "encode(\"%s\") = %d", text, (int)n);
    if (n < 1 || n > 256)
        return;
    CHECK(ids[0] == tport_tokenizer_bos(tk), "first id %d is not BOS", (int)ids[0]);
    /* the count with cap 0 equals the count written */
    CHECK(tport_tokenizer_encode(tk, text, len, true, NULL, 0) == n, "counting differs");
    for (int i = 0; i < n; i++)
        CHECK(ids[i] >= 0 && ids[i] < tport_tokenizer_n_tokens(tk), "id %d out of range", (int)ids[i]);
    char out[1024];
    size_t k = decode_all(tk, ids, 1, n, out, sizeof out);
    CHECK(k == len && memcmp(out, text, len) == 0, "round trip of \"%s\" gave \"%.*s\"", text,
          (int)k, out);
}

int main(void) {
    char path[1024], refs_path[1024];
    if (!test_shared_path("models/llama2-tokenizer.bin", path, sizeof path))
        test_skip("test_tokenizer", "../shared/models/llama2-tokenizer.bin absent");
    tport_tokenizer *tk = NULL;
    CHECK(tport_tokenizer_load_llama2c(path, 32000, &tk) == TPORT_STATUS_OK, "load: %s",
          tport_last_error());
    if (!tk)
        return test_finish("test_tokenizer");
    CHECK(tport_tokenizer_n_tokens(tk) == 32000, "n_tokens");
    CHECK(tport_tokenizer_bos(tk) == 1 && tport_tokenizer_eos(tk) == 2, "bos/eos");

    /* A truncated vocabulary is an error, not a crash. */
    tport_tokenizer *bad = NULL;
    CHECK(tport_tokenizer_load_llama2c(path, 40000, &bad) == TPORT_STATUS_BAD_FORMAT && !bad,
          "a file shorter than the vocabulary must be refused");

    /* Reference rows from llama.cpp / llama2.c. */
    if (test_shared_path("refs/refs.json", refs_path, sizeof refs_path)) {
        json *refs = json_load(refs_path);
        CHECK(refs != NULL, "cannot parse %s", refs_path);
        const json *tok = json_get(refs, "tokenizer (llama-2-tiny-random.gguf vocabulary == llama2-tokenizer.bin)");
        int n = run_ref_rows(tk, json_get(tok, "rows"), "refs.json");
        CHECK(n >= 4, "refs.json: only %d tokenizer rows", n);
        printf("test_tokenizer: %d rows of refs.json compared\n", n);
        json_free(refs);
    } else {
        printf("test_tokenizer: refs.json absent, reference rows skipped\n");
    }

    /* llama.cpp's own tokenizations of tricky strings (see data/README.md). */
    json *local = json_load(TPORT_MODEL_TEST_DATA "/tokenizer_refs.json");
    if (local) {
        int n = run_ref_rows(tk, json_get(local, "rows"), "tokenizer_refs.json");
        CHECK(n >= 10, "tokenizer_refs.json: only %d rows", n);
        printf("test_tokenizer: %d rows of tokenizer_refs.json compared\n", n);
        json_free(local);
    } else {
        printf("test_tokenizer: data/tokenizer_refs.json absent, llama.cpp rows skipped\n");
    }

    for (size_t i = 0; i < sizeof tricky / sizeof tricky[0]; i++)
        check_round_trip(tk, tricky[i]);

    /* Properties llama.cpp's algorithm implies. */
    tport_token ids[64];
    CHECK(tport_tokenizer_encode(tk, "", 0, true, ids, 64) == 1 && ids[0] == 1,
          "empty text gives only BOS");
    CHECK(tport_tokenizer_encode(tk, "", 0, false, ids, 64) == 0, "empty text without BOS");
    int32_t n = tport_tokenizer_encode(tk, "hello", 5, false, ids, 64);
    uint32_t len = 0;
    const char *t = n == 1 ? tport_tokenizer_token_text(tk, ids[0], &len) : NULL;
    CHECK(t && len == 8 && memcmp(t, "\xe2\x96\x81hello", 8) == 0,
          "\"hello\" is the single token \"\\u2581hello\" (n=%d)", (int)n);
    /* U+10FFFF is not in the vocabulary: four byte tokens. */
    n = tport_tokenizer_encode(tk, "\xf4\x8f\xbf\xbf", 4, false, ids, 64);
    CHECK(n == 5, "unknown character: %d ids", (int)n);
    if (n == 5) {
        const unsigned char want[4] = {0xf4, 0x8f, 0xbf, 0xbf};
        for (int i = 1; i < 5; i++) {
            char c = 0;
            CHECK(tport_tokenizer_decode(tk, ids[i - 1], ids[i], &c, 1) == 1 &&
                  (unsigned char)c == want[i - 1], "byte token %d", (int)ids[i]);
            t = tport_tokenizer_token_text(tk, ids[i], &len);
            char name[8];
            snprintf(name, sizeof name, "<0x%02X>", want[i - 1]);
            CHECK(t && len == 6 && !memcmp(t, name, 6), "byte fallback token is %s", name);
        }
    }
    /* The leading space survives when the token is not first. */
    char piece[16];
    n = tport_tokenizer_encode(tk, "a b", 3, false, ids, 64);
    CHECK(n == 2, "\"a b\": %d ids", (int)n);
    if (n == 2)
        CHECK(tport_tokenizer_decode(tk, ids[0], ids[1], piece, 16) == 2 && !memcmp(piece, " b", 2),
              "\" b\" keeps its space after another token");
    /* Control tokens decode to nothing; out-of-range ids too. */
    CHECK(tport_tokenizer_decode(tk, -1, 1, piece, 16) == 0, "BOS decodes to nothing");
    CHECK(tport_tokenizer_decode(tk, -1, 99999, piece, 16) == 0, "bad id decodes to nothing");
    /* Decoding reports the full length even when the buffer is short. */
    tport_token hello = tport_tokenizer_find(tk, "\xe2\x96\x81hello", 8);
    CHECK(hello >= 0 && tport_tokenizer_decode(tk, 100, hello, piece, 2) == 6, "length when short");

    tport_tokenizer_free(tk);
    return test_finish("test_tokenizer");
}
