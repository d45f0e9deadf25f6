/* The BPE merge rules on small hand-made vocabularies (no ../shared data):
 * the highest-scoring merge goes first, ties go to the leftmost pair,
 * merges continue on merged pieces, unknown characters fall back to
 * <0xXX> tokens, and a pre-GGUF vocabulary (plain spaces, no token types)
 * behaves like the SentencePiece one. */
#include "../test_util.h"
#include "tokenize/tokenizer.h"

#define SP "\xe2\x96\x81" /* U+2581 */

typedef struct entry {
    const char *text;
    float score;
} entry;

/* <unk> <s> </s>, the 256 byte tokens, then the given entries. */
static tport_tokenizer *make(const entry *e, int n, bool plain_spaces, bool with_types) {
    static char bytes[256][8];
    int total = 3 + 256 + n;
    char **tokens = calloc((size_t)total, sizeof *tokens);
    uint32_t *len = calloc((size_t)total, sizeof *len);
    float *scores = calloc((size_t)total, sizeof *scores);
    int32_t *types = calloc((size_t)total, sizeof *types);
    char *owned[64] = {0};
    const char *fixed[3] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < 3; i++) {
        tokens[i] = (char *)fixed[i];
        types[i] = i == 0 ? 2 : 3;
    }
    for (int b = 0; b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        tokens[3 + b] = bytes[b];
        types[3 + b] = 6;
    }
    for (int i = 0; i < n && i < 64; i++) {
        owned[i] = strdup(e[i].text);
        if (plain_spaces) /* what some pre-GGUF converters stored */
            for (char *p; (p = strstr(owned[i], SP));)
                memmove(p + 1, p + 3, strlen(p + 3) + 1), *p = ' ';
        tokens[3 + 256 + i] = owned[i];
        scores[3 + 256 + i] = e[i].score;
        types[3 + 256 + i] = 1;
    }
    for (int i = 0; i < total; i++)
        len[i] = (uint32_t)strlen(tokens[i]);
    tport_vocab v = {.model = "llama", .n_tokens = total, .tokens = tokens, .token_len = len,
                     .scores = scores, .token_type = with_types ? types : NULL,
                     .bos = 1, .eos = 2, .unk = 0, .pad = -1, .add_bos = true};
    tport_tokenizer *tk = NULL;
    CHECK(tport_tokenizer_from_vocab(&v, true, &tk) == TPORT_STATUS_OK, "from_vocab: %s", tport_last_error());
    for (int i = 0; i < n && i < 64; i++)
        free(owned[i]);
    free(tokens);
    free(len);
    free(scores);
    free(types);
    return tk;
}

/* Encodes text without BOS and compares the token texts, '|'-separated. */
static void expect(const tport_tokenizer *tk, const char *text, const char *want) {
    tport_token ids[64];
    int32_t n = tport_tokenizer_encode(tk, text, strlen(text), false, ids, 64);
    char got[512] = "";
    size_t k = 0;
    for (int32_t i = 0; i < n && i < 64; i++) {
        uint32_t len = 0;
        const char *t = tport_tokenizer_token_text(tk, ids[i], &len);
        k += (size_t)snprintf(got + k, sizeof got - k, "%s%.*s", i ? "|" : "", (int)len, t ? t : "?");
    }
    CHECK(!strcmp(got, want), "\"%s\": got %s, want %s", text, got, want);
}

int main(void) {
    /* "ab" outscores "▁a": "▁" "ab" then "▁ab" */
    const entry v1[] = {{SP, -1}, {"a", -2}, {"b", -2}, {SP "a", -5}, {"ab", -3}, {SP "ab", -4}};
    tport_tokenizer *tk = make(v1, 6, false, true);
    if (!tk)
        return test_finish("test_tokenizer_bpe");
    expect(tk, "ab", SP "ab");
    expect(tk, "ba", SP "|b|a"); /* "▁b", "ba" are not tokens */
    expect(tk, "a b", SP "a|" SP "|b");
    expect(tk, "", "");
    /* "c" is not in the vocabulary: byte fallback */
    expect(tk, "c", SP "|<0x63>");
    /* U+00E9 as two byte tokens */
    expect(tk, "\xc3\xa9", SP "|<0xC3>|<0xA9>");
    tport_tokenizer_free(tk);

    /* equal scores: the leftmost pair merges first ("aa" "a", not "a" "aa") */
    const entry v2[] = {{SP, -1}, {"a", -2}, {"aa", -3}};
    tk = make(v2, 3, false, true);
    expect(tk, "aaa", SP "|aa|a");
    tport_tokenizer_free(tk);

    /* a merge that only exists once its left part was merged */
    const entry v3[] = {{SP, -1}, {"x", -2}, {"y", -2}, {"z", -2}, {"xy", -9}, {"xyz", -1}, {"yz", -5}};
    tk = make(v3, 7, false, true);
    /* "yz" (-5) beats "xy" (-9); then x + yz = "xyz" is a new candidate */
    expect(tk, "xyz", SP "|xyz");
    expect(tk, "xy", SP "|xy");
    tport_tokenizer_free(tk);

    /* a pre-GGUF vocabulary: plain spaces, no token types */
    tk = make(v1, 6, true, false);
    if (tk) {
        expect(tk, "ab", SP "ab");
        expect(tk, "a b", SP "a|" SP "|b");
        tport_token ids[8];
        int32_t n = tport_tokenizer_encode(tk, "c", 1, true, ids, 8);
        CHECK(n == 3 && ids[0] == 1, "BOS then two ids (%d)", (int)n);
        char c = 0;
        CHECK(n == 3 && tport_tokenizer_decode(tk, ids[1], ids[2], &c, 1) == 1 && c == 'c',
              "inferred byte tokens decode to their byte");
        CHECK(tport_tokenizer_decode(tk, -1, 1, &c, 1) == 0, "inferred BOS is a control token");
        tport_tokenizer_free(tk);
    }

    /* bad vocabularies are refused */
    tport_vocab empty = {.model = "llama"};
    tport_tokenizer *none = NULL;
    CHECK(tport_tokenizer_from_vocab(&empty, true, &none) != TPORT_STATUS_OK && !none, "empty vocabulary");
    char *tok[1] = {"a"};
    uint32_t l[1] = {1};
    tport_vocab gpt2 = {.model = "gpt2", .n_tokens = 1, .tokens = tok, .token_len = l, .bos = -1, .eos = -1, .unk = -1};
    CHECK(tport_tokenizer_from_vocab(&gpt2, true, &none) == TPORT_STATUS_UNSUPPORTED && !none, "gpt2 refused");
    return test_finish("test_tokenizer_bpe");
}
