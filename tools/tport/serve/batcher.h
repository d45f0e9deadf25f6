/* tport serve: continuous batching.  The slots that are generating hand
 * their next token (or their prompt's next chunk) to the batcher and wait;
 * its thread evaluates everything handed in so far in one
 * tport_batch_eval, a step that reads the weights once for all of them,
 * and wakes them with their logits in their sessions.  A new
 * request's prompt thus joins the running batch chunk by chunk instead of
 * holding the others up for its whole length. */
#ifndef TPORT_SERVE_BATCHER_H
#define TPORT_SERVE_BATCHER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tport/tport.h"

typedef struct batcher_slot batcher_slot;
/* What a slot's thread does after its step (sample, hand the next token
 * in), which the step thread may run for it (batcher_wait). */
typedef void (*batcher_next_fn)(void *arg);

typedef struct batcher {
    pthread_mutex_t lock;
    pthread_cond_t cv;       /* the step thread sleeps on it (idle)        */
    pthread_t thread;        /* the step thread                           */
    bool started, stop, idle;
    pthread_mutex_t done_lock; /* the slots' threads wait (wait_done)    */
    tport_batch *batch;
    batcher_slot *slots;
    tport_batch_item *items; /* the step thread's, for one step          */
    int *taken;              /* and the slots it took                     */
    int *next_of;            /* and those whose next it runs              */
    int *released;           /* and those whose threads it lets go        */
    int n;
    int n_active;          /* slots between their prompt and their end  */
    int n_pending;         /* of them, waiting for the next step        */
    int n_late;            /* of them, left out of the last step (late) */
    bool running;          /* the step thread is evaluating a step      */
    double wait_ms;        /* the least the first of a step waits for the rest */
    double step_ms;        /* how long the last step of several slots took */
    double ended;          /* when the last step ended (ms)             */
    double stream_ms;      /* under load, a slot's thread wakes to send at most this often */
    int hold_from;         /* slots sampled for in a step that make it load */
    /* for /metrics: steps run, tokens in them, steps of several slots,
     * and the microseconds they took; requests admitted (their first step
     * over) and the steps each saw from joining to the end of that step */
    atomic_uint_fast64_t steps, rows, shared, busy_us, admitted, admit_steps;
} batcher;

/* For n slots of model m; false with tport_last_error() set on failure. */
bool batcher_init(batcher *b, tport_model *m, int n);
void batcher_destroy(batcher *b);
/* Slot `slot` takes part in the steps from now on / no longer: a request
 * joins when it has its slot, so that the step being gathered waits for
 * its prompt (then a fresh slot: see batcher.c on admission). */
void batcher_join(batcher *b, int slot);
void batcher_leave(batcher *b, int slot);
/* Evaluates n tokens ids (1..the session's n_batch; they must stay put
 * until it returns) in slot's session s in the next step, with those of
 * the other slots; returns when it has.  The status is the step's for this
 * slot; a failure's message goes to err (cap bytes). */
tport_status batcher_eval(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n, char *err,
                          size_t cap);
/* batcher_eval in two halves, so that a slot's thread can send what it
 * has while its next token is evaluated: batcher_submit hands the tokens
 * in, batcher_wait returns when they have been evaluated, with their
 * status.  Until then the session and ids are the batcher's; every submit
 * needs its wait, before the slot leaves too. */
void batcher_submit(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n);
/* next (may be NULL): when the step succeeds for the slot, the step
 * thread may call next(arg) before this returns, as the slot's thread
 * would after it; next may use batcher_submit and batcher_leave for the
 * slot, nothing else of the batcher. */
tport_status batcher_wait(batcher *b, int slot, char *err, size_t cap, batcher_next_fn next, void *arg);
/* With BATCHER_HOLD_FROM or more slots sampled for by the step thread in
 * a step, a slot's thread asleep in batcher_wait is woken at most every
 * ms to send its text (the step thread runs its next meanwhile, again
 * after each step); 0: after every step (see batcher.c). */
#define BATCHER_STREAM_MS 10
#define BATCHER_HOLD_FROM 4
void batcher_set_stream_ms(batcher *b, double ms);

#endif
