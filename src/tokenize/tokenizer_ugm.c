/* Unigram (UGM: T5, mT5, XLM-R, GGUF tokenizer model "t5"), as llama.cpp's
 * llm_tokenizer_ugm_session:
 *
 * 1. Normalization, one input prefix at a time: a prefix that runs along
 *    the user-defined tokens (llama.cpp's naive_trie::get_longest_prefix,
 *    which stops where the trie does, not where a token ends) is kept as
 *    is; else the longest prefix the precompiled charsmap knows becomes its
 *    replacement string; else one valid UTF-8 character is kept, and an
 *    invalid byte becomes U+FFFD.
 * 2. Spaces of the normalized text become U+2581: with
 *    remove_extra_whitespaces every run of non-space bytes gets one in
 *    front and the spaces go; else each space is one, and add_space_prefix
 *    puts one before the first non-space byte.
 * 3. Viterbi over the pieces (normal, user-defined, unused tokens; a
 *    user-defined one scores 0), in double as SentencePiece does; a
 *    character no single piece covers is the unknown token at the lowest
 *    normal score minus 10; a run of unknown tokens is one.
 *
 * The charsmap (SentencePiece's normalizer_spec.precompiled_charsmap) is
 * a u32 byte count, that many bytes of a darts-clone XOR-compressed double
 * array, then NUL-terminated replacement strings.  It is model-file input:
 * every index is checked when used, and a walk that leaves the array (or
 * a replacement without its NUL) fails the call, as llama.cpp throws. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "tokenize/tokenizer_impl.h"

static const char SPACE[] = "\xe2\x96\x81"; /* U+2581 */

tport_status tport_ugm_set_charsmap(tport_tokenizer *tk, const uint8_t *data, size_t size) {
    free(tk->charsmap);
    tk->charsmap = NULL;
    tk->n_xcda = tk->repl_off = tk->charsmap_size = 0;
    if (size == 0)
        return TPORT_STATUS_OK;
    if (size < 4)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "precompiled_charsmap: %zu bytes, too small for its header",
                           size);
    uint32_t blob = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
                    (uint32_t)data[3] << 24;
    if ((uint64_t)blob + 4 >= size) /* as llama.cpp: at least one byte of replacements */
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "precompiled_charsmap: its double array (%u bytes) runs past its %zu bytes", blob, size);
    tk->charsmap = malloc(size);
    if (!tk->charsmap)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "precompiled_charsmap: %zu bytes", size);
    memcpy(tk->charsmap, data, size);
    tk->charsmap_size = size;
    tk->n_xcda = blob / 4;
    tk->repl_off = 4 + (size_t)blob;
    return TPORT_STATUS_OK;
}

void tport_ugm_finish(tport_tokenizer *tk) {
    float min_score = FLT_MAX;
    memset(tk->ugm_user_first, 0, sizeof tk->ugm_user_first);
    for (int32_t i = 0; i < tk->n_tokens; i++) {
        if ((tk->attr[i] & TPORT_ATTR_NORMAL) && tk->score[i] < min_score)
            min_score = tk->score[i];
        if ((tk->attr[i] & TPORT_ATTR_USER_DEFINED) && tk->len[i] > 0)
            tk->ugm_user_first[(unsigned char)tk->text[i][0] >> 3] |= (uint8_t)(1u << (tk->text[i][0] & 7));
    }
    tk->ugm_unk_score = min_score - 10.0f; /* in float, as llama.cpp */
}

/* A piece the Viterbi may use. */
static bool is_piece(const tport_tokenizer *tk, tport_token id) {
    return id >= 0 && (tk->attr[id] & (TPORT_ATTR_NORMAL | TPORT_ATTR_USER_DEFINED | TPORT_ATTR_UNUSED));
}

/* ---- normalization --------------------------------------------------------- */

typedef struct buf {
    char *s;
    size_t n, cap;
} buf;

static int put(buf *b, const char *p, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2 + 64;
        char *s = realloc(b->s, cap);
        if (!s)
            return -1;
        b->s = s;
        b->cap = cap;
    }
    memcpy(b->s + b->n, p, n);
    b->n += n;
    return 0;
}

static bool unit(const tport_tokenizer *tk, size_t i, uint32_t *u) {
    if (i >= tk->n_xcda)
        return false;
    const uint8_t *p = tk->charsmap + 4 + 4 * i;
    *u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return true;
}

/* darts-clone's unit: offset in bits 10-30 (shifted left by 8 when bit 9
 * is set), has-leaf bit 8, label bits 0-7 with bit 31 set in value units. */
static uint32_t base_of(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

/* Length of the longest prefix of s (n bytes) that user-defined tokens
 * start with. */
static size_t user_prefix(const tport_tokenizer *tk, const char *s, size_t n) {
    unsigned char c0 = (unsigned char)s[0];
    if (!(tk->ugm_user_first[c0 >> 3] & (1u << (c0 & 7))))
        return 0;
    size_t best = 0;
    for (int32_t k = 0; k < tk->n_special; k++) {
        tport_token id = tk->special[k];
        if (!(tk->attr[id] & TPORT_ATTR_USER_DEFINED))
            continue;
        size_t m = 0, lim = tk->len[id] < n ? tk->len[id] : n;
        while (m < lim && tk->text[id][m] == s[m])
            m++;
        best = m > best ? m : best;
    }
    return best;
}

/* llama.cpp's unicode_cpt_from_utf8 validity: bytes of one character, or
 * 0 if s does not start with one (no check of overlong forms). */
static size_t utf8_char(const unsigned char *s, size_t n) {
    size_t len = s[0] < 0x80 ? 1 : !(s[0] & 0x40) ? 0 : !(s[0] & 0x20) ? 2 : !(s[0] & 0x10) ? 3 : !(s[0] & 0x08) ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[k] & 0xC0) != 0x80)
            return 0;
    return len;
}

/* One normalized prefix of s: *out and *out_len its replacement, returns the
 * bytes consumed (>= 1), or 0 when the charsmap is malformed. */
static size_t normalize_prefix(const tport_tokenizer *tk, const char *s, size_t n, const char **out,
                               size_t *out_len) {
    size_t user = user_prefix(tk, s, n);
    if (user > 0) {
        *out = s;
        *out_len = user;
        return user;
    }
    size_t match_len = 0;
    uint32_t match_value = 0, u;
    if (tk->n_xcda > 0) {
        if (!unit(tk, 0, &u))
            return 0;
        uint32_t node = base_of(u);
        for (size_t k = 0; k < n; k++) {
            unsigned char c = (unsigned char)s[k];
            if (c == 0)
                break;
            node ^= c;
            if (!unit(tk, node, &u))
                return 0;
            if ((u & ((1u << 31) | 0xFFu)) != c)
                break;
            bool leaf = (u >> 8) & 1;
            node ^= base_of(u);
            if (leaf) {
                if (!unit(tk, node, &u))
                    return 0;
                match_len = k + 1;
                match_value = u & 0x7FFFFFFFu;
            }
        }
    }
    if (match_len > 0) {
        size_t avail = tk->charsmap_size - tk->repl_off;
        if (match_value >= avail)
            return 0;
        const char *r = (const char *)tk->charsmap + tk->repl_off + match_value;
        const char *end = memchr(r, 0, avail - match_value);
        if (!end)
            return 0;
        *out = r;
        *out_len = (size_t)(end - r);
        return match_len;
    }
    size_t m = utf8_char((const unsigned char *)s, n);
    if (m == 0) {
        *out = "\xef\xbf\xbd";
        *out_len = 3;
        return 1;
    }
    *out = s;
    *out_len = m;
    return m;
}

/* 0, -1 out of memory, -2 malformed charsmap. */
static int normalize(const tport_tokenizer *tk, const char *text, size_t len, buf *b) {
    const bool prepend = tk->add_space_prefix, merge = tk->ugm_merge_spaces;
    bool prepended = false, in_word = false;
    for (size_t off = 0; off < len;) {
        const char *r;
        size_t rn, used = normalize_prefix(tk, text + off, len - off, &r, &rn);
        if (used == 0)
            return -2;
        for (size_t i = 0; i < rn; i++) {
            if (r[i] != ' ') {
                if (!in_word) {
                    in_word = true;
                    if ((prepend && !prepended) || merge) {
                        if (put(b, SPACE, 3))
                            return -1;
                        prepended = true;
                    }
                }
                if (put(b, r + i, 1))
                    return -1;
            } else {
                in_word = false;
                if (!merge && put(b, SPACE, 3))
                    return -1;
            }
        }
        off += used;
    }
    return 0;
}

/* ---- Viterbi --------------------------------------------------------------- */

typedef struct best {
    tport_token id;
    size_t from;
    double score;
} best;

/* llama.cpp's unicode_len_utf8: from the first byte alone. */
static size_t utf8_len(unsigned char c) {
    static const uint8_t LEN[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return LEN[c >> 4];
}

static int viterbi(const tport_tokenizer *tk, const char *s, size_t n, tport_tok_out *out) {
    best *r = malloc((n + 1) * sizeof *r);
    if (!r)
        return -1;
    for (size_t i = 0; i <= n; i++)
        r[i] = (best){tk->unk, 0, -DBL_MAX};
    r[0].score = 0;
    size_t max_len = tk->max_token_len;
    for (size_t off = 0; off < n;) {
        size_t cp = utf8_len((unsigned char)s[off]);
        cp = cp < n - off ? cp : n - off;
        bool single = false;
        const best cur = r[off];
        size_t lim = n - off < max_len ? n - off : max_len;
        for (size_t m = 1; m <= lim; m++) {
            tport_token id = tport_tokenizer_find(tk, s + off, m);
            if (!is_piece(tk, id))
                continue;
            single |= m == cp;
            double score = cur.score + ((tk->attr[id] & TPORT_ATTR_USER_DEFINED) ? 0.0 : (double)tk->score[id]);
            if (score > r[off + m].score)
                r[off + m] = (best){id, off, score};
        }
        if (!single) {
            double score = cur.score + (double)tk->ugm_unk_score;
            if (score > r[off + cp].score)
                r[off + cp] = (best){tk->unk, off, score};
        }
        off += cp;
    }
    /* back from the end, then reversed into the output */
    size_t count = 0;
    for (size_t at = n; at > 0; at = r[at].from)
        count++;
    tport_token *ids = malloc(count * sizeof *ids);
    if (!ids) {
        free(r);
        return -1;
    }
    size_t k = 0;
    bool prev_unk = false;
    for (size_t at = n; at > 0; at = r[at].from) {
        bool unk = r[at].id == tk->unk;
        if (!(prev_unk && unk))
            ids[k++] = r[at].id;
        prev_unk = unk;
    }
    while (k > 0)
        tport_tok_emit(out, ids[--k]);
    free(ids);
    free(r);
    return 0;
}

int tport_ugm_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len, tport_tok_out *out) {
    buf b = {0};
    int rc = normalize(tk, text, len, &b);
    if (rc == 0 && b.n > 0)
        rc = viterbi(tk, b.s, b.n, out);
    free(b.s);
    return rc;
}
