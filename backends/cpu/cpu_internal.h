/* Internals shared by the CPU backend's files.  Includes only the ABI
 * header and the C library. */
#ifndef TPORT_CPU_INTERNAL_H
#define TPORT_CPU_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/backend.h"

#if defined(__GNUC__)
#define CPU_HIDDEN __attribute__((visibility("hidden")))
#else
#define CPU_HIDDEN
#endif

#define CPU_MAX_THREADS 256

/* The host's services, kept by the entry point. */
CPU_HIDDEN extern const tport_host_api *cpu_host;

/* ---- thread pool (cpu_threadpool.c) ------------------------------------ */
typedef struct cpu_pool cpu_pool;
typedef void (*cpu_task_fn)(void *arg, int ith, int nth);
CPU_HIDDEN cpu_pool *cpu_pool_new(void);
/* Runs fn(arg, ith, nth) for ith in [0, nth) on nth threads (the caller is
 * thread 0) and returns when all are done.  Workers are created lazily
 * and reused; nth may come out smaller if a thread cannot be started.
 * A graph is one such run (cpu_graph.c). */
CPU_HIDDEN void cpu_pool_run(cpu_pool *pool, cpu_task_fn fn, void *arg, int nth);
CPU_HIDDEN void cpu_pool_free(cpu_pool *pool);

/* ---- barrier between phases (cpu_barrier.c) --------------------------- */
typedef struct cpu_barrier cpu_barrier;
CPU_HIDDEN cpu_barrier *cpu_barrier_new(void);
CPU_HIDDEN void cpu_barrier_free(cpu_barrier *b);
/* Waits until all nth threads of the run have arrived; every thread's
 * writes before it are visible to every thread after it.  Returns whether
 * any thread arrived with `failed` set (the same answer for all). */
CPU_HIDDEN bool cpu_barrier_wait(cpu_barrier *b, int ith, int nth, bool failed);

/* ---- one node being computed ------------------------------------------- */
/* src[4] and src[5] are the view's src_more (ABI 1.3), NULL when the
 * host's record is older */
#define CPU_MAX_SRC (TPORT_MAX_SRC + 2)
typedef struct cpu_op {
    const tport_tensor_view *dst;
    const tport_tensor_view *src[CPU_MAX_SRC];
    int nth;
    /* its first phase needs no barrier after the node before it: neither
     * touches what the other writes, nor scratch the other uses
     * (cpu_graph.c) */
    bool joins_previous;
    /* mul_mat, mul_mat_id: b's rows are in scratch already, packed the
     * same way by the node before it (cpu_mul_mat_shares_packing,
     * cpu_mul_mat_id_shares_packing) */
    bool reuses_packing;
    /* rms_norm/norm: the mul by a weight row that follows, done in the
     * same pass (cpu_norm_fuses_mul); that mul runs nothing itself */
    const struct cpu_op *fused_mul;
    bool fused;
    /* flash_attn of one token whose neighbours in the order are alike
     * (tport serve's sequences): one thread takes the whole node while
     * the others take the next ones (cpu_graph.c's plan_whole_nodes) */
    bool whole;
    /* rope: the cos and sin of every token, filled before the run; NULL
     * when the positions are computed by the graph */
    const float *table;
    /* src[0] as a plain weight, when its re-encoding is deferred */
    tport_tensor_view plain_src0;
    /* scratch: `per_thread` bytes for each thread after `shared` bytes */
    uint8_t *scratch;
    size_t shared, per_thread;
    /* the first error a worker hit (workers cannot pass messages through
     * the host's thread-local error) */
    atomic_int status;
    char message[192];
    /* dynamic work sharing (cpu_claim): the next unclaimed chunk, zeroed
     * with the node before the graph runs.  One counter per node, so only
     * one phase of a node may claim chunks (a reset between phases would
     * race with a faster thread's claims). */
    atomic_llong next_chunk;
} cpu_op;

/* ---- running a graph (cpu_graph.c) --------------------------------------
 * The whole graph is one run of the pool: every thread walks the nodes,
 * and each op's run function, called by every thread with the same node,
 * runs its phases with cpu_parallel.  Everything a run function computes
 * before cpu_parallel (a plan) must come out the same on every thread;
 * state shared between threads lives in the cpu_op. */
typedef struct cpu_ctx {
    int ith, nth;        /* this thread, the threads of the run */
    cpu_barrier *barrier;
    cpu_op *op;          /* the node being run */
    int last_nth;        /* threads of the previous phase, 0 before the first */
    bool first_phase;    /* the next phase is op's first */
    bool failed;         /* a phase this thread ran has failed */
    bool stopped;        /* a barrier reported a failure: run nothing more */
} cpu_ctx;

/* One phase of ctx->op: fn(arg, ith, nth) on the threads ith < nth (at
 * most ctx->nth), after a barrier with the previous phase unless both run
 * on thread 0 alone or this is the first phase of an op that joins the
 * one before it.  After a failure nothing more runs. */
CPU_HIDDEN void cpu_parallel(cpu_ctx *ctx, cpu_task_fn fn, void *arg, int nth);
typedef struct cpu_graph cpu_graph;
CPU_HIDDEN cpu_graph *cpu_graph_new(void);
CPU_HIDDEN void cpu_graph_free(cpu_graph *g);
/* Computes graph view v with the pool; errors through cpu_host->error. */
CPU_HIDDEN tport_status cpu_graph_compute(cpu_graph *g, cpu_pool *pool, const tport_graph_view *v);

/* Records a kernel failure (first one wins). */
CPU_HIDDEN void cpu_op_fail(cpu_op *op, tport_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static inline uint8_t *cpu_thread_scratch(const cpu_op *op, int ith) {
    return op->scratch + op->shared + (size_t)ith * op->per_thread;
}

/* [r0, r1): this thread's share of n items. */
static inline void cpu_split(int64_t n, int ith, int nth, int64_t *r0, int64_t *r1) {
    int64_t per = (n + nth - 1) / nth;
    *r0 = per * ith < n ? per * ith : n;
    *r1 = *r0 + per < n ? *r0 + per : n;
}

/* Chunks of about n / (per_thread nth) items, so that a thread that was
 * preempted or is slower leaves its work to the others.  Batches take 8 a
 * thread; work that streams its data once (generation reads every weight
 * once a token) takes 2: each claim restarts a stream and moves the
 * counter's cache line between cores, and generation on a Zen 5 was
 * faster with 2 a thread than with 8 in every interleaved pair (RESULTS
 * run 15). */
static inline int64_t cpu_chunk_size(int64_t n, int nth, int per_thread) {
    int64_t parts = (int64_t)per_thread * nth, c = (n + parts - 1) / parts;
    return nth <= 1 ? (n > 0 ? n : 1) : c > 0 ? c : 1;
}

/* Claims the next chunk [*i0, *i1) of n items; false when all are taken.
 * Chunks are disjoint: each item goes to exactly one thread. */
static inline bool cpu_claim(cpu_op *op, int64_t n, int64_t chunk, int64_t *i0, int64_t *i1) {
    int64_t c = atomic_fetch_add_explicit(&op->next_chunk, 1, memory_order_relaxed);
    if (c >= (n + chunk - 1) / chunk)
        return false;
    *i0 = c * chunk;
    *i1 = *i0 + chunk < n ? *i0 + chunk : n;
    return true;
}

static inline int64_t cpu_nrows(const tport_tensor_view *t) {
    return t->ne[1] * t->ne[2] * t->ne[3];
}

/* Address of row (i1, i2, i3). */
static inline uint8_t *cpu_row(const tport_tensor_view *t, int64_t i1, int64_t i2, int64_t i3) {
    return (uint8_t *)t->data + (size_t)i1 * t->nb[1] + (size_t)i2 * t->nb[2] + (size_t)i3 * t->nb[3];
}

/* Row index r -> (i1, i2, i3) of a shape. */
static inline void cpu_unravel_row(const tport_tensor_view *t, int64_t r, int64_t *i1, int64_t *i2, int64_t *i3) {
    *i1 = r % t->ne[1];
    *i2 = (r / t->ne[1]) % t->ne[2];
    *i3 = r / (t->ne[1] * t->ne[2]);
}

/* ---- type helpers (cpu_types.c) ---------------------------------------- */
CPU_HIDDEN void cpu_types_init(void); /* once, from init: conversion tables */
CPU_HIDDEN size_t cpu_type_size(tport_type_id type);       /* bytes per block, 0 unknown */
CPU_HIDDEN int64_t cpu_block_size(tport_type_id type);     /* 0 unknown */
CPU_HIDDEN bool cpu_can_to_float(tport_type_id type);
CPU_HIDDEN bool cpu_can_from_float(tport_type_id type);
/* True if the elements (or blocks) of each row are adjacent. */
CPU_HIDDEN bool cpu_rows_dense(const tport_tensor_view *t);
/* The bytes a view's elements lie in, [lo, hi): from its first element to
 * the end of its last; all of memory when that cannot be told. */
typedef struct cpu_byte_range {
    uintptr_t lo, hi;
} cpu_byte_range;
CPU_HIDDEN cpu_byte_range cpu_view_range(const tport_tensor_view *t);
CPU_HIDDEN bool cpu_ranges_overlap(cpu_byte_range a, cpu_byte_range b);
CPU_HIDDEN bool cpu_views_overlap(const tport_tensor_view *a, const tport_tensor_view *b);
/* The same elements: address, type, shape and strides. */
CPU_HIDDEN bool cpu_same_view(const tport_tensor_view *a, const tport_tensor_view *b);
/* n elements of a row (stride nb[0]) to f32; false on failure. */
CPU_HIDDEN bool cpu_row_to_f32(const tport_tensor_view *t, const uint8_t *row, int64_t n, float *out);
/* n f32 values into a row of t (stride nb[0]). */
CPU_HIDDEN bool cpu_row_from_f32(const tport_tensor_view *t, uint8_t *row, int64_t n, const float *in);
/* n floats to f16, rounded to nearest even (F16C where the variant has it) */
CPU_HIDDEN bool cpu_f32_to_f16(const float *in, uint16_t *out, int64_t n);
/* A read-only f32 row: the row itself when it is dense f32, else a copy in buf. */
CPU_HIDDEN const float *cpu_row_f32(const tport_tensor_view *t, int64_t i1, int64_t i2, int64_t i3, float *buf);
CPU_HIDDEN float cpu_half_to_float(uint16_t h); /* after cpu_types_init */

/* ---- ops (one file per family) ----------------------------------------- */
/* Bytes of scratch a node needs: shared, then per thread. */
CPU_HIDDEN void cpu_op_scratch(const cpu_op *op, size_t *shared, size_t *per_thread);
CPU_HIDDEN bool cpu_supports(const tport_graph_view *g, int32_t node);

CPU_HIDDEN void cpu_run_elementwise(cpu_ctx *ctx, cpu_op *op);
CPU_HIDDEN void cpu_run_copy(cpu_ctx *ctx, cpu_op *op);
CPU_HIDDEN void cpu_run_norm(cpu_ctx *ctx, cpu_op *op);
/* True if norm can do mul (the node after it) in its own pass. */
CPU_HIDDEN bool cpu_norm_fuses_mul(const cpu_op *norm, const cpu_op *mul);
CPU_HIDDEN void cpu_run_rope(cpu_ctx *ctx, cpu_op *op);
/* A rope node's table of cos and sin (cpu_op.table): its size in floats
 * (0: the positions are not known before the run), whether two nodes have
 * the same one, and filling it. */
CPU_HIDDEN size_t cpu_rope_table_floats(const cpu_op *op);
static inline bool cpu_is_rope(tport_op_id op) {
    return op == TPORT_OP_ROPE || op == TPORT_OP_ROPE_EXT;
}
CPU_HIDDEN bool cpu_rope_same_table(const cpu_op *a, const cpu_op *b);
CPU_HIDDEN bool cpu_rope_fill_table(const cpu_op *op, float *table);
CPU_HIDDEN void cpu_run_activation(cpu_ctx *ctx, cpu_op *op); /* gelu_f16, gelu_erf, tanh, clamp */
CPU_HIDDEN void cpu_run_mul_mat(cpu_ctx *ctx, cpu_op *op);
/* Mixture of experts (ABI 1.3): the expert-indexed product
 * (cpu_mul_mat_id.c) and sigmoid, sum_rows, argsort_top_k, add_id
 * (cpu_ops_moe.c). */
CPU_HIDDEN void cpu_run_mul_mat_id(cpu_ctx *ctx, cpu_op *op);
CPU_HIDDEN size_t cpu_mul_mat_id_shared_scratch(const cpu_op *op);
CPU_HIDDEN size_t cpu_mul_mat_id_thread_scratch(const cpu_op *op);
/* True if mul_mat_id b, run right after mul_mat_id a, finds b's packed
 * rows in scratch as a left them (cpu_mul_mat_id.c). */
CPU_HIDDEN bool cpu_mul_mat_id_shares_packing(const cpu_op *a, const cpu_op *b);
CPU_HIDDEN void cpu_run_moe(cpu_ctx *ctx, cpu_op *op);
CPU_HIDDEN void cpu_run_flash_attn(cpu_ctx *ctx, cpu_op *op);
CPU_HIDDEN size_t cpu_flash_attn_thread_scratch(const cpu_op *op);
/* True if flash_attn op attends for one token, its heads side by side
 * (the decoding path, which can run whole on one thread) */
CPU_HIDDEN bool cpu_flash_attn_one_token(const cpu_op *op);
CPU_HIDDEN size_t cpu_mul_mat_shared_scratch(const cpu_op *op);
CPU_HIDDEN size_t cpu_mul_mat_thread_scratch(const cpu_op *op);
/* True if mul_mat b, run right after mul_mat a, finds its packed rows of
 * src1 in scratch as a left them: the same src1, packed the same way. */
CPU_HIDDEN bool cpu_mul_mat_shares_packing(const cpu_op *a, const cpu_op *b);
/* True if mul_mat packs b's rows in a phase before it computes
 * (cpu_run_mul_mat: unless it reuses_packing). */
CPU_HIDDEN bool cpu_mul_mat_packs(const cpu_op *op);

/* ---- generation against dense f32/f16 weights (cpu_mul_mat_gen.c) -----
 * out[r] = dot(rows[r], b) for r < nrows <= CPU_GEN_ROWS, each row K
 * dense elements of a's type, b f32.  Present with AVX2 + FMA + F16C. */
#define CPU_GEN_ROWS 8
CPU_HIDDEN bool cpu_gen_available(const tport_tensor_view *a);
CPU_HIDDEN void cpu_gen_dot(const tport_tensor_view *a, int64_t K, const void *const rows[], int nrows,
                            const float *b, float *out);
/* A few columns (short prompts): out[c * nrows + r] = dot(rows[r], b[c])
 * for c < ncols <= CPU_GEN_COLS, each row read once for all of them. */
#define CPU_GEN_COLS 8
CPU_HIDDEN void cpu_gen_dot_cols(const tport_tensor_view *a, int64_t K, const void *const rows[], int nrows,
                                 const float *const b[], int ncols, float *out);

/* ---- batches of dense f32/f16 weights (cpu_mul_mat_dense.c) ------------
 * c[j * ldc + r] (f32) = dot(weight row r, b row j) for r < rows <=
 * CPU_DENSE_ROWS and j < M; weight rows (of the view w, F32 or F16) at
 * a + r * lda, b's f32 rows at b + j * ldb, strides in bytes, every
 * element dense. */
#define CPU_DENSE_ROWS 64
typedef struct cpu_dense_mm {
    const tport_tensor_view *w;
    int64_t K, M;
    int rows;
    const uint8_t *a, *b;
    uint8_t *c;
    size_t lda, ldb, ldc;
    bool bf16; /* b's rows are bf16 (cpu_dense_column_bf16): multiply in bf16 */
} cpu_dense_mm;
CPU_HIDDEN void cpu_dense_init(void); /* once, from init (reads TPORT_CPU_F16_BATCH) */
/* Whether batches against the weight a multiply in bf16 (opt-in, lossy,
 * TPORT_CPU_F16_BATCH=bf16: f16 weights, K a multiple of 16); then b's rows
 * are given as bf16, each made by cpu_dense_column_bf16 (K elements). */
CPU_HIDDEN bool cpu_dense_bf16(const tport_tensor_view *a, int64_t K);
CPU_HIDDEN void cpu_dense_column_bf16(const float *src, int64_t K, uint16_t *dst);
CPU_HIDDEN bool cpu_dense_mm_available(tport_type_id type, int64_t K);
CPU_HIDDEN size_t cpu_dense_mm_scratch(void); /* bytes per thread */
CPU_HIDDEN bool cpu_dense_mm_run(const cpu_dense_mm *x, void *scratch); /* false: a conversion failed */

/* ---- the bf16 batches on AMX tiles (cpu_mul_mat_amx.c) -----------------
 * Built into the 512-bit variant by compilers that know AMX; used only
 * where cpu_amx_init (the CPU has AMX-BF16 and Linux grants the tile
 * state) said yes.  cpu_amx_bf16_block: one K block of kc (a multiple of
 * 32) k, the weight panels as pack_block_bf16 leaves them (rows of them,
 * zero-padded to 32) against M bf16 rows of b (stride ldb, at the block's
 * first k) into c (stride ldc), added to c when add; scratch holds
 * cpu_amx_scratch(kc) bytes. */
#if defined(__x86_64__) && defined(__AVX512F__) && defined(__AVX2__) && defined(__FMA__) && defined(__F16C__) &&   \
    ((defined(__clang__) && __clang_major__ >= 12) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 11))
#define CPU_AMX 1
/* The 64-byte operand of ldtilecfg (palette 1: colsb and rows of each of
 * the 8 tiles).  The kernels keep theirs in static memory: GCC 12 does
 * not see that ldtilecfg reads it and dropped the stores of a local one. */
typedef struct cpu_amx_tile_config {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} cpu_amx_tile_config;
CPU_HIDDEN bool cpu_amx_init(void);
/* whether the CPU has AMX-TILE and the AMX feature bit edx_bit of
 * CPUID.(7,0).EDX, and Linux grants the process the tile state */
CPU_HIDDEN bool cpu_amx_usable(unsigned edx_bit);
CPU_HIDDEN size_t cpu_amx_scratch(int64_t kc);
CPU_HIDDEN void cpu_amx_bf16_block(const uint32_t *panels, int rows, int64_t kc, const uint8_t *b, size_t ldb,
                                   int64_t M, uint8_t *c, size_t ldc, bool add, void *scratch);
/* Q8_0 x8 batches on AMX-INT8 tiles (cpu_mul_mat_amx_q8.c), where
 * cpu_amx_q8_on(): CPU_AMX_Q8_ROWS weight rows (4 x8 groups) unpacked once
 * into scratch (cpu_amx_q8_scratch(K) bytes a thread), then swept over
 * the batch CPU_AMX_Q8_COLS columns at a time. */
#define CPU_AMX_Q8_ROWS 32
#define CPU_AMX_Q8_COLS 32
CPU_HIDDEN void cpu_amx_q8_init(void); /* once, from init (reads TPORT_CPU_AMX) */
CPU_HIDDEN bool cpu_amx_q8_on(void);
CPU_HIDDEN size_t cpu_amx_q8_scratch(int64_t K);
CPU_HIDDEN void cpu_amx_q8_unpack(const uint8_t *groups, size_t group_bytes, int64_t K, void *scratch);
CPU_HIDDEN void cpu_amx_q8_begin(void); /* the thread's tile configuration, before cpu_amx_q8_cols */
CPU_HIDDEN void cpu_amx_q8_end(void);   /* and its release after */
/* K-quant (Q4_K, Q5_K, Q6_K, IQ4_XS) x Q8_K batches on AMX-INT8 tiles
 * (cpu_mul_mat_amx_kq.c): a tile kind (cpu_tile_kinds.c) of
 * CPU_AMX_KQ_ROWS rows and up to CPU_AMX_KQ_COLS columns a dot, with the
 * thread's tile configuration loaded by begin (per weight type) and
 * released by end. */
#define CPU_AMX_KQ_ROWS 16
#define CPU_AMX_KQ_COLS 32
/* Columns from which the AMX kernel beats the VNNI one: unpacking 16 rows
 * into the tiles costs about two sweeps of 32 columns, so below 64
 * columns it is slower, at 64 even, and it wins from 96 (RESULTS run 36). */
#define CPU_AMX_KQ_MIN_COLS 96
CPU_HIDDEN bool cpu_amx_kq_available(tport_type_id type);
CPU_HIDDEN size_t cpu_amx_kq_scratch(int64_t K);
CPU_HIDDEN void cpu_amx_kq_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K,
                                  uint8_t *tile);
CPU_HIDDEN void cpu_amx_kq_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y,
                               size_t y_stride, int ncols, float *out);
CPU_HIDDEN void cpu_amx_kq_begin(tport_type_id type);
CPU_HIDDEN void cpu_amx_kq_end(void);
/* MXFP4, IQ4_NL, Q4_0, Q5_0 and plain Q8_0 batches x Q8_0 on AMX-INT8
 * tiles (cpu_mul_mat_amx_q4.c): a tile kind (cpu_tile_kinds.c) of
 * CPU_AMX_Q4_ROWS rows against up to CPU_AMX_Q4_COLS columns a dot, where
 * cpu_amx_q8_on(); begin also forgets the thread's copied columns (a new
 * task), so it is called once per thread and task. */
#define CPU_AMX_Q4_ROWS 32
#define CPU_AMX_Q4_COLS 32
CPU_HIDDEN bool cpu_amx_q4_available(tport_type_id type);
CPU_HIDDEN size_t cpu_amx_q4_scratch(int64_t K);
CPU_HIDDEN void cpu_amx_q4_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K,
                                  uint8_t *scratch);
CPU_HIDDEN void cpu_amx_q4_dot(tport_type_id type, const uint8_t *scratch, int64_t K, const uint8_t *y,
                               size_t y_stride, int ncols, float *out);
CPU_HIDDEN void cpu_amx_q4_begin(tport_type_id type);
CPU_HIDDEN void cpu_amx_q4_end(void);
/* the same rows from ngroups (<= CPU_AMX_Q4_ROWS / 8) groups of a Q4_0
 * or MXFP4 weight in its x8 layout (group_bytes apart), for cpu_amx_q4_dot */
CPU_HIDDEN void cpu_amx_q4_unpack_x8(int layout, const uint8_t *groups, size_t group_bytes, int ngroups, int64_t K,
                                     uint8_t *scratch);
#else
#define CPU_AMX 0
#endif

/* ---- tiled K-quant (Q4_K, Q5_K, Q6_K) x Q8_K mul_mat
 * (cpu_mul_mat_kqtile.c): the same shape of interface as the Q8_0 one
 * below, tiles of CPU_Q8TILE_ROWS rows. */
CPU_HIDDEN bool cpu_kqtile_available(tport_type_id type);
CPU_HIDDEN size_t cpu_kqtile_scratch(int64_t K);
CPU_HIDDEN void cpu_kqtile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K,
                                  uint8_t *tile);
CPU_HIDDEN void cpu_kqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y,
                               size_t y_stride, int ncols, float *out);
/* Q6_K x Q8_K batches of up to 8 columns straight from the weights, no
 * unpacked tile (cpu_mul_mat_q6tile.c; AVX-512 VNNI builds only): the
 * interface of the tiles, whose "tile" only notes the rows. */
CPU_HIDDEN bool cpu_q6tile_available(tport_type_id type);
CPU_HIDDEN size_t cpu_q6tile_scratch(int64_t K);
CPU_HIDDEN void cpu_q6tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K,
                                  uint8_t *tile);
CPU_HIDDEN void cpu_q6tile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y,
                               size_t y_stride, int ncols, float *out);
/* Sub-block j (of 32) of a super-block as the tile kernels unpack it: its
 * values, the integer sub-scale of each 16-half, d, and for Q4_K/Q5_K the
 * integer min and dmin (the AMX kernel's unpacking; builds with the
 * tiled kernels). */
CPU_HIDDEN void cpu_kqtile_sub(tport_type_id type, const uint8_t *blk, int j, uint8_t q[32], int isc[2], int *m,
                               float *d, float *dmin);

/* ---- tiled Q8_0/Q4_0/Q5_0/IQ4_NL/MXFP4 x Q8_0, Q4_1/Q5_1 x Q8_1 mul_mat
 * (cpu_mul_mat_q8tile.c) ------------------------------------------------
 * Present in builds with AVX-512 VNNI or AVX2 + FMA + F16C; elsewhere
 * available() is false. */
#define CPU_Q8TILE_ROWS 8
CPU_HIDDEN bool cpu_q8tile_available(tport_type_id type);
/* Bytes of the unpacked tile of CPU_Q8TILE_ROWS rows of K elements. */
CPU_HIDDEN size_t cpu_q8tile_scratch(int64_t K);
/* Unpacks nrows (<= CPU_Q8TILE_ROWS) rows of `type`; missing rows are 0. */
CPU_HIDDEN void cpu_q8tile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K,
                                  uint8_t *tile);
/* out[c * CPU_Q8TILE_ROWS + r] = dot(tile row r, column c) for ncols (1..4)
 * columns y + c * y_stride of type's vec_dot_type (Q8_0 or Q8_1); type as
 * unpacked. */
CPU_HIDDEN void cpu_q8tile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y,
                               size_t y_stride, int ncols, float *out);

/* ---- tiled lattice i-quant (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
 * IQ1_M) and Q2_K x Q8_K mul_mat (cpu_mul_mat_iqtile.c): the same
 * interface as the K-quant one above. */
CPU_HIDDEN bool cpu_iqtile_available(tport_type_id type);
CPU_HIDDEN size_t cpu_iqtile_scratch(int64_t K);
CPU_HIDDEN void cpu_iqtile_unpack(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K,
                                  uint8_t *tile);
CPU_HIDDEN void cpu_iqtile_dot(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y,
                               size_t y_stride, int ncols, float *out);

/* ---- the tile kinds (cpu_tile_kinds.c) ---------------------------------
 * One row per tiled kernel (CPU_Q8TILE_ROWS weight rows unpacked once,
 * then swept over packed activation columns), so that a product picks its
 * kernel by table, not by a branch per type: the weight types a row takes
 * (available), the activations' type (vec_dot_type, as the per-row
 * kernels pack them) and the entry points, with the interfaces of
 * cpu_q8tile_* above (dot takes the weight type too). */
typedef struct cpu_tile_kind {
    tport_type_id vec_dot_type;
    /* mul_mat_id: an expert's tokens from which unpacking a tile and
     * sweeping it beats the per-row kernel (from profiles: Q4_K's scalar
     * unpacking cost about 4.5 columns of its tile kernel, which takes half
     * a row kernel's time per column); mul_mat tiles batches from
     * TILED_MIN_COLS columns */
    int min_cols;
    bool (*available)(tport_type_id type);
    size_t (*scratch)(int64_t K);
    void (*unpack)(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile);
    void (*dot)(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols,
                float *out);
    /* rows a tile unpacks (<= CPU_TILE_MAX_ROWS) and columns a dot takes at
     * most (<= CPU_TILE_MAX_COLS); out of dot is [column][rows] */
    int rows, cols;
    /* columns a product needs for this row, mul_mat's batch or
     * mul_mat_id's expert (0: any); a row with none comes after those
     * with */
    int64_t min_batch;
    /* NULL, or a thread's set-up for the kind's dots of weights of `type`
     * before its first (begin) and after its last (end) */
    void (*begin)(tport_type_id type);
    void (*end)(void);
    /* mul_mat: columns from which this row beats the per-row kernel, where
     * that is below the usual TILED_MIN_COLS (cpu_ops_mul_mat.c); 0: the
     * usual */
    int64_t mm_min_cols;
} cpu_tile_kind;
#define CPU_TILE_MAX_ROWS 32
#define CPU_TILE_MAX_COLS 32
/* The kind for weights of `type` against a batch of `cols` columns of
 * vec_dot_type in this build, NULL if none. */
CPU_HIDDEN const cpu_tile_kind *cpu_tile_kind_for(tport_type_id type, tport_type_id vec_dot_type, int64_t cols);

/* ---- weights in the backend's own layout (cpu_repack.c) ----------------
 * The ABI 1.1 slots a host-memory backend fills to keep weights re-encoded. */
enum {
    CPU_LAYOUT_UNKNOWN = -1, /* a buffer handle that is not one of ours */
    CPU_LAYOUT_PLAIN = 0,    /* the file's layout                        */
    CPU_LAYOUT_Q4_0_X8 = 1,  /* 8 rows of Q4_0 interleaved               */
    CPU_LAYOUT_Q8_0_X8 = 2,  /* 8 rows of Q8_0 interleaved               */
    CPU_LAYOUT_Q4_K_X8 = 3,  /* 8 rows of Q4_K, scales unpacked          */
    CPU_LAYOUT_MXFP4_X8 = 4, /* 8 rows of MXFP4 (512-bit builds only)    */
    CPU_LAYOUT_Q6_K_X8 = 5,  /* 8 rows of Q6_K (512-bit)                 */
};
/* Memory for them (cpu_weight_arena.c): 64-byte aligned blocks in shared
 * mappings backed by huge pages where the kernel allows. */
typedef struct cpu_arena cpu_arena;
CPU_HIDDEN void *cpu_arena_alloc(size_t bytes, cpu_arena **owner); /* NULL: out of memory */
CPU_HIDDEN void cpu_arena_free(cpu_arena *owner);                 /* one block of it */
/* How wide a row's slice of an x8 chunk is (cpu_repack.c): 4 bytes for
 * the 256-bit kernels (cpu_mul_mat_x8.c), 8 for the 512-bit ones
 * (cpu_mul_mat_x8_avx512.c), which also keep Q8_0 quants offset by 128
 * (unsigned, for VNNI's u8 x s8 products).
 *
 * The one- and two-column kernels (generation), which stream the weights
 * once, prefetch each block's lines cpu_stream_ahead bytes ahead
 * (cpu_prefetch.c); the hardware prefetchers alone do not keep up.  The
 * batch kernels reuse each load three to eight times, but on the Zen 5
 * the 512-bit ones (Q4_K, then Q8_0 and Q4_0) still waited on memory
 * without prefetches far enough ahead: those of 3 and more columns
 * prefetch cpu_batch_ahead bytes ahead. */
#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__) && defined(__FMA__)
#define CPU_X8_WIDE 1
#define CPU_X8_SLICE 8
#define CPU_X8_Q8_XOR 0x80
#else
#define CPU_X8_WIDE 0
#define CPU_X8_SLICE 4
#define CPU_X8_Q8_XOR 0
#endif
/* Whether an x8 layout is a K-quant's (Q4_K, Q6_K): b's columns are packed
 * as Q8_K rows for it, and the 512-bit kernels take 5..8 columns at once
 * (cpu_x8_dot8). */
static inline bool cpu_x8_k_quant(int layout) {
    return layout == CPU_LAYOUT_Q4_K_X8 || layout == CPU_LAYOUT_Q6_K_X8;
}
/* How far ahead (bytes) the kernels that stream weights once prefetch
 * (f16 rows: cpu_stream_ahead_f16), and the 512-bit batch kernels of 3
 * and more columns (cpu_batch_ahead): set once by cpu_prefetch_init (from
 * init) for this CPU. */
CPU_HIDDEN extern uintptr_t cpu_stream_ahead, cpu_stream_ahead_f16, cpu_batch_ahead;
/* The hint of the batch kernels' prefetches: non-temporal.  A batch step
 * reads each weight once, and with T0 its lines, once evicted from L2,
 * filled the Zen 5's L3 (a victim cache) in place of what the step reads
 * again: the sequences' KV cache, the activations.  The streaming kernels
 * (one sequence) keep T0: there the hint made no difference (RESULTS run
 * 54). */
#define CPU_BATCH_HINT _MM_HINT_NTA
CPU_HIDDEN void cpu_prefetch_init(void);
/* Bytes of one group of 8 rows of K elements in an x8 layout. */
CPU_HIDDEN size_t cpu_x8_group_bytes(int layout, int64_t K);
CPU_HIDDEN void cpu_repack_init(void); /* once, from init (reads TPORT_CPU_REPACK) */
CPU_HIDDEN long cpu_core_count(void);  /* online cores, at least 1 */
CPU_HIDDEN uint64_t cpu_tensor_alloc_size(void *backend, int32_t device, const tport_tensor_view *t);
CPU_HIDDEN tport_status cpu_buffer_alloc(void *backend, int32_t device, uint32_t kind, uint32_t usage,
                                         uint64_t size, tport_buffer *out, void **host_ptr);
CPU_HIDDEN void cpu_buffer_free(void *backend, tport_buffer b);
CPU_HIDDEN tport_status cpu_tensor_write(void *backend, tport_buffer b, uint64_t offset,
                                         const tport_tensor_view *t, const void *src, uint64_t size,
                                         tport_ticket *ticket);
CPU_HIDDEN tport_status cpu_wait(void *backend, int32_t device, tport_ticket ticket, uint64_t timeout_ns);
/* The layout of a source view: PLAIN for host memory, else the layout of
 * our buffer it names (UNKNOWN when it names none). */
CPU_HIDDEN int cpu_weight_layout(const tport_tensor_view *t);
/* The host's plain bytes of a weight whose re-encoding is deferred (the
 * host has not waited for its ticket), else NULL: a graph reads those. */
CPU_HIDDEN const void *cpu_weight_deferred(const tport_tensor_view *t);
/* Row `row` of an x8 weight back in its plain blocks. */
CPU_HIDDEN void cpu_x8_row(const tport_tensor_view *t, int layout, int64_t row, uint8_t *out);

/* ---- mul_mat on the x8 layouts (cpu_mul_mat_x8.c) ----------------------- */
/* What the x8 kernels need of each Q8_0 block of an activation row. */
typedef struct cpu_x8_act {
    float d;      /* the block's scale */
    int32_t sum;  /* the sum of its 32 quants (for the weights' offsets) */
} cpu_x8_act;
CPU_HIDDEN bool cpu_x8_available(void); /* false in builds without AVX2 + FMA + F16C */
CPU_HIDDEN void cpu_x8_act_info(const uint8_t *q8_0_row, int64_t nblk, cpu_x8_act *act);
/* out[8c + r] = dot(row r of the group, column c) for ncols (1..4)
 * columns y + c * y_stride: Q8_0 rows whose block data is act + c *
 * act_stride, or Q8_K rows for Q4_K (act unused); K elements a row. */
CPU_HIDDEN void cpu_x8_dot(int layout, const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride,
                           const cpu_x8_act *act, size_t act_stride, int ncols, float *out);
/* The same for 4 columns on two groups at once, group and group +
 * group_stride: out[8c + r] for the first, out[32 + 8c + r] for the
 * second.  Faster than two calls of cpu_x8_dot with the 512-bit kernels
 * (CPU_X8_WIDE) only; the same bits either way. */
CPU_HIDDEN void cpu_x8_dot_pair(int layout, const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                                size_t y_stride, const cpu_x8_act *act, size_t act_stride, float *out);
/* ncols (5..8) columns against one group (group_stride 0) or two: out[64k + 8c + r]. */
CPU_HIDDEN void cpu_x8_dot8(int layout, const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                            size_t y_stride, const cpu_x8_act *act, size_t act_stride, int ncols, float *out);
/* MXFP4's x8 layout (cpu_mul_mat_x8_mxfp4.c): rows [8g, 8g + 8) of a
 * plain MXFP4 matrix (row_bytes apart, nblk blocks) into one group at dst,
 * and row r of a group back into its plain blocks. */
CPU_HIDDEN void cpu_x8_mxfp4_encode(const uint8_t *plain, size_t row_bytes, int64_t nblk, uint8_t *dst);
CPU_HIDDEN void cpu_x8_mxfp4_row(const uint8_t *group, int r, int64_t nblk, uint8_t *out);
/* Q6_K's x8 layout (cpu_mul_mat_x8_q6k.c), the same way: nsb super-blocks. */
CPU_HIDDEN void cpu_x8_q6k_encode(const uint8_t *plain, size_t row_bytes, int64_t nsb, uint8_t *dst);
CPU_HIDDEN void cpu_x8_q6k_row(const uint8_t *group, int r, int64_t nsb, uint8_t *out);
#if CPU_X8_WIDE
/* cpu_x8_dot and cpu_x8_dot_pair for Q6_K's layout (Q8_K columns). */
CPU_HIDDEN void cpu_x8_q6k_dot(const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride, int ncols,
                               float *out);
CPU_HIDDEN void cpu_x8_q6k_dot_pair(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                                    size_t y_stride, float *out);
/* cpu_x8_dot8 for Q6_K's layout: ncols (5..8) columns, one group or two. */
CPU_HIDDEN void cpu_x8_q6k_dot8(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                                size_t y_stride, int ncols, float *out);
/* cpu_x8_dot and cpu_x8_dot_pair for that layout; fold: the sums in the
 * order of the AMX tiles (where they take MXFP4 batches). */
CPU_HIDDEN void cpu_x8_mxfp4_dot(const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride,
                                 const cpu_x8_act *act, size_t act_stride, int ncols, bool fold, float *out);
CPU_HIDDEN void cpu_x8_mxfp4_dot_pair(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y,
                                      size_t y_stride, const cpu_x8_act *act, size_t act_stride, bool fold,
                                      float *out);
#endif
#if CPU_AMX
/* CPU_AMX_Q8_COLS Q8_0 columns y + c y_stride (their blocks' data act + c
 * act_stride) copied to dst (cpu_amx_q8_columns_bytes(K)) in the tiles'
 * order; then the CPU_AMX_Q8_ROWS rows cpu_amx_q8_unpack left in scratch
 * against such a copy, into out + c ldo (bytes), CPU_AMX_Q8_ROWS f32 each. */
CPU_HIDDEN size_t cpu_amx_q8_columns_bytes(int64_t K);
CPU_HIDDEN void cpu_amx_q8_columns(int64_t K, const uint8_t *y, size_t y_stride, const cpu_x8_act *act,
                                   size_t act_stride, uint8_t *dst);
CPU_HIDDEN void cpu_amx_q8_cols(void *scratch, int64_t K, const uint8_t *cols, uint8_t *out, size_t ldo);
/* The same for a group of n (1..CPU_AMX_Q8_COLS) columns: the copy of n
 * (zero-padded: the layout and size of a whole group), the sums of the
 * first n.  From CPU_AMX_Q8_MIN_COLS columns a batch takes the tiles: a
 * step of 8 sequences (tport bench --parallel 8) cost fewer steps of one
 * on the tiles than on the x8 kernels, fewer still with the tiles' blocks
 * software-pipelined; from 2 or 4 columns the tiles were no faster
 * (RESULTS run 36, moved from this comment). */
#define CPU_AMX_Q8_MIN_COLS 8
CPU_HIDDEN void cpu_amx_q8_columns_n(int64_t K, const uint8_t *y, size_t y_stride, const cpu_x8_act *act,
                                     size_t act_stride, int n, uint8_t *dst);
CPU_HIDDEN void cpu_amx_q8_cols_n(void *scratch, int64_t K, const uint8_t *cols, int n, uint8_t *out, size_t ldo);
/* Both in one pass where a batch has n <= CPU_AMX_Q8_COLS columns (one
 * sweep): the 4 x8 groups at groups against the copy at cols. */
CPU_HIDDEN void cpu_amx_q8_fused_n(const uint8_t *groups, size_t group_bytes, int64_t K, const uint8_t *cols,
                                   int n, void *scratch, uint8_t *out, size_t ldo);
#endif

#if defined(__AVX__)
#include <immintrin.h>
/* The lane sums of v0..v3 as one vector {sum v0, sum v1, sum v2, sum v3}:
 * a tree of horizontal adds, four sums for the price of about one. */
static inline __m128 cpu_hsum4(__m256 v0, __m256 v1, __m256 v2, __m256 v3) {
    __m256 q = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), _mm256_hadd_ps(v2, v3));
    return _mm_add_ps(_mm256_castps256_ps128(q), _mm256_extractf128_ps(q, 1));
}
#endif

#endif

