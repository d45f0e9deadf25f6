/* The scheduler with two backends: "partial" (a test plug-in that only
 * adds) is preferred, the CPU takes every node it declines; consecutive
 * nodes of one backend run together; a forced backend that cannot run a
 * node is an error naming the node; the results are right either way. */
#include <stdlib.h>

#include "core_test_util.h"

#ifndef TEST_PLUGIN
#error "TEST_PLUGIN must name the test plug-in file"
#endif

int main(void) {
    /* before anything asks the registry */
    setenv("TPORT_BACKEND_PATH", TEST_PLUGIN, 1);
    setenv("TPORT_BACKEND", "partial,cpu", 1);
    if (!tport_backend_count())
        test_skip("test_core_sched", "no backends");
    int have_partial = 0;
    for (int i = 0; i < tport_backend_count(); i++)
        if (!strcmp(tport_backend_name(i), "partial"))
            have_partial = 1;
    CHECK(have_partial, "the test plug-in %s was loaded", TEST_PLUGIN);
    CHECK(!strcmp(tport_backend_name(0), "partial"), "partial is preferred (TPORT_BACKEND)");

    tport_ctx *ctx = tport_ctx_new(1u << 20);
    tport_tensor *x = ct_rand(ctx, TPORT_TYPE_F32, 33, 5, 1, 1);
    tport_tensor *y = ct_rand(ctx, TPORT_TYPE_F32, 33, 5, 1, 1);
    tport_tensor *a = tport_add(ctx, x, y);               /* partial */
    tport_tensor *b = tport_add(ctx, a, x);               /* partial */
    tport_tensor *c = tport_scale(ctx, b, 0.5f);          /* cpu     */
    tport_tensor *d = tport_add(ctx, c, tport_transpose(ctx, tport_transpose(ctx, y))); /* partial */
    tport_tensor *bias = ct_rand(ctx, TPORT_TYPE_F32, 33, 1, 1, 1);
    tport_tensor *e = tport_add(ctx, d, bias);           /* broadcast: cpu */
    tport_graph *g = tport_graph_new(ctx);
    CHECK(tport_graph_add(g, e) == 0, "graph");
    CHECK(tport_graph_compute(g, NULL) == 0, "compute: %s", tport_last_error());
    const char *want[] = {"partial", "partial", "cpu", "partial", "cpu"};
    CHECK(tport_graph_n_nodes(g) == 5, "5 nodes");
    for (int i = 0; i < 5 && i < tport_graph_n_nodes(g); i++) {
        const char *got = tport_graph_node_backend(g, i);
        CHECK(got && !strcmp(got, want[i]), "node %d ran on %s, expected %s", i, got ? got : "(none)", want[i]);
    }
    int ok = 1;
    for (int i1 = 0; i1 < 5; i1++)
        for (int i0 = 0; i0 < 33; i0++) {
            double xv = ct_get(x, i0, i1, 0, 0), yv = ct_get(y, i0, i1, 0, 0);
            double want_e = ((xv + yv) + xv) * 0.5 + yv + ct_get(bias, i0, 0, 0, 0);
            if (fabs(ct_get(e, i0, i1, 0, 0) - want_e) > 1e-5)
                ok = 0;
        }
    CHECK(ok, "mixed-backend result");

    /* forcing cpu runs everything there */
    tport_compute_params p = {1, "cpu"};
    CHECK(tport_graph_compute(g, &p) == 0, "forced cpu: %s", tport_last_error());
    for (int i = 0; i < tport_graph_n_nodes(g); i++)
        CHECK(tport_graph_node_backend(g, i) && !strcmp(tport_graph_node_backend(g, i), "cpu"), "node %d on cpu", i);
    /* forcing partial fails on the scale node, naming it */
    tport_tensor_set_name(c, "the-scale");
    p.backend = "partial";
    CHECK(tport_graph_compute(g, &p) != 0 && strstr(tport_last_error(), "the-scale") &&
              strstr(tport_last_error(), "partial"),
          "forced partial: '%s'", tport_last_error());
    tport_graph_free(g);
    tport_ctx_free(ctx);
    return test_finish("test_core_sched");
}
