/* Shared between the files of the blas backend (never installed). */
#ifndef TPORT_BLAS_INTERNAL_H
#define TPORT_BLAS_INTERNAL_H

#include <tport/backend.h>

/* The host table bound by the last entry call (read-only afterwards). */
extern const tport_host_api *blas_host;

/* One instance: everything init creates lives here, nothing in globals. */
typedef struct blas_state {
    int64_t min_batch;     /* smallest src1->ne[1] worth a BLAS call        */
    bool take_f32;         /* F32 weights (see f32_better_on_cpu)           */
    bool take_f16;         /* F16 weights too (TPORT_BLAS_F16=1)            */
    int64_t scratch_max;   /* bound of the F16 conversion scratch, floats   */
    float *scratch;        /* F16 weight rows converted to F32              */
    int64_t scratch_floats;
    int64_t nodes_computed;
} blas_state;

/* Default bound of the conversion scratch: F16 weights are converted in row
 * chunks of at most this many floats (16 MiB), whatever the matrix size.
 * TPORT_BLAS_SCRATCH_FLOATS overrides it (tests use it to force chunking). */
#define BLAS_SCRATCH_MAX_FLOATS ((int64_t)4 << 20)

/* Default of TPORT_BLAS_MIN_BATCH: below this many columns of src1 (tokens)
 * the CPU backend's own kernels are as fast, so the node is declined. */
#define BLAS_DEFAULT_MIN_BATCH 32

bool blas_supports_mul_mat(const blas_state *s, const tport_graph_view *g, int32_t node);
tport_status blas_mul_mat(blas_state *s, const tport_graph_view *g, int32_t node);

#endif
