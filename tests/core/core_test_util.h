/* Helpers for the core tests: random leaves, element access by strides in
 * double precision, comparisons. */
#ifndef TPORT_CORE_TEST_UTIL_H
#define TPORT_CORE_TEST_UTIL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "tport/tport.h"

static unsigned long long ct_seed = 0x1234567ull;

static inline size_t ct_offset(const tport_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    return (size_t)i0 * tport_tensor_nb(t, 0) + (size_t)i1 * tport_tensor_nb(t, 1) +
           (size_t)i2 * tport_tensor_nb(t, 2) + (size_t)i3 * tport_tensor_nb(t, 3);
}

static inline double ct_get(const tport_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const uint8_t *p = (const uint8_t *)tport_tensor_data(t) + ct_offset(t, i0, i1, i2, i3);
    switch (tport_tensor_type(t)) {
    case TPORT_TYPE_F32: {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    case TPORT_TYPE_F16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return tport_fp16_to_fp32(h);
    }
    case TPORT_TYPE_BF16: {
        uint16_t h;
        memcpy(&h, p, 2);
        return tport_bf16_to_fp32(h);
    }
    case TPORT_TYPE_I32: {
        int32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    default:
        return NAN;
    }
}

static inline void ct_set(tport_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    uint8_t *p = (uint8_t *)tport_tensor_data(t) + ct_offset(t, i0, i1, i2, i3);
    switch (tport_tensor_type(t)) {
    case TPORT_TYPE_F32: {
        float f = (float)v;
        memcpy(p, &f, 4);
        break;
    }
    case TPORT_TYPE_F16: {
        uint16_t h = tport_fp32_to_fp16((float)v);
        memcpy(p, &h, 2);
        break;
    }
    case TPORT_TYPE_BF16: {
        uint16_t h = tport_fp32_to_bf16((float)v);
        memcpy(p, &h, 2);
        break;
    }
    case TPORT_TYPE_I32: {
        int32_t x = (int32_t)v;
        memcpy(p, &x, 4);
        break;
    }
    default:
        break;
    }
}

#define CT_FOR_EACH(t, i0, i1, i2, i3)                                 \
    for (int64_t i3 = 0; i3 < tport_tensor_ne(t, 3); i3++)             \
        for (int64_t i2 = 0; i2 < tport_tensor_ne(t, 2); i2++)         \
            for (int64_t i1 = 0; i1 < tport_tensor_ne(t, 1); i1++)     \
                for (int64_t i0 = 0; i0 < tport_tensor_ne(t, 0); i0++)

/* Fills every element (through the strides) with uniform values in [-r, r). */
static inline void ct_fill(tport_tensor *t, double r) {
    CT_FOR_EACH(t, i0, i1, i2, i3)
    ct_set(t, i0, i1, i2, i3, r * test_rng_uniform(&ct_seed));
}

static inline tport_tensor *ct_rand(tport_ctx *ctx, tport_type_id type, int64_t ne0, int64_t ne1, int64_t ne2,
                                    int64_t ne3) {
    tport_tensor *t = tport_new_tensor_4d(ctx, type, ne0, ne1, ne2, ne3);
    if (t)
        ct_fill(t, 1.0);
    return t;
}

/* A tensor of shape [ne0, ne1, ne2, ne3] whose dims 0 and 1 are swapped in
 * memory (a transposed view of a random base): not contiguous. */
static inline tport_tensor *ct_rand_transposed(tport_ctx *ctx, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3) {
    tport_tensor *base = ct_rand(ctx, TPORT_TYPE_F32, ne1, ne0, ne2, ne3);
    return tport_transpose(ctx, base);
}

/* Builds and computes the graph of `out`; NULL (and a message) on failure.
 * Outputs live in the graph's arena: compare before tport_graph_free. */
static inline tport_graph *ct_run(tport_ctx *ctx, tport_tensor *out, int n_threads) {
    if (!out) {
        fprintf(stderr, "op failed: %s\n", tport_last_error());
        return NULL;
    }
    tport_graph *g = tport_graph_new(ctx);
    tport_status st = tport_graph_add(g, out);
    if (!st) {
        tport_compute_params p = {n_threads, NULL};
        st = tport_graph_compute(g, &p);
    }
    if (st) {
        fprintf(stderr, "compute failed: %s\n", tport_last_error());
        tport_graph_free(g);
        return NULL;
    }
    return g;
}

/* Largest |got - want| / (atol + rtol*|want|) over a tensor; <= 1 passes. */
typedef double (*ct_ref_fn)(const void *ctx, int64_t i0, int64_t i1, int64_t i2, int64_t i3);
static inline double ct_worst(const tport_tensor *got, ct_ref_fn ref, const void *rctx, double atol, double rtol) {
    double worst = 0.0;
    CT_FOR_EACH(got, i0, i1, i2, i3) {
        double want = ref(rctx, i0, i1, i2, i3);
        double g = ct_get(got, i0, i1, i2, i3);
        double e = fabs(g - want) / (atol + rtol * fabs(want));
        if (!(e <= worst))
            worst = isnan(e) ? INFINITY : e;
    }
    return worst;
}

#endif
