/* Historical layout revisions from their documented layouts
 * (../shared/docs/formats.md section 3; no data files needed): hand-built
 * blocks with known values, QNT0 interleaved vs QNT1 split nibbles, f32 vs
 * f16 scales, and the QNT0/QNT1 rounding rules. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "quant/type_table.h"

static void put_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }
static void put_f16(uint8_t *p, float v) {
    const uint16_t h = tport_fp32_to_fp16(v);
    memcpy(p, &h, 2);
}

static void decode(tport_type_id type, const void *blk, float *out, int64_t n) {
    const tport_type_traits *t = tport_traits(type);
    CHECK(t && t->to_float, "type %u has no dequantizer", type);
    if (t && t->to_float)
        t->to_float(blk, out, n);
}

static void encode(tport_type_id type, const float *in, void *blk, int64_t n) {
    const tport_type_traits *t = tport_traits(type);
    CHECK(t && t->from_float, "type %u has no quantizer", type);
    if (t && t->from_float)
        t->from_float(in, blk, n);
}

/* 4-bit quants q[i] = (7*i + 3) % 16: every value, no symmetric pattern. */
static int q4(int i) { return (7 * i + 3) % 16; }
static int q5(int i) { return (11 * i + 5) % 32; }

static void pack4(uint8_t *qs, int n, int interleaved) {
    for (int j = 0; j < n / 2; j++)
        qs[j] = interleaved ? (uint8_t)(q4(2 * j) | q4(2 * j + 1) << 4) : (uint8_t)(q4(j) | q4(j + n / 2) << 4);
}

static void test_q4_0_layouts(void) {
    uint8_t b0[20], b1[20];
    float y0[32], y1[32];
    put_f32(b0, 0.3f); /* an f32 scale with no exact f16 form */
    put_f32(b1, 0.3f);
    pack4(b0 + 4, 32, 1);
    pack4(b1 + 4, 32, 0);
    decode(TPORT_TYPE_Q4_0_QNT0, b0, y0, 32);
    decode(TPORT_TYPE_Q4_0_QNT1, b1, y1, 32);
    for (int i = 0; i < 32; i++) {
        const float want = (float)(q4(i) - 8) * 0.3f;
        CHECK(y0[i] == want, "q4_0_qnt0[%d] = %g, want %g", i, (double)y0[i], (double)want);
        CHECK(y1[i] == want, "q4_0_qnt1[%d] = %g, want %g", i, (double)y1[i], (double)want);
    }
    /* The same bytes read with the other nibble order give other values. */
    decode(TPORT_TYPE_Q4_0_QNT1, b0, y1, 32);
    CHECK(y1[1] != y0[1], "interleaved and split orders must differ");
}

static void test_q4_1_layouts(void) {
    uint8_t b0[24], b1[24];
    float y0[32], y1[32];
    put_f32(b0, 0.1f), put_f32(b0 + 4, -0.7f);
    put_f32(b1, 0.1f), put_f32(b1 + 4, -0.7f);
    pack4(b0 + 8, 32, 1);
    pack4(b1 + 8, 32, 0);
    decode(TPORT_TYPE_Q4_1_QNT0, b0, y0, 32);
    decode(TPORT_TYPE_Q4_1_QNT1, b1, y1, 32);
    for (int i = 0; i < 32; i++) {
        const float want = (float)q4(i) * 0.1f + -0.7f;
        CHECK(y0[i] == want && y1[i] == want, "q4_1 qnt0/qnt1[%d] = %g/%g, want %g", i, (double)y0[i],
              (double)y1[i], (double)want);
    }
}

static void test_q4_2_q4_3(void) {
    uint8_t b2[20], b3[24];
    float y[32];
    put_f16(b2, 0.5f), put_f16(b2 + 10, -0.25f);
    for (int j = 0; j < 8; j++) {
        b2[2 + j] = (uint8_t)(q4(2 * j) | q4(2 * j + 1) << 4);
        b2[12 + j] = (uint8_t)(q4(16 + 2 * j) | q4(16 + 2 * j + 1) << 4);
    }
    decode(TPORT_TYPE_Q4_2_QNT0, b2, y, 32); /* two 16-element blocks */
    for (int i = 0; i < 32; i++) {
        const float want = (float)(q4(i) - 8) * (i < 16 ? 0.5f : -0.25f);
        CHECK(y[i] == want, "q4_2[%d] = %g, want %g", i, (double)y[i], (double)want);
    }
    put_f16(b3, 0.125f), put_f16(b3 + 2, 1.5f);
    put_f16(b3 + 12, 2.0f), put_f16(b3 + 14, -3.0f);
    for (int j = 0; j < 8; j++) {
        b3[4 + j] = (uint8_t)(q4(2 * j) | q4(2 * j + 1) << 4);
        b3[16 + j] = (uint8_t)(q4(16 + 2 * j) | q4(16 + 2 * j + 1) << 4);
    }
    decode(TPORT_TYPE_Q4_3_QNT0, b3, y, 32);
    for (int i = 0; i < 32; i++) {
        const float want = (float)q4(i) * (i < 16 ? 0.125f : 2.0f) + (i < 16 ? 1.5f : -3.0f);
        CHECK(y[i] == want, "q4_3[%d] = %g, want %g", i, (double)y[i], (double)want);
    }
}

static void test_q5_layouts(void) {
    /* Q5_0 QNT0: {f16 d; u32 qh; qs interleaved}; today's: qs split. */
    uint8_t b0[22], b1[22], c0[24], c1[24];
    uint32_t qh = 0;
    for (int i = 0; i < 32; i++)
        qh |= (uint32_t)(q5(i) >> 4) << i;
    put_f16(b0, 0.75f), put_f16(b1, 0.75f);
    memcpy(b0 + 2, &qh, 4), memcpy(b1 + 2, &qh, 4);
    put_f16(c0, 0.5f), put_f16(c0 + 2, 2.0f), put_f16(c1, 0.5f), put_f16(c1 + 2, 2.0f);
    memcpy(c0 + 4, &qh, 4), memcpy(c1 + 4, &qh, 4);
    for (int j = 0; j < 16; j++) {
        b0[6 + j] = c0[8 + j] = (uint8_t)((q5(2 * j) & 15) | (q5(2 * j + 1) & 15) << 4);
        b1[6 + j] = c1[8 + j] = (uint8_t)((q5(j) & 15) | (q5(j + 16) & 15) << 4);
    }
    float y0[32], y1[32], z0[32], z1[32];
    decode(TPORT_TYPE_Q5_0_QNT0, b0, y0, 32);
    decode(TPORT_TYPE_Q5_0, b1, y1, 32);
    decode(TPORT_TYPE_Q5_1_QNT0, c0, z0, 32);
    decode(TPORT_TYPE_Q5_1, c1, z1, 32);
    for (int i = 0; i < 32; i++) {
        const float w0 = (float)(q5(i) - 16) * 0.75f, w1 = (float)q5(i) * 0.5f + 2.0f;
        CHECK(y0[i] == w0 && y1[i] == w0, "q5_0 qnt0/current[%d] = %g/%g, want %g", i, (double)y0[i],
              (double)y1[i], (double)w0);
        CHECK(z0[i] == w1 && z1[i] == w1, "q5_1 qnt0/current[%d] = %g/%g, want %g", i, (double)z0[i],
              (double)z1[i], (double)w1);
    }
}

static void test_q8_0_qnt1(void) {
    uint8_t b[36];
    float y[32];
    put_f32(b, 0.01f);
    for (int i = 0; i < 32; i++)
        b[4 + i] = (uint8_t)(int8_t)(i * 8 - 128);
    decode(TPORT_TYPE_Q8_0_QNT1, b, y, 32);
    for (int i = 0; i < 32; i++)
        CHECK(y[i] == (float)(i * 8 - 128) * 0.01f, "q8_0_qnt1[%d] = %g", i, (double)y[i]);
    /* Its quantizer: d = amax/127 in f32, quants roundf(x/d). */
    float x[32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 12) * 0.37f;
    encode(TPORT_TYPE_Q8_0_QNT1, x, b, 32);
    float d;
    memcpy(&d, b, 4);
    CHECK(d == 19 * 0.37f / 127, "q8_0_qnt1 scale %g", (double)d);
    CHECK((int8_t)b[4 + 31] == 127 && (int8_t)b[4 + 12] == 0, "q8_0_qnt1 quants %d %d", (int8_t)b[4 + 31],
          (int8_t)b[4 + 12]);
}

/* QNT0 rounds with roundf (half away from zero), QNT1 with (int)(v + 8.5):
 * they differ exactly at negative ties. */
static void test_rounding_rules(void) {
    float x[32] = {0};
    x[0] = -8.0f; /* the signed max: d = -8 / -8 = 1, id = 1 */
    x[1] = -2.5f; /* tie below zero: QNT0 -> -3 (q 5), QNT1 -> -2 (q 6) */
    x[2] = 2.5f;  /* tie above zero: both -> 3 (q 11) */
    x[3] = 1.25f; /* no tie: both -> 1 (q 9) */
    uint8_t b0[20], b1[20], c[18];
    encode(TPORT_TYPE_Q4_0_QNT0, x, b0, 32);
    encode(TPORT_TYPE_Q4_0_QNT1, x, b1, 32);
    encode(TPORT_TYPE_Q4_0, x, c, 32);
    float d0, d1;
    memcpy(&d0, b0, 4), memcpy(&d1, b1, 4);
    CHECK(d0 == 1.0f && d1 == 1.0f, "scales %g %g", (double)d0, (double)d1);
    /* QNT0 interleaved: byte 0 = q0 | q1<<4, byte 1 = q2 | q3<<4 */
    CHECK(b0[4] == (0 | 5 << 4), "qnt0 byte0 %02x", b0[4]);
    CHECK(b0[5] == (11 | 9 << 4), "qnt0 byte1 %02x", b0[5]);
    /* QNT1 split: byte j = q[j] | q[j+16]<<4; q[16..] = 8 (zeros) */
    CHECK(b1[4] == (0 | 8 << 4) && b1[5] == (6 | 8 << 4) && b1[6] == (11 | 8 << 4) && b1[7] == (9 | 8 << 4),
          "qnt1 bytes %02x %02x %02x %02x", b1[4], b1[5], b1[6], b1[7]);
    /* today's Q4_0 has QNT1's quants and an f16 scale */
    CHECK(memcmp(c + 2, b1 + 4, 16) == 0, "q4_0 quants differ from q4_0_qnt1's");
    CHECK(tport_fp16_to_fp32((uint16_t)(c[0] | c[1] << 8)) == 1.0f, "q4_0 scale");
}

/* Q4_2 (QNT0, 16 per block) and Q4_3 quantizers: scale rules. */
static void test_q4_2_q4_3_quantizers(void) {
    float x[16];
    for (int i = 0; i < 16; i++)
        x[i] = (float)(i - 4) * 0.5f; /* max |x| = 5.5 at i = 15 */
    uint8_t b[12];
    float y[16];
    encode(TPORT_TYPE_Q4_2_QNT0, x, b, 16);
    CHECK(tport_fp16_to_fp32((uint16_t)(b[0] | b[1] << 8)) == tport_fp16_to_fp32(tport_fp32_to_fp16(5.5f / -8)),
          "q4_2 scale");
    decode(TPORT_TYPE_Q4_2_QNT0, b, y, 16);
    for (int i = 0; i < 16; i++)
        CHECK(fabsf(y[i] - x[i]) <= 5.5f / 16 + 1e-3f, "q4_2 round trip [%d] %g vs %g", i, (double)y[i],
              (double)x[i]);
    encode(TPORT_TYPE_Q4_3_QNT0, x, b, 16);
    decode(TPORT_TYPE_Q4_3_QNT0, b, y, 16);
    /* d = 7.5/15 = 0.5, min = -2: every x is exactly representable */
    for (int i = 0; i < 16; i++)
        CHECK(y[i] == x[i], "q4_3 round trip [%d] %g vs %g", i, (double)y[i], (double)x[i]);
}

/* GGML_QKK_64 k-quants (formats.md 3.7): hand-built blocks, expected values
 * written out line by line from ggml's QK_K == 64 dequantizers. */
static unsigned long long qk64_rng = 99;
static void random_bytes(uint8_t *p, int n) {
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)test_rng_next(&qk64_rng);
}

static void test_qk64_layouts(void) {
    float y[64], w[64];
    /* Q2_K: {u8 scales[4]; u8 qs[16]; f16 d; f16 dmin} */
    uint8_t b2[24];
    random_bytes(b2, 20);
    put_f16(b2 + 20, 0.5f), put_f16(b2 + 22, 0.25f);
    decode(TPORT_TYPE_Q2_K_QK64, b2, y, 64);
    for (int l = 0; l < 16; l++)
        for (int k = 0; k < 4; k++) {
            const float want = 0.5f * (float)(b2[k] & 15) * (float)((b2[4 + l] >> (2 * k)) & 3) - 0.25f * (float)(b2[k] >> 4);
            CHECK(y[16 * k + l] == want, "q2_K_qk64[%d] = %g, want %g", 16 * k + l, (double)y[16 * k + l], (double)want);
        }
    /* Q3_K: {u8 hmask[8]; u8 qs[16]; u8 scales[2]; f16 d} */
    uint8_t b3[28];
    random_bytes(b3, 24);
    b3[24] = 9 | 10 << 4, b3[25] = 3 | 15 << 4; /* scales 1, 2, -5, 7 */
    put_f16(b3 + 26, 0.125f);
    decode(TPORT_TYPE_Q3_K_QK64, b3, y, 64);
    const uint8_t *hm = b3, *q = b3 + 8;
    const float d1 = 0.125f * 1, d2 = 0.125f * 2, d3 = 0.125f * -5, d4 = 0.125f * 7;
    for (int l = 0; l < 8; l++) {
        const uint8_t h = hm[l];
        w[l + 0] = d1 * (float)(((q[l + 0] >> 0) & 3) - ((h & 0x01) ? 0 : 4));
        w[l + 8] = d1 * (float)(((q[l + 8] >> 0) & 3) - ((h & 0x02) ? 0 : 4));
        w[l + 16] = d2 * (float)(((q[l + 0] >> 2) & 3) - ((h & 0x04) ? 0 : 4));
        w[l + 24] = d2 * (float)(((q[l + 8] >> 2) & 3) - ((h & 0x08) ? 0 : 4));
        w[l + 32] = d3 * (float)(((q[l + 0] >> 4) & 3) - ((h & 0x10) ? 0 : 4));
        w[l + 40] = d3 * (float)(((q[l + 8] >> 4) & 3) - ((h & 0x20) ? 0 : 4));
        w[l + 48] = d4 * (float)(((q[l + 0] >> 6) & 3) - ((h & 0x40) ? 0 : 4));
        w[l + 56] = d4 * (float)(((q[l + 8] >> 6) & 3) - ((h & 0x80) ? 0 : 4));
    }
    for (int i = 0; i < 64; i++)
        CHECK(y[i] == w[i], "q3_K_qk64[%d] = %g, want %g", i, (double)y[i], (double)w[i]);
    /* Q4_K: {f16 d[2]; u8 scales[2]; u8 qs[32]} */
    uint8_t b4[38];
    put_f16(b4, 0.5f), put_f16(b4 + 2, 2.0f);
    random_bytes(b4 + 4, 34);
    decode(TPORT_TYPE_Q4_K_QK64, b4, y, 64);
    for (int l = 0; l < 32; l++) {
        const float lo = 0.5f * (float)(b4[4] & 15) * (float)(b4[6 + l] & 15) - 2.0f * (float)(b4[4] >> 4);
        const float hi = 0.5f * (float)(b4[5] & 15) * (float)(b4[6 + l] >> 4) - 2.0f * (float)(b4[5] >> 4);
        CHECK(y[l] == lo && y[l + 32] == hi, "q4_K_qk64[%d]: %g %g, want %g %g", l, (double)y[l], (double)y[l + 32],
              (double)lo, (double)hi);
    }
    /* Q5_K: {f16 d; i8 scales[4]; u8 qh[8]; u8 qs[32]} */
    uint8_t b5[46];
    put_f16(b5, 0.25f);
    random_bytes(b5 + 2, 44);
    decode(TPORT_TYPE_Q5_K_QK64, b5, y, 64);
    const int8_t *s5 = (const int8_t *)(b5 + 2);
    const uint8_t *qh = b5 + 6, *ql = b5 + 14;
    const float d5 = 0.25f;
    for (int l = 0; l < 8; l++) {
        w[l + 0] = d5 * (float)s5[0] * (float)((ql[l + 0] & 0xF) - (qh[l] & 0x01 ? 0 : 16));
        w[l + 8] = d5 * (float)s5[0] * (float)((ql[l + 8] & 0xF) - (qh[l] & 0x02 ? 0 : 16));
        w[l + 16] = d5 * (float)s5[1] * (float)((ql[l + 16] & 0xF) - (qh[l] & 0x04 ? 0 : 16));
        w[l + 24] = d5 * (float)s5[1] * (float)((ql[l + 24] & 0xF) - (qh[l] & 0x08 ? 0 : 16));
        w[l + 32] = d5 * (float)s5[2] * (float)((ql[l + 0] >> 4) - (qh[l] & 0x10 ? 0 : 16));
        w[l + 40] = d5 * (float)s5[2] * (float)((ql[l + 8] >> 4) - (qh[l] & 0x20 ? 0 : 16));
        w[l + 48] = d5 * (float)s5[3] * (float)((ql[l + 16] >> 4) - (qh[l] & 0x40 ? 0 : 16));
        w[l + 56] = d5 * (float)s5[3] * (float)((ql[l + 24] >> 4) - (qh[l] & 0x80 ? 0 : 16));
    }
    for (int i = 0; i < 64; i++)
        CHECK(y[i] == w[i], "q5_K_qk64[%d] = %g, want %g", i, (double)y[i], (double)w[i]);
    /* Q6_K: {u8 ql[32]; u8 qh[16]; i8 scales[4]; f16 d} */
    uint8_t b6[54];
    random_bytes(b6, 52);
    put_f16(b6 + 52, 0.0625f);
    decode(TPORT_TYPE_Q6_K_QK64, b6, y, 64);
    const uint8_t *l6 = b6, *h6 = b6 + 32;
    const int8_t *s6 = (const int8_t *)(b6 + 48);
    for (int l = 0; l < 16; l++) {
        w[l + 0] = 0.0625f * (float)s6[0] * (float)(((l6[l] & 0xF) | ((h6[l] >> 0) & 3) << 4) - 32);
        w[l + 16] = 0.0625f * (float)s6[1] * (float)(((l6[l + 16] & 0xF) | ((h6[l] >> 2) & 3) << 4) - 32);
        w[l + 32] = 0.0625f * (float)s6[2] * (float)(((l6[l] >> 4) | ((h6[l] >> 4) & 3) << 4) - 32);
        w[l + 48] = 0.0625f * (float)s6[3] * (float)(((l6[l + 16] >> 4) | ((h6[l] >> 6) & 3) << 4) - 32);
    }
    for (int i = 0; i < 64; i++)
        CHECK(y[i] == w[i], "q6_K_qk64[%d] = %g, want %g", i, (double)y[i], (double)w[i]);
    /* 64-element blocks, read-only: no quantizer */
    for (tport_type_id t = TPORT_TYPE_Q2_K_QK64; t <= TPORT_TYPE_Q6_K_QK64; t++)
        CHECK(tport_traits(t) && tport_traits(t)->info.block_size == 64 && !tport_traits(t)->from_float,
              "type %u traits", t);
}

int main(void) {
    test_qk64_layouts();
    test_q4_0_layouts();
    test_q4_1_layouts();
    test_q4_2_q4_3();
    test_q5_layouts();
    test_q8_0_qnt1();
    test_rounding_rules();
    test_q4_2_q4_3_quantizers();
    return test_finish("test_quant_historical");
}
