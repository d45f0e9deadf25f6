/* Conversions between tensor types (and layout revisions).
 *
 * tport_conversion_kind says what converting `from` to `to` costs:
 *  IDENTITY    the same bytes (same type id);
 *  LOSSLESS    a re-encoding that keeps every decoded value bit for bit
 *              (QNT0 <-> QNT1 nibble permutations, f16 scale -> f32 scale,
 *              any float type -> F32, F16/BF16 -> F32);
 *  LOSSY       dequantize then requantize (or, for QNT1 -> current Q4_0,
 *              Q4_1 and Q8_0, round the f32 scales to f16, which formats.md
 *              3.8 shows equals requantizing with today's quantizer);
 *  IMPOSSIBLE  an unknown type, or a target with no quantizer (I32).
 * A row-grouped type (row_groups.h) converts to its base type LOSSLESSly
 * and to anything else as its base type does.
 *
 * tport_convert converts n elements (a multiple of both block sizes) and,
 * when report is not NULL, fills it: the kind and the error of the decoded
 * result against the decoded source (0 for lossless conversions). */
#ifndef TPORT_QUANT_CONVERT_H
#define TPORT_QUANT_CONVERT_H

#include <stdint.h>

#include "tport/tport.h"

/* The kinds and the report are public (tport.h: tport_conv_kind,
 * tport_conversion); tport_convert is tport_convert_data under its
 * library name. */
typedef tport_conversion tport_convert_report;

tport_status tport_convert(tport_type_id from, const void *src, tport_type_id to, void *dst, int64_t n,
                           tport_convert_report *report);

/* tport_convert_rows (tport.h) converts whole tensors, also from the
 * row-grouped types (row_groups.h), which tport_convert refuses. */

/* Q4_0 "row-split", written only by llama.cpp of 2023-03-10 (formats.md
 * 3.1): per row, all nb f32 scales, then nb*16 interleaved nibble bytes.
 * Re-interleaves one row of row_len elements (a multiple of 32) into
 * Q4_0_QNT0 blocks {f32 d; u8 qs[16]}; lossless.  Same byte count. */
tport_status tport_q4_0_rowsplit_to_qnt0(const void *src, void *dst, int64_t row_len);


#endif
