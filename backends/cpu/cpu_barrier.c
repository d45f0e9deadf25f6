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
 * side see the other; cpu_wake_all (cpu_spin.h) says why the broadcast
 * comes after the mutex is released. */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 199309L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "cpu_internal.h"
#include "cpu_spin.h"

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
        _Alignas(64) cpu_spin s;
    } spin[CPU_MAX_THREADS];
};

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
        b->spin[i].s = (cpu_spin)CPU_SPIN_INIT;
    return b;
}

void cpu_barrier_free(cpu_barrier *b) {
    if (!b)
        return;
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->mu);
    free(b);
}

static bool round_moved(const void *arg, uint64_t round) {
    const cpu_barrier *b = arg;
    return atomic_load_explicit(&b->round, memory_order_acquire) != (unsigned)round;
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
        if (atomic_load(&b->sleepers) > 0)
            cpu_wake_all(&b->mu, &b->wake);
        return b->result != 0;
    }
    cpu_spin *spin = &b->spin[ith].s;
    if (!cpu_spin_until(round_moved, b, round, spin)) {
        pthread_mutex_lock(&b->mu);
        atomic_fetch_add(&b->sleepers, 1);
        while (atomic_load(&b->round) == round)
            pthread_cond_wait(&b->wake, &b->mu);
        atomic_fetch_sub(&b->sleepers, 1);
        pthread_mutex_unlock(&b->mu);
        cpu_spin_slept(spin);
    }
    /* `result` is rewritten only by the end of the next round, which
     * needs this thread's arrival */
    return b->result != 0;
}
