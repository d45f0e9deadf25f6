/* IQ1_S, IQ1_M (ggml ids 19, 29): 256-element super-blocks of 8-element
 * entries of a ternary grid (iq1_grids.c, values -1/0/1) shifted by
 * +-1/8.  Layouts (ggml-common.h):
 *   IQ1_S {f16 d; u8 qs[32]; u16 qh[8]}                        50 bytes
 *     per 32 elements: 4 index bytes, and qh = 4 x 3 high index bits, a
 *     3-bit scale s (bits 12..14) and the shift's sign (bit 15);
 *     element = d * (2s + 1) * (grid + shift).
 *   IQ1_M {u8 qs[32]; u8 qh[16]; u8 scales[8]}                 56 bytes
 *     per 8 elements 3 high index bits and a shift sign bit in qh; two
 *     3-bit scales per 32 in the low 12 bits of each u16 of scales, whose
 *     top nibbles together form the f16 super-block scale.
 * Float operations in ggml's order (checked bit for bit by tests/quant). */
#include "iq_grids.h"
#include "quant_impl.h"
#include "quant_rows.h"

enum { IQ1_S_BYTES = 50, IQ1_M_BYTES = 56 };

static void put8(float *y, float dl, uint64_t entry, float delta) {
    for (int j = 0; j < 8; j++)
        y[j] = dl * ((float)(int8_t)iq_grid_byte(entry, j) + delta);
}

void tport_dequant_iq1_s(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += IQ1_S_BYTES) {
        const float d = q_rd_f16(x);
        const uint8_t *qs = x + 2;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4) {
            const unsigned qh = q_rd_u16(x + 2 + 32 + 2 * ib);
            const float dl = d * (float)(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -TPORT_IQ1S_DELTA : TPORT_IQ1S_DELTA;
            for (int l = 0; l < 4; l++, y += 8)
                put8(y, dl, tport_iq1s_grid[qs[l] | (((qh >> 3 * l) & 7) << 8)], delta);
        }
    }
}

void tport_dequant_iq1_m(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += IQ1_M_BYTES) {
        const uint8_t *qs = x, *qh = x + 32;
        unsigned sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = q_rd_u16(x + 48 + 2 * k);
        const uint16_t scale = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) |
                                          (sc[3] & 0xf000));
        const float d = tport_fp16_to_fp32(scale);
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, qh += 2) {
            const float dl1 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 0)) & 7) + 1);
            const float dl2 = d * (float)(2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3)) & 7) + 1);
            const unsigned idx[4] = {qs[0] | ((qh[0] << 8) & 0x700u), qs[1] | ((qh[0] << 4) & 0x700u),
                                     qs[2] | ((qh[1] << 8) & 0x700u), qs[3] | ((qh[1] << 4) & 0x700u)};
            const float delta[4] = {qh[0] & 0x08 ? -TPORT_IQ1S_DELTA : TPORT_IQ1S_DELTA,
                                    qh[0] & 0x80 ? -TPORT_IQ1S_DELTA : TPORT_IQ1S_DELTA,
                                    qh[1] & 0x08 ? -TPORT_IQ1S_DELTA : TPORT_IQ1S_DELTA,
                                    qh[1] & 0x80 ? -TPORT_IQ1S_DELTA : TPORT_IQ1S_DELTA};
            for (int l = 0; l < 4; l++, y += 8)
                put8(y, l < 2 ? dl1 : dl2, tport_iq1s_grid[idx[l]], delta[l]);
        }
    }
}
