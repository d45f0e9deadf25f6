/* flash_attn against a double-precision softmax-attention written here:
 * f32 and f16 K/V read as strided views of a cache [hd, n_kv_head, n_ctx]
 * (as the llama graph does), grouped-query attention, a causal mask, a
 * mask row that is entirely -inf (zeros), no mask, head sizes the AVX-512
 * path takes (16, 64, 80, 128) and one it does not (8, 20), 1 and 3 threads;
 * prompts longer than a tile of queries and a block of keys; a head-major
 * cache.
 *
 * Run by ctest for the statically linked CPU backend and, with
 * TPORT_TEST_CPU_VARIANT naming a plug-in file, for each CPU variant. */
#include <stdlib.h>

#include "core_test_util.h"

typedef struct fa_ref {
    const tport_tensor *q, *k, *v, *mask;
    double scale;
    double cap;                /* > 0: soft-capping (FLASH_ATTN_EXT) */
    const tport_tensor *sinks; /* NULL or [n_head] */
    int64_t h, t; /* the query whose probabilities p holds; -1: none */
    double *p;    /* [n_kv], normalised; all zeros for a fully masked row */
} fa_ref;

/* r->p := the probabilities of query head h, token t (one pass per query
 * rather than one per output element: a prompt's check stays quick) */
static void r_probs(fa_ref *r, int64_t h, int64_t t) {
    int64_t hd = tport_tensor_ne(r->q, 0), n_head = tport_tensor_ne(r->q, 1);
    int64_t n_kv = tport_tensor_ne(r->k, 1), g = h / (n_head / tport_tensor_ne(r->k, 2));
    double max = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < n_kv; j++) {
        double d = 0.0;
        for (int64_t c = 0; c < hd; c++)
            d += ct_get(r->q, c, h, t, 0) * ct_get(r->k, c, j, g, 0);
        d *= r->scale;
        if (r->cap > 0.0)
            d = r->cap * tanh(d / r->cap);
        r->p[j] = d + (r->mask ? ct_get(r->mask, j, t, 0, 0) : 0.0);
        max = fmax(max, r->p[j]);
    }
    bool any = max > -INFINITY;
    double sink = r->sinks ? ct_get(r->sinks, h, 0, 0, 0) : -INFINITY;
    max = fmax(max, sink);
    for (int64_t j = 0; j < n_kv; j++) {
        r->p[j] = any ? exp(r->p[j] - max) : 0.0;
        sum += r->p[j];
    }
    if (any && r->sinks)
        sum += exp(sink - max);
    for (int64_t j = 0; sum > 0.0 && j < n_kv; j++)
        r->p[j] /= sum;
    r->h = h;
    r->t = t;
}

static double r_attn(const void *c, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    (void)i3;
    fa_ref *r = (fa_ref *)(uintptr_t)c; /* ours: it memoises a query's probabilities */
    int64_t n_kv = tport_tensor_ne(r->k, 1), g = i1 / (tport_tensor_ne(r->q, 1) / tport_tensor_ne(r->k, 2));
    if (r->h != i1 || r->t != i2)
        r_probs(r, i1, i2);
    double out = 0.0;
    for (int64_t j = 0; j < n_kv; j++)
        out += r->p[j] * ct_get(r->v, i0, j, g, 0);
    return out;
}

/* A cache of `type` and its [hd, n_kv, n_kvh] view: [hd, n_kvh, n_ctx] (a
 * token's heads side by side, as the runtime keeps it) or, head_major,
 * [hd, n_ctx, n_kvh]. */
static tport_tensor *cache_view(tport_ctx *ctx, tport_type_id type, int64_t hd, int64_t n_kvh, int64_t n_ctx,
                                int64_t n_kv, bool head_major) {
    tport_tensor *c = head_major ? ct_rand(ctx, type, hd, n_ctx, n_kvh, 1) : ct_rand(ctx, type, hd, n_kvh, n_ctx, 1);
    if (!c)
        return NULL;
    size_t e = tport_tensor_nb(c, 0);
    const int64_t ne[3] = {hd, n_kv, n_kvh};
    const size_t side[3] = {e, (size_t)(hd * n_kvh) * e, (size_t)hd * e};
    const size_t major[3] = {e, (size_t)hd * e, (size_t)(hd * n_ctx) * e};
    return tport_view(ctx, c, 3, ne, head_major ? major : side, 0);
}

/* mask_kind: 0 none, 1 causal, 2 causal with row 0 all -inf, 3 causal
 * plus a distance bias */
/* ext: 0 FLASH_ATTN; 1 FLASH_ATTN_EXT with a soft cap; 2 with sinks; 3 both */
static void check_cache_ext(tport_type_id type, int64_t hd, int64_t n_head, int64_t n_kvh, int64_t n, int64_t n_kv,
                            int mask_kind, bool head_major, int ext) {
    tport_ctx *ctx = tport_ctx_new(64u << 20);
    tport_tensor *q = ct_rand(ctx, TPORT_TYPE_F32, hd, n_head, n, 1);
    tport_tensor *k = cache_view(ctx, type, hd, n_kvh, n_kv + 3, n_kv, head_major);
    tport_tensor *v = cache_view(ctx, type, hd, n_kvh, n_kv + 3, n_kv, head_major);
    tport_tensor *mask = NULL;
    if (mask_kind) {
        mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, n_kv, n);
        int64_t pos = n_kv - n; /* causal: token t sees keys 0 .. pos + t */
        for (int64_t t = 0; mask && t < n; t++)
            for (int64_t j = 0; j < n_kv; j++)
                ct_set(mask, j, t, 0, 0,
                       j <= pos + t && !(mask_kind == 2 && t == 0) ? (mask_kind == 3 ? -0.05 * (double)(pos + t - j) : 0.0)
                                                                  : -INFINITY);
    }
    double scale = 1.0 / sqrt((double)hd);
    /* a cap that bends the scores (|q.k| scale reaches ~2) and sinks on both sides of them */
    double cap = ext & 1 ? 0.8 : 0.0;
    tport_tensor *sinks = ext & 2 ? ct_rand(ctx, TPORT_TYPE_F32, n_head, 1, 1, 1) : NULL;
    for (int64_t h = 0; sinks && h < n_head; h++)
        ct_set(sinks, h, 0, 0, 0, 3.0 * ct_get(sinks, h, 0, 0, 0));
    tport_tensor *o = ext ? tport_flash_attn_ext(ctx, q, k, v, mask, sinks, (float)scale, (float)cap)
                          : tport_flash_attn(ctx, q, k, v, mask, (float)scale);
    CHECK(o && tport_tensor_ne(o, 0) == hd && tport_tensor_ne(o, 1) == n_head && tport_tensor_ne(o, 2) == n,
          "flash_attn shape: %s", tport_last_error());
    for (int threads = 1; o && threads <= 3; threads += 2) {
        tport_graph *g = ct_run(ctx, o, threads);
        CHECK(g, "flash_attn compute");
        if (!g)
            break;
        fa_ref r = {q, k, v, mask, scale, cap, sinks, -1, -1, calloc((size_t)n_kv, sizeof(double))};
        double w = r.p ? ct_worst(o, r_attn, &r, 1e-5, 1e-4) : INFINITY;
        free(r.p);
        CHECK(w <= 1.0, "flash_attn%s %s%s hd %lld heads %lld/%lld n %lld n_kv %lld mask %d, %d threads: error %g",
              ext == 1 ? "_ext softcap" : ext == 2 ? "_ext sinks" : ext == 3 ? "_ext softcap+sinks" : "",
              type == TPORT_TYPE_F16 ? "f16" : "f32", head_major ? " head-major" : "", (long long)hd,
              (long long)n_head, (long long)n_kvh, (long long)n, (long long)n_kv, mask_kind, threads, w);
        if (mask_kind == 2) {
            bool zero = true;
            for (int64_t h = 0; h < n_head; h++)
                for (int64_t c = 0; c < hd; c++)
                    zero = zero && ct_get(o, c, h, 0, 0) == 0.0;
            CHECK(zero, "flash_attn: a fully masked row gives zeros");
        }
        tport_graph_free(g);
    }
    tport_ctx_free(ctx);
}

static void check_cache(tport_type_id type, int64_t hd, int64_t n_head, int64_t n_kvh, int64_t n, int64_t n_kv,
                        int mask_kind, bool head_major) {
    check_cache_ext(type, hd, n_head, n_kvh, n, n_kv, mask_kind, head_major, 0);
}

static void check(tport_type_id type, int64_t hd, int64_t n_head, int64_t n_kvh, int64_t n, int64_t n_kv,
                  int mask_kind) {
    check_cache(type, hd, n_head, n_kvh, n, n_kv, mask_kind, false);
}

/* FLASH_ATTN_EXT on each of the four ways through */
static void check_ext(tport_type_id t) {
    for (int ext = 1; ext <= 3; ext++) {
        check_cache_ext(t, 64, 8, 2, 1, 50, 1, false, ext); /* FA_HEADS */
        check_cache_ext(t, 64, 4, 4, 1, 45, 3, true, ext);  /* FA_ONE */
        check_cache_ext(t, 64, 4, 2, 37, 150, 1, false, ext); /* FA_TRANSPOSED */
        check_cache_ext(t, 64, 8, 2, 20, 29, 3, true, ext);
        check_cache_ext(t, 20, 2, 1, 6, 9, 1, false, ext);  /* FA_PORTABLE */
        check_cache_ext(t, 80, 2, 2, 3, 9, 2, false, ext);  /* row 0 fully masked */
    }
}

static void check_errors(void) {
    tport_ctx *ctx = tport_ctx_new(1u << 20);
    tport_tensor *q = tport_new_tensor_3d(ctx, TPORT_TYPE_F32, 16, 4, 2);
    tport_tensor *k = tport_new_tensor_3d(ctx, TPORT_TYPE_F16, 16, 8, 2);
    tport_tensor *v32 = tport_new_tensor_3d(ctx, TPORT_TYPE_F32, 16, 8, 2);
    tport_tensor *k3 = tport_new_tensor_3d(ctx, TPORT_TYPE_F16, 16, 8, 3);
    tport_tensor *short_mask = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, 8, 1);
    CHECK(!tport_flash_attn(ctx, q, k, v32, NULL, 1.0f), "k and v of different types are refused");
    CHECK(!tport_flash_attn(ctx, q, k3, k3, NULL, 1.0f), "3 kv heads for 4 query heads are refused");
    CHECK(!tport_flash_attn(ctx, q, k, k, short_mask, 1.0f), "a mask with fewer rows than tokens is refused");
    CHECK(!tport_flash_attn(ctx, k, k, k, NULL, 1.0f), "an f16 q is refused");
    CHECK(tport_flash_attn(ctx, q, k, k, NULL, 1.0f) != NULL, "a valid call: %s", tport_last_error());
    tport_ctx_free(ctx);
}

/* The cache writes: f32 rows copied into an f16 cache round exactly as the
 * reference conversion (the variants take a SIMD path for dense rows). */
static void check_cache_write(void) {
    tport_ctx *ctx = tport_ctx_new(1u << 20);
    tport_tensor *src = ct_rand(ctx, TPORT_TYPE_F32, 64, 3, 1, 1);
    tport_tensor *dst = tport_new_tensor_2d(ctx, TPORT_TYPE_F16, 64, 3);
    uint16_t *mem = calloc(64 * 3, sizeof *mem);
    float *x = src ? tport_tensor_data(src) : NULL;
    if (x) /* values that round up, down, to even, and tiny ones */
        for (int i = 0; i < 16; i++)
            x[i] = (float)(1.0 + (double)i / 4096.0) * (i & 1 ? -1.0f : 1.0f) * (i < 8 ? 1.0f : 1e-6f);
    tport_tensor_set_data(dst, mem);
    tport_graph *g = ct_run(ctx, tport_cpy(ctx, src, dst), 2);
    CHECK(g, "cpy f32 -> f16");
    int bad = 0;
    for (int i = 0; g && i < 64 * 3; i++)
        bad += mem[i] != tport_fp32_to_fp16(x[i]);
    CHECK(g && !bad, "cpy f32 -> f16: %d of %d values differ from the reference rounding", bad, 64 * 3);
    tport_graph_free(g);
    free(mem);
    tport_ctx_free(ctx);
}

int main(void) {
    const char *variant = getenv("TPORT_TEST_CPU_VARIANT");
    if (variant && *variant && tport_backend_load(variant) != TPORT_STATUS_OK)
        fprintf(stderr, "note: %s not loaded (%s): testing the active cpu backend\n", variant, tport_last_error());
    check_errors();
    check_cache_write();
    static const tport_type_id types[] = {TPORT_TYPE_F32, TPORT_TYPE_F16};
    for (int ti = 0; ti < 2; ti++) {
        tport_type_id t = types[ti];
        check(t, 64, 4, 4, 1, 37, 1);   /* generation, no grouping      */
        check(t, 64, 8, 2, 1, 200, 1);  /* generation, 4 heads per group */
        check(t, 64, 4, 4, 7, 7, 1);    /* a causal prompt from 0       */
        check(t, 64, 6, 2, 5, 13, 1);   /* a prompt after a cached part */
        check(t, 128, 4, 1, 3, 9, 0);   /* no mask                      */
        check(t, 80, 2, 2, 3, 9, 2);    /* first row fully masked       */
        check(t, 16, 3, 3, 9, 9, 1);
        check(t, 8, 8, 4, 6, 6, 1);     /* head size the SIMD path skips */
        check(t, 20, 2, 1, 2, 5, 2);
        check(t, 64, 4, 4, 1, 39, 3);   /* generation, a bias on every key */
        check(t, 64, 4, 2, 6, 23, 3);   /* a prompt, biased              */
        check(t, 80, 2, 2, 1, 9, 3);    /* generation, head of 8 + 2 vectors */
        check(t, 128, 2, 1, 1, 30, 3);  /* generation, head of 2 x 8 vectors */
        /* generation with the heads side by side (a thread's kv heads at once) */
        check(t, 64, 6, 6, 1, 50, 1);   /* four heads and a tail of two */
        check(t, 64, 6, 2, 1, 50, 3);   /* groups of 3: a four spans kv heads */
        check(t, 64, 40, 5, 1, 70, 1);  /* groups of 8, more heads than one pass keeps */
        check(t, 32, 4, 4, 1, 9, 2);    /* the only row fully masked: zeros */
        check(t, 80, 4, 4, 1, 33, 1);   /* head of 4 + 1 vectors */
        check(t, 64, 8, 1, 1, 45, 1);   /* one kv head: fours of the group split over threads */
        check(t, 64, 71, 1, 1, 20, 3);  /* one kv head, a group of 71 (more than one pass) */
        check(t, 64, 12, 3, 1, 40, 1);  /* groups of 4, as many kv heads as threads */
        /* prompts in tiles of 16 queries against transposed keys, in blocks of 64 */
        check(t, 64, 4, 2, 37, 150, 1);   /* 5 tiles a group, 3 blocks and a tail of 22 keys */
        check(t, 64, 8, 1, 20, 20, 3);    /* one kv head: a tile is 2 tokens x 8 heads */
        check(t, 128, 2, 2, 33, 97, 0);   /* no mask: every query sees all 97 keys */
        check(t, 80, 3, 3, 18, 70, 2);    /* head of 80, row 0 fully masked */
        check(t, 16, 5, 5, 40, 40, 1);
        /* a head-major cache: one query per kv head goes key by key */
        check_cache(t, 64, 4, 4, 1, 45, 1, true);
        check_cache(t, 64, 8, 2, 1, 70, 3, true);  /* a group of 4: transposed keys */
        check_cache(t, 64, 4, 2, 19, 30, 1, true); /* a prompt */
        check_ext(t);
        check_cache(t, 20, 4, 2, 3, 9, 1, true);
    }
    return test_finish("test_core_flash_attn");
}
