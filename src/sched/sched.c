/* The scheduler: assigns every node of a planned graph to the first active
 * backend (in preference order) that supports it, or to the one the caller
 * forces, and runs consecutive nodes of one backend in one compute call. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "graph_view.h"
#include "registry/registry.h"
#include "sched.h"

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

static bool can_run(const tport_active_backend *b, const tport_graph_view *v, int32_t node) {
    return b && b->api && b->api->supports_op && b->api->compute && b->n_devices > 0 &&
           b->api->supports_op(b->state, 0, v, node);
}

bool tport_sched_backend_supports(const tport_active_backend *b, const tport_graph_view *v, int32_t node) {
    if (!v || node < 0 || node >= v->n_tensors)
        return false;
    pthread_mutex_lock(&compute_lock);
    bool ok = can_run(b, v, node);
    pthread_mutex_unlock(&compute_lock);
    return ok;
}

static tport_status assign(const tport_graph *g, const tport_graph_view *v, const char *forced,
                           const tport_active_backend **chosen) {
    const tport_active_backend *only = NULL;
    if (forced) {
        only = tport_registry_find(forced);
        if (!only)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "backend '%s' is not available", forced);
    }
    int n_active = tport_registry_active_count();
    for (int p = 0; p < g->n_nodes; p++) {
        int32_t idx = g->node_index[p];
        const tport_tensor *t = g->tensors[idx];
        chosen[p] = NULL;
        if (only) {
            if (can_run(only, v, idx))
                chosen[p] = only;
        } else {
            for (int b = 0; b < n_active && !chosen[p]; b++)
                if (can_run(tport_registry_active(b), v, idx))
                    chosen[p] = tport_registry_active(b);
        }
        if (!chosen[p])
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s%s%s cannot run node %d '%s' (%s, %s, %lldx%lldx%lldx%lld)",
                               only ? "backend '" : "no backend", only ? only->name : "", only ? "'" : "", p,
                               t->name, tport_op_name(t->op), tport_type_name(t->type), (long long)t->ne[0],
                               (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
    }
    return TPORT_STATUS_OK;
}

static tport_status run(tport_graph *g, sched_view *sv, const tport_active_backend **chosen) {
    for (int start = 0; start < g->n_nodes;) {
        int end = start + 1;
        while (end < g->n_nodes && chosen[end] == chosen[start])
            end++;
        const tport_active_backend *b = chosen[start];
        tport_graph_view part = sv->view;
        part.nodes = sv->nodes + start;
        part.n_nodes = end - start;
        tport_log(TPORT_LOG_DEBUG, "sched: nodes %d..%d on %s", start, end - 1, b->name);
        tport_clear_error();
        tport_status st = b->api->compute(b->state, 0, &part);
        if (st != TPORT_STATUS_OK) {
            char why[400];
            snprintf(why, sizeof why, "%s", tport_last_error());
            /* a plug-in may return a code outside the known ids */
            tport_status code = st > 0 && st <= TPORT_STATUS_NOT_ADDRESSABLE ? st : TPORT_STATUS_ERROR;
            return tport_error(code, "backend '%s' failed on nodes %d..%d (status %d): %s", b->name, start,
                               end - 1, (int)st, why[0] ? why : tport_status_name(st));
        }
        const char *name = intern_name(b->name);
        for (int p = start; p < end; p++)
            g->node_backend[p] = name;
        start = end;
    }
    return TPORT_STATUS_OK;
}

tport_status tport_graph_compute(tport_graph *g, const tport_compute_params *params) {
    if (!g)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "compute: NULL graph");
    tport_status st = tport_graph_plan(g);
    if (st)
        return st;
    const char **names = realloc(g->node_backend, (size_t)(g->n_nodes ? g->n_nodes : 1) * sizeof *names);
    if (!names)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    g->node_backend = names;
    memset(names, 0, (size_t)g->n_nodes * sizeof *names);
    if (!g->n_nodes)
        return TPORT_STATUS_OK;

    int n_threads = params && params->n_threads > 0 ? params->n_threads : default_threads();
    sched_view sv;
    st = sched_view_build(g, n_threads, &sv);
    if (st)
        return st;
    const tport_active_backend **chosen = calloc((size_t)g->n_nodes, sizeof *chosen);
    if (!chosen) {
        sched_view_free(&sv);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    pthread_mutex_lock(&compute_lock);
    st = assign(g, &sv.view, params ? params->backend : NULL, chosen);
    if (!st)
        st = run(g, &sv, chosen);
    pthread_mutex_unlock(&compute_lock);
    free(chosen);
    sched_view_free(&sv);
    return st;
}
