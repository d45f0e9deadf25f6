/* The CPU plug-in's own weight layout (backends/cpu/cpu_repack.c, the x8
 * layouts of Q4_0, Q8_0, Q4_K and, in the 512-bit variant, MXFP4 and
 * Q6_K), driven through its ABI 1.1 slots directly:
 *   - tensor_alloc_size asks for exactly the eligible weights (2-D, rows a
 *     multiple of 8, blocks whole and dense) and 0 for the rest, and 0 for
 *     all with TPORT_CPU_REPACK=0;
 *   - mul_mat on the re-encoded copy, for 1 to 15 columns and 1 and 2
 *     threads, agrees with a double-precision dot of the dequantized
 *     weights within the activation-quantization bound, and with the same
 *     node on the plain bytes within float-summation-order differences;
 *     each column computed alone gives the batch's bits exactly;
 *   - with a ticket, tensor_write defers the re-encoding: until wait()
 *     the node reads the plain bytes (the plain path's bits exactly), and
 *     a buffer freed before its wait is dropped from the queue; without
 *     one it re-encodes on the spot;
 *   - other matrices (f16, f32, q5_K, rows not a multiple of 8) get a
 *     plain copy that gives the plain path's bits, deferred or not;
 *   - get_rows of the copy gives exactly the dequantized rows;
 *   - a handle that is not the backend's, or a view at another address,
 *     is declined, not read.
 * The plug-in file is TPORT_TEST_CPU_VARIANT; a variant without the x8
 * kernels (no AVX2) wants no weights, and the test says so and skips. */
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>

#include "core_test_util.h"
#include "quant/type_table.h"
#include "registry/registry.h"

#define NAME "test_cpu_repack"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ARCH_REQ_XCOMP_PERM 0x1023 /* <asm/prctl.h>, not in every libc's headers */
#define XFEATURE_XTILEDATA 18
#endif

/* Whether the avx512 variant uses AMX-INT8 tiles here, as it decides
 * (cpu_amx_usable, TPORT_CPU_AMX): the CPU has AMX-TILE and AMX-INT8 and
 * Linux grants the tile state. */
static bool amx_int8_here(void) {
#if defined(__x86_64__)
    const char *env = getenv("TPORT_CPU_AMX");
    if (env && (!strcmp(env, "0") || !strcmp(env, "off")))
        return false;
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 24)) || !(edx & (1u << 25)))
        return false;
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

static const tport_backend_api *api;
static void *be;
static bool wide_variant; /* the avx512 variant: the 512-bit x8 kernels */
static bool q6k_matrix_x8; /* Q6_K matrices take the x8 layout (not where AMX tiles take K-quant batches) */

static tport_tensor_view view(tport_type_id type, int64_t ne0, int64_t ne1, void *data) {
    const tport_type_traits *tr = tport_traits(type);
    tport_tensor_view t;
    memset(&t, 0, sizeof t);
    t.struct_size = sizeof t;
    t.type = type;
    for (int i = 0; i < TPORT_MAX_SRC; i++)
        t.src[i] = -1;
    t.ne[0] = ne0, t.ne[1] = ne1, t.ne[2] = t.ne[3] = 1;
    t.nb[0] = tr->info.block_bytes;
    t.nb[1] = tr->info.block_bytes * (uint64_t)(ne0 / tr->info.block_size);
    t.nb[2] = t.nb[3] = t.nb[1] * (uint64_t)ne1;
    t.data = data;
    t.name = "";
    return t;
}

static tport_status run_node(tport_tensor_view *ts, int n, int threads) {
    const tport_tensor_view *ptrs[4];
    for (int i = 0; i < n; i++)
        ptrs[i] = &ts[i];
    int32_t node = n - 1;
    tport_graph_view g = {.struct_size = sizeof g, .n_tensors = n, .tensors = ptrs, .n_nodes = 1, .nodes = &node,
                          .n_threads = threads, .graph_key = 1, .bind_key = 1};
    return api->compute(be, 0, &g);
}

static float frand(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* a[0 .. n) drawn from frand, in order. */
static void fill(float *a, int64_t n, unsigned *seed) {
    for (int64_t i = 0; i < n; i++)
        a[i] = frand(seed);
}

/* A weight in the backend's buffer, or 0 when it wants none; with a
 * ticket pointer, the re-encoding is deferred until wait(*ticket). */
static tport_buffer upload(const tport_tensor_view *w, void **host, tport_ticket *ticket) {
    uint64_t size = api->tensor_alloc_size(be, 0, w);
    if (!size)
        return 0;
    /* Q4_K's layout keeps its scales unpacked: 1184 bytes per 8 x 256 elements (1152 plain) */
    uint64_t want = w->type == TPORT_TYPE_Q4_K ? (uint64_t)(w->ne[0] / 256) * 1184 * (uint64_t)(w->ne[1] / 8)
                                               : w->nb[1] * (uint64_t)w->ne[1];
    CHECK(size == want, "tensor_alloc_size %llu, expected %llu", (unsigned long long)size, (unsigned long long)want);
    tport_buffer b = 0;
    CHECK(api->buffer_alloc(be, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, size, &b, host) == TPORT_STATUS_OK && b &&
              *host,
          "buffer_alloc: %s", tport_last_error());
    /* the source is the plain layout: its own size, not the buffer's */
    tport_status st = api->tensor_write(be, b, 0, w, w->data, w->nb[1] * (uint64_t)w->ne[1], ticket);
    CHECK(st == TPORT_STATUS_OK && (!ticket || *ticket > 0), "tensor_write: %s", tport_last_error());
    return b;
}

static void check(tport_type_id type, int64_t K, int64_t N, int64_t M, int threads) {
    const tport_type_traits *tr = tport_traits(type);
    unsigned seed = (unsigned)(K * 131 + N * 7 + M);
    float *wf = malloc((size_t)(K * N) * sizeof *wf), *deq = malloc((size_t)(K * N) * sizeof *deq);
    float *x = malloc((size_t)(K * M) * sizeof *x);
    float *y_own = calloc((size_t)(N * M), sizeof(float)), *y_plain = calloc((size_t)(N * M), sizeof(float));
    uint8_t *q = malloc((size_t)(tr->info.block_bytes * (uint64_t)(K / tr->info.block_size) * (uint64_t)N));
    fill(wf, K * N, &seed);
    fill(x, K * M, &seed);
    tr->from_float(wf, q, K * N);
    tr->to_float(q, deq, K * N);

    tport_tensor_view ts[3];
    ts[0] = view(type, K, N, q);
    ts[0].flags = TPORT_TENSOR_WEIGHT;
    void *host = NULL;
    /* one thread: deferred (a ticket); two: re-encoded in tensor_write */
    tport_ticket ticket = 0;
    tport_buffer b = upload(&ts[0], &host, threads == 1 ? &ticket : NULL);
    CHECK(b != 0, "%s [%lld x %lld] not taken", tr->info.name, (long long)K, (long long)N);
    ts[1] = view(TPORT_TYPE_F32, K, M, x);
    ts[2] = view(TPORT_TYPE_F32, N, M, y_plain);
    ts[2].op = TPORT_OP_MUL_MAT;
    ts[2].src[0] = 0, ts[2].src[1] = 1;
    CHECK(run_node(ts, 3, threads) == TPORT_STATUS_OK, "plain mul_mat: %s", tport_last_error());
    ts[0].buffer = b, ts[0].data = host;
    ts[2].data = y_own;
    if (ticket) {
        CHECK(run_node(ts, 3, threads) == TPORT_STATUS_OK, "mul_mat before the wait: %s", tport_last_error());
        CHECK(!memcmp(y_own, y_plain, (size_t)(N * M) * sizeof(float)),
              "%s K%lld N%lld M%lld: before its wait the weight was not read in the plain layout", tr->info.name,
              (long long)K, (long long)N, (long long)M);
        CHECK(api->wait(be, 0, ticket, 0) == TPORT_STATUS_OK, "wait: %s", tport_last_error());
    }
    CHECK(run_node(ts, 3, threads) == TPORT_STATUS_OK, "mul_mat on the own copy: %s", tport_last_error());
    /* MXFP4 and Q6_K are re-encoded by the 512-bit variant only (Q6_K
     * matrices not where the CPU takes K-quant batches on AMX tiles),
     * copied as they are by the others (whose plain kernels do not promise
     * a column's bits) */
    size_t wbytes = (size_t)(ts[0].nb[1] * (uint64_t)N);
    bool reencoded = memcmp(host, q, wbytes) != 0;
    if (type == TPORT_TYPE_MXFP4 || type == TPORT_TYPE_Q6_K) {
        bool want = type == TPORT_TYPE_Q6_K ? q6k_matrix_x8 : wide_variant;
        CHECK(reencoded == want, "%s K%lld N%lld: %s", tr->info.name, (long long)K, (long long)N,
              reencoded ? "re-encoded where it should keep the file's layout" : "not re-encoded");
    }

    int bad_ref = 0, bad_plain = 0;
    for (int64_t j = 0; j < M; j++) {
        double xmax = 0;
        for (int64_t k = 0; k < K; k++)
            xmax = fmax(xmax, fabs(x[j * K + k]));
        for (int64_t i = 0; i < N; i++) {
            double s = 0, sa = 0;
            for (int64_t k = 0; k < K; k++) {
                s += (double)deq[i * K + k] * x[j * K + k];
                sa += fabs(deq[i * K + k]);
            }
            double got = y_own[j * N + i], plain = y_plain[j * N + i];
            bad_ref += !(fabs(got - s) <= sa * xmax / 200.0 + 1e-4);
            /* the same integer sums, other float order: a few ulps of the magnitudes summed */
            bad_plain += !(fabs(got - plain) <= 1e-5 * (sa * xmax + 1.0));
        }
    }
    CHECK(!bad_ref && !bad_plain, "%s K%lld N%lld M%lld t%d: %d outputs off the reference, %d off the plain path",
          tr->info.name, (long long)K, (long long)N, (long long)M, threads, bad_ref, bad_plain);

    /* Each column alone gives the batch's bits: one column takes the
     * one-column kernels, a batch the four-column ones on one group or two
     * at a time (Q4_K and Q6_K with AVX-512: 5..8 columns at once), or, from 8
     * columns of Q8_0 where the CPU has AMX-INT8, the tiles
     * (cpu_mul_mat_amx_q8.c), and all of them add a row's block products
     * in one order. */
    if (M > 1 && ((type != TPORT_TYPE_MXFP4 && type != TPORT_TYPE_Q6_K) || reencoded)) {
        float *col = malloc((size_t)N * sizeof *col);
        int bad_cols = 0;
        for (int64_t j = 0; j < M; j++) {
            tport_tensor_view c1[3] = {ts[0], view(TPORT_TYPE_F32, K, 1, x + j * K), view(TPORT_TYPE_F32, N, 1, col)};
            c1[2].op = TPORT_OP_MUL_MAT;
            c1[2].src[0] = 0, c1[2].src[1] = 1;
            CHECK(run_node(c1, 3, threads) == TPORT_STATUS_OK, "one column: %s", tport_last_error());
            bad_cols += memcmp(col, y_own + j * N, (size_t)N * sizeof(float)) != 0;
        }
        CHECK(!bad_cols, "%s K%lld N%lld M%lld t%d: %d columns differ alone from in the batch", tr->info.name,
              (long long)K, (long long)N, (long long)M, threads, bad_cols);
        free(col);
    }

    /* get_rows of the copy: the dequantized rows, exactly */
    int32_t ids[3] = {(int32_t)(N - 1), 0, (int32_t)(N / 2 + 1)};
    float *rows = malloc((size_t)(3 * K) * sizeof *rows);
    tport_tensor_view gr[3];
    gr[0] = ts[0];
    gr[1] = view(TPORT_TYPE_I32, 3, 1, ids);
    gr[2] = view(TPORT_TYPE_F32, K, 3, rows);
    gr[2].op = TPORT_OP_GET_ROWS;
    gr[2].src[0] = 0, gr[2].src[1] = 1;
    CHECK(run_node(gr, 3, threads) == TPORT_STATUS_OK, "get_rows: %s", tport_last_error());
    int bad_rows = 0;
    for (int r = 0; r < 3; r++)
        bad_rows += memcmp(rows + r * K, deq + (int64_t)ids[r] * K, (size_t)K * sizeof(float)) != 0;
    CHECK(!bad_rows, "%s: get_rows of the own copy: %d of 3 rows differ", tr->info.name, bad_rows);

    /* a view of the copy at another address is declined, not read */
    ts[0].data = (uint8_t *)host + 64;
    CHECK(run_node(ts, 3, threads) != TPORT_STATUS_OK, "a view off the buffer's address was computed");
    api->buffer_free(be, b);
    free(rows);
    free(wf), free(deq), free(x), free(y_own), free(y_plain), free(q);
}

/* A plain copy (f16, f32, q5_K: types without an x8 layout) gives the
 * plain path's bits before its wait (the host's bytes), after it (the
 * copy) and when written without a ticket. */
static void plain_copy(tport_type_id type, int64_t K, int64_t N, int64_t M) {
    const tport_type_traits *tr = tport_traits(type);
    unsigned seed = (unsigned)(K + N + M + type);
    size_t wbytes = (size_t)(tr->info.block_bytes * (uint64_t)(K / tr->info.block_size) * (uint64_t)N);
    float *wf = malloc((size_t)(K * N) * sizeof *wf), *x = malloc((size_t)(K * M) * sizeof *x);
    float *y_plain = malloc((size_t)(N * M) * sizeof(float)), *y = malloc((size_t)(N * M) * sizeof(float));
    uint8_t *q = malloc(wbytes);
    fill(wf, K * N, &seed);
    fill(x, K * M, &seed);
    tr->from_float(wf, q, K * N);
    tport_tensor_view ts[3] = {view(type, K, N, q), view(TPORT_TYPE_F32, K, M, x), view(TPORT_TYPE_F32, N, M, y_plain)};
    ts[0].flags = TPORT_TENSOR_WEIGHT;
    ts[2].op = TPORT_OP_MUL_MAT;
    ts[2].src[0] = 0, ts[2].src[1] = 1;
    CHECK(run_node(ts, 3, 2) == TPORT_STATUS_OK, "plain mul_mat: %s", tport_last_error());
    ts[2].data = y;
    for (int deferred = 1; deferred >= 0; deferred--) {
        tport_tensor_view w = ts[0];
        CHECK(api->tensor_alloc_size(be, 0, &w) == wbytes, "%s: no plain copy offered", tr->info.name);
        void *host = NULL;
        tport_buffer b = 0;
        CHECK(api->buffer_alloc(be, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, wbytes, &b, &host) == TPORT_STATUS_OK,
              "buffer_alloc: %s", tport_last_error());
        tport_ticket t = 0;
        CHECK(api->tensor_write(be, b, 0, &w, q, wbytes, deferred ? &t : NULL) == TPORT_STATUS_OK &&
                  (t > 0) == deferred,
              "tensor_write: %s", tport_last_error());
        ts[0].buffer = b, ts[0].data = host;
        for (int pass = 0; pass < 1 + deferred; pass++) { /* deferred: before and after the wait */
            memset(y, 0, (size_t)(N * M) * sizeof(float));
            CHECK(run_node(ts, 3, 2) == TPORT_STATUS_OK, "mul_mat on the copy: %s", tport_last_error());
            CHECK(!memcmp(y, y_plain, (size_t)(N * M) * sizeof(float)), "%s %s%s: not the plain path's bits",
                  tr->info.name, deferred ? "deferred" : "written at once", deferred && pass ? ", after the wait" : "");
            if (deferred && !pass)
                CHECK(api->wait(be, 0, t, 0) == TPORT_STATUS_OK, "wait: %s", tport_last_error());
        }
        CHECK(!memcmp(host, q, wbytes), "%s: the copy is not the weight's bytes", tr->info.name);
        api->buffer_free(be, b);
        ts[0].buffer = 0, ts[0].data = q;
    }
    free(wf), free(x), free(y_plain), free(y), free(q);
}

/* Two weights queued, the first freed before any wait: the wait for the
 * second re-encodes it alone (get_rows then reads exact rows), and a wait
 * for the dropped one's ticket has nothing left to do. */
static void dropped_while_deferred(void) {
    const tport_type_traits *tr = tport_traits(TPORT_TYPE_Q8_0);
    enum { K = 256, N = 16 };
    static float wf[K * N], deq[K * N], rows[K];
    static uint8_t q1[34 * K / 32 * N], q2[34 * K / 32 * N];
    unsigned seed = 99;
    fill(wf, K * N, &seed);
    tr->from_float(wf, q1, K * N);
    tr->from_float(wf, q2, K * N);
    tr->to_float(q2, deq, K * N);
    tport_tensor_view w1 = view(TPORT_TYPE_Q8_0, K, N, q1), w2 = view(TPORT_TYPE_Q8_0, K, N, q2);
    void *h1 = NULL, *h2 = NULL;
    tport_ticket t1 = 0, t2 = 0;
    tport_buffer b1 = upload(&w1, &h1, &t1), b2 = upload(&w2, &h2, &t2);
    CHECK(b1 && b2 && t2 > t1, "tickets %llu then %llu", (unsigned long long)t1, (unsigned long long)t2);
    memset(q1, 0xEE, sizeof q1); /* the host's promise is off once freed: nothing may read it */
    api->buffer_free(be, b1);
    CHECK(api->wait(be, 0, t2, 0) == TPORT_STATUS_OK, "wait: %s", tport_last_error());
    memset(q2, 0xEE, sizeof q2); /* done: the copy no longer needs the source */
    CHECK(api->wait(be, 0, t1, 0) == TPORT_STATUS_OK, "wait for a dropped ticket: %s", tport_last_error());
    w2.buffer = b2, w2.data = h2, w2.flags = TPORT_TENSOR_WEIGHT;
    int32_t id = N - 3;
    tport_tensor_view gr[3] = {w2, view(TPORT_TYPE_I32, 1, 1, &id), view(TPORT_TYPE_F32, K, 1, rows)};
    gr[2].op = TPORT_OP_GET_ROWS;
    gr[2].src[0] = 0, gr[2].src[1] = 1;
    CHECK(run_node(gr, 3, 1) == TPORT_STATUS_OK, "get_rows: %s", tport_last_error());
    CHECK(!memcmp(rows, deq + (size_t)id * K, sizeof rows), "the weight queued after a dropped one came out wrong");
    api->buffer_free(be, b2);
}

/* Matrices without an x8 layout get a plain copy (their own size), and
 * with TPORT_CPU_COPY_EXPERTS=1 (set in main) so do stacks of quantized
 * experts (3-D, back to back: all their rows);
 * vectors, f32/f16 stacks, stacks with gaps and padded rows get nothing. */
static void eligibility(void) {
    uint8_t dummy[64];
    tport_tensor_view t = view(TPORT_TYPE_Q4_0, 64, 12, dummy); /* 12 rows: not a multiple of 8 */
    CHECK(api->tensor_alloc_size(be, 0, &t) == 12 * 36, "q4_0 with 12 rows: not a plain copy");
    t = view(TPORT_TYPE_Q4_K, 256, 20, dummy);
    CHECK(api->tensor_alloc_size(be, 0, &t) == 20 * 144, "q4_K with 20 rows: not a plain copy");
    t = view(TPORT_TYPE_Q5_K, 256, 16, dummy);
    CHECK(api->tensor_alloc_size(be, 0, &t) == 16 * 176, "q5_K (no x8 layout): not a plain copy");
    t = view(TPORT_TYPE_Q6_K, 256, 16, dummy); /* its x8 layout (512-bit variant) takes the same bytes */
    CHECK(api->tensor_alloc_size(be, 0, &t) == 16 * 210, "a q6_K matrix: not its own size");
    t = view(TPORT_TYPE_F32, 64, 1, dummy);
    CHECK(api->tensor_alloc_size(be, 0, &t) == 0, "a vector wanted");
    t = view(TPORT_TYPE_Q8_0, 64, 16, dummy);
    t.ne[2] = 3;
    t.nb[3] = t.nb[2] * 3;
    CHECK(api->tensor_alloc_size(be, 0, &t) == 3 * 16 * 68, "a stack of 3 q8_0 experts: not all its rows copied");
    t.nb[2] += 68; /* a gap between experts */
    CHECK(api->tensor_alloc_size(be, 0, &t) == 0, "a q8_0 stack with gaps wanted");
    t = view(TPORT_TYPE_F16, 64, 16, dummy);
    t.ne[2] = 2;
    t.nb[3] = t.nb[2] * 2;
    CHECK(api->tensor_alloc_size(be, 0, &t) == 0, "a 3-D f16 tensor wanted");
    t = view(TPORT_TYPE_Q8_0, 64, 16, dummy);
    t.nb[1] += 2; /* padded rows */
    CHECK(api->tensor_alloc_size(be, 0, &t) == 0, "q8_0 with padded rows wanted");
    /* a buffer handle that is not one of the backend's */
    tport_buffer bogus = 0;
    void *host = NULL;
    CHECK(api->buffer_alloc(be, 0, TPORT_MEM_HOST_STAGING, TPORT_USAGE_COMPUTE, 64, &bogus, &host) != TPORT_STATUS_OK,
          "a staging buffer was made by a host-memory backend");
    t = view(TPORT_TYPE_Q8_0, 64, 16, dummy);
    CHECK(api->tensor_write(be, 0, 0, &t, dummy, 64, NULL) != TPORT_STATUS_OK, "tensor_write to handle 0 worked");
}

/* A plain copy of a stack of experts (TPORT_CPU_COPY_EXPERTS=1, a type
 * without an x8 layout) holds every expert's rows as they were. */
static void expert_stack(void) {
    enum { K = 256, N = 8, E = 5 };
    size_t row = 176 * (K / 256), bytes = row * N * E;
    uint8_t *src = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        src[i] = (uint8_t)(i * 37 + i / 151);
    tport_tensor_view t = view(TPORT_TYPE_Q5_K, K, N, src);
    t.ne[2] = E;
    t.nb[3] = t.nb[2] * E;
    uint64_t size = api->tensor_alloc_size(be, 0, &t);
    CHECK(size == bytes, "a stack of %d q5_K experts: alloc size %llu, expected %zu", E, (unsigned long long)size,
          bytes);
    tport_buffer b = 0;
    void *host = NULL;
    if (size == bytes &&
        api->buffer_alloc(be, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, size, &b, &host) == TPORT_STATUS_OK) {
        CHECK(api->tensor_write(be, b, 0, &t, src, bytes, NULL) == TPORT_STATUS_OK, "tensor_write: %s",
              tport_last_error());
        CHECK(host && !memcmp(host, src, bytes), "the experts' copy differs from the file's bytes");
        api->buffer_free(be, b);
    }
    free(src);
}

/* A stack of E experts (K x N each) of `type`, 3-D and back to back. */
static tport_tensor_view stack_view(tport_type_id type, int64_t K, int64_t N, int64_t E, void *data) {
    tport_tensor_view t = view(type, K, N, data);
    t.ne[2] = E;
    t.nb[3] = t.nb[2] * (uint64_t)E;
    t.flags = TPORT_TENSOR_WEIGHT;
    t.name = "blk.3.ffn_up_exps.weight";
    return t;
}

/* Bytes of a stack re-encoded into its x8 layout: groups of 8 rows, each
 * the bytes its rows took, but Q4_K's 1184 per super-block (1152). */
static uint64_t x8_stack_bytes(tport_type_id type, int64_t K, int64_t N, int64_t E) {
    const tport_type_traits *tr = tport_traits(type);
    uint64_t per_block = type == TPORT_TYPE_Q4_K ? 1184 : 8 * tr->info.block_bytes;
    return per_block * (uint64_t)(K / tr->info.block_size) * (uint64_t)(N / 8) * (uint64_t)E;
}

/* A stack of experts with an x8 layout (Q4_K, Q8_0) is re-encoded by
 * default: mul_mat_id of T tokens, n_used experts each (rows of b shared
 * by the slots when n_b is 1), reads it
 *   - before its wait in the file's layout: the plain path's bits;
 *   - after it through the x8 kernels: within the activation-quantization
 *     bound of a double-precision dot of the dequantized weights and
 *     within float-summation-order differences of the plain path; each
 *     token alone gives the batch's bits (one column per expert, the
 *     generation case, against four at a time);
 * and get_rows of the copy seen as one matrix of E N rows (cpu_x8_row,
 * expert e's rows after expert e - 1's) gives every expert's dequantized
 * rows exactly, and mul_mat of it the plain matrix's results (within
 * float-order differences). */
static void expert_stack_x8(tport_type_id type, int64_t K, int64_t N, int64_t E, int64_t n_used, int64_t T,
                            int64_t n_b, int threads) {
    const tport_type_traits *tr = tport_traits(type);
    unsigned seed = (unsigned)(K * 3 + N * 5 + E * 7 + T * 11 + n_b);
    size_t wbytes = (size_t)(tr->info.block_bytes * (uint64_t)(K / tr->info.block_size) * (uint64_t)(N * E));
    float *wf = malloc((size_t)(K * N * E) * sizeof *wf), *deq = malloc((size_t)(K * N * E) * sizeof *deq);
    float *x = malloc((size_t)(K * n_b * T) * sizeof *x);
    float *y_plain = calloc((size_t)(N * n_used * T), sizeof(float));
    float *y_own = calloc((size_t)(N * n_used * T), sizeof(float));
    float *y_tok = calloc((size_t)(N * n_used), sizeof(float));
    int32_t *ids = malloc((size_t)(n_used * T) * sizeof *ids);
    uint8_t *q = malloc(wbytes);
    fill(wf, K * N * E, &seed);
    fill(x, K * n_b * T, &seed);
    for (int64_t t = 0; t < T; t++) { /* n_used distinct experts a token, some in falling order */
        seed = seed * 1103515245u + 12345u;
        int64_t start = (int64_t)((seed >> 16) % (unsigned)E);
        for (int64_t i = 0; i < n_used; i++)
            ids[t * n_used + i] = (int32_t)((start + (t % 2 ? n_used - 1 - i : i)) % E);
    }
    tr->from_float(wf, q, K * N * E);
    tr->to_float(q, deq, K * N * E);

    tport_tensor_view ts[4];
    ts[0] = stack_view(type, K, N, E, q);
    uint64_t size = api->tensor_alloc_size(be, 0, &ts[0]);
    CHECK(size == x8_stack_bytes(type, K, N, E), "%s stack K%lld N%lld E%lld: alloc size %llu, expected %llu",
          tr->info.name, (long long)K, (long long)N, (long long)E, (unsigned long long)size,
          (unsigned long long)x8_stack_bytes(type, K, N, E));
    tport_buffer b = 0;
    void *host = NULL;
    tport_ticket ticket = 0;
    if (size && api->buffer_alloc(be, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, size, &b, &host) == TPORT_STATUS_OK)
        CHECK(api->tensor_write(be, b, 0, &ts[0], q, wbytes, &ticket) == TPORT_STATUS_OK && ticket > 0,
              "tensor_write: %s", tport_last_error());
    CHECK(b != 0, "%s stack not taken", tr->info.name);
    ts[1] = view(TPORT_TYPE_F32, K, n_b, x);
    ts[1].ne[2] = T;
    ts[1].nb[3] = ts[1].nb[2] * (uint64_t)T;
    ts[2] = view(TPORT_TYPE_I32, n_used, T, ids);
    ts[3] = view(TPORT_TYPE_F32, N, n_used, y_plain);
    ts[3].ne[2] = T;
    ts[3].nb[3] = ts[3].nb[2] * (uint64_t)T;
    ts[3].op = TPORT_OP_MUL_MAT_ID;
    ts[3].src[0] = 0, ts[3].src[1] = 1, ts[3].src[2] = 2;
    CHECK(run_node(ts, 4, threads) == TPORT_STATUS_OK, "plain mul_mat_id: %s", tport_last_error());
    if (b) {
        ts[0].buffer = b, ts[0].data = host;
        ts[3].data = y_own;
        CHECK(run_node(ts, 4, threads) == TPORT_STATUS_OK, "mul_mat_id before the wait: %s", tport_last_error());
        CHECK(!memcmp(y_own, y_plain, (size_t)(N * n_used * T) * sizeof(float)),
              "%s stack: before its wait not read in the plain layout", tr->info.name);
        CHECK(api->wait(be, 0, ticket, 0) == TPORT_STATUS_OK, "wait: %s", tport_last_error());
        memset(y_own, 0, (size_t)(N * n_used * T) * sizeof(float));
        CHECK(run_node(ts, 4, threads) == TPORT_STATUS_OK, "mul_mat_id on the x8 stack: %s", tport_last_error());
    }
    int bad_ref = 0, bad_plain = 0, bad_tok = 0;
    for (int64_t t = 0; b && t < T; t++)
        for (int64_t i = 0; i < n_used; i++) {
            const float *xr = x + (t * n_b + i % n_b) * K;
            double xmax = 0;
            for (int64_t k = 0; k < K; k++)
                xmax = fmax(xmax, fabs(xr[k]));
            for (int64_t r = 0; r < N; r++) {
                const float *w = deq + ((int64_t)ids[t * n_used + i] * N + r) * K;
                double s = 0, sa = 0;
                for (int64_t k = 0; k < K; k++) {
                    s += (double)w[k] * xr[k];
                    sa += fabs(w[k]);
                }
                size_t o = (size_t)((t * n_used + i) * N + r);
                bad_ref += !(fabs(y_own[o] - s) <= sa * xmax / 200.0 + 1e-4);
                bad_plain += !(fabs(y_own[o] - y_plain[o]) <= 1e-5 * (sa * xmax + 1.0));
            }
        }
    CHECK(!bad_ref && !bad_plain, "%s stack K%lld N%lld E%lld T%lld n_b%lld t%d: %d outputs off the reference, %d off "
          "the plain path", tr->info.name, (long long)K, (long long)N, (long long)E, (long long)T, (long long)n_b,
          threads, bad_ref, bad_plain);
    for (int64_t t = 0; b && T > 1 && t < T; t++) {
        tport_tensor_view one[4] = {ts[0], ts[1], ts[2], ts[3]};
        one[1].data = x + t * n_b * K, one[1].ne[2] = 1;
        one[2].data = ids + t * n_used, one[2].ne[1] = 1;
        one[3].data = y_tok, one[3].ne[2] = 1;
        CHECK(run_node(one, 4, threads) == TPORT_STATUS_OK, "one token: %s", tport_last_error());
        bad_tok += memcmp(y_tok, y_own + t * n_used * N, (size_t)(n_used * N) * sizeof(float)) != 0;
    }
    CHECK(!bad_tok, "%s stack T%lld: %d tokens differ alone from in the batch", tr->info.name, (long long)T, bad_tok);

    if (b) { /* every expert's rows back, exactly */
        float *rows = malloc((size_t)(N * E * K) * sizeof *rows);
        int32_t *all = malloc((size_t)(N * E) * sizeof *all);
        for (int64_t r = 0; r < N * E; r++)
            all[r] = (int32_t)r;
        tport_tensor_view gr[3] = {view(type, K, N * E, host), view(TPORT_TYPE_I32, N * E, 1, all),
                                   view(TPORT_TYPE_F32, K, N * E, rows)};
        gr[0].buffer = b, gr[0].flags = TPORT_TENSOR_WEIGHT;
        gr[2].op = TPORT_OP_GET_ROWS;
        gr[2].src[0] = 0, gr[2].src[1] = 1;
        CHECK(run_node(gr, 3, threads) == TPORT_STATUS_OK, "get_rows of the stack: %s", tport_last_error());
        CHECK(!memcmp(rows, deq, (size_t)(N * E * K) * sizeof(float)), "%s stack: its rows do not come back exactly",
              tr->info.name);
        free(rows), free(all);
        /* mul_mat of that view (the tokens' rows as columns): the plain
         * matrix's results within float-order differences */
        int64_t M = n_b * T;
        float *mm_own = calloc((size_t)(N * E * M), sizeof(float));
        float *mm_plain = calloc((size_t)(N * E * M), sizeof(float));
        tport_tensor_view mm[3] = {view(type, K, N * E, q), view(TPORT_TYPE_F32, K, M, x),
                                   view(TPORT_TYPE_F32, N * E, M, mm_plain)};
        mm[0].flags = TPORT_TENSOR_WEIGHT;
        mm[2].op = TPORT_OP_MUL_MAT;
        mm[2].src[0] = 0, mm[2].src[1] = 1;
        CHECK(run_node(mm, 3, threads) == TPORT_STATUS_OK, "plain mul_mat: %s", tport_last_error());
        mm[0].data = host, mm[0].buffer = b, mm[2].data = mm_own;
        CHECK(run_node(mm, 3, threads) == TPORT_STATUS_OK, "mul_mat of the stack: %s", tport_last_error());
        int bad_mm = 0;
        for (int64_t j = 0; j < M; j++) {
            double xmax = 0;
            for (int64_t k = 0; k < K; k++)
                xmax = fmax(xmax, fabs(x[j * K + k]));
            for (int64_t r = 0; r < N * E; r++) {
                double sa = 0;
                for (int64_t k = 0; k < K; k++)
                    sa += fabs(deq[r * K + k]);
                size_t o = (size_t)(j * N * E + r);
                bad_mm += !(fabs(mm_own[o] - mm_plain[o]) <= 1e-5 * (sa * xmax + 1.0));
            }
        }
        CHECK(!bad_mm, "%s stack seen as a matrix: %d mul_mat outputs off the plain path", tr->info.name, bad_mm);
        free(mm_own), free(mm_plain);
        api->buffer_free(be, b);
    }
    free(wf), free(deq), free(x), free(y_plain), free(y_own), free(y_tok), free(ids), free(q);
}

/* The budget (TPORT_CPU_EXPERT_BUDGET_MB=1, set in main): a stack taken
 * while the stacks held stay within it, refused (0: it stays mapped) past
 * it, taken again once another is freed; a matrix is not counted. */
static void expert_budget(void) {
    enum { K = 2048, N = 128, E = 2 }; /* 296 KiB in the x8 layout */
    uint8_t *q = calloc((size_t)K / 256 * 144 * N * E, 1);
    tport_tensor_view t = stack_view(TPORT_TYPE_Q4_K, K, N, E, q);
    uint64_t size = x8_stack_bytes(TPORT_TYPE_Q4_K, K, N, E);
    tport_buffer held[4] = {0};
    for (int i = 0; i < 4; i++) {
        uint64_t want = api->tensor_alloc_size(be, 0, &t);
        CHECK(want == (i < 3 ? size : 0), "stack %d within a budget of 1 MiB: alloc size %llu", i,
              (unsigned long long)want);
        void *host = NULL;
        if (want && api->buffer_alloc(be, 0, TPORT_MEM_DEVICE, TPORT_USAGE_WEIGHTS, want, &held[i], &host) ==
                        TPORT_STATUS_OK)
            CHECK(api->tensor_write(be, held[i], 0, &t, q, t.nb[3], NULL) == TPORT_STATUS_OK, "tensor_write: %s",
                  tport_last_error());
    }
    tport_tensor_view m = view(TPORT_TYPE_Q4_K, K, 1024, q); /* over the budget itself, but not a stack */
    CHECK(api->tensor_alloc_size(be, 0, &m) != 0, "a matrix refused by the experts' budget");
    api->buffer_free(be, held[1]);
    CHECK(api->tensor_alloc_size(be, 0, &t) == size, "a stack refused after another was freed");
    for (int i = 0; i < 4; i++)
        if (held[i] && i != 1)
            api->buffer_free(be, held[i]);
    free(q);
}

/* Q4_K in the x8 layout and Q6_K (plain, or own6: the backend's copy, in
 * the x8 layout in the 512-bit variant) against the same activations, one
 * node after the other (a Q4_K_M layer's K and V): the second reuses the
 * first's packing of them (cpu_mul_mat_shares_packing), and each gives
 * the bits it gives alone. */
static void mixed_packing(int64_t K, int64_t N, int64_t M, int threads, bool own6) {
    const tport_type_traits *t4 = tport_traits(TPORT_TYPE_Q4_K), *t6 = tport_traits(TPORT_TYPE_Q6_K);
    unsigned seed = (unsigned)(K * 17 + N * 3 + M);
    size_t b4 = (size_t)(t4->info.block_bytes * (uint64_t)(K / 256) * (uint64_t)N);
    size_t b6 = (size_t)(t6->info.block_bytes * (uint64_t)(K / 256) * (uint64_t)N);
    float *wf = malloc((size_t)(K * N) * sizeof *wf), *x = malloc((size_t)(K * M) * sizeof *x);
    float *y[2], *alone[2];
    for (int i = 0; i < 2; i++) {
        y[i] = calloc((size_t)(N * M), sizeof(float));
        alone[i] = calloc((size_t)(N * M), sizeof(float));
    }
    uint8_t *q4 = malloc(b4), *q6 = malloc(b6);
    fill(wf, K * N, &seed);
    fill(x, K * M, &seed);
    t4->from_float(wf, q4, K * N);
    t6->from_float(wf, q6, K * N);
    tport_tensor_view w4 = view(TPORT_TYPE_Q4_K, K, N, q4);
    w4.flags = TPORT_TENSOR_WEIGHT;
    void *host = NULL;
    tport_buffer b = upload(&w4, &host, NULL);
    CHECK(b != 0, "q4_K [%lld x %lld] not taken", (long long)K, (long long)N);
    w4.buffer = b, w4.data = host;
    tport_tensor_view w6 = view(TPORT_TYPE_Q6_K, K, N, q6);
    w6.flags = TPORT_TENSOR_WEIGHT;
    tport_buffer buf6 = 0;
    if (own6) {
        void *host6 = NULL;
        buf6 = upload(&w6, &host6, NULL);
        CHECK(buf6 != 0, "q6_K [%lld x %lld] not taken", (long long)K, (long long)N);
        w6.buffer = buf6, w6.data = host6;
    }
    tport_tensor_view ts[5] = {w4, w6, view(TPORT_TYPE_F32, K, M, x), view(TPORT_TYPE_F32, N, M, y[0]),
                               view(TPORT_TYPE_F32, N, M, y[1])};
    for (int i = 0; i < 2; i++) {
        ts[3 + i].op = TPORT_OP_MUL_MAT;
        ts[3 + i].src[0] = i, ts[3 + i].src[1] = 2;
    }
    const tport_tensor_view *ptrs[5] = {&ts[0], &ts[1], &ts[2], &ts[3], &ts[4]};
    int32_t nodes[2] = {3, 4};
    tport_graph_view g = {.struct_size = sizeof g, .n_tensors = 5, .tensors = ptrs, .n_nodes = 2, .nodes = nodes,
                          .n_threads = threads, .graph_key = 2, .bind_key = 2};
    CHECK(api->compute(be, 0, &g) == TPORT_STATUS_OK, "q4_K then q6_K: %s", tport_last_error());
    for (int i = 0; i < 2; i++) {
        tport_tensor_view one[3] = {ts[i], ts[2], view(TPORT_TYPE_F32, N, M, alone[i])};
        one[2].op = TPORT_OP_MUL_MAT;
        one[2].src[0] = 0, one[2].src[1] = 1;
        CHECK(run_node(one, 3, threads) == TPORT_STATUS_OK, "alone: %s", tport_last_error());
        CHECK(!memcmp(alone[i], y[i], (size_t)(N * M) * sizeof(float)),
              "%s K%lld N%lld M%lld t%d: after %s the product differs from its own", i ? "q6_K" : "q4_K",
              (long long)K, (long long)N, (long long)M, threads, i ? "q4_K's" : "nothing");
    }
    api->buffer_free(be, b);
    if (buf6)
        api->buffer_free(be, buf6);
    for (int i = 0; i < 2; i++)
        free(y[i]), free(alone[i]);
    free(wf), free(x), free(q4), free(q6);
}

int main(void) {
    const char *variant = getenv("TPORT_TEST_CPU_VARIANT");
    if (!variant || !*variant)
        test_skip(NAME, "TPORT_TEST_CPU_VARIANT names no CPU plug-in");
    void *lib = dlopen(variant, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL, "dlopen: %s", dlerror());
    if (!lib)
        return test_finish(NAME);
    tport_backend_entry_fn entry = (tport_backend_entry_fn)dlsym(lib, TPORT_BACKEND_ENTRY_NAME);
    api = entry ? entry(tport_host_services()) : NULL;
    CHECK(api && api->abi_minor >= 1 && api->tensor_alloc_size && api->tensor_write, "no ABI 1.1 weight slots");
    if (!api || !api->tensor_alloc_size)
        return test_finish(NAME);
    if (api->required_isa & ~tport_isa_host()) {
        dlclose(lib);
        test_skip(NAME, "this machine lacks the variant's instruction sets");
    }
    wide_variant = strstr(variant, "avx512") != NULL;
    q6k_matrix_x8 = wide_variant && !amx_int8_here();
    setenv("TPORT_CPU_COPY_EXPERTS", "1", 1);
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    uint8_t probe[18 * 2 * 8];
    memset(probe, 0, sizeof probe);
    tport_tensor_view t = view(TPORT_TYPE_Q4_0, 64, 8, probe);
    if (api->tensor_alloc_size(be, 0, &t) == 0) {
        api->shutdown(be);
        dlclose(lib);
        test_skip(NAME, "this variant keeps no weights in a layout of its own (no AVX2 kernels)");
    }
    eligibility();
    expert_stack();
    /* generation (one token) and batches, slots sharing b's row or not */
    static const int64_t stacks[][6] = {{256, 16, 4, 2, 1, 1}, {512, 32, 8, 2, 1, 2}, {256, 48, 8, 4, 7, 1},
                                        {768, 24, 6, 2, 9, 2}, {256, 40, 8, 2, 16, 1}};
    for (size_t s = 0; s < sizeof stacks / sizeof stacks[0]; s++)
        for (int threads = 1; threads <= 2; threads++) {
            const int64_t *v = stacks[s];
            if (v[0] % 256 == 0)
                expert_stack_x8(TPORT_TYPE_Q4_K, v[0], v[1], v[2], v[3], v[4], v[5], threads);
            expert_stack_x8(TPORT_TYPE_Q8_0, v[0], v[1], v[2], v[3], v[4], v[5], threads);
            expert_stack_x8(TPORT_TYPE_Q4_0, v[0], v[1], v[2], v[3], v[4], v[5], threads);
            if (wide_variant) /* MXFP4's and Q6_K's x8 layouts exist with the 512-bit kernels only */
                expert_stack_x8(TPORT_TYPE_MXFP4, v[0], v[1], v[2], v[3], v[4], v[5], threads);
            if (wide_variant && v[0] % 256 == 0)
                expert_stack_x8(TPORT_TYPE_Q6_K, v[0], v[1], v[2], v[3], v[4], v[5], threads);
        }
    dropped_while_deferred();
    /* a step of a few sequences and one token */
    static const int64_t mixed[][3] = {{768, 64, 8}, {256, 32, 5}, {512, 24, 1}};
    for (size_t s = 0; s < sizeof mixed / sizeof mixed[0]; s++)
        for (int threads = 1; threads <= 2; threads++)
            for (int own6 = 0; own6 < 2; own6++)
                mixed_packing(mixed[s][0], mixed[s][1], mixed[s][2], threads, own6);
    plain_copy(TPORT_TYPE_F16, 256, 24, 3);
    plain_copy(TPORT_TYPE_F32, 128, 20, 1);
    plain_copy(TPORT_TYPE_Q5_K, 512, 12, 5);
    static const int64_t shapes[][3] = {{64, 8, 1}, {256, 24, 3}, {512, 40, 4}, {768, 16, 9}, {1024, 64, 1},
                                        {2048, 96, 5}, {512, 16, 8}, {5632, 16, 6},
                                        /* columns in several calls of the kernels */
                                        {256, 24, 15}, {1024, 16, 12},
                                        /* batches of 32 columns and more (Q8_0: AMX tiles where the CPU has
                                         * them): whole units of 32 rows and a last one of fewer, columns left
                                         * over */
                                        {256, 32, 32}, {512, 40, 33}, {1024, 64, 70}, {2048, 104, 64},
                                        /* from 8 columns (Q8_0 on AMX: a step of a few sequences), one
                                         * A tile or two, zero-padded */
                                        {512, 64, 8}, {256, 40, 13}, {1024, 72, 17}, {256, 32, 31},
                                        /* 5..8 columns: Q4_K's 8-column kernel on two groups at once and on
                                         * one (an odd count of groups) */
                                        {256, 24, 5}, {768, 40, 6}, {2048, 24, 7}, {256, 16, 8}, {768, 24, 8},
                                        {2048, 40, 8}, {768, 8, 5}, {2048, 16, 6},
                                        /* 513 groups of 8 rows: re-encoded on two threads, split unevenly */
                                        {256, 4104, 1}};
    /* MXFP4 and Q6_K: an x8 layout in the 512-bit variant, a plain copy elsewhere */
    static const tport_type_id types[] = {TPORT_TYPE_Q4_0, TPORT_TYPE_Q8_0, TPORT_TYPE_Q4_K, TPORT_TYPE_MXFP4,
                                          TPORT_TYPE_Q6_K};
    for (size_t ty = 0; ty < sizeof types / sizeof types[0]; ty++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int threads = 1; threads <= 2; threads++)
                if (shapes[s][0] % tport_traits(types[ty])->info.block_size == 0)
                    check(types[ty], shapes[s][0], shapes[s][1], shapes[s][2], threads);
    api->shutdown(be);

    /* by default experts without an x8 layout stay in the file's mapping;
     * those with one are re-encoded */
    unsetenv("TPORT_CPU_COPY_EXPERTS");
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    tport_tensor_view stack = stack_view(TPORT_TYPE_Q5_K, 256, 16, 3, probe);
    CHECK(api->tensor_alloc_size(be, 0, &stack) == 0, "a stack of experts copied without TPORT_CPU_COPY_EXPERTS=1");
    tport_tensor_view k4 = stack_view(TPORT_TYPE_Q4_K, 256, 16, 3, probe);
    CHECK(api->tensor_alloc_size(be, 0, &k4) == x8_stack_bytes(TPORT_TYPE_Q4_K, 256, 16, 3),
          "a stack of q4_K experts not re-encoded by default");
    /* a 3-D weight that is not a stack of experts (mul_mat reads it) */
    tport_tensor_view kb = stack_view(TPORT_TYPE_Q8_0, 256, 16, 3, probe);
    kb.name = "blk.0.attn_k_b.weight";
    CHECK(api->tensor_alloc_size(be, 0, &kb) == 0, "a 3-D q8_0 weight not named as experts re-encoded");
    expert_stack_x8(TPORT_TYPE_Q4_K, 256, 16, 4, 2, 3, 1, 2);
    CHECK(api->tensor_alloc_size(be, 0, &t) != 0, "a matrix no longer copied");
    api->shutdown(be);

    /* TPORT_CPU_REPACK_EXPERTS=0: stacks stay mapped, matrices do not;
     * with TPORT_CPU_COPY_EXPERTS=1 as well, a plain copy */
    setenv("TPORT_CPU_REPACK_EXPERTS", "0", 1);
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    CHECK(api->tensor_alloc_size(be, 0, &k4) == 0, "TPORT_CPU_REPACK_EXPERTS=0 still re-encodes a q4_K stack");
    CHECK(api->tensor_alloc_size(be, 0, &t) != 0, "TPORT_CPU_REPACK_EXPERTS=0 keeps a matrix mapped");
    api->shutdown(be);
    setenv("TPORT_CPU_COPY_EXPERTS", "1", 1);
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    CHECK(api->tensor_alloc_size(be, 0, &k4) == 144 * 16 * 3, "with both switches a q4_K stack is not a plain copy");
    api->shutdown(be);
    unsetenv("TPORT_CPU_COPY_EXPERTS");
    unsetenv("TPORT_CPU_REPACK_EXPERTS");

    /* TPORT_CPU_DENSE_Q6K_X8=0: a Q6_K matrix keeps the file's layout
     * (a plain copy: its bytes as they were) */
    setenv("TPORT_CPU_DENSE_Q6K_X8", "0", 1);
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    {
        enum { QK = 256, QN = 16 };
        float wf[QK * QN];
        unsigned seed = 5;
        fill(wf, QK * QN, &seed);
        uint8_t q6[QN * 210];
        tport_traits(TPORT_TYPE_Q6_K)->from_float(wf, q6, QK * QN);
        tport_tensor_view w = view(TPORT_TYPE_Q6_K, QK, QN, q6);
        w.flags = TPORT_TENSOR_WEIGHT;
        void *host = NULL;
        tport_buffer b = upload(&w, &host, NULL);
        CHECK(b != 0 && host && !memcmp(host, q6, sizeof q6), "TPORT_CPU_DENSE_Q6K_X8=0: a q6_K matrix re-encoded");
        if (b)
            api->buffer_free(be, b);
    }
    api->shutdown(be);
    unsetenv("TPORT_CPU_DENSE_Q6K_X8");

    /* past the budget stacks stay mapped */
    setenv("TPORT_CPU_EXPERT_BUDGET_MB", "1", 1);
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    expert_budget();
    api->shutdown(be);
    unsetenv("TPORT_CPU_EXPERT_BUDGET_MB");

    /* TPORT_CPU_REPACK=0: nothing is wanted */
    setenv("TPORT_CPU_REPACK", "0", 1);
    CHECK(api->init(&be) == TPORT_STATUS_OK, "init: %s", tport_last_error());
    CHECK(api->tensor_alloc_size(be, 0, &t) == 0, "TPORT_CPU_REPACK=0 still re-encodes");
    api->shutdown(be);
    unsetenv("TPORT_CPU_REPACK");
    dlclose(lib);
    return test_finish(NAME);
}
