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
 *   thread sends its token's text in between), also when the step
 *   thread samples and hands the next token in for a slot whose thread
 *   waits (batcher_wait's next, as tport serve's slots), and when it
 *   holds such threads asleep over several steps (stream_ms);
 * - admission (issue 42, time to first token): requests arriving together
 *   (joining a few ms apart, as their slots are taken) have their prompts
 *   in one step, every first token after the first step, not after a
 *   first prompt's lone step and a second (the wait for more goes on
 *   while they keep coming); a prompt that joins while
 *   others generate is in the next step;
 * - the steps run on the batcher's thread: a hand-in that completes a step
 *   returns at once, and the step runs before anyone waits for it.
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
    bool delegate;      /* pipelined, with next_token as batcher_wait's next */
    bool slow_next;     /* delegate: next_token takes 20 ms (a costly sampling) */
    int next_i;         /* delegate: the last token handed in */
    bool continued;     /* delegate: next_token ran in the last wait */
    int n_continued;
    int n_waits;        /* delegate: returns from batcher_wait */
    int arrive_us;      /* >= 0: joins by itself after this long (a request taking its slot) */
    atomic_int *start_at; /* non-NULL: arrives once the batcher has run this many steps */
    uint64_t joined_at, first_at; /* b->steps when it joined, and when its first token was there */
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

/* batcher_wait's next for a delegating worker: what its loop does after
 * a step, run by the batcher's step thread. */
static void next_token(void *arg) {
    worker *w = arg;
    if (w->next_i + 1 >= N_GEN)
        return;
    if (w->slow_next) {
        struct timespec t = {0, 20 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    w->next_i++;
    w->out[w->next_i] = greedy(w->m, tport_session_logits(w->s));
    batcher_submit(w->b, w->slot, w->s, &w->out[w->next_i], 1);
    w->continued = true;
    w->n_continued++;
}

/* A slot's request: its prompt, then N_GEN greedy tokens, each through
 * the batcher (w->b) or, without one, its session alone. */
static void *run(void *arg) {
    worker *w = arg;
    char err[256];
    tport_session_reset(w->s);
    if (w->start_at)
        while (atomic_load(&w->b->steps) < (uint64_t)atomic_load(w->start_at)) {
            struct timespec t = {0, 200 * 1000};
            nanosleep(&t, NULL);
        }
    if (w->arrive_us >= 0 && w->b) {
        struct timespec t = {0, (long)w->arrive_us * 1000};
        nanosleep(&t, NULL);
        batcher_join(w->b, w->slot);
        w->joined_at = atomic_load(&w->b->steps);
        /* between taking the slot and handing the prompt in (headers) */
        t = (struct timespec){0, 2 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    w->ok = (w->b ? batcher_eval(w->b, w->slot, w->s, w->prompt, w->n_prompt, err, sizeof err)
                           : tport_session_eval(w->s, w->prompt, w->n_prompt)) == TPORT_STATUS_OK;
    if (w->b)
        w->first_at = atomic_load(&w->b->steps);
    while (w->stall && atomic_load(w->stall)) {
        struct timespec t = {0, 2 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    if (w->ok && w->delegate) { /* as generate.c: the step thread may sample for a waiting slot */
        w->next_i = 0;
        w->out[0] = greedy(w->m, tport_session_logits(w->s));
        batcher_submit(w->b, w->slot, w->s, &w->out[0], 1);
        while (w->ok) {
            w->continued = false;
            w->ok = batcher_wait(w->b, w->slot, err, sizeof err, next_token, w) == TPORT_STATUS_OK;
            w->n_waits++;
            if (!w->ok || w->continued)
                continue;
            if (w->next_i + 1 >= N_GEN)
                break;
            w->next_i++;
            w->out[w->next_i] = greedy(w->m, tport_session_logits(w->s));
            batcher_submit(w->b, w->slot, w->s, &w->out[w->next_i], 1);
        }
    }
    for (int i = 0; w->ok && !w->delegate && i < N_GEN; i++) {
        w->out[i] = greedy(w->m, tport_session_logits(w->s));
        if (w->pipelined) { /* as tport serve's slots: the token's text goes out during the step */
            batcher_submit(w->b, w->slot, w->s, &w->out[i], 1);
            struct timespec t = {0, (long)(w->slot + 1) * 300 * 1000};
            nanosleep(&t, NULL);
            w->ok = batcher_wait(w->b, w->slot, err, sizeof err, NULL, NULL) == TPORT_STATUS_OK;
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
static double together(batcher *b, tport_model *m, tport_session **s, worker *w, int stall_slot, bool pipelined,
                       bool delegate, bool slow_next) {
    atomic_bool stall;
    atomic_init(&stall, stall_slot >= 0);
    pthread_t th[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++) {
        w[i] = (worker){.b = b, .m = m, .s = s[i], .slot = i, .prompt = prompts[i], .n_prompt = 5,
                        .stall = i == stall_slot ? &stall : NULL, .pipelined = pipelined, .delegate = delegate,
                        .slow_next = slow_next, .arrive_us = -1};
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

/* The requests of slots [0, n) arrive each arrive_ms after the last and
 * generate pipelined, as tport serve's streams; late_slot (or -1) comes
 * only once the others' first tokens are there and they have generated
 * a few.  Returns b->steps before. */
static uint64_t arrive(batcher *b, tport_model *m, tport_session **s, worker *w, int n, int arrive_ms, int late_slot) {
    uint64_t base = atomic_load(&b->steps);
    atomic_int start_at;
    atomic_init(&start_at, (int)base + 4);
    pthread_t th[N_SLOTS];
    for (int i = 0; i < n; i++) {
        w[i] = (worker){.b = b, .m = m, .s = s[i], .slot = i, .prompt = prompts[i], .n_prompt = 5, .pipelined = true,
                        .arrive_us = i == late_slot ? 0 : i * arrive_ms * 1000,
                        .start_at = i == late_slot ? &start_at : NULL};
        pthread_create(&th[i], NULL, run, &w[i]);
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    return base;
}

static void check_same(const worker *w, const worker *alone, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        CHECK(w[i].ok, "%s: slot %d failed", what, i);
        for (int k = 0; k < N_GEN; k++)
            CHECK(w[i].out[k] == alone[i].out[k], "%s: slot %d, token %d: %d, alone %d", what, i, k,
                  (int)w[i].out[k], (int)alone[i].out[k]);
    }
}

/* How often the step thread ran the slots' next (delegating workers). */
static int continued_in(const worker *w) {
    int n = 0;
    for (int i = 0; i < N_SLOTS; i++)
        n += w[i].n_continued;
    return n;
}

/* Slots whose thread came back from batcher_wait fewer times than the
 * step thread sampled for it: held over steps (delegating workers).
 * Without holding each sampling is followed by the thread's return. */
static int held_slots(const worker *w) {
    int n = 0;
    for (int i = 0; i < N_SLOTS; i++)
        n += w[i].n_waits < w[i].n_continued;
    return n;
}

/* Steps before each first token, for requests that arrive together or
 * while others generate. */
static void admission(batcher *b, tport_model *m, tport_session **s, const worker *alone) {
    worker w[N_SLOTS];
    /* every slot taken, 4 ms apart (more than from a slot's join to its
     * prompt): one step of all the prompts (the wait is far beyond any
     * step: only the count decides) */
    b->wait_ms = 60000;
    uint64_t n0 = atomic_load(&b->admitted), a0 = atomic_load(&b->admit_steps);
    uint64_t base = arrive(b, m, s, w, N_SLOTS, 4, -1);
    check_same(w, alone, N_SLOTS, "arriving together");
    for (int i = 0; i < N_SLOTS; i++)
        CHECK(w[i].first_at - base == 1, "arriving together: slot %d's first token after %llu steps, not 1", i,
              (unsigned long long)(w[i].first_at - base));
    CHECK(atomic_load(&b->steps) - base == 1 + N_GEN, "arriving together: %llu steps, not %d",
          (unsigned long long)(atomic_load(&b->steps) - base), 1 + N_GEN);
    /* /metrics' count: one step from joining to admission, each */
    CHECK(atomic_load(&b->admitted) - n0 == N_SLOTS && atomic_load(&b->admit_steps) - a0 == N_SLOTS,
          "arriving together: %llu admitted after %llu steps in all, not %d and %d",
          (unsigned long long)(atomic_load(&b->admitted) - n0), (unsigned long long)(atomic_load(&b->admit_steps) - a0),
          N_SLOTS, N_SLOTS);

    /* three of the four slots, 4 ms apart: the first prompt waits the
     * short admission wait for the others instead of going alone */
    b->wait_ms = 300;
    base = arrive(b, m, s, w, 3, 4, -1);
    check_same(w, alone, 3, "three arriving");
    for (int i = 0; i < 3; i++)
        CHECK(w[i].first_at - base == 1, "three arriving: slot %d's first token after %llu steps, not 1", i,
              (unsigned long long)(w[i].first_at - base));

    /* three slots 200 ms apart, a wait of 150 (300 after each prompt): the
     * third comes after the first's wait but within the second's, which
     * the wait goes on for (100 ms of slack either way) */
    b->wait_ms = 150;
    base = arrive(b, m, s, w, 3, 200, -1);
    check_same(w, alone, 3, "three trickling in");
    for (int i = 0; i < 3; i++)
        CHECK(w[i].first_at - base == 1, "three trickling in: slot %d's first token after %llu steps, not 1", i,
              (unsigned long long)(w[i].first_at - base));
    b->wait_ms = 300;

    /* slot 3 arrives while the others generate: its prompt is in the step
     * after the one running when it joined (their steps wait for it; the
     * three's prompts wait the admission wait for it first, in vain) */
    n0 = atomic_load(&b->admitted), a0 = atomic_load(&b->admit_steps);
    base = arrive(b, m, s, w, N_SLOTS, 0, 3);
    check_same(w, alone, N_SLOTS, "arriving late");
    CHECK(atomic_load(&b->admitted) - n0 == N_SLOTS && atomic_load(&b->admit_steps) - a0 == N_SLOTS,
          "arriving late: %llu admitted after %llu steps in all, not %d and %d",
          (unsigned long long)(atomic_load(&b->admitted) - n0), (unsigned long long)(atomic_load(&b->admit_steps) - a0),
          N_SLOTS, N_SLOTS);
    CHECK(w[3].joined_at - base >= 4, "slot 3 joined after %llu steps, not during the others' generation",
          (unsigned long long)(w[3].joined_at - base));
    CHECK(w[3].first_at - w[3].joined_at <= 2, "slot 3's first token %llu steps after it joined, not within 2",
          (unsigned long long)(w[3].first_at - w[3].joined_at));
    CHECK(b->n_late == 0 && b->n_active == 0, "after admission: %d late, %d active", b->n_late, b->n_active);

    /* hand-ins that complete a step, all from this thread: each returns at
     * once, and the step thread runs the step before anyone waits for it */
    for (int i = 0; i < N_SLOTS; i++) {
        tport_session_reset(s[i]);
        batcher_join(b, i);
    }
    base = atomic_load(&b->steps);
    for (int i = 0; i < N_SLOTS; i++)
        batcher_submit(b, i, s[i], prompts[i], 5);
    double t0 = now_ms();
    while (atomic_load(&b->steps) == base && now_ms() - t0 < 10000) {
        struct timespec t = {0, 200 * 1000};
        nanosleep(&t, NULL);
    }
    CHECK(atomic_load(&b->steps) == base + 1, "%llu steps for one complete hand-in before any wait, not 1",
          (unsigned long long)(atomic_load(&b->steps) - base));
    char err[256];
    for (int i = 0; i < N_SLOTS; i++)
        CHECK(batcher_wait(b, i, err, sizeof err, NULL, NULL) == TPORT_STATUS_OK, "slot %d: %s", i, err);
    tport_token next[N_SLOTS];
    for (int i = 0; i < N_SLOTS; i++) {
        next[i] = greedy(m, tport_session_logits(s[i]));
        CHECK(next[i] == alone[i].out[0], "slot %d's first token %d, alone %d", i, (int)next[i],
              (int)alone[i].out[0]);
        batcher_submit(b, i, s[i], &next[i], 1);
    }
    for (int i = 0; i < N_SLOTS; i++) {
        CHECK(batcher_wait(b, i, err, sizeof err, NULL, NULL) == TPORT_STATUS_OK, "slot %d: %s", i, err);
        CHECK(greedy(m, tport_session_logits(s[i])) == alone[i].out[1], "slot %d's second token", i);
        batcher_leave(b, i);
    }
    CHECK(atomic_load(&b->steps) == base + 2, "%llu steps for two complete hand-ins, not 2",
          (unsigned long long)(atomic_load(&b->steps) - base));
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
        alone[i] = (worker){.m = m, .s = s[i], .prompt = prompts[i], .n_prompt = 5, .arrive_us = -1};
        run(&alone[i]);
        CHECK(alone[i].ok, "slot %d alone: %s", i, tport_last_error());
    }

    batcher b;
    CHECK(batcher_init(&b, m, N_SLOTS), "batcher_init: %s", tport_last_error());

    /* lock step: one step for the prompts, then one per token */
    b.wait_ms = 60000;
    worker w[N_SLOTS];
    together(&b, m, s, w, -1, false, false, false);
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
    together(&b, m, s, w, -1, true, false, false);
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

    /* the step thread samples and hands in for the slots whose threads
     * wait (batcher_wait's next): the same tokens, one step per token
     * (stream_ms 0: their threads woken after every step) */
    batcher_set_stream_ms(&b, 0);
    steps0 = atomic_load(&b.steps), rows0 = atomic_load(&b.rows);
    together(&b, m, s, w, -1, false, true, false);
    check_same(w, alone, N_SLOTS, "delegating");
    int continued = continued_in(w);
    CHECK(atomic_load(&b.rows) - rows0 == N_SLOTS * (5 + N_GEN), "delegating: %llu rows, not %d",
          (unsigned long long)(atomic_load(&b.rows) - rows0), N_SLOTS * (5 + N_GEN));
    CHECK(atomic_load(&b.steps) - steps0 == 1 + N_GEN, "delegating: %llu steps for %d slots, not %d",
          (unsigned long long)(atomic_load(&b.steps) - steps0), N_SLOTS, 1 + N_GEN);
    /* the step thread runs the next of the slots that wait: of the
     * N_SLOTS slots' N_GEN - 1 tokens after the first, most here (57-60),
     * at least the first slot's of each step (its budget, a tenth of the
     * step, left all but 31 to the slots' threads under TSan in CI) */
    CHECK(continued >= N_GEN - 1, "delegating: the step thread sampled %d times for the slots, not %d",
          continued, N_GEN - 1);
    printf("delegating: the step thread sampled %d of %d tokens for waiting slots\n", continued,
           N_SLOTS * (N_GEN - 1));
    CHECK(held_slots(w) == 0, "delegating: %d slots' threads held with stream_ms 0", held_slots(w));

    /* held (issue 42): from one slot sampled for in a step on (hold_from
     * 1: under TSan the step thread's budget may leave all but the first
     * slot's sampling to their threads) and a stream_ms longer than the
     * run, a thread the step thread sampled for sleeps on while it
     * samples again after the next step: fewer returns from batcher_wait
     * than samplings for such a slot (at least slot 0, whose next always
     * runs first), the same tokens, one step per token */
    b.hold_from = 1;
    batcher_set_stream_ms(&b, 60000);
    steps0 = atomic_load(&b.steps);
    together(&b, m, s, w, -1, false, true, false);
    check_same(w, alone, N_SLOTS, "held");
    CHECK(atomic_load(&b.steps) - steps0 == 1 + N_GEN, "held: %llu steps for %d slots, not %d",
          (unsigned long long)(atomic_load(&b.steps) - steps0), N_SLOTS, 1 + N_GEN);
    CHECK(held_slots(w) >= 1, "held: no slot's thread slept through a step the step thread sampled for it");
    printf("held: %d slots' threads slept through steps; slot 0 came back %d times for %d samplings\n",
           held_slots(w), w[0].n_waits, w[0].n_continued);
    b.hold_from = BATCHER_HOLD_FROM;
    batcher_set_stream_ms(&b, BATCHER_STREAM_MS);

    /* a next that takes longer than the step thread's budget (20 ms, a
     * costly sampling): it runs the first of a step's and leaves the rest
     * to the slots' threads, so at most one a step; the same tokens */
    steps0 = atomic_load(&b.steps);
    together(&b, m, s, w, -1, false, true, true);
    check_same(w, alone, N_SLOTS, "with a slow next");
    continued = continued_in(w);
    uint64_t slow_steps = atomic_load(&b.steps) - steps0;
    CHECK(continued >= 1 && (uint64_t)continued <= slow_steps, "slow next: the step thread ran %d in %llu steps",
          continued, (unsigned long long)slow_steps);

    /* slot 3 stalls after its prompt: the others wait for it once (WAIT
     * ms), then go on without it; waiting at every step takes N_GEN WAITs */
    enum { WAIT = 400 };
    b.wait_ms = WAIT;
    double ms = together(&b, m, s, w, 3, false, false, false);
    for (int i = 0; i < N_SLOTS; i++)
        CHECK(w[i].ok, "slot %d beside a stalled one failed", i);
    for (int i = 0; i < N_SLOTS; i++)
        for (int k = 0; k < N_GEN; k++)
            CHECK(w[i].out[k] == alone[i].out[k], "slot %d, token %d beside a stalled slot: %d, alone %d", i, k,
                  (int)w[i].out[k], (int)alone[i].out[k]);
    CHECK(ms >= WAIT * 0.9, "the others did not wait for the stalled slot (%.0f ms)", ms);
    CHECK(ms < WAIT * N_GEN / 4.0, "the others took %.0f ms beside a stalled slot: waited for it at every step?", ms);
    CHECK(b.n_late == 0 && b.n_active == 0, "after: %d late, %d active", b.n_late, b.n_active);

    admission(&b, m, s, alone);

    batcher_destroy(&b);
    for (int i = 0; i < N_SLOTS; i++)
        tport_session_free(s[i]);
    tport_model_free(m);
    return test_finish("test_serve_batcher");
}
