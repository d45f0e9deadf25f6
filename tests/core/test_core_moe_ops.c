/* The mixture-of-experts ops (ABI 1.3) on the CPU against references
 * written here: mul_mat_id over f32, f16 and q8_0 stacks (shared input
 * and input per slot, one token and a batch, 1 and 3 threads), the top-k
 * ids with ties and NaN, sigmoid, sum_rows, div and add_id, and the
 * refusal of an expert id outside the stack; batches in which experts
 * get 0, 1, 2, 3, 5 and many tokens, every tiled type, against each token
 * alone; two products of the same activations one after the other
 * (a layer's up and gate).  TPORT_TEST_CPU_VARIANT names a CPU plug-in to test (its tile
 * kernels: the statically linked copy has none). */
#include "core_test_util.h"
#include "registry/registry.h"
#include "sched/sched.h"

typedef struct mid_ref {
    const tport_tensor *b, *ids;
    const float *w; /* the stack as f32, [K, N, E] */
    int64_t K, N;
} mid_ref;

static double r_mul_mat_id(const void *c, int64_t n, int64_t i, int64_t t, int64_t i3) {
    const mid_ref *r = c;
    (void)i3;
    int64_t e = (int64_t)ct_get(r->ids, i, t, 0, 0), bi = tport_tensor_ne(r->b, 1) == 1 ? 0 : i;
    double s = 0;
    for (int64_t k = 0; k < r->K; k++)
        s += (double)r->w[(e * r->N + n) * r->K + k] * ct_get(r->b, k, bi, t, 0);
    return s;
}

static tport_tensor *random_ids(tport_ctx *ctx, int64_t n_used, int64_t T, int64_t E) {
    tport_tensor *ids = tport_new_tensor_2d(ctx, TPORT_TYPE_I32, n_used, T);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < n_used; i++)
            ct_set(ids, i, t, 0, 0, (double)((t * 5 + i * 3 + (t * t) % 7) % E));
    return ids;
}

static void test_mul_mat_id(tport_ctx *ctx) {
    const tport_type_id types[] = {TPORT_TYPE_F32, TPORT_TYPE_F16, TPORT_TYPE_Q8_0};
    const int64_t K = 64, N = 19, E = 6, n_used = 3;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        float *w = malloc((size_t)(K * N * E) * sizeof *w);
        for (int64_t i = 0; i < K * N * E; i++)
            w[i] = (float)test_rng_uniform(&ct_seed);
        tport_tensor *as = tport_new_tensor_3d(ctx, types[ti], K, N, E);
        CHECK(tport_quantize(types[ti], NULL, w, tport_tensor_data(as), K * N * E) == TPORT_STATUS_OK, "quantize");
        tport_dequantize(types[ti], tport_tensor_data(as), w, K * N * E); /* the reference reads these */
        for (int64_t T = 1; T <= 37; T += 36)
            for (int per_slot = 0; per_slot < 2; per_slot++)
                for (int threads = 1; threads <= 3; threads += 2) {
                    tport_tensor *b = ct_rand(ctx, TPORT_TYPE_F32, K, per_slot ? n_used : 1, T, 1);
                    tport_tensor *ids = random_ids(ctx, n_used, T, E);
                    tport_tensor *out = tport_mul_mat_id(ctx, as, b, ids);
                    tport_graph *g = ct_run(ctx, out, threads);
                    CHECK(g, "mul_mat_id type %u", types[ti]);
                    if (!g)
                        continue;
                    CHECK(tport_tensor_ne(out, 0) == N && tport_tensor_ne(out, 1) == n_used &&
                              tport_tensor_ne(out, 2) == T, "shape");
                    mid_ref r = {b, ids, w, K, N};
                    /* q8_0 quantizes the activations to 8 bits too */
                    double tol = types[ti] == TPORT_TYPE_Q8_0 ? 5e-2 : 1e-5;
                    double worst = ct_worst(out, r_mul_mat_id, &r, tol, tol);
                    CHECK(worst <= 1.0, "mul_mat_id type %u T %lld per_slot %d threads %d: error %g", types[ti],
                          (long long)T, per_slot, threads, worst);
                    tport_graph_free(g);
                }
        free(w);
    }
    /* only the chosen experts are read: the others hold NaN, which any
     * product of them would carry into the result */
    {
        tport_tensor *stack = ct_rand(ctx, TPORT_TYPE_F32, 32, 5, 6, 1);
        for (int64_t e = 0; e < 6; e++)
            if (e != 1 && e != 4)
                for (int64_t n = 0; n < 5; n++)
                    for (int64_t k = 0; k < 32; k++)
                        ct_set(stack, k, n, e, 0, NAN);
        tport_tensor *sel = tport_new_tensor_2d(ctx, TPORT_TYPE_I32, 2, 3);
        for (int64_t t = 0; t < 3; t++) {
            ct_set(sel, 0, t, 0, 0, t == 1 ? 1 : 4);
            ct_set(sel, 1, t, 0, 0, t == 1 ? 4 : 1);
        }
        tport_tensor *y = tport_mul_mat_id(ctx, stack, ct_rand(ctx, TPORT_TYPE_F32, 32, 1, 3, 1), sel);
        tport_graph *gy = ct_run(ctx, y, 3);
        CHECK(gy, "sparse mul_mat_id");
        bool finite = gy != NULL;
        CT_FOR_EACH(y, i0, i1, i2, i3)
        finite = finite && isfinite(ct_get(y, i0, i1, i2, i3));
        CHECK(finite, "an expert that no id chose was read");
        tport_graph_free(gy);
    }
    /* an id outside the stack is an error, not a read past it */
    tport_tensor *as = ct_rand(ctx, TPORT_TYPE_F32, 8, 4, 2, 1);
    tport_tensor *ids = tport_new_tensor_2d(ctx, TPORT_TYPE_I32, 1, 1);
    ct_set(ids, 0, 0, 0, 0, 2);
    tport_tensor *out = tport_mul_mat_id(ctx, as, ct_rand(ctx, TPORT_TYPE_F32, 8, 1, 1, 1), ids);
    tport_graph *g = tport_graph_new(ctx);
    tport_graph_add(g, out);
    tport_compute_params p = {1, NULL};
    CHECK(tport_graph_compute(g, &p) != TPORT_STATUS_OK, "expert id 2 of 2 accepted");
    tport_graph_free(g);
}

/* Two products of the same activations and ids over different stacks,
 * one right after the other (a MoE layer's up and gate): the second
 * reuses the first's packed activations and, on several threads, runs
 * alongside its end (cpu_mul_mat_id_shares_packing); both must still be
 * right.  Sized so that both run on several threads. */
typedef struct pair_ref {
    mid_ref up, gate;
} pair_ref;

static double r_pair(const void *c, int64_t n, int64_t i, int64_t t, int64_t i3) {
    const pair_ref *r = c;
    return r_mul_mat_id(&r->up, n, i, t, i3) + r_mul_mat_id(&r->gate, n, i, t, i3);
}

static void test_mul_mat_id_pair(tport_ctx *ctx) {
    const tport_type_id types[] = {TPORT_TYPE_Q8_0, TPORT_TYPE_Q4_K};
    const int64_t K = 256, N = 64, E = 6, n_used = 4;
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        float *w[2];
        tport_tensor *as[2];
        for (int m = 0; m < 2; m++) {
            w[m] = malloc((size_t)(K * N * E) * sizeof *w[m]);
            for (int64_t i = 0; i < K * N * E; i++)
                w[m][i] = (float)test_rng_uniform(&ct_seed);
            as[m] = tport_new_tensor_3d(ctx, types[ti], K, N, E);
            CHECK(tport_quantize(types[ti], NULL, w[m], tport_tensor_data(as[m]), K * N * E) == TPORT_STATUS_OK,
                  "quantize");
            tport_dequantize(types[ti], tport_tensor_data(as[m]), w[m], K * N * E);
        }
        for (int64_t T = 1; T <= 9; T += 8)
            for (int threads = 1; threads <= 3; threads += 2) {
                tport_tensor *b = ct_rand(ctx, TPORT_TYPE_F32, K, 1, T, 1);
                tport_tensor *ids = random_ids(ctx, n_used, T, E);
                tport_tensor *up = tport_mul_mat_id(ctx, as[0], b, ids);
                tport_tensor *gate = tport_mul_mat_id(ctx, as[1], b, ids);
                tport_tensor *out = tport_add(ctx, up, gate);
                tport_graph *g = ct_run(ctx, out, threads);
                CHECK(g, "mul_mat_id pair type %u", types[ti]);
                if (!g)
                    continue;
                pair_ref r = {{b, ids, w[0], K, N}, {b, ids, w[1], K, N}};
                /* both quantize the activations to 8 bits */
                double worst = ct_worst(out, r_pair, &r, 0.25, 0.02);
                CHECK(worst <= 1.0, "mul_mat_id pair type %u T %lld threads %d: error %g", types[ti], (long long)T,
                      threads, worst);
                tport_graph_free(g);
            }
        free(w[0]);
        free(w[1]);
    }
}

/* ids for T tokens of n_used slots over E experts in which expert 0 gets
 * no token, 1 one, 2 two, 3 three, 4 five and the rest share the others
 * (so batches meet the per-row path, the tile path with a partial group
 * of 4 columns, and experts with many tokens), in a scrambled order. */
static tport_tensor *skewed_ids(tport_ctx *ctx, int64_t n_used, int64_t T, int64_t E) {
    int64_t n = n_used * T, at = 0;
    int32_t *e = malloc((size_t)n * sizeof *e);
    static const int counts[] = {0, 1, 2, 3, 5};
    for (int32_t x = 1; x < 5; x++)
        for (int c = 0; c < counts[x]; c++)
            e[at++] = x;
    for (int64_t k = 0; at < n; k++)
        e[at++] = (int32_t)(5 + k % (E - 5));
    for (int64_t k = n - 1; k > 0; k--) {
        int64_t j = (int64_t)(test_rng_uniform(&ct_seed) * 0.5 * (double)(k + 1) + 0.5 * (double)(k + 1));
        j = j < 0 ? 0 : j > k ? k : j;
        int32_t tmp = e[k];
        e[k] = e[j];
        e[j] = tmp;
    }
    tport_tensor *ids = tport_new_tensor_2d(ctx, TPORT_TYPE_I32, n_used, T);
    for (int64_t t = 0; t < T; t++)
        for (int64_t i = 0; i < n_used; i++)
            ct_set(ids, i, t, 0, 0, (double)e[t * n_used + i]);
    free(e);
    return ids;
}

/* A batch of T tokens against every token alone (the per-row kernels:
 * no expert gets 3 tokens from one) and against the f64 reference, for
 * every type with a tile kernel in some CPU variant (and those that other
 * kernels may take up): the tile path sums in another order only. */
static const tport_type_id batch_types[] = {
    TPORT_TYPE_F16,     TPORT_TYPE_Q8_0,    TPORT_TYPE_Q4_0,   TPORT_TYPE_Q5_0,   TPORT_TYPE_Q4_K,   TPORT_TYPE_Q5_K,
    TPORT_TYPE_Q6_K,    TPORT_TYPE_MXFP4,   TPORT_TYPE_IQ4_NL, TPORT_TYPE_IQ4_XS, TPORT_TYPE_Q2_K,   TPORT_TYPE_IQ2_XXS,
    TPORT_TYPE_IQ2_XS,  TPORT_TYPE_IQ2_S,   TPORT_TYPE_IQ3_XXS, TPORT_TYPE_IQ3_S, TPORT_TYPE_IQ1_S,  TPORT_TYPE_IQ1_M};
/* the types with an AMX tile kernel for experts of 96 tokens and more
 * (cpu_mul_mat_amx_kq.c): with T 140, experts 5-8 get about 102 each */
static const tport_type_id amx_types[] = {TPORT_TYPE_Q4_K, TPORT_TYPE_Q5_K, TPORT_TYPE_Q6_K, TPORT_TYPE_IQ4_XS};
/* the types with AMX tiles from 8 tokens (cpu_mul_mat_amx_q4.c): with T
 * 60, experts of more than 32 tokens too (about 42 each of experts 5..8) */
static const tport_type_id amx_q4_types[] = {TPORT_TYPE_MXFP4, TPORT_TYPE_IQ4_NL, TPORT_TYPE_Q4_0, TPORT_TYPE_Q5_0,
                                             TPORT_TYPE_Q8_0};

static void test_mul_mat_id_batch(tport_ctx *ctx, const tport_type_id *types, size_t n_types, int64_t T) {
    const int64_t K = 512, N = 37, E = 9, n_used = 3;
    for (size_t ti = 0; ti < n_types; ti++) {
        float *w = malloc((size_t)(K * N * E) * sizeof *w);
        for (int64_t i = 0; i < K * N * E; i++)
            w[i] = (float)test_rng_uniform(&ct_seed);
        tport_tensor *as = tport_new_tensor_3d(ctx, types[ti], K, N, E);
        /* IQ2_XXS, IQ2_XS and IQ1_S quantize only with importance weights */
        float ones[512];
        for (int64_t k = 0; k < K; k++)
            ones[k] = 1.0f;
        CHECK(tport_quantize(types[ti], NULL, w, tport_tensor_data(as), K * N * E) == TPORT_STATUS_OK ||
                  tport_quantize_rows(types[ti], w, tport_tensor_data(as), N * E, K, ones) == TPORT_STATUS_OK,
              "quantize %u", types[ti]);
        tport_dequantize(types[ti], tport_tensor_data(as), w, K * N * E);
        for (int per_slot = 0; per_slot < 2; per_slot++) {
            int64_t n_b = per_slot ? n_used : 1;
            tport_tensor *b = ct_rand(ctx, TPORT_TYPE_F32, K, n_b, T, 1);
            tport_tensor *ids = skewed_ids(ctx, n_used, T, E);
            /* every token alone, kept before its graph goes */
            float *alone = malloc((size_t)(N * n_used * T) * sizeof *alone);
            bool ok = true;
            for (int64_t t = 0; t < T && ok; t++) {
                tport_tensor *b1 = tport_new_tensor_3d(ctx, TPORT_TYPE_F32, K, n_b, 1);
                tport_tensor *ids1 = tport_new_tensor_2d(ctx, TPORT_TYPE_I32, n_used, 1);
                for (int64_t j = 0; j < n_b; j++)
                    for (int64_t k = 0; k < K; k++)
                        ct_set(b1, k, j, 0, 0, ct_get(b, k, j, t, 0));
                for (int64_t i = 0; i < n_used; i++)
                    ct_set(ids1, i, 0, 0, 0, ct_get(ids, i, t, 0, 0));
                tport_tensor *o1 = tport_mul_mat_id(ctx, as, b1, ids1);
                tport_graph *g1 = ct_run(ctx, o1, 1);
                ok = g1 != NULL;
                CHECK(ok, "mul_mat_id type %u, one token", types[ti]);
                for (int64_t i = 0; ok && i < n_used; i++)
                    for (int64_t n = 0; n < N; n++)
                        alone[(t * n_used + i) * N + n] = (float)ct_get(o1, n, i, 0, 0);
                if (g1)
                    tport_graph_free(g1);
            }
            for (int threads = 1; ok && threads <= 2; threads++) {
                tport_tensor *out = tport_mul_mat_id(ctx, as, b, ids);
                tport_graph *g = ct_run(ctx, out, threads);
                CHECK(g, "mul_mat_id type %u batch", types[ti]);
                if (!g)
                    continue;
                double worst_alone = 0;
                for (int64_t t = 0; t < T; t++)
                    for (int64_t i = 0; i < n_used; i++)
                        for (int64_t n = 0; n < N; n++) {
                            double a = alone[(t * n_used + i) * N + n], e = fabs(ct_get(out, n, i, t, 0) - a) /
                                                                           (1e-3 + 1e-4 * fabs(a));
                            worst_alone = !(e <= worst_alone) ? (isnan(e) ? INFINITY : e) : worst_alone;
                        }
                CHECK(worst_alone <= 1.0, "mul_mat_id type %u per_slot %d threads %d: batch vs alone error %g",
                      types[ti], per_slot, threads, worst_alone);
                /* activations quantized to 8 bits: about 0.3% of |y| |x| per element */
                mid_ref r = {b, ids, w, K, N};
                double worst = ct_worst(out, r_mul_mat_id, &r, 0.25, 0.02);
                CHECK(worst <= 1.0, "mul_mat_id type %u per_slot %d threads %d: batch error %g", types[ti], per_slot,
                      threads, worst);
                tport_graph_free(g);
            }
            free(alone);
        }
        free(w);
    }
}

static void test_top_k(tport_ctx *ctx) {
    const float row[] = {0.5f, 0.9f, 0.5f, 0.9f, NAN, 0.1f, -3.0f, 0.95f};
    tport_tensor *a = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, 8, 2);
    for (int j = 0; j < 8; j++) {
        ct_set(a, j, 0, 0, 0, row[j]);
        ct_set(a, j, 1, 0, 0, -row[j]);
    }
    tport_tensor *out = tport_argsort_top_k(ctx, a, 5);
    tport_graph *g = ct_run(ctx, out, 1);
    CHECK(g, "top_k");
    if (!g)
        return;
    /* descending, equal values by index, NaN last */
    const int want0[] = {7, 1, 3, 0, 2}, want1[] = {6, 5, 0, 2, 1};
    for (int j = 0; j < 5; j++) {
        CHECK(ct_get(out, j, 0, 0, 0) == want0[j], "row 0 id %d: %g, want %d", j, ct_get(out, j, 0, 0, 0), want0[j]);
        CHECK(ct_get(out, j, 1, 0, 0) == want1[j], "row 1 id %d: %g, want %d", j, ct_get(out, j, 1, 0, 0), want1[j]);
    }
    tport_graph_free(g);
    CHECK(!tport_argsort_top_k(ctx, a, 9), "k above the row length accepted");
}

typedef struct small_ref {
    const tport_tensor *a, *b, *ids, *up;
    int op;
} small_ref;

static double r_small(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const small_ref *r = c;
    switch (r->op) {
    case 0: return 1.0 / (1.0 + exp(-ct_get(r->a, i0, i1, i2, i3)));
    case 1: {
        double s = 0;
        for (int64_t k = 0; k < tport_tensor_ne(r->a, 0); k++)
            s += ct_get(r->a, k, i1, i2, i3);
        return s;
    }
    case 2:
        return ct_get(r->a, i0, i1, i2, i3) / ct_get(r->b, i0 % tport_tensor_ne(r->b, 0), i1 % tport_tensor_ne(r->b, 1),
                                                      i2 % tport_tensor_ne(r->b, 2), i3);
    case 3:
        return ct_get(r->a, i0, i1, i2, i3) + ct_get(r->b, i0, (int64_t)ct_get(r->ids, i1, i2, 0, 0), 0, 0);
    default: { /* swiglu_oai, alpha 1.702, limit 0.5: the gate capped above, up clamped */
        double g = fmin(ct_get(r->a, i0, i1, i2, i3), 0.5), u = ct_get(r->up, i0, i1, i2, i3);
        u = fmax(-0.5, fmin(u, 0.5));
        return g / (1.0 + exp(-1.702 * g)) * (u + 1.0);
    }
    }
}

static void test_small(tport_ctx *ctx) {
    tport_tensor *a = ct_rand(ctx, TPORT_TYPE_F32, 45, 3, 7, 1);
    tport_tensor *div_by = ct_rand(ctx, TPORT_TYPE_F32, 1, 3, 1, 1);
    ct_set(div_by, 0, 0, 0, 0, 0.5);
    ct_set(div_by, 0, 1, 0, 0, -2.0);
    ct_set(div_by, 0, 2, 0, 0, 3.0);
    tport_tensor *bias = ct_rand(ctx, TPORT_TYPE_F32, 45, 5, 1, 1);
    tport_tensor *ids = random_ids(ctx, 3, 7, 5);
    tport_tensor *up = ct_rand(ctx, TPORT_TYPE_F32, 45, 3, 7, 1);
    for (int op = 0; op < 5; op++)
        for (int threads = 1; threads <= 3; threads += 2) {
            tport_tensor *out = op == 0   ? tport_sigmoid(ctx, a)
                                : op == 1 ? tport_sum_rows(ctx, a)
                                : op == 2 ? tport_div(ctx, a, div_by)
                                : op == 3 ? tport_add_id(ctx, a, bias, ids)
                                          : tport_swiglu_oai(ctx, a, up, 1.702f, 0.5f);
            tport_graph *g = ct_run(ctx, out, threads);
            CHECK(g, "op %d", op);
            if (!g)
                continue;
            small_ref r = {a, op == 2 ? div_by : bias, ids, up, op};
            double worst = ct_worst(out, r_small, &r, 1e-6, 1e-6);
            CHECK(worst <= 1.0, "op %d threads %d: error %g", op, threads, worst);
            tport_graph_free(g);
        }
}

/* Grouped routing (1.4) on rows worked by hand: 4 groups of 3, the best 2
 * kept by the sum of each group's two largest, ties to the lower group. */
static void test_expert_groups(tport_ctx *ctx) {
    static const double in[2][12] = {
        {1, 5, 2, 4, 4, -1, 9, -10, 0, 6, 2, 0},        /* sums 7, 8, 9, 8: groups 2 and 1 */
        {-1, -2, -3, -4, -5, -6, -0.5, -9, -9, -7, -1, -1}, /* -3, -9, -9.5, -2: groups 3 and 0 */
    };
    static const bool kept[2][4] = {{false, true, true, false}, {true, false, false, true}};
    tport_tensor *a = ct_rand(ctx, TPORT_TYPE_F32, 12, 2, 1, 1);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 12; i++)
            ct_set(a, i, r, 0, 0, in[r][i]);
    CHECK(!tport_expert_groups(ctx, a, 5, 2) && !tport_expert_groups(ctx, a, 4, 5) &&
              !tport_expert_groups(ctx, a, 12, 1),
          "expert_groups: bad group counts accepted");
    tport_tensor *out = tport_expert_groups(ctx, a, 4, 2);
    tport_graph *g = ct_run(ctx, out, 2);
    CHECK(g, "expert_groups ran");
    if (!g)
        return;
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 12; i++) {
            double v = ct_get(out, i, r, 0, 0);
            CHECK(kept[r][i / 3] ? v == in[r][i] : isinf(v) && v < 0, "expert_groups row %d value %d: %g", r, i, v);
        }
    CHECK(tport_op_since_minor(TPORT_OP_EXPERT_GROUPS) == 4, "expert_groups is of 1.4");
    tport_graph_free(g);
}

/* The host asks a backend that negotiated a minor below 3 about no op of
 * 1.3: the cpu takes a mul_mat_id node as 1.3, and is not asked as 1.2. */
static void test_minor_rule(void) {
    CHECK(tport_op_since_minor(TPORT_OP_MUL_MAT_ID) == 3 && tport_op_since_minor(TPORT_OP_ADD_ID) == 3 &&
              tport_op_since_minor(TPORT_OP_ADD) == 0 && tport_op_since_minor(TPORT_OP_FLASH_ATTN) == 1,
          "op minors");
    const tport_active_backend *cpu = NULL;
    for (int i = 0; i < tport_registry_active_count() && !cpu; i++)
        if (tport_registry_active(i) && !strcmp(tport_registry_active(i)->name, "cpu"))
            cpu = tport_registry_active(i);
    CHECK(cpu, "the cpu backend");
    if (!cpu)
        return;
    float w[8 * 4 * 2] = {0}, x[8] = {0}, y[4] = {0};
    int32_t id = 1;
    tport_tensor_view t[4];
    memset(t, 0, sizeof t);
    const int64_t shapes[4][3] = {{8, 4, 2}, {8, 1, 1}, {1, 1, 1}, {4, 1, 1}};
    void *data[4] = {w, x, &id, y};
    for (int i = 0; i < 4; i++) {
        t[i].struct_size = sizeof t[i];
        t[i].type = i == 2 ? TPORT_TYPE_I32 : TPORT_TYPE_F32;
        for (int s = 0; s < TPORT_MAX_SRC; s++)
            t[i].src[s] = -1;
        t[i].ne[3] = 1;
        for (int d = 0; d < 3; d++)
            t[i].ne[d] = shapes[i][d];
        t[i].nb[0] = 4;
        for (int d = 1; d < 4; d++)
            t[i].nb[d] = t[i].nb[d - 1] * (uint64_t)t[i].ne[d - 1];
        t[i].data = data[i];
        t[i].name = "";
    }
    t[3].op = TPORT_OP_MUL_MAT_ID;
    t[3].src[0] = 0, t[3].src[1] = 1, t[3].src[2] = 2;
    const tport_tensor_view *ptrs[4] = {&t[0], &t[1], &t[2], &t[3]};
    const int32_t node = 3;
    tport_graph_view v = {.struct_size = sizeof v, .n_tensors = 4, .tensors = ptrs, .n_nodes = 1, .nodes = &node,
                          .n_threads = 1};
    tport_active_backend as_13 = *cpu, as_12 = *cpu;
    as_13.abi_minor = 3;
    as_12.abi_minor = 2;
    CHECK(tport_sched_backend_supports(&as_13, &v, node), "cpu as 1.3 declines mul_mat_id");
    CHECK(!tport_sched_backend_supports(&as_12, &v, node), "a 1.2 backend was asked about mul_mat_id");
}

int main(void) {
    /* with a CPU plug-in named (one ctest per variant), its tile kernels */
    const char *variant = getenv("TPORT_TEST_CPU_VARIANT");
    if (variant && *variant && tport_backend_load(variant) != TPORT_STATUS_OK)
        fprintf(stderr, "note: %s not loaded (%s): testing the active cpu backend\n", variant, tport_last_error());
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    test_mul_mat_id(ctx);
    test_mul_mat_id_pair(ctx);
    test_mul_mat_id_batch(ctx, batch_types, sizeof batch_types / sizeof batch_types[0], 23);
    tport_ctx *ctx2 = tport_ctx_new(64u << 20);
    test_mul_mat_id_batch(ctx2, amx_types, sizeof amx_types / sizeof amx_types[0], 140);
    test_mul_mat_id_batch(ctx2, amx_q4_types, sizeof amx_q4_types / sizeof amx_q4_types[0], 60);
    tport_ctx_free(ctx2);
    test_top_k(ctx);
    test_small(ctx);
    test_expert_groups(ctx);
    test_minor_rule();
    tport_ctx_free(ctx);
    return test_finish("test_core_moe_ops");
}
