/* Staged copies between host memory and device memory for one evaluation
 * (see stage.h).  Runs under the scheduler's lock. */
#include "stage.h"
#include "core/view_srcs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define NONE UINT64_MAX
#define BIT(s) (1u << (s))

static bool planner_owned(const tport_graph *g, int o) {
    return g->offsets && g->offsets[o] != SIZE_MAX;
}

static int home_space(const tport_tensor *t) {
    return t->res.backend && t->res.backend->mem.device_memory ? sched_space_of(t->res.backend) : SCHED_HOST;
}

static uint64_t align_to(uint64_t n, uint64_t a) {
    return (n + a - 1) / a * a;
}

tport_status stage_begin(stage_run *r, tport_graph *g, const sched_view *base) {
    memset(r, 0, sizeof *r);
    r->g = g;
    r->base = base;
    r->n = g->n_tensors;
    size_t n = (size_t)(r->n ? r->n : 1);
    r->owner = malloc(n * sizeof *r->owner);
    r->valid = calloc(n, sizeof *r->valid);
    r->written = calloc(n, 1);
    r->staged = malloc(n * SCHED_MAX_SPACES * sizeof *r->staged);
    r->shadow = calloc(n, sizeof *r->shadow);
    r->apart = calloc(n, sizeof *r->apart);
    r->pending = malloc(n * sizeof *r->pending);
    if (!r->owner || !r->valid || !r->written || !r->staged || !r->shadow || !r->apart || !r->pending) {
        stage_end(r);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory scheduling a graph");
    }
    for (size_t i = 0; i < n * SCHED_MAX_SPACES; i++)
        r->staged[i] = NONE;
    for (int i = 0; i < r->n; i++) {
        const tport_tensor *t = g->tensors[i];
        int o = t->view_src ? tport_graph_find(g, t->view_src) : i;
        r->owner[i] = o >= 0 ? o : i;
    }
    for (int i = 0; i < r->n; i++) {
        if (r->owner[i] != i || planner_owned(g, i))
            continue;
        const tport_tensor *t = g->tensors[i];
        if (t->data)
            r->valid[i] |= BIT(SCHED_HOST);
        int home = home_space(t);
        if (home > 0)
            r->valid[i] |= BIT(home);
    }
    for (int s = 0; s < SCHED_MAX_SPACES; s++)
        r->staged_end[s] = g->arena_size;
    return TPORT_STATUS_OK;
}

void stage_end(stage_run *r) {
    for (int i = 0; i < r->n; i++) {
        if (r->shadow)
            free(r->shadow[i]);
        if (r->apart)
            free(r->apart[i]);
    }
    free(r->apart);
    free(r->pending);
    free(r->owner);
    free(r->valid);
    free(r->written);
    free(r->staged);
    free(r->shadow);
    memset(r, 0, sizeof *r);
}

static bool resident_in(const tport_tensor *t, int space) {
    return space > 0 && t->res.backend && home_space(t) == space;
}

void stage_reserve_leaf(stage_run *r, int tensor, int space) {
    int o = r->owner[tensor];
    const tport_tensor *t = r->g->tensors[o];
    if (space <= 0 || planner_owned(r->g, o) || resident_in(t, space))
        return;
    uint64_t *slot = &r->staged[(size_t)o * SCHED_MAX_SPACES + (size_t)space];
    if (*slot != NONE)
        return;
    const sched_space *sp = sched_space_get(space);
    uint64_t align = sp ? sp->b->mem.alignment : 64;
    *slot = align_to(r->staged_end[space], align);
    r->staged_end[space] = *slot + tport_tensor_nbytes(t);
}

void stage_use_space(stage_run *r, int space) {
    if (space > 0 && r->need[space] < r->staged_end[space])
        r->need[space] = r->staged_end[space];
}

/* Where owner o's bytes are in `space`. */
static void owner_location(const stage_run *r, int o, int space, tport_buffer *buf, uint64_t *off, void **data) {
    const tport_graph *g = r->g;
    const tport_tensor *t = g->tensors[o];
    *buf = 0;
    *off = 0;
    *data = NULL;
    if (space == SCHED_HOST) {
        if (planner_owned(g, o))
            *data = (uint8_t *)g->arena + g->offsets[o];
        else
            *data = t->data ? t->data : r->shadow[o];
        return;
    }
    const sched_space *sp = sched_space_get(space);
    if (planner_owned(g, o)) {
        *buf = sp->compute;
        *off = g->offsets[o];
    } else if (resident_in(t, space)) {
        *buf = t->res.buffer;
        *off = t->res.offset;
        *data = t->res.host;
    } else {
        *buf = sp->compute;
        *off = r->staged[(size_t)o * SCHED_MAX_SPACES + (size_t)space];
    }
}

/* A record describing owner o as plain contiguous bytes at its location. */
static void owner_record(const stage_run *r, int o, int space, tport_tensor_view *rec) {
    *rec = *r->base->ptrs[o];
    rec->op = TPORT_OP_NONE;
    tport_view_clear_srcs(rec);
    rec->params = NULL;
    rec->params_size = 0;
    owner_location(r, o, space, &rec->buffer, &rec->offset, &rec->data);
    if (space > 0 && !rec->buffer)
        rec->data = NULL;
}

static tport_status lost_or(const tport_active_backend *b, tport_status st, const char *what, const char *name) {
    char why[300];
    snprintf(why, sizeof why, "%s", tport_last_error());
    if (sched_status_is_loss(st) || st == TPORT_STATUS_OK)
        return sched_mark_lost(b, why[0] ? why : what);
    return tport_error(st, "backend %s: %s of '%s' failed: %s", b->name, what, name,
                       why[0] ? why : tport_status_name(st));
}

/* Copies owner o between host memory and device space `dev`: a download
 * (to_device false) is waited for at once, since the host reads it next; an
 * upload's source stays untouched until the space is drained (before any
 * host split runs, and at the end). */
static tport_status copy_owner(stage_run *r, int o, int dev, bool to_device) {
    const tport_tensor *t = r->g->tensors[o];
    size_t bytes = tport_tensor_nbytes(t);
    if (!to_device && !planner_owned(r->g, o) && !t->data && !r->shadow[o]) {
        r->shadow[o] = aligned_alloc(64, (bytes + 63) / 64 * 64);
        if (!r->shadow[o])
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory staging '%s' (%zu bytes)", t->name, bytes);
    }
    sched_space *sp = sched_space_get(dev);
    const tport_backend_mem *m = &sp->b->mem;
    tport_tensor_view rec;
    owner_record(r, o, dev, &rec);
    tport_buffer hb;
    uint64_t hoff;
    void *host;
    owner_location(r, o, SCHED_HOST, &hb, &hoff, &host);
    tport_ticket ticket = 0;
    tport_clear_error();
    tport_status st = to_device ? m->tensor_write(sp->b->state, rec.buffer, rec.offset, &rec, host, bytes, &ticket)
                                : m->tensor_read(sp->b->state, rec.buffer, rec.offset, &rec, host, bytes, &ticket);
    if (st != TPORT_STATUS_OK)
        return lost_or(sp->b, st, to_device ? "upload" : "download", t->name);
    if (to_device) {
        if (ticket)
            sp->last = ticket;
        r->stats.n_uploads++;
        r->stats.bytes_up += bytes;
        r->valid[o] |= BIT(dev);
    } else {
        st = sched_wait_ticket(sp->b, ticket);
        if (st)
            return st;
        r->stats.n_downloads++;
        r->stats.bytes_down += bytes;
        r->valid[o] |= BIT(SCHED_HOST);
    }
    return TPORT_STATUS_OK;
}

static tport_status make_valid(stage_run *r, int o, int space) {
    if (r->valid[o] & BIT(space))
        return TPORT_STATUS_OK;
    if (!(r->valid[o] & BIT(SCHED_HOST))) {
        int from = -1;
        for (int s = 1; s < SCHED_MAX_SPACES && from < 0; s++)
            if (r->valid[o] & BIT(s))
                from = s;
        if (from < 0)
            return tport_error(TPORT_STATUS_ERROR, "'%s' is read before anything wrote it",
                               r->g->tensors[o]->name);
        tport_status st = copy_owner(r, o, from, false);
        if (st)
            return st;
    }
    return space == SCHED_HOST ? TPORT_STATUS_OK : copy_owner(r, o, space, true);
}

tport_status stage_make_readable(stage_run *r, int tensor, int space, const tport_active_backend *b, int *from) {
    int o = r->owner[tensor];
    *from = space;
    if (r->valid[o] & BIT(space))
        return TPORT_STATUS_OK;
    if (space > 0 && (b->mem.caps & TPORT_DEVICE_CAP_HOST_READABLE) && (r->valid[o] & BIT(SCHED_HOST))) {
        *from = SCHED_HOST;
        return TPORT_STATUS_OK;
    }
    return make_valid(r, o, space);
}

int stage_owner(const stage_run *r, int tensor) {
    return r->owner[tensor];
}

bool stage_writes_device_leaf(const stage_run *r, int tensor) {
    int o = r->owner[tensor];
    return !planner_owned(r->g, o) && home_space(r->g->tensors[o]) > 0;
}

/* A view whose elements are one run of bytes: writing it replaces exactly
 * [view_offs, view_offs + nbytes) of its owner. */
static bool writes_one_range(const stage_run *r, int tensor) {
    const tport_tensor *t = r->g->tensors[tensor];
    return tensor != r->owner[tensor] && tport_tensor_is_contiguous(t);
}

tport_status stage_prepare_write(stage_run *r, int tensor, int space, bool read_later) {
    int o = r->owner[tensor];
    if (planner_owned(r->g, o) || r->valid[o] == 0)
        return TPORT_STATUS_OK; /* written whole, nothing to keep */
    int home = home_space(r->g->tensors[o]);
    if (space == SCHED_HOST && home > 0 && !read_later && !(r->valid[o] & BIT(SCHED_HOST)) &&
        (r->valid[o] & BIT(home)) && writes_one_range(r, tensor)) {
        size_t bytes = tport_tensor_nbytes(r->g->tensors[tensor]);
        if (!r->apart[tensor] && !(r->apart[tensor] = aligned_alloc(64, (bytes + 63) / 64 * 64)))
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory staging '%s' (%zu bytes)",
                               r->g->tensors[tensor]->name, bytes);
        return TPORT_STATUS_OK;
    }
    return make_valid(r, o, space);
}

void stage_mark_written(stage_run *r, int tensor, int space) {
    int o = r->owner[tensor];
    r->written[o] = 1;
    if (space == SCHED_HOST && r->apart[tensor]) {
        /* the device's copy stays the valid one once the rows are there */
        r->pending[r->n_pending++] = tensor;
        return;
    }
    r->valid[o] = BIT(space);
}

tport_status stage_flush_apart(stage_run *r) {
    for (int i = 0; i < r->n_pending; i++) {
        int tensor = r->pending[i], o = r->owner[tensor];
        const tport_tensor *t = r->g->tensors[tensor], *own = r->g->tensors[o];
        sched_space *sp = sched_space_get(home_space(own));
        size_t bytes = tport_tensor_nbytes(t);
        tport_tensor_view rec = *r->base->ptrs[tensor];
        rec.op = TPORT_OP_NONE;
        tport_view_clear_srcs(&rec);
        rec.params = NULL;
        rec.params_size = 0;
        rec.data = NULL;
        rec.buffer = own->res.buffer;
        rec.offset = own->res.offset + t->view_offs;
        tport_ticket ticket = 0;
        tport_clear_error();
        tport_status st = sp->b->mem.tensor_write(sp->b->state, rec.buffer, rec.offset, &rec, r->apart[tensor],
                                                  bytes, &ticket);
        if (st != TPORT_STATUS_OK)
            return lost_or(sp->b, st, "upload", t->name);
        /* the scratch stays untouched until the space is drained */
        if (ticket)
            sp->last = ticket;
        r->stats.n_uploads++;
        r->stats.bytes_up += bytes;
    }
    r->n_pending = 0;
    return TPORT_STATUS_OK;
}

void stage_locate(const stage_run *r, int tensor, int space, const tport_active_backend *b, tport_tensor_view *rec) {
    int o = r->owner[tensor];
    if (space == SCHED_HOST && r->apart[tensor]) {
        rec->data = r->apart[tensor];
        rec->buffer = 0;
        rec->offset = 0;
        return;
    }
    const tport_tensor *t = r->g->tensors[tensor], *own = r->g->tensors[o];
    size_t offs = o == tensor ? 0 : t->view_offs;
    if (space == SCHED_HOST && o == tensor && own->res.backend == b && own->res.host) {
        /* a host-memory backend's own re-encoded copy of a weight */
        rec->data = own->res.host;
        rec->buffer = own->res.buffer;
        rec->offset = own->res.offset;
        return;
    }
    tport_buffer buf;
    uint64_t off;
    void *data;
    owner_location(r, o, space, &buf, &off, &data);
    rec->buffer = buf;
    rec->offset = buf ? off + offs : 0;
    rec->data = data ? (uint8_t *)data + offs : NULL;
}

tport_status stage_finish(stage_run *r) {
    for (int i = 0; i < r->n; i++) {
        int o = r->owner[i];
        tport_status st = TPORT_STATUS_OK;
        if (planner_owned(r->g, o)) {
            if (tport_graph_is_output(r->g, i))
                st = make_valid(r, o, SCHED_HOST);
        } else if (o == i && r->written[o]) {
            const tport_tensor *t = r->g->tensors[o];
            int home = home_space(t);
            /* a leaf with a host copy keeps that copy current too */
            if (t->data && !(r->valid[o] & BIT(SCHED_HOST)))
                st = make_valid(r, o, SCHED_HOST);
            if (!st && home > 0)
                st = make_valid(r, o, home);
        }
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}
