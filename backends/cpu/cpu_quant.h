/* Quantized dot-product kernels of the CPU backend (backends/cpu/quant/).
 * mul_mat converts a row of activations to the weight type's vec_dot_type
 * (tport_type_info.vec_dot_type, through the host's from_float) and calls
 * the kernel; types without a kernel fall back to dequantize + f32 dot. */
#ifndef TPORT_CPU_QUANT_H
#define TPORT_CPU_QUANT_H

#include <stdint.h>

#include "tport/backend.h"

/* *s = dot(x[0..n), y[0..n)) where x is a row of `type` and y a row of its
 * vec_dot_type; n is a multiple of both block sizes. */
typedef void (*cpu_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);

/* The fastest kernel this build has for `type`, or NULL. */
cpu_vec_dot_fn cpu_vec_dot_for(tport_type_id type);

#endif
