/* Greedy generation for the model tests: evaluates the prompt, then picks
 * the arg-max token n times.  Returns how many ids it produced (n unless
 * an evaluation failed, which it prints). */
#ifndef TPORT_TEST_GREEDY_H
#define TPORT_TEST_GREEDY_H

#include <stdio.h>

#include "tport/tport.h"

static inline int greedy_ids(tport_model *m, const tport_token *prompt, int n_prompt, tport_token *out, int n) {
    tport_session *s = tport_session_new(m, NULL);
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

#endif
