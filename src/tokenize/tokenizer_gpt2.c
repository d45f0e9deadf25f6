/* Byte-level BPE (llama.cpp's llm_tokenizer_bpe_session): every
 * pre-tokenized word starts as its UTF-8 characters; the adjacent pair
 * with the lowest merge rank (ties: leftmost) merges until no pair has a
 * rank; each resulting piece is looked up as a token, and a piece that is
 * not one falls back to its single bytes where those are tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenizer_impl.h"
#include "core/error.h"
#include "tokenize/unicode.h"

/* ---- merge table -------------------------------------------------------- */

static uint32_t hash_pair(const char *l, size_t ln, const char *r, size_t rn) {
    uint32_t h = 2166136261u; /* FNV-1a over left, a length mark, right */
    for (size_t i = 0; i < ln; i++)
        h = (h ^ (unsigned char)l[i]) * 16777619u;
    h = (h ^ (uint32_t)ln ^ 0xA5u) * 16777619u;
    for (size_t i = 0; i < rn; i++)
        h = (h ^ (unsigned char)r[i]) * 16777619u;
    return h;
}

static tport_merge_slot *find_slot(const tport_tokenizer *tk, const char *l, size_t ln, const char *r,
                                   size_t rn) {
    uint32_t mask = tk->merge_cap - 1;
    for (uint32_t i = hash_pair(l, ln, r, rn) & mask;; i = (i + 1) & mask) {
        tport_merge_slot *s = &tk->merges[i];
        if (s->rank < 0)
            return s;
        const char *p = tk->merge_pool + s->off;
        if (s->left_len == ln && s->right_len == rn && memcmp(p, l, ln) == 0 && memcmp(p + ln, r, rn) == 0)
            return s;
    }
}

int32_t tport_bpe_rank(const tport_tokenizer *tk, const char *l, size_t ln, const char *r, size_t rn) {
    if (!tk->merge_cap)
        return -1;
    return find_slot(tk, l, ln, r, rn)->rank;
}

tport_status tport_bpe_reserve_merges(tport_tokenizer *tk, size_t n, size_t bytes) {
    uint32_t cap = 16;
    while (cap < 2 * n + 1 && cap < (1u << 30))
        cap *= 2;
    if (cap < 2 * n + 1)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "tokenizer: too many merges (%zu)", n);
    tk->merges = malloc((size_t)cap * sizeof *tk->merges);
    tk->merge_pool = malloc(bytes ? bytes : 1);
    if (!tk->merges || !tk->merge_pool)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for %zu merges", n);
    for (uint32_t i = 0; i < cap; i++)
        tk->merges[i].rank = -1;
    tk->merge_cap = cap;
    tk->merge_pool_cap = bytes;
    tk->merge_pool_used = 0;
    return TPORT_STATUS_OK;
}

void tport_bpe_add_merge(tport_tokenizer *tk, const char *s, size_t n, int32_t rank) {
    /* llama.cpp: word.find(' ', 1); without one both halves are empty */
    size_t sp = 0;
    for (size_t i = 1; i < n && !sp; i++)
        if (s[i] == ' ')
            sp = i;
    size_t ln = sp ? sp : 0, rn = sp ? n - sp - 1 : 0;
    if (!tk->merge_cap || tk->merge_pool_cap - tk->merge_pool_used < ln + rn)
        return;
    tport_merge_slot *slot = find_slot(tk, s, ln, s + sp + (sp ? 1 : 0), rn);
    if (slot->rank >= 0)
        return; /* std::map::emplace keeps the first */
    slot->off = (uint32_t)tk->merge_pool_used;
    slot->left_len = (uint32_t)ln;
    slot->right_len = (uint32_t)rn;
    slot->rank = rank;
    memcpy(tk->merge_pool + tk->merge_pool_used, s, ln);
    memcpy(tk->merge_pool + tk->merge_pool_used + ln, s + sp + (sp ? 1 : 0), rn);
    tk->merge_pool_used += ln + rn;
}

/* ---- encoding ------------------------------------------------------------ */

typedef struct sym {
    int32_t prev, next;
    size_t start, n; /* bytes of the word; n == 0: merged away */
} sym;

typedef struct pair {
    int32_t left, right;
    int32_t rank;
    size_t size;     /* bytes of both sides when queued, to spot stale pairs */
} pair;

typedef struct pair_heap {
    pair *v;
    size_t n, cap;
} pair_heap;

/* a pops before b: lower rank, then lower left index (llm_bigram_bpe) */
static bool before(const pair *a, const pair *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int push(pair_heap *h, pair p) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        pair *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(&p, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = p;
    return 0;
}

static pair pop(pair_heap *h) {
    pair top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!before(&h->v[c], &last))
            break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

typedef struct word_enc {
    const tport_tokenizer *tk;
    const char *w;
    sym *s;
    pair_heap h;
} word_enc;

static int queue_pair(word_enc *e, int32_t l, int32_t r) {
    if (l < 0 || r < 0)
        return 0;
    const sym *a = &e->s[l], *b = &e->s[r];
    int32_t rank = tport_bpe_rank(e->tk, e->w + a->start, a->n, e->w + b->start, b->n);
    if (rank < 0)
        return 0;
    return push(&e->h, (pair){l, r, rank, a->n + b->n});
}

static void emit_piece(const tport_tokenizer *tk, const char *p, size_t n, tport_tok_out *out) {
    tport_token id = tport_tokenizer_find(tk, p, n);
    if (id >= 0) {
        tport_tok_emit(out, id);
        return;
    }
    for (size_t i = 0; i < n; i++) { /* single bytes, where they are tokens */
        tport_token b = tk->spm_bpe ? tk->byte_token[(unsigned char)p[i]] : tport_tokenizer_find(tk, p + i, 1);
        if (b >= 0)
            tport_tok_emit(out, b);
    }
}

static bool only_newlines(const char *w, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (w[i] != '\n')
            return false;
    return n > 0;
}

static int encode_word(word_enc *e, const char *w, size_t n, sym *s, tport_tok_out *out) {
    const tport_tokenizer *tk = e->tk;
    if ((tk->ignore_merges || (tk->spm_bpe && only_newlines(w, n))) && tport_tokenizer_find(tk, w, n) >= 0) {
        emit_piece(tk, w, n, out);
        return 0;
    }
    e->w = w;
    e->s = s;
    e->h.n = 0;
    int32_t ns = 0;
    for (size_t off = 0; off < n; ns++) {
        size_t l = tport_utf8_len((unsigned char)w[off]);
        if (l > n - off)
            l = n - off;
        s[ns] = (sym){ns - 1, -1, off, l};
        if (ns > 0)
            s[ns - 1].next = ns;
        off += l;
    }
    for (int32_t i = 1; i < ns; i++)
        if (queue_pair(e, i - 1, i) != 0)
            return -1;
    while (e->h.n > 0) {
        pair p = pop(&e->h);
        sym *l = &s[p.left], *r = &s[p.right];
        /* stale: a side was merged away or grew since (same bytes <=> same text) */
        if (l->n == 0 || r->n == 0 || l->n + r->n != p.size || l->next != p.right)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            s[r->next].prev = p.left;
        if (queue_pair(e, l->prev, p.left) != 0 || queue_pair(e, p.left, l->next) != 0)
            return -1;
    }
    for (int32_t i = 0; ns > 0 && i != -1; i = s[i].next)
        if (s[i].n > 0)
            emit_piece(tk, w + s[i].start, s[i].n, out);
    return 0;
}

int tport_bpe_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len,
                              tport_tok_out *out) {
    char *buf = NULL, *escaped = NULL;
    size_t *wl = NULL, nw = 0;
    if (tk->spm_bpe) { /* spaces as U+2581 (3 bytes) */
        escaped = malloc(len * 3 + 1);
        if (!escaped)
            return -1;
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            if (text[i] == ' ') {
                memcpy(escaped + k, "\xe2\x96\x81", 3);
                k += 3;
            } else {
                escaped[k++] = text[i];
            }
        }
        text = escaped;
        len = k;
    }
    int pre_rc = tport_pretokenize(tk->pre, text, len, !tk->spm_bpe, &buf, &wl, &nw);
    free(escaped);
    if (pre_rc != 0)
        return -1;
    size_t longest = 1;
    for (size_t i = 0; i < nw; i++)
        if (wl[i] > longest)
            longest = wl[i];
    word_enc e = {.tk = tk};
    sym *s = malloc(longest * sizeof *s);
    int rc = s ? 0 : -1;
    size_t off = 0;
    for (size_t i = 0; i < nw && rc == 0; i++) {
        rc = encode_word(&e, buf + off, wl[i], s, out);
        off += wl[i];
    }
    free(e.h.v);
    free(s);
    free(buf);
    free(wl);
    return rc;
}
