/* SentencePiece-style BPE encoding, with exactly llama.cpp's behaviour
 * (llm_tokenizer_spm): prepend a space, replace spaces by U+2581, split
 * into UTF-8 characters, then repeatedly merge the adjacent pair whose
 * concatenation is a token with the highest score (ties: leftmost); every
 * remaining piece that is not a token falls back to <0xXX> byte tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenize/tokenizer_impl.h"
#include "tokenize/unicode.h"

typedef struct symbol {
    int32_t prev, next; /* linked list of live symbols, -1 at the ends */
    size_t start, n;    /* bytes in the normalized text; n == 0: merged away */
} symbol;

typedef struct bigram {
    int32_t left, right;
    float score;
    size_t size;        /* bytes of the merge, to spot outdated entries */
} bigram;

typedef struct heap {
    bigram *v;
    size_t n, cap;
} heap;

/* a comes out before b: higher score, then smaller left index */
static int before(const bigram *a, const bigram *b) {
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static int heap_push(heap *h, bigram b) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        bigram *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return -1;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&b, &h->v[parent]))
            break;
        h->v[i] = h->v[parent];
        i = parent;
    }
    h->v[i] = b;
    return 0;
}

static bigram heap_pop(heap *h) {
    bigram top = h->v[0];
    bigram last = h->v[--h->n];
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

typedef struct encoder {
    const tport_tokenizer *tk;
    const char *text;
    symbol *sym;
    heap h;
    tport_tok_out *out;
} encoder;

static int try_add_bigram(encoder *e, int32_t left, int32_t right) {
    if (left < 0 || right < 0)
        return 0;
    size_t n = e->sym[left].n + e->sym[right].n;
    tport_token id = tport_tokenizer_find(e->tk, e->text + e->sym[left].start, n);
    if (id < 0)
        return 0;
    bigram b = {left, right, e->tk->score[id], n};
    return heap_push(&e->h, b);
}

static void emit(encoder *e, tport_token id) { tport_tok_emit(e->out, id); }

static void emit_symbol(encoder *e, const symbol *s) {
    tport_token id = tport_tokenizer_find(e->tk, e->text + s->start, s->n);
    if (id >= 0) {
        emit(e, id);
        return;
    }
    for (size_t i = 0; i < s->n; i++) {
        tport_token b = e->tk->byte_token[(unsigned char)e->text[s->start + i]];
        if (b < 0)
            b = e->tk->unk;
        if (b >= 0)
            emit(e, b);
    }
}

/* Space prefix + spaces as U+2581.  Returns a malloc'd buffer. */
static char *normalize(bool space_prefix, const char *text, size_t len, size_t *out_len) {
    size_t spaces = space_prefix ? 1 : 0;
    for (size_t i = 0; i < len; i++)
        spaces += text[i] == ' ';
    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    char *buf = malloc(len + 2 * spaces + 4);
    if (!buf)
        return NULL;
    size_t n = 0;
    if (space_prefix) {
        memcpy(buf + n, "\xe2\x96\x81", 3);
        n += 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(buf + n, "\xe2\x96\x81", 3);
            n += 3;
        } else {
            buf[n++] = text[i];
        }
    }
    *out_len = n;
    return buf;
}

int tport_spm_encode_fragment(const tport_tokenizer *tk, const char *text, size_t len,
                              bool space_prefix, tport_tok_out *out) {
    encoder e = {.tk = tk, .out = out};
    if (len == 0 && !space_prefix)
        return 0;
    size_t n = 0;
    char *norm = normalize(space_prefix, text, len, &n);
    if (!norm)
        return -1;
    e.text = norm;
    e.sym = malloc(n * sizeof *e.sym);
    if (!e.sym) {
        free(norm);
        return -1;
    }
    int32_t n_sym = 0;
    for (size_t off = 0; off < n; n_sym++) {
        size_t l = tport_utf8_len((unsigned char)norm[off]);
        if (l > n - off)
            l = n - off;
        e.sym[n_sym] = (symbol){n_sym - 1, -1, off, l};
        if (n_sym > 0)
            e.sym[n_sym - 1].next = n_sym;
        off += l;
    }
    int32_t result = 0;
    for (int32_t i = 1; i < n_sym && result == 0; i++)
        if (try_add_bigram(&e, i - 1, i) != 0)
            result = -1;
    while (result == 0 && e.h.n > 0) {
        bigram b = heap_pop(&e.h);
        symbol *l = &e.sym[b.left], *r = &e.sym[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size)
            continue; /* one side was merged since this pair was queued */
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            e.sym[r->next].prev = b.left;
        if (try_add_bigram(&e, l->prev, b.left) != 0 || try_add_bigram(&e, b.left, l->next) != 0)
            result = -1;
    }
    if (result == 0)
        for (int32_t i = 0; i != -1; i = e.sym[i].next)
            emit_symbol(&e, &e.sym[i]);
    free(e.h.v);
    free(e.sym);
    free(norm);
    return result;
}
