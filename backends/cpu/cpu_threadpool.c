/* A pthreads pool: workers are created on first need, reused for every op,
 * and joined by cpu_pool_free (called from the backend's shutdown). */
#include <pthread.h>
#include <stdlib.h>

#include "cpu_internal.h"

typedef struct worker {
    cpu_pool *pool;
    int index; /* ith = index + 1; the caller is thread 0 */
    uint64_t start_generation; /* jobs after this one are for the worker */
    pthread_t thread;
} worker;

struct cpu_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    worker workers[CPU_MAX_THREADS - 1];
    int n_workers;
    uint64_t generation; /* bumped for each job */
    cpu_task_fn fn;
    void *arg;
    int nth;
    int pending;
    bool stop;
};

static void *worker_main(void *p) {
    worker *w = p;
    cpu_pool *pool = w->pool;
    pthread_mutex_lock(&pool->mu);
    uint64_t seen = w->start_generation;
    for (;;) {
        while (!pool->stop && pool->generation == seen)
            pthread_cond_wait(&pool->work, &pool->mu);
        if (pool->stop)
            break;
        seen = pool->generation;
        if (w->index + 1 >= pool->nth)
            continue; /* not part of this job */
        cpu_task_fn fn = pool->fn;
        void *arg = pool->arg;
        int nth = pool->nth;
        pthread_mutex_unlock(&pool->mu);
        fn(arg, w->index + 1, nth);
        pthread_mutex_lock(&pool->mu);
        if (--pool->pending == 0)
            pthread_cond_signal(&pool->done);
    }
    pthread_mutex_unlock(&pool->mu);
    return NULL;
}

cpu_pool *cpu_pool_new(void) {
    cpu_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return NULL;
    pthread_mutex_init(&pool->mu, NULL);
    pthread_cond_init(&pool->work, NULL);
    pthread_cond_init(&pool->done, NULL);
    return pool;
}

/* Starts workers until there are `want`; returns how many exist. */
static int grow(cpu_pool *pool, int want) {
    while (pool->n_workers < want) {
        worker *w = &pool->workers[pool->n_workers];
        w->pool = pool;
        w->index = pool->n_workers;
        /* recorded under the lock, so a job posted later is never missed */
        w->start_generation = pool->generation;
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
        pthread_mutex_lock(&pool->mu);
        int have = grow(pool, nth - 1);
        pthread_mutex_unlock(&pool->mu);
        if (have + 1 < nth)
            nth = have + 1; /* could not start them all: fewer threads */
    }
    if (!pool || nth <= 1) {
        fn(arg, 0, 1);
        return;
    }
    pthread_mutex_lock(&pool->mu);
    pool->fn = fn;
    pool->arg = arg;
    pool->nth = nth;
    pool->pending = nth - 1;
    pool->generation++;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mu);

    fn(arg, 0, nth);

    pthread_mutex_lock(&pool->mu);
    while (pool->pending > 0)
        pthread_cond_wait(&pool->done, &pool->mu);
    pthread_mutex_unlock(&pool->mu);
}

void cpu_pool_free(cpu_pool *pool) {
    if (!pool)
        return;
    pthread_mutex_lock(&pool->mu);
    pool->stop = true;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->mu);
    for (int i = 0; i < pool->n_workers; i++)
        pthread_join(pool->workers[i].thread, NULL);
    pthread_cond_destroy(&pool->work);
    pthread_cond_destroy(&pool->done);
    pthread_mutex_destroy(&pool->mu);
    free(pool);
}
