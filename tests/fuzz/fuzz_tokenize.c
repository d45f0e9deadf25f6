/* libFuzzer target: any bytes as text through the tokenizers of
 * ../shared/models/vocab (TPORT_SHARED_DIR): the first byte picks the
 * vocabulary and the add_special / parse_special flags, the rest is the
 * text.  Ids must be in range and counted the same with and without an
 * output buffer; for byte-level BPE with parse_special off, the pieces of
 * valid UTF-8 text must give the text back. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tport/tport.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const NAMES[] = {"gpt-2", "llama-bpe", "qwen2", "falcon", "starcoder", "llama-spm", "phi-3", "mpt",
                                    "nomic-bert-moe" /* Unigram (UGM) */};
enum { N_VOCABS = sizeof NAMES / sizeof NAMES[0] };
static tport_tokenizer *vocabs[N_VOCABS];
/* Whether ASCII byte b alone comes back from vocabulary v.  A byte with no token
 * of its own is dropped, as llama.cpp drops it (falcon's vocabulary has
 * none for 0x03-0x05), so texts holding such a byte are not expected to
 * come back whole. */
static bool byte_kept[N_VOCABS][128];

/* The pieces of ids[0..n) joined into back, as much as fits in cap bytes;
 * returns their whole length, or -1 when a piece is refused. */
static long join_pieces(const tport_tokenizer *tk, const tport_token *ids, int32_t n, char *back, size_t cap) {
    size_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t m = tport_tokenizer_piece(tk, i ? ids[i - 1] : -1, ids[i], NULL, 0);
        if (m < 0)
            return -1;
        if (back && total + (size_t)m <= cap)
            tport_tokenizer_piece(tk, i ? ids[i - 1] : -1, ids[i], back + total, m);
        total += (size_t)m;
    }
    return (long)total;
}

static bool round_trips(const tport_tokenizer *tk, const char *text, size_t len) {
    tport_token ids[8];
    char back[64];
    int32_t n = tport_tokenizer_tokenize(tk, text, len, false, false, ids, 8);
    long total = n >= 0 && n <= 8 ? join_pieces(tk, ids, n, back, sizeof back) : -1;
    return total >= 0 && (size_t)total == len && len <= sizeof back && memcmp(back, text, len) == 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("TPORT_SHARED_DIR") ? getenv("TPORT_SHARED_DIR") : "../shared";
    for (int i = 0; i < N_VOCABS; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/models/vocab/ggml-vocab-%s.gguf", dir, NAMES[i]);
        vocabs[i] = tport_tokenizer_load(path);
        for (int b = 0; vocabs[i] && b < 128; b++) {
            char c = (char)b;
            byte_kept[i][b] = round_trips(vocabs[i], &c, 1);
        }
    }
    return 0;
}

/* Well-formed UTF-8 (no overlong forms, nothing past U+10FFFF): text the
 * tokenizers must keep byte for byte. */
static int valid_utf8(const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : (c >> 4) == 14 ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (k == 0 || i + k > n)
            return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return 0;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] >= 0x90))
            return 0;
        i += k;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    const int v = data[0] % N_VOCABS;
    const tport_tokenizer *tk = vocabs[v];
    if (!tk)
        return 0;
    const bool add_special = data[0] & 0x10, parse_special = data[0] & 0x20;
    bool bpe = v < 5;
    for (size_t i = 1; bpe && i < size; i++)
        bpe = data[i] >= 0x80 || byte_kept[v][data[i]]; /* multi-byte characters: checked whole */
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    int32_t n = tport_tokenizer_tokenize(tk, text, len, add_special, parse_special, NULL, 0);
    if (n < 0)
        return 0; /* out of memory */
    tport_token *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids)
        return 0;
    if (tport_tokenizer_tokenize(tk, text, len, add_special, parse_special, ids, n) != n)
        abort();
    int32_t n_tokens = tport_tokenizer_n_tokens(tk);
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_tokens)
            abort();
    char *back = malloc(len * 4 + 64);
    long total = join_pieces(tk, ids, n, back, len * 4 + 64);
    if (total < 0)
        abort();
    if (bpe && back && !add_special && !parse_special && valid_utf8(data + 1, len) &&
        ((size_t)total != len || memcmp(back, text, len) != 0))
        abort(); /* byte-level BPE loses nothing */
    free(back);
    free(ids);
    return 0;
}
