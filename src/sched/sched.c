/* The scheduler (DESIGN.md, "Scheduling"): assigns every node of a planned
 * graph to a backend — where its weights or cache live, then whoever
 * supports it, in preference order, or the one the caller forces — runs
 * consecutive nodes of one backend as one split, and stages the tensors
 * that cross between host memory and a device's own memory (stage.c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "core/view_srcs.h"
#include "core/view_keys.h"
#include "devices.h"
#include "graph_view.h"
#include "registry/registry.h"
#include "sched.h"
#include "stage.h"

/* The ABI promises a backend one calling thread at a time. */
static pthread_mutex_t compute_lock = PTHREAD_MUTEX_INITIALIZER;

/* Backend names recorded per node are copies kept for the life of the
 * process: a plug-in's own string goes away when it is unloaded. */
#define MAX_NAMES 64
static char interned[MAX_NAMES][64];
static int n_interned;

static const char *intern_name(const char *name) { /* under compute_lock */
    for (int i = 0; i < n_interned; i++)
        if (!strcmp(interned[i], name))
            return interned[i];
    if (n_interned == MAX_NAMES)
        return "(other)";
    snprintf(interned[n_interned], sizeof interned[0], "%s", name);
    return interned[n_interned++];
}

static int default_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < 512 ? n : 512) : 1;
}

static void release_hook(void) {
    pthread_mutex_lock(&compute_lock);
    sched_release_devices();
    pthread_mutex_unlock(&compute_lock);
}

/* A device with memory of its own is asked with a view whose records hold
 * no host address: it must not rely on one it will never get in compute. */
static bool ask(const tport_active_backend *b, const tport_graph_view *v, const tport_graph_view *blind,
                int32_t node) {
    if (!tport_backend_knows_op(b, v->tensors[node]->op))
        return false;
    return b->api->supports_op(b->state, 0, b->mem.device_memory && blind ? blind : v, node);
}

static bool can_run(const tport_active_backend *b, const tport_graph_view *v, const tport_graph_view *blind,
                    int32_t node) {
    return b && b->api && b->api->supports_op && b->api->compute && b->n_devices > 0 && !sched_backend_lost(b) &&
           ask(b, v, blind, node);
}

bool tport_sched_backend_supports(const tport_active_backend *b, const tport_graph_view *v, int32_t node) {
    if (!v || node < 0 || node >= v->n_tensors)
        return false;
    pthread_mutex_lock(&compute_lock);
    bool ok;
    if (b && b->mem.device_memory) {
        tport_tensor_view *recs = calloc((size_t)v->n_tensors, sizeof *recs);
        const tport_tensor_view **ptrs = calloc((size_t)v->n_tensors, sizeof *ptrs);
        ok = recs && ptrs;
        for (int32_t i = 0; ok && i < v->n_tensors; i++) {
            size_t n = v->tensors[i]->struct_size < sizeof *recs ? v->tensors[i]->struct_size : sizeof *recs;
            memcpy(&recs[i], v->tensors[i], n);
            if (n < TPORT_TENSOR_VIEW_SIZE_1_3)
                recs[i].src_more[0] = recs[i].src_more[1] = -1;
            recs[i].struct_size = sizeof *recs;
            recs[i].data = NULL;
            ptrs[i] = &recs[i];
        }
        tport_graph_view blind = *v;
        blind.tensors = ptrs;
        ok = ok && can_run(b, &blind, NULL, node);
        free(recs);
        free(ptrs);
    } else {
        ok = can_run(b, v, NULL, node);
    }
    pthread_mutex_unlock(&compute_lock);
    return ok;
}

/* The device holding a leaf that node idx reads (or, for a copy into a
 * cache, writes), if it can run the node.  A host-memory backend's copy
 * of a weight (its own layout) does not pull nodes to it: the file's bytes
 * stay readable by the others, and the preference order decides (the blas
 * plug-in takes prompt batches of weights the CPU keeps a copy of for
 * generation). */
static const tport_active_backend *by_locality(const tport_graph *g, const sched_view *sv,
                                               const tport_graph_view *blind, int32_t idx) {
    const tport_tensor *t = g->tensors[idx];
    const tport_tensor *cand[TPORT_CORE_MAX_SRC + 1];
    int n = 0;
    for (int s = 0; s < TPORT_CORE_MAX_SRC; s++)
        if (t->src[s])
            cand[n++] = t->src[s]->view_src ? t->src[s]->view_src : t->src[s];
    if (t->view_src)
        cand[n++] = t->view_src;
    for (int i = 0; i < n; i++) {
        const tport_active_backend *b = cand[i]->res.backend;
        if (b && b->mem.device_memory && can_run(b, &sv->view, blind, idx))
            return b;
    }
    /* a weight an override placed (--place) pulls its readers too */
    for (int i = 0; i < n; i++)
        if (cand[i]->pinned && can_run(cand[i]->pinned, &sv->view, blind, idx))
            return cand[i]->pinned;
    return NULL;
}

static bool any_device_memory(void) {
    for (int i = 0; i < tport_registry_active_count(); i++)
        if (tport_registry_active(i)->mem.device_memory)
            return true;
    return false;
}

static tport_status assign(const tport_graph *g, const sched_view *sv, const tport_graph_view *blind,
                           const char *forced, const tport_active_backend **chosen) {
    const tport_active_backend *only = NULL;
    if (forced) {
        only = tport_registry_find(forced);
        if (!only)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "backend '%s' is not available", forced);
        if (sched_backend_lost(only))
            return tport_error(TPORT_STATUS_DEVICE_LOST, "backend '%s' was lost earlier in this process", forced);
    }
    int n_active = tport_registry_active_count();
    for (int p = 0; p < g->n_nodes; p++) {
        int32_t idx = g->node_index[p];
        const tport_tensor *t = g->tensors[idx];
        chosen[p] = NULL;
        if (only) {
            if (can_run(only, &sv->view, blind, idx))
                chosen[p] = only;
        } else {
            chosen[p] = by_locality(g, sv, blind, idx);
            for (int b = 0; b < n_active && !chosen[p]; b++)
                if (can_run(tport_registry_active(b), &sv->view, blind, idx))
                    chosen[p] = tport_registry_active(b);
        }
        if (!chosen[p])
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s%s%s run node %d '%s' (%s, %s, %lldx%lldx%lldx%lld)",
                               only ? "backend '" : "no backend can", only ? only->name : "",
                               only ? "' cannot" : "", p,
                               t->name, tport_op_name(t->op), tport_type_name(t->type), (long long)t->ne[0],
                               (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    }
    return TPORT_STATUS_OK;
}

/* One split: nodes [start, end) on backend b in memory space `space`. */
typedef struct split {
    int start, end, space, index;
    const tport_active_backend *b;
} split;

/* Whether a node of split sp after position p reads the leaf that node p
 * writes into (only asked for leaves that live on a device). */
static bool read_later(const stage_run *r, const sched_view *sv, const split *sp, int p) {
    int32_t idx = sv->nodes[p];
    if (!stage_writes_device_leaf(r, idx))
        return false;
    int o = stage_owner(r, idx);
    for (int q = p + 1; q < sp->end; q++) {
        const tport_tensor_view *t = sv->ptrs[sv->nodes[q]];
        for (int s = 0; s < TPORT_CORE_MAX_SRC; s++)
            if (tport_view_src(t, s) >= 0 && stage_owner(r, tport_view_src(t, s)) == o)
                return true;
    }
    return false;
}

/* Stages the split's operands, then fills its records: locations in the
 * split's space, and no host address at all on a device. */
static tport_status prepare_split(stage_run *r, const sched_view *sv, const split *sp, tport_tensor_view *recs) {
    const tport_graph *g = r->g;
    memcpy(recs, sv->records, (size_t)g->n_tensors * sizeof *recs);
    if (sp->space > 0)
        for (int i = 0; i < g->n_tensors; i++) {
            recs[i].data = NULL;
            recs[i].buffer = 0;
            recs[i].offset = 0;
        }
    for (int p = sp->start; p < sp->end; p++) {
        int32_t idx = sv->nodes[p];
        const tport_tensor_view *base = sv->ptrs[idx];
        for (int s = 0; s < TPORT_CORE_MAX_SRC; s++) {
            int32_t src = tport_view_src(base, s);
            if (src < 0)
                continue;
            int from;
            tport_status st = stage_make_readable(r, src, sp->space, sp->b, &from);
            if (st)
                return st;
            stage_locate(r, src, from, sp->b, &recs[src]);
        }
        tport_status st = stage_prepare_write(r, idx, sp->space, read_later(r, sv, sp, p));
        if (st)
            return st;
        stage_locate(r, idx, sp->space, sp->b, &recs[idx]);
        stage_mark_written(r, idx, sp->space);
    }
    return TPORT_STATUS_OK;
}

static tport_status split_failed(const split *sp, tport_status st) {
    char why[400];
    snprintf(why, sizeof why, "%s", tport_last_error());
    if (sched_status_is_loss(st)) {
        char line[480];
        snprintf(line, sizeof line, "%s during compute of split %d", why[0] ? why : tport_status_name(st), sp->index);
        return sched_mark_lost(sp->b, line);
    }
    /* a plug-in may return a code outside the known ids */
    tport_status code = st > 0 && st <= TPORT_STATUS_NOT_ADDRESSABLE ? st : TPORT_STATUS_ERROR;
    return tport_error(code, "backend '%s' failed on nodes %d..%d (status %d): %s", sp->b->name, sp->start,
                       sp->end - 1, (int)st, why[0] ? why : tport_status_name(st));
}

static tport_status run_split(stage_run *r, sched_view *sv, const split *sp, tport_tensor_view *recs,
                              const tport_tensor_view **ptrs) {
    /* the host is about to read and write host memory: no device may still
     * be reading an upload's source or writing a download's destination */
    tport_status st = sp->space == SCHED_HOST ? sched_drain_all() : TPORT_STATUS_OK;
    if (!st)
        st = prepare_split(r, sv, sp, recs);
    if (st)
        return st;
    tport_graph_view part = sv->view;
    part.tensors = ptrs;
    part.nodes = sv->nodes + sp->start;
    part.n_nodes = sp->end - sp->start;
    tport_view_keys(&part, sv->nodes + sp->start, part.n_nodes);
    sched_note_key(sp->b, part.graph_key);
    tport_log(TPORT_LOG_DEBUG, "sched: split %d: nodes %d..%d on %s", sp->index, sp->start, sp->end - 1, sp->b->name);
    tport_clear_error();
    const tport_backend_mem *m = &sp->b->mem;
    if (sp->space > 0 && m->compute_async) {
        tport_ticket ticket = 0;
        st = m->compute_async(sp->b->state, 0, &part, &ticket);
        if (!st && ticket)
            sched_space_get(sp->space)->last = ticket;
    } else {
        st = sp->b->api->compute(sp->b->state, 0, &part);
    }
    if (st)
        return split_failed(sp, st);
    return sp->space == SCHED_HOST ? stage_flush_apart(r) : TPORT_STATUS_OK;
}

static tport_status run(tport_graph *g, sched_view *sv, const tport_active_backend **chosen) {
    int n_splits = 0;
    split *splits = calloc((size_t)g->n_nodes, sizeof *splits);
    tport_tensor_view *recs = malloc((size_t)g->n_tensors * sizeof *recs);
    const tport_tensor_view **ptrs = malloc((size_t)g->n_tensors * sizeof *ptrs);
    stage_run r;
    tport_status st = splits && recs && ptrs ? stage_begin(&r, g, sv)
                                             : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (st) {
        free(splits);
        free(recs);
        free(ptrs);
        return st;
    }
    for (int i = 0; i < g->n_tensors; i++)
        ptrs[i] = &recs[i];
    for (int start = 0; start < g->n_nodes && !st;) {
        int end = start + 1;
        while (end < g->n_nodes && chosen[end] == chosen[start])
            end++;
        split *sp = &splits[n_splits];
        *sp = (split){.start = start, .end = end, .b = chosen[start], .index = n_splits,
                      .space = sched_space_of(chosen[start])};
        if (sp->space < 0)
            st = tport_error(TPORT_STATUS_UNSUPPORTED, "more than %d device backends in one graph", SCHED_MAX_SPACES - 1);
        /* staging room for leaves the split touches that live elsewhere */
        for (int p = start; p < end && sp->space > 0; p++) {
            const tport_tensor_view *base = sv->ptrs[sv->nodes[p]];
            for (int s = 0; s < TPORT_CORE_MAX_SRC; s++)
                if (tport_view_src(base, s) >= 0)
                    stage_reserve_leaf(&r, tport_view_src(base, s), sp->space);
            stage_reserve_leaf(&r, sv->nodes[p], sp->space);
        }
        stage_use_space(&r, sp->space);
        n_splits++;
        start = end;
    }
    for (int s = 1; s < SCHED_MAX_SPACES && !st; s++)
        if (sched_space_get(s) && r.need[s])
            st = sched_space_reserve(s, r.need[s]);
    for (int i = 0; i < n_splits && !st; i++)
        st = run_split(&r, sv, &splits[i], recs, ptrs);
    if (!st)
        st = stage_finish(&r);
    /* draining waits on tickets, which clears the message of a failure */
    char failure[512] = "";
    if (st)
        snprintf(failure, sizeof failure, "%s", tport_last_error());
    tport_status drained = sched_drain_all();
    if (!st)
        st = drained;
    else if (failure[0])
        tport_error(st, "%s", failure);
    if (!st) {
        for (int i = 0; i < n_splits; i++) {
            const char *name = intern_name(splits[i].b->name);
            for (int p = splits[i].start; p < splits[i].end; p++)
                g->node_backend[p] = name;
        }
        r.stats.n_splits = n_splits;
        g->stats = r.stats;
    }
    stage_end(&r);
    free(splits);
    free(recs);
    free(ptrs);
    return st;
}

tport_sched_stats tport_graph_stats(const tport_graph *g) {
    return g ? g->stats : (tport_sched_stats){0};
}

tport_status tport_graph_compute(tport_graph *g, const tport_compute_params *params) {
    if (!g)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "compute: NULL graph");
    tport_status st = tport_graph_plan(g);
    if (st)
        return st;
    memset(&g->stats, 0, sizeof g->stats);
    const char **names = realloc(g->node_backend, (size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *names);
    if (!names)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    g->node_backend = names;
    memset(names, 0, (size_t)g->n_nodes * sizeof *names);
    if (!g->n_nodes)
        return TPORT_STATUS_OK;

    int n_threads = params && params->n_threads > 0 ? params->n_threads : default_threads();
    sched_view sv, blind = {0};
    st = sched_view_build(g, n_threads, &sv);
    if (st)
        return st;
    /* the copy without host addresses is only for devices with memory of
     * their own: a CPU-only run does not pay for it every evaluation */
    st = any_device_memory() ? sched_view_blind(&sv, &blind) : TPORT_STATUS_OK;
    if (st) {
        sched_view_free(&sv);
        return st;
    }
    const tport_active_backend **chosen = calloc((size_t)g->n_nodes, sizeof *chosen);
    if (!chosen) {
        sched_view_free(&sv);
        sched_view_free(&blind);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    pthread_mutex_lock(&compute_lock);
    /* under the lock: sessions in several threads compute at once (tport serve) */
    tport_registry_set_shutdown_hook(release_hook);
    st = assign(g, &sv, blind.ptrs ? &blind.view : NULL, params ? params->backend : NULL, chosen);
    if (!st)
        st = run(g, &sv, chosen);
    pthread_mutex_unlock(&compute_lock);
    free(chosen);
    sched_view_free(&sv);
    sched_view_free(&blind);
    return st;
}

tport_status tport_sched_wait(const tport_active_backend *b, tport_ticket ticket) {
    pthread_mutex_lock(&compute_lock);
    tport_status st = sched_wait_ticket(b, ticket);
    pthread_mutex_unlock(&compute_lock);
    return st;
}

tport_status tport_sched_mark_lost(const tport_active_backend *b, const char *why) {
    pthread_mutex_lock(&compute_lock);
    tport_status st = sched_mark_lost(b, why);
    pthread_mutex_unlock(&compute_lock);
    return st;
}

bool tport_sched_backend_lost(const tport_active_backend *b) {
    pthread_mutex_lock(&compute_lock);
    bool lost = sched_backend_lost(b);
    pthread_mutex_unlock(&compute_lock);
    return lost;
}

tport_status tport_sched_alloc(const tport_active_backend *b, uint64_t bytes, tport_residency *res) {
    memset(res, 0, sizeof *res);
    if (!b || !b->mem.device_memory)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "backend has no device memory");
    pthread_mutex_lock(&compute_lock);
    /* under the lock: sessions in several threads compute at once (tport serve) */
    tport_registry_set_shutdown_hook(release_hook);
    tport_buffer buf = 0;
    void *host = NULL;
    tport_clear_error();
    tport_status st = sched_backend_lost(b) ? tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s was lost", b->name)
                      : b->mem.buffer_alloc(b->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_COMPUTE, bytes, &buf, &host);
    if (st == TPORT_STATUS_OK && !buf)
        st = tport_error(TPORT_STATUS_ERROR, "buffer_alloc returned handle 0");
    tport_ticket t = 0;
    if (st == TPORT_STATUS_OK) {
        if (b->mem.buffer_fill)
            st = b->mem.buffer_fill(b->state, buf, 0, bytes, 0, &t);
        else if (host)
            memset(host, 0, bytes);
        /* else, or when an isolated plug-in has no fill behind its proxy's
         * slot: the cache is written before it is read (positions < pos) */
        if (st == TPORT_STATUS_UNSUPPORTED)
            st = TPORT_STATUS_OK;
        if (st == TPORT_STATUS_OK)
            st = sched_wait_ticket(b, t);
        if (st != TPORT_STATUS_OK)
            b->mem.buffer_free(b->state, buf);
    }
    pthread_mutex_unlock(&compute_lock);
    if (st == TPORT_STATUS_OK)
        *res = (tport_residency){.backend = b, .buffer = buf, .host = host, .bytes = bytes};
    return st;
}

void tport_sched_free(tport_residency *res) {
    if (!res->backend)
        return;
    pthread_mutex_lock(&compute_lock);
    if (!sched_backend_lost(res->backend))
        res->backend->mem.buffer_free(res->backend->state, res->buffer);
    pthread_mutex_unlock(&compute_lock);
    memset(res, 0, sizeof *res);
}

int tport_sched_release(tport_tensor **leaves, int n, bool lost_only) {
    pthread_mutex_lock(&compute_lock);
    int kept = 0;
    for (int i = 0; i < n; i++) {
        tport_tensor *w = leaves[i];
        const tport_active_backend *b = w->res.backend;
        bool lost = sched_backend_lost(b);
        if (lost_only && !lost) {
            leaves[kept++] = w;
            continue;
        }
        if (!lost)
            b->mem.buffer_free(b->state, w->res.buffer);
        memset(&w->res, 0, sizeof w->res);
    }
    pthread_mutex_unlock(&compute_lock);
    return kept;
}
