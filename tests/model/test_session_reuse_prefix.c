/* tport_session_reuse_prefix, the prompt cache in one call: how many
 * tokens it keeps (the common prefix, never the whole prompt: its last
 * token is evaluated again), that the session is then where it says, that
 * evaluating the rest gives the logits of the prompt evaluated from
 * scratch, and that a sliding-window ring which no longer holds what the
 * prefix needs starts over instead of failing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define CTX 64

static float max_diff(const float *a, const float *b, int32_t n, float *scale) {
    float d = 0;
    *scale = 0;
    for (int32_t i = 0; i < n; i++) {
        d = fmaxf(d, fabsf(a[i] - b[i]));
        *scale = fmaxf(*scale, fabsf(b[i]));
    }
    return d;
}

/* reuse_prefix(s, p, n), then the rest evaluated: the logits must be those
 * of p evaluated whole in a fresh session; returns what it kept. */
static int32_t reuse_and_check(tport_model *m, tport_session *s, const tport_session_params *sp,
                               const tport_token *p, int32_t n, const char *what) {
    int32_t k = tport_session_reuse_prefix(s, p, n);
    CHECK(k >= 0 && k < n && tport_session_pos(s) == k, "%s: kept %d, position %d", what, (int)k,
          (int)tport_session_pos(s));
    CHECK(k < 0 || tport_session_logits(s) == NULL, "%s: logits left from before", what);
    if (k < 0 || k >= n)
        return k;
    CHECK(tport_session_eval(s, p + k, n - k) == TPORT_STATUS_OK, "%s: %s", what, tport_last_error());
    tport_session *r = tport_session_new(m, sp);
    CHECK(r && tport_session_eval(r, p, n) == TPORT_STATUS_OK, "%s: fresh: %s", what, tport_last_error());
    const float *a = tport_session_logits(s), *b = r ? tport_session_logits(r) : NULL;
    float scale = 0, d = a && b ? max_diff(a, b, tport_model_n_vocab(m), &scale) : INFINITY;
    CHECK(d <= 1e-4f * scale && scale > 0, "%s: logits differ from the fresh evaluation by %g (max %g)", what,
          (double)d, (double)scale);
    tport_session_free(r);
    return k;
}

int main(void) {
    const char *dir = getenv("TMPDIR");
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/tport-reuse-%d.gguf", dir && *dir ? dir : "/tmp", (int)getpid());
    tport_token a[40], b[40];
    for (int i = 0; i < 40; i++)
        a[i] = b[i] = (tport_token)(1 + (i * 37) % 299);

    /* every layer attends over the whole context */
    snprintf(cmd, sizeof cmd, "'%s' synth --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 128 --vocab 300 --ctx %d "
             "--seed 2 --out-gain 4 --type q8_0 -o '%s' >/dev/null", TPORT_CLI, CTX, path);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    tport_session_params sp = {.n_ctx = CTX, .n_batch = 8};
    tport_session *s = m ? tport_session_new(m, &sp) : NULL;
    if (s) {
        CHECK(reuse_and_check(m, s, &sp, a, 12, "empty session") == 0, "kept from nothing");
        b[7] = 250; /* 7 tokens in common */
        CHECK(reuse_and_check(m, s, &sp, b, 15, "diverging") == 7, "common prefix of 7");
        CHECK(reuse_and_check(m, s, &sp, b, 15, "the same prompt") == 14, "all but the last token");
        CHECK(reuse_and_check(m, s, &sp, b, 9, "a shorter prompt") == 8, "all but the last token of 9");
        CHECK(reuse_and_check(m, s, &sp, b, 20, "a longer prompt") == 9, "the 9 held");
        CHECK(tport_session_reuse_prefix(s, b, 0) == 0 && tport_session_pos(s) == 0, "an empty prompt: emptied");
        CHECK(tport_session_reuse_prefix(NULL, b, 3) == -1, "no session");
        CHECK(tport_session_reuse_prefix(s, NULL, 3) == -1, "no prompt");
        CHECK(tport_session_reuse_prefix(s, b, -1) == -1, "a negative length");
    }
    tport_session_free(s);
    tport_model_free(m);
    unlink(path);

    /* gemma3 with a window of 8 in batches of 4: its local layers keep
     * rings of 11 cells, from which going back 3 positions is possible,
     * 10 not */
    snprintf(cmd, sizeof cmd, "'%s' synth --arch gemma3 --dim 64 --layers 3 --heads 4 --kv-heads 2 --head-size 32 "
             "--ff 128 --vocab 300 --ctx %d --window 8 --seed 5 --type q8_0 -o '%s' >/dev/null", TPORT_CLI, CTX, path);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    sp = (tport_session_params){.n_ctx = CTX, .n_batch = 4};
    s = m ? tport_session_new(m, &sp) : NULL;
    if (s) {
        for (int i = 0; i < 40; i++)
            b[i] = a[i];
        CHECK(tport_session_eval(s, a, 30) == TPORT_STATUS_OK, "%s", tport_last_error());
        b[28] = 250;
        CHECK(reuse_and_check(m, s, &sp, b, 32, "ring: back 2") == 28, "the ring still holds 28");
        CHECK(tport_session_eval(s, a + 32, 6) == TPORT_STATUS_OK, "%s", tport_last_error()); /* at 38 */
        b[20] = 251;
        CHECK(reuse_and_check(m, s, &sp, b, 24, "ring: back 18") == 0, "the ring no longer holds 20: start over");
    }
    tport_session_free(s);
    tport_model_free(m);
    unlink(path);
    return test_finish("test_session_reuse_prefix");
}
