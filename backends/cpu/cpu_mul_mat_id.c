/* mul_mat_id, the expert-indexed product (backend.h, TPORT_OP_MUL_MAT_ID):
 * dst[:, i, t] = as[:, :, ids[i, t]]^T b[:, i % n_b, t].
 *
 * It reads only what the ids select, and each selected expert once per
 * evaluation:
 * - every thread groups the (slot, token) pairs by expert itself, from the
 *   ids, in its own scratch (a few thousand integers: cheaper than a
 *   barrier);
 * - phase 1 packs the row of b of every pair, in that grouped order:
 *   converted to the experts' type's vec_dot_type (as mul_mat does,
 *   llama.cpp's rounding where it applies), or to dense f32 for
 *   f32/f16/bf16 experts.  An expert's columns are then contiguous, as a
 *   tile kernel wants them.  Rows of b that the slots share are packed
 *   once first and copied to their pairs (staged);
 * - phase 2 shares out units of UNIT_ROWS rows of each selected expert; a
 *   unit's rows are read from memory once and dotted with every token
 *   routed to that expert while they are in cache.  An expert with
 *   enough tokens (the kind's min_cols) takes the tile kernel of its type
 *   where the table has one (cpu_tile_kinds.c: rows unpacked once, swept
 *   over the columns 4 at a time; from a wide kind's min_cols, its tiles,
 *   32 rows a unit, e.g. AMX-INT8 for MXFP4); fewer, or a type without one, the
 *   per-row vec_dot.  Generation (one token) reads n_used experts' rows, not E; a
 *   prompt batch reads each expert that any token chose once.
 * Units are claimed in chunks of equal estimated cost (tokens, plus the
 * unpacking), not of equal count: with a few experts taking most tokens,
 * equal counts left one thread the heavy ones.
 *
 * Experts re-encoded into an x8 layout (cpu_repack.c: a stack's experts'
 * groups of 8 rows back to back) take the x8 kernels (cpu_x8_dot), in
 * the same units: each group of a unit against the expert's tokens 4 at
 * a time (two groups at once with the 512-bit kernels, cpu_x8_dot_pair),
 * one at a time in generation.  Their activations are packed as for the
 * per-row kernels (the type's vec_dot_type), with each block's scale and
 * sum beside them where that is Q8_0 (cpu_x8_act).  No tile kinds: they
 * unpack plain rows, and the x8 kernels already reuse each load over 4
 * columns.  A stack whose re-encoding is deferred is read in the file's
 * layout (cpu_graph.c gives its plain bytes, cpu_weight_layout PLAIN). */
#include <string.h>

#include "cpu_internal.h"
#include "cpu_quant.h"

/* Rows of an expert per unit of work: two tiles of the tile kernels. */
#define UNIT_ROWS (2 * CPU_Q8TILE_ROWS)
/* Tokens of an expert from which its rows are unpacked into a tile: below
 * the kind's min_cols, and never for one or two, the unpacking costs more
 * than the tile kernel saves. */
#define TILE_MIN_COLS 3
/* Chunks a thread claims: few and long for generation, which streams each
 * selected row once; many for batches, whose units differ in cost. */
#define CHUNKS_GEN 2
#define CHUNKS_BATCH 16

typedef struct mid_plan {
    int64_t K, N, E, n_b, n_used, T;
    cpu_vec_dot_fn vec_dot; /* NULL: f32 dots */
    tport_type_id vec_dot_type;
    const cpu_tile_kind *tile; /* the tile kernel of as's type, NULL if none */
    const cpu_tile_kind *wide; /* one for experts of its min_batch tokens and more, NULL if none */
    int64_t unit;              /* rows of a unit: UNIT_ROWS, or the wide kind's rows if more */
    size_t packed_row;         /* bytes of one packed row of b */
    size_t work;               /* bytes of a thread's work area, before its grouping */
    bool staged;               /* rows of b shared by slots: packed once, then copied per pair */
    bool prefetch;             /* the per-row path prefetches rows ahead (prefetch_row_ahead) */
    int x8;                    /* CPU_LAYOUT_* of re-encoded experts, 0 = plain */
    size_t group_bytes;        /* x8: bytes of a group of 8 rows */
    size_t act_offset;         /* x8 with Q8_0 activations: where each pair's cpu_x8_act start, else 0 */
} mid_plan;

static mid_plan make_plan(const cpu_op *op) {
    const tport_tensor_view *as = op->src[0], *b = op->src[1], *ids = op->src[2];
    mid_plan p = {.K = as->ne[0], .N = as->ne[1], .E = as->ne[2], .n_b = b->ne[1], .n_used = ids->ne[0],
                  .T = ids->ne[1]};
    int layout = cpu_weight_layout(as);
    if (layout > CPU_LAYOUT_PLAIN) {
        const tport_type_info *ti = cpu_host->type_info(as->type);
        cpu_vec_dot_fn fn = cpu_vec_dot_for(as->type);
        const tport_type_info *vt = ti && fn ? cpu_host->type_info(ti->vec_dot_type) : NULL;
        /* else refused in cpu_run_mul_mat_id */
        if (vt && vt->block_size > 0 && p.K % vt->block_size == 0 && cpu_can_from_float(vt->id)) {
            p.x8 = layout;
            p.group_bytes = cpu_x8_group_bytes(layout, p.K);
            p.vec_dot = fn; /* not called: it tells the packing to quantize */
            p.vec_dot_type = vt->id;
            p.packed_row = (size_t)(p.K / vt->block_size) * (size_t)vt->block_bytes;
        }
    } else if (as->type != TPORT_TYPE_F32 && cpu_rows_dense(as)) {
        const tport_type_info *ti = cpu_host->type_info(as->type);
        cpu_vec_dot_fn fn = cpu_vec_dot_for(as->type);
        const tport_type_info *vt = ti && fn ? cpu_host->type_info(ti->vec_dot_type) : NULL;
        if (vt && vt->block_size > 0 && p.K % vt->block_size == 0 && cpu_can_from_float(vt->id)) {
            p.vec_dot = fn;
            p.vec_dot_type = vt->id;
            p.packed_row = (size_t)(p.K / vt->block_size) * (size_t)vt->block_bytes;
            /* MXFP4's table kernel (quant/dot_avx512_lut.c) prefetches its
             * row itself, and gpt-oss generation was slower with these
             * prefetches on top; Q4_K and Q6_K were faster with them,
             * also over row kernels that prefetch into L1 (RESULTS run 36) */
            p.prefetch = as->type != TPORT_TYPE_MXFP4;
            /* a batch in which some expert may get enough tokens */
            if (p.T * p.n_used >= TILE_MIN_COLS) {
                p.tile = cpu_tile_kind_for(as->type, vt->id, 0);
                p.wide = cpu_tile_kind_for(as->type, vt->id, p.T);
                if (p.wide == p.tile)
                    p.wide = NULL;
            }
        }
    }
    if (!p.vec_dot)
        p.packed_row = (size_t)p.K * sizeof(float);
    p.packed_row = (p.packed_row + 63) / 64 * 64;
    /* a batch whose slots share their token's row (n_b 1: the gate and up
     * products) packs each row once and copies it to its pairs: converting
     * it n_used times showed in a qwen3moe prompt's profile: RESULTS run
     * 35) */
    p.staged = p.n_b < p.n_used && p.T > 1;
    /* a row of b as f32 while packing; UNIT_ROWS converted weight rows
     * (f32 path) or one unpacked tile while computing */
    p.work = (size_t)p.K * sizeof(float);
    if (!p.vec_dot && (size_t)UNIT_ROWS * (size_t)p.K * sizeof(float) > p.work)
        p.work = (size_t)UNIT_ROWS * (size_t)p.K * sizeof(float);
    if (p.tile && p.tile->scratch(p.K) > p.work)
        p.work = p.tile->scratch(p.K);
    if (p.wide && p.wide->scratch(p.K) > p.work)
        p.work = p.wide->scratch(p.K);
    p.unit = p.wide && p.wide->rows > UNIT_ROWS ? p.wide->rows : UNIT_ROWS;
    p.work = (p.work + 63) / 64 * 64;
    if (p.x8 && p.vec_dot_type == TPORT_TYPE_Q8_0) {
        size_t rows = (size_t)(p.n_used * p.T + (p.staged ? p.n_b * p.T : 0));
        p.act_offset = p.packed_row * rows;
    }
    return p;
}

/* Blocks of 32 of a packed row, whose cpu_x8_act an x8 kernel reads. */
static int64_t act_blocks(const mid_plan *p) {
    return p->act_offset ? p->K / 32 : 0;
}

/* the packed row of b of every (slot, token) pair; staged, then the rows
 * of b packed once */
size_t cpu_mul_mat_id_shared_scratch(const cpu_op *op) {
    mid_plan p = make_plan(op);
    return p.packed_row * (size_t)(p.n_used * p.T + (p.staged ? p.n_b * p.T : 0)) +
           (size_t)act_blocks(&p) * (size_t)(p.n_used * p.T) * sizeof(cpu_x8_act);
}

/* the work area, then the grouping: E + 1 starts, E fill counts, the list
 * of selected experts, n_used * T pairs */
size_t cpu_mul_mat_id_thread_scratch(const cpu_op *op) {
    mid_plan p = make_plan(op);
    return p.work + ((size_t)(3 * p.E + 1) + (size_t)(p.n_used * p.T)) * sizeof(int32_t) + 64;
}

typedef struct mid_job {
    cpu_op *op;
    mid_plan plan;
} mid_job;

/* A thread's grouping of the pairs by expert (see group). */
typedef struct mid_groups {
    int32_t *start, *fill, *used, *pairs;
    int32_t n_sel;
} mid_groups;

/* The (slot, token) pairs of each expert, as slot + n_used * token, in
 * start[e]..start[e + 1] of pairs (by token within an expert); used[0..
 * n_sel) the experts chosen at all.  False (the op failed) on an id
 * outside [0, E). */
static bool group(cpu_op *op, const mid_plan *p, int ith, mid_groups *g) {
    const tport_tensor_view *ids = op->src[2];
    int32_t *start = (int32_t *)(void *)(cpu_thread_scratch(op, ith) + p->work);
    *g = (mid_groups){.start = start, .fill = start + p->E + 1, .used = start + 2 * p->E + 1,
                      .pairs = start + 3 * p->E + 1};
    memset(start, 0, (size_t)(p->E + 1) * sizeof *start);
    for (int64_t t = 0; t < p->T; t++)
        for (int64_t i = 0; i < p->n_used; i++) {
            int32_t e;
            memcpy(&e, cpu_row(ids, t, 0, 0) + (size_t)i * ids->nb[0], sizeof e);
            if (e < 0 || e >= p->E) {
                cpu_op_fail(op, TPORT_STATUS_INVALID_ARGUMENT, "mul_mat_id: expert id %d outside [0, %lld)",
                            (int)e, (long long)p->E);
                return false;
            }
            start[e + 1]++;
        }
    for (int64_t e = 0; e < p->E; e++) {
        if (start[e + 1])
            g->used[g->n_sel++] = (int32_t)e;
        start[e + 1] += start[e];
        g->fill[e] = start[e];
    }
    for (int64_t t = 0; t < p->T; t++)
        for (int64_t i = 0; i < p->n_used; i++) {
            int32_t e;
            memcpy(&e, cpu_row(ids, t, 0, 0) + (size_t)i * ids->nb[0], sizeof e);
            g->pairs[g->fill[e]++] = (int32_t)(i + p->n_used * t);
        }
    return true;
}

/* Packs row (i1, i2) of b into dst; false (the op failed) if it cannot. */
static bool pack_row(cpu_op *op, const mid_plan *p, int64_t i1, int64_t i2, uint8_t *dst, float *buf) {
    const tport_tensor_view *b = op->src[1];
    if (!p->vec_dot) {
        cpu_row_to_f32(b, cpu_row(b, i1, i2, 0), p->K, (float *)(void *)dst);
        return true;
    }
    const float *src = cpu_row_f32(b, i1, i2, 0, buf);
    if (!cpuq_quantize_act(p->vec_dot_type, src, dst, p->K) &&
        cpu_host->from_float(p->vec_dot_type, src, dst, p->K) != TPORT_STATUS_OK) {
        cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat_id: cannot convert activations to type %u",
                    p->vec_dot_type);
        return false;
    }
    return true;
}

/* Where the staged rows of b are packed (see mid_plan). */
static uint8_t *staged_rows(const cpu_op *op, const mid_plan *p) {
    return op->scratch + (size_t)(p->n_used * p->T) * p->packed_row;
}

/* staged: every row of b once */
static void stage_task(void *arg, int ith, int nth) {
    mid_job *job = arg;
    const mid_plan *p = &job->plan;
    float *buf = (float *)(void *)cpu_thread_scratch(job->op, ith);
    int64_t r0, r1;
    cpu_split(p->n_b * p->T, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++)
        if (!pack_row(job->op, p, r % p->n_b, r / p->n_b, staged_rows(job->op, p) + (size_t)r * p->packed_row, buf))
            return;
}

/* the row of every pair, in grouped order: packed, or copied when staged */
static void pack_task(void *arg, int ith, int nth) {
    mid_job *job = arg;
    cpu_op *op = job->op;
    const mid_plan *p = &job->plan;
    float *buf = (float *)(void *)cpu_thread_scratch(op, ith);
    mid_groups g;
    if (!group(op, p, ith, &g))
        return;
    int64_t k0, k1, last = -1; /* the row of b this thread packed last */
    cpu_split(p->n_used * p->T, ith, nth, &k0, &k1);
    for (int64_t k = k0; k < k1; k++) {
        int64_t i = g.pairs[k] % p->n_used, t = g.pairs[k] / p->n_used, row = (i % p->n_b) + p->n_b * t;
        uint8_t *dst = op->scratch + (size_t)k * p->packed_row;
        cpu_x8_act *act = (cpu_x8_act *)(void *)(op->scratch + p->act_offset) + k * act_blocks(p);
        if (!p->staged && row == last) { /* one token's slots sharing its row (generation) convert it once */
            memcpy(dst, dst - p->packed_row, p->packed_row);
            if (p->act_offset) /* and its blocks' scales and sums, the previous pair's (this thread's) */
                memcpy(act, act - act_blocks(p), (size_t)act_blocks(p) * sizeof *act);
            continue;
        }
        if (p->staged) {
            memcpy(dst, staged_rows(op, p) + (size_t)row * p->packed_row, p->packed_row);
        } else {
            last = row;
            if (!pack_row(op, p, i % p->n_b, t, dst, buf))
                return;
        }
        if (p->act_offset)
            cpu_x8_act_info(dst, act_blocks(p), act);
    }
}

static float dot_f32(int64_t K, const float *a, const float *b) {
    float acc[8] = {0};
    int64_t k = 0;
    for (; k + 8 <= K; k += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += a[k + l] * b[k + l];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; k < K; k++)
        s += a[k] * b[k];
    return s;
}

/* The tile kernel of an expert with `cols` tokens: the wide kind from its
 * min_cols, the narrow one from TILE_MIN_COLS and its min_cols; NULL:
 * the per-row kernels. */
static const cpu_tile_kind *tiled(const mid_plan *p, int32_t cols) {
    if (p->wide && cols >= p->wide->min_batch)
        return p->wide;
    return p->tile && cols >= TILE_MIN_COLS && cols >= p->tile->min_cols ? p->tile : NULL;
}

/* The estimated cost of one unit of an expert with `cols` tokens, in
 * columns of a tile kernel (for sharing out work; only the balance
 * depends on it): a per-row kernel takes about twice as long a column,
 * unpacking about min_cols columns. */
static int64_t unit_cost(const mid_plan *p, int32_t cols) {
    const cpu_tile_kind *kind = tiled(p, cols);
    return kind ? cols + kind->min_cols : 2 * (int64_t)cols;
}

/* Rows r0 .. r0 + nr - 1 of expert e against its columns k0 .. k1 - 1 of
 * the packed activations: each tile of rows unpacked once. */
static void unit_tiled(cpu_op *op, const cpu_tile_kind *kind, const mid_plan *p, const mid_groups *g, int32_t e,
                       int64_t r0, int64_t nr, uint8_t *tile) {
    const tport_tensor_view *as = op->src[0], *d = op->dst;
    const int R = kind->rows, C = kind->cols;
    for (int64_t q0 = r0; q0 < r0 + nr; q0 += R) {
        int rows = (int)(r0 + nr - q0 < R ? r0 + nr - q0 : R);
        const uint8_t *rp[CPU_TILE_MAX_ROWS];
        for (int r = 0; r < rows; r++)
            rp[r] = cpu_row(as, q0 + r, e, 0);
        kind->unpack(as->type, rp, rows, p->K, tile);
        for (int32_t k = g->start[e]; k < g->start[e + 1]; k += C) {
            int nc = g->start[e + 1] - k < C ? g->start[e + 1] - k : C;
            float s[CPU_TILE_MAX_COLS * CPU_TILE_MAX_ROWS];
            kind->dot(as->type, tile, p->K, op->scratch + (size_t)k * p->packed_row, p->packed_row, nc, s);
            for (int c = 0; c < nc; c++) {
                int64_t i = g->pairs[k + c] % p->n_used, t = g->pairs[k + c] / p->n_used;
                uint8_t *out = cpu_row(d, i, t, 0) + (size_t)q0 * d->nb[0];
                if (d->nb[0] == sizeof(float)) /* a column's rows in one piece */
                    memcpy(out, &s[c * R], (size_t)rows * sizeof(float));
                else
                    for (int r = 0; r < rows; r++)
                        memcpy(out + (size_t)r * d->nb[0], &s[c * R + r], sizeof(float));
            }
        }
    }
}

/* Generation streams each selected row from memory once, by default
 * from the file's mapping in 4 KiB pages, where the hardware prefetchers
 * stop at every page: the row kernels waited on memory (most of a token's
 * time on the Xeon of RESULTS run 35).  Over the experts' opt-in copy in
 * huge pages (TPORT_CPU_COPY_EXPERTS, cpu_repack.c) these prefetches
 * made no difference that showed (RESULTS run 38).  So before a row's dot its bytes are
 * prefetched cpu_stream_ahead further on into L2, and 4 KiB beyond that
 * towards the last level: about two and five rows ahead, far enough to
 * cover the latency, and L2 rather than L1, whose fill buffers a row's
 * worth of prefetches at once filled up (the row kernels may prefetch into
 * L1 themselves, from L2 then).  Nothing past the expert's last row
 * (end): the rows there belong to an expert that was not chosen. */
#define FAR_AHEAD 4096

static void prefetch_row_ahead(const uint8_t *row, size_t bytes, uintptr_t end) {
    uintptr_t a = (uintptr_t)row + cpu_stream_ahead, f = a + FAR_AHEAD;
    for (size_t o = 0; o < bytes && a + o < end; o += 64)
        __builtin_prefetch((const void *)(a + o), 0, 2);
    for (size_t o = 0; o < bytes && f + o < end; o += 64)
        __builtin_prefetch((const void *)(f + o), 0, 1);
}

/* The same one output at a time: vec_dot, or f32 dots of rows converted
 * into rows_f32. */
static bool unit_rows(cpu_op *op, const mid_plan *p, const mid_groups *g, int32_t e, int64_t r0, int64_t nr,
                      float *rows_f32) {
    const tport_tensor_view *as = op->src[0], *d = op->dst;
    const uint8_t *arow[CPU_TILE_MAX_ROWS > UNIT_ROWS ? CPU_TILE_MAX_ROWS : UNIT_ROWS];
    for (int64_t r = 0; r < nr; r++) {
        arow[r] = cpu_row(as, r0 + r, e, 0);
        if (p->vec_dot || (as->type == TPORT_TYPE_F32 && as->nb[0] == sizeof(float)))
            continue;
        float *dst = rows_f32 + (size_t)r * (size_t)p->K;
        if (!cpu_row_to_f32(as, arow[r], p->K, dst)) {
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat_id: cannot convert type %u to f32", as->type);
            return false;
        }
        arow[r] = (const uint8_t *)dst;
    }
    const uintptr_t end = (uintptr_t)cpu_row(as, p->N - 1, e, 0) + as->nb[1]; /* of expert e's rows */
    for (int32_t k = g->start[e]; k < g->start[e + 1]; k++) {
        int64_t i = g->pairs[k] % p->n_used, t = g->pairs[k] / p->n_used;
        const uint8_t *brow = op->scratch + (size_t)k * p->packed_row;
        uint8_t *out = cpu_row(d, i, t, 0) + (size_t)r0 * d->nb[0];
        for (int64_t r = 0; r < nr; r++) {
            float s;
            if (p->prefetch && k == g->start[e]) /* the first column reads the row from memory */
                prefetch_row_ahead(arow[r], as->nb[1], end);
            if (p->vec_dot)
                p->vec_dot(p->K, &s, arow[r], brow);
            else
                s = dot_f32(p->K, (const float *)(const void *)arow[r], (const float *)(const void *)brow);
            memcpy(out + (size_t)r * d->nb[0], &s, sizeof s);
        }
    }
    return true;
}

/* Rows r0 .. r0 + nr - 1 (whole groups) of re-encoded expert e against
 * its columns, 4 at a time: two groups at once where the 512-bit kernels
 * make that faster (cpu_x8_dot_pair). */
static void unit_x8(cpu_op *op, const mid_plan *p, const mid_groups *g, int32_t e, int64_t r0, int64_t nr) {
    const tport_tensor_view *d = op->dst;
    const cpu_x8_act *act = (const cpu_x8_act *)(const void *)(op->scratch + p->act_offset);
    int64_t nblk = act_blocks(p);
    const uint8_t *expert = (const uint8_t *)op->src[0]->data + (size_t)e * (size_t)(p->N / 8) * p->group_bytes;
    for (int64_t q0 = r0; q0 < r0 + nr;) {
        const uint8_t *group = expert + (size_t)(q0 / 8) * p->group_bytes;
        int ng = CPU_X8_WIDE && q0 + 16 <= r0 + nr ? 2 : 1;
        for (int32_t k = g->start[e]; k < g->start[e + 1]; k += 4) {
            int nc = g->start[e + 1] - k < 4 ? g->start[e + 1] - k : 4;
            const uint8_t *y = op->scratch + (size_t)k * p->packed_row;
            float s[2 * 4 * 8];
            if (ng == 2 && nc == 4) {
                cpu_x8_dot_pair(p->x8, group, p->group_bytes, p->K, y, p->packed_row, act + k * nblk, (size_t)nblk,
                                s);
            } else {
                cpu_x8_dot(p->x8, group, p->K, y, p->packed_row, act + k * nblk, (size_t)nblk, nc, s);
                if (ng == 2)
                    cpu_x8_dot(p->x8, group + p->group_bytes, p->K, y, p->packed_row, act + k * nblk, (size_t)nblk,
                               nc, s + 32);
            }
            for (int h = 0; h < ng; h++)
                for (int c = 0; c < nc; c++) {
                    int64_t i = g->pairs[k + c] % p->n_used, t = g->pairs[k + c] / p->n_used;
                    uint8_t *out = cpu_row(d, i, t, 0) + (size_t)(q0 + 8 * h) * d->nb[0];
                    if (d->nb[0] == sizeof(float))
                        memcpy(out, s + 32 * h + 8 * c, 8 * sizeof(float));
                    else
                        for (int r = 0; r < 8; r++)
                            memcpy(out + (size_t)r * d->nb[0], s + 32 * h + 8 * c + r, sizeof(float));
                }
        }
        q0 += 8 * ng;
    }
}

static void compute_units(cpu_op *op, const mid_plan *p, int ith, int nth) {
    uint8_t *work = cpu_thread_scratch(op, ith);
    mid_groups g;
    if (!group(op, p, ith, &g))
        return;
    /* units (selected expert s, tile of rows u) in that order, each at a
     * cost; chunk c takes the units whose cost so far starts in
     * [c total / n, (c + 1) total / n) */
    int64_t tiles = (p->N + p->unit - 1) / p->unit, total = 0;
    for (int32_t s = 0; s < g.n_sel; s++)
        total += tiles * unit_cost(p, g.start[g.used[s] + 1] - g.start[g.used[s]]);
    int64_t n_chunks = (int64_t)nth * (p->T <= 2 ? CHUNKS_GEN : CHUNKS_BATCH), c0, c1;
    if (nth <= 1 || n_chunks > total)
        n_chunks = nth <= 1 ? 1 : total > 0 ? total : 1;
    while (cpu_claim(op, n_chunks, 1, &c0, &c1)) {
        int64_t lo = total * c0 / n_chunks, hi = total * c1 / n_chunks, before = 0;
        for (int32_t s = 0; s < g.n_sel && before < hi; s++) {
            int32_t e = g.used[s], cols = g.start[e + 1] - g.start[e];
            int64_t w = unit_cost(p, cols), after = before + tiles * w;
            if (after > lo) {
                /* the units u with before + u w in [lo, hi) */
                int64_t u0 = lo > before ? (lo - before + w - 1) / w : 0;
                int64_t u1 = (hi - before + w - 1) / w;
                if (u1 > tiles)
                    u1 = tiles;
                const cpu_tile_kind *kind = tiled(p, cols);
                for (int64_t u = u0; u < u1; u++) {
                    int64_t r0 = u * p->unit, nr = p->N - r0 < p->unit ? p->N - r0 : p->unit;
                    if (p->x8)
                        unit_x8(op, p, &g, e, r0, nr);
                    else if (kind)
                        unit_tiled(op, kind, p, &g, e, r0, nr, work);
                    else if (!unit_rows(op, p, &g, e, r0, nr, (float *)(void *)work))
                        return;
                }
            }
            before = after;
        }
    }
}

/* the wide kind's tile configuration around a thread's units */
static void compute_task(void *arg, int ith, int nth) {
    mid_job *job = arg;
    const mid_plan *p = &job->plan;
    bool wide = p->wide && p->wide->begin;
    if (wide)
        p->wide->begin(job->op->src[0]->type);
    compute_units(job->op, p, ith, nth);
    if (wide)
        p->wide->end();
}

/* The packing of b depends on b, the ids and how the plan converts b's
 * rows, not on the experts: the gate product after the up product of the
 * same activations (blocks_moe.c) finds its rows packed already, and runs
 * only its compute phase, which joins the up product's without a barrier
 * (cpu_graph.c plan_joins): neither writes the scratch then. */
bool cpu_mul_mat_id_shares_packing(const cpu_op *a, const cpu_op *b) {
    if (a->dst->op != TPORT_OP_MUL_MAT_ID || b->dst->op != TPORT_OP_MUL_MAT_ID || a->shared != b->shared ||
        !cpu_same_view(a->src[1], b->src[1]) || !cpu_same_view(a->src[2], b->src[2]))
        return false;
    if (cpu_weight_layout(a->src[0]) != cpu_weight_layout(b->src[0]))
        return false; /* one in a layout it may refuse: each runs (or fails) alone */
    mid_plan pa = make_plan(a), pb = make_plan(b);
    return pa.K == pb.K && pa.n_b == pb.n_b && pa.n_used == pb.n_used && pa.T == pb.T &&
           (!pa.vec_dot) == (!pb.vec_dot) && pa.vec_dot_type == pb.vec_dot_type && pa.packed_row == pb.packed_row &&
           pa.staged == pb.staged && pa.act_offset == pb.act_offset;
}

/* Threads for converting `rows` rows: a few are converted faster by one
 * thread than a barrier lets several share them. */
static int pack_threads(int64_t rows, int nth) {
    return rows < 4 * (int64_t)nth ? 1 : nth;
}

void cpu_run_mul_mat_id(cpu_ctx *ctx, cpu_op *op) {
    mid_job job = {op, make_plan(op)};
    if (!job.plan.x8 && cpu_weight_layout(op->src[0]) != CPU_LAYOUT_PLAIN) {
        cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat_id: experts of type %u in a layout it cannot read",
                    op->src[0]->type);
        return;
    }
    if (!op->reuses_packing) {
        /* The rows converted: each distinct row of b once when staged or
         * when a token's slots share it (generation's gate and up: one
         * row, which one thread packs faster than a barrier lets two,
         * right after the routing ops that thread 0 ran alone, with no
         * barrier between), else every pair's. */
        const mid_plan *p = &job.plan;
        int64_t rows = p->n_b < p->n_used ? p->n_b * p->T : p->n_used * p->T;
        if (p->staged)
            cpu_parallel(ctx, stage_task, &job, pack_threads(rows, op->nth));
        cpu_parallel(ctx, pack_task, &job, pack_threads(p->staged ? p->n_used * p->T : rows, op->nth));
    }
    cpu_parallel(ctx, compute_task, &job, op->nth);
}
