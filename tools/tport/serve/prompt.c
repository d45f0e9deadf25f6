/* Prompts as tokens: completion text (with BOS) or ids checked against the
 * vocabulary, and rendered chats, where the template's special markers
 * become their single tokens when the vocabulary has them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prompt.h"

static int32_t fail(serve_error *err, const char *msg) {
    snprintf(err->message, sizeof err->message, "%s", msg);
    err->param = NULL;
    return -1;
}

int32_t prompt_from_text(const tport_model *m, const char *text, bool add_bos, tport_token **out,
                          serve_error *err) {
    int32_t n = tport_tokenize(m, text, add_bos, NULL, 0);
    if (n < 0)
        return fail(err, tport_last_error());
    *out = malloc((size_t)(n ? n : 1) * sizeof **out);
    if (!*out)
        return fail(err, "out of memory");
    tport_tokenize(m, text, add_bos, *out, n);
    return n;
}

int32_t prompt_from_ids(const tport_model *m, const int32_t *ids, int32_t n, tport_token **out, serve_error *err) {
    int32_t n_vocab = tport_model_n_vocab(m);
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= n_vocab) {
            snprintf(err->message, sizeof err->message, "token id %d is outside the vocabulary [0, %d)",
                     (int)ids[i], (int)n_vocab);
            err->param = "prompt";
            return -1;
        }
    *out = malloc((size_t)(n ? n : 1) * sizeof **out);
    if (!*out)
        return fail(err, "out of memory");
    memcpy(*out, ids, (size_t)n * sizeof **out);
    return n;
}

typedef struct id_list {
    tport_token *ids;
    int32_t n, cap;
} id_list;

static bool push(id_list *l, tport_token id) {
    if (l->n == l->cap) {
        int32_t cap = l->cap ? 2 * l->cap : 64;
        tport_token *g = realloc(l->ids, (size_t)cap * sizeof *g);
        if (!g)
            return false;
        l->ids = g;
        l->cap = cap;
    }
    l->ids[l->n++] = id;
    return true;
}

/* Tokenizes a run of plain text (no BOS) onto the list. */
static bool push_text(const tport_model *m, const char *s, size_t n, id_list *l) {
    if (!n)
        return true;
    char *t = malloc(n + 1);
    if (!t)
        return false;
    memcpy(t, s, n);
    t[n] = 0;
    int32_t k = tport_tokenize(m, t, false, NULL, 0);
    bool ok = k >= 0;
    tport_token *ids = ok ? malloc((size_t)(k ? k : 1) * sizeof *ids) : NULL;
    if (ids) {
        tport_tokenize(m, t, false, ids, k);
        for (int32_t i = 0; i < k && ok; i++)
            ok = push(l, ids[i]);
    }
    free(ids);
    free(t);
    return ok && ids;
}

int32_t prompt_from_chat(const tport_model *m, const chat_prompt *p, const char *const *markers,
                          tport_token **out, serve_error *err) {
    if (tport_tokenize(m, "", false, NULL, 0) < 0)
        return fail(err, tport_last_error());
    id_list l = {0};
    bool ok = tport_model_bos(m) < 0 || push(&l, tport_model_bos(m));
    size_t run = 0; /* start of the pending plain-text run */
    for (size_t i = 0; ok && i < p->len;) {
        tport_token special = -1;
        size_t mlen = 0;
        for (int k = 0; p->markup[i] && markers[k] && special < 0; k++) {
            mlen = strlen(markers[k]);
            if (i + mlen <= p->len && !memcmp(p->text + i, markers[k], mlen) && !memchr(p->markup + i, 0, mlen))
                special = tport_token_lookup(m, markers[k], mlen);
        }
        if (special < 0) {
            i++;
            continue;
        }
        ok = push_text(m, p->text + run, i - run, &l) && push(&l, special);
        i += mlen;
        run = i;
    }
    if (ok)
        ok = push_text(m, p->text + run, p->len - run, &l);
    if (!ok) {
        free(l.ids);
        return fail(err, "out of memory");
    }
    *out = l.ids ? l.ids : malloc(sizeof **out);
    return *out ? l.n : fail(err, "out of memory");
}

