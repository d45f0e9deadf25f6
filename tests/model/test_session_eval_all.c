/* tport_session_eval_all: every token's logits from one batch.  Row j
 * must be what evaluating tokens 0..j gives for its last token (there the
 * head ran on that row alone), the last row what tport_session_logits
 * then says, and the session must go on as after tport_session_eval. */
#include <math.h>

#include "../test_util.h"
#include "tport/tport.h"

static float max_abs(const float *a, int32_t n) {
    float m = 0;
    for (int32_t i = 0; i < n; i++)
        m = fabsf(a[i]) > m ? fabsf(a[i]) : m;
    return m;
}

int main(void) {
    const char *dir = getenv("TPORT_SHARED_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/llama-2-tiny-random.gguf", dir ? dir : "../shared");
    FILE *f = fopen(path, "rb");
    if (!f)
        test_skip("test_session_eval_all", path);
    fclose(f);
    tport_model_params mp = {.n_threads = 1};
    tport_model *m = tport_model_load(path, &mp);
    CHECK(m != NULL, "%s", tport_last_error());
    if (!m)
        return test_finish("test_session_eval_all");
    const int32_t nv = tport_model_n_vocab(m);
    enum { N = 12 };
    const tport_token ids[N] = {1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203};
    tport_session_params sp = {.n_ctx = 64, .n_batch = 5, .kv_f32 = true}; /* batches of 5, 5 and 2 */
    tport_session *s = tport_session_new(m, &sp);
    tport_session *r = tport_session_new(m, &sp);
    float *all = malloc((size_t)N * (size_t)nv * sizeof *all);
    CHECK(s && r && all, "setup");
    if (s && r && all) {
        CHECK(tport_session_eval_all(s, ids, N, all) == TPORT_STATUS_OK, "%s", tport_last_error());
        CHECK(tport_session_pos(s) == N, "position %d", (int)tport_session_pos(s));
        const float *last = tport_session_logits(s);
        CHECK(last && !memcmp(last, all + (size_t)(N - 1) * (size_t)nv, (size_t)nv * sizeof *last),
              "the last row is not tport_session_logits");
        for (int32_t j = 0; j < N; j++) {
            tport_session_reset(r);
            CHECK(tport_session_eval(r, ids, j + 1) == TPORT_STATUS_OK, "%s", tport_last_error());
            const float *ref = tport_session_logits(r);
            const float *row = all + (size_t)j * (size_t)nv;
            float worst = 0, scale = ref ? max_abs(ref, nv) : 0;
            for (int32_t v = 0; ref && v < nv; v++)
                worst = fabsf(row[v] - ref[v]) > worst ? fabsf(row[v] - ref[v]) : worst;
            CHECK(ref && scale > 0 && worst <= 1e-4f * scale, "row %d: max |diff| %g against max |logit| %g",
                  (int)j, worst, scale);
        }
        /* and the session goes on: one more token after the batch */
        const tport_token next = 263;
        CHECK(tport_session_eval(s, &next, 1) == TPORT_STATUS_OK, "%s", tport_last_error());
        CHECK(tport_session_pos(s) == N + 1, "position after one more: %d", (int)tport_session_pos(s));
        CHECK(tport_session_eval_all(s, ids, 1, NULL) != TPORT_STATUS_OK, "NULL logits accepted");
    }
    free(all);
    tport_session_free(s);
    tport_session_free(r);
    tport_model_free(m);
    return test_finish("test_session_eval_all");
}
