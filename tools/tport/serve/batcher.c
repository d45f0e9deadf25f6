/* Continuous batching for tport serve (batcher.h).  A thread of its own
 * runs the steps: each generating slot's thread hands its token in and
 * waits; when every generating slot has handed one in, or the first has
 * waited wait_ms (a slot may be busy sending, or sampling a large
 * vocabulary), the step thread evaluates them all in one step.  Then, for
 * each slot whose thread waits for that step, it runs what the thread
 * would do next (batcher_wait's next: sample, hand the next token in)
 * before waking it, so that the next step can start at once and the
 * slots' threads send their text while it runs.  Until then the slots'
 * threads took turns leading the steps, and all of them had to wake, be
 * scheduled, sample and hand in between two steps, one after the other
 * on 2 cores: with 8 slots a good part of a small model's step (RESULTS
 * run 51).  A slot left out costs
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
 * one batch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "batcher.h"

enum { IDLE, PENDING, RUNNING };

struct batcher_slot {
    bool active;
    bool late; /* active, and left out of the last step: not waited for */
    bool fresh; /* active, and in no step yet: its prompt's first chunk to come */
    bool first; /* in its first step */
    uint64_t joined_at; /* b->steps when it joined */
    int state;
    uint64_t handed;    /* tokens handed in so far: the last one's ticket */
    uint64_t taken;     /* the ticket of the step running, while RUNNING */
    /* the last ticket whose step is over; written under b->lock, read
     * without it by the slot's thread waking up (wait_done) */
    _Atomic uint64_t finished;
    uint64_t wait_for;  /* the ticket its thread waits for in wait_done */
    /* its thread sleeps in wait_done on woken (both under b->done_lock) */
    pthread_cond_t woken;
    bool sleeping;
    double woke_ms; /* when the step thread last let its thread go */
    bool ran_next;   /* the step thread ran its next after this step */
    batcher_next_fn next; /* with next_arg: see run_step; NULL: none */
    void *next_arg;
    tport_session *s;
    const tport_token *ids;
    int32_t n;
    /* a step's status for ticket t in [t & 1]: the step thread may write
     * the next ticket's (a step after next ran, see run_step) while the
     * slot's thread still reads this one's */
    tport_status st[2];
    double since;    /* when the token was handed in (ms) */
    char err[2][256];
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
/* The step thread runs the slots' next (sampling) for at most this share
 * of the step it just ran, or NEXT_MIN_MS; the slots left wake and do
 * theirs themselves, in parallel: a large vocabulary's sampling must not
 * hold every slot's next step up (greedy sampling of 8 small-vocabulary
 * slots is far below it: RESULTS run 52). */
#define NEXT_SHARE 0.1
#define NEXT_MIN_MS 0.1
/* Holding (hold_from, stream_ms; batcher.h's defaults): with several
 * slots sampled for in a step, a slot's thread that the step thread
 * sampled for is woken to send its text at most every stream_ms; in
 * between the step thread goes on sampling for it and its thread
 * sleeps, its tokens sent together when it wakes.  Waking threads costs
 * the cores the model needs, between two steps and during them (8 slots
 * woken every step: RESULTS run 53); a reader does not see text come 2
 * or 3 tokens at a time under such load, and fewer slots stream token
 * by token. */

static void *step_thread(void *arg);

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

bool batcher_init(batcher *b, tport_model *m, int n) {
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->lock, NULL);
    pthread_mutex_init(&b->done_lock, NULL);
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
    b->stream_ms = BATCHER_STREAM_MS;
    b->hold_from = BATCHER_HOLD_FROM;
    b->slots = calloc((size_t)n, sizeof *b->slots);
    b->items = calloc((size_t)n, sizeof *b->items);
    b->taken = calloc((size_t)n, sizeof *b->taken);
    b->next_of = calloc((size_t)n, sizeof *b->next_of);
    b->released = calloc((size_t)n, sizeof *b->released);
    b->batch = tport_batch_new(m);
    if (b->slots)
        for (int i = 0; i < n; i++) {
            atomic_init(&b->slots[i].finished, 0);
            pthread_cond_init(&b->slots[i].woken, NULL);
        }
    if (!b->slots || !b->items || !b->taken || !b->next_of || !b->released || !b->batch)
        return false;
    if (pthread_create(&b->thread, NULL, step_thread, b) != 0) {
        tport_error(TPORT_STATUS_ERROR, "batcher: cannot start its thread");
        return false;
    }
    b->started = true;
    return true;
}

void batcher_destroy(batcher *b) {
    if (b->started) { /* the steps handed in run first: nobody waits in vain */
        pthread_mutex_lock(&b->lock);
        b->stop = true;
        pthread_cond_signal(&b->cv);
        pthread_mutex_unlock(&b->lock);
        pthread_join(b->thread, NULL);
    }
    pthread_cond_destroy(&b->cv);
    for (int i = 0; b->slots && i < b->n; i++)
        pthread_cond_destroy(&b->slots[i].woken);
    pthread_mutex_destroy(&b->done_lock);
    tport_batch_free(b->batch);
    free(b->slots);
    free(b->items);
    free(b->taken);
    free(b->next_of);
    free(b->released);
    pthread_mutex_destroy(&b->lock);
    memset(b, 0, sizeof *b);
}

/* Wakes the threads of the slots b->released[0..n) that sleep in
 * wait_done (their finished stored before): a wake-up each, outside the
 * lock they take on waking. */
static void wake_released(batcher *b, int n) {
    int n_sleeping = 0;
    pthread_mutex_lock(&b->done_lock);
    for (int k = 0; k < n; k++)
        if (b->slots[b->released[k]].sleeping)
            b->released[n_sleeping++] = b->released[k];
    pthread_mutex_unlock(&b->done_lock);
    for (int k = 0; k < n_sleeping; k++)
        pthread_cond_signal(&b->slots[b->released[k]].woken);
}

void batcher_set_stream_ms(batcher *b, double ms) {
    pthread_mutex_lock(&b->lock);
    b->stream_ms = ms;
    pthread_mutex_unlock(&b->lock);
}

/* Wakes the step thread if it sleeps: a step may be due (b->lock held). */
static void wake_steps(batcher *b) {
    if (b->idle)
        pthread_cond_signal(&b->cv);
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
        wake_steps(b); /* the others may be complete now */
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
 * late from now on.  Then runs the next of each slot of the step whose
 * thread waits for it (see the top). */
static void run_step(batcher *b) {
    int n = 0;
    for (int i = 0; i < b->n; i++) {
        batcher_slot *sl = &b->slots[i];
        if (sl->state == PENDING) {
            sl->state = RUNNING;
            sl->taken = sl->handed;
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
    /* the taken slots' records are the step thread's until their finished
     * is set; the others' state may change meanwhile (a token handed in),
     * so only taken is read */
    double t0 = now_ms();
    tport_status st = tport_batch_eval(b->batch, b->items, n);
    double ms = now_ms() - t0;
    atomic_fetch_add(&b->busy_us, (uint64_t)(ms * 1e3));
    for (int k = 0; k < n; k++) {
        batcher_slot *sl = &b->slots[b->taken[k]];
        /* after a failed step, a slot that has not moved on goes alone */
        int t = (int)(sl->taken & 1);
        sl->st[t] = st && !tport_session_logits(sl->s) ? tport_session_eval(sl->s, sl->ids, sl->n) : TPORT_STATUS_OK;
        snprintf(sl->err[t], sizeof sl->err[t], "%s", sl->st[t] ? tport_last_error() : "");
    }
    /* a thread in wait_done for this step's ticket cannot leave it before
     * finished is set below: its job is the step thread's meanwhile */
    int n_next = 0;
    pthread_mutex_lock(&b->lock);
    for (int k = 0; k < n; k++) {
        batcher_slot *sl = &b->slots[b->taken[k]];
        if (sl->st[sl->taken & 1] == TPORT_STATUS_OK && sl->next && sl->wait_for == sl->taken)
            b->next_of[n_next++] = b->taken[k];
    }
    pthread_mutex_unlock(&b->lock);
    double t_next = now_ms(), budget = NEXT_SHARE * ms > NEXT_MIN_MS ? NEXT_SHARE * ms : NEXT_MIN_MS;
    int n_ran = 0;
    for (; n_ran < n_next && now_ms() - t_next <= budget; n_ran++) {
        batcher_slot *sl = &b->slots[b->next_of[n_ran]];
        sl->next(sl->next_arg);
        sl->ran_next = true;
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
    int n_released = 0;
    for (int k = 0; k < n; k++) {
        batcher_slot *sl = &b->slots[b->taken[k]];
        if (sl->state == RUNNING) /* else its next handed a token in */
            sl->state = IDLE;
        /* held: the next handed the slot's next token in, and its thread
         * was woken less than stream_ms ago; it sleeps on, the step
         * thread's next samples after that token's step too */
        bool hold = sl->ran_next && n_ran >= b->hold_from && !b->stop && sl->state == PENDING &&
                    b->ended - sl->woke_ms < b->stream_ms;
        sl->ran_next = false;
        if (hold) {
            sl->wait_for = sl->handed;
        } else {
            /* st, err and what next did: released with finished */
            atomic_store_explicit(&sl->finished, sl->taken, memory_order_release);
            sl->woke_ms = b->ended;
            b->released[n_released++] = b->taken[k];
        }
        if (sl->first) {
            sl->first = false;
            atomic_fetch_add(&b->admitted, 1);
            atomic_fetch_add(&b->admit_steps, now - sl->joined_at);
        }
    }
    b->running = false;
    wake_released(b, n_released);
}

/* Hands slot's tokens in for the next step (b->lock held). */
static void hand_in(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n) {
    batcher_slot *sl = &b->slots[slot];
    if (sl->late) { /* back in time for the next step: waited for again */
        sl->late = false;
        b->n_late--;
    }
    sl->state = PENDING;
    sl->handed++;
    sl->s = s;
    sl->ids = ids;
    sl->n = n;
    sl->st[sl->handed & 1] = TPORT_STATUS_OK;
    sl->err[sl->handed & 1][0] = '\0';
    sl->since = now_ms();
    b->n_pending++;
    /* the step thread's deadline starts with the first token, and a step
     * may go once the last is in; other hand-ins need no wake-up (each a
     * futex call on the cores the model needs) */
    if (b->n_pending == 1 || b->n_pending >= b->n_active - b->n_late)
        wake_steps(b);
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

/* Whether the pending tokens should go now, the step complete or the
 * oldest token waited long enough; *due gets when it has (b->lock held). */
static bool step_due(const batcher *b, double *due) {
    *due = 0;
    if (b->n_pending == 0)
        return false;
    if (b->stop)
        return true;
    /* the wait begins with the step's first token or, for one handed in
     * during the last step, with that step's end: the others come back
     * from it only then */
    double first = oldest(b);
    if (admitting(b)) { /* new prompts only: a short wait for others arriving with them */
        double quiet = newest(b) + ADMIT_QUIET * b->wait_ms, span = first + ADMIT_SPAN * b->wait_ms;
        *due = quiet < span ? quiet : span;
        return now_ms() >= *due;
    }
    *due = (first > b->ended ? first : b->ended) + wait_for(b);
    return b->n_pending >= b->n_active - b->n_late || now_ms() >= *due;
}

/* The step thread: a step whenever one is due, else asleep until it is or
 * a slot's hand-in or leave may make it so; at the end (b->stop), the
 * steps of what is handed in still. */
static void *step_thread(void *arg) {
    batcher *b = arg;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        double due;
        if (step_due(b, &due)) {
            run_step(b);
            continue;
        }
        if (b->stop)
            break;
        b->idle = true;
        if (due > 0) {
            double s = due / 1e3;
            struct timespec ts = {.tv_sec = (time_t)s, .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&b->cv, &b->lock, &ts);
        } else {
            pthread_cond_wait(&b->cv, &b->lock);
        }
        b->idle = false;
    }
    pthread_mutex_unlock(&b->lock);
    return NULL;
}

/* Waits until the step of slot's last token handed in has run; the step
 * thread may run next(arg) for the slot meanwhile.  b->lock held on
 * entry, released on return.  The slots' threads sleep on a condition
 * variable of their own lock, not of b->lock, which the step thread wants
 * for the next step when they all wake at the end of one; and it wakes
 * them with one broadcast, not one wake-up each (a semaphore per slot
 * cost more between two steps: RESULTS run 52). */
static tport_status wait_done(batcher *b, int slot, batcher_next_fn next, void *arg, char *err, size_t cap) {
    batcher_slot *sl = &b->slots[slot];
    const uint64_t ticket = sl->handed;
    sl->wait_for = ticket;
    sl->next = next;
    sl->next_arg = arg;
    pthread_mutex_unlock(&b->lock);
    pthread_mutex_lock(&b->done_lock);
    uint64_t f;
    while ((f = atomic_load_explicit(&sl->finished, memory_order_acquire)) < ticket) {
        sl->sleeping = true;
        pthread_cond_wait(&sl->woken, &b->done_lock);
        sl->sleeping = false;
    }
    pthread_mutex_unlock(&b->done_lock);
    /* next stays set, for ticket: no later step takes ticket again.  A
     * later ticket finished: the step thread ran next after ticket's step
     * (held, or handed that ticket in before this thread woke), so that
     * step went well; the later ticket's status is for its own wait, and
     * its slot of st may be written again by then (held) */
    if (f > ticket)
        return TPORT_STATUS_OK;
    tport_status st = sl->st[ticket & 1];
    if (st && err && cap)
        snprintf(err, cap, "%s", sl->err[ticket & 1]);
    return st;
}

tport_status batcher_eval(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n, char *err,
                          size_t cap) {
    pthread_mutex_lock(&b->lock);
    hand_in(b, slot, s, ids, n);
    return wait_done(b, slot, NULL, NULL, err, cap);
}

void batcher_submit(batcher *b, int slot, tport_session *s, const tport_token *ids, int32_t n) {
    pthread_mutex_lock(&b->lock);
    hand_in(b, slot, s, ids, n);
    pthread_mutex_unlock(&b->lock);
}

tport_status batcher_wait(batcher *b, int slot, char *err, size_t cap, batcher_next_fn next, void *arg) {
    pthread_mutex_lock(&b->lock);
    return wait_done(b, slot, next, arg, err, cap);
}
