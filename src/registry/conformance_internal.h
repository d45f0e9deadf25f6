/* The case matrix of the numerics tier and how one case is run. */
#ifndef TPORT_REGISTRY_CONFORMANCE_INTERNAL_H
#define TPORT_REGISTRY_CONFORMANCE_INTERNAL_H

#include "conformance.h"
#include "registry.h"

/* FACTORS: values in [1, 4) (RoPE frequency factors) */
enum { CHECK_DATA_RANDOM = 0, CHECK_DATA_INDICES = 1, CHECK_DATA_POSITIONS = 2, CHECK_DATA_FACTORS = 3 };
/* operands of a case: src[4] and src_more[0] (ABI 1.3) */
#define CHECK_MAX_SRC 5
enum { CHECK_LAYOUT_DENSE = 0, CHECK_LAYOUT_PADDED = 1, CHECK_LAYOUT_TRANSPOSED = 2 };

typedef struct check_tensor {
    tport_type_id type;
    int64_t ne[TPORT_MAX_DIMS];
    int layout;       /* CHECK_LAYOUT_*: padded rows or dims 0/1 swapped */
    int data;         /* CHECK_DATA_*                                   */
    int64_t limit;    /* indices: values in [0, limit)                  */
} check_tensor;

typedef struct check_case {
    tport_op_id op;
    int n_src;
    check_tensor src[CHECK_MAX_SRC];
    check_tensor dst;
    unsigned char params[48];
    uint32_t params_size;
    const char *note;
} check_case;

/* Every case of the matrix, in a fixed order: fills up to cap, returns the
 * number there are. */
int check_cases(check_case *out, int cap);

typedef struct made_tensor {
    tport_tensor_view view;
    unsigned char *mem;
    size_t bytes;
} made_tensor;

/* A one-node graph of a case: sources, destination, view. */
typedef struct case_graph {
    made_tensor src[CHECK_MAX_SRC];
    made_tensor dst;
    const tport_tensor_view *ptrs[CHECK_MAX_SRC + 1];
    int32_t node;
    tport_graph_view view;
} case_graph;

/* Fresh inputs from a fixed seed (both runs get the same bytes); a nonzero
 * salt gives other bytes for the same case (graph-key replay). */
extern uint64_t check_seed_salt;
bool check_build_graph(const check_case *c, case_graph *g, char *why, size_t cap);
void check_free_graph(case_graph *g);
/* The destination as n floats (malloc'd; NaN where it cannot decode). */
float *check_output_floats(const case_graph *g, int64_t n);

/* A case's tensors in a device's memory (conformance_device.c): with mem
 * NULL or a host-memory backend, nothing is moved. */
typedef struct device_case {
    const tport_backend_mem *mem;
    void *state;
    tport_buffer bufs[CHECK_MAX_SRC + 1];
    int n_bufs;
} device_case;
bool check_device_bind(const tport_backend_mem *mem, void *state, case_graph *g, device_case *d, char *why,
                       size_t cap);
/* Computes (asynchronously where offered, waiting with a timeout) and
 * downloads the destination into g->dst.mem. */
tport_status check_device_compute(const tport_backend_api *api, void *state, const device_case *d, case_graph *g);
void check_device_unbind(device_case *d);

/* Runs one case on the target (through its device memory when mem says it
 * has its own) and the reference. */
void check_run_case(const check_case *c, const tport_backend_api *api, void *state, const tport_backend_mem *mem,
                    const tport_backend_api *ref, void *ref_state, tport_check_result *r);

/* Builds a one-node graph for `c` with fresh data (same seed: same data),
 * runs api on it and writes the result as floats into out (n elements).
 * Returns false with a note in r on failure. */
const char *check_op_name(tport_op_id op);

#endif
