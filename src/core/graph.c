/* Graphs: every tensor a set of results depends on, in topological order,
 * and the compute nodes among them. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tensor.h"

#define MAX_DEPTH 100000

tport_graph *tport_graph_new(tport_ctx *ctx) {
    tport_graph *g = calloc(1, sizeof *g);
    if (!g) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory creating a graph");
        return NULL;
    }
    g->ctx = ctx;
    return g;
}

void tport_graph_free(tport_graph *g) {
    if (!g)
        return;
    free(g->tensors);
    free(g->is_output);
    free(g->node_index);
    free(g->set_keys);
    free(g->set_vals);
    free(g->offsets);
    tport_graph_release_arena(g);
    free(g->node_backend);
    free(g);
}

void tport_graph_release_arena(tport_graph *g) {
    if (!g->arena_lent)
        free(g->arena);
    g->arena = NULL;
    g->arena_size = 0;
    g->arena_lent = false;
}

static size_t hash_ptr(const void *p, int cap) {
    uintptr_t x = (uintptr_t)p;
    x ^= x >> 17;
    x *= (uintptr_t)0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return (size_t)x & (size_t)(cap - 1);
}

int tport_graph_find(const tport_graph *g, const tport_tensor *t) {
    if (!g || !g->set_cap || !t)
        return -1;
    for (size_t h = hash_ptr(t, g->set_cap);; h = (h + 1) & (size_t)(g->set_cap - 1)) {
        if (!g->set_keys[h])
            return -1;
        if (g->set_keys[h] == t)
            return g->set_vals[h];
    }
}

static tport_status set_insert(tport_graph *g, tport_tensor *t, int idx) {
    if ((g->n_tensors + 1) * 2 > g->set_cap) {
        int cap = g->set_cap ? g->set_cap * 2 : 64;
        tport_tensor **keys = calloc((size_t)cap, sizeof *keys);
        int *vals = calloc((size_t)cap, sizeof *vals);
        if (!keys || !vals) {
            free(keys);
            free(vals);
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory building a graph");
        }
        for (int i = 0; i < g->set_cap; i++) {
            if (!g->set_keys[i])
                continue;
            size_t h = hash_ptr(g->set_keys[i], cap);
            while (keys[h])
                h = (h + 1) & (size_t)(cap - 1);
            keys[h] = g->set_keys[i];
            vals[h] = g->set_vals[i];
        }
        free(g->set_keys);
        free(g->set_vals);
        g->set_keys = keys;
        g->set_vals = vals;
        g->set_cap = cap;
    }
    size_t h = hash_ptr(t, g->set_cap);
    while (g->set_keys[h])
        h = (h + 1) & (size_t)(g->set_cap - 1);
    g->set_keys[h] = t;
    g->set_vals[h] = idx;
    return TPORT_STATUS_OK;
}

static tport_status append(tport_graph *g, tport_tensor *t) {
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? g->cap_tensors * 2 : 64;
        tport_tensor **p = realloc(g->tensors, (size_t)cap * sizeof *p);
        if (!p)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory building a graph");
        g->tensors = p;
        uint8_t *o = realloc(g->is_output, (size_t)cap);
        if (!o)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory building a graph");
        g->is_output = o;
        g->cap_tensors = cap;
    }
    if (t->op != TPORT_OP_NONE && g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? g->cap_nodes * 2 : 64;
        int *p = realloc(g->node_index, (size_t)cap * sizeof *p);
        if (!p)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory building a graph");
        g->node_index = p;
        g->cap_nodes = cap;
    }
    tport_status st = set_insert(g, t, g->n_tensors);
    if (st)
        return st;
    if (t->op != TPORT_OP_NONE)
        g->node_index[g->n_nodes++] = g->n_tensors;
    g->is_output[g->n_tensors] = 0;
    g->tensors[g->n_tensors++] = t;
    return TPORT_STATUS_OK;
}

/* Depth-first: sources before the tensor, in source order. */
static tport_status visit(tport_graph *g, tport_tensor *t, int depth) {
    if (tport_graph_find(g, t) >= 0)
        return TPORT_STATUS_OK;
    if (depth > MAX_DEPTH)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "graph deeper than %d tensors", MAX_DEPTH);
    for (int i = 0; i < TPORT_CORE_MAX_SRC; i++) {
        if (t->src[i]) {
            tport_status st = visit(g, t->src[i], depth + 1);
            if (st)
                return st;
        }
    }
    if (t->view_src) {
        tport_status st = visit(g, t->view_src, depth + 1);
        if (st)
            return st;
    }
    return append(g, t);
}

/* t and what it reads into g; `caller` names the function in messages */
static tport_status add_nodes(tport_graph *g, tport_tensor *t, const char *caller) {
    if (!g || !t) {
        if (!g || !tport_last_error()[0])
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: NULL %s", caller, g ? "tensor" : "graph");
        return TPORT_STATUS_INVALID_ARGUMENT;
    }
    tport_status st = visit(g, t, 0);
    if (!st)
        g->planned = false;
    return st;
}

tport_status tport_graph_add(tport_graph *g, tport_tensor *out) {
    tport_status st = add_nodes(g, out, "graph_add");
    if (!st)
        g->is_output[tport_graph_find(g, out)] = 1;
    return st;
}

tport_status tport_graph_expand(tport_graph *g, tport_tensor *t) {
    return add_nodes(g, t, "graph_expand");
}

bool tport_graph_is_output(const tport_graph *g, int i) {
    return g && i >= 0 && i < g->n_tensors && g->is_output[i];
}

int tport_graph_n_nodes(const tport_graph *g) {
    return g ? g->n_nodes : 0;
}

tport_tensor *tport_graph_node(const tport_graph *g, int i) {
    return g && i >= 0 && i < g->n_nodes ? g->tensors[g->node_index[i]] : NULL;
}

const char *tport_graph_node_backend(const tport_graph *g, int i) {
    return g && g->node_backend && i >= 0 && i < g->n_nodes ? g->node_backend[i] : NULL;
}

size_t tport_graph_peak_bytes(const tport_graph *g) {
    return g ? g->peak : 0;
}
