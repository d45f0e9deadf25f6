/* A whole graph on several threads: the CPU backend runs all its nodes in
 * one dispatch of its thread pool, with barriers between them, and small
 * nodes on one thread only.  A chain that mixes large (many-thread) and
 * small (one-thread) nodes, and a mul_mat whose activations are first
 * packed by all threads, must give bit for bit the result of one thread,
 * over repeated runs (each op's own accuracy is test_core_ops'). */
#include <stdlib.h>

#include "core_test_util.h"

#define D 256   /* rows of the activations: mul_mat is D x D x T */
#define T 64
#define LAYERS 4

typedef struct net {
    tport_tensor *x, *w[LAYERS], *small_w, *out;
} net;

/* Per layer: h = rms_norm(w x) * 0.5 + x (the mul_mat large, the rest
 * small); the odd layers read x through a transposed copy, so that the
 * mul_mat packs it first.  At the end a small mul_mat. */
static tport_tensor *build(tport_ctx *ctx, net *n) {
    n->x = ct_rand(ctx, TPORT_TYPE_F32, D, T, 1, 1);
    tport_tensor *h = n->x;
    for (int l = 0; l < LAYERS; l++) {
        n->w[l] = ct_rand(ctx, TPORT_TYPE_F32, D, D, 1, 1);
        tport_tensor *in = h;
        if (l % 2) /* a non-dense b: packed into scratch by the threads */
            in = tport_transpose(ctx, tport_cont(ctx, tport_transpose(ctx, h)));
        tport_tensor *m = tport_mul_mat(ctx, n->w[l], in);
        h = tport_add(ctx, tport_scale(ctx, tport_rms_norm(ctx, m, 1e-5f), 0.5f), h);
    }
    n->small_w = ct_rand(ctx, TPORT_TYPE_F32, D, 8, 1, 1);
    return tport_mul_mat(ctx, n->small_w, tport_silu(ctx, h));
}

int main(void) {
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    CHECK(ctx, "context");
    if (!ctx)
        return test_finish("test_core_graph_threads");
    net n;
    tport_tensor *out = build(ctx, &n);
    CHECK(out, "build: %s", tport_last_error());
    if (!out) {
        tport_ctx_free(ctx);
        return test_finish("test_core_graph_threads");
    }
    size_t nbytes = tport_tensor_nbytes(out);
    float *first = NULL;
    /* 1 thread first (the reference), then more, several times each */
    static const int threads[] = {1, 2, 3, 4, 2, 2, 2, 2, 3};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        tport_graph *g = ct_run(ctx, out, threads[i]);
        CHECK(g, "compute with %d threads", threads[i]);
        if (!g)
            break;
        if (!first) {
            first = malloc(nbytes);
            memcpy(first, tport_tensor_data(out), nbytes);
            /* the graph computes something: not all zero, all finite */
            int nonzero = 0, finite = 1;
            for (size_t k = 0; k < nbytes / sizeof(float); k++) {
                nonzero |= first[k] != 0.0f;
                finite &= isfinite(first[k]) != 0;
            }
            CHECK(nonzero && finite, "1 thread: the result is %s", finite ? "all zero" : "not finite");
        } else {
            CHECK(!memcmp(first, tport_tensor_data(out), nbytes), "%d threads: the result differs from 1 thread's",
                  threads[i]);
        }
        tport_graph_free(g);
    }
    free(first);
    tport_ctx_free(ctx);
    return test_finish("test_core_graph_threads");
}
