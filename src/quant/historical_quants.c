/* Historical layout revisions of the legacy types (formats.md 3.1-3.6).
 * QNTn = ggml's quantization version at the time:
 *   QNT0 (until 2023-05-12): nibbles interleaved, qs[j] = q[2j] | q[2j+1]<<4
 *   QNT1 (2023-05-12..05-19): nibbles split, qs[j] = q[j] | q[j+16]<<4,
 *                             Q4_0/Q4_1/Q8_0 scales still f32
 * Each quantizer is the last reference rule of its revision:
 *   Q4_0 QNT0: d = max/-8 (#729 "full range"), q = MIN(15, (int8)roundf(x*id) + 8)
 *   Q4_0 QNT1: d = max/-8, q = MIN(15, (int8)(x*id + 8.5f))
 *   Q4_1 QNT0: d = (max-min)/15, q = roundf((x-min)*id)
 *   Q4_1 QNT1: q = MIN(15, (int8)((x-min)*id + 0.5f))
 *   Q4_2 QNT0: {f16 d; u8 qs[8]}, 16/block, d = max/-8, q = MIN(15, (uint8)(x*id + 8.5f))
 *   Q4_3 QNT0: {f16 d, m; u8 qs[8]}, 16/block, d = (max-min)/15, q = (int)((x-min)*id + 0.5f)
 *   Q5_0 QNT0: d = max/-16, q = MIN(31, (int)(x*id + 16.5f)), interleaved nibbles
 *   Q5_1 QNT0: d = (max-min)/31, q = (int)((x-min)*id + 0.5f), interleaved nibbles
 *   Q8_0 QNT0/QNT1 (same bytes): {f32 d; i8 qs[32]}, d = amax/127, q = roundf(x*id)
 * f16 scales are stored rounded but the quants use the f32 id, as upstream.
 * Float -> integer conversions of NaN/Inf behave as on x86-64 (q_cvtt). */
#include <float.h>
#include <stdbool.h>

#include "quant_impl.h"
#include "quant_rows.h"

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

/* Packs n 4-bit quants (n = 16 or 32) into n/2 bytes. */
static void pack_interleaved(uint8_t *qs, const uint8_t *q, int n) {
    for (int j = 0; j < n / 2; j++)
        qs[j] = (uint8_t)(q[2 * j] | q[2 * j + 1] << 4);
}
static void pack_split(uint8_t *qs, const uint8_t *q, int n) {
    for (int j = 0; j < n / 2; j++)
        qs[j] = (uint8_t)(q[j] | q[j + n / 2] << 4);
}
static void unpack_interleaved(uint8_t *q, const uint8_t *qs, int n) {
    for (int j = 0; j < n / 2; j++) {
        q[2 * j] = qs[j] & 15;
        q[2 * j + 1] = qs[j] >> 4;
    }
}
static void unpack_split(uint8_t *q, const uint8_t *qs, int n) {
    for (int j = 0; j < n / 2; j++) {
        q[j] = qs[j] & 15;
        q[j + n / 2] = qs[j] >> 4;
    }
}

/* ---- Q4_0 QNT0 / QNT1: {f32 d; u8 qs[16]} ------------------------------ */
static void quant_q4_0_f32(const float *x, uint8_t *y, int64_t n, bool qnt1) {
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 20) {
        const float d = signed_absmax(x, 32) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f32(y, d);
        uint8_t q[32];
        for (int j = 0; j < 32; j++) {
            const int v = qnt1 ? q_to_i8(q_cvtt(x[j] * id + 8.5f)) : q_to_i8(q_cvtt(roundf(x[j] * id))) + 8;
            q[j] = q_to_u8(q_min_i(15, v));
        }
        (qnt1 ? pack_split : pack_interleaved)(y + 4, q, 32);
    }
}

static void dequant_q4_0_f32(const uint8_t *x, float *y, int64_t n, bool qnt1) {
    for (int64_t b = 0; b < n / 32; b++, x += 20, y += 32) {
        const float d = q_rd_f32(x);
        uint8_t q[32];
        (qnt1 ? unpack_split : unpack_interleaved)(q, x + 4, 32);
        for (int j = 0; j < 32; j++)
            y[j] = (float)(q[j] - 8) * d;
    }
}

void tport_quant_q4_0_qnt0(const float *x, void *y, int64_t n) { quant_q4_0_f32(x, y, n, false); }
void tport_quant_q4_0_qnt1(const float *x, void *y, int64_t n) { quant_q4_0_f32(x, y, n, true); }
void tport_dequant_q4_0_qnt0(const void *x, float *y, int64_t n) { dequant_q4_0_f32(x, y, n, false); }
void tport_dequant_q4_0_qnt1(const void *x, float *y, int64_t n) { dequant_q4_0_f32(x, y, n, true); }

/* ---- Q4_1 QNT0 / QNT1: {f32 d; f32 m; u8 qs[16]} ----------------------- */
static void quant_q4_1_f32(const float *x, uint8_t *y, int64_t n, bool qnt1) {
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 24) {
        float min, max;
        min_max(x, 32, &min, &max);
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f32(y, d);
        q_wr_f32(y + 4, min);
        uint8_t q[32];
        for (int j = 0; j < 32; j++) {
            const float v = (x[j] - min) * id;
            q[j] = qnt1 ? q_to_u8(q_min_i(15, q_to_i8(q_cvtt(v + 0.5f)))) : q_to_u8(q_cvtt(roundf(v)));
        }
        (qnt1 ? pack_split : pack_interleaved)(y + 8, q, 32);
    }
}

static void dequant_q4_1_f32(const uint8_t *x, float *y, int64_t n, bool qnt1) {
    for (int64_t b = 0; b < n / 32; b++, x += 24, y += 32) {
        const float d = q_rd_f32(x), m = q_rd_f32(x + 4);
        uint8_t q[32];
        (qnt1 ? unpack_split : unpack_interleaved)(q, x + 8, 32);
        for (int j = 0; j < 32; j++)
            y[j] = (float)q[j] * d + m;
    }
}

void tport_quant_q4_1_qnt0(const float *x, void *y, int64_t n) { quant_q4_1_f32(x, y, n, false); }
void tport_quant_q4_1_qnt1(const float *x, void *y, int64_t n) { quant_q4_1_f32(x, y, n, true); }
void tport_dequant_q4_1_qnt0(const void *x, float *y, int64_t n) { dequant_q4_1_f32(x, y, n, false); }
void tport_dequant_q4_1_qnt1(const void *x, float *y, int64_t n) { dequant_q4_1_f32(x, y, n, true); }

/* ---- Q4_2 QNT0: {f16 d; u8 qs[8]}, 16 elements ------------------------- */
void tport_quant_q4_2_qnt0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 16; b++, x += 16, y += 10) {
        const float d = signed_absmax(x, 16) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        uint8_t q[16];
        for (int j = 0; j < 16; j++)
            q[j] = q_to_u8(q_min_i(15, q_to_u8(q_cvtt(x[j] * id + 8.5f))));
        pack_interleaved(y + 2, q, 16);
    }
}

void tport_dequant_q4_2_qnt0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 16; b++, x += 10, y += 16) {
        const float d = q_rd_f16(x);
        uint8_t q[16];
        unpack_interleaved(q, x + 2, 16);
        for (int j = 0; j < 16; j++)
            y[j] = (float)(q[j] - 8) * d;
    }
}

/* ---- Q4_3 QNT0: {f16 d; f16 m; u8 qs[8]}, 16 elements ------------------ */
void tport_quant_q4_3_qnt0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 16; b++, x += 16, y += 12) {
        float min, max;
        min_max(x, 16, &min, &max);
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        q_wr_f16(y + 2, min);
        uint8_t q[16];
        for (int j = 0; j < 16; j++)
            q[j] = q_to_u8(q_cvtt((x[j] - min) * id + 0.5f));
        pack_interleaved(y + 4, q, 16);
    }
}

void tport_dequant_q4_3_qnt0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 16; b++, x += 12, y += 16) {
        const float d = q_rd_f16(x), m = q_rd_f16(x + 2);
        uint8_t q[16];
        unpack_interleaved(q, x + 4, 16);
        for (int j = 0; j < 16; j++)
            y[j] = (float)q[j] * d + m;
    }
}

/* ---- Q5_0 / Q5_1 QNT0: today's structs, interleaved nibbles ------------ */
static void pack_q5_interleaved(uint8_t *qh_out, uint8_t *qs, const uint8_t q[32]) {
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)((q[2 * j] & 0x0F) | (q[2 * j + 1] & 0x0F) << 4);
    for (int j = 0; j < 32; j++)
        qh |= (uint32_t)((q[j] >> 4) & 1) << j;
    q_wr_u32(qh_out, qh);
}

static void unpack_q5_interleaved(uint8_t q[32], const uint8_t *qh_in, const uint8_t *qs) {
    const uint32_t qh = q_rd_u32(qh_in);
    unpack_interleaved(q, qs, 32);
    for (int j = 0; j < 32; j++)
        q[j] = (uint8_t)(q[j] | ((qh >> j) & 1) << 4);
}

void tport_quant_q5_0_qnt0(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 22) {
        const float d = signed_absmax(x, 32) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f16(y, d);
        uint8_t q[32];
        for (int j = 0; j < 32; j++)
            q[j] = q_to_u8(q_min_i(31, q_cvtt(x[j] * id + 16.5f)));
        pack_q5_interleaved(y + 2, y + 6, q);
    }
}

void tport_dequant_q5_0_qnt0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 22, y += 32) {
        const float d = q_rd_f16(x);
        uint8_t q[32];
        unpack_q5_interleaved(q, x + 2, x + 6);
        for (int j = 0; j < 32; j++)
            y[j] = (float)(q[j] - 16) * d;
    }
}

void tport_quant_q5_1_qnt0(const float *x, void *vy, int64_t n) {
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
        pack_q5_interleaved(y + 4, y + 8, q);
    }
}

void tport_dequant_q5_1_qnt0(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 24, y += 32) {
        const float d = q_rd_f16(x), m = q_rd_f16(x + 2);
        uint8_t q[32];
        unpack_q5_interleaved(q, x + 4, x + 8);
        for (int j = 0; j < 32; j++)
            y[j] = (float)q[j] * d + m;
    }
}

/* ---- Q8_0 QNT0/QNT1: {f32 d; i8 qs[32]} -------------------------------- */
void tport_quant_q8_0_qnt1(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 36) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            const float a = fabsf(x[j]);
            amax = amax > a ? amax : a;
        }
        const float d = amax / 127;
        const float id = d ? 1.0f / d : 0.0f;
        q_wr_f32(y, d);
        for (int j = 0; j < 32; j++)
            y[4 + j] = q_to_u8(q_cvtt(roundf(x[j] * id)));
    }
}

void tport_dequant_q8_0_qnt1(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 36, y += 32) {
        const float d = q_rd_f32(x);
        for (int j = 0; j < 32; j++)
            y[j] = (float)(int8_t)x[4 + j] * d;
    }
}
