/* Builds the ABI graph view from an internal graph.  Views (view, reshape,
 * permute, transpose) appear as data-only records with op NONE; the cpy
 * node is a record writing into its destination's memory. */
#include "graph_view.h"
#include "core/view_srcs.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static _Alignas(64) unsigned char placeholder[64];

tport_status sched_view_build(const tport_graph *g, int n_threads, sched_view *out) {
    memset(out, 0, sizeof *out);
    size_t n = (size_t)(g->n_tensors ? g->n_tensors : 1);
    out->records = calloc(n, sizeof *out->records);
    out->ptrs = calloc(n, sizeof *out->ptrs);
    out->nodes = calloc((size_t)(g->n_nodes ? g->n_nodes : 1), sizeof *out->nodes);
    if (!out->records || !out->ptrs || !out->nodes) {
        sched_view_free(out);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory building a graph view");
    }
    for (int i = 0; i < g->n_tensors; i++) {
        const tport_tensor *t = g->tensors[i];
        tport_tensor_view *r = &out->records[i];
        r->struct_size = sizeof *r;
        r->op = t->op;
        r->type = t->type;
        tport_view_clear_srcs(r);
        for (int s = 0; s < TPORT_CORE_MAX_SRC; s++) {
            /* a view's sources are a host matter; cpy's src1 is its destination */
            if (t->op == TPORT_OP_NONE || (t->op == TPORT_OP_CPY && s > 0) || !t->src[s])
                continue;
            int32_t at = tport_graph_find(g, t->src[s]);
            if (s < TPORT_MAX_SRC)
                r->src[s] = at;
            else
                r->src_more[s - TPORT_MAX_SRC] = at;
        }
        for (int d = 0; d < TPORT_MAX_DIMS; d++) {
            r->ne[d] = t->ne[d];
            r->nb[d] = t->nb[d];
        }
        r->data = t->data;
        /* a leaf only a device holds (a KV cache), and a node writing into
         * one, have no host copy until one is staged; a host backend is
         * asked about them with an address it must not read (as at
         * load-time placement), so that a node the device declines still
         * has a backend: the staging gives it the leaf's bytes */
        const tport_tensor *own = t->view_src ? t->view_src : t;
        if (!r->data && own->res.backend)
            r->data = placeholder;
        r->params = t->params_size ? t->params : NULL;
        r->params_size = t->params_size;
        r->flags = t->flags & (TPORT_TENSOR_WEIGHT | TPORT_TENSOR_INPUT);
        if (g->is_output[i])
            r->flags |= TPORT_TENSOR_OUTPUT;
        if (t->op == TPORT_OP_NONE && !(t->flags & (TPORT_TENSOR_WEIGHT | TPORT_TENSOR_IS_VIEW)))
            r->flags |= TPORT_TENSOR_INPUT;
        r->name = t->name;
        out->ptrs[i] = r;
    }
    for (int i = 0; i < g->n_nodes; i++)
        out->nodes[i] = g->node_index[i];
    out->view.struct_size = sizeof out->view;
    out->view.n_tensors = g->n_tensors;
    out->view.tensors = out->ptrs;
    out->view.n_nodes = g->n_nodes;
    out->view.nodes = out->nodes;
    out->view.n_threads = n_threads;
    return TPORT_STATUS_OK;
}

void sched_view_free(sched_view *v) {
    free(v->records);
    free(v->ptrs);
    free(v->nodes);
    memset(v, 0, sizeof *v);
}

tport_status sched_view_blind(const sched_view *v, sched_view *out) {
    memset(out, 0, sizeof *out);
    size_t n = (size_t)(v->view.n_tensors ? v->view.n_tensors : 1);
    out->records = malloc(n * sizeof *out->records);
    out->ptrs = malloc(n * sizeof *out->ptrs);
    out->nodes = NULL;
    if (!out->records || !out->ptrs) {
        sched_view_free(out);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory building a graph view");
    }
    for (int32_t i = 0; i < v->view.n_tensors; i++) {
        out->records[i] = v->records[i];
        out->records[i].data = NULL;
        out->ptrs[i] = &out->records[i];
    }
    out->view = v->view;
    out->view.tensors = out->ptrs;
    return TPORT_STATUS_OK;
}
