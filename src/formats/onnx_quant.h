/* Block-quantized ONNX weights (com.microsoft.MatMulNBits, block-wise
 * DequantizeLinear) re-encoded as tensorport types (onnx_quant.c).
 * Private to src/formats/. */
#ifndef TPORT_FORMATS_ONNX_QUANT_H
#define TPORT_FORMATS_ONNX_QUANT_H

#include <stdbool.h>
#include <stdint.h>

#include "formats/mf_internal.h"

/* One array of codes, scales or zero points: n elements of `kind`
 * (4-bit kinds packed two a byte, the first in the low nibble). */
enum onnx_qkind { QK_NONE, QK_U4, QK_I4, QK_U8, QK_I8, QK_F16, QK_BF16, QK_F32 };
typedef struct onnx_qarr {
    const uint8_t *p;
    uint64_t n;          /* elements */
    enum onnx_qkind kind;
    void *tmp;           /* malloc'ed copy of external data, or NULL */
} onnx_qarr;

/* The weight as tensorport holds it, N rows of K, element (n, k) =
 * (code - zero_point) * scale, each read from its array by index:
 *  - MatMulNBits: B [N, nb, bs*bits/8] (rows padded to nb*bs codes),
 *    scales [N*nb], zero points [N*zp_row] (zp_row = nb, or nb rounded
 *    up to whole bytes when packed 4-bit);
 *  - DequantizeLinear: x [R, C] (transposed: the weight of a MatMul,
 *    n = c and k = r; else a Gather's table, n = r, k = c), scale and
 *    zero point per tensor (scale_rank 0), per axis (1) or per block
 *    of `bs` along `axis` (2). */
typedef struct onnx_qsrc {
    int64_t N, K;
    onnx_qarr codes, scales, zps;  /* zps.kind QK_NONE: zp_default   */
    float zp_default;
    bool nbits;
    int bits;                      /* 4 or 8: the codes' width        */
    int64_t bs, nb, zp_row;        /* MatMulNBits                     */
    int64_t R, C;                  /* DequantizeLinear                */
    bool transposed;
    int axis, scale_rank;
} onnx_qsrc;

/* Encodes the weight into the first of tensorport's types that gives
 * every element's value exactly (q4_0, then layout revisions with f32
 * scales, 16-element blocks or a minimum, then q8_0, then f32 computed
 * as (code - zero_point) * scale), each candidate checked by decoding
 * it.  *data is owned by mf. */
tport_status onnx_quant_encode(tport_model_file *mf, const onnx_qsrc *q, tport_type_id *type, void **data,
                               uint64_t *nbytes);

#endif
