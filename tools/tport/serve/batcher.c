/* Continuous batching for tport serve (batcher.h).  No thread of its own:
 * each generating slot's thread hands its token in and waits; when every
 * generating slot has handed one in, or the first has waited wait_ms (a
 * slot may be busy sending, or sampling a large vocabulary), one of the
 * waiting threads leads the step for all of them.  A slot left out costs
 * a step of its own (the weights read again) and, worse, hands its token
 * in while the others' step runs: the wait for the others must begin when
 * that step ends, or it is over before they are back and the slots split
 * into alternating groups for good, each step reading the weights for a
 * few tokens.  How long the first waits grows with the step.  A
 * slot that did miss a step (a client not reading, a long grammar mask)
 * is waited for no more until it hands its next token in: it holds the
 * others up once, not at every step.  A step that fails as a
 * whole is run again one slot at a time, so each slot gets its own
 * status (one slot's bad token does not fail the others): the slots
 * that moved on before the failure have logits, the others go alone.
 *
 * Admission (issue 42, time to first token): a request joins when it gets
 * its slot, before its prompt is handed in, so the step being gathered
 * waits for that prompt as for any slot's token and takes it in the next
 * step.  Requests that come together (clients started at once) would
 * otherwise split: the first one's prompt runs alone at once, the others
 * arrive during that step and wait for it, then take a second step whose
 * prompt rows cost the most, their first tokens two steps late; so a
 * step of fresh prompts only, while slots are still free, waits a few
 * ms for more of them, as long as they keep coming (ADMIT_QUIET, up to
 * ADMIT_SPAN; llama-server's loop likewise puts every prompt it has in
 * one batch).  A slot's first token is not held back by
 * the step its hand-in completes: that step is led by another slot's
 * thread (batcher_submit's lead). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batcher.h"

enum { IDLE, PENDING, RUNNING, DONE };

struct batcher_slot {
    bool active;
    bool late; /* active, and left out of the last step: not waited for */
    bool fresh; /* active, and in no step yet: its prompt's first chunk to come */
    bool first; /* in its first step */
    uint64_t joined_at; /* b->steps when it joined */
    int state;
    tport_session *s;
    const tport_token *ids;
    int32_t n;
    tport_status st;
    double since;    /* when the token was handed in (ms) */
    char err[256];
};

/* What a step waits at least for the slots that have not handed their
 * token in yet: long enough for sampling and sending a token, short
 * against a step.  Beyond that it waits up to STEP_SHARE of the last step
 * of several slots, never more than MAX_WAIT_MS: where a step costs about
 * the same for few rows as for many (the weights read once), a slot that
 * comes that late has saved more than the wait, the step it would take
 * alone; where a step's cost grows with its rows (a crowded machine, the
 * kernels' arithmetic), the others' wait is time lost.  A quarter kept
 * nearly every step whole, where 5 ms alone did not (RESULTS run 35),
 * without a wait of half a step's idle time on a loaded machine. */
#define WAIT_MS 5.0
#define STEP_SHARE 0.25
#define MAX_WAIT_MS 250.0
/* A step of fresh prompts only waits ADMIT_QUIET wait_ms after the newest
 * of them for another, up to ADMIT_SPAN wait_ms after the first: clients
 * started together reach the server over several ms, in bursts a few ms
 * apart (connections accepted in turn). */
#define ADMIT_QUIET 2.0
#define ADMIT_SPAN 8.0

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

bool batcher_init(batcher *b, tport_model *m, int n) {
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&b->cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&b->steps, 0);
    atomic_init(&b->rows, 0);
    atomic_init(&b->shared, 0);
    atomic_init(&b->busy_us, 0);
    atomic_init(&b->admitted, 0);
    atomic_init(&b->admit_steps, 0);
    b->n = n;
    b->wait_ms = WAIT_MS;
    b->slots = calloc((size_t)n, sizeof *b->slots);
    b->items = calloc((size_t)n, sizeof *b->items);
    b->taken = calloc((size_t)n, sizeof *b->taken);
    b->batch = tport_batch_new(m);
    return b->slots && b->items && b->taken && b->batch;
}

void batcher_destroy(batcher *b) {
    tport_batch_free(b->batch);
    free(b->slots);
    free(b->items);
    free(b->taken);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->lock);
    memset(b, 0, sizeof *b);
}

void batcher_join(batcher *b, int slot) {
    pthread_mutex_lock(&b->lock);
    if (!b->slots[slot].active) {
        b->slots[slot].active = true;
        b->slots[slot].late = false;
        b->slots[slot].fresh = true;
        /* a step running now cannot take it: counted from the next */
        b->slots[slot].joined_at = atomic_load(&b->steps) + (b->running ? 1 : 0);
        b->n_active++;
    }
    pthread_mutex_unlock(&b->lock);
}

void batcher_leave(batcher *b, int slot) {
    pthread_mutex_lock(&b->lock);
    if (b->slots[slot].active) {
        b->slots[slot].active = false;
        b->n_active--;
        if (b->slots[slot].late) {
            b->slots[slot].late = false;
            b->n_late--;
        }
        pthread_cond_broadcast(&b->cv); /* the others may be complete now */
    }
    pthread_mutex_unlock(&b->lock);
}

/* When the oldest token handed in arrived (ms). */
static double oldest(const batcher *b) {
    double t = 0;
    for (int i = 0; i < b->n; i++)
        if (b->slots[i].state == PENDING && (t == 0 || b->slots[i].since < t))
            t = b->slots[i].since;
    return t;
}

/* When the newest token handed in arrived (ms). */
static double newest(const batcher *b) {
    double t = 0;
    for (int i = 0; i < b->n; i++)
        if (b->slots[i].state == PENDING && b->slots[i].since > t)
            t = b->slots[i].since;
    return t;
}

/* How long a step waits for the slots that are not late (ms). */
static double wait_for(const batcher *b) {
    double w = STEP_SHARE * b->step_ms;
    return w < b->wait_ms ? b->wait_ms : w > MAX_WAIT_MS ? MAX_WAIT_MS : w;
}

/* Runs one step over every slot PENDING (with b->lock held on entry and
 * exit; released while the model works); the active slots left out are
 * late from now on. */
static void lead(batcher *b) {
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        batcher_slot *sl = &b->slots[i];
        if (sl->state == PENDING) {
            sl->state = RUNNING;
            sl->first = sl->fresh;
            sl->fresh = false;
            b->taken[n] = i;
            b->items[n++] = (tport_batch_item){sl->s, sl->ids, sl->n};
        } else if (sl->active && !sl->late) {
            sl->late = true;
            b->n_late++;
        }
    }
    b->n_pending = 0;
    b->running = true;
    pthread_mutex_unlock(&b->lock);
    /* the taken slots' records are the leader's until DONE; the others'
     * state may change meanwhile (a token handed in), so only taken is read */
    double t0 = now_ms();
    tport_status st = tport_batch_eval(b->batch, b->items, n);
    double ms = now_ms() - t0;
    atomic_fetch_add(&b->busy_us, (uint64_t)(ms * 1e3));
    for (int k = 0; k < n; k++) {
        batcher_slot *sl = &b->slots[b->taken[k]];
        /* after a failed step, a slot that has not moved on goes alone */
        sl->st = st && !tport_session_logits(sl->s) ? tport_session_eval(sl->s, sl->ids, sl->n) : TPORT_STATUS_OK;
        snprintf(sl->err, sizeof sl->err, "%s", sl->st ? tport_last_error() : "");
    }
    uint64_t rows = 0;
    for (int k = 0; k < n; k++)
        rows += (uint64_t)b->items[k].n;
    atomic_fetch_add(&b->steps, st ? (uint64_t)n : 1);
    atomic_fetch_add(&b->rows, rows);
    if (!st && n > 1)
        atomic_fetch_add(&b->shared, 1);
    pthread_mutex_lock(&b->lock);
    if (n > 1 && !st)
        b->step_ms = ms;
    b->ended = now_ms();
    uint64_t now = atomic_load(&b->steps);
    for (int k = 0; k < n; k++) {
        batcher_slot *sl = &b->slots[b->taken[k]];
        sl->state = DONE;
        if (sl->first) {
            sl->first = false;
            atomic_fetch_add(&b->admitted, 1);
            atomic_fetch_add(&b->admit_steps, now - sl->joined_at);
        }
    }
    b->running = false;
    pthread_cond_broadcast(&b->cv);
}

/* Hands slot's tokens in for the next step (b->lock held). */
static void hand_in(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n) {
    batcher_slot *sl = &b->slots[slot];
    if (sl->late) { /* back in time for the next step: waited for again */
        sl->late = false;
        b->n_late--;
    }
    *sl = (batcher_slot){.active = sl->active, .fresh = sl->fresh, .joined_at = sl->joined_at, .state = PENDING,
                         .s = s, .ids = ids, .n = n, .since = now_ms()};
    b->n_pending++;
    /* no wake-up: the thread handing in checks whether its token completes
     * the step, and leads it; a waiter's deadline (the oldest token's)
     * does not move for a later one.  Waking every waiter at each token
     * handed in cost 8 slots some 30 futile wake-ups a step, and their
     * fight for the lock, on the cores the model needs (issue 42) */
}

/* Whether every active slot is fresh (its prompt's first chunk handed in
 * or to come; none generating) while some slot is still free: more
 * requests may be on their way (b->lock held). */
static bool admitting(const batcher *b) {
    if (b->n_active >= b->n)
        return false;
    for (int i = 0; i < b->n; i++)
        if (b->slots[i].active && !b->slots[i].fresh)
            return false;
    return true;
}

/* Whether slot's pending tokens should go now, the step complete or the
 * oldest token waited long enough; *due gets when it has (b->lock held). */
static bool may_lead(const batcher *b, const batcher_slot *sl, double *due) {
    /* the wait begins with the step's first token or, for one handed in
     * during the last step, with that step's end: the others come back
     * from it only then */
    double first = oldest(b);
    if (admitting(b)) { /* new prompts only: a short wait for others arriving with them */
        double quiet = newest(b) + ADMIT_QUIET * b->wait_ms, span = first + ADMIT_SPAN * b->wait_ms;
        *due = quiet < span ? quiet : span;
        return sl->state == PENDING && !b->running && now_ms() >= *due;
    }
    *due = (first > b->ended ? first : b->ended) + wait_for(b);
    return sl->state == PENDING && !b->running &&
           (b->n_pending >= b->n_active - b->n_late || now_ms() >= *due);
}

/* Waits until slot's step has run, leading it when due (b->lock held). */
static tport_status wait_done(batcher *b, int slot, char *err, size_t cap) {
    batcher_slot *sl = &b->slots[slot];
    while (sl->state != DONE) {
        double due;
        if (may_lead(b, sl, &due)) {
            lead(b);
            continue;
        }
        /* until the step ends or someone leaves; at the latest when the
         * oldest token has waited long enough */
        double until = b->running || sl->state != PENDING ? now_ms() + 50.0 : due;
        struct timespec ts = {.tv_sec = (time_t)(until / 1e3), .tv_nsec = (long)((until / 1e3 - (double)(time_t)(until / 1e3)) * 1e9)};
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&b->cv, &b->lock, &ts);
    }
    tport_status st = sl->st;
    if (st && err && cap)
        snprintf(err, cap, "%s", sl->err);
    sl->state = IDLE;
    return st;
}

tport_status batcher_eval(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n, char *err,
                          size_t cap) {
    pthread_mutex_lock(&b->lock);
    hand_in(b, slot, s, ids, n);
    tport_status st = wait_done(b, slot, err, cap);
    pthread_mutex_unlock(&b->lock);
    return st;
}

void batcher_submit(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n, bool lead_now) {
    pthread_mutex_lock(&b->lock);
    hand_in(b, slot, s, ids, n);
    /* the last one in runs the step at once (no thread to wake), when
     * there are others: they send meanwhile.  Alone, the step waits for
     * batcher_wait, as it did before, so the token just sampled is not
     * sent a step late (no one sends meanwhile).  Without lead_now the
     * step goes to a waiting slot's thread, or the first to wait */
    double due;
    if (b->n_active > 1 && may_lead(b, &b->slots[slot], &due)) {
        if (lead_now)
            lead(b);
        else
            pthread_cond_broadcast(&b->cv);
    }
    pthread_mutex_unlock(&b->lock);
}

tport_status batcher_wait(batcher *b, int slot, char *err, size_t cap) {
    pthread_mutex_lock(&b->lock);
    tport_status st = wait_done(b, slot, err, cap);
    pthread_mutex_unlock(&b->lock);
    return st;
}
