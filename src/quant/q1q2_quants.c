/* Q1_0, Q2_0 (ggml ids 41, 42): one f16 scale per block and 1 or 2 bits
 * per element.  Layouts (ggml-common.h):
 *   Q1_0 {f16 d; u8 qs[16]}   128 per block, 18 bytes: bit j (LSB first)
 *        set = +d, clear = -d; d = mean |x|.
 *   Q2_0 {f16 d; u8 qs[16]}    64 per block, 18 bytes: 2 bits per element
 *        (LSB first), code c means (c - 1) * d; d = max |x|.
 * The quantizers are ggml's quantize_row_q{1,2}_0_ref; quantize_q{1,2}_0
 * with importance weights quantizes each row with the same function (the
 * weights are unused), so one function serves both. */
#include "quant_impl.h"
#include "quant_rows.h"

enum { Q1_BLOCK = 128, Q2_BLOCK = 64, Q12_BYTES = 18 };

void tport_dequant_q1_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / Q1_BLOCK; b++, x += Q12_BYTES) {
        const float d = q_rd_f16(x), neg_d = -d;
        for (int j = 0; j < Q1_BLOCK; j++)
            *y++ = x[2 + j / 8] >> (j % 8) & 1 ? d : neg_d;
    }
}

void tport_dequant_q2_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / Q2_BLOCK; b++, x += Q12_BYTES) {
        const float d = q_rd_f16(x);
        for (int j = 0; j < Q2_BLOCK; j++)
            *y++ = (float)(((x[2 + j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
    }
}

void tport_quant_q1_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / Q1_BLOCK; b++, x += Q1_BLOCK, y += Q12_BYTES) {
        float sum_abs = 0.0f;
        for (int j = 0; j < Q1_BLOCK; j++)
            sum_abs += fabsf(x[j]);
        q_wr_f16(y, sum_abs / Q1_BLOCK);
        memset(y + 2, 0, Q12_BYTES - 2);
        for (int j = 0; j < Q1_BLOCK; j++)
            if (x[j] >= 0.0f)
                y[2 + j / 8] |= (uint8_t)(1u << (j % 8));
    }
}

void tport_quant_q2_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / Q2_BLOCK; b++, x += Q2_BLOCK, y += Q12_BYTES) {
        float amax = 0.0f;
        for (int j = 0; j < Q2_BLOCK; j++)
            if (fabsf(x[j]) > amax)
                amax = fabsf(x[j]);
        const float d = amax, id = d > 0.0f ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        memset(y + 2, 0, Q12_BYTES - 2);
        for (int j = 0; j < Q2_BLOCK; j++) {
            /* (int)roundf(w * id) + 1 clamped to 0..3; q_cvtt gives the
             * x86-64 result of the conversion for a NaN product */
            int q = q_cvtt(roundf(x[j] * id)) + 1;
            q = q < 0 ? 0 : q > 3 ? 3 : q;
            y[2 + j / 4] |= (uint8_t)(q << (2 * (j % 4)));
        }
    }
}
