/* IQ2_XXS, IQ2_XS, IQ2_S (ggml ids 16, 17, 22): 256-element super-blocks
 * of 8-element groups, each group an entry of a lattice grid (iq2_grids.c)
 * with per-element signs.  Layouts (ggml-common.h):
 *   IQ2_XXS {f16 d; u16 qs[32]}                                66 bytes
 *     per 32 elements two u32: the first holds 4 grid indices (bytes), the
 *     second 4 x 7 sign bits and a 4-bit scale s in its top bits;
 *     element = d * (0.5 + s) / 4 * grid * sign.
 *   IQ2_XS  {f16 d; u16 qs[32]; u8 scales[8]}                  74 bytes
 *     qs: 9-bit grid index | 7 sign bits << 9; a 4-bit scale per 16.
 *   IQ2_S   {f16 d; u8 qs[32]; u8 signs[32]; u8 qh[8]; u8 scales[8]}  82
 *     bytes (ggml declares qs[64]: the index bytes, then the sign bytes);
 *     10-bit grid index = qs | 2 bits of qh; 8 explicit sign bits.
 * The dequantizers compute in ggml's order (d * (0.5 + s) * 0.25, then
 * times the grid value, then the sign), which the tests check bit for bit.
 * Signs of XXS/XS keep 7 bits; the 8th is their parity (iq_signs8). */
#include "iq_grids.h"
#include "quant_impl.h"
#include "quant_rows.h"

enum { IQ2_XXS_BYTES = 66, IQ2_XS_BYTES = 74, IQ2_S_BYTES = 82 };

static void put8(float *y, float db, uint64_t entry, uint8_t signs) {
    for (int j = 0; j < 8; j++)
        y[j] = db * (float)iq_grid_byte(entry, j) * (signs >> j & 1 ? -1.f : 1.f);
}

void tport_dequant_iq2_xxs(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += IQ2_XXS_BYTES) {
        const float d = q_rd_f16(x);
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const uint8_t *q = x + 2 + 8 * ib;
            const uint32_t aux = q_rd_u32(q + 4);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8)
                put8(y, db, tport_iq2xxs_grid[q[l]], iq_signs8(aux >> 7 * l));
        }
    }
}

void tport_dequant_iq2_xs(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += IQ2_XS_BYTES) {
        const float d = q_rd_f16(x);
        const uint8_t *scales = x + 2 + 64;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            const float db[2] = {d * (0.5f + (float)(scales[ib] & 0xf)) * 0.25f,
                                 d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++, y += 8) {
                const uint16_t q = q_rd_u16(x + 2 + 2 * (4 * ib + l));
                put8(y, db[l / 2], tport_iq2xs_grid[q & 511], iq_signs8(q >> 9));
            }
        }
    }
}

void tport_dequant_iq2_s(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += IQ2_S_BYTES) {
        const float d = q_rd_f16(x);
        const uint8_t *qs = x + 2, *signs = x + 2 + 32, *qh = x + 2 + 64, *scales = x + 2 + 72;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 4, signs += 4) {
            const float db[2] = {d * (0.5f + (float)(scales[ib] & 0xf)) * 0.25f,
                                 d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++, y += 8)
                put8(y, db[l / 2], tport_iq2s_grid[qs[l] | ((qh[ib] << (8 - 2 * l)) & 0x300)], signs[l]);
        }
    }
}
