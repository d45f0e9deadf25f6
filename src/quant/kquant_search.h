/* The scale searches of ggml's k-quant reference quantizers
 * (make_qx_quants, make_q3_quants, make_qkx2_quants), reproduced with
 * ggml's exact float operation order so the results are bit-identical. */
#ifndef TPORT_QUANT_KQUANT_SEARCH_H
#define TPORT_QUANT_KQUANT_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

/* Symmetric: L[i] in [0, 2*nmax), returns the scale.  rmse_type 1 weights
 * errors by x^2 (the only mode the reference quantizers use); qw, when not
 * NULL, gives the weights instead. */
float tport_make_qx_quants(int n, int nmax, const float *x, int8_t *L, int rmse_type, const float *qw);
/* Symmetric with an iterative refinement (Q3_K): L[i] in [0, 2*nmax). */
float tport_make_q3_quants(int n, int nmax, const float *x, int8_t *L, bool do_rmse);
/* Asymmetric scale + min: L[i] in [0, nmax]; *the_min receives -min. */
float tport_make_qkx2_quants(int n, int nmax, const float *x, const float *weights, uint8_t *L,
                             float *the_min, uint8_t *Laux, float rmin, float rdelta, int nstep,
                             bool use_mad);

#endif
