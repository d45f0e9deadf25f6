/* Removed ggml types that interleave the blocks of R consecutive rows:
 * Q4_0_4_4, Q4_0_4_8, Q4_0_8_8 (ggml-aarch64.c, llama.cpp #5780,
 * 2024-07-10) and IQ4_NL_4_4 (llama.cpp #10541, 2024-11-28), all removed
 * from GGUF files by llama.cpp #10446 (2024-12-07) for runtime repacking.
 *
 * A tensor of ne0 columns and nrows rows (nrows a multiple of R) is, for
 * each group of R rows and each of the nb = ne0/32 block columns x in
 * order, one super-block of R*18 bytes built from the R blocks (row
 * gR+r, column x) of the base type (Q4_0 or IQ4_NL, {f16 d; u8 qs[16]}):
 *   f16 d[R]       the R scales, row order;
 *   u8  qs[16 R]   chunk c (of `chunk` bytes) is bytes (c / R) * chunk ..
 *                  + chunk - 1 of row c % R's qs, each byte ^ xor_mask.
 * (ggml's make_block_q4_0x4/x8 and make_block_iq4_nlx4.)  Q4_0's xor 0x88
 * turns each biased nibble q (q - 8 is the value) into the two's
 * complement 4-bit q - 8; IQ4_NL's nibbles are table indices, kept as is.
 * ggml declared blck_size 32 and type_size 18, so the byte count is the
 * base type's; but no row is whole on its own, so these types have no
 * per-row to_float: whole tensors are re-encoded to the base type, which
 * gives back the base type's bytes exactly. */
#ifndef TPORT_QUANT_ROW_GROUPS_H
#define TPORT_QUANT_ROW_GROUPS_H

#include <stdint.h>

#include "tport/backend.h"

typedef struct tport_row_group {
    tport_type_id id;
    tport_type_id base; /* the interleaved blocks' type (the successor) */
    int rows;           /* R */
    int chunk;          /* bytes of one row's quants taken at a time */
    uint8_t xor_mask;   /* applied to every quant byte */
} tport_row_group;

/* NULL unless id is a row-grouped type. */
const tport_row_group *tport_row_group_of(tport_type_id id);

/* Whether a tensor of ne0 columns and nrows rows can be of this layout:
 * whole blocks, whole groups of rows.  Sets the error if not. */
tport_status tport_row_group_check(const tport_row_group *g, int64_t ne0, int64_t nrows);

/* Re-encodes a whole tensor into the base type (same byte count; src and
 * dst must not overlap).  Lossless: the base type's bytes come back. */
tport_status tport_row_group_ungroup(const tport_row_group *g, const void *src, void *dst, int64_t ne0,
                                     int64_t nrows);

#endif
