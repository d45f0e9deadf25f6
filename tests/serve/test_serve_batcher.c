/* tport serve's batcher (tools/tport/serve/batcher.c), driven by threads
 * as the server's connection threads drive it, on the tiny model:
 *
 * - slots that all hand their tokens in form one step each time: no step
 *   runs with part of them while the rest are on their way (the timer is
 *   set far beyond any step here, so only the count decides);
 * - a slot that stops handing tokens in (a client that does not read)
 *   holds the others up once, for the wait, and not at every step: it is
 *   late until it comes back;
 * - what each slot generates is what its session generates alone,
 *   through batcher_eval or batcher_submit + batcher_wait (a slot's
 *   thread sends its token's text in between).
 *
 * Run under ThreadSanitizer in CI (.ci/run). */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "batcher.h"
#include "test_util.h"
#include "tport/tport.h"

#define N_SLOTS 4
#define N_GEN 16

typedef struct worker {
    batcher *b;
    tport_model *m;
    tport_session *s;
    int slot;
    const tport_token *prompt;
    int32_t n_prompt;
    atomic_bool *stall; /* set: after the prompt, wait until it is clear */
    bool pipelined;     /* batcher_submit, "send" for a while, batcher_wait */
    tport_token out[N_GEN];
    bool ok;
} worker;

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static tport_token greedy(const tport_model *m, const float *logits) {
    int32_t n = tport_model_n_vocab(m), best = 0;
    for (int32_t i = 1; i < n; i++)
        if (logits[i] > logits[best])
            best = i;
    return best;
}

/* A slot's request: its prompt, then N_GEN greedy tokens, each through
 * the batcher (w->b) or, without one, its session alone. */
static void *run(void *arg) {
    worker *w = arg;
    char err[256];
    tport_session_reset(w->s);
    w->ok = (w->b ? batcher_eval(w->b, w->slot, w->s, w->prompt, w->n_prompt, err, sizeof err)
                           : tport_session_eval(w->s, w->prompt, w->n_prompt)) == TPORT_STATUS_OK;
    while (w->stall && atomic_load(w->stall)) {
        struct timespec t = {0, 2 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    for (int i = 0; w->ok && i < N_GEN; i++) {
        w->out[i] = greedy(w->m, tport_session_logits(w->s));
        if (w->pipelined) { /* as tport serve's slots: the token's text goes out during the step */
            batcher_submit(w->b, w->slot, w->s, &w->out[i], 1);
            struct timespec t = {0, (long)(w->slot + 1) * 300 * 1000};
            nanosleep(&t, NULL);
            w->ok = batcher_wait(w->b, w->slot, err, sizeof err) == TPORT_STATUS_OK;
            continue;
        }
        w->ok = (w->b ? batcher_eval(w->b, w->slot, w->s, &w->out[i], 1, err, sizeof err)
                      : tport_session_eval(w->s, &w->out[i], 1)) == TPORT_STATUS_OK;
    }
    if (w->b)
        batcher_leave(w->b, w->slot);
    return NULL;
}

static const tport_token prompts[N_SLOTS][5] = {
    {1, 9038, 2501, 263, 931}, {1, 15043, 3186, 338, 263}, {1, 450, 4799, 11203, 29889}, {1, 3118, 2462, 29892, 263}};

/* The slots' requests at once through b; stall_slot (or -1) stops after
 * its prompt until the others are done.  Returns the others' wall time. */
static double together(batcher *b, tport_model *m, tport_session **s, worker *w, int stall_slot, bool pipelined) {
    atomic_bool stall;
    atomic_init(&stall, stall_slot >= 0);
    pthread_t th[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++) {
        w[i] = (worker){.b = b, .m = m, .s = s[i], .slot = i, .prompt = prompts[i], .n_prompt = 5,
                        .stall = i == stall_slot ? &stall : NULL, .pipelined = pipelined};
        batcher_join(b, i); /* all in before anyone hands a token in */
    }
    double t0 = now_ms(), others = 0;
    for (int i = 0; i < N_SLOTS; i++)
        pthread_create(&th[i], NULL, run, &w[i]);
    for (int i = 0; i < N_SLOTS; i++)
        if (i != stall_slot)
            pthread_join(th[i], NULL);
    others = now_ms() - t0;
    atomic_store(&stall, false);
    if (stall_slot >= 0)
        pthread_join(th[stall_slot], NULL);
    return others;
}

int main(void) {
    char path[1024];
    if (!test_shared_path("models/llama-2-tiny-random.gguf", path, sizeof path))
        test_skip("test_serve_batcher", "../shared/models/llama-2-tiny-random.gguf is absent");
    tport_model_params mp = {.n_threads = 2};
    tport_model *m = tport_model_load(path, &mp);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (!m)
        return test_finish("test_serve_batcher");
    tport_session_params sp = {.n_ctx = 64, .n_threads = 2};
    tport_session *s[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++)
        CHECK((s[i] = tport_session_new(m, &sp)) != NULL, "session: %s", tport_last_error());

    worker alone[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++) {
        alone[i] = (worker){.m = m, .s = s[i], .prompt = prompts[i], .n_prompt = 5};
        run(&alone[i]);
        CHECK(alone[i].ok, "slot %d alone: %s", i, tport_last_error());
    }

    batcher b;
    CHECK(batcher_init(&b, m, N_SLOTS), "batcher_init: %s", tport_last_error());

    /* lock step: one step for the prompts, then one per token */
    b.wait_ms = 60000;
    worker w[N_SLOTS];
    together(&b, m, s, w, -1, false);
    uint64_t steps = atomic_load(&b.steps), rows = atomic_load(&b.rows);
    for (int i = 0; i < N_SLOTS; i++) {
        CHECK(w[i].ok, "slot %d together failed", i);
        for (int k = 0; k < N_GEN; k++)
            CHECK(w[i].out[k] == alone[i].out[k], "slot %d, token %d: %d together, %d alone", i, k,
                  (int)w[i].out[k], (int)alone[i].out[k]);
    }
    CHECK(rows == N_SLOTS * (5 + N_GEN), "%llu rows evaluated, not %d", (unsigned long long)rows,
          N_SLOTS * (5 + N_GEN));
    CHECK(steps == 1 + N_GEN, "%llu steps for %d slots in lock step, not %d (steps without every slot)",
          (unsigned long long)steps, N_SLOTS, 1 + N_GEN);

    /* handed in before "sending" (batcher_submit, batcher_wait): still
     * one step per token, each with every slot, and the same tokens */
    uint64_t steps0 = atomic_load(&b.steps), rows0 = atomic_load(&b.rows);
    together(&b, m, s, w, -1, true);
    for (int i = 0; i < N_SLOTS; i++) {
        CHECK(w[i].ok, "slot %d pipelined failed", i);
        for (int k = 0; k < N_GEN; k++)
            CHECK(w[i].out[k] == alone[i].out[k], "slot %d, token %d: %d pipelined, %d alone", i, k,
                  (int)w[i].out[k], (int)alone[i].out[k]);
    }
    CHECK(atomic_load(&b.rows) - rows0 == N_SLOTS * (5 + N_GEN), "pipelined: %llu rows, not %d",
          (unsigned long long)(atomic_load(&b.rows) - rows0), N_SLOTS * (5 + N_GEN));
    CHECK(atomic_load(&b.steps) - steps0 == 1 + N_GEN, "pipelined: %llu steps for %d slots, not %d",
          (unsigned long long)(atomic_load(&b.steps) - steps0), N_SLOTS, 1 + N_GEN);

    /* slot 3 stalls after its prompt: the others wait for it once (WAIT
     * ms), then go on without it; waiting at every step takes N_GEN WAITs */
    enum { WAIT = 400 };
    b.wait_ms = WAIT;
    double ms = together(&b, m, s, w, 3, false);
    for (int i = 0; i < N_SLOTS; i++)
        CHECK(w[i].ok, "slot %d beside a stalled one failed", i);
    for (int i = 0; i < N_SLOTS; i++)
        for (int k = 0; k < N_GEN; k++)
            CHECK(w[i].out[k] == alone[i].out[k], "slot %d, token %d beside a stalled slot: %d, alone %d", i, k,
                  (int)w[i].out[k], (int)alone[i].out[k]);
    CHECK(ms >= WAIT * 0.9, "the others did not wait for the stalled slot (%.0f ms)", ms);
    CHECK(ms < WAIT * N_GEN / 4.0, "the others took %.0f ms beside a stalled slot: waited for it at every step?", ms);
    CHECK(b.n_late == 0 && b.n_active == 0, "after: %d late, %d active", b.n_late, b.n_active);

    batcher_destroy(&b);
    for (int i = 0; i < N_SLOTS; i++)
        tport_session_free(s[i]);
    tport_model_free(m);
    return test_finish("test_serve_batcher");
}
