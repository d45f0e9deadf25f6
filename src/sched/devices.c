/* Memory spaces of device backends: compute buffers, outstanding tickets,
 * lost devices and the graph keys handed out (see devices.h).  Called with
 * the scheduler's lock held, except sched_release_devices, which the
 * registry calls at shutdown when no compute can run. */
#include "devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MAX_LOST 16
#define KEY_RING 64

static sched_space spaces[SCHED_MAX_SPACES];
static int n_spaces = 1; /* space 0, the host, needs no record */

static const tport_active_backend *lost[MAX_LOST];
static int n_lost;

typedef struct key_ring {
    const tport_active_backend *b;
    uint64_t keys[KEY_RING];
    int n, next;
} key_ring;
static key_ring rings[SCHED_MAX_SPACES * 2];
static int n_rings;

uint64_t sched_timeout_ns(void) {
    const char *env = tport_registry_getenv("TPORT_COMPUTE_TIMEOUT");
    double s = env ? strtod(env, NULL) : 30.0;
    if (!(s > 0) || s > 86400.0)
        s = 30.0;
    return (uint64_t)(s * 1e9);
}

int sched_space_of(const tport_active_backend *b) {
    if (!b || !b->mem.device_memory)
        return SCHED_HOST;
    for (int i = 1; i < n_spaces; i++)
        if (spaces[i].b == b)
            return i;
    if (n_spaces == SCHED_MAX_SPACES)
        return -1;
    spaces[n_spaces] = (sched_space){.b = b};
    return n_spaces++;
}

sched_space *sched_space_get(int space) {
    return space > 0 && space < n_spaces ? &spaces[space] : NULL;
}

bool sched_status_is_loss(tport_status st) {
    return st == TPORT_STATUS_DEVICE_LOST || st == TPORT_STATUS_TIMEOUT;
}

bool sched_backend_lost(const tport_active_backend *b) {
    for (int i = 0; i < n_lost; i++)
        if (lost[i] == b)
            return true;
    return false;
}

tport_status sched_mark_lost(const tport_active_backend *b, const char *why) {
    if (!sched_backend_lost(b) && n_lost < MAX_LOST)
        lost[n_lost++] = b;
    for (int i = 1; i < n_spaces; i++)
        if (spaces[i].b == b)
            spaces[i].last = 0; /* nothing of it will complete */
    return tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s lost: %s", b->name, why);
}

tport_status sched_wait_ticket(const tport_active_backend *b, tport_ticket ticket) {
    if (!ticket || !b->mem.wait)
        return TPORT_STATUS_OK;
    tport_clear_error();
    tport_status st = b->mem.wait(b->state, 0, ticket, sched_timeout_ns());
    if (st == TPORT_STATUS_OK)
        return st;
    char why[300];
    if (st == TPORT_STATUS_TIMEOUT)
        snprintf(why, sizeof why, "no completion within TPORT_COMPUTE_TIMEOUT=%.0f s",
                 (double)sched_timeout_ns() / 1e9);
    else
        snprintf(why, sizeof why, "wait failed (%s): %s", tport_status_name(st), tport_last_error());
    return sched_mark_lost(b, why);
}

tport_status sched_space_drain(int space) {
    sched_space *s = sched_space_get(space);
    if (!s || !s->last)
        return TPORT_STATUS_OK;
    tport_ticket t = s->last;
    s->last = 0;
    return sched_wait_ticket(s->b, t);
}

tport_status sched_drain_all(void) {
    tport_status first = TPORT_STATUS_OK;
    for (int i = 1; i < n_spaces; i++) {
        tport_status st = sched_space_drain(i);
        if (st && !first)
            first = st;
    }
    return first;
}

tport_status sched_space_reserve(int space, uint64_t size) {
    sched_space *s = sched_space_get(space);
    if (!s || size <= s->compute_size)
        return TPORT_STATUS_OK;
    const tport_backend_mem *m = &s->b->mem;
    tport_status st = sched_space_drain(space);
    if (st)
        return st;
    /* grow with headroom: the arena grows by a little every token */
    uint64_t want = size + size / 4;
    if (m->max_buffer && want > m->max_buffer)
        want = size;
    if (m->max_buffer && want > m->max_buffer)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "backend %s: a graph needs %llu bytes of device memory, "
                           "its largest buffer is %llu", s->b->name, (unsigned long long)want,
                           (unsigned long long)m->max_buffer);
    if (s->compute) {
        m->buffer_free(s->b->state, s->compute);
        s->compute = 0;
        s->compute_size = 0;
    }
    void *host = NULL;
    tport_buffer buf = 0;
    tport_clear_error();
    st = m->buffer_alloc(s->b->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_COMPUTE, want, &buf, &host);
    if (st == TPORT_STATUS_OK && !buf)
        st = tport_error(TPORT_STATUS_ERROR, "buffer_alloc returned handle 0");
    if (st != TPORT_STATUS_OK) {
        char why[300];
        snprintf(why, sizeof why, "%s", tport_last_error());
        if (sched_status_is_loss(st))
            return sched_mark_lost(s->b, why);
        return tport_error(st, "backend %s: cannot allocate %llu bytes of device memory for a graph: %s",
                           s->b->name, (unsigned long long)want, why[0] ? why : tport_status_name(st));
    }
    s->compute = buf;
    s->compute_size = want;
    return TPORT_STATUS_OK;
}

void sched_note_key(const tport_active_backend *b, uint64_t key) {
    if (!b->mem.forget_graph)
        return;
    key_ring *r = NULL;
    for (int i = 0; i < n_rings && !r; i++)
        if (rings[i].b == b)
            r = &rings[i];
    if (!r) {
        if (n_rings == (int)(sizeof rings / sizeof rings[0]))
            return;
        r = &rings[n_rings++];
        memset(r, 0, sizeof *r);
        r->b = b;
    }
    for (int i = 0; i < r->n; i++)
        if (r->keys[i] == key)
            return;
    if (r->n < KEY_RING) {
        r->keys[r->n++] = key;
        return;
    }
    if (!sched_backend_lost(b))
        b->mem.forget_graph(b->state, 0, r->keys[r->next]);
    r->keys[r->next] = key;
    r->next = (r->next + 1) % KEY_RING;
}

void sched_release_devices(void) {
    for (int i = 1; i < n_spaces; i++) {
        sched_space *s = &spaces[i];
        if (s->last && !sched_backend_lost(s->b))
            (void)sched_wait_ticket(s->b, s->last);
        if (s->compute)
            s->b->mem.buffer_free(s->b->state, s->compute);
        memset(s, 0, sizeof *s);
    }
    for (int i = 0; i < n_rings; i++)
        if (!sched_backend_lost(rings[i].b))
            rings[i].b->mem.forget_graph(rings[i].b->state, 0, 0);
    n_spaces = 1;
    n_rings = 0;
    n_lost = 0;
}
