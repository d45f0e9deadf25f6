/* Weights resident in a backend's memory (ABI 1.1, DESIGN.md rule 9): after
 * placement chose the backend that runs each weight's consumer, a weight
 * whose backend has memory of its own is uploaded there once, and a
 * host-memory backend that keeps weights in a layout of its own (its
 * tensor_alloc_size says how big) gets its copy the same way.  The file's
 * bytes stay where they are: they are what any other backend reads, and
 * what the host falls back to when a device is lost.
 *
 * A host-memory backend may return a ticket from tensor_write: it defers
 * making its copy until the host waits (the CPU backend does, and reads
 * the file's bytes meanwhile).  Those tickets are kept here and waited for
 * in order before a batch (tport_model_settle_uploads), each weight's file
 * pages released as its ticket completes, so the file's copy and the
 * backend's are not both in memory at once.  Without quick_start that
 * happens at the end of the load. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/view_srcs.h"
#include "formats/model_file.h"
#include "model/model.h"
#include "quant/type_table.h"
#include "sched/sched.h"

static void weight_record(const tport_tensor *w, tport_tensor_view *v) {
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->op = TPORT_OP_NONE;
    v->type = w->type;
    tport_view_clear_srcs(v);
    for (int d = 0; d < TPORT_MAX_DIMS; d++) {
        v->ne[d] = w->ne[d];
        v->nb[d] = w->nb[d];
    }
    v->flags = TPORT_TENSOR_WEIGHT;
    v->name = w->name;
}

static tport_status remember(tport_model *m, tport_tensor *w) {
    if (m->n_resident == m->cap_resident) {
        int cap = m->cap_resident ? 2 * m->cap_resident : 64;
        tport_tensor **p = realloc(m->resident, (size_t)cap * sizeof *p);
        if (!p)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        m->resident = p;
        m->cap_resident = cap;
    }
    m->resident[m->n_resident++] = w;
    return TPORT_STATUS_OK;
}

/* A quick-start model's first batch reads the file's layout if it has at
 * most TPORT_QUICK_START_TOKENS tokens: reading the file's layout is
 * slower per token than the CPU's x8 layout, but the copies cost time to
 * make, and the two ways break even near 40 tokens (RESULTS run 30). */

typedef struct deferred_upload {
    tport_tensor *w;
    const tport_active_backend *b;
    tport_ticket ticket;
} deferred_upload;

struct tport_deferred {
    pthread_mutex_t lock;
    deferred_upload *items;
    int n, cap;
    bool first_batch_seen;
};

static tport_status defer(tport_model *m, tport_tensor *w, const tport_active_backend *b, tport_ticket t) {
    if (!m->deferred) {
        m->deferred = calloc(1, sizeof *m->deferred);
        if (!m->deferred)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        pthread_mutex_init(&m->deferred->lock, NULL);
    }
    struct tport_deferred *d = m->deferred;
    if (d->n == d->cap) {
        int cap = d->cap ? 2 * d->cap : 64;
        deferred_upload *p = realloc(d->items, (size_t)cap * sizeof *p);
        if (!p)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        d->items = p;
        d->cap = cap;
    }
    d->items[d->n++] = (deferred_upload){.w = w, .b = b, .ticket = t};
    return TPORT_STATUS_OK;
}

/* Waits for every deferred upload, oldest first (d->lock held). */
static tport_status settle_locked(const tport_model *m, struct tport_deferred *d) {
    tport_status first = TPORT_STATUS_OK;
    for (int i = 0; i < d->n; i++) {
        deferred_upload *u = &d->items[i];
        if (u->w->res.backend != u->b || tport_sched_backend_lost(u->b))
            continue; /* released since */
        tport_status st = tport_sched_wait(u->b, u->ticket);
        if (st == TPORT_STATUS_OK)
            tport_model_file_release(m->file, u->w->data, (size_t)tport_tensor_nbytes(u->w));
        else if (!first)
            first = tport_error(st, "%s: backend %s's copy of %s: %s", m->file->path, u->b->name, u->w->name,
                                tport_last_error());
    }
    d->n = 0;
    return first;
}

tport_status tport_model_settle_uploads(const tport_model *m, int32_t n) {
    struct tport_deferred *d = m->deferred;
    if (!d)
        return TPORT_STATUS_OK;
    pthread_mutex_lock(&d->lock);
    tport_status st = TPORT_STATUS_OK;
    bool early = m->quick_start && !d->first_batch_seen && n <= TPORT_QUICK_START_TOKENS;
    d->first_batch_seen = true;
    if (!early && d->n)
        st = settle_locked(m, d);
    pthread_mutex_unlock(&d->lock);
    return st;
}

int tport_model_deferred_uploads(const tport_model *m) {
    struct tport_deferred *d = m->deferred;
    if (!d)
        return 0;
    pthread_mutex_lock(&d->lock);
    int n = d->n;
    pthread_mutex_unlock(&d->lock);
    return n;
}

/* Uploads w to b.  A refusal is not fatal: the weight stays in host memory
 * and the line says what that costs. */
static tport_status upload_one(tport_model *m, tport_tensor *w, const tport_active_backend *b, tport_ticket *last) {
    const tport_backend_mem *mem = &b->mem;
    if (w->res.backend || !w->data || (!mem->device_memory && !mem->own_layout))
        return TPORT_STATUS_OK;
    tport_tensor_view v;
    weight_record(w, &v);
    uint64_t plain = tport_tensor_nbytes(w);
    uint64_t size = mem->tensor_alloc_size ? mem->tensor_alloc_size(b->state, 0, &v) : 0;
    if (!size && !mem->device_memory)
        return TPORT_STATUS_OK; /* a host-memory backend that reads it as it is */
    if (!size)
        size = plain;
    tport_buffer buf = 0;
    void *host = NULL;
    tport_clear_error();
    tport_status st = mem->buffer_alloc(b->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, size, &buf, &host);
    const char *step = "allocating";
    if (st == TPORT_STATUS_OK && (!buf || (!mem->device_memory && !host))) {
        st = tport_error(TPORT_STATUS_ERROR, buf ? "no host address for a host-memory buffer" : "handle 0");
        if (buf)
            mem->buffer_free(b->state, buf);
        buf = 0;
    }
    tport_ticket t = 0;
    if (st == TPORT_STATUS_OK) {
        step = "uploading";
        tport_clear_error();
        st = mem->tensor_write(b->state, buf, 0, &v, w->data, plain, &t);
        if (st != TPORT_STATUS_OK)
            mem->buffer_free(b->state, buf);
    }
    if (st == TPORT_STATUS_DEVICE_LOST || st == TPORT_STATUS_TIMEOUT) {
        /* one line, and no more uploads to it: the model runs on the rest */
        char why[300];
        snprintf(why, sizeof why, "%s %s: %s", step, w->name, tport_last_error());
        tport_sched_mark_lost(b, why);
        tport_log(TPORT_LOG_WARN, "%s; the weights stay in host memory", tport_last_error());
        return TPORT_STATUS_OK;
    }
    if (st != TPORT_STATUS_OK) {
        tport_log(TPORT_LOG_WARN, "backend %s: %s %s (%llu bytes) failed (%s: %s); it stays in host memory%s", b->name,
                  step, w->name, (unsigned long long)size, tport_status_name(st), tport_last_error(),
                  mem->device_memory ? " and is copied to the device when used" : "");
        return TPORT_STATUS_OK;
    }
    w->res = (tport_residency){.backend = b, .buffer = buf, .offset = 0, .host = host, .bytes = size};
    st = remember(m, w);
    if (st == TPORT_STATUS_OK && t && !mem->device_memory)
        return defer(m, w, b, t); /* it reads the file's bytes until done */
    if (t)
        *last = t;
    /* the backend has its copy: the file's pages need not stay in memory too */
    tport_model_file_release(m->file, w->data, (size_t)plain);
    return st;
}

tport_status tport_model_upload_weights(tport_model *m, const tport_weight_home *homes, int n) {
    /* one pending ticket per backend, waited for before the model is used */
    const tport_active_backend *bs[16];
    tport_ticket last[16];
    int n_bs = 0;
    for (int i = 0; i < n; i++) {
        const tport_active_backend *b = homes[i].backend;
        if (!b || !homes[i].weight || tport_sched_backend_lost(b))
            continue;
        int k = 0;
        while (k < n_bs && bs[k] != b)
            k++;
        if (k == n_bs) {
            if (n_bs == 16)
                continue;
            bs[n_bs] = b;
            last[n_bs++] = 0;
        }
        tport_status st = upload_one(m, homes[i].weight, b, &last[k]);
        if (st)
            return st;
    }
    for (int k = 0; k < n_bs; k++) {
        if (tport_sched_backend_lost(bs[k])) {
            tport_model_release_weights(m, true);
            continue;
        }
        tport_status st = tport_sched_wait(bs[k], last[k]);
        if (st == TPORT_STATUS_DEVICE_LOST) {
            /* the model still runs: on the other backends, from the file */
            tport_log(TPORT_LOG_WARN, "%s: uploading weights: %s; they stay in host memory", m->file->path,
                      tport_last_error());
            tport_model_release_weights(m, true);
        } else if (st) {
            return tport_error(st, "%s: uploading weights: %s", m->file->path, tport_last_error());
        }
    }
    return m->quick_start ? TPORT_STATUS_OK : tport_model_settle_uploads(m, INT32_MAX);
}

void tport_model_release_weights(tport_model *m, bool lost_only) {
    m->n_resident = tport_sched_release(m->resident, m->n_resident, lost_only);
    if (!lost_only && m->deferred) { /* the backends dropped what they had not done */
        pthread_mutex_destroy(&m->deferred->lock);
        free(m->deferred->items);
        free(m->deferred);
        m->deferred = NULL;
    }
}

uint64_t tport_model_resident_bytes(const tport_model *m, const char *backend) {
    uint64_t n = 0;
    for (int i = 0; i < m->n_resident; i++)
        if (!strcmp(m->resident[i]->res.backend->name, backend))
            n += m->resident[i]->res.bytes;
    return n;
}
