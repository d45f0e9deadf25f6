/* mul_mat: dst[i, j] = sum_k a[k, i] * b[k, j] for a [K, N, ne2, ne3] of
 * any type, b [K, M, ne2', ne3'] f32 and dst [N, M, ne2', ne3'] f32; a is
 * broadcast over dims 2 and 3 (grouped-query attention).
 *
 * Paths:
 * - a quantized with a vec_dot kernel (cpu_quant.h): b's rows are first
 *   converted to the kernel's vec_dot_type, then each output is one call;
 * - otherwise everything is f32: rows of a that are not dense f32 are
 *   converted (dequantized) into per-thread scratch, and a 4-row tile of a
 *   is dotted with each row of b using independent accumulators that the
 *   compiler vectorizes.
 * Work is split by tiles of output rows. */
#include <string.h>

#include "cpu_internal.h"
#include "cpu_quant.h"

#define TILE 4
#define LANES 8

typedef struct mm_plan {
    int64_t K, N, M;
    int64_t r2, r3;            /* broadcast ratios of dims 2, 3 */
    cpu_vec_dot_fn vec_dot;    /* NULL: f32 path */
    tport_type_id vec_dot_type;
    size_t packed_row;         /* bytes per packed row of b, 0 = b used in place */
} mm_plan;

static mm_plan make_plan(const cpu_op *op) {
    const tport_tensor_view *a = op->src[0], *b = op->src[1];
    mm_plan p = {.K = a->ne[0], .N = a->ne[1], .M = b->ne[1], .r2 = b->ne[2] / a->ne[2],
                 .r3 = b->ne[3] / a->ne[3]};
    if (a->type != TPORT_TYPE_F32 && cpu_rows_dense(a)) {
        const tport_type_info *ti = cpu_host->type_info(a->type);
        cpu_vec_dot_fn fn = cpu_vec_dot_for(a->type);
        if (ti && fn) {
            const tport_type_info *vt = cpu_host->type_info(ti->vec_dot_type);
            if (vt && vt->block_size > 0 && p.K % vt->block_size == 0 && cpu_can_from_float(vt->id)) {
                p.vec_dot = fn;
                p.vec_dot_type = vt->id;
                p.packed_row = (size_t)(p.K / vt->block_size) * (size_t)vt->block_bytes;
            }
        }
    }
    if (!p.vec_dot && b->nb[0] != sizeof(float))
        p.packed_row = (size_t)p.K * sizeof(float);
    return p;
}

size_t cpu_mul_mat_shared_scratch(const cpu_op *op) {
    mm_plan p = make_plan(op);
    return p.packed_row * (size_t)cpu_nrows(op->src[1]);
}

#if defined(__GNUC__)
/* GCC/clang vector extensions: portable SIMD without intrinsics; each
 * variant's -m flags decide how wide the machine registers are. */
typedef float v8f __attribute__((vector_size(LANES * sizeof(float))));

/* Vectors never cross a function boundary (that would tie the ABI to the
 * instruction set): loads are memcpy, sums read through a pointer. */
#define LOAD8(dst, p) memcpy(&(dst), (p), sizeof(v8f))

static inline float hsum8(const v8f *v) {
    float s = 0.0f;
    for (int l = 0; l < LANES; l++)
        s += (*v)[l];
    return s;
}

static float dot1(int64_t K, const float *a, const float *b) {
    v8f acc = {0};
    int64_t k = 0;
    for (; k + LANES <= K; k += LANES) {
        v8f x, y;
        LOAD8(x, a + k);
        LOAD8(y, b + k);
        acc += x * y;
    }
    float s = hsum8(&acc);
    for (; k < K; k++)
        s += a[k] * b[k];
    return s;
}

/* Four rows of a against one row of b: b is loaded once per step. */
static void dot4(int64_t K, const float *const a[TILE], const float *b, float out[TILE]) {
    v8f acc0 = {0}, acc1 = {0}, acc2 = {0}, acc3 = {0};
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    int64_t k = 0;
    for (; k + LANES <= K; k += LANES) {
        v8f bv, x0, x1, x2, x3;
        LOAD8(bv, b + k);
        LOAD8(x0, a0 + k);
        LOAD8(x1, a1 + k);
        LOAD8(x2, a2 + k);
        LOAD8(x3, a3 + k);
        acc0 += x0 * bv;
        acc1 += x1 * bv;
        acc2 += x2 * bv;
        acc3 += x3 * bv;
    }
    float s0 = hsum8(&acc0), s1 = hsum8(&acc1), s2 = hsum8(&acc2), s3 = hsum8(&acc3);
    for (; k < K; k++) {
        s0 += a0[k] * b[k];
        s1 += a1[k] * b[k];
        s2 += a2[k] * b[k];
        s3 += a3[k] * b[k];
    }
    out[0] = s0;
    out[1] = s1;
    out[2] = s2;
    out[3] = s3;
}

/* Four rows of a against two rows of b: 8 accumulators, 6 loads per 8 FMAs. */
static void dot4x2(int64_t K, const float *const a[TILE], const float *b0, const float *b1, float o0[TILE],
                   float o1[TILE]) {
    v8f c00 = {0}, c10 = {0}, c20 = {0}, c30 = {0}, c01 = {0}, c11 = {0}, c21 = {0}, c31 = {0};
    const float *a0 = a[0], *a1 = a[1], *a2 = a[2], *a3 = a[3];
    int64_t k = 0;
    for (; k + LANES <= K; k += LANES) {
        v8f y0, y1, x;
        LOAD8(y0, b0 + k);
        LOAD8(y1, b1 + k);
        LOAD8(x, a0 + k);
        c00 += x * y0;
        c01 += x * y1;
        LOAD8(x, a1 + k);
        c10 += x * y0;
        c11 += x * y1;
        LOAD8(x, a2 + k);
        c20 += x * y0;
        c21 += x * y1;
        LOAD8(x, a3 + k);
        c30 += x * y0;
        c31 += x * y1;
    }
    o0[0] = hsum8(&c00), o0[1] = hsum8(&c10), o0[2] = hsum8(&c20), o0[3] = hsum8(&c30);
    o1[0] = hsum8(&c01), o1[1] = hsum8(&c11), o1[2] = hsum8(&c21), o1[3] = hsum8(&c31);
    for (; k < K; k++)
        for (int r = 0; r < TILE; r++) {
            o0[r] += a[r][k] * b0[k];
            o1[r] += a[r][k] * b1[k];
        }
}
#else
static float dot1(int64_t K, const float *a, const float *b) {
    float s = 0.0f;
    for (int64_t k = 0; k < K; k++)
        s += a[k] * b[k];
    return s;
}

static void dot4(int64_t K, const float *const a[TILE], const float *b, float out[TILE]) {
    for (int r = 0; r < TILE; r++)
        out[r] = dot1(K, a[r], b);
}

static void dot4x2(int64_t K, const float *const a[TILE], const float *b0, const float *b1, float o0[TILE],
                   float o1[TILE]) {
    dot4(K, a, b0, o0);
    dot4(K, a, b1, o1);
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
        if (!job->plan.vec_dot) {
            cpu_row_to_f32(b, cpu_row(b, i1, i2, i3), job->plan.K, (float *)dst);
            continue;
        }
        const float *src = cpu_row_f32(b, i1, i2, i3, buf);
        if (cpu_host->from_float(job->plan.vec_dot_type, src, dst, job->plan.K) != TPORT_STATUS_OK) {
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "mul_mat: cannot convert activations to type %u",
                        job->plan.vec_dot_type);
            return;
        }
    }
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
    int64_t tiles = (p->N + TILE - 1) / TILE, n_mats = d->ne[2] * d->ne[3];
    int64_t t0, t1;
    cpu_split(tiles * n_mats, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        int64_t mat = t / tiles, i0 = (t % tiles) * TILE;
        int64_t i12 = mat % d->ne[2], i13 = mat / d->ne[2];
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
                for (int k = 0; k < rows; k++)
                    p->vec_dot(p->K, &s[k], araw[k], brow);
            } else if (rows == TILE && j + 1 < p->M) {
                dot4x2(p->K, af, brow, b_row(job, j + 1, i12, i13), s, s1);
                pair = 1;
            } else if (rows == TILE) {
                dot4(p->K, af, brow, s);
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

void cpu_run_mul_mat(cpu_pool *pool, cpu_op *op) {
    mm_job job = {op, make_plan(op)};
    if (job.plan.packed_row) {
        cpu_pool_run(pool, pack_task, &job, op->nth);
        if (atomic_load(&op->status))
            return;
    }
    cpu_pool_run(pool, compute_task, &job, op->nth);
}
