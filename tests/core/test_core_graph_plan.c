/* What the CPU backend plans before it runs a graph (cpu_graph.c):
 * - a norm and the mul by its weight row after it, done in one pass;
 * - one table of cos and sin for all rope nodes with the same positions;
 * - nodes that join the ones before them without a barrier: three
 *   projections of the same activations, side by side in the graph
 *   (tport_graph_expand), the second and third reusing the first's packed
 *   activations;
 * and what it must not do: let a node that reads, through a view of its
 * own, what a copy just wrote (no source link between them, only the
 * memory) start before the copy is done.
 *
 * The same arithmetic is built twice: "planned", so that all of the above
 * applies, and "plain", so that none does (a scale by 1 between the norm
 * and the mul, positions read through a view, the projections where their
 * readers need them).  Both must agree bit for bit on 1 to 4 threads,
 * repeatedly.  The reader of the copied keys takes them transposed, so a
 * thread reads rows the other threads wrote; ThreadSanitizer (CI) reports
 * a missing barrier there even when the timing hides it. */
#include <stdlib.h>

#include "core/tensor.h"
#include "core_test_util.h"
#include "quant/type_table.h"

#define HD 32 /* head size */
#define NH 8  /* heads */
#define D (HD * NH)
#define T 512 /* tokens: enough for every node to run on several threads */

typedef struct inputs {
    tport_tensor *x, *norm_w, *wq, *wk, *wv, *pos;
} inputs;

static tport_tensor *heads(tport_ctx *ctx, tport_tensor *t) {
    const int64_t ne[3] = {HD, NH, T};
    return tport_reshape(ctx, t, 3, ne);
}

static tport_tensor *flat(tport_ctx *ctx, tport_tensor *t) {
    const int64_t ne[2] = {D, T};
    return tport_reshape(ctx, t, 2, ne);
}

/* out = rope(q) + transpose(transpose(cache[:, :T])) + v, with cache[:, :T]
 * = rope(k) written by a copy; the graph in g. */
static tport_tensor *build(tport_ctx *ctx, tport_graph *g, const inputs *in, bool planned) {
    tport_tensor *n = tport_rms_norm(ctx, in->x, 1e-5f);
    if (!planned)
        n = tport_scale(ctx, n, 1.0f);
    tport_tensor *h = tport_mul(ctx, n, in->norm_w);
    tport_tensor *pq = tport_mul_mat(ctx, in->wq, h);
    tport_tensor *pk = tport_mul_mat(ctx, in->wk, h);
    tport_tensor *pv = tport_mul_mat(ctx, in->wv, h);
    if (planned && (tport_graph_expand(g, pq) || tport_graph_expand(g, pk) || tport_graph_expand(g, pv)))
        return NULL;
    /* a view of the positions is not an input the backend can read before
     * the run: no table */
    tport_tensor *pos = planned ? in->pos : tport_view(ctx, in->pos, 1, (const int64_t[]){T}, NULL, 0);
    tport_tensor *q = tport_rope(ctx, heads(ctx, pq), pos, HD, TPORT_ROPE_NORMAL, 10000.0f, 1.0f);
    tport_tensor *k = tport_rope(ctx, heads(ctx, pk), pos, HD, TPORT_ROPE_NORMAL, 10000.0f, 1.0f);

    tport_tensor *cache = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, D, 2 * T);
    if (!cache)
        return NULL;
    ct_fill(cache, 0.0);
    const size_t nb[2] = {sizeof(float), D * sizeof(float)};
    tport_tensor *store = tport_view(ctx, cache, 2, (const int64_t[]){D, T}, nb, 0);
    if (tport_graph_add(g, tport_cpy(ctx, flat(ctx, k), store)))
        return NULL;
    tport_tensor *keys = tport_view(ctx, cache, 2, (const int64_t[]){D, T}, nb, 0);
    tport_tensor *keys_t = tport_cont(ctx, tport_transpose(ctx, keys)); /* [T, D] */
    tport_tensor *back = tport_cont(ctx, tport_transpose(ctx, keys_t));
    tport_tensor *out = tport_add(ctx, tport_add(ctx, flat(ctx, q), back), flat(ctx, pv));
    return tport_graph_add(g, out) ? NULL : out;
}

/* A [D, D] weight of type: random, quantized by the reference quantizer. */
static tport_tensor *weight(tport_ctx *ctx, tport_type_id type) {
    tport_tensor *f = ct_rand(ctx, TPORT_TYPE_F32, D, D, 1, 1);
    if (!f || type == TPORT_TYPE_F32)
        return f;
    tport_tensor *w = tport_new_tensor_2d(ctx, type, D, D);
    if (w)
        tport_traits(type)->from_float(tport_tensor_data(f), tport_tensor_data(w), D * D);
    return w;
}

static bool compute(tport_graph *g, int n_threads) {
    tport_compute_params p = {n_threads, NULL};
    tport_status st = tport_graph_compute(g, &p);
    CHECK(!st, "compute on %d threads: %s", n_threads, tport_last_error());
    return !st;
}

static void run(tport_type_id wtype) {
    tport_ctx *ctx = tport_ctx_new(256u << 20);
    CHECK(ctx, "context");
    if (!ctx)
        return;
    inputs in = {.x = ct_rand(ctx, TPORT_TYPE_F32, D, T, 1, 1),
                 .norm_w = ct_rand(ctx, TPORT_TYPE_F32, D, 1, 1, 1),
                 .wq = weight(ctx, wtype),
                 .wk = weight(ctx, wtype),
                 .wv = weight(ctx, wtype),
                 .pos = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, T)};
    CHECK(in.x && in.norm_w && in.wq && in.wk && in.wv && in.pos, "inputs");
    if (in.pos)
        for (int32_t i = 0; i < T; i++)
            ((int32_t *)tport_tensor_data(in.pos))[i] = 3 * i + 7;
    tport_graph *gp = tport_graph_new(ctx), *gq = tport_graph_new(ctx);
    tport_tensor *planned = build(ctx, gp, &in, true), *plain = build(ctx, gq, &in, false);
    CHECK(planned && plain, "build: %s", tport_last_error());
    size_t nbytes = planned ? tport_tensor_nbytes(planned) : 0;
    float *want = malloc(nbytes ? nbytes : 1);
    if (planned && plain && want && compute(gq, 1)) {
        memcpy(want, tport_tensor_data(plain), nbytes);
        int nonzero = 0;
        for (size_t i = 0; i < nbytes / sizeof(float); i++)
            nonzero |= want[i] != 0.0f && isfinite(want[i]);
        CHECK(nonzero, "the plain graph computes nothing");
        static const int threads[] = {1, 2, 3, 4, 2, 2, 2, 2, 2, 2, 3};
        for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
            if (!compute(gp, threads[i]))
                break;
            CHECK(!memcmp(want, tport_tensor_data(planned), nbytes),
                  "type %d, %d threads: the planned graph differs from the plain one", (int)wtype, threads[i]);
            if (!compute(gq, threads[i]))
                break;
            CHECK(!memcmp(want, tport_tensor_data(plain), nbytes), "type %d, %d threads: the plain graph changed",
                  (int)wtype, threads[i]);
        }
    }
    free(want);
    tport_graph_free(gp);
    tport_graph_free(gq);
    tport_ctx_free(ctx);
}

int main(void) {
    run(TPORT_TYPE_F32);  /* projections without packing */
    run(TPORT_TYPE_Q8_0); /* activations packed once for three */
    return test_finish("test_core_graph_plan");
}
