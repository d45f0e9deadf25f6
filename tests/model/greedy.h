/* Greedy generation for the model tests: evaluates the prompt, then picks
 * the arg-max token n times.  Returns how many ids it produced (n unless
 * an evaluation failed, which it prints). */
#ifndef TPORT_TEST_GREEDY_H
#define TPORT_TEST_GREEDY_H

#include <stdio.h>

#include "../test_util.h"
#include "json_min.h"
#include "tport/tport.h"

static inline int greedy_ids(tport_model *m, const tport_token *prompt, int n_prompt, tport_token *out, int n) {
    /* the references (llama2.c; llama.cpp with type_k = type_v = f32) keep
     * their KV caches in f32: so does this session */
    tport_session_params sp = {.kv_f32 = true};
    tport_session *s = tport_session_new(m, &sp);
    if (!s || tport_session_eval(s, prompt, n_prompt) != TPORT_STATUS_OK) {
        fprintf(stderr, "  greedy: %s\n", tport_last_error());
        tport_session_free(s);
        return 0;
    }
    int32_t n_vocab = tport_model_n_vocab(m);
    int done = 0;
    while (done < n) {
        const float *logits = tport_session_logits(s);
        tport_token best = 0;
        for (int32_t i = 1; logits && i < n_vocab; i++)
            if (logits[i] > logits[best])
                best = i;
        out[done++] = best;
        if (done < n && tport_session_eval(s, &best, 1) != TPORT_STATUS_OK) {
            fprintf(stderr, "  greedy: %s\n", tport_last_error());
            break;
        }
    }
    tport_session_free(s);
    return done;
}

/* Index of the first difference of two id lists, or -1 if equal. */
static inline int first_difference(const tport_token *a, int na, const tport_token *b, int nb) {
    for (int i = 0; i < na || i < nb; i++)
        if (i >= na || i >= nb || a[i] != b[i])
            return i;
    return -1;
}

/* Greedy ids of m for a refs.json entry (prompt_ids -> generated_ids) must
 * equal the reference exactly; `what` names the run in messages. */
static inline void expect_reference_ids(tport_model *m, const json *ref, const char *name, const char *what) {
    const json *prompt = json_get(ref, "prompt_ids"), *gen = json_get(ref, "generated_ids");
    CHECK(prompt && gen && prompt->n <= 16 && gen->n <= 64, "refs.json entry for %s", what);
    if (!prompt || !gen || prompt->n > 16 || gen->n > 64)
        return;
    tport_token p[16], want[64], ids[64];
    for (size_t i = 0; i < prompt->n; i++)
        p[i] = (tport_token)prompt->items[i].number;
    for (size_t i = 0; i < gen->n; i++)
        want[i] = (tport_token)gen->items[i].number;
    int got = greedy_ids(m, p, (int)prompt->n, ids, (int)gen->n);
    int diff = first_difference(ids, got, want, (int)gen->n);
    CHECK(diff < 0, "%s: id %d differs from the reference", what, diff);
    printf("%s: %s: %d/%zu ids match the reference\n", name, what, diff < 0 ? (int)gen->n : diff, gen->n);
}

#endif
