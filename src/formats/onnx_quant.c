/* Block-quantized ONNX weights as tensorport types.  A MatMulNBits or
 * block-wise DequantizeLinear weight means (code - zero_point) * scale
 * per element (computed in f32, as onnxruntime's reference kernels do);
 * each candidate layout below is tried in turn, encoded row by row and
 * decoded again by the type table's own decoder: the first whose decoded
 * values all equal the reference is kept, so a layout is only ever
 * chosen where it is lossless (a 4-bit, block-32, zero-point-8, f16-scale
 * MatMulNBits is q4_0 with its nibbles re-ordered; f32 scales fit the
 * QNT0 revision, whose nibble order is MatMulNBits' own; zero points fit
 * q4_1 when -scale * zero_point is exact in its f16).  Nothing fits:
 * f32.  (+0 and -0 count as equal: a zero weight either way.) */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fp16.h"
#include "formats/onnx_quant.h"
#include "tport/tport.h"

typedef struct layout {
    tport_type_id type;
    int qk, bits;        /* elements per block; 4 or 8             */
    bool f32, min;       /* scale (and min) as f32; a min per block */
    bool interleaved;    /* qs[j] = q[2j] | q[2j+1] << 4             */
} layout;

static const layout LAYOUTS[] = {
    {TPORT_TYPE_Q4_0, 32, 4, false, false, false},      {TPORT_TYPE_Q4_0_QNT0, 32, 4, true, false, true},
    {TPORT_TYPE_Q4_2_QNT0, 16, 4, false, false, true},  {TPORT_TYPE_Q4_1, 32, 4, false, true, false},
    {TPORT_TYPE_Q4_1_QNT0, 32, 4, true, true, true},    {TPORT_TYPE_Q4_3_QNT0, 16, 4, false, true, true},
    {TPORT_TYPE_Q8_0, 32, 8, false, false, false},      {TPORT_TYPE_Q8_0_QNT1, 32, 8, true, false, false},
};

static int32_t code_at(const onnx_qarr *a, uint64_t i) {
    switch (a->kind) {
    case QK_U4: return (a->p[i / 2] >> (4 * (i & 1))) & 15;
    case QK_I4: return (int32_t)(((a->p[i / 2] >> (4 * (i & 1))) & 15) ^ 8) - 8;
    case QK_U8: return a->p[i];
    case QK_I8: return (int8_t)a->p[i];
    default: return 0;
    }
}

static float float_at(const onnx_qarr *a, uint64_t i, float dflt) {
    uint16_t h;
    float f;
    switch (a->kind) {
    case QK_NONE: return dflt;
    case QK_F16: memcpy(&h, a->p + 2 * i, 2); return tport_fp16_to_fp32(h);
    case QK_BF16: memcpy(&h, a->p + 2 * i, 2); return tport_bf16_to_fp32(h);
    case QK_F32: memcpy(&f, a->p + 4 * i, 4); return f;
    default: return (float)code_at(a, i);
    }
}

/* Element (n, k): its code, scale and zero point. */
static void element(const onnx_qsrc *q, int64_t n, int64_t k, int32_t *code, float *scale, float *zp) {
    uint64_t ci, si, zi;
    if (q->nbits) {
        ci = (uint64_t)(n * q->nb * q->bs + k);
        si = (uint64_t)(n * q->nb + k / q->bs);
        zi = (uint64_t)(n * q->zp_row + k / q->bs);
    } else {
        int64_t r = q->transposed ? k : n, c = q->transposed ? n : k;
        ci = (uint64_t)(r * q->C + c);
        if (q->scale_rank == 0)
            si = 0;
        else if (q->scale_rank == 1)
            si = (uint64_t)(q->axis == 0 ? r : c);
        else if (q->axis == 0)
            si = (uint64_t)((r / q->bs) * q->C + c);
        else
            si = (uint64_t)(r * ((q->C + q->bs - 1) / q->bs) + c / q->bs);
        zi = si;
    }
    *code = code_at(&q->codes, ci);
    *scale = float_at(&q->scales, si, 1.0f);
    *zp = float_at(&q->zps, zi, q->zp_default);
}

static bool same(float a, float b) { return a == b || (isnan(a) && isnan(b)); }

static void put_scale(uint8_t *p, float v, bool f32) {
    if (f32)
        memcpy(p, &v, 4);
    else {
        uint16_t h = tport_fp32_to_fp16(v);
        memcpy(p, &h, 2);
    }
}

/* One row in layout l; false where a block's scale or zero point varies
 * inside it, or a code or scale does not fit. */
static bool encode_row(const onnx_qsrc *q, const layout *l, int64_t n, uint8_t *out, uint64_t block_bytes) {
    int32_t cmin = q->codes.kind == QK_I4 ? -8 : q->codes.kind == QK_I8 ? -128 : 0;
    size_t sb = l->f32 ? 4 : 2, head = l->min ? 2 * sb : sb;
    for (int64_t k0 = 0; k0 < q->K; k0 += l->qk, out += block_bytes) {
        int32_t code;
        float d, z, d1, z1;
        element(q, n, k0, &code, &d, &z);
        if (z != floorf(z) || fabsf(z) > 65536.0f || !isfinite(d))
            return false;
        float m = (float)(cmin - (int32_t)z) * d;
        if (!l->f32 && (tport_fp16_to_fp32(tport_fp32_to_fp16(d)) != d ||
                        (l->min && tport_fp16_to_fp32(tport_fp32_to_fp16(m)) != m)))
            return false;
        put_scale(out, d, l->f32);
        if (l->min)
            put_scale(out + sb, m, l->f32);
        uint8_t *qs = out + head;
        memset(qs, 0, (size_t)(block_bytes - head));
        for (int j = 0; j < l->qk; j++) {
            element(q, n, k0 + j, &code, &d1, &z1);
            if (!same(d1, d) || z1 != z)
                return false;
            int32_t u = l->min ? code - cmin : code - (int32_t)z + (l->bits == 4 ? 8 : 0);
            if (l->bits == 8) {
                if (u < -128 || u > 127)
                    return false;
                qs[j] = (uint8_t)(int8_t)u;
                continue;
            }
            if (u < 0 || u > 15)
                return false;
            int byte = l->interleaved ? j / 2 : j % (l->qk / 2);
            int hi = l->interleaved ? j & 1 : j >= l->qk / 2;
            qs[byte] |= (uint8_t)(u << (4 * hi));
        }
    }
    return true;
}

static void reference_row(const onnx_qsrc *q, int64_t n, float *ref) {
    for (int64_t k = 0; k < q->K; k++) {
        int32_t code;
        float d, z;
        element(q, n, k, &code, &d, &z);
        ref[k] = ((float)code - z) * d;
    }
}

/* The whole weight in layout l, or NULL where a row does not fit. */
static uint8_t *try_layout(tport_model_file *mf, const onnx_qsrc *q, const layout *l, float *ref, float *got,
                           uint64_t *nbytes, tport_status *st) {
    int64_t block;
    uint64_t block_bytes, row_bytes, total;
    if (q->K % l->qk || !mf_type_size(l->type, &block, &block_bytes) || block != l->qk ||
        block_bytes != (l->f32 ? 4u : 2u) * (l->min ? 2u : 1u) + (uint64_t)(l->qk * l->bits / 8))
        return NULL;
    row_bytes = (uint64_t)(q->K / l->qk) * block_bytes;
    if (!mf_mul_u64(row_bytes, (uint64_t)q->N, &total))
        return NULL;
    uint8_t *out = malloc(total ? (size_t)total : 1);
    if (!out) {
        *st = TPORT_STATUS_OUT_OF_MEMORY;
        return NULL;
    }
    for (int64_t n = 0; n < q->N; n++) {
        uint8_t *row = out + (uint64_t)n * row_bytes;
        bool ok = encode_row(q, l, n, row, block_bytes) && tport_dequantize(l->type, row, got, q->K) == 0;
        if (ok) {
            reference_row(q, n, ref);
            for (int64_t k = 0; ok && k < q->K; k++)
                ok = same(got[k], ref[k]);
        }
        if (!ok) {
            free(out);
            return NULL;
        }
    }
    uint8_t *owned = mf_alloc(mf, total ? (size_t)total : 1);
    if (owned)
        memcpy(owned, out, (size_t)total);
    else
        *st = TPORT_STATUS_OUT_OF_MEMORY;
    free(out);
    *nbytes = total;
    return owned;
}

tport_status onnx_quant_encode(tport_model_file *mf, const onnx_qsrc *q, tport_type_id *type, void **data,
                               uint64_t *nbytes) {
    uint64_t numel, f32_bytes;
    if (q->N <= 0 || q->K <= 0 || !mf_mul_u64((uint64_t)q->N, (uint64_t)q->K, &numel) ||
        !mf_mul_u64(numel, 4, &f32_bytes) || (uint64_t)q->K > (1u << 30))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: a quantized weight of %lld x %lld", mf->path,
                           (long long)q->N, (long long)q->K);
    float *ref = malloc((size_t)q->K * sizeof *ref), *got = malloc((size_t)q->K * sizeof *got);
    tport_status st = ref && got ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    *data = NULL;
    for (size_t i = 0; !st && !*data && i < sizeof LAYOUTS / sizeof LAYOUTS[0]; i++)
        if (LAYOUTS[i].bits >= q->bits && (*data = try_layout(mf, q, &LAYOUTS[i], ref, got, nbytes, &st)))
            *type = LAYOUTS[i].type;
    if (!st && !*data) { /* no exact layout: f32 */
        float *out = mf_alloc(mf, (size_t)f32_bytes);
        if (!out)
            st = TPORT_STATUS_OUT_OF_MEMORY;
        for (int64_t n = 0; !st && n < q->N; n++)
            reference_row(q, n, out + (uint64_t)n * (uint64_t)q->K);
        *data = out;
        *type = TPORT_TYPE_F32;
        *nbytes = f32_bytes;
    }
    free(ref);
    free(got);
    return st;
}
