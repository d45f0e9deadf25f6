/* Constrained sampling: which tokens a grammar lets come next.
 *
 * The state is a set of stacks of element positions (llama.cpp's grammar
 * stacks, rebuilt here): the top of a stack is the character set that the
 * next code point must match, the positions below it are where to go on
 * when the current sequence ends.  An empty stack means the grammar may
 * end.  A token is allowed when its text (after any incomplete UTF-8 left
 * by earlier tokens) walks the set to a non-empty set; a trailing
 * incomplete code point must be able to become one that some top accepts.
 *
 * Pieces come from tport_tokenizer_piece as generation prints them, so the
 * grammar sees exactly the text the caller outputs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grammar/grammar.h"

#define MAX_STACKS 1024     /* live alternatives at one point           */
#define MAX_DEPTH 4096      /* positions on one stack                   */
/* rule references resolved for one set of stacks: nested repetitions
 * ("x"++++...) make the paths to the same stacks exponential in number */
#define MAX_EXPANSIONS (1 << 16)
#define FIRST_CP_SLOTS 4096 /* a power of two                           */

/* Stacks back to back in one array. */
typedef struct stackset {
    int32_t *data;
    size_t n_data, cap_data;
    int32_t *off, *len;
    int32_t n, cap;
    int32_t expansions;     /* expand calls since the last clear        */
    bool overflow;
} stackset;

struct tport_grammar_state {
    const tport_grammar *g;
    const tport_tokenizer *tk;
    int32_t n_vocab;
    char **piece;           /* each token's text; NULL when empty      */
    int32_t *piece_len;
    stackset cur;
    unsigned char pending[4]; /* an incomplete code point's bytes       */
    int n_pending;
    stackset tmp[2];        /* scratch for trying tokens               */
    int32_t *scratch;       /* one stack being built                   */
    /* whether the current state can take a code point, learnt once per
     * state: most tokens fail on their first character.  Open addressing
     * on the code point; cp_key 0 = empty slot (key is cp + 1). */
    uint32_t cp_key[FIRST_CP_SLOTS];
    int8_t cp_alive[FIRST_CP_SLOTS];
    int32_t cp_used;
};

static void ss_clear(stackset *s) {
    s->n = 0;
    s->n_data = 0;
    s->expansions = 0;
    s->overflow = false;
}

static void ss_free(stackset *s) {
    free(s->data);
    free(s->off);
    free(s->len);
    memset(s, 0, sizeof *s);
}

/* Adds a stack unless the set has it already. */
static void ss_add(stackset *s, const int32_t *st, int32_t len) {
    for (int32_t i = 0; i < s->n; i++)
        if (s->len[i] == len && (!len || !memcmp(s->data + s->off[i], st, (size_t)len * sizeof *st)))
            return;
    if (s->n >= MAX_STACKS) {
        s->overflow = true;
        return;
    }
    if (s->n == s->cap) {
        int32_t cap = s->cap ? 2 * s->cap : 16;
        int32_t *o = realloc(s->off, (size_t)cap * sizeof *o);
        if (o)
            s->off = o;
        int32_t *l = realloc(s->len, (size_t)cap * sizeof *l);
        if (l)
            s->len = l;
        if (!o || !l) {
            s->overflow = true;
            return;
        }
        s->cap = cap;
    }
    if (s->n_data + (size_t)len > s->cap_data) {
        size_t cap = s->cap_data ? 2 * s->cap_data : 256;
        while (cap < s->n_data + (size_t)len)
            cap *= 2;
        int32_t *d = realloc(s->data, cap * sizeof *d);
        if (!d) {
            s->overflow = true;
            return;
        }
        s->data = d;
        s->cap_data = cap;
    }
    if (len)
        memcpy(s->data + s->n_data, st, (size_t)len * sizeof *st);
    s->off[s->n] = (int32_t)s->n_data;
    s->len[s->n] = len;
    s->n_data += (size_t)len;
    s->n++;
}

/* Resolves rule references on top of st[0..len) (st has room up to
 * MAX_DEPTH) until each resulting stack is empty or has a character set on
 * top, adding those to out.  No left recursion (checked at parse), so
 * this ends; depth bounds the recursion through nullable rules. */
static void expand(const tport_grammar *g, stackset *out, int32_t *st, int32_t len, int depth) {
    if (len == 0 || g->elems[st[len - 1]].kind == GE_CHARS) {
        ss_add(out, st, len);
        return;
    }
    if (depth > MAX_DEPTH / 4 || ++out->expansions > MAX_EXPANSIONS) {
        out->overflow = true;
        return;
    }
    int32_t pos = st[len - 1];
    const gram_rule *r = &g->rules[g->elems[pos].arg];
    int32_t base = len - 1;
    if (g->elems[pos + 1].kind != GE_END)
        st[base++] = pos + 1;
    for (int32_t a = 0; a < r->n_alts; a++) {
        int32_t start = r->alts[a], n = base;
        if (g->elems[start].kind != GE_END) {
            if (n >= MAX_DEPTH) {
                out->overflow = true;
                continue;
            }
            st[n++] = start;
        }
        expand(g, out, st, n, depth + 1);
        /* expand may have written past base; restore what lies below */
        if (base > len - 1)
            st[len - 1] = pos + 1;
    }
    st[len - 1] = pos; /* the caller's stack as it was */
}

/* The stacks after the code point c: each top that accepts c is popped,
 * its sequence goes on, and references are expanded. */
static void advance(const tport_grammar *g, const stackset *in, uint32_t c, stackset *out, int32_t *scratch) {
    ss_clear(out);
    for (int32_t i = 0; i < in->n; i++) {
        int32_t len = in->len[i];
        if (!len)
            continue;
        const int32_t *st = in->data + in->off[i];
        int32_t pos = st[len - 1];
        if (!gram_set_has(g, g->elems[pos].arg, c))
            continue;
        memcpy(scratch, st, (size_t)(len - 1) * sizeof *st);
        int32_t n = len - 1;
        if (g->elems[pos + 1].kind != GE_END)
            scratch[n++] = pos + 1;
        expand(g, out, scratch, n, 0);
    }
}

/* The code points whose UTF-8 begins with the n bytes b (an incomplete
 * sequence): [lo, hi], or false if the bytes cannot begin one. */
static bool partial_range(const unsigned char *b, int n, uint32_t *lo, uint32_t *hi) {
    unsigned c = b[0];
    int need = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!need || n >= need)
        return false;
    uint32_t v = c & (0x7Fu >> need);
    for (int i = 1; i < n; i++) {
        if ((b[i] & 0xC0) != 0x80)
            return false;
        v = v << 6 | (b[i] & 0x3F);
    }
    int rest = need - n;
    *lo = v << (6 * rest);
    *hi = *lo | ((1u << (6 * rest)) - 1);
    /* overlong forms and values past U+10FFFF are not UTF-8 */
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (*lo < least[need])
        *lo = least[need];
    if (*hi > 0x10FFFF)
        *hi = 0x10FFFF;
    return *lo <= *hi;
}

/* Walks bytes from `from`; the result is in *res (one of the scratch
 * sets or `from` itself); pending gets the trailing incomplete bytes.
 * False if the text cannot continue the grammar. */
static bool walk(tport_grammar_state *st, const stackset *from, const unsigned char *b, size_t n,
                 const stackset **res, unsigned char *pending, int *n_pending) {
    const stackset *cur = from;
    int which = 0;
    size_t i = 0;
    while (i < n) {
        unsigned c = b[i];
        int need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!need)
            return false;
        if (i + (size_t)need > n) { /* incomplete: can it become something a top accepts? */
            uint32_t lo, hi;
            if (!partial_range(b + i, (int)(n - i), &lo, &hi))
                return false;
            bool any = false;
            for (int32_t k = 0; k < cur->n && !any; k++)
                if (cur->len[k])
                    any = gram_set_meets(st->g, st->g->elems[cur->data[cur->off[k] + cur->len[k] - 1]].arg, lo, hi);
            if (!any)
                return false;
            *n_pending = (int)(n - i);
            memcpy(pending, b + i, n - i);
            *res = cur;
            return true;
        }
        uint32_t v = need == 1 ? c : c & (0x7Fu >> need);
        for (int k = 1; k < need; k++) {
            if ((b[i + k] & 0xC0) != 0x80)
                return false;
            v = v << 6 | (b[i + k] & 0x3F);
        }
        static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (v < least[need] || v > 0x10FFFF)
            return false; /* overlong, or not a code point */
        i += (size_t)need;
        stackset *out = &st->tmp[which];
        which ^= 1;
        advance(st->g, cur, v, out, st->scratch);
        if (out->overflow || out->n == 0)
            return false;
        cur = out;
    }
    *n_pending = 0;
    *res = cur;
    return true;
}

/* The first code point of b (n bytes): its value with *len its length,
 * *len 0 when the bytes stop inside it, -1 when they are not UTF-8. */
static int64_t first_code_point(const unsigned char *b, size_t n, int *len) {
    unsigned c = b[0];
    int need = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    *len = 0;
    if (!need)
        return -1;
    if ((size_t)need > n)
        return 0;
    uint32_t v = need == 1 ? c : c & (0x7Fu >> need);
    for (int k = 1; k < need; k++) {
        if ((b[k] & 0xC0) != 0x80)
            return -1;
        v = v << 6 | (b[k] & 0x3F);
    }
    *len = need;
    return v;
}

/* Whether the current state takes code point c (cached per state). */
static bool first_alive(tport_grammar_state *st, uint32_t c) {
    uint32_t h = (c * 2654435761u) & (FIRST_CP_SLOTS - 1);
    while (st->cp_key[h]) {
        if (st->cp_key[h] == c + 1)
            return st->cp_alive[h];
        h = (h + 1) & (FIRST_CP_SLOTS - 1);
    }
    advance(st->g, &st->cur, c, &st->tmp[0], st->scratch);
    bool alive = !st->tmp[0].overflow && st->tmp[0].n > 0;
    if (st->cp_used < FIRST_CP_SLOTS / 2) { /* keep the table sparse */
        st->cp_key[h] = c + 1;
        st->cp_alive[h] = alive;
        st->cp_used++;
    }
    return alive;
}

/* A token's text tried from the current state. */
static bool try_token(tport_grammar_state *st, tport_token id, const stackset **res, unsigned char *pending,
                      int *n_pending) {
    const char *p = st->piece[id];
    if (!p)
        return false;
    unsigned char buf[4 + 256];
    const unsigned char *b = (const unsigned char *)p;
    size_t n = (size_t)st->piece_len[id];
    if (st->n_pending) {
        if (n > 256) /* no such pieces in practice; refuse rather than overrun */
            return false;
        memcpy(buf, st->pending, (size_t)st->n_pending);
        memcpy(buf + st->n_pending, p, n);
        b = buf;
        n += (size_t)st->n_pending;
    } else {
        int cp_len;
        int64_t cp = first_code_point(b, n, &cp_len);
        if (cp < 0)
            return false;
        if (cp_len && !first_alive(st, (uint32_t)cp))
            return false;
    }
    return walk(st, &st->cur, b, n, res, pending, n_pending);
}

static bool can_end(const stackset *s) {
    for (int32_t i = 0; i < s->n; i++)
        if (s->len[i] == 0)
            return true;
    return false;
}

static void reset_cache(tport_grammar_state *st) {
    if (st->cp_used)
        memset(st->cp_key, 0, sizeof st->cp_key);
    st->cp_used = 0;
}

void tport_grammar_state_free(tport_grammar_state *st) {
    if (!st)
        return;
    for (int32_t i = 0; st->piece && i < st->n_vocab; i++)
        free(st->piece[i]);
    free(st->piece);
    free(st->piece_len);
    ss_free(&st->cur);
    ss_free(&st->tmp[0]);
    ss_free(&st->tmp[1]);
    free(st->scratch);
    free(st);
}

tport_grammar_state *tport_grammar_state_new(const tport_grammar *g, const tport_tokenizer *tk) {
    if (!g || !tk) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: state_new needs a grammar and a tokenizer");
        return NULL;
    }
    tport_grammar_state *st = calloc(1, sizeof *st);
    if (!st) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "grammar: out of memory");
        return NULL;
    }
    st->g = g;
    st->tk = tk;
    st->n_vocab = tport_tokenizer_n_tokens(tk);
    st->piece = calloc((size_t)(st->n_vocab > 0 ? st->n_vocab : 1), sizeof *st->piece);
    st->piece_len = calloc((size_t)(st->n_vocab > 0 ? st->n_vocab : 1), sizeof *st->piece_len);
    st->scratch = malloc(MAX_DEPTH * sizeof *st->scratch);
    bool ok = st->piece && st->piece_len && st->scratch;
    /* a token's text as it prints in the middle of a generation: the
     * previous token is any ordinary one (only the very first piece after
     * BOS drops SentencePiece's leading space) */
    for (int32_t i = 0; ok && i < st->n_vocab; i++) {
        char buf[256];
        int32_t n = tport_tokenizer_piece(tk, 1 << 30, i, buf, (int32_t)sizeof buf);
        if (n <= 0 || n > (int32_t)sizeof buf)
            continue; /* control tokens print nothing: never allowed by the grammar */
        if (!(st->piece[i] = malloc((size_t)n))) {
            ok = false;
            break;
        }
        memcpy(st->piece[i], buf, (size_t)n);
        st->piece_len[i] = n;
    }
    if (ok) {
        const gram_rule *root = &g->rules[g->root];
        for (int32_t a = 0; a < root->n_alts; a++) {
            int32_t n = 0;
            if (g->elems[root->alts[a]].kind != GE_END)
                st->scratch[n++] = root->alts[a];
            expand(g, &st->cur, st->scratch, n, 0);
        }
        if (st->cur.overflow) {
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: too many alternatives at the start");
            tport_grammar_state_free(st);
            return NULL;
        }
    }
    if (!ok) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "grammar: out of memory");
        tport_grammar_state_free(st);
        return NULL;
    }
    reset_cache(st);
    return st;
}

bool tport_grammar_allows(tport_grammar_state *st, tport_token id) {
    if (!st || id < 0 || id >= st->n_vocab)
        return false;
    const stackset *res;
    unsigned char pending[4];
    int n_pending;
    return try_token(st, id, &res, pending, &n_pending);
}

bool tport_grammar_can_end(const tport_grammar_state *st) { return st && !st->n_pending && can_end(&st->cur); }

bool tport_grammar_must_end(const tport_grammar_state *st) {
    if (!st || st->n_pending)
        return false;
    for (int32_t i = 0; i < st->cur.n; i++)
        if (st->cur.len[i])
            return false;
    return true;
}

tport_status tport_grammar_apply(tport_grammar_state *st, float *logits, int32_t n_vocab, const tport_token *end_ids,
                                 int32_t n_end) {
    if (!st || !logits || n_vocab <= 0 || (n_end && !end_ids))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: apply needs a state and logits");
    bool end_ok = tport_grammar_can_end(st), any = false;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (logits[i] == -INFINITY)
            continue;
        bool is_end = false;
        for (int32_t k = 0; k < n_end; k++)
            is_end |= end_ids[k] == i;
        bool ok = is_end ? end_ok : i < st->n_vocab && tport_grammar_allows(st, i);
        if (!ok)
            logits[i] = -INFINITY;
        any |= ok;
    }
    if (!any)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: no token can continue the text");
    return TPORT_STATUS_OK;
}

tport_status tport_grammar_accept(tport_grammar_state *st, tport_token id) {
    if (!st || id < 0 || id >= st->n_vocab)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: accept of a token outside the vocabulary");
    const stackset *res;
    unsigned char pending[4];
    int n_pending;
    if (!try_token(st, id, &res, pending, &n_pending))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: token %d does not continue the grammar", (int)id);
    if (res != &st->cur) { /* res is a scratch set: make it current */
        stackset t = st->cur;
        int k = res == &st->tmp[0] ? 0 : 1;
        st->cur = st->tmp[k];
        st->tmp[k] = t;
    }
    memcpy(st->pending, pending, (size_t)n_pending);
    st->n_pending = n_pending;
    reset_cache(st);
    return TPORT_STATUS_OK;
}
