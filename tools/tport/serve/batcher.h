/* tport serve: continuous batching.  The slots that are generating hand
 * their next token to the batcher and wait; one of them (the leader)
 * evaluates every token handed in so far in one tport_batch_eval, a step
 * that reads the weights once for all of them, and wakes the others with
 * their logits in their sessions.  Prompts stay on their own slots'
 * threads (tport_session_eval). */
#ifndef TPORT_SERVE_BATCHER_H
#define TPORT_SERVE_BATCHER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tport/tport.h"

typedef struct batcher_slot batcher_slot;

typedef struct batcher {
    pthread_mutex_t lock;
    pthread_cond_t cv;
    tport_batch *batch;
    batcher_slot *slots;
    tport_batch_item *items; /* the leader's, for one step               */
    int *taken;              /* and the slots it took                     */
    int n;
    int n_active;          /* slots between their prompt and their end  */
    int n_pending;         /* of them, waiting for the next step        */
    bool running;          /* a leader is evaluating a step             */
    double wait_ms;        /* how long the first of a step waits for the rest */
    atomic_uint_fast64_t steps, rows; /* steps run and tokens in them (/metrics) */
} batcher;

/* For n slots of model m; false with tport_last_error() set on failure. */
bool batcher_init(batcher *b, tport_model *m, int n);
void batcher_destroy(batcher *b);
/* Slot `slot` generates from now on (its prompt is evaluated) / no longer. */
void batcher_join(batcher *b, int slot);
void batcher_leave(batcher *b, int slot);
/* Evaluates token in slot's session s in the next step, with the tokens
 * of the other generating slots; returns when it has.  The status is the
 * step's for this slot; a failure's message goes to err (cap bytes). */
tport_status batcher_decode(batcher *b, int slot, tport_session *s, tport_token token, char *err, size_t cap);

#endif
