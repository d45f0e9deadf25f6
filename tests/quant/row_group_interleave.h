/* ggml's interleave of Q4_0 / IQ4_NL rows into the removed row-grouped
 * types, written for the tests from the facts (ggml-aarch64.c of
 * fcf83895: make_block_q4_0x4/x8 and quantize_q4_0_nr_bl; bb693904's
 * make_block_iq4_nlx4 is the same formula without the xor).  The library's
 * re-encoding (src/quant/row_groups.c) is written the other way round, by
 * chunks, so the two check each other. */
#ifndef TPORT_TESTS_ROW_GROUP_INTERLEAVE_H
#define TPORT_TESTS_ROW_GROUP_INTERLEAVE_H

#include <stdint.h>
#include <string.h>

enum { QK = 32, BB = 18 };

/* ggml's make_block_q4_0x{4,8} for R rows: scales first, then qs[i] from
 * block (i % (R bsi)) / bsi at byte (i / (R bsi)) bsi + i % bsi, xored. */
static inline void make_block(const uint8_t *in[], int R, int bsi, uint8_t xor_mask, uint8_t *out) {
    for (int i = 0; i < R; i++)
        memcpy(out + 2 * i, in[i], 2);
    for (int i = 0; i < QK / 2 * R; i++) {
        int src_offset = (i / (R * bsi)) * bsi;
        int src_id = (i % (R * bsi)) / bsi;
        src_offset += i % bsi;
        out[2 * R + i] = in[src_id][2 + src_offset] ^ xor_mask;
    }
}

/* quantize_q4_0_nr_bl's order: per group of R rows, per block column. */
static inline void interleave(const uint8_t *rows, int64_t ne0, int64_t nrows, int R, int bsi, uint8_t xor_mask,
                       uint8_t *out) {
    const int64_t nb = ne0 / QK;
    for (int64_t b = 0; b < nrows; b += R)
        for (int64_t x = 0; x < nb; x++) {
            const uint8_t *in[8];
            for (int i = 0; i < R; i++)
                in[i] = rows + ((b + i) * nb + x) * BB;
            make_block(in, R, bsi, xor_mask, out);
            out += R * BB;
        }
}

#endif
