/* Slots and the wait queue: one mutex and one condition variable.  A slot
 * is taken in FIFO-ish order (whoever the condition variable wakes). */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "slots.h"

bool slot_pool_init(slot_pool *p, tport_model *m, const tport_session_params *sp, int n, int max_waiting) {
    *p = (slot_pool){.n = n, .max_waiting = max_waiting};
    pthread_mutex_init(&p->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&p->freed, &ca);
    pthread_condattr_destroy(&ca);
    p->sessions = calloc((size_t)n, sizeof *p->sessions);
    p->busy = calloc((size_t)n, sizeof *p->busy);
    if (!p->sessions || !p->busy)
        return false;
    for (int i = 0; i < n; i++)
        if (!(p->sessions[i] = tport_session_new(m, sp)))
            return false;
    return batcher_init(&p->batcher, m, n);
}

void slot_pool_destroy(slot_pool *p) {
    if (p->batcher.n) /* initialised */
        batcher_destroy(&p->batcher);
    for (int i = 0; p->sessions && i < p->n; i++)
        tport_session_free(p->sessions[i]);
    free(p->sessions);
    free(p->busy);
    pthread_cond_destroy(&p->freed);
    pthread_mutex_destroy(&p->lock);
}

static int32_t common_prefix(const tport_session *s, const tport_token *prompt, int32_t n) {
    const tport_token *have = tport_session_tokens(s);
    int32_t pos = tport_session_pos(s), k = 0;
    while (have && k < pos && k < n && have[k] == prompt[k])
        k++;
    return k;
}

static int take_free(slot_pool *p, const tport_token *prompt, int32_t n) {
    int best = -1;
    int32_t best_len = -1;
    for (int i = 0; i < p->n; i++)
        if (!p->busy[i]) {
            int32_t k = prompt ? common_prefix(p->sessions[i], prompt, n) : 0;
            if (k > best_len)
                best = i, best_len = k;
        }
    if (best >= 0) {
        p->busy[best] = true;
        p->n_busy++;
    }
    return best;
}

slot_wait slot_acquire(slot_pool *p, const tport_token *prompt, int32_t n_prompt, bool (*gone)(void *), void *arg,
                       int *slot) {
    pthread_mutex_lock(&p->lock);
    slot_wait r = SLOT_OK;
    if (p->closing) {
        r = SLOT_CLOSING;
    } else if ((*slot = take_free(p, prompt, n_prompt)) < 0) {
        if (p->n_waiting >= p->max_waiting) {
            r = SLOT_QUEUE_FULL;
        } else {
            p->n_waiting++;
            while ((*slot = take_free(p, prompt, n_prompt)) < 0) {
                if (p->closing) {
                    r = SLOT_CLOSING;
                    break;
                }
                struct timespec t;
                clock_gettime(CLOCK_MONOTONIC, &t);
                t.tv_nsec += 200 * 1000 * 1000;
                if (t.tv_nsec >= 1000000000) {
                    t.tv_sec++;
                    t.tv_nsec -= 1000000000;
                }
                if (pthread_cond_timedwait(&p->freed, &p->lock, &t) == ETIMEDOUT && gone && gone(arg)) {
                    r = SLOT_GAVE_UP;
                    break;
                }
            }
            p->n_waiting--;
        }
    }
    pthread_mutex_unlock(&p->lock);
    return r; /* the session keeps its cache: generation reuses the common prefix */
}

void slot_release(slot_pool *p, int slot) {
    pthread_mutex_lock(&p->lock);
    if (slot >= 0 && slot < p->n && p->busy[slot]) {
        p->busy[slot] = false;
        p->n_busy--;
    }
    pthread_cond_signal(&p->freed);
    pthread_mutex_unlock(&p->lock);
}

void slot_pool_close(slot_pool *p) {
    pthread_mutex_lock(&p->lock);
    p->closing = true;
    pthread_cond_broadcast(&p->freed);
    pthread_mutex_unlock(&p->lock);
}

void slot_pool_counts(slot_pool *p, int *idle, int *busy, int *waiting) {
    pthread_mutex_lock(&p->lock);
    *idle = p->n - p->n_busy;
    *busy = p->n_busy;
    *waiting = p->n_waiting;
    pthread_mutex_unlock(&p->lock);
}
