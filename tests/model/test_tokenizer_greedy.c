/* The tokenizer of ggml's 2023 example programs (gpt_tokenize in ggml's
 * examples/common.cpp) on a GGML-container vocabulary without merges.
 * Expected ids follow that function by hand (no ggml build here): words
 * by its std::regex in the C locale, then the longest token from each
 * position, an unknown byte skipped. */
#include "../test_util.h"
#include "tokenize/tokenizer.h"

static const char *const TOKENS[] = {
    "H", "e", "l", "o", " ", "Hello", " world", " wor", "ld", "!", "'s", "s", "\xc3\xa9", "!\xc3\xa9",
    "1", "12", "3", "  ", "\n", " x", "x", "<|endoftext|>",
};
enum { N = sizeof TOKENS / sizeof TOKENS[0] };

static int32_t enc(const tport_tokenizer *tk, const char *text, tport_token *ids) {
    return tport_tokenizer_encode_ex(tk, text, strlen(text), true, true, ids, 32);
}

static int same(const tport_token *got, int32_t n, const int *want, int32_t m) {
    if (n != m)
        return 0;
    for (int32_t i = 0; i < n; i++)
        if (got[i] != want[i])
            return 0;
    return 1;
}

int main(void) {
    char *tok[N];
    uint32_t len[N];
    for (int i = 0; i < N; i++) {
        tok[i] = (char *)TOKENS[i];
        len[i] = (uint32_t)strlen(TOKENS[i]);
    }
    tport_model_file mf = {.path = "example.bin", .container = TPORT_CONTAINER_GGML};
    mf.vocab = (tport_vocab){.model = "gpt2", .n_tokens = N, .tokens = tok, .token_len = len,
                             .bos = 21, .eos = 21, .unk = -1, .pad = -1};
    tport_tokenizer *tk = NULL;
    CHECK(tport_tokenizer_from_file(&mf, &tk) == TPORT_STATUS_OK, "%s", tport_last_error());
    if (!tk)
        return test_finish("test_tokenizer_greedy");
    tport_token ids[32];
    int32_t n;
    /* "Hello" " world" "!": longest match; no BOS even with add_special */
    n = enc(tk, "Hello world!", ids);
    CHECK(same(ids, n, (int[]){5, 6, 9}, 3), "Hello world! (%d ids)", (int)n);
    /* the longest prefix of the word first: " world", then "s" */
    n = enc(tk, " worlds", ids);
    CHECK(same(ids, n, (int[]){6, 11}, 2), "' worlds' (%d ids)", (int)n);
    /* "'s" is its own word; then "s" */
    n = enc(tk, "'ss", ids);
    CHECK(same(ids, n, (int[]){10, 11}, 2), "'ss (%d)", (int)n);
    /* non-ASCII bytes are "other", like '!': one word "!é", one token */
    n = enc(tk, "!\xc3\xa9", ids);
    CHECK(same(ids, n, (int[]){13}, 1), "!e-acute (%d)", (int)n);
    /* digits: longest first ("12" "3"); a byte no token starts is skipped ('z') */
    n = enc(tk, "123z", ids);
    CHECK(same(ids, n, (int[]){15, 16}, 2), "123z (%d)", (int)n);
    /* three spaces before x: "  " (\s+(?!\S)) then " x" */
    n = enc(tk, "   x", ids);
    CHECK(same(ids, n, (int[]){17, 19}, 2), "'   x' (%d)", (int)n);
    /* special-token text is split like any text: '<' and '|' skipped... */
    n = enc(tk, "<|endoftext|>", ids);
    CHECK(n >= 0 && (n == 0 || ids[0] != 21), "no special-token matching (%d)", (int)n);
    /* pieces are the raw bytes */
    char buf[16];
    CHECK(tport_tokenizer_decode(tk, -1, 6, buf, sizeof buf) == 6 && !memcmp(buf, " world", 6), "piece");
    CHECK(tport_tokenizer_bos(tk) == 21, "BOS/EOS from the file's <|endoftext|>");
    tport_tokenizer_free(tk);
    return test_finish("test_tokenizer_greedy");
}
