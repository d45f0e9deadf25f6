/* One compute thread per rank: the stage's evaluation runs there while the
 * main thread keeps MPI moving (Open MPI has no progress thread, so a
 * transfer advances only while its owner calls MPI).  Only the main thread
 * calls MPI (MPI_THREAD_FUNNELED). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tport/tport.h"
#include "dist/dist_mpi.h"

enum { W_IDLE, W_BUSY, W_DONE, W_QUIT };

struct dist_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state;
    tport_session *s;
    dist_job job;
};

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void *worker_main(void *arg) {
    dist_worker *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (w->state != W_BUSY && w->state != W_QUIT)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->state == W_QUIT)
            break;
        dist_job job = w->job;
        pthread_mutex_unlock(&w->mu);
        double t0 = now_ms();
        job.st = tport_session_eval_stage(w->s, &job.io);
        job.ms = now_ms() - t0;
        if (job.st != TPORT_STATUS_OK)
            snprintf(job.err, sizeof job.err, "%s", tport_last_error());
        pthread_mutex_lock(&w->mu);
        if (w->state == W_QUIT)
            break;
        w->job = job;
        w->state = W_DONE;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

dist_worker *dist_worker_new(tport_session *s) {
    dist_worker *w = calloc(1, sizeof *w);
    if (!w) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    w->s = s;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->cv);
        free(w);
        tport_error(TPORT_STATUS_ERROR, "cannot start the pipeline's compute thread");
        return NULL;
    }
    return w;
}

void dist_worker_submit(dist_worker *w, const dist_job *job) {
    pthread_mutex_lock(&w->mu);
    w->job = *job;
    w->state = W_BUSY;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

bool dist_worker_done(dist_worker *w, dist_job *out) {
    pthread_mutex_lock(&w->mu);
    bool done = w->state == W_DONE;
    if (done) {
        *out = w->job;
        w->state = W_IDLE;
    }
    pthread_mutex_unlock(&w->mu);
    return done;
}

void dist_worker_free(dist_worker *w) {
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->state = W_QUIT;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w);
}
