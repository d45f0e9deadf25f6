/* Workspaces: memory for graph intermediates that outlives the graphs.
 *
 * A model evaluation builds a new graph per token; with the planner's own
 * allocation every graph took its arena from malloc and gave it back, and
 * glibc's adaptive mmap threshold then moved those arenas onto the heap,
 * where they stayed as fragments (peak RSS depended on what else the
 * process had freed).  A workspace keeps one block and hands it to each
 * graph in turn, growing it with headroom as the context grows. */
#include <stdlib.h>

#include "error.h"
#include "tensor.h"

struct tport_workspace {
    void *data;
    size_t size;
};

tport_workspace *tport_workspace_new(void) {
    tport_workspace *ws = calloc(1, sizeof *ws);
    if (!ws)
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory creating a workspace");
    return ws;
}

void tport_workspace_free(tport_workspace *ws) {
    if (!ws)
        return;
    free(ws->data);
    free(ws);
}

void *tport_workspace_reserve(tport_workspace *ws, size_t bytes) {
    if (bytes <= ws->size)
        return ws->data;
    if (bytes > SIZE_MAX / 2)
        return NULL; /* no such allocation can succeed; the sums below stay in range */
    /* a quarter more, in whole MiB (a multiple of the alignment): an
     * evaluation's intermediates grow by a little every 32 tokens of context */
    const size_t mib = (size_t)1 << 20;
    size_t want = (bytes + bytes / 4 + mib - 1) / mib * mib;
    free(ws->data);
    ws->data = aligned_alloc(TPORT_DATA_ALIGN, want);
    ws->size = ws->data ? want : 0;
    return ws->data;
}

tport_status tport_graph_set_workspace(tport_graph *g, tport_workspace *ws) {
    if (!g)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "set_workspace: NULL graph");
    if (g->planned)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "set_workspace: the graph is already planned");
    g->workspace = ws;
    return TPORT_STATUS_OK;
}
