/* Conversions between types; see convert.h.  Three paths:
 *  - identity: memcpy;
 *  - recode: the legacy families (q4_0, q4_1, q5_0, q5_1, q8_0) across
 *    layout revisions, block by block: scales re-stored in the target's
 *    width (f16 <-> f32), nibbles re-ordered (interleaved <-> split), quants
 *    and qh unchanged.  Lossless unless a scale narrows f32 -> f16;
 *  - generic: decode to f32 and encode with the target's reference
 *    quantizer, chunk by chunk.
 * Every path then measures the decoded result against the decoded source. */
#include "convert.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "quant_impl.h"
#include "row_groups.h"
#include "type_table.h"

/* ---- the legacy families' layouts --------------------------------------- */
enum family { FAM_Q4_0, FAM_Q4_1, FAM_Q5_0, FAM_Q5_1, FAM_Q8_0 };

typedef struct legacy_layout {
    tport_type_id id;
    enum family family;
    int scale_bytes;  /* 2 = f16, 4 = f32 */
    bool interleaved; /* QNT0 nibble order */
} legacy_layout;

static const legacy_layout legacy_layouts[] = {
    {TPORT_TYPE_Q4_0, FAM_Q4_0, 2, false},      {TPORT_TYPE_Q4_0_QNT1, FAM_Q4_0, 4, false},
    {TPORT_TYPE_Q4_0_QNT0, FAM_Q4_0, 4, true},  {TPORT_TYPE_Q4_1, FAM_Q4_1, 2, false},
    {TPORT_TYPE_Q4_1_QNT1, FAM_Q4_1, 4, false}, {TPORT_TYPE_Q4_1_QNT0, FAM_Q4_1, 4, true},
    {TPORT_TYPE_Q5_0, FAM_Q5_0, 2, false},      {TPORT_TYPE_Q5_0_QNT0, FAM_Q5_0, 2, true},
    {TPORT_TYPE_Q5_1, FAM_Q5_1, 2, false},      {TPORT_TYPE_Q5_1_QNT0, FAM_Q5_1, 2, true},
    {TPORT_TYPE_Q8_0, FAM_Q8_0, 2, false},      {TPORT_TYPE_Q8_0_QNT1, FAM_Q8_0, 4, false},
};

static const legacy_layout *find_legacy(tport_type_id id) {
    for (size_t i = 0; i < sizeof legacy_layouts / sizeof legacy_layouts[0]; i++)
        if (legacy_layouts[i].id == id)
            return &legacy_layouts[i];
    return NULL;
}

static int n_scales(enum family f) { return (f == FAM_Q4_1 || f == FAM_Q5_1) ? 2 : 1; }
static bool has_qh(enum family f) { return f == FAM_Q5_0 || f == FAM_Q5_1; }

/* One block from layout a to layout b (same family). */
static void recode_block(const legacy_layout *a, const uint8_t *src, const legacy_layout *b, uint8_t *dst) {
    const int ns = n_scales(a->family);
    for (int s = 0; s < ns; s++) {
        const float v = a->scale_bytes == 2 ? q_rd_f16(src + 2 * s) : q_rd_f32(src + 4 * s);
        if (b->scale_bytes == 2)
            q_wr_f16(dst + 2 * s, v);
        else
            q_wr_f32(dst + 4 * s, v);
    }
    src += ns * a->scale_bytes;
    dst += ns * b->scale_bytes;
    if (a->family == FAM_Q8_0) {
        memcpy(dst, src, 32);
        return;
    }
    if (has_qh(a->family)) { /* qh bit i is element i's bit 4 in every revision */
        memcpy(dst, src, 4);
        src += 4;
        dst += 4;
    }
    uint8_t q[32];
    for (int j = 0; j < 16; j++) {
        if (a->interleaved) {
            q[2 * j] = src[j] & 15;
            q[2 * j + 1] = src[j] >> 4;
        } else {
            q[j] = src[j] & 15;
            q[j + 16] = src[j] >> 4;
        }
    }
    for (int j = 0; j < 16; j++)
        dst[j] = b->interleaved ? (uint8_t)(q[2 * j] | q[2 * j + 1] << 4) : (uint8_t)(q[j] | q[j + 16] << 4);
}

/* ---- the table ------------------------------------------------------------ */
tport_conv_kind tport_conversion_kind(tport_type_id from, tport_type_id to) {
    const tport_type_traits *f = tport_traits(from), *t = tport_traits(to);
    const tport_row_group *g = tport_row_group_of(from);
    if (g && t) {
        /* through the base type, whose bytes ungrouping gives back */
        if (to == from)
            return TPORT_CONV_IDENTITY;
        if (to == g->base)
            return TPORT_CONV_LOSSLESS;
        return tport_row_group_of(to) ? TPORT_CONV_IMPOSSIBLE : tport_conversion_kind(g->base, to);
    }
    if (!f || !t || !f->to_float)
        return TPORT_CONV_IMPOSSIBLE;
    if (from == to)
        return TPORT_CONV_IDENTITY;
    if (!t->from_float)
        return TPORT_CONV_IMPOSSIBLE;
    if (to == TPORT_TYPE_F32)
        /* every f16/bf16 and quantized value is an f32; not every i32,
         * i64 or f64 */
        return from == TPORT_TYPE_I32 || from == TPORT_TYPE_I64 || from == TPORT_TYPE_F64 ? TPORT_CONV_LOSSY
                                                                                          : TPORT_CONV_LOSSLESS;
    const legacy_layout *a = find_legacy(from), *b = find_legacy(to);
    if (a && b && a->family == b->family)
        return b->scale_bytes >= a->scale_bytes ? TPORT_CONV_LOSSLESS : TPORT_CONV_LOSSY;
    return TPORT_CONV_LOSSY;
}

const char *tport_conv_kind_name(tport_conv_kind kind) {
    switch (kind) {
    case TPORT_CONV_IDENTITY: return "identity";
    case TPORT_CONV_LOSSLESS: return "lossless";
    case TPORT_CONV_LOSSY: return "lossy";
    case TPORT_CONV_IMPOSSIBLE: return "impossible";
    }
    return "impossible";
}

/* ---- conversion ----------------------------------------------------------- */
#define CHUNK 4096 /* elements; a multiple of every block size (16, 32, 256) */

typedef struct err_acc {
    double sum_sq, max_abs;
} err_acc;

static void accumulate_error(err_acc *e, const float *want, const float *got, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        if (memcmp(&want[i], &got[i], sizeof(float)) == 0 || (isnan(want[i]) && isnan(got[i])))
            continue;
        double d = fabs((double)got[i] - (double)want[i]);
        if (isnan(d))
            d = INFINITY;
        e->sum_sq += d * d;
        if (d > e->max_abs)
            e->max_abs = d;
    }
}

static int64_t row_bytes(const tport_type_traits *t, int64_t n) {
    return n / t->info.block_size * (int64_t)t->info.block_bytes;
}

tport_status tport_convert(tport_type_id from, const void *src, tport_type_id to, void *dst, int64_t n,
                           tport_convert_report *report) {
    const tport_conv_kind kind = tport_conversion_kind(from, to);
    if (report) /* the kind is said even when the conversion fails */
        *report = (tport_convert_report){.kind = kind};
    const tport_type_traits *f = tport_traits(from), *t = tport_traits(to);
    if (kind == TPORT_CONV_IMPOSSIBLE)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "cannot convert type %u (%s) to type %u (%s)", from,
                           f ? f->info.name : "unknown", to, t ? t->info.name : "unknown");
    if (tport_row_group_of(from))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "convert %s: its rows are interleaved in groups; only whole "
                           "tensors convert (tport_convert_rows)", f->info.name);
    if (n < 0 || n % f->info.block_size || n % t->info.block_size)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "convert %s -> %s: %lld elements is not a multiple of both block sizes (%lld, %lld)",
                           f->info.name, t->info.name, (long long)n, (long long)f->info.block_size,
                           (long long)t->info.block_size);
    /* Keep every byte count far from overflow (bytes per element <= 10). */
    if (n > INT64_MAX / 64)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "convert: %lld elements is too many", (long long)n);
    if (n > 0 && (!src || !dst))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "convert: NULL buffer");
    if (report)
        report->n = n;
    if (n == 0)
        return TPORT_STATUS_OK;
    if (kind == TPORT_CONV_IDENTITY) {
        memmove(dst, src, (size_t)row_bytes(f, n));
        return TPORT_STATUS_OK;
    }

    float *a = malloc(sizeof(float) * CHUNK), *b = malloc(sizeof(float) * CHUNK);
    if (!a || !b) {
        free(a);
        free(b);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "convert: out of memory");
    }
    const legacy_layout *la = find_legacy(from), *lb = find_legacy(to);
    const bool recode = la && lb && la->family == lb->family;
    err_acc err = {0, 0};
    const uint8_t *s = src;
    uint8_t *d = dst;
    for (int64_t done = 0; done < n; done += CHUNK) {
        const int64_t m = n - done < CHUNK ? n - done : CHUNK;
        const uint8_t *sc = s + row_bytes(f, done);
        uint8_t *dc = d + row_bytes(t, done);
        f->to_float(sc, a, m);
        if (recode) {
            for (int64_t blk = 0; blk < m / 32; blk++)
                recode_block(la, sc + blk * (int64_t)f->info.block_bytes, lb, dc + blk * (int64_t)t->info.block_bytes);
        } else {
            t->from_float(a, dc, m);
        }
        t->to_float(dc, b, m);
        accumulate_error(&err, a, b, m);
    }
    free(a);
    free(b);
    if (report) {
        report->rmse = sqrt(err.sum_sq / (double)n);
        report->max_abs_err = err.max_abs;
    }
    return TPORT_STATUS_OK;
}

tport_status tport_convert_rows(tport_type_id from, const void *src, tport_type_id to, void *dst, int64_t ne0,
                                int64_t nrows, tport_convert_report *report) {
    if (report) /* the kind is said even when the conversion fails */
        *report = (tport_convert_report){.kind = tport_conversion_kind(from, to)};
    if (ne0 < 0 || nrows < 0 || (nrows > 0 && ne0 > INT64_MAX / 64 / nrows))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "convert: [%lld x %lld] is not a tensor shape",
                           (long long)ne0, (long long)nrows);
    const tport_row_group *g = tport_row_group_of(from);
    if (!g)
        return tport_convert(from, src, to, dst, ne0 * nrows, report);
    const tport_conv_kind kind = tport_conversion_kind(from, to);
    const tport_type_traits *f = tport_traits(from), *t = tport_traits(to);
    if (kind == TPORT_CONV_IMPOSSIBLE)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "cannot convert type %u (%s) to type %u (%s)", from,
                           f->info.name, to, t ? t->info.name : "unknown");
    tport_status st = tport_row_group_check(g, ne0, nrows);
    if (st != TPORT_STATUS_OK)
        return st;
    if (!src || !dst)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "convert: NULL buffer");
    const size_t bytes = (size_t)(ne0 / f->info.block_size * nrows) * f->info.block_bytes;
    if (kind == TPORT_CONV_IDENTITY) {
        memmove(dst, src, bytes);
    } else if (to == g->base) {
        st = tport_row_group_ungroup(g, src, dst, ne0, nrows);
    } else {
        void *base = malloc(bytes);
        if (!base)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "convert %s: out of memory", f->info.name);
        st = tport_row_group_ungroup(g, src, base, ne0, nrows);
        if (st == TPORT_STATUS_OK)
            st = tport_convert(g->base, base, to, dst, ne0 * nrows, report);
        free(base);
    }
    if (st == TPORT_STATUS_OK && report) {
        report->kind = kind;
        report->n = ne0 * nrows;
    }
    return st;
}

tport_status tport_q4_0_rowsplit_to_qnt0(const void *src, void *dst, int64_t row_len) {
    if (row_len < 0 || row_len % 32 || row_len > INT64_MAX / 64 || (row_len > 0 && (!src || !dst)))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "q4_0 row-split: bad row length %lld", (long long)row_len);
    const int64_t nb = row_len / 32;
    const uint8_t *scales = src, *qs = (const uint8_t *)src + 4 * nb;
    uint8_t *d = dst;
    const uintptr_t s0 = (uintptr_t)src, d0 = (uintptr_t)dst, len = (uintptr_t)(20 * nb);
    if (nb > 0 && d0 < s0 + len && s0 < d0 + len)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "q4_0 row-split: buffers overlap");
    for (int64_t b = 0; b < nb; b++) {
        memcpy(d + 20 * b, scales + 4 * b, 4);
        memcpy(d + 20 * b + 4, qs + 16 * b, 16);
    }
    return TPORT_STATUS_OK;
}
