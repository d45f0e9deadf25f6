/* A pthreads pool: workers are created on first need, reused for every op,
 * and joined by cpu_pool_free (called from the backend's shutdown).
 *
 * Generation runs a few hundred small nodes per token, so handing out a job
 * must cost far less than a condition-variable round trip (tens of
 * microseconds when a thread has to be woken).  Workers therefore spin on
 * an atomic job counter for a short while after each job and only then go
 * to sleep on the condition variable; the poster takes the mutex only when
 * someone is asleep.  The caller likewise spins for its workers to finish
 * before it sleeps.  The spin is bounded in time so an idle pool costs
 * nothing, and yields the processor now and then so that on an
 * oversubscribed machine a spinning thread does not keep the thread it is
 * waiting for off the core. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "cpu_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* How long a thread polls before it sleeps. */
#ifndef SPIN_NS
#define SPIN_NS 20000LL
#endif
/* Polls between clock reads (and sched_yield calls). */
#define SPIN_CHUNK 128

typedef struct worker {
    cpu_pool *pool;
    int index;                 /* ith = index + 1; the caller is thread 0 */
    uint64_t start_generation; /* jobs after this one are for the worker */
    pthread_t thread;
} worker;

struct cpu_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    worker workers[CPU_MAX_THREADS - 1];
    int n_workers;
    /* The job: written by the caller before `generation` is bumped
     * (release), read by workers after they see the new generation
     * (acquire). */
    cpu_task_fn fn;
    void *arg;
    int nth;
    atomic_uint_fast64_t generation; /* bumped for each job            */
    atomic_int pending;              /* workers still running the job  */
    atomic_int sleepers;             /* workers waiting on `work`      */
    atomic_bool caller_sleeping;     /* the caller waits on `done`     */
    atomic_bool stop;
};

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Polls until generation != seen (returns true) or the spin time is up. */
static bool spin_for_job(cpu_pool *pool, uint64_t seen) {
    int64_t start = now_ns();
    for (;;) {
        for (int i = 0; i < SPIN_CHUNK; i++) {
            if (atomic_load_explicit(&pool->generation, memory_order_acquire) != seen ||
                atomic_load_explicit(&pool->stop, memory_order_relaxed))
                return true;
            CPU_RELAX();
        }
        if (now_ns() - start > SPIN_NS)
            return false;
    }
}

static void *worker_main(void *p) {
    worker *w = p;
    cpu_pool *pool = w->pool;
    uint64_t seen = w->start_generation;
    for (;;) {
        if (!spin_for_job(pool, seen)) {
            pthread_mutex_lock(&pool->mu);
            atomic_fetch_add(&pool->sleepers, 1); /* seq_cst: pairs with the poster's check */
            while (!atomic_load(&pool->stop) && atomic_load(&pool->generation) == seen)
                pthread_cond_wait(&pool->work, &pool->mu);
            atomic_fetch_sub(&pool->sleepers, 1);
            pthread_mutex_unlock(&pool->mu);
        }
        if (atomic_load(&pool->stop))
            break;
        seen = atomic_load_explicit(&pool->generation, memory_order_acquire);
        int nth = pool->nth;
        if (w->index + 1 < nth)
            pool->fn(pool->arg, w->index + 1, nth);
        /* the last worker out wakes the caller if it went to sleep
         * (seq_cst: pairs with the caller's store to caller_sleeping) */
        if (atomic_fetch_sub(&pool->pending, 1) == 1 && atomic_load(&pool->caller_sleeping)) {
            pthread_mutex_lock(&pool->mu);
            pthread_cond_signal(&pool->done);
            pthread_mutex_unlock(&pool->mu);
        }
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
    atomic_init(&pool->generation, 0);
    atomic_init(&pool->pending, 0);
    atomic_init(&pool->sleepers, 0);
    atomic_init(&pool->caller_sleeping, false);
    atomic_init(&pool->stop, false);
    return pool;
}

/* Starts workers until there are `want`; returns how many exist.  Called
 * only by the (single) calling thread between jobs. */
static int grow(cpu_pool *pool, int want) {
    while (pool->n_workers < want) {
        worker *w = &pool->workers[pool->n_workers];
        w->pool = pool;
        w->index = pool->n_workers;
        /* no job is running, so the worker cannot miss one posted later */
        w->start_generation = atomic_load(&pool->generation);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
            break;
        pool->n_workers++;
    }
    return pool->n_workers;
}

static void wait_workers(cpu_pool *pool) {
    int64_t start = now_ns();
    for (;;) {
        for (int i = 0; i < SPIN_CHUNK; i++) {
            if (atomic_load_explicit(&pool->pending, memory_order_acquire) == 0)
                return;
            CPU_RELAX();
        }
        if (now_ns() - start > SPIN_NS)
            break;
    }
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->caller_sleeping, true); /* seq_cst: pairs with the last worker's check */
    while (atomic_load(&pool->pending) > 0)
        pthread_cond_wait(&pool->done, &pool->mu);
    atomic_store(&pool->caller_sleeping, false);
    pthread_mutex_unlock(&pool->mu);
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
    pool->nth = nth;
    /* Every worker acknowledges the job, also those it does not need:
     * then no worker can still be reading fn/arg/nth (or miss a job)
     * when the next one is posted. */
    atomic_store_explicit(&pool->pending, pool->n_workers, memory_order_relaxed);
    atomic_fetch_add(&pool->generation, 1); /* seq_cst: publishes the job */
    if (atomic_load(&pool->sleepers) > 0) {
        pthread_mutex_lock(&pool->mu);
        pthread_cond_broadcast(&pool->work);
        pthread_mutex_unlock(&pool->mu);
    }

    fn(arg, 0, nth);
    wait_workers(pool);
}

void cpu_pool_free(cpu_pool *pool) {
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    atomic_store(&pool->stop, true);
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_workers; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->work);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}
