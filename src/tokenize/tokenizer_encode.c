/* Text to ids, as llama.cpp's llama_vocab::impl::tokenize: the text is
 * first cut at special-token texts (tokenizer_st_partition), then every
 * raw piece goes through the vocabulary's encoder; add_special adds BOS
 * and EOS as the vocabulary says. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenize/tokenizer_impl.h"

typedef struct frag {
    size_t off, len;  /* raw text, when token < 0 */
    tport_token token;
} frag;

typedef struct frags {
    frag *v;
    size_t n, cap;
} frags;

static int add_frag(frags *f, size_t off, size_t len, tport_token token) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        frag *g = realloc(f->v, cap * sizeof *g);
        if (!g)
            return -1;
        f->v = g;
        f->cap = cap;
    }
    f->v[f->n++] = (frag){off, len, token};
    return 0;
}

/* isspace() of the C locale, which llama.cpp's strip uses */
static bool c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0 || m > n)
        return NULL;
    for (size_t i = 0; i + m <= n; i++)
        if (hay[i] == needle[0] && memcmp(hay + i, needle, m) == 0)
            return hay + i;
    return NULL;
}

/* Splits one raw fragment at every occurrence of special token id. */
static int split_at(const tport_tokenizer *tk, const char *text, const frag *in, tport_token id, frags *out) {
    const char *t = tk->text[id];
    size_t tl = tk->len[id];
    uint16_t attr = tk->attr[id];
    size_t off = in->off, len = in->len;
    for (;;) {
        const char *m = find_bytes(text + off, len, t, tl);
        if (!m)
            return len > 0 ? add_frag(out, off, len, -1) : 0;
        size_t at = (size_t)(m - text);
        size_t left = at - off;
        if (attr & TPORT_ATTR_LSTRIP)
            while (left > 0 && c_space(text[off + left - 1]))
                left--;
        if (left > 0 && add_frag(out, off, left, -1) != 0)
            return -1;
        if (add_frag(out, 0, 0, id) != 0)
            return -1;
        if (at + tl >= off + len)
            return 0;
        size_t roff = at + tl, rlen = off + len - roff;
        if (attr & TPORT_ATTR_RSTRIP)
            while (rlen > 0 && c_space(text[roff])) {
                roff++;
                rlen--;
            }
        off = roff;
        len = rlen;
    }
}

static int partition(const tport_tokenizer *tk, const char *text, size_t len, bool parse_special, frags *f) {
    if (add_frag(f, 0, len, -1) != 0)
        return -1;
    for (int32_t s = 0; s < tk->n_special; s++) {
        tport_token id = tk->special[s];
        if (!parse_special && (tk->attr[id] & (TPORT_ATTR_CONTROL | TPORT_ATTR_UNKNOWN)))
            continue; /* user-defined tokens are split out even then */
        frags next = {0};
        for (size_t i = 0; i < f->n; i++) {
            int rc = f->v[i].token >= 0 ? add_frag(&next, 0, 0, f->v[i].token)
                                        : split_at(tk, text, &f->v[i], id, &next);
            if (rc != 0) {
                free(next.v);
                return -1;
            }
        }
        free(f->v);
        *f = next;
    }
    return 0;
}

int32_t tport_tokenizer_encode_ex(const tport_tokenizer *tk, const char *text, size_t len, bool add_special,
                                  bool parse_special, tport_token *ids, int32_t cap) {
    if (!tk || (!text && len))
        return -1;
    tport_tok_out out = {.ids = ids, .cap = ids && cap > 0 ? cap : 0};
    frags f = {0};
    if (len > 0 && partition(tk, text, len, parse_special, &f) != 0) {
        free(f.v);
        return -1;
    }
    if (add_special && tk->add_bos && tk->bos >= 0)
        tport_tok_emit(&out, tk->bos);
    bool prev_special = true; /* SentencePiece: a space before the first raw piece */
    int rc = 0;
    for (size_t i = 0; i < f.n && rc == 0; i++) {
        if (f.v[i].token >= 0) {
            tport_tok_emit(&out, f.v[i].token);
            prev_special = true;
            continue;
        }
        if (tk->kind == TPORT_TOK_BPE)
            rc = tport_bpe_encode_fragment(tk, text + f.v[i].off, f.v[i].len, &out);
        else if (tk->kind == TPORT_TOK_GREEDY)
            rc = tport_greedy_encode_fragment(tk, text + f.v[i].off, f.v[i].len, &out);
        else if (tk->kind == TPORT_TOK_WPM)
            rc = tport_wpm_encode_fragment(tk, text + f.v[i].off, f.v[i].len, &out);
        else if (tk->kind == TPORT_TOK_UGM)
            rc = tport_ugm_encode_fragment(tk, text + f.v[i].off, f.v[i].len, &out);
        else
            rc = tport_spm_encode_fragment(tk, text + f.v[i].off, f.v[i].len,
                                           tk->add_space_prefix && prev_special, &out);
        prev_special = false;
    }
    free(f.v);
    if (rc == -2)
        return -2;
    if (rc != 0)
        return -1;
    if (add_special && tk->add_eos && tk->eos >= 0)
        tport_tok_emit(&out, tk->eos);
    if (add_special && tk->kind == TPORT_TOK_WPM && tk->sep >= 0)
        tport_tok_emit(&out, tk->sep);
    return out.n;
}

int32_t tport_tokenizer_encode(const tport_tokenizer *tk, const char *text, size_t len, bool add_bos,
                               tport_token *ids, int32_t cap) {
    int32_t n = tport_tokenizer_encode_ex(tk, text, len, add_bos, false, ids, cap);
    return n < 0 ? -1 : n;
}

int32_t tport_tokenizer_tokenize(const tport_tokenizer *tk, const char *text, size_t len, bool add_special,
                                 bool parse_special, tport_token *ids, int32_t cap) {
    if (!tk || (!text && len)) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tokenize: NULL argument");
        return -1;
    }
    int32_t n = tport_tokenizer_encode_ex(tk, text, len, add_special, parse_special, ids, cap);
    if (n == -2)
        tport_error(TPORT_STATUS_BAD_FORMAT, "tokenize: the vocabulary's precompiled_charsmap is malformed "
                    "(an index past its end)");
    else if (n < 0)
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenize: out of memory");
    return n < 0 ? -1 : n;
}

int32_t tport_tokenizer_piece(const tport_tokenizer *tk, tport_token prev, tport_token id, char *buf,
                              int32_t cap) {
    return tport_tokenizer_decode(tk, prev, id, buf, cap < 0 ? 0 : cap);
}
