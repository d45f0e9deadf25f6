/* Runs a small graph with the example backend preferred
 * (TPORT_BACKEND=example,cpu, TPORT_BACKEND_PATH naming the plug-in):
 *   c = a + b; d = c * bias (broadcast row); e = mul_mat(w, d); f = scale(e)
 * The example must run add, mul and mul_mat, the CPU the scale (which the
 * example does not claim), and the numbers must match a plain
 * recomputation here. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <tport/tport.h>

static int failures;
#define EXPECT(cond, ...)                                          \
    do {                                                           \
        if (!(cond)) {                                             \
            failures++;                                            \
            fprintf(stderr, "example_graph_test: " __VA_ARGS__);   \
            fputc('\n', stderr);                                   \
        }                                                          \
    } while (0)

enum { K = 7, N = 3, M = 5 }; /* odd sizes on purpose */

static float value(int i, int salt) {
    return (float)((i * 37 + salt * 11) % 19 - 9) / 8.0f;
}

static void fill(tport_tensor *t, int salt) {
    float *p = tport_tensor_data(t);
    for (int64_t i = 0; i < tport_tensor_nelements(t); i++)
        p[i] = value((int)i, salt);
}

int main(void) {
    EXPECT(tport_backend_count() >= 2, "expected example and cpu, have %d backends", tport_backend_count());
    EXPECT(tport_backend_name(0) && !strcmp(tport_backend_name(0), "example"), "preferred backend is %s",
           tport_backend_name(0) ? tport_backend_name(0) : "(none)");

    tport_ctx *ctx = tport_ctx_new(1 << 20);
    tport_tensor *a = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, K, N);
    tport_tensor *b = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, K, N);
    tport_tensor *bias = tport_new_tensor_1d(ctx, TPORT_TYPE_F32, K);
    tport_tensor *w = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, K, M);
    if (!a || !b || !bias || !w) {
        fprintf(stderr, "example_graph_test: cannot make tensors: %s\n", tport_last_error());
        return 1;
    }
    fill(a, 1);
    fill(b, 2);
    fill(bias, 3);
    fill(w, 4);
    tport_tensor *c = tport_add(ctx, a, b);
    tport_tensor *d = tport_mul(ctx, c, bias);
    tport_tensor *e = tport_mul_mat(ctx, w, d); /* [M, N] */
    tport_tensor *f = tport_scale(ctx, e, 0.5f);
    tport_graph *g = tport_graph_new(ctx);
    if (!f || !g || tport_graph_add(g, f) != TPORT_STATUS_OK) {
        fprintf(stderr, "example_graph_test: cannot build the graph: %s\n", tport_last_error());
        return 1;
    }
    tport_status st = tport_graph_compute(g, &(tport_compute_params){.n_threads = 1});
    EXPECT(st == TPORT_STATUS_OK, "compute failed: %s", tport_last_error());

    int seen = 0;
    for (int i = 0; i < tport_graph_n_nodes(g); i++) {
        tport_tensor *t = tport_graph_node(g, i);
        const char *by = tport_graph_node_backend(g, i);
        const char *want = t == c || t == d || t == e ? "example" : t == f ? "cpu" : NULL;
        if (!want)
            continue;
        seen++;
        EXPECT(by && !strcmp(by, want), "node %d ran on %s, expected %s", i, by ? by : "(nothing)", want);
    }
    EXPECT(seen == 4, "found %d of the 4 op nodes in the graph", seen);
    /* the example has memory of its own: a, b, bias and w are staged into
     * it, e comes back for the cpu's scale */
    tport_sched_stats moved = tport_graph_stats(g);
    EXPECT(moved.n_uploads == 4 && moved.n_downloads == 1, "%d uploads and %d downloads, expected 4 and 1",
           moved.n_uploads, moved.n_downloads);

    /* the numbers, recomputed in double */
    const float *pa = tport_tensor_data(a), *pb = tport_tensor_data(b), *pbias = tport_tensor_data(bias);
    const float *pw = tport_tensor_data(w), *pf = tport_tensor_data(f);
    double max_err = 0;
    for (int j = 0; j < N && pf; j++)
        for (int i = 0; i < M; i++) {
            double sum = 0;
            for (int k = 0; k < K; k++)
                sum += (double)pw[i * K + k] * ((double)pa[j * K + k] + pb[j * K + k]) * pbias[k];
            double err = fabs(0.5 * sum - pf[j * M + i]);
            max_err = err > max_err ? err : max_err;
        }
    EXPECT(pf != NULL, "no output data");
    EXPECT(max_err < 1e-4, "max error %g", max_err);
    printf("example_graph_test: %s (max error %.3g)\n", failures ? "FAILED" : "ok", max_err);
    tport_graph_free(g);
    tport_ctx_free(ctx);
    return failures ? 1 : 0;
}
