/* Quantized dot-product kernels of the CPU backend (backends/cpu/quant/).
 * mul_mat converts a row of activations to the weight type's vec_dot_type
 * (tport_type_info.vec_dot_type, through the host's from_float) and calls
 * the kernel; types without a kernel fall back to dequantize + f32 dot.
 *
 * Pairs (weights x activations), block layouts as today's ggml:
 *   q4_0, q5_0, q8_0, iq4_nl, mxfp4           x q8_0 {f16 d; i8 qs[32]}
 *   nvfp4, q1_0, q2_0 (a file each: dot_*.c) x q8_0
 *   q4_1, q5_1                                x q8_1 {f16 d; f16 s; i8 qs[32]}
 *   q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs      x q8_K {f32 d; i8 qs[256]; i16 bsums[16]}
 *   iq2_xxs, iq2_xs, iq2_s, iq3_xxs, iq3_s,
 *   iq1_s, iq1_m, tq1_0, tq2_0                x q8_K
 *   historical: q4_0_qnt0/qnt1, q5_0_qnt0, q8_0_qnt1, q4_2_qnt0 x q8_0;
 *               q4_1_qnt0/qnt1, q5_1_qnt0, q4_3_qnt0        x q8_1 */
#ifndef TPORT_CPU_QUANT_H
#define TPORT_CPU_QUANT_H

#include <stdint.h>

#include "tport/backend.h"

/* *s = dot(x[0..n), y[0..n)) where x is a row of `type` and y a row of its
 * vec_dot_type; n is a multiple of both block sizes. */
typedef void (*cpu_vec_dot_fn)(int64_t n, float *s, const void *x, const void *y);

/* The fastest kernel this build has for `type`, or NULL: AVX-512, AVX2 or
 * SSE2 versions when compiled with those instruction sets, else scalar.
 * A prompt batch of a type with no tiled kernel (cpu_tile_kinds.c; NVFP4,
 * Q1_0, Q2_0 ...) calls it once per output too. */
cpu_vec_dot_fn cpu_vec_dot_for(tport_type_id type);

/* The portable scalar kernel for `type`, or NULL (tests and benchmarks
 * compare the SIMD kernels against it). */
cpu_vec_dot_fn cpu_vec_dot_scalar_for(tport_type_id type);

/* s[r] = dot(x[r], y) for four rows of `type` against one y, each bit for
 * bit what cpu_vec_dot_for(type) gives (generation: a tile's rows share
 * y's loads and scales). */
typedef void (*cpu_vec_dot4_fn)(int64_t n, float s[4], const void *const x[4], const void *y);

/* The four-row kernel for `type`, or NULL where this build has none. */
cpu_vec_dot4_fn cpu_vec_dot4_for(tport_type_id type);

/* "avx512", "avx2", "sse2" or "scalar": the best instruction set compiled in. */
const char *cpu_vec_dot_isa(void);

/* Converts n activations (a multiple of 32) to Q8_0 or Q8_1 exactly as
 * llama.cpp's CPU backend does on x86 with AVX (id = 127/amax, rounding
 * half to even; see quant/act_quant.c), so that the quantized kernels see
 * the bytes llama.cpp's see.  Returns false, writing nothing, for other
 * types and in builds without AVX2 + F16C (where llama.cpp, too, uses the
 * reference quantizer: the caller then uses the host's from_float).  Q8_K
 * (n a multiple of 256) in those builds too, byte for byte the reference
 * quantizer's, which is what llama.cpp's x86 backend uses for it. */
bool cpuq_quantize_act(tport_type_id vec_dot_type, const float *x, void *y, int64_t n);
/* The same bytes without intrinsics, in every build (for tests). */
bool cpuq_quantize_act_scalar(tport_type_id vec_dot_type, const float *x, void *y, int64_t n);

/* quant/quant_kernels.h's CPUQ(stream_ahead) under the default prefix:
 * cpu_prefetch_init sets it to cpu_stream_ahead (the row kernels of
 * quant/ prefetch that far ahead). */
extern uintptr_t cpuq_stream_ahead;

#endif
