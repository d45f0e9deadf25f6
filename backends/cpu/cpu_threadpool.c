/* A pthreads pool: workers are created on first need, reused for every graph,
 * and joined by cpu_pool_free (called from the backend's shutdown).
 *
 * Waiting is hybrid.  A graph is one job (cpu_graph.c; the waits between
 * its ops are cpu_barrier.c's), but generation posts one per token, a few
 * milliseconds apart, and a condition-variable wake-up costs microseconds,
 * so a worker first spins on the atomic job word for a bounded time
 * (cpu_spin.h) and only then sleeps on the condition variable; the caller
 * likewise spins for completion before sleeping.  On a crowded machine the
 * bound drops to microseconds, so a thread spinning in vain gives the core
 * back.
 *
 * No lost wake-ups: a sleeper announces itself (sleepers / main_sleeping,
 * seq_cst) under the mutex and then re-checks the condition; the poster
 * changes the condition (seq_cst) and then checks the announcement, taking
 * the mutex to broadcast if anyone sleeps.  Sequential consistency makes
 * at least one side see the other (cpu_wake_all, cpu_spin.h, wakes them). */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 199309L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "cpu_internal.h"
#include "cpu_spin.h"

/* The job word packs a job counter above the job's thread count, so a
 * worker learns both with one load and never reads a later job's count. */
#define NTH_BITS 10
#define NTH_MASK ((UINT64_C(1) << NTH_BITS) - 1)

typedef struct worker {
    cpu_pool *pool;
    int index; /* ith = index + 1; the caller is thread 0 */
    uint64_t start_job; /* jobs after this one are for the worker */
    pthread_t thread;
} worker;

struct cpu_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    worker workers[CPU_MAX_THREADS - 1];
    int n_workers; /* touched only by the posting thread */
    /* the current job; fn and arg are written before `job` is published
     * and are not rewritten until every participant has finished */
    cpu_task_fn fn;
    void *arg;
    _Atomic uint64_t job;   /* (counter << NTH_BITS) | nth */
    atomic_int pending;     /* participants still running */
    atomic_int sleepers;    /* workers asleep (or about to be) on `work` */
    atomic_bool main_sleeping; /* the caller is asleep on `done` */
    atomic_bool stop;
    cpu_spin done_spin; /* the caller's, cpu_spin.h */
};

static bool job_posted(const void *arg, uint64_t seen) {
    cpu_pool *pool = (cpu_pool *)arg;
    return atomic_load_explicit(&pool->job, memory_order_acquire) != seen ||
           atomic_load_explicit(&pool->stop, memory_order_relaxed);
}

static bool job_done(const void *arg, uint64_t unused) {
    cpu_pool *pool = (cpu_pool *)arg;
    (void)unused;
    return atomic_load_explicit(&pool->pending, memory_order_acquire) == 0;
}

static uint64_t wait_for_job(cpu_pool *pool, uint64_t seen, cpu_spin *spin) {
    if (!cpu_spin_until(job_posted, pool, seen, spin)) {
        pthread_mutex_lock(&pool->mu);
        atomic_fetch_add(&pool->sleepers, 1);
        while (!atomic_load(&pool->stop) && atomic_load(&pool->job) == seen)
            pthread_cond_wait(&pool->work, &pool->mu);
        atomic_fetch_sub(&pool->sleepers, 1);
        pthread_mutex_unlock(&pool->mu);
        cpu_spin_slept(spin);
    }
    return atomic_load_explicit(&pool->job, memory_order_acquire);
}

static void *worker_main(void *p) {
    worker *w = p;
    cpu_pool *pool = w->pool;
    uint64_t seen = w->start_job;
    cpu_spin spin = CPU_SPIN_INIT;
    for (;;) {
        uint64_t job = wait_for_job(pool, seen, &spin);
        if (atomic_load(&pool->stop))
            break;
        if (job == seen)
            continue;
        seen = job;
        int nth = (int)(job & NTH_MASK);
        if (w->index + 1 >= nth)
            continue; /* not part of this job */
        pool->fn(pool->arg, w->index + 1, nth);
        if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->main_sleeping))
            cpu_wake_all(&pool->mu, &pool->done);
    }
    return NULL;
}

cpu_pool *cpu_pool_new(void) {
    cpu_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->work, NULL);
    pthread_cond_init(&pool->done, NULL);
    atomic_init(&pool->job, 0);
    atomic_init(&pool->pending, 0);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->main_sleeping, false);
    atomic_init(&pool->stop, false);
    pool->done_spin = (cpu_spin)CPU_SPIN_INIT;
    return pool;
}

/* Starts workers until there are `want`; returns how many exist.  Called
 * between jobs, so the job word read here is the latest one. */
static int grow(cpu_pool *pool, int want) {
    while (pool->n_workers < want) {
        worker *w = &pool->workers[pool->n_workers];
        w->pool = pool;
        w->index = pool->n_workers;
        w->start_job = atomic_load(&pool->job);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            break;
        pool->n_workers++;
    }
    return pool->n_workers;
}

void cpu_pool_run(cpu_pool *pool, cpu_task_fn fn, void *arg, int nth) {
    if (nth > CPU_MAX_THREADS)
        nth = CPU_MAX_THREADS;
    if (pool && nth > 1) {
        int have = grow(pool, nth - 1);
        if (have + 1 < nth)
            nth = have + 1; /* could not start them all: fewer threads */
    }
    if (!pool || nth <= 1) {
        fn(arg, 0, 1);
        return;
    }
    pool->fn = fn;
    pool->arg = arg;
    atomic_store_explicit(&pool->pending, nth - 1, memory_order_relaxed);
    uint64_t counter = (atomic_load_explicit(&pool->job, memory_order_relaxed) >> NTH_BITS) + 1;
    /* publishes fn, arg and pending along with the job */
    atomic_store(&pool->job, (counter << NTH_BITS) | (uint64_t)nth);
    if (atomic_load(&pool->sleepers) > 0)
        cpu_wake_all(&pool->mu, &pool->work);

    fn(arg, 0, nth);

    if (!cpu_spin_until(job_done, pool, 0, &pool->done_spin)) {
        pthread_mutex_lock(&pool->mu);
        atomic_store(&pool->main_sleeping, true);
        while (atomic_load(&pool->pending) > 0)
            pthread_cond_wait(&pool->done, &pool->mu);
        atomic_store(&pool->main_sleeping, false);
        pthread_mutex_unlock(&pool->mu);
        cpu_spin_slept(&pool->done_spin);
    }
}

void cpu_pool_free(cpu_pool *pool) {
    if (!pool)
        return;
    atomic_store(&pool->stop, true);
    pthread_mutex_lock(&pool->mu);
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_workers; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->work);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}
