/* TQ1_0, TQ2_0 (ggml ids 34, 35; BitNet b1.58 and TriLM weights): ternary
 * values {-1, 0, 1} times one f16 scale per 256.  Layouts (ggml-common.h):
 *   TQ1_0 {u8 qs[48]; u8 qh[4]; f16 d}                          54 bytes
 *     base-3 packing, 5 trits per qs byte and 4 per qh byte, stored as the
 *     fixed-point fraction ceil(v * 256 / 243) so that trit n is the top
 *     digit of (byte * 3^n) mod 256, times 3, >> 8.  qs[0..32) hold
 *     elements m + 32n (n = 0..4) of the first 160, qs[32..48) elements
 *     m + 16n of the next 80, qh[j] elements 240 + j + 4n.
 *   TQ2_0 {u8 qs[64]; f16 d}                                    66 bytes
 *     2 bits per element (q - 1), byte m of each 32 holding elements
 *     m + 32n of its 128.
 * The quantizers are ggml's quantize_row_tq{1,2}_0_ref (lroundf of
 * x / amax); ggml has no importance-weighted variant (quantize_tq*_0
 * ignores the weights). */
#include "quant_impl.h"
#include "quant_rows.h"

enum { TQ1_BYTES = 54, TQ2_BYTES = 66, TQ1_QS = 48, TQ1_QH = 4 };

static const uint8_t pow3[6] = {1, 3, 9, 27, 81, 243};

/* Trit n of a packed byte, as -1, 0 or 1. */
static int trit(uint8_t v, int n) {
    const uint8_t q = (uint8_t)(v * pow3[n]);
    return ((q * 3) >> 8) - 1;
}

void tport_dequant_tq1_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += TQ1_BYTES) {
        const float d = q_rd_f16(x + TQ1_QS + TQ1_QH);
        for (int n5 = 0; n5 < 5; n5++)
            for (int m = 0; m < 32; m++)
                *y++ = (float)trit(x[m], n5) * d;
        for (int n5 = 0; n5 < 5; n5++)
            for (int m = 0; m < 16; m++)
                *y++ = (float)trit(x[32 + m], n5) * d;
        for (int n4 = 0; n4 < 4; n4++)
            for (int j = 0; j < TQ1_QH; j++)
                *y++ = (float)trit(x[TQ1_QS + j], n4) * d;
    }
}

void tport_dequant_tq2_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += TQ2_BYTES) {
        const float d = q_rd_f16(x + 64);
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; l++)
                for (int m = 0; m < 32; m++)
                    *y++ = (float)(((x[j + m] >> (2 * l)) & 3) - 1) * d;
    }
}

/* ggml's running MAX(amax, fabsf(v)), the macro's operand order kept: a
 * NaN element becomes the maximum until a later element replaces it. */
static float ternary_amax(const float *x) {
    float amax = 0.0f;
    for (int j = 0; j < QK_K; j++)
        amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    return amax;
}

/* ggml's `int xi = lroundf(v * id) + 1`: a trit 0..2 for every element
 * within amax.  A NaN product (a NaN or infinite block) takes the same path
 * as in ggml: lroundf's unspecified result, plus one in long, narrowed to
 * int (modulo 2^32 with gcc and clang). */
static int to_trit(float v, float id) {
    const long l = lroundf(v * id);
    return (int)(long)((unsigned long)l + 1ul);
}

/* Base-3 digits (first = most significant), then ceil(q * 256 / 243),
 * in uint8_t arithmetic as ggml's `uint8_t q` does. */
static uint8_t pack_trits(const float *x, int stride, int count, float id) {
    uint8_t q = 0;
    for (int k = 0; k < count; k++)
        q = (uint8_t)(q * 3 + to_trit(x[k * stride], id));
    if (count == 4)
        q = (uint8_t)(q * 3);
    return (uint8_t)(((uint16_t)q * 256 + (243 - 1)) / 243);
}

void tport_quant_tq1_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, y += TQ1_BYTES) {
        const float d = ternary_amax(x);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        q_wr_f16(y + TQ1_QS + TQ1_QH, d);
        for (int m = 0; m < 32; m++)
            y[m] = pack_trits(x + m, 32, 5, id);
        x += 160;
        for (int m = 0; m < 16; m++)
            y[32 + m] = pack_trits(x + m, 16, 5, id);
        x += 80;
        for (int j = 0; j < TQ1_QH; j++)
            y[TQ1_QS + j] = pack_trits(x + j, TQ1_QH, 4, id);
        x += 16;
    }
}

void tport_quant_tq2_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, y += TQ2_BYTES) {
        const float d = ternary_amax(x);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        q_wr_f16(y + 64, d);
        for (int j = 0; j < 64; j += 32, x += 128)
            for (int m = 0; m < 32; m++) {
                unsigned q = 0;
                for (int k = 0; k < 4; k++)
                    q += (unsigned)(to_trit(x[m + 32 * k], id) & 3) << (2 * k);
                y[j + m] = (uint8_t)q;
            }
    }
}
