/* The model side of pipeline parallelism, in one process: a model loaded
 * as 2 or 3 stages (layer ranges, hidden state in and out) and chained by
 * hand gives bit-identical logits to the whole model, for a prompt of
 * several batches and for generated tokens, at every split point of
 * stories260K (5 layers).  A stage binds only its own layers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "model/model.h"
#include "tport/tport.h"

#define N_PROMPT 23
#define N_GEN 6
#define MAX_STAGES 3

static tport_model *load(const char *path, int32_t l0, int32_t l1, bool embed, bool head) {
    tport_model_params p = {.n_threads = 1, .layer_begin = l0, .layer_end = l1, .no_embedding = !embed,
                            .no_head = !head};
    return tport_model_load(path, &p);
}

/* Greedy over the whole model: the logits after the prompt and after
 * every generated token, n_vocab floats each. */
static int reference(const char *path, const tport_token *prompt, float *logits, tport_token *ids) {
    tport_model *m = load(path, 0, 0, true, true);
    tport_session_params sp = {.n_ctx = 64, .n_batch = 8, .n_threads = 1};
    tport_session *s = m ? tport_session_new(m, &sp) : NULL;
    int32_t nv = m ? tport_model_n_vocab(m) : 0;
    int ok = s && tport_session_eval(s, prompt, N_PROMPT) == TPORT_STATUS_OK;
    for (int g = 0; ok && g <= N_GEN; g++) {
        const float *l = tport_session_logits(s);
        memcpy(logits + (size_t)g * (size_t)nv, l, (size_t)nv * sizeof *l);
        tport_token best = 0;
        for (int32_t i = 1; i < nv; i++)
            best = l[i] > l[best] ? i : best;
        ids[g] = best;
        ok = g == N_GEN || tport_session_eval(s, &best, 1) == TPORT_STATUS_OK;
    }
    tport_session_free(s);
    tport_model_free(m);
    return ok;
}

/* The same through stages split at begin[]: stage 0 embeds and holds the
 * head, as rank 0 of a pipeline does. */
static void chained(const char *path, int n_stages, const int32_t *begin, const tport_token *prompt,
                    const float *ref, const tport_token *ref_ids) {
    tport_model *m[MAX_STAGES] = {0};
    tport_session *s[MAX_STAGES] = {0};
    tport_session_params sp = {.n_ctx = 64, .n_batch = 8, .n_threads = 1};
    for (int k = 0; k < n_stages; k++) {
        m[k] = load(path, begin[k], begin[k + 1], k == 0, k == 0);
        s[k] = m[k] ? tport_session_new(m[k], &sp) : NULL;
        CHECK(s[k], "stage %d [%d, %d): %s", k, (int)begin[k], (int)begin[k + 1], tport_last_error());
        if (!s[k])
            goto out;
    }
    int32_t nv = tport_model_n_vocab(m[0]), ne = tport_model_n_embd(m[0]);
    float *h[2] = {malloc((size_t)N_PROMPT * (size_t)ne * sizeof(float)),
                   malloc((size_t)N_PROMPT * (size_t)ne * sizeof(float))};
    tport_token cur[N_PROMPT];
    memcpy(cur, prompt, sizeof cur);
    int n = N_PROMPT;
    for (int g = 0; g <= N_GEN; g++) {
        tport_stage_io io = {.ids = cur, .n = n, .hidden_out = h[0]};
        bool ok = tport_session_eval_stage(s[0], &io) == TPORT_STATUS_OK;
        for (int k = 1; ok && k < n_stages; k++) {
            io = (tport_stage_io){.hidden_in = h[(k - 1) % 2], .n = n, .hidden_out = h[k % 2],
                                  .out_last_only = k == n_stages - 1};
            ok = tport_session_eval_stage(s[k], &io) == TPORT_STATUS_OK;
        }
        const float *last = n_stages == 1 ? NULL : h[(n_stages - 1) % 2];
        io = (tport_stage_io){.hidden_in = last, .n = 1, .head_only = true};
        ok = ok && tport_session_eval_stage(s[0], &io) == TPORT_STATUS_OK;
        CHECK(ok, "split at %d: step %d: %s", (int)begin[1], g, tport_last_error());
        if (!ok)
            break;
        const float *l = tport_session_logits(s[0]);
        CHECK(l && !memcmp(l, ref + (size_t)g * (size_t)nv, (size_t)nv * sizeof *l),
              "%d stages split at %d,%d: the logits of step %d differ from one model's", n_stages,
              (int)begin[1], (int)begin[2], g);
        cur[0] = ref_ids[g];
        n = 1;
        CHECK(tport_session_pos(s[n_stages - 1]) == tport_session_pos(s[0]),
              "the stages' positions agree (%d, %d)", (int)tport_session_pos(s[0]),
              (int)tport_session_pos(s[n_stages - 1]));
    }
    free(h[0]);
    free(h[1]);
out:
    for (int k = 0; k < n_stages; k++) {
        tport_session_free(s[k]);
        tport_model_free(m[k]);
    }
}

int main(void) {
    char buf[4096];
    const char *path = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!path)
        test_skip("test_stage_chain", "../shared/models/stories260K.bin is missing");
    tport_token prompt[N_PROMPT];
    for (int i = 0; i < N_PROMPT; i++)
        prompt[i] = i ? 3 + (i * 37) % 500 : 1;
    tport_model *whole = load(path, 0, 0, true, true);
    CHECK(whole, "loads: %s", tport_last_error());
    if (!whole)
        return test_finish("test_stage_chain");
    int32_t nl = tport_model_n_layer(whole), nv = tport_model_n_vocab(whole);
    tport_model_free(whole);
    float *ref = malloc((size_t)(N_GEN + 1) * (size_t)nv * sizeof *ref);
    tport_token ref_ids[N_GEN + 1];
    CHECK(reference(path, prompt, ref, ref_ids), "the whole model runs: %s", tport_last_error());

    for (int32_t a = 1; a < nl; a++) {
        int32_t two[3] = {0, a, nl};
        chained(path, 2, two, prompt, ref, ref_ids);
        for (int32_t b = a + 1; b < nl; b++) {
            int32_t three[4] = {0, a, b, nl};
            chained(path, 3, three, prompt, ref, ref_ids);
        }
    }

    /* a stage binds its own layers only, and refuses what it does not hold */
    tport_model *mid = load(path, 2, 4, false, false);
    CHECK(mid && !mid->w.tok_embd && !mid->w.output && !mid->w.output_norm && !mid->layers[1].wq &&
              mid->layers[2].wq && mid->layers[3].w_down && !mid->layers[4].wq,
          "layers [2, 4) alone are bound");
    tport_session *s = mid ? tport_session_new(mid, NULL) : NULL;
    tport_token one = 1;
    CHECK(s && tport_session_eval(s, &one, 1) != TPORT_STATUS_OK && strstr(tport_last_error(), "embedding"),
          "a stage without the embedding refuses token ids: %s", tport_last_error());
    tport_session_free(s);
    tport_model_free(mid);
    tport_model_params bad = {.layer_begin = 3, .layer_end = 9};
    CHECK(!tport_model_load(path, &bad) && strstr(tport_last_error(), "layers [3, 9)"),
          "a layer range past the model is refused: %s", tport_last_error());
    free(ref);
    return test_finish("test_stage_chain");
}
