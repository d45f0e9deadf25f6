/* The barrier between the phases of a graph run on the pool (cpu_graph.c).
 *
 * A thread that arrives early spins (pause instruction) for a bounded,
 * adaptive time, as the pool's workers do, and then sleeps on a condition
 * variable: a token's graph has a few hundred barriers, most of them
 * microseconds apart, but on an oversubscribed machine the last thread may
 * be preempted for a whole time slice, and spinning through it would only
 * keep it off the core.
 *
 * No lost wake-ups: a sleeper announces itself (sleepers, seq_cst) under
 * the mutex and then re-checks the round; the last arriver advances the
 * round (seq_cst) and then checks the announcement, taking the mutex to
 * broadcast if anyone sleeps.  Sequential consistency makes at least one
 * side see the other. */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 199309L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "cpu_internal.h"

/* Spin budgets in ns, as the pool's (cpu_threadpool.c). */
#define SPIN_NS 50000
#define SPIN_MIN_NS 2000

struct cpu_barrier {
    _Alignas(64) atomic_int arrived; /* threads at the barrier this round */
    atomic_int failed;               /* OR of the arrivals' failure flags */
    _Alignas(64) atomic_uint round;  /* advanced by the last arriver */
    int result;                      /* `failed` of the round just ended */
    atomic_int sleepers;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    /* each thread's spin budget, kept across rounds and graphs; touched
     * only by that thread */
    struct {
        _Alignas(64) uint64_t ns;
    } budget[CPU_MAX_THREADS];
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

cpu_barrier *cpu_barrier_new(void) {
    cpu_barrier *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    atomic_init(&b->arrived, 0);
    atomic_init(&b->failed, 0);
    atomic_init(&b->round, 0);
    atomic_init(&b->sleepers, 0);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->wake, NULL);
    for (int i = 0; i < CPU_MAX_THREADS; i++)
        b->budget[i].ns = SPIN_NS;
    return b;
}

void cpu_barrier_free(cpu_barrier *b) {
    if (!b)
        return;
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

/* Spins for at most *budget ns until the round moves on.  The budget
 * adapts as the pool's does: a wait well within it doubles it, one that
 * overran it (a slow phase, or this thread preempted) halves it. */
static bool spin_for_round(cpu_barrier *b, unsigned round, uint64_t *budget) {
    uint64_t start = now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(&b->round, memory_order_acquire) != round) {
            uint64_t took = now_ns() - start;
            if (took <= *budget / 2 && *budget < SPIN_NS)
                *budget = *budget * 2 > SPIN_NS ? SPIN_NS : *budget * 2;
            else if (took > *budget && *budget > SPIN_MIN_NS)
                *budget /= 2;
            return true;
        }
        cpu_relax();
        if ((i & 15) == 0 && now_ns() - start > *budget) {
            if (*budget > SPIN_MIN_NS)
                *budget /= 2;
            return false;
        }
    }
}

bool cpu_barrier_wait(cpu_barrier *b, int ith, int nth, bool failed) {
    if (nth <= 1)
        return failed;
    /* the round cannot end before this thread arrives, so this is its round */
    unsigned round = atomic_load_explicit(&b->round, memory_order_relaxed);
    if (failed)
        atomic_fetch_or_explicit(&b->failed, 1, memory_order_relaxed);
    /* acq_rel: the last arriver acquires every earlier arrival's writes and
     * passes them on with the round */
    if (atomic_fetch_add_explicit(&b->arrived, 1, memory_order_acq_rel) == nth - 1) {
        b->result = atomic_load_explicit(&b->failed, memory_order_relaxed);
        /* nobody touches these again before seeing the new round */
        atomic_store_explicit(&b->failed, 0, memory_order_relaxed);
        atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
        atomic_store(&b->round, round + 1);
        if (atomic_load(&b->sleepers) > 0) {
            pthread_mutex_lock(&b->mu);
            pthread_cond_broadcast(&b->wake);
            pthread_mutex_unlock(&b->mu);
        }
        return b->result != 0;
    }
    if (!spin_for_round(b, round, &b->budget[ith].ns)) {
        pthread_mutex_lock(&b->mu);
        atomic_fetch_add(&b->sleepers, 1);
        while (atomic_load(&b->round) == round)
            pthread_cond_wait(&b->wake, &b->mu);
        atomic_fetch_sub(&b->sleepers, 1);
        pthread_mutex_unlock(&b->mu);
    }
    /* `result` is rewritten only by the end of the next round, which
     * needs this thread's arrival */
    return b->result != 0;
}
