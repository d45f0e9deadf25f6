/* Turning a graph message back into a tport_graph_view over the helper's
 * mappings of the shared regions, checking every count, index, offset and
 * length first (the host is trusted no more than it trusts us). */
#ifndef TPORT_HELPER_GRAPH_H
#define TPORT_HELPER_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isolate/protocol.h"
#include "tport/backend.h"

/* A region: shared memory mapped here (base), or a buffer of the plug-in
 * (device: handle, and base its host pointer if buffer_alloc gave one). */
typedef struct helper_region {
    unsigned char *base;
    uint64_t size;
    void *map_base; /* what to munmap (a file mapping may start before base) */
    uint64_t map_len;
    tport_buffer handle;
    bool device;
} helper_region;

typedef struct helper_graph {
    tport_graph_view view;
    tport_tensor_view *recs;
    const tport_tensor_view **ptrs;
    int32_t *nodes;
    char (*names)[ISO_NAME_MAX];
    unsigned char *params;
    size_t cap_tensors, cap_nodes, cap_params;
} helper_graph;

/* Decodes msg (size bytes).  for_supports: tensors without a region get a
 * dummy address with the host's alignment (supports_op must not read data).
 * False with a reason when anything is out of bounds. */
bool helper_graph_decode(helper_graph *g, const unsigned char *msg, size_t size, const helper_region *regions,
                         uint32_t n_regions, bool for_supports, char *why, size_t cap);
void helper_graph_free(helper_graph *g);

#endif
