/* The ABI's plain view (backend.h) of an internal graph. */
#ifndef TPORT_SCHED_GRAPH_VIEW_H
#define TPORT_SCHED_GRAPH_VIEW_H

#include "core/tensor.h"
#include "tport/backend.h"

typedef struct sched_view {
    tport_graph_view view;          /* nodes/n_nodes set per backend run */
    tport_tensor_view *records;     /* one per graph tensor              */
    const tport_tensor_view **ptrs; /* records[i] addresses              */
    int32_t *nodes;                 /* every compute node's tensor index */
} sched_view;

/* Builds the view of g (planned, data resolved).  Release with
 * sched_view_free. */
tport_status sched_view_build(const tport_graph *g, int n_threads, sched_view *out);
void sched_view_free(sched_view *v);

/* A copy of v whose records hold no host address (what a device with
 * memory of its own is asked supports_op with). */
tport_status sched_view_blind(const sched_view *v, sched_view *out);

#endif
