/* Scheduler services for the rest of src/: asking a backend about one node
 * outside a compute call (the model loader places weights this way). */
#ifndef TPORT_SCHED_SCHED_H
#define TPORT_SCHED_SCHED_H

#include <stdbool.h>

#include "core/tensor.h"
#include "registry/registry.h"

/* True if backend b has a device, a compute slot and accepts node `node`
 * of v.  Serialised with every compute call, as the ABI promises
 * backends one calling thread at a time. */
bool tport_sched_backend_supports(const tport_active_backend *b, const tport_graph_view *v, int32_t node);

/* Waits for a ticket of b (TPORT_COMPUTE_TIMEOUT at most); a timeout or a
 * lost device marks b lost. */
tport_status tport_sched_wait(const tport_active_backend *b, tport_ticket ticket);
/* Marks b lost for the rest of the process (it reported its device gone
 * outside an evaluation); returns DEVICE_LOST with "backend NAME lost: why". */
tport_status tport_sched_mark_lost(const tport_active_backend *b, const char *why);
/* True once b reported its device lost (or timed out). */
bool tport_sched_backend_lost(const tport_active_backend *b);

/* Memory of bytes bytes in b's device (TPORT_USAGE_COMPUTE), zero-filled:
 * a KV cache.  *res names it; release with tport_sched_free. */
tport_status tport_sched_alloc(const tport_active_backend *b, uint64_t bytes, tport_residency *res);
void tport_sched_free(tport_residency *res);
/* Gives back the backends' copies of n resident leaves (only those on lost
 * backends if lost_only), under the scheduler's lock so no evaluation sees
 * a half-released leaf; the kept ones are moved to the front.  Returns how
 * many are kept. */
int tport_sched_release(tport_tensor **leaves, int n, bool lost_only);

#endif
