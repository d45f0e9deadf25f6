/* mul_mat: dst[i, j] = sum_k a[k, i] * b[k, j] for a [K, N, ne2, ne3] of
 * any type, b [K, M, ne2', ne3'] f32 and dst [N, M, ne2', ne3'] f32; a is
 * broadcast over dims 2 and 3 (grouped-query attention).
 *
 * Paths, in the order make_plan() tries them:
 * - a re-encoded into an x8 layout (cpu_repack.c: Q4_0, Q8_0, Q4_K or MXFP4, 8
 *   rows interleaved; Q6_K only as a 2-D view of a stack of experts):
 *   b's rows become Q8_K for Q4_K and Q6_K, else Q8_0 plus each
 *   block's scale and sum (cpu_x8_act), and groups of 8 weight rows are
 *   swept over the columns of b, four at a time (cpu_mul_mat_x8.c; a
 *   batch takes two groups at once with the 512-bit kernels); a Q8_0
 *   batch of 8 columns and more goes to AMX-INT8 tiles where the CPU
 *   has them (cpu_mul_mat_amx_q8.c, the same bits);
 * - a quantized with a vec_dot kernel (cpu_quant.h): b's rows are first
 *   converted to the kernel's vec_dot_type (Q8_0/Q8_1 as llama.cpp's x86
 *   backend rounds them, quant/act_quant.c, where compiled in; else the
 *   host's reference quantizer), then each output is one call;
 * - the same for a batch (4+ columns of b) of the 32-element types
 *   (Q8_0, Q4_0, Q5_0, Q4_1, Q5_1, IQ4_NL, MXFP4), the K-quants (Q4_K,
 *   Q5_K, Q6_K) or the lattice i-quants and Q2_K where the
 *   variant has the tiled kernels (cpu_mul_mat_q8tile.c,
 *   cpu_mul_mat_kqtile.c, cpu_mul_mat_iqtile.c): 8 rows of a are unpacked
 *   once and swept over all columns of b; from a wide kind's min_cols
 *   columns (cpu_tile_kinds.c), 32 rows on AMX-INT8 tiles where the CPU
 *   has them (cpu_mul_mat_amx_q4.c: MXFP4, IQ4_NL, Q4_0, Q5_0, Q8_0);
 * - dense f32 or f16 weights against up to GEN_MAX_COLS columns
 *   (generation, short prompts): CPU_GEN_ROWS rows at a time against
 *   CPU_GEN_COLS columns at a time, each row read once
 *   (cpu_mul_mat_gen.c);
 * - a batch (4+ columns) of dense f32 or f16 weights not taken above: a
 *   blocked GEMM (cpu_mul_mat_dense.c); with the opt-in
 *   TPORT_CPU_F16_BATCH=bf16, f16 weights multiply in bf16, on AMX
 *   tiles where the CPU has AMX-BF16 (cpu_mul_mat_amx.c), else with
 *   vdpbf16ps;
 * - otherwise everything is f32: rows of a that are not dense f32 are
 *   converted (dequantized) into per-thread scratch, and a tile of rows of
 *   a is dotted with each pair of rows of b using independent accumulators
 *   that the compiler vectorizes.
 * Work is shared out in chunks of tiles of output rows, claimed from an
 * atomic counter: a thread that is preempted (a shared machine) or slower
 * does not hold the others up (few, long chunks for one or two columns:
 * mm_chunks_per_thread). */
#include <string.h>

#include "cpu_internal.h"
#include "cpu_quant.h"

/* Rows of a per tile: 8 with AVX-512's 32 vector registers (16
 * accumulators), else 4 (8 accumulators fit in 16 registers). */
#if defined(__AVX512F__)
#define TILE 8
#else
#define TILE 4
#endif
#define LANES 8

typedef struct mm_plan {
    int64_t K, N, M;
    int64_t r2, r3;            /* broadcast ratios of dims 2, 3 */
    cpu_vec_dot_fn vec_dot;    /* NULL: f32 path */
    cpu_vec_dot4_fn vec_dot4;  /* vec_dot for four rows at once (cpu_quant.h), or NULL */
    tport_type_id vec_dot_type;
    size_t packed_row;         /* bytes per packed row of b, 0 = b used in place */
    const cpu_tile_kind *tiled; /* a batch through this tiled kernel (cpu_tile_kinds.c), or NULL */
    int x8;                    /* CPU_LAYOUT_* of a re-encoded a (cpu_repack.c), 0 = plain */
    bool dense;                /* a batch of dense f32/f16 weights (cpu_mul_mat_dense.c) */
    bool bf16;                 /* dense, multiplied in bf16: b packed as bf16 rows */
    bool gen;                  /* one column against dense f32/f16 weights (cpu_mul_mat_gen.c) */
    size_t act_offset;         /* x8: where the cpu_x8_act of b's blocks start in scratch */
    bool amx_q8;               /* x8 Q8_0 batch on AMX-INT8 tiles (cpu_mul_mat_amx_q8.c) */
    size_t amx_offset;         /* amx_q8: where b's groups of columns copied for the tiles start */
    bool amx_q4;               /* x8 Q4_0/MXFP4 batch on AMX-INT8 tiles (cpu_mul_mat_amx_q4.c) */
} mm_plan;

/* Rows of b from which packing them is shared out among the threads,
 * and below which thread 0 packs them alone whatever the threads: then
 * it packs right after the node before it (a norm, an activation: one
 * thread at these sizes) with no barrier, and one barrier precedes the
 * product.  A step of 8 sequences on 2 threads packed 4 rows each behind
 * a barrier of its own, which on a crowded machine costs more than
 * packing the other 4 (issue 42). */
#define PACK_MIN_ROWS_PER_THREAD 4
#define PACK_ALONE_ROWS 16
/* Columns from which the tiled kernel beats one vec_dot per output. */
#define TILED_MIN_COLS 4
/* Up to this many columns against dense f32/f16 weights take the
 * generation kernels, which read each weight row once for all of them
 * (CPU_GEN_COLS at a time); more take the packed GEMM, whose packing pays
 * off only over many columns (RESULTS run 28). */
#define GEN_MAX_COLS 16

#if CPU_AMX
/* amx_q8: b's groups of CPU_AMX_Q8_COLS columns copied for the tiles, the
 * last one of fewer (zero-padded). */
static int64_t amx_groups(const mm_plan *p) { return (p->M + CPU_AMX_Q8_COLS - 1) / CPU_AMX_Q8_COLS; }
#endif

static mm_plan make_plan(const cpu_op *op) {
    const tport_tensor_view *a = op->src[0], *b = op->src[1];
    mm_plan p = {.K = a->ne[0], .N = a->ne[1], .M = b->ne[1], .r2 = b->ne[2] / a->ne[2],
                 .r3 = b->ne[3] / a->ne[3]};
    int layout = cpu_weight_layout(a);
    if (layout > CPU_LAYOUT_PLAIN) {
        /* b's rows become Q8_K for the K-quants, else Q8_0 plus each
         * block's scale and sum (cpu_x8_act) */
        p.x8 = layout;
        bool k = cpu_x8_k_quant(layout);
        p.vec_dot_type = k ? TPORT_TYPE_Q8_K : TPORT_TYPE_Q8_0;
        p.packed_row = k ? (size_t)(p.K / 256) * 292 : (size_t)(p.K / 32) * 34;
        p.act_offset = (p.packed_row * (size_t)p.M + 63) / 64 * 64;
#if CPU_AMX
        p.amx_q8 =
            layout == CPU_LAYOUT_Q8_0_X8 && p.M >= CPU_AMX_Q8_MIN_COLS && p.N >= CPU_AMX_Q8_ROWS && cpu_amx_q8_on();
        p.amx_offset = p.act_offset + (size_t)(p.K / 32) * (size_t)p.M * sizeof(cpu_x8_act);
        if (layout == CPU_LAYOUT_Q4_0_X8 || layout == CPU_LAYOUT_MXFP4_X8) {
            /* where plain Q4_0 / MXFP4 would take the AMX kind (cpu_tile_kinds.c) */
            const cpu_tile_kind *w = cpu_tile_kind_for(a->type, TPORT_TYPE_Q8_0, p.M);
            p.amx_q4 = w && w->dot == cpu_amx_q4_dot;
        }
#endif
        return p;
    }
    if (a->type != TPORT_TYPE_F32 && cpu_rows_dense(a)) {
        const tport_type_info *ti = cpu_host->type_info(a->type);
        cpu_vec_dot_fn fn = cpu_vec_dot_for(a->type);
        if (ti && fn) {
            const tport_type_info *vt = cpu_host->type_info(ti->vec_dot_type);
            if (vt && vt->block_size > 0 && p.K % vt->block_size == 0 && cpu_can_from_float(vt->id)) {
                p.vec_dot = fn;
                p.vec_dot_type = vt->id;
                p.vec_dot4 = cpu_vec_dot4_for(a->type);
                p.packed_row = (size_t)(p.K / vt->block_size) * (size_t)vt->block_bytes;
            }
        }
    }
    if (p.vec_dot && p.M >= 2) {
        const cpu_tile_kind *k = cpu_tile_kind_for(a->type, p.vec_dot_type, p.M);
        if (k && p.M >= (k->mm_min_cols ? k->mm_min_cols : TILED_MIN_COLS))
            p.tiled = k;
    }
    if (!p.vec_dot && b->nb[0] != sizeof(float))
        p.packed_row = (size_t)p.K * sizeof(float);
    p.gen = !p.vec_dot && p.M <= GEN_MAX_COLS && cpu_gen_available(a);
    p.dense = !p.vec_dot && !p.gen && p.M >= TILED_MIN_COLS && cpu_rows_dense(a) &&
              cpu_dense_mm_available(a->type, p.K) && op->dst->nb[0] == sizeof(float);
    if (p.dense && cpu_dense_bf16(a, p.K)) {
        p.bf16 = true;
        p.vec_dot_type = TPORT_TYPE_BF16; /* tells packings apart (cpu_mul_mat_shares_packing) */
        p.packed_row = (size_t)p.K * sizeof(uint16_t);
    }
    return p;
}

size_t cpu_mul_mat_shared_scratch(const cpu_op *op) {
    mm_plan p = make_plan(op);
#if CPU_AMX
    if (p.amx_q8)
        return p.amx_offset + (size_t)amx_groups(&p) * cpu_amx_q8_columns_bytes(p.K);
#endif
    if (p.x8)
        return p.act_offset +
               (p.vec_dot_type == TPORT_TYPE_Q8_K ? 0 : (size_t)(p.K / 32) * (size_t)p.M * sizeof(cpu_x8_act));
    return p.packed_row * (size_t)cpu_nrows(op->src[1]);
}

/* Whether p packs b's rows as Q8_K rows and nothing else: the Q4_K and
 * Q6_K x8 layouts (which read no per-block extras) and the row and tile
 * kernels of the plain K-quants quantize them alike (pack_task), so an x8
 * Q4_K projection and a Q6_K one of the same activations (a Q4_K_M
 * layer's K and V) share one packing, and the second node joins the
 * first with no barrier (cpu_graph.c). */
static bool packs_q8_k_only(const mm_plan *p) {
    return p->vec_dot_type == TPORT_TYPE_Q8_K && !p->bf16 && !p->amx_q8 &&
           (cpu_x8_k_quant(p->x8) || (!p->x8 && p->vec_dot));
}

bool cpu_mul_mat_shares_packing(const cpu_op *a, const cpu_op *b) {
    if (a->dst->op != TPORT_OP_MUL_MAT || b->dst->op != TPORT_OP_MUL_MAT || !cpu_same_view(a->src[1], b->src[1]) ||
        a->shared != b->shared)
        return false;
    mm_plan pa = make_plan(a), pb = make_plan(b);
    if (!pa.packed_row || pa.packed_row != pb.packed_row || pa.vec_dot_type != pb.vec_dot_type)
        return false;
    if (packs_q8_k_only(&pa) && packs_q8_k_only(&pb))
        return true;
    /* amx_q8: the columns copied for the tiles are part of the packing (an
     * op that reuses it joins the one before, with no barrier, so it must
     * not write them again while that one reads them) */
    return pa.x8 == pb.x8 && pa.act_offset == pb.act_offset && pa.amx_q8 == pb.amx_q8 &&
           pa.amx_offset == pb.amx_offset;
}

bool cpu_mul_mat_packs(const cpu_op *op) {
    return make_plan(op).packed_row != 0;
}

size_t cpu_mul_mat_thread_scratch(const cpu_op *op) {
    mm_plan p = make_plan(op);
#if CPU_AMX
    if (p.amx_q8)
        return cpu_amx_q8_scratch(p.K);
    if (p.amx_q4)
        return cpu_amx_q4_scratch(p.K);
#endif
    if (p.x8)
        return 0;
    if (p.tiled)
        return p.tiled->scratch(p.K);
    if (p.dense) {
        /* bf16: packing may first copy a row of b to f32 (cpu_row_f32) */
        size_t row = p.bf16 ? (size_t)p.K * sizeof(float) : 0;
        return cpu_dense_mm_scratch() > row ? cpu_dense_mm_scratch() : row;
    }
    return p.vec_dot ? 0 : (size_t)TILE * (size_t)p.K * sizeof(float); /* converted rows of a */
}

#if defined(__GNUC__)
/* GCC/clang vector extensions: portable SIMD without intrinsics; each
 * variant's -m flags decide how wide the machine registers are. */
typedef float v8f __attribute__((vector_size(LANES * sizeof(float))));

/* Vectors never cross a function boundary (that would tie the ABI to the
 * instruction set): loads are memcpy, sums read through a pointer. */
#define LOAD8(dst, p) memcpy(&(dst), (p), sizeof(v8f))

/* acc += x * y, fused where the variant has FMA: GCC in ISO C mode does not
 * contract the expression by itself (half the multiply-add rate). */
#if defined(__FMA__)
#include <immintrin.h>
#define MADD(acc, x, y) ((acc) = _mm256_fmadd_ps((x), (y), (acc)))
#else
#define MADD(acc, x, y) ((acc) += (x) * (y))
#endif

static inline float hsum8(const v8f *v) {
    float s = 0.0f;
    for (int l = 0; l < LANES; l++)
        s += (*v)[l];
    return s;
}

#if defined(__AVX__)
#include <immintrin.h>
/* out[r] = the lane sum of acc[r], r < TILE: a tree of horizontal adds
 * gives four sums per few instructions, where one at a time costs about
 * as much as a short dot product's multiply-adds (attention's are 64 long). */
static inline void hsum_rows(const v8f acc[TILE], float out[TILE]) {
    for (int r = 0; r < TILE; r += 4) {
        __m256 v0, v1, v2, v3;
        memcpy(&v0, &acc[r], sizeof v0);
        memcpy(&v1, &acc[r + 1], sizeof v1);
        memcpy(&v2, &acc[r + 2], sizeof v2);
        memcpy(&v3, &acc[r + 3], sizeof v3);
        _mm_storeu_ps(out + r, cpu_hsum4(v0, v1, v2, v3));
    }
}
#else
static inline void hsum_rows(const v8f acc[TILE], float out[TILE]) {
    for (int r = 0; r < TILE; r++)
        out[r] = hsum8(&acc[r]);
}
#endif

static float dot1(int64_t K, const float *a, const float *b) {
    v8f acc = {0};
    int64_t k = 0;
    for (; k + LANES <= K; k += LANES) {
        v8f x, y;
        LOAD8(x, a + k);
        LOAD8(y, b + k);
        MADD(acc, x, y);
    }
    float s = hsum8(&acc);
    for (; k < K; k++)
        s += a[k] * b[k];
    return s;
}

/* TILE rows of a against one row of b: b is loaded once per step. */
static void dot_tile(int64_t K, const float *const a[TILE], const float *b, float out[TILE]) {
    v8f acc[TILE];
    for (int r = 0; r < TILE; r++)
        acc[r] = (v8f){0};
    int64_t k = 0;
    for (; k + LANES <= K; k += LANES) {
        v8f bv, x;
        LOAD8(bv, b + k);
        for (int r = 0; r < TILE; r++) {
            LOAD8(x, a[r] + k);
            MADD(acc[r], x, bv);
        }
    }
    hsum_rows(acc, out);
    for (int r = 0; r < TILE; r++)
        for (int64_t kk = k; kk < K; kk++)
            out[r] += a[r][kk] * b[kk];
}

/* TILE rows of a against two rows of b: 2 * TILE accumulators, TILE + 2
 * loads per 2 * TILE multiply-adds. */
static void dot_tile_x2(int64_t K, const float *const a[TILE], const float *b0, const float *b1, float o0[TILE],
                   float o1[TILE]) {
    v8f c0[TILE], c1[TILE];
    for (int r = 0; r < TILE; r++)
        c0[r] = c1[r] = (v8f){0};
    int64_t k = 0;
    for (; k + LANES <= K; k += LANES) {
        v8f y0, y1, x;
        LOAD8(y0, b0 + k);
        LOAD8(y1, b1 + k);
        for (int r = 0; r < TILE; r++) {
            LOAD8(x, a[r] + k);
            MADD(c0[r], x, y0);
            MADD(c1[r], x, y1);
        }
    }
    hsum_rows(c0, o0);
    hsum_rows(c1, o1);
    for (int r = 0; r < TILE; r++) {
        for (int64_t kk = k; kk < K; kk++) {
            o0[r] += a[r][kk] * b0[kk];
            o1[r] += a[r][kk] * b1[kk];
        }
    }
}

/* TILE rows of a against three rows of b: with TILE 4, 12 accumulators
 * plus the three b vectors and one a vector fill AVX2's 16 registers, 12
 * multiply-adds per 7 loads. */
static void dot_tile_x3(int64_t K, const float *const a[TILE], const float *const b[3], float o[3][TILE]) {
    v8f c0[TILE], c1[TILE], c2[TILE];
    for (int r = 0; r < TILE; r++)
        c0[r] = c1[r] = c2[r] = (v8f){0};
    int64_t k = 0;
    for (; k + LANES <= K; k += LANES) {
        v8f y0, y1, y2, x;
        LOAD8(y0, b[0] + k);
        LOAD8(y1, b[1] + k);
        LOAD8(y2, b[2] + k);
        for (int r = 0; r < TILE; r++) {
            LOAD8(x, a[r] + k);
            MADD(c0[r], x, y0);
            MADD(c1[r], x, y1);
            MADD(c2[r], x, y2);
        }
    }
    hsum_rows(c0, o[0]);
    hsum_rows(c1, o[1]);
    hsum_rows(c2, o[2]);
    for (int r = 0; r < TILE; r++)
        for (int64_t kk = k; kk < K; kk++)
            for (int c = 0; c < 3; c++)
                o[c][r] += a[r][kk] * b[c][kk];
}
#else
static float dot1(int64_t K, const float *a, const float *b) {
    float s = 0.0f;
    for (int64_t k = 0; k < K; k++)
        s += a[k] * b[k];
    return s;
}

static void dot_tile(int64_t K, const float *const a[TILE], const float *b, float out[TILE]) {
    for (int r = 0; r < TILE; r++)
        out[r] = dot1(K, a[r], b);
}

static void dot_tile_x2(int64_t K, const float *const a[TILE], const float *b0, const float *b1, float o0[TILE],
                   float o1[TILE]) {
    dot_tile(K, a, b0, o0);
    dot_tile(K, a, b1, o1);
}

static void dot_tile_x3(int64_t K, const float *const a[TILE], const float *const b[3], float o[3][TILE]) {
    for (int c = 0; c < 3; c++)
        dot_tile(K, a, b[c], o[c]);
}
#endif

typedef struct mm_job {
    cpu_op *op;
    mm_plan plan;
} mm_job;

/* Phase 1: b's rows packed (converted to vec_dot_type, or made dense). */
static void pack_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    cpu_op *op = job->op;
    const tport_tensor_view *b = op->src[1];
    float *buf = (float *)cpu_thread_scratch(op, ith);
    int64_t r0, r1;
    cpu_split(cpu_nrows(b), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(b, r, &i1, &i2, &i3);
        uint8_t *dst = op->scratch + (size_t)r * job->plan.packed_row;
        if (job->plan.bf16) {
            cpu_dense_column_bf16(cpu_row_f32(b, i1, i2, i3, buf), job->plan.K, (uint16_t *)(void *)dst);
            continue;
        }
        if (!job->plan.vec_dot && !job->plan.x8) {
            cpu_row_to_f32(b, cpu_row(b, i1, i2, i3), job->plan.K, (float *)dst);
            continue;
        }
        const float *src = cpu_row_f32(b, i1, i2, i3, buf);
        /* as llama.cpp's x86 CPU backend does (quant/act_quant.c), where it applies */
        if (!cpuq_quantize_act(job->plan.vec_dot_type, src, dst, job->plan.K) &&
            cpu_host->from_float(job->plan.vec_dot_type, src, dst, job->plan.K) != TPORT_STATUS_OK) {
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat: cannot convert activations to type %u",
                        job->plan.vec_dot_type);
            return;
        }
        if (job->plan.x8 && job->plan.vec_dot_type != TPORT_TYPE_Q8_K) {
            int64_t nblk = job->plan.K / 32;
            cpu_x8_act_info(dst, nblk, (cpu_x8_act *)(op->scratch + job->plan.act_offset) + r * nblk);
        }
    }
}

/* A task's work: tiles of `rows` weight rows of every matrix of dst,
 * claimed in chunks from the op's counter.  mm_next gives the next tile's
 * first row and the matrix (i12, i13) it belongs to; false when none is
 * left. */
typedef struct mm_units {
    cpu_op *op;
    int64_t tiles, rows, n, chunk, t, end;
} mm_units;

/* Chunks a thread claims (cpu_chunk_size): few and long for one or two
 * columns, which read every weight once (generation). */
static int mm_chunks_per_thread(const mm_plan *p) {
    return p->M <= 2 ? 2 : 8;
}

static mm_units mm_units_of(const mm_job *job, int64_t rows, int nth) {
    cpu_op *op = job->op;
    int64_t tiles = (job->plan.N + rows - 1) / rows, n = tiles * op->dst->ne[2] * op->dst->ne[3];
    return (mm_units){.op = op, .tiles = tiles, .rows = rows, .n = n,
                      .chunk = cpu_chunk_size(n, nth, mm_chunks_per_thread(&job->plan))};
}

static bool mm_next(mm_units *u, int64_t *i0, int64_t *i12, int64_t *i13) {
    if (u->t == u->end && !cpu_claim(u->op, u->n, u->chunk, &u->t, &u->end))
        return false;
    int64_t t = u->t++, mat = t / u->tiles;
    *i0 = (t % u->tiles) * u->rows;
    *i12 = mat % u->op->dst->ne[2];
    *i13 = mat / u->op->dst->ne[2];
    return true;
}

/* Row j of b for matrix (i12, i13): packed or in place. */
static const void *b_row(const mm_job *job, int64_t j, int64_t i12, int64_t i13) {
    const tport_tensor_view *b = job->op->src[1];
    if (job->plan.packed_row)
        return job->op->scratch + (size_t)((i13 * b->ne[2] + i12) * job->plan.M + j) * job->plan.packed_row;
    return cpu_row(b, j, i12, i13);
}

static void compute_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    cpu_op *op = job->op;
    const mm_plan *p = &job->plan;
    const tport_tensor_view *a = op->src[0], *d = op->dst;
    float *abuf = (float *)cpu_thread_scratch(op, ith);
    mm_units u = mm_units_of(job, TILE, nth);
    int64_t i0, i12, i13;
    while (mm_next(&u, &i0, &i12, &i13)) {
        int64_t i02 = i12 / p->r2, i03 = i13 / p->r3;
        int rows = (int)(p->N - i0 < TILE ? p->N - i0 : TILE);
        const void *araw[TILE];
        const float *af[TILE];
        for (int k = 0; k < rows; k++) {
            araw[k] = cpu_row(a, i0 + k, i02, i03);
            if (p->vec_dot)
                continue;
            if (a->type == TPORT_TYPE_F32 && a->nb[0] == sizeof(float)) {
                af[k] = araw[k];
            } else {
                float *dst = abuf + (size_t)k * (size_t)p->K;
                if (!cpu_row_to_f32(a, araw[k], p->K, dst)) {
                    cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat: cannot convert type %u to f32", a->type);
                    return;
                }
                af[k] = dst;
            }
        }
        for (int64_t j = 0; j < p->M; j++) {
            const void *brow = b_row(job, j, i12, i13);
            uint8_t *out = cpu_row(d, j, i12, i13) + (size_t)i0 * d->nb[0];
            float s[TILE], s1[TILE];
            int pair = 0;
            if (p->vec_dot) {
                int k = 0;
                if (p->vec_dot4)
                    for (; k + 4 <= rows; k += 4)
                        p->vec_dot4(p->K, &s[k], &araw[k], brow);
                for (; k < rows; k++)
                    p->vec_dot(p->K, &s[k], araw[k], brow);
            } else if (rows == TILE && TILE == 4 && j + 2 < p->M) {
                const float *bs[3] = {brow, b_row(job, j + 1, i12, i13), b_row(job, j + 2, i12, i13)};
                float o3[3][TILE];
                dot_tile_x3(p->K, af, bs, o3);
                for (int c = 0; c < 3; c++) {
                    uint8_t *oc = cpu_row(d, j + c, i12, i13) + (size_t)i0 * d->nb[0];
                    for (int k = 0; k < rows; k++)
                        memcpy(oc + (size_t)k * d->nb[0], &o3[c][k], sizeof(float));
                }
                j += 2;
                continue;
            } else if (rows == TILE && j + 1 < p->M) {
                dot_tile_x2(p->K, af, brow, b_row(job, j + 1, i12, i13), s, s1);
                pair = 1;
            } else if (rows == TILE) {
                dot_tile(p->K, af, brow, s);
            } else {
                for (int k = 0; k < rows; k++)
                    s[k] = dot1(p->K, af[k], brow);
            }
            for (int k = 0; k < rows; k++)
                memcpy(out + (size_t)k * d->nb[0], &s[k], sizeof(float));
            if (pair) {
                out = cpu_row(d, j + 1, i12, i13) + (size_t)i0 * d->nb[0];
                for (int k = 0; k < rows; k++)
                    memcpy(out + (size_t)k * d->nb[0], &s1[k], sizeof(float));
                j++;
            }
        }
    }
}

/* The generation path: CPU_GEN_ROWS dense weight rows at a time against
 * the few columns of b (cpu_mul_mat_gen.c), CPU_GEN_COLS at a time. */
static void gen_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    cpu_op *op = job->op;
    const mm_plan *p = &job->plan;
    const tport_tensor_view *a = op->src[0], *d = op->dst;
    enum { R = CPU_GEN_ROWS };
    (void)ith;
    mm_units u = mm_units_of(job, R, nth);
    int64_t i0, i12, i13;
    while (mm_next(&u, &i0, &i12, &i13)) {
        int rows = (int)(p->N - i0 < R ? p->N - i0 : R);
        const void *ar[R];
        float s[R * CPU_GEN_COLS];
        for (int k = 0; k < rows; k++)
            ar[k] = cpu_row(a, i0 + k, i12 / p->r2, i13 / p->r3);
        for (int64_t j = 0; j < p->M; j += CPU_GEN_COLS) {
            int nc = (int)(p->M - j < CPU_GEN_COLS ? p->M - j : CPU_GEN_COLS);
            if (nc == 1) {
                cpu_gen_dot(a, p->K, ar, rows, b_row(job, j, i12, i13), s);
            } else {
                const float *bc[CPU_GEN_COLS];
                for (int c = 0; c < nc; c++)
                    bc[c] = b_row(job, j + c, i12, i13);
                cpu_gen_dot_cols(a, p->K, ar, rows, bc, nc, s);
            }
            for (int c = 0; c < nc; c++) {
                uint8_t *out = cpu_row(d, j + c, i12, i13) + (size_t)i0 * d->nb[0];
                for (int k = 0; k < rows; k++)
                    memcpy(out + (size_t)k * d->nb[0], &s[c * rows + k], sizeof(float));
            }
        }
    }
}

/* The tiled paths: the kind's rows of weights unpacked once, then swept
 * over every column of b, the kind's columns at a time. */
static void tiled_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    cpu_op *op = job->op;
    const mm_plan *p = &job->plan;
    const tport_tensor_view *a = op->src[0], *d = op->dst;
    const cpu_tile_kind *kind = p->tiled;
    const int R = kind->rows, C = kind->cols;
    uint8_t *tile = cpu_thread_scratch(op, ith);
    mm_units u = mm_units_of(job, R, nth);
    int64_t i0, i12, i13;
    if (kind->begin)
        kind->begin(a->type);
    while (mm_next(&u, &i0, &i12, &i13)) {
        int64_t i02 = i12 / p->r2, i03 = i13 / p->r3;
        int rows = (int)(p->N - i0 < R ? p->N - i0 : R);
        const uint8_t *rp[CPU_TILE_MAX_ROWS];
        for (int k = 0; k < rows; k++)
            rp[k] = cpu_row(a, i0 + k, i02, i03);
        kind->unpack(a->type, rp, rows, p->K, tile);
        for (int64_t j = 0; j < p->M; j += C) {
            int nc = (int)(p->M - j < C ? p->M - j : C);
            float s[CPU_TILE_MAX_COLS * CPU_TILE_MAX_ROWS];
            kind->dot(a->type, tile, p->K, b_row(job, j, i12, i13), p->packed_row, nc, s);
            for (int c = 0; c < nc; c++) {
                uint8_t *out = cpu_row(d, j + c, i12, i13) + (size_t)i0 * d->nb[0];
                if (d->nb[0] == sizeof(float)) /* one copy: per element it showed in profiles */
                    memcpy(out, &s[c * R], (size_t)rows * sizeof(float));
                else
                    for (int k = 0; k < rows; k++)
                        memcpy(out + (size_t)k * d->nb[0], &s[c * R + k], sizeof(float));
            }
        }
    }
    if (kind->end)
        kind->end();
}

/* The dense path: CPU_DENSE_ROWS weight rows at a time against every
 * column of b (cpu_mul_mat_dense.c). */
static void dense_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    cpu_op *op = job->op;
    const mm_plan *p = &job->plan;
    const tport_tensor_view *a = op->src[0], *b = op->src[1], *d = op->dst;
    enum { R = CPU_DENSE_ROWS };
    void *scratch = cpu_thread_scratch(op, ith);
    mm_units u = mm_units_of(job, R, nth);
    int64_t i0, i12, i13;
    while (mm_next(&u, &i0, &i12, &i13)) {
        cpu_dense_mm x = {
            .w = a,
            .K = p->K,
            .M = p->M,
            .rows = (int)(p->N - i0 < R ? p->N - i0 : R),
            .a = cpu_row(a, i0, i12 / p->r2, i13 / p->r3),
            .lda = a->nb[1],
            .b = b_row(job, 0, i12, i13),
            .ldb = p->packed_row ? p->packed_row : b->nb[1],
            .c = cpu_row(d, 0, i12, i13) + (size_t)i0 * sizeof(float),
            .ldc = d->nb[1],
            .bf16 = p->bf16,
        };
        if (!cpu_dense_mm_run(&x, scratch)) {
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat: cannot convert type %u to f32", a->type);
            return;
        }
    }
}

/* Group g of an x8 weight (group_bytes each) against columns j .. j + nc
 * - 1 into d; pair: groups g and g + 1 (the 4- and 8-column kernels on
 * two groups at once). */
static void x8_columns(const mm_job *job, size_t group_bytes, int64_t g, int64_t j, int nc, bool pair) {
    const mm_plan *p = &job->plan;
    const tport_tensor_view *a = job->op->src[0], *d = job->op->dst;
    const cpu_x8_act *act = (const cpu_x8_act *)(job->op->scratch + p->act_offset);
    int64_t nblk = p->K / 32;
    const uint8_t *group = (const uint8_t *)a->data + (size_t)g * group_bytes;
    const uint8_t *y = b_row(job, j, 0, 0);
    float s[2 * 8 * 8];
    int second = 32; /* where the second group's sums start in s */
    if (nc > 4) {
        cpu_x8_dot8(p->x8, group, pair ? group_bytes : 0, p->K, y, p->packed_row, act + j * nblk, (size_t)nblk, nc,
                    s);
        second = 64;
    } else if (pair && nc == 4) {
        cpu_x8_dot_pair(p->x8, group, group_bytes, p->K, y, p->packed_row, act + j * nblk, (size_t)nblk, s);
    } else {
        cpu_x8_dot(p->x8, group, p->K, y, p->packed_row, act + j * nblk, (size_t)nblk, nc, s);
        if (pair)
            cpu_x8_dot(p->x8, group + group_bytes, p->K, y, p->packed_row, act + j * nblk, (size_t)nblk, nc,
                       s + 32);
    }
    for (int k = 0; k < (pair ? 2 : 1); k++)
        for (int c = 0; c < nc; c++)
            memcpy(cpu_row(d, j + c, 0, 0) + (size_t)(g + k) * 8 * sizeof(float), s + second * k + 8 * c,
                   8 * sizeof(float));
}

/* The x8 path: groups of 8 re-encoded weight rows (cpu_repack.c) against
 * every column of b, four at a time, or eight with the 512-bit Q4_K and
 * Q6_K kernels for 5..8 columns (each weight chunk unpacked once for all
 * of them); a and b are 2-D (cpu_supports).  A batch takes the groups two
 * at a time with the 512-bit kernels (in chunks of an even number of
 * groups). */
static void x8_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    const mm_plan *p = &job->plan;
    bool pairs = CPU_X8_WIDE && p->M >= 4;
    int64_t step = CPU_X8_WIDE && cpu_x8_k_quant(p->x8) ? 8 : 4;
    int64_t groups = p->N / 8, chunk = cpu_chunk_size(groups, nth, mm_chunks_per_thread(p)), g0, g1;
    size_t group_bytes = cpu_x8_group_bytes(p->x8, p->K);
    (void)ith;
    if (pairs)
        chunk += chunk & 1;
    while (cpu_claim(job->op, groups, chunk, &g0, &g1))
        for (int64_t g = g0; g < g1; g += 1 + (pairs && g + 1 < g1))
            for (int64_t j = 0; j < p->M; j += step)
                x8_columns(job, group_bytes, g, j, (int)(p->M - j < step ? p->M - j : step), pairs && g + 1 < g1);
}

#if CPU_AMX
/* b's groups of CPU_AMX_Q8_COLS columns (the last of fewer) copied for
 * the tiles. */
static void amx_columns_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    const mm_plan *p = &job->plan;
    const cpu_x8_act *act = (const cpu_x8_act *)(job->op->scratch + p->act_offset);
    int64_t nblk = p->K / 32, g0, g1;
    size_t bytes = cpu_amx_q8_columns_bytes(p->K);
    cpu_split(amx_groups(p), ith, nth, &g0, &g1);
    for (int64_t g = g0; g < g1; g++) {
        int64_t j = g * CPU_AMX_Q8_COLS;
        int n = (int)(p->M - j < CPU_AMX_Q8_COLS ? p->M - j : CPU_AMX_Q8_COLS);
        cpu_amx_q8_columns_n(p->K, b_row(job, j, 0, 0), p->packed_row, act + j * nblk, (size_t)nblk, n,
                             job->op->scratch + p->amx_offset + (size_t)g * bytes);
    }
}

/* The x8 Q8_0 path on AMX tiles: units of CPU_AMX_Q8_ROWS rows (4 groups)
 * unpacked once and swept over the batch CPU_AMX_Q8_COLS columns at a
 * time (the last sweep over the columns left); a last unit of fewer
 * groups takes the x8 kernels. */
static void x8_amx_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    const mm_plan *p = &job->plan;
    const tport_tensor_view *d = job->op->dst;
    enum { UNIT = CPU_AMX_Q8_ROWS / 8 };
    int64_t groups = p->N / 8, units = (groups + UNIT - 1) / UNIT;
    int64_t chunk = cpu_chunk_size(units, nth, mm_chunks_per_thread(p)), u0, u1;
    size_t group_bytes = cpu_x8_group_bytes(p->x8, p->K);
    size_t col_bytes = cpu_amx_q8_columns_bytes(p->K);
    uint8_t *scratch = cpu_thread_scratch(job->op, ith);
    cpu_amx_q8_begin();
    while (cpu_claim(job->op, units, chunk, &u0, &u1)) {
        for (int64_t u = u0; u < u1; u++) {
            int64_t g = u * UNIT, j = 0;
            if (g + UNIT <= groups && p->M <= CPU_AMX_Q8_COLS) {
                /* one sweep: each block unpacked just before its tiles */
                cpu_amx_q8_fused_n((const uint8_t *)job->op->src[0]->data + (size_t)g * group_bytes, group_bytes,
                                   p->K, job->op->scratch + p->amx_offset, (int)p->M, scratch,
                                   cpu_row(d, 0, 0, 0) + (size_t)g * 8 * sizeof(float), d->nb[1]);
                j = p->M;
            } else if (g + UNIT <= groups) {
                cpu_amx_q8_unpack((const uint8_t *)job->op->src[0]->data + (size_t)g * group_bytes, group_bytes,
                                  p->K, scratch);
                const uint8_t *cols = job->op->scratch + p->amx_offset;
                for (; j < p->M; j += CPU_AMX_Q8_COLS, cols += col_bytes)
                    cpu_amx_q8_cols_n(scratch, p->K, cols,
                                      (int)(p->M - j < CPU_AMX_Q8_COLS ? p->M - j : CPU_AMX_Q8_COLS),
                                      cpu_row(d, j, 0, 0) + (size_t)g * 8 * sizeof(float), d->nb[1]);
            }
            for (int64_t gg = g; gg < g + UNIT && gg < groups; gg += 2)
                for (int64_t jj = j; jj < p->M; jj += 4)
                    x8_columns(job, group_bytes, gg, jj, (int)(p->M - jj < 4 ? p->M - jj : 4), gg + 1 < groups);
        }
    }
    cpu_amx_q8_end();
}

/* The x8 Q4_0 and MXFP4 path on AMX tiles: units of CPU_AMX_Q4_ROWS rows (4 groups;
 * the last may have fewer) unpacked once and swept over the batch
 * CPU_AMX_Q4_COLS columns at a time (the Q8_0 columns the x8 packing
 * left; a last partial group of columns too). */
static void x8_amx_q4_task(void *arg, int ith, int nth) {
    mm_job *job = arg;
    const mm_plan *p = &job->plan;
    const tport_tensor_view *d = job->op->dst;
    enum { UNIT = CPU_AMX_Q4_ROWS / 8, R = CPU_AMX_Q4_ROWS, C = CPU_AMX_Q4_COLS };
    int64_t groups = p->N / 8, units = (groups + UNIT - 1) / UNIT;
    int64_t chunk = cpu_chunk_size(units, nth, mm_chunks_per_thread(p)), u0, u1;
    size_t group_bytes = cpu_x8_group_bytes(p->x8, p->K);
    uint8_t *scratch = cpu_thread_scratch(job->op, ith);
    cpu_amx_q4_begin(TPORT_TYPE_Q4_0);
    while (cpu_claim(job->op, units, chunk, &u0, &u1)) {
        for (int64_t u = u0; u < u1; u++) {
            int64_t g = u * UNIT;
            int ng = (int)(groups - g < UNIT ? groups - g : UNIT);
            cpu_amx_q4_unpack_x8(p->x8, (const uint8_t *)job->op->src[0]->data + (size_t)g * group_bytes,
                                 group_bytes, ng, p->K, scratch);
            for (int64_t j = 0; j < p->M; j += C) {
                int nc = (int)(p->M - j < C ? p->M - j : C);
                float s[C * R];
                cpu_amx_q4_dot(TPORT_TYPE_Q4_0, scratch, p->K, b_row(job, j, 0, 0), p->packed_row, nc, s);
                for (int c = 0; c < nc; c++)
                    memcpy(cpu_row(d, j + c, 0, 0) + (size_t)g * 8 * sizeof(float), &s[c * R],
                           (size_t)ng * 8 * sizeof(float));
            }
        }
    }
    cpu_amx_q4_end();
}
#endif

void cpu_run_mul_mat(cpu_ctx *ctx, cpu_op *op) {
    mm_job job = {op, make_plan(op)};
    if (job.plan.packed_row && !op->reuses_packing) {
        /* a few rows (generation) are packed faster than workers wake up */
        int64_t rows = cpu_nrows(op->src[1]);
        int nth = rows < PACK_MIN_ROWS_PER_THREAD * op->nth || rows < PACK_ALONE_ROWS ? 1 : op->nth;
        cpu_parallel(ctx, pack_task, &job, nth);
    }
    /* after a failed packing this runs nothing (cpu_parallel) */
    cpu_task_fn fn = job.plan.x8      ? x8_task
                      : job.plan.tiled ? tiled_task
                      : job.plan.dense ? dense_task
                      : job.plan.gen   ? gen_task
                                       : compute_task;
#if CPU_AMX
    if (job.plan.amx_q8) {
        if (!op->reuses_packing)
            cpu_parallel(ctx, amx_columns_task, &job, op->nth);
        fn = x8_amx_task;
    }
    if (job.plan.amx_q4)
        fn = x8_amx_q4_task;
#endif
    cpu_parallel(ctx, fn, &job, op->nth);
}
