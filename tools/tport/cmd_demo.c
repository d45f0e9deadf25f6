/* tport demo: needs nothing downloaded.
 * Part 1: a small fixed-seed transformer block (attention with rope and a
 * causal mask, then a SwiGLU MLP with f16 weights) built from the public
 * graph API, with the backend that ran each node.
 * Part 2: a random-weight llama model written by `tport synth` into a
 * temporary folder, loaded and run through the model API, with what ran
 * where and the speed. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "tport/tport.h"

enum { D = 64, N_HEAD = 4, HEAD_DIM = D / N_HEAD, T = 8, FFN = 128 };

static unsigned long long rng = 0x5eed2026ull;

static float uniform(void) { /* [-1, 1), xorshift64* */
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return (float)((double)((rng * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* A leaf filled with uniform values in [-scale, scale); f16 through cpy. */
static tport_tensor *weight(tport_ctx *ctx, int64_t ne0, int64_t ne1, float scale, const char *name) {
    tport_tensor *t = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, ne0, ne1);
    if (!t)
        return NULL;
    float *p = tport_tensor_data(t);
    for (int64_t i = 0; i < ne0 * ne1; i++)
        p[i] = uniform() * scale;
    tport_tensor_set_weight(t);
    return tport_tensor_set_name(t, name);
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void usage(FILE *out) {
    fprintf(out, "usage: tport demo [--threads N] [--backend NAME] [--type T]\n"
                 "  1. Builds a small fixed-seed transformer block (attention + SwiGLU MLP),\n"
                 "     runs it and prints a few outputs, a checksum, the planned memory,\n"
                 "     which backend ran which nodes, and the time.\n"
                 "  2. Synthesizes a small random-weight llama model (weights of type T,\n"
                 "     default q8_0) in a temporary folder, generates 32 tokens greedily\n"
                 "     and prints them, which backend ran which ops, and the speed.\n");
}

/* Part 2: synthesize, load, generate, report. Returns an exit status. */
static int run_model_demo(const tport_compute_params *params, const char *type) {
    const char *tmp = getenv("TMPDIR");
    char dir[512], path[600];
    snprintf(dir, sizeof dir, "%s/tport-demo-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return tool_fail(1, "demo: cannot create a temporary folder in %s", tmp && *tmp ? tmp : "/tmp");
    snprintf(path, sizeof path, "%s/demo-llama.gguf", dir);
    char type_arg[32];
    snprintf(type_arg, sizeof type_arg, "%s", type);
    char *synth_argv[] = {"synth", "--dim", "256", "--layers", "4", "--heads", "8", "--kv-heads", "4",
                          "--ff", "768", "--vocab", "2048", "--ctx", "256", "--type", type_arg,
                          "--seed", "7", "-o", path, NULL};
    printf("\n== part 2: a synthesized llama model\n$ tport");
    for (int i = 0; synth_argv[i]; i++)
        printf(" %s", synth_argv[i]);
    printf("\n");
    fflush(stdout);
    int rc = cmd_synth((int)(sizeof synth_argv / sizeof synth_argv[0]) - 1, synth_argv);
    if (rc) {
        rmdir(dir);
        return rc;
    }
    double t0 = now_ms();
    tport_model_params mp = {.backend = params->backend, .n_threads = params->n_threads};
    tport_model *m = tport_model_load(path, &mp);
    double load_ms = now_ms() - t0;
    unlink(path);
    rmdir(dir);
    if (!m)
        return tool_fail(1, "demo: loading the synthesized model: %s", tport_last_error());
    tport_session *s = tport_session_new(m, NULL);
    tport_token prompt[64];
    int32_t n_prompt = s ? tport_tokenize(m, "Hello, tensorport", true, prompt, 64) : -1;
    if (!s || n_prompt <= 0 || n_prompt > 64) {
        tport_session_free(s);
        tport_model_free(m);
        return tool_fail(1, "demo: %s", s ? "tokenizing the prompt failed" : tport_last_error());
    }
    enum { N_GEN = 32 };
    tport_token out[N_GEN];
    double t1 = now_ms(), t_prompt = 0;
    tport_status st = tport_session_eval(s, prompt, n_prompt);
    t_prompt = now_ms() - t1;
    int n_out = 0;
    t1 = now_ms();
    while (st == TPORT_STATUS_OK && n_out < N_GEN) {
        const float *lg = tport_session_logits(s);
        tport_token best = 0;
        for (int32_t v = 1; v < tport_model_n_vocab(m); v++)
            if (lg[v] > lg[best])
                best = v;
        out[n_out++] = best;
        if (n_out < N_GEN)
            st = tport_session_eval(s, &best, 1);
    }
    double t_gen = now_ms() - t1;
    if (st) {
        tport_session_free(s);
        tport_model_free(m);
        return tool_fail(1, "demo: evaluation failed: %s", tport_last_error());
    }
    printf("loaded in %.1f ms; prompt \"Hello, tensorport\" = %d tokens\n", load_ms, (int)n_prompt);
    printf("generated ids (greedy, random weights):");
    for (int i = 0; i < n_out; i++)
        printf("%s%d", i ? "," : " ", (int)out[i]);
    printf("\nwhat ran where in the last step:\n");
    const char *backend, *op;
    int32_t count;
    for (int32_t i = 0; (count = tport_session_placement(s, i, &backend, &op)) > 0; i++)
        printf("  %-8s %-10s x%d\n", backend, op, (int)count);
    printf("speed: prompt %.1f tokens/s, generation %.1f tokens/s\n", n_prompt / (t_prompt / 1e3),
           (n_out - 1) / (t_gen / 1e3));
    tport_session_free(s);
    tport_model_free(m);
    return 0;
}

/* The block: returns the output tensor, or NULL with tport_last_error(). */
static tport_tensor *build(tport_ctx *ctx, tport_tensor **w1_f16_copy) {
    float ws = 1.0f / sqrtf((float)D);
    tport_tensor *x = weight(ctx, D, T, 1.0f, "x");
    tport_tensor *attn_norm = weight(ctx, D, 1, 1.0f, "attn_norm");
    tport_tensor *wq = weight(ctx, D, D, ws, "wq"), *wk = weight(ctx, D, D, ws, "wk");
    tport_tensor *wv = weight(ctx, D, D, ws, "wv"), *wo = weight(ctx, D, D, ws, "wo");
    tport_tensor *ffn_norm = weight(ctx, D, 1, 1.0f, "ffn_norm");
    tport_tensor *w1 = weight(ctx, D, FFN, ws, "w1"), *w3 = weight(ctx, D, FFN, ws, "w3");
    tport_tensor *w2 = weight(ctx, FFN, D, 1.0f / sqrtf((float)FFN), "w2");
    tport_tensor *pos = tport_new_tensor_1d(ctx, TPORT_TYPE_I32, T);
    tport_tensor *mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, T, T);
    if (!x || !attn_norm || !wq || !wk || !wv || !wo || !ffn_norm || !w1 || !w3 || !w2 || !pos || !mask)
        return NULL;
    for (int i = 0; i < T; i++)
        ((int32_t *)tport_tensor_data(pos))[i] = i;
    for (int q = 0; q < T; q++)
        for (int k = 0; k < T; k++)
            ((float *)tport_tensor_data(mask))[q * T + k] = k > q ? -INFINITY : 0.0f;

    /* the MLP's first weights are stored as f16 (converted by a cpy node) */
    tport_tensor *w1h = tport_new_tensor_2d(ctx, TPORT_TYPE_F16, D, FFN);
    tport_tensor *w1c = tport_cpy(ctx, w1, w1h);
    *w1_f16_copy = w1c;

    /* attention */
    tport_tensor *h = tport_mul(ctx, tport_rms_norm(ctx, x, 1e-5f), attn_norm);
    int64_t qshape[3] = {HEAD_DIM, N_HEAD, T};
    tport_tensor *q = tport_rope(ctx, tport_reshape(ctx, tport_mul_mat(ctx, wq, h), 3, qshape), pos, HEAD_DIM,
                                 TPORT_ROPE_NORMAL, 10000.0f, 1.0f);
    tport_tensor *k = tport_rope(ctx, tport_reshape(ctx, tport_mul_mat(ctx, wk, h), 3, qshape), pos, HEAD_DIM,
                                 TPORT_ROPE_NORMAL, 10000.0f, 1.0f);
    tport_tensor *v = tport_reshape(ctx, tport_mul_mat(ctx, wv, h), 3, qshape);
    tport_tensor *kq = tport_mul_mat(ctx, tport_permute(ctx, k, 0, 2, 1, 3), tport_permute(ctx, q, 0, 2, 1, 3));
    tport_tensor *att = tport_soft_max(ctx, kq, mask, 1.0f / sqrtf((float)HEAD_DIM));
    tport_tensor *vt = tport_cont(ctx, tport_permute(ctx, v, 1, 2, 0, 3)); /* [T, HEAD_DIM, N_HEAD] */
    tport_tensor *o = tport_mul_mat(ctx, vt, att);                         /* [HEAD_DIM, T, N_HEAD] */
    o = tport_cont(ctx, tport_permute(ctx, o, 0, 2, 1, 3));
    int64_t flat[2] = {D, T};
    tport_tensor *x2 = tport_add(ctx, x, tport_mul_mat(ctx, wo, tport_reshape(ctx, o, 2, flat)));

    /* SwiGLU MLP */
    tport_tensor *h2 = tport_mul(ctx, tport_rms_norm(ctx, x2, 1e-5f), ffn_norm);
    tport_tensor *f = tport_swiglu(ctx, tport_mul_mat(ctx, w1c, h2), tport_mul_mat(ctx, w3, h2));
    tport_tensor *out = tport_add(ctx, x2, tport_mul_mat(ctx, w2, f));
    return tport_tensor_set_name(out, "out");
}

int cmd_demo(int argc, char **argv) {
    tport_compute_params params = {0, NULL};
    const char *type = "q8_0";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 1024)
                return tool_fail(2, "--threads wants a number from 1 to 1024, not '%s'", argv[i]);
            params.n_threads = (int)n;
        } else if (!strcmp(argv[i], "--backend") && i + 1 < argc) {
            params.backend = argv[++i];
        } else if (!strcmp(argv[i], "--type") && i + 1 < argc) {
            type = argv[++i];
        } else {
            usage(stderr);
            return tool_fail(2, "demo: unknown option '%s'", argv[i]);
        }
    }

    tport_ctx *ctx = tport_ctx_new(4u << 20);
    if (!ctx)
        return tool_fail(1, "demo: %s", tport_last_error());
    tport_tensor *w1c = NULL;
    tport_tensor *out = build(ctx, &w1c);
    tport_graph *g = out ? tport_graph_new(ctx) : NULL;
    /* the weight conversion first, then the block */
    if (!g || tport_graph_add(g, w1c) || tport_graph_add(g, out)) {
        tport_graph_free(g);
        tport_ctx_free(ctx);
        return tool_fail(1, "demo: building the graph failed: %s", tport_last_error());
    }
    double t0 = now_ms();
    tport_status st = tport_graph_compute(g, &params);
    double ms = now_ms() - t0;
    if (st) {
        tport_graph_free(g);
        tport_ctx_free(ctx);
        return tool_fail(1, "demo: compute failed: %s", tport_last_error());
    }

    const float *y = tport_tensor_data(out);
    double sum = 0.0, sum_abs = 0.0;
    for (int i = 0; i < D * T; i++) {
        sum += y[i];
        sum_abs += fabs(y[i]);
    }
    printf("== part 1: a transformer block through the graph API\n");
    printf("tport demo: transformer block, d=%d heads=%d tokens=%d ffn=%d (seed fixed)\n", D, N_HEAD, T, FFN);
    printf("output [%d x %d]: %.6f %.6f %.6f %.6f ...\n", D, T, y[0], y[1], y[2], y[3]);
    printf("checksum: sum %.6f  sum|x| %.6f\n", sum, sum_abs);
    printf("planned intermediate memory: %zu bytes (peak)\n", tport_graph_peak_bytes(g));
    printf("nodes: %d\n", tport_graph_n_nodes(g));
    for (int i = 0; i < tport_graph_n_nodes(g); i++) {
        tport_tensor *t = tport_graph_node(g, i);
        const char *b = tport_graph_node_backend(g, i);
        printf("  %3d %-9s %-10s -> %s\n", i, tport_op_name(tport_tensor_op(t)), tport_tensor_name(t), b ? b : "?");
    }
    if (params.n_threads)
        printf("time: %.3f ms (%d threads)\n", ms, params.n_threads);
    else
        printf("time: %.3f ms (threads: one per core)\n", ms);
    tport_graph_free(g);
    tport_ctx_free(ctx);
    return run_model_demo(&params, type);
}
