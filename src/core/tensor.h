/* Internal tensor, context and graph records.  Only src/ sees these; a
 * backend sees tport_tensor_view (backend.h) built by src/sched. */
#ifndef TPORT_CORE_TENSOR_H
#define TPORT_CORE_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/tport.h"

#define TPORT_MAX_PARAMS 64
#define TPORT_MAX_NAME 64
#define TPORT_DATA_ALIGN 64
#include "core/view_srcs.h"

/* Internal flag bits above the ABI's TPORT_TENSOR_* bits. */
enum {
    TPORT_TENSOR_IS_VIEW = 1u << 16, /* shares view_src's data */
};

/* A leaf kept in a backend's own memory (ABI 1.1): a weight uploaded at
 * load, or a KV cache allocated on the device that runs attention.  The
 * leaf's `data` stays the plain host copy (the file's bytes) when there is
 * one, so any other backend, or the host after the device is lost, can
 * still read it; a device-only leaf (a KV cache) has data == NULL. */
struct tport_active_backend;
typedef struct tport_residency {
    const struct tport_active_backend *backend; /* NULL: host memory only */
    tport_buffer buffer;
    uint64_t offset;
    void *host;       /* host address of the resident bytes, if any */
    uint64_t bytes;   /* what the backend took for it */
} tport_residency;

struct tport_tensor {
    tport_type_id type;
    int64_t ne[TPORT_MAX_DIMS];
    size_t nb[TPORT_MAX_DIMS];       /* byte strides (ggml convention) */
    tport_op_id op;                  /* TPORT_OP_NONE for leaves and views */
    struct tport_tensor *src[TPORT_CORE_MAX_SRC];
    uint8_t params[TPORT_MAX_PARAMS];
    uint32_t params_size;
    void *data;
    struct tport_tensor *view_src;   /* the tensor that owns the data, never a view */
    size_t view_offs;                /* byte offset into view_src's data */
    char name[TPORT_MAX_NAME];
    uint32_t flags;                  /* TPORT_TENSOR_* and internal bits */
    tport_ctx *ctx;
    tport_residency res;             /* leaves only; see above */
    /* a weight placed by an override (--place): the nodes reading it run
     * on this backend when it can run them, whatever the preference */
    const struct tport_active_backend *pinned;
};

/* Creates a tensor record with contiguous strides and no data. */
tport_tensor *tport_tensor_record(tport_ctx *ctx, tport_type_id type, int n_dims, const int64_t *ne);
/* Bytes per block and elements per block of a type (0 if unknown). */
size_t tport_type_block_bytes(tport_type_id type);
int64_t tport_type_block_size(tport_type_id type);
const char *tport_type_name(tport_type_id type);
bool tport_tensor_is_view(const tport_tensor *t);
/* True if t's ops produce data (op != NONE), including in-place views
 * such as cpy's result. */
bool tport_tensor_is_op(const tport_tensor *t);

/* Graph internals used by the memory planner and the scheduler. */
struct tport_graph {
    tport_ctx *ctx;
    tport_tensor **tensors;  /* every tensor reached, topological order */
    uint8_t *is_output;      /* per tensor: added with tport_graph_add */
    int n_tensors, cap_tensors;
    int *node_index;         /* compute nodes: indices into tensors[]  */
    int n_nodes, cap_nodes;
    /* pointer -> index hash set over tensors[] */
    tport_tensor **set_keys;
    int *set_vals;
    int set_cap;
    /* memory plan */
    bool planned;
    size_t *offsets;         /* per tensor: offset in arena, SIZE_MAX if none */
    size_t peak;
    void *arena;
    size_t arena_size;
    tport_workspace *workspace; /* lends the arena when set (workspace.c) */
    bool arena_lent;            /* arena is the workspace's, not ours      */
    const char **node_backend; /* per node, after compute */
    tport_sched_stats stats;   /* what the last compute moved, see tport.h */
};

/* Adds t's node, after what it reads, without making t a result: a model
 * places nodes side by side that a backend can then run together. */
tport_status tport_graph_expand(tport_graph *g, tport_tensor *t);
/* True if tensors[i] is one of the graph's results (kept after compute). */
bool tport_graph_is_output(const tport_graph *g, int i);
/* Index of t in g->tensors, or -1. */
int tport_graph_find(const tport_graph *g, const tport_tensor *t);
/* Plans intermediate memory (no-op if already planned) and resolves every
 * tensor's data pointer.  Returns a status with the message set. */
tport_status tport_graph_plan(tport_graph *g);
/* Moves view t (op NONE) to offset bytes into its view_src, bounds
 * checked; a planned graph finds the new place at its next compute, and a
 * cpy into t follows it. */
tport_status tport_view_move(tport_tensor *t, size_t offset);
/* Frees the graph's arena if it is its own (not a workspace's). */
void tport_graph_release_arena(tport_graph *g);
/* ws's block, grown to at least bytes (contents not kept), or NULL when
 * out of memory. */
void *tport_workspace_reserve(tport_workspace *ws, size_t bytes);

#endif
