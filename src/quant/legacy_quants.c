/* Today's (QNT2) Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q8_1: bit-exact with
 * ggml's quantize_row_<type>_ref and dequantize_row_<type>.
 *
 * Special values, as ggml's reference does on x86-64 (see q_cvtt):
 *  - all-zero block: d = 0, id = 0, every quant is the zero point
 *    (8 for Q4_0, 16 for Q5_0, 0 for Q8_0); decodes to exact zeros.
 *  - NaN never becomes the block maximum (the comparisons are false), so a
 *    NaN element gets quant (int8)INT32_MIN = 0 and d comes from the others.
 *  - +-Inf becomes the maximum: d = Inf, id = +-0, every finite element
 *    gets the zero point, the Inf element itself (Inf*0 = NaN) gets 0;
 *    decoding gives NaN/Inf. */
#include "quant_impl.h"
#include "quant_rows.h"

#include <float.h>

/* Split nibble order (QNT1 and later): element j in the low nibble of
 * qs[j], element j+16 in the high nibble. */

/* The signed value of largest magnitude; the first one wins a tie. */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *mn, float *mx) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < min)
            min = x[j];
        if (x[j] > max)
            max = x[j];
    }
    *mn = min;
    *mx = max;
}

/* ---- Q4_0: {f16 d; u8 qs[16]} ------------------------------------------ */
void tport_quant_q4_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 18) {
        const float d = signed_absmax(x, 32) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        for (int j = 0; j < 16; j++) {
            const int lo = q_min_i(15, q_to_i8(q_cvtt(x[j] * id + 8.5f)));
            const int hi = q_min_i(15, q_to_i8(q_cvtt(x[j + 16] * id + 8.5f)));
            y[2 + j] = (uint8_t)(q_to_u8(lo) | q_to_u8(hi) << 4);
        }
    }
}

void tport_dequant_q4_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 18, y += 32) {
        const float d = q_rd_f16(x);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)((x[2 + j] & 15) - 8) * d;
            y[j + 16] = (float)((x[2 + j] >> 4) - 8) * d;
        }
    }
}

/* ---- Q4_1: {f16 d; f16 m; u8 qs[16]} ----------------------------------- */
void tport_quant_q4_1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 20) {
        float min, max;
        min_max(x, 32, &min, &max);
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        q_wr_f16(y + 2, min);
        for (int j = 0; j < 16; j++) {
            const int lo = q_min_i(15, q_to_i8(q_cvtt((x[j] - min) * id + 0.5f)));
            const int hi = q_min_i(15, q_to_i8(q_cvtt((x[j + 16] - min) * id + 0.5f)));
            y[4 + j] = (uint8_t)(q_to_u8(lo) | q_to_u8(hi) << 4);
        }
    }
}

void tport_dequant_q4_1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 20, y += 32) {
        const float d = q_rd_f16(x), m = q_rd_f16(x + 2);
        for (int j = 0; j < 16; j++) {
            y[j] = (float)(x[4 + j] & 15) * d + m;
            y[j + 16] = (float)(x[4 + j] >> 4) * d + m;
        }
    }
}

/* ---- Q5_0: {f16 d; u8 qh[4]; u8 qs[16]} -------------------------------- */
static void pack_q5(uint8_t *qh_out, uint8_t *qs, const uint8_t q[32]) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        qs[j] = (uint8_t)((q[j] & 0x0F) | (q[j + 16] & 0x0F) << 4);
        qh |= (uint32_t)((q[j] & 0x10u) >> 4) << j;
        qh |= (uint32_t)((q[j + 16] & 0x10u) >> 4) << (j + 16);
    }
    q_wr_u32(qh_out, qh);
}

void tport_quant_q5_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 22) {
        const float d = signed_absmax(x, 32) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        uint8_t q[32];
        for (int j = 0; j < 32; j++)
            q[j] = q_to_u8(q_min_i(31, q_to_i8(q_cvtt(x[j] * id + 16.5f))));
        pack_q5(y + 2, y + 6, q);
    }
}

void tport_dequant_q5_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 22, y += 32) {
        const float d = q_rd_f16(x);
        const uint32_t qh = q_rd_u32(x + 2);
        for (int j = 0; j < 16; j++) {
            const int h0 = (int)((qh >> j) << 4 & 0x10);
            const int h1 = (int)((qh >> (j + 12)) & 0x10);
            y[j] = (float)(((x[6 + j] & 15) | h0) - 16) * d;
            y[j + 16] = (float)(((x[6 + j] >> 4) | h1) - 16) * d;
        }
    }
}

/* ---- Q5_1: {f16 d; f16 m; u8 qh[4]; u8 qs[16]} ------------------------- */
void tport_quant_q5_1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 24) {
        float min, max;
        min_max(x, 32, &min, &max);
        const float d = (max - min) / 31;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        q_wr_f16(y + 2, min);
        uint8_t q[32];
        for (int j = 0; j < 32; j++)
            q[j] = q_to_u8(q_cvtt((x[j] - min) * id + 0.5f));
        pack_q5(y + 4, y + 8, q);
    }
}

void tport_dequant_q5_1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 24, y += 32) {
        const float d = q_rd_f16(x), m = q_rd_f16(x + 2);
        const uint32_t qh = q_rd_u32(x + 4);
        for (int j = 0; j < 16; j++) {
            const int h0 = (int)((qh >> j) << 4 & 0x10);
            const int h1 = (int)((qh >> (j + 12)) & 0x10);
            y[j] = (float)((x[8 + j] & 15) | h0) * d + m;
            y[j + 16] = (float)((x[8 + j] >> 4) | h1) * d + m;
        }
    }
}

/* ---- Q8_0: {f16 d; i8 qs[32]} ------------------------------------------ */
static float absmax(const float *x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; j++) {
        const float a = fabsf(x[j]);
        amax = amax > a ? amax : a; /* ggml's MAX(amax, a): NaN loses */
    }
    return amax;
}

void tport_quant_q8_0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 34) {
        const float d = absmax(x, 32) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        for (int j = 0; j < 32; j++)
            y[2 + j] = q_to_u8(q_cvtt(roundf(x[j] * id)));
    }
}

void tport_dequant_q8_0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 34, y += 32) {
        const float d = q_rd_f16(x);
        for (int j = 0; j < 32; j++)
            y[j] = (float)(int8_t)x[2 + j] * d;
    }
}

/* ---- Q8_1: {f16 d; f16 s; i8 qs[32]}, s = d * sum(qs) ------------------ */
void tport_quant_q8_1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 36) {
        const float d = absmax(x, 32) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        int sum = 0;
        for (int j = 0; j < 32; j++) {
            const int8_t q = q_to_i8(q_cvtt(roundf(x[j] * id)));
            y[4 + j] = (uint8_t)q;
            sum += q;
        }
        q_wr_f16(y + 2, (float)sum * d);
    }
}

void tport_dequant_q8_1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 36, y += 32) {
        const float d = q_rd_f16(x);
        for (int j = 0; j < 32; j++)
            y[j] = (float)(int8_t)x[4 + j] * d;
    }
}
