/* k-quants as built with GGML_QKK_64 (llama.cpp@6769e94 #2001, 2023-06-26,
 * until ggml@d29a4c0e, 2024-05-23): 64-element super-blocks with their own
 * layouts.  Files do not mark them; a loader recognises them by tensor byte
 * sizes.  Dequantizers only (such files are read, never written), with the
 * float operation order of ggml's QK_K == 64 dequantize_row_<t>:
 *   Q2_K {u8 scales[4]; u8 qs[16]; f16 d; f16 dmin}              24 bytes
 *   Q3_K {u8 hmask[8]; u8 qs[16]; u8 scales[2]; f16 d}            28
 *   Q4_K {f16 d[2]; u8 scales[2]; u8 qs[32]}                      38
 *   Q5_K {f16 d; i8 scales[4]; u8 qh[8]; u8 qs[32]}               46
 *   Q6_K {u8 ql[32]; u8 qh[16]; i8 scales[4]; f16 d}              54 */
#include "quant_impl.h"
#include "quant_rows.h"

#define QK64 64

void tport_dequant_q2_K_qk64(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK64; i++, x += 24, y += QK64) {
        const float d = q_rd_f16(x + 20), min = q_rd_f16(x + 22);
        const uint8_t *q = x + 4;
        for (int k = 0; k < 4; k++) { /* element 16k + l: bits 2k of qs[l], scale k */
            const float dl = d * (float)(x[k] & 0xF), ml = min * (float)(x[k] >> 4);
            for (int l = 0; l < 16; ++l)
                y[16 * k + l] = dl * (float)((q[l] >> (2 * k)) & 3) - ml;
        }
    }
}

void tport_dequant_q3_K_qk64(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK64; i++, x += 28, y += QK64) {
        const float d_all = q_rd_f16(x + 26);
        const uint8_t *hm = x, *q = x + 8, *sc = x + 24;
        float dk[4];
        dk[0] = d_all * (float)((sc[0] & 0xF) - 8);
        dk[1] = d_all * (float)((sc[0] >> 4) - 8);
        dk[2] = d_all * (float)((sc[1] & 0xF) - 8);
        dk[3] = d_all * (float)((sc[1] >> 4) - 8);
        /* element 8m + l (m = 0..7): bits 2(m/2) of qs[l + 8(m%2)], high bit m
         * of hmask[l] (clear: -4), scale m/2 */
        for (int l = 0; l < 8; ++l)
            for (int m = 0; m < 8; m++) {
                const int v = ((q[l + 8 * (m % 2)] >> (2 * (m / 2))) & 3) - ((hm[l] >> m) & 1 ? 0 : 4);
                y[8 * m + l] = dk[m / 2] * (float)v;
            }
    }
}

void tport_dequant_q4_K_qk64(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK64; i++, x += 38, y += QK64) {
        const float dall = q_rd_f16(x), mall = q_rd_f16(x + 2);
        const uint8_t *sc = x + 4, *q = x + 6;
        const float d1 = dall * (float)(sc[0] & 0xF), m1 = mall * (float)(sc[0] >> 4);
        const float d2 = dall * (float)(sc[1] & 0xF), m2 = mall * (float)(sc[1] >> 4);
        for (int l = 0; l < 32; ++l) {
            y[l] = d1 * (float)(q[l] & 0xF) - m1;
            y[l + 32] = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

void tport_dequant_q5_K_qk64(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK64; i++, x += 46, y += QK64) {
        const float d = q_rd_f16(x);
        const int8_t *s = (const int8_t *)(x + 2);
        const uint8_t *qh = x + 6, *ql = x + 14;
        /* element 8m + l: nibble of ql[l + 8(m%4)] (high for m >= 4), minus
         * 16 unless bit m of qh[l] is set, scale m/2 */
        for (int l = 0; l < 8; ++l)
            for (int m = 0; m < 8; m++) {
                const uint8_t b = ql[l + 8 * (m % 4)];
                const int v = (m < 4 ? b & 0xF : b >> 4) - ((qh[l] >> m) & 1 ? 0 : 16);
                y[8 * m + l] = d * (float)s[m / 2] * (float)v;
            }
    }
}

void tport_dequant_q6_K_qk64(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t i = 0; i < n / QK64; i++, x += 54, y += QK64) {
        const float d = q_rd_f16(x + 52);
        const uint8_t *ql = x, *qh = x + 32;
        const int8_t *sc = (const int8_t *)(x + 48);
        for (int l = 0; l < 16; ++l) {
            const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
            const int q2 = ((ql[l + 16] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
            const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
            const int q4 = ((ql[l + 16] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
            y[l] = d * (float)sc[0] * (float)q1;
            y[l + 16] = d * (float)sc[1] * (float)q2;
            y[l + 32] = d * (float)sc[2] * (float)q3;
            y[l + 48] = d * (float)sc[3] * (float)q4;
        }
    }
}
