/* The tokenizer of ggml's 2023 example programs (gpt-2, gpt-j, gpt-neox,
 * starcoder: examples/common.cpp gpt_tokenize), for the GGML files they
 * wrote, whose vocabularies hold the raw bytes of each token and no
 * merges.  The text is split into words by
 *   's|'t|'re|'ve|'m|'ll|'d| ?[[:alpha:]]+| ?[[:digit:]]+| ?[^\s[:alpha:][:digit:]]+|\s+(?!\S)|\s+
 * with std::regex in the C locale (so the classes are ASCII and every
 * other byte counts as "other"); each word is then cut greedily into the
 * longest tokens from its start, skipping a byte no token starts with. */
#include "tokenize/tokenizer_impl.h"

static bool c_alpha(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool c_digit(unsigned char c) { return c >= '0' && c <= '9'; }
static bool c_space(unsigned char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static bool c_other(unsigned char c) { return !c_alpha(c) && !c_digit(c) && !c_space(c); }

/* Length of the word at s[p..n) (n > p). */
static size_t word_at(const unsigned char *s, size_t p, size_t n) {
    if (s[p] == '\'' && p + 1 < n) {
        unsigned char a = s[p + 1], b = p + 2 < n ? s[p + 2] : 0;
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return 2;
        if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
            return 3;
    }
    size_t f = s[p] == ' ' && p + 1 < n ? p + 1 : p; /* " ?" then a class */
    bool (*run)(unsigned char) = NULL;
    if (c_alpha(s[f]))
        run = c_alpha;
    else if (c_digit(s[f]))
        run = c_digit;
    else if (c_other(s[f]))
        run = c_other;
    if (run && (f > p || !c_space(s[p]))) {
        size_t q = f;
        while (q < n && run(s[q]))
            q++;
        return q - p;
    }
    size_t q = p;
    while (q < n && c_space(s[q]))
        q++;
    if (q < n && q - p > 1) /* \s+(?!\S): the last space goes with what follows */
        return q - p - 1;
    return q - p;
}

int tport_greedy_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len,
                                 tport_tok_out *out) {
    const unsigned char *s = (const unsigned char *)text;
    for (size_t p = 0; p < len;) {
        size_t w = word_at(s, p, len);
        for (size_t i = p; i < p + w;) {
            size_t j = p + w; /* longest candidate first */
            for (; j > i; j--) {
                tport_token id = tport_tokenizer_find(tk, text + i, j - i);
                if (id >= 0) {
                    tport_tok_emit(out, id);
                    break;
                }
            }
            i = j > i ? j : i + 1; /* no token starts with this byte: skipped */
        }
        p += w;
    }
    return 0;
}
