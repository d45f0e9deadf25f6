/* The case matrix of the numerics tier and how one case is run. */
#ifndef TPORT_REGISTRY_CONFORMANCE_INTERNAL_H
#define TPORT_REGISTRY_CONFORMANCE_INTERNAL_H

#include "conformance.h"

enum { CHECK_DATA_RANDOM = 0, CHECK_DATA_INDICES = 1, CHECK_DATA_POSITIONS = 2 };
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
    check_tensor src[3];
    check_tensor dst;
    unsigned char params[16];
    uint32_t params_size;
    const char *note;
} check_case;

/* Every case of the matrix, in a fixed order: fills up to cap, returns the
 * number there are. */
int check_cases(check_case *out, int cap);

/* Runs one case on the target and the reference. */
void check_run_case(const check_case *c, const tport_backend_api *api, void *state,
                    const tport_backend_api *ref, void *ref_state, tport_check_result *r);

/* Builds a one-node graph for `c` with fresh data (same seed: same data),
 * runs api on it and writes the result as floats into out (n elements).
 * Returns false with a note in r on failure. */
const char *check_op_name(tport_op_id op);

#endif
