/* tport serve: the pool of sessions ("slots", each with its own KV cache),
 * the batcher their generation steps go through together, and the bounded
 * queue of requests waiting for one. */
#ifndef TPORT_SERVE_SLOTS_H
#define TPORT_SERVE_SLOTS_H

#include <pthread.h>
#include <stdbool.h>

#include "batcher.h"
#include "tport/tport.h"

typedef struct slot_pool {
    pthread_mutex_t lock;
    pthread_cond_t freed;
    tport_session **sessions;
    batcher batcher;          /* the slots' decoding steps, batched     */
    bool *busy;
    int n, n_busy, n_waiting, max_waiting;
    bool closing;             /* shutting down: waiters give up         */
} slot_pool;

typedef enum slot_wait {
    SLOT_OK,
    SLOT_QUEUE_FULL,          /* answer 503                             */
    SLOT_CLOSING,             /* the server is shutting down: 503       */
    SLOT_GAVE_UP,             /* the waiting client went away           */
} slot_wait;

/* Creates n sessions with the given parameters; false with
 * tport_last_error() set on failure. */
bool slot_pool_init(slot_pool *p, tport_model *m, const tport_session_params *sp, int n, int max_waiting);
void slot_pool_destroy(slot_pool *p);

/* Takes a free slot, waiting in the queue if there is room; of the free
 * slots, the one whose cache holds the longest prefix of prompt (the
 * prompt cache: each slot keeps its tokens after a request).  While waiting,
 * gone(arg) is asked a few times a second whether the client left. */
slot_wait slot_acquire(slot_pool *p, const tport_token *prompt, int32_t n_prompt, bool (*gone)(void *), void *arg,
                       int *slot);
void slot_release(slot_pool *p, int slot);
/* Wakes every waiter and refuses new ones. */
void slot_pool_close(slot_pool *p);
void slot_pool_counts(slot_pool *p, int *idle, int *busy, int *waiting);

#endif
