/* Data movement: cpy (with type conversion) and cont, get_rows (any source
 * type to f32 rows), concat. */
#include <string.h>

#include "cpu_internal.h"

#define FLAT_CHUNK 4096 /* elements; a multiple of every block size */

static bool same_shape(const tport_tensor_view *a, const tport_tensor_view *b) {
    for (int i = 0; i < TPORT_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i])
            return false;
    return true;
}

static bool is_contiguous(const tport_tensor_view *t) {
    int64_t bs = cpu_block_size(t->type);
    size_t expect = cpu_type_size(t->type);
    if (bs <= 0 || t->nb[0] != expect)
        return false;
    expect *= (size_t)(t->ne[0] / bs);
    for (int i = 1; i < TPORT_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect)
            return false;
        expect *= (size_t)t->ne[i];
    }
    return true;
}

static int64_t nelements(const tport_tensor_view *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

/* Address of the element with flat (logical order) index e. */
static uint8_t *element_at(const tport_tensor_view *t, int64_t e) {
    size_t off = 0;
    for (int i = 0; i < TPORT_MAX_DIMS; i++) {
        off += (size_t)(e % t->ne[i]) * t->nb[i];
        e /= t->ne[i];
    }
    return (uint8_t *)t->data + off;
}

/* f32 from a transposed view (dim 1 adjacent in memory, dim 0 strided)
 * into dense rows, e.g. attention's V^T: element by element every read
 * touches another cache line; in 16 x 16 blocks each line read is used
 * whole and the 16 rows written stay in cache. */
#define TBLK 16
static bool is_transpose_f32(const tport_tensor_view *d, const tport_tensor_view *s) {
    return d->type == TPORT_TYPE_F32 && s->type == TPORT_TYPE_F32 && d->nb[0] == sizeof(float) &&
           s->nb[1] == sizeof(float) && s->nb[0] != sizeof(float) && same_shape(d, s);
}

static void transpose_f32(const tport_tensor_view *d, const tport_tensor_view *s, int ith, int nth) {
    int64_t nblk = (d->ne[1] + TBLK - 1) / TBLK, u0, u1;
    cpu_split(nblk * d->ne[2] * d->ne[3], ith, nth, &u0, &u1);
    for (int64_t u = u0; u < u1; u++) {
        int64_t mat = u / nblk, ib = (u % nblk) * TBLK;
        int64_t i2 = mat % d->ne[2], i3 = mat / d->ne[2];
        int rows = (int)(d->ne[1] - ib < TBLK ? d->ne[1] - ib : TBLK);
        float *out[TBLK];
        for (int r = 0; r < rows; r++)
            out[r] = (float *)cpu_row(d, ib + r, i2, i3);
        const uint8_t *base = cpu_row(s, ib, i2, i3);
        for (int64_t i0 = 0; i0 < d->ne[0]; i0++) {
            const uint8_t *col = base + (size_t)i0 * s->nb[0]; /* rows ib.. of element i0, adjacent */
            for (int r = 0; r < rows; r++)
                memcpy(&out[r][i0], col + (size_t)r * sizeof(float), sizeof(float));
        }
    }
}

/* d := s, both contiguous, the same element count whatever the shapes:
 * one long row in chunks.  A KV cache store of one token (a few head
 * rows) is one conversion here, not a call through a buffer per row. */
static bool cpy_flat(const tport_tensor_view *d, const tport_tensor_view *s, float *buf, int ith, int nth) {
    int64_t n = nelements(d), n_chunks = (n + FLAT_CHUNK - 1) / FLAT_CHUNK, c0, c1;
    cpu_split(n_chunks, ith, nth, &c0, &c1);
    int64_t sbs = cpu_block_size(s->type), dbs = cpu_block_size(d->type);
    for (int64_t c = c0; c < c1; c++) {
        int64_t e0 = c * FLAT_CHUNK, len = n - e0 < FLAT_CHUNK ? n - e0 : FLAT_CHUNK;
        const uint8_t *src = (const uint8_t *)s->data + (size_t)(e0 / sbs) * s->nb[0];
        uint8_t *dst = (uint8_t *)d->data + (size_t)(e0 / dbs) * d->nb[0];
        if (d->type == s->type) {
            memcpy(dst, src, (size_t)(len / dbs) * d->nb[0]);
            continue;
        }
        const float *f = (const float *)(const void *)src;
        if (s->type != TPORT_TYPE_F32) {
            if (cpu_host->to_float(s->type, src, buf, len) != TPORT_STATUS_OK)
                return false;
            f = buf;
        }
        if (!cpu_row_from_f32(d, dst, len, f))
            return false;
    }
    return true;
}

static void cpy_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *s = op->src[0];
    float *buf = (float *)cpu_thread_scratch(op, ith);
    if (is_transpose_f32(d, s)) {
        transpose_f32(d, s, ith, nth);
        return;
    }
    if (is_contiguous(d) && is_contiguous(s)) {
        if (!cpy_flat(d, s, buf, ith, nth))
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "cpy: cannot convert type %u to %u", s->type, d->type);
        return;
    }
    if (same_shape(d, s)) {
        bool raw = d->type == s->type && cpu_rows_dense(d) && cpu_rows_dense(s);
        size_t row_bytes = (size_t)(d->ne[0] / (cpu_block_size(d->type) ? cpu_block_size(d->type) : 1)) *
                           cpu_type_size(d->type);
        int64_t r0, r1;
        cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
        for (int64_t r = r0; r < r1; r++) {
            int64_t i1, i2, i3;
            cpu_unravel_row(d, r, &i1, &i2, &i3);
            const uint8_t *src = cpu_row(s, i1, i2, i3);
            uint8_t *dst = cpu_row(d, i1, i2, i3);
            if (raw) {
                memcpy(dst, src, row_bytes);
            } else if (!cpu_row_to_f32(s, src, s->ne[0], buf) || !cpu_row_from_f32(d, dst, d->ne[0], buf)) {
                cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "cpy: cannot convert type %u to %u", s->type, d->type);
                return;
            }
        }
        return;
    }
    /* strided, different shapes (block size 1 only): element by element */
    int64_t n = nelements(d), e0, e1;
    cpu_split(n, ith, nth, &e0, &e1);
    for (int64_t e = e0; e < e1; e++) {
        const uint8_t *src = element_at(s, e);
        uint8_t *dst = element_at(d, e);
        if (s->type == d->type) {
            memcpy(dst, src, cpu_type_size(d->type));
        } else if (cpu_host->to_float(s->type, src, buf, 1) != TPORT_STATUS_OK ||
                   cpu_host->from_float(d->type, buf, dst, 1) != TPORT_STATUS_OK) {
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "cpy: cannot convert type %u to %u", s->type, d->type);
            return;
        }
    }
}

static void get_rows_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *s = op->src[0], *ids = op->src[1];
    int layout = cpu_weight_layout(s);
    uint8_t *plain = cpu_thread_scratch(op, ith); /* a row: at most 34/32 bytes per element */
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t i1, i2, i3;
        cpu_unravel_row(d, r, &i1, &i2, &i3);
        int32_t id;
        memcpy(&id, (const uint8_t *)ids->data + (size_t)i1 * ids->nb[0] + (size_t)i2 * ids->nb[1] +
                        (size_t)i3 * ids->nb[2], sizeof id);
        if (id < 0 || id >= s->ne[1]) {
            cpu_op_fail(op, TPORT_STATUS_INVALID_ARGUMENT, "get_rows: row id %d out of range [0, %lld)", (int)id,
                        (long long)s->ne[1]);
            return;
        }
        const uint8_t *row = cpu_row(s, id, i2, i3);
        if (layout != CPU_LAYOUT_PLAIN) { /* our own layout: the row's plain blocks first */
            cpu_x8_row(s, layout, id, plain);
            row = plain;
        }
        if (!cpu_row_to_f32(s, row, s->ne[0], (float *)cpu_row(d, i1, i2, i3))) {
            cpu_op_fail(op, TPORT_STATUS_UNSUPPORTED, "get_rows: cannot convert type %u", s->type);
            return;
        }
    }
}

/* n elements of es bytes from `in` (nb0 apart) to `out` (dnb0 apart): one
 * memcpy when both are packed: element by element, the concat of the
 * attention of a step of several sequences (rows of a head's size) was a
 * visible part of the step (RESULTS run 38). */
static void copy_run(uint8_t *out, size_t dnb0, const uint8_t *in, size_t nb0, int64_t n, size_t es) {
    if (nb0 == es && dnb0 == es) {
        memcpy(out, in, (size_t)n * es);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        memcpy(out + (size_t)i * dnb0, in + (size_t)i * nb0, es);
}

/* Each row of the result is a's row or b's, or (dim 0) a's then b's. */
static void concat_task(void *arg, int ith, int nth) {
    cpu_op *op = arg;
    const tport_tensor_view *d = op->dst, *a = op->src[0], *b = op->src[1];
    tport_params_concat p;
    memcpy(&p, d->params, sizeof p);
    size_t es = cpu_type_size(d->type);
    int64_t r0, r1;
    cpu_split(cpu_nrows(d), ith, nth, &r0, &r1);
    for (int64_t r = r0; r < r1; r++) {
        int64_t c[4] = {0};
        cpu_unravel_row(d, r, &c[1], &c[2], &c[3]);
        uint8_t *out = cpu_row(d, c[1], c[2], c[3]);
        if (p.dim == 0) {
            copy_run(out, d->nb[0], cpu_row(a, c[1], c[2], c[3]), a->nb[0], a->ne[0], es);
            copy_run(out + (size_t)a->ne[0] * d->nb[0], d->nb[0], cpu_row(b, c[1], c[2], c[3]), b->nb[0],
                     b->ne[0], es);
            continue;
        }
        const tport_tensor_view *src = c[p.dim] < a->ne[p.dim] ? a : b;
        if (src == b)
            c[p.dim] -= a->ne[p.dim];
        copy_run(out, d->nb[0], cpu_row(src, c[1], c[2], c[3]), src->nb[0], d->ne[0], es);
    }
}

void cpu_run_copy(cpu_ctx *ctx, cpu_op *op) {
    switch (op->dst->op) {
    case TPORT_OP_GET_ROWS:
        cpu_parallel(ctx, get_rows_task, op, op->nth);
        break;
    case TPORT_OP_CONCAT:
        cpu_parallel(ctx, concat_task, op, op->nth);
        break;
    default: /* cpy, cont */
        cpu_parallel(ctx, cpy_task, op, op->nth);
        break;
    }
}
