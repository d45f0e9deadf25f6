/* Scheduler services for the rest of src/: asking a backend about one node
 * outside a compute call (the model loader places weights this way). */
#ifndef TPORT_SCHED_SCHED_H
#define TPORT_SCHED_SCHED_H

#include <stdbool.h>

#include "registry/registry.h"

/* True if backend b has a device, a compute slot and accepts node `node`
 * of v.  Serialised with every compute call, as the ABI promises
 * backends one calling thread at a time. */
bool tport_sched_backend_supports(const tport_active_backend *b, const tport_graph_view *v, int32_t node);

#endif
