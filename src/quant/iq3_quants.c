/* IQ3_XXS, IQ3_S (ggml ids 18, 21): 256-element super-blocks of 4-element
 * grid entries (iq3_grids.c) with per-element signs.  Layouts
 * (ggml-common.h):
 *   IQ3_XXS {f16 d; u8 qs[64]; u8 scales_and_signs[32]}       98 bytes
 *     per 32 elements 8 grid indices (bytes) and one u32: 4 x 7 sign bits
 *     (8th = parity) and a 4-bit scale s on top; element =
 *     d * (0.5 + s) / 2 * grid * sign.
 *   IQ3_S   {f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]}  110 bytes
 *     9-bit grid index = qs | a bit of qh; 8 explicit sign bits; a 4-bit
 *     scale s per 32, element = d * (1 + 2s) * grid * sign.
 * Float operations in ggml's order (checked bit for bit by tests/quant). */
#include "iq_grids.h"
#include "quant_impl.h"
#include "quant_rows.h"

enum { IQ3_XXS_BYTES = 98, IQ3_S_BYTES = 110 };

/* Two grid entries (8 elements) under one scale and 8 sign bits. */
static void put4x2(float *y, float db, uint32_t g1, uint32_t g2, uint8_t signs) {
    for (int j = 0; j < 4; j++) {
        y[j] = db * (float)iq_grid_byte(g1, j) * (signs >> j & 1 ? -1.f : 1.f);
        y[j + 4] = db * (float)iq_grid_byte(g2, j) * (signs >> (j + 4) & 1 ? -1.f : 1.f);
    }
}

void tport_dequant_iq3_xxs(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += IQ3_XXS_BYTES) {
        const float d = q_rd_f16(x);
        const uint8_t *qs = x + 2, *sas = x + 2 + QK_K / 4;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 8) {
            const uint32_t aux = q_rd_u32(sas + 4 * ib);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8)
                put4x2(y, db, tport_iq3xxs_grid[qs[2 * l]], tport_iq3xxs_grid[qs[2 * l + 1]], iq_signs8(aux >> 7 * l));
        }
    }
}

void tport_dequant_iq3_s(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += IQ3_S_BYTES) {
        const float d = q_rd_f16(x);
        const uint8_t *qs = x + 2, *qh = x + 2 + 64, *signs = x + 2 + 72, *scales = x + 2 + 104;
        for (int ib = 0; ib < QK_K / 32; ib++, qs += 8, signs += 4) {
            const float db = d * (float)(1 + 2 * (ib % 2 ? scales[ib / 2] >> 4 : scales[ib / 2] & 0xf));
            const unsigned h = qh[ib];
            for (int l = 0; l < 4; l++, y += 8)
                put4x2(y, db, tport_iq3s_grid[qs[2 * l] | ((h << (8 - 2 * l)) & 256)],
                       tport_iq3s_grid[qs[2 * l + 1] | ((h << (7 - 2 * l)) & 256)], signs[l]);
        }
    }
}
