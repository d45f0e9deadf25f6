/* One evaluation's view of where every tensor's bytes are valid, and the
 * staged copies that keep it so (DESIGN.md, "Scheduling", step 4).
 *
 * Every storage owner (a tensor that is not a view) has a bit per memory
 * space saying whether its bytes there are current.  Before a split runs
 * on a backend, each operand is made valid in that backend's space (or in
 * host memory for a device that reads it directly) by at most one download
 * into host memory and one upload; a node's result is then valid only where
 * it was computed.  The same offsets the memory planner chose for the host
 * arena locate an intermediate in every device's compute buffer, so a copy
 * always has a place that nothing else uses at that moment. */
#ifndef TPORT_SCHED_STAGE_H
#define TPORT_SCHED_STAGE_H

#include "core/tensor.h"
#include "devices.h"
#include "graph_view.h"

typedef struct stage_run {
    tport_graph *g;
    const sched_view *base;   /* host view: data pointers resolved       */
    int n;                    /* g->n_tensors                             */
    int *owner;               /* per tensor: index of its storage owner   */
    uint32_t *valid;          /* per owner: bit per space                 */
    uint8_t *written;         /* per owner: written by this evaluation    */
    uint64_t *staged;         /* per owner x space: offset of a staged leaf
                                 in that space's compute buffer, or ~0    */
    void **shadow;            /* per owner: host copy of a device-only leaf */
    void **apart;             /* per tensor: host scratch of a view written
                                 apart from its device-resident leaf     */
    int *pending;             /* tensors whose scratch awaits its upload */
    int n_pending;
    uint64_t staged_end[SCHED_MAX_SPACES];
    uint64_t need[SCHED_MAX_SPACES]; /* compute buffer bytes per space    */
    tport_sched_stats stats;
} stage_run;

tport_status stage_begin(stage_run *r, tport_graph *g, const sched_view *base);
void stage_end(stage_run *r);

/* Reserves staging room: a leaf that a node on `space` reads or writes but
 * that does not live there gets a slot after the arena. */
void stage_reserve_leaf(stage_run *r, int tensor, int space);
/* A split runs on `space`: its compute buffer must hold the arena and the
 * staged leaves (need[space]; 0 for spaces no split uses). */
void stage_use_space(stage_run *r, int space);

/* Makes operand `tensor` readable by backend b in `space`; *from receives
 * the space whose copy b reads (the host for a HOST_READABLE device). */
tport_status stage_make_readable(stage_run *r, int tensor, int space, const tport_active_backend *b, int *from);
/* Before a node writes into `tensor`'s owner from `space` (partial writes
 * into a leaf need its current bytes there).  A host node writing a
 * contiguous view of a leaf that lives on a device (new rows of a KV
 * cache) writes into scratch instead, uploaded to the view's place by
 * stage_flush_apart after its split, unless `read_later`: a later node
 * of the same split reads the leaf, which then comes to host memory
 * whole. */
tport_status stage_prepare_write(stage_run *r, int tensor, int space, bool read_later);
/* After a host split: the views written apart go to their devices. */
tport_status stage_flush_apart(stage_run *r);
/* Whether node writes into a leaf that lives on a device (the question
 * stage_prepare_write's read_later is asked for). */
bool stage_writes_device_leaf(const stage_run *r, int tensor);
/* tensor's storage owner */
int stage_owner(const stage_run *r, int tensor);
void stage_mark_written(stage_run *r, int tensor, int space);

/* Sets rec's data/buffer/offset to tensor's location in `space`, as seen by
 * backend b (a host-memory backend sees its own re-encoded weights). */
void stage_locate(const stage_run *r, int tensor, int space, const tport_active_backend *b, tport_tensor_view *rec);

/* After the last split: outputs valid in host memory, written leaves valid
 * where they live. */
tport_status stage_finish(stage_run *r);

#endif
