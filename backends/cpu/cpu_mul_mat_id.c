/* mul_mat_id, the expert-indexed product (backend.h, TPORT_OP_MUL_MAT_ID):
 * dst[:, i, t] = as[:, :, ids[i, t]]^T b[:, i % n_b, t].
 *
 * It reads only what the ids select, and each selected expert once per
 * evaluation:
 * - phase 1 packs every row of b once: converted to the experts' type's
 *   vec_dot_type (as mul_mat does, llama.cpp's rounding where it applies),
 *   or to dense f32 for f32/f16/bf16 experts;
 * - phase 2 groups the (slot, token) pairs by expert (each thread does this
 *   itself from the ids, in its own scratch: a few thousand integers) and
 *   shares out tiles of TILE_ROWS rows of each selected expert; a tile's
 *   rows are read from memory once and dotted with every token routed to
 *   that expert while they are in cache.  Generation (one token) reads
 *   n_used experts' rows, not E; a prompt batch reads each expert that any
 *   token chose once. */
#include <string.h>

#include "cpu_internal.h"
#include "cpu_quant.h"

#define TILE_ROWS 16

typedef struct mid_plan {
    int64_t K, N, E, n_b, n_used, T;
    cpu_vec_dot_fn vec_dot; /* NULL: f32 dots */
    tport_type_id vec_dot_type;
    size_t packed_row;      /* bytes of one packed row of b */
} mid_plan;

static mid_plan make_plan(const cpu_op *op) {
    const tport_tensor_view *as = op->src[0], *b = op->src[1], *ids = op->src[2];
    mid_plan p = {.K = as->ne[0], .N = as->ne[1], .E = as->ne[2], .n_b = b->ne[1], .n_used = ids->ne[0],
                  .T = ids->ne[1]};
    if (as->type != TPORT_TYPE_F32 && cpu_rows_dense(as)) {
        const tport_type_info *ti = cpu_host->type_info(as->type);
        cpu_vec_dot_fn fn = cpu_vec_dot_for(as->type);
        const tport_type_info *vt = ti && fn ? cpu_host->type_info(ti->vec_dot_type) : NULL;
        if (vt && vt->block_size > 0 && p.K % vt->block_size == 0 && cpu_can_from_float(vt->id)) {
            p.vec_dot = fn;
            p.vec_dot_type = vt->id;
            p.packed_row = (size_t)(p.K / vt->block_size) * (size_t)vt->block_bytes;
        }
    }
    if (!p.vec_dot)
        p.packed_row = (size_t)p.K * sizeof(float);
    p.packed_row = (p.packed_row + 63) / 64 * 64;
    return p;
}

size_t cpu_mul_mat_id_shared_scratch(const cpu_op *op) {
    mid_plan p = make_plan(op);
    return p.packed_row * (size_t)(p.n_b * p.T);
}

/* converted weight rows, then the grouping: E + 1 starts, E fill counts,
 * n_used * T pairs, the list of selected experts */
size_t cpu_mul_mat_id_thread_scratch(const cpu_op *op) {
    mid_plan p = make_plan(op);
    size_t rows = p.vec_dot ? 0 : (size_t)TILE_ROWS * (size_t)p.K * sizeof(float);
    return rows + ((size_t)(3 * p.E + 1) + (size_t)(p.n_used * p.T)) * sizeof(int32_t) + 64;
}

typedef struct mid_job {
    cpu_op *op;
    mid_plan plan;
} mid_job;

static void pack_task(void *arg, int ith, int nth) {
    mid_job *job = arg;
    cpu_op *op = job->op;
    const tport_tensor_view *b = op->src[1];
    const mid_plan *p = &job->plan;
    float *buf = (float *)cpu_thread_scratch(op, ith);
    int64_t r0, r1;
    cpu_split(p->n_b * p->T, ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1 = r % p->n_b, i2 = r / p->n_b;
        uint8_t *dst = op->scratch + (size_t)r * p->packed_row;
        if (!p->vec_dot) {
            cpu_row_to_f32(b, cpu_row(b, i1, i2, 0), p->K, (float *)(void *)dst);
            continue;
        }
        const float *src = cpu_row_f32(b, i1, i2, 0, buf);
        if (!cpuq_quantize_act(p->vec_dot_type, src, dst, p->K) &&
            cpu_host->from_float(p->vec_dot_type, src, dst, p->K) != TPORT_STATUS_OK) {
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat_id: cannot convert activations to type %u",
                        p->vec_dot_type);
            return;
        }
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

/* The (slot, token) pairs of each expert, as slot + n_used * token, in
 * start[e]..start[e + 1] of pairs; used[0..*n_sel) the experts chosen at
 * all.  False (the op failed) on an id outside [0, E). */
static bool group(cpu_op *op, const mid_plan *p, int32_t *start, int32_t *fill, int32_t *pairs, int32_t *used,
                  int32_t *n_sel) {
    const tport_tensor_view *ids = op->src[2];
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
    *n_sel = 0;
    for (int64_t e = 0; e < p->E; e++) {
        if (start[e + 1])
            used[(*n_sel)++] = (int32_t)e;
        start[e + 1] += start[e];
        fill[e] = start[e];
    }
    for (int64_t t = 0; t < p->T; t++)
        for (int64_t i = 0; i < p->n_used; i++) {
            int32_t e;
            memcpy(&e, cpu_row(ids, t, 0, 0) + (size_t)i * ids->nb[0], sizeof e);
            pairs[fill[e]++] = (int32_t)(i + p->n_used * t);
        }
    return true;
}

static void compute_task(void *arg, int ith, int nth) {
    mid_job *job = arg;
    cpu_op *op = job->op;
    const mid_plan *p = &job->plan;
    const tport_tensor_view *as = op->src[0], *d = op->dst;
    uint8_t *mine = cpu_thread_scratch(op, ith);
    float *rows_f32 = (float *)(void *)mine;
    int32_t *start = (int32_t *)(void *)(mine + (p->vec_dot ? 0 : (size_t)TILE_ROWS * (size_t)p->K * sizeof(float)));
    int32_t *fill = start + p->E + 1, *used = fill + p->E, *pairs = used + p->E, n_sel;
    if (!group(op, p, start, fill, pairs, used, &n_sel))
        return;
    int64_t tiles = (p->N + TILE_ROWS - 1) / TILE_ROWS, n_units = tiles * n_sel;
    /* generation streams each selected row once: few long chunks */
    int64_t chunk = cpu_chunk_size(n_units, nth, p->T <= 2 ? 2 : 8), u0, u1;
    while (cpu_claim(op, n_units, chunk, &u0, &u1)) {
        for (int64_t u = u0; u < u1; u++) {
            int32_t e = used[u / tiles];
            int64_t r0 = (u % tiles) * TILE_ROWS, nr = p->N - r0 < TILE_ROWS ? p->N - r0 : TILE_ROWS;
            const uint8_t *arow[TILE_ROWS];
            for (int64_t r = 0; r < nr; r++) {
                arow[r] = cpu_row(as, r0 + r, e, 0);
                if (p->vec_dot || (as->type == TPORT_TYPE_F32 && as->nb[0] == sizeof(float)))
                    continue;
                float *dst = rows_f32 + (size_t)r * (size_t)p->K;
                if (!cpu_row_to_f32(as, arow[r], p->K, dst)) {
                    cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat_id: cannot convert type %u to f32",
                                as->type);
                    return;
                }
                arow[r] = (const uint8_t *)dst;
            }
            for (int32_t k = start[e]; k < start[e + 1]; k++) {
                int64_t i = pairs[k] % p->n_used, t = pairs[k] / p->n_used;
                const uint8_t *brow = op->scratch + (size_t)((i % p->n_b) + p->n_b * t) * p->packed_row;
                uint8_t *out = cpu_row(d, i, t, 0) + (size_t)r0 * d->nb[0];
                for (int64_t r = 0; r < nr; r++) {
                    float s;
                    if (p->vec_dot)
                        p->vec_dot(p->K, &s, arow[r], brow);
                    else
                        s = dot_f32(p->K, (const float *)(const void *)arow[r], (const float *)(const void *)brow);
                    memcpy(out + (size_t)r * d->nb[0], &s, sizeof s);
                }
            }
        }
    }
}

void cpu_run_mul_mat_id(cpu_ctx *ctx, cpu_op *op) {
    mid_job job = {op, make_plan(op)};
    int nth = job.plan.n_b * job.plan.T < 4 * op->nth ? 1 : op->nth;
    cpu_parallel(ctx, pack_task, &job, nth);
    cpu_parallel(ctx, compute_task, &job, op->nth);
}
