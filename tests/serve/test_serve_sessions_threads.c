/* Two sessions of one model used from two threads at once, as tport serve
 * does with --parallel: each must produce exactly what a session alone
 * produces (weights shared, KV caches separate, evaluations serialised by
 * the scheduler).  Run under ThreadSanitizer in CI (.ci/run). */
#include <pthread.h>

#include "test_util.h"
#include "tport/tport.h"

#define N_GEN 24

typedef struct job {
    tport_model *m;
    const tport_token *prompt;
    int32_t n_prompt;
    tport_token out[N_GEN];
    int n_out;
    bool ok, tokenized_ok;
} job;

static void *generate(void *arg) {
    job *j = arg;
    tport_session_params sp = {.n_ctx = 128, .n_threads = 2};
    tport_session *s = tport_session_new(j->m, &sp);
    tport_sampler_params p = tport_sampler_defaults();
    p.temperature = 0;
    tport_sampler *sm = tport_sampler_new(&p);
    /* tokenize and detokenize beside the other thread's evaluation, as the
     * server's connection threads do */
    tport_token ids[8];
    char text[64];
    for (int i = 0; i < 20; i++) {
        j->tokenized_ok &= tport_tokenize(j->m, "Once upon a time", true, ids, 8) == 5 && ids[1] == 9038;
        j->tokenized_ok &= tport_detokenize(j->m, ids, 5, text, (int32_t)sizeof text) == 16 && !memcmp(text, "Once upon a time", 16);
    }
    j->ok = s && sm && tport_session_eval(s, j->prompt, j->n_prompt) == TPORT_STATUS_OK;
    for (j->n_out = 0; j->ok && j->n_out < N_GEN; j->n_out++) {
        tport_token id = tport_sampler_sample(sm, tport_session_logits(s), tport_model_n_vocab(j->m));
        j->out[j->n_out] = id;
        tport_sampler_accept(sm, id);
        j->ok = id >= 0 && tport_session_eval(s, &id, 1) == TPORT_STATUS_OK;
    }
    tport_sampler_free(sm);
    tport_session_free(s);
    return NULL;
}

int main(void) {
    char path[1024];
    if (!test_shared_path("models/llama-2-tiny-random.gguf", path, sizeof path))
        test_skip("test_serve_sessions_threads", "../shared/models/llama-2-tiny-random.gguf is absent");
    tport_model_params mp = {.n_threads = 2};
    tport_model *m = tport_model_load(path, &mp);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (!m)
        return test_finish("test_serve_sessions_threads");
    const tport_token prompt_a[] = {1, 9038, 2501, 263, 931}, prompt_b[] = {1, 15043, 3186};
    job alone_a = {.m = m, .prompt = prompt_a, .n_prompt = 5}, alone_b = {.m = m, .prompt = prompt_b, .n_prompt = 3};
    generate(&alone_a);
    generate(&alone_b);
    CHECK(alone_a.ok && alone_b.ok, "single-threaded runs");
    CHECK(memcmp(alone_a.out, alone_b.out, sizeof alone_a.out) != 0, "different prompts give different text");

    for (int round = 0; round < 3; round++) {
        job a = {.m = m, .prompt = prompt_a, .n_prompt = 5, .tokenized_ok = true},
            b = {.m = m, .prompt = prompt_b, .n_prompt = 3, .tokenized_ok = true};
        pthread_t ta, tb;
        int ra = pthread_create(&ta, NULL, generate, &a), rb = pthread_create(&tb, NULL, generate, &b);
        CHECK(ra == 0 && rb == 0, "threads");
        if (ra == 0)
            pthread_join(ta, NULL);
        if (rb == 0)
            pthread_join(tb, NULL);
        CHECK(a.ok && b.ok, "round %d: threaded runs", round);
        CHECK(a.tokenized_ok && b.tokenized_ok, "round %d: tokenizing beside evaluation", round);
        CHECK(!memcmp(a.out, alone_a.out, sizeof a.out), "round %d: session A differs when run beside B", round);
        CHECK(!memcmp(b.out, alone_b.out, sizeof b.out), "round %d: session B differs when run beside A", round);
    }
    /* tokenizing in parallel with evaluation: the tokenizer is read-only */
    tport_token ids[8];
    CHECK(tport_tokenize(m, "Once upon a time", true, ids, 8) == 5 && ids[1] == 9038, "tokenize");
    tport_model_free(m);
    return test_finish("test_serve_sessions_threads");
}
