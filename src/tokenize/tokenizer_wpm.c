/* WordPiece, as llama.cpp's llm_tokenizer_wpm (BERT vocabularies, GGUF
 * tokenizer model "bert"): the text is normalized (lowercased and accents
 * stripped, as BERT's normalizer does by default) and split into words at
 * white space and around punctuation, ASCII symbols and CJK ideographs;
 * each word, with U+2581 in front, becomes the longest vocabulary pieces
 * from left to right, or the unknown token when some position matches
 * nothing. */
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenizer_impl.h"
#include "tokenize/unicode.h"

/* BERT's "Chinese character" blocks (CJK ideographs and extensions). */
static bool is_cjk(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
           (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
           (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

/* One word being built: "\xe2\x96\x81" then its UTF-8. */
typedef struct word {
    char *s;
    size_t n, cap;
} word;

static int word_put(word *w, const char *p, size_t n) {
    if (w->n + n > w->cap) {
        size_t cap = (w->n + n) * 2 + 16;
        char *s = realloc(w->s, cap);
        if (!s)
            return -1;
        w->s = s;
        w->cap = cap;
    }
    memcpy(w->s + w->n, p, n);
    w->n += n;
    return 0;
}

/* The longest pieces of w from the left; none and the unknown token
 * instead when a position matches nothing. */
static void encode_word(const tport_tokenizer *tk, const word *w, tport_tok_out *out) {
    const int32_t first = out->n;
    for (size_t i = 0; i < w->n; i++) {
        size_t j = w->n < i + tk->max_token_len + 1 ? w->n : i + tk->max_token_len + 1;
        tport_token id = -1;
        for (; j > i && id < 0; j--)
            id = tport_tokenizer_find(tk, w->s + i, j - i);
        if (id < 0) {
            out->n = first; /* discard the word's pieces */
            break;
        }
        tport_tok_emit(out, id);
        i = j; /* j was decremented once past the match: the loop's i++ lands after it */
    }
    if (out->n == first && tk->unk >= 0)
        tport_tok_emit(out, tk->unk);
}

int tport_wpm_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len, tport_tok_out *out) {
    static const char PHANTOM[] = "\xe2\x96\x81";
    word w = {0};
    int rc = word_put(&w, PHANTOM, 3);
    for (size_t off = 0, used = 0; off < len && rc == 0; off += used) {
        uint32_t c = tport_utf8_decode(text + off, len - off, &used);
        if (tk->wpm_strip_accents)
            c = tport_unicode_nfd_first(c);
        if (tport_unicode_is_space(c)) {
            if (w.n > 3)
                encode_word(tk, &w, out);
            w.n = 3;
            continue;
        }
        enum tport_ucat cat = tport_unicode_category(c);
        if (c == 0 || c == 0xFFFD || cat == TPORT_UCAT_CONTROL)
            continue;
        if (tk->wpm_strip_accents && cat == TPORT_UCAT_MARK)
            continue;
        char u[4];
        size_t m = tport_utf8_encode(tk->wpm_lowercase ? tport_unicode_tolower(c) : c, u);
        if (cat == TPORT_UCAT_PUNCTUATION || (c < 0x7F && cat == TPORT_UCAT_SYMBOL) || is_cjk(c)) {
            if (w.n > 3) /* a word of its own */
                encode_word(tk, &w, out);
            w.n = 3;
            rc = word_put(&w, u, m);
            if (rc == 0)
                encode_word(tk, &w, out);
            w.n = 3;
        } else {
            rc = word_put(&w, u, m);
        }
    }
    if (rc == 0 && w.n > 3)
        encode_word(tk, &w, out);
    free(w.s);
    return rc;
}
