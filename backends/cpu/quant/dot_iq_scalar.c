/* Scalar dot products of the lattice IQ types (IQ2_XXS, IQ2_XS, IQ2_S,
 * IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) and the ternary TQ1_0 / TQ2_0 with Q8_K
 * activations, the integer sums ggml's CPU backend forms for them: its
 * vec_dot_type for these types is Q8_K, so llama.cpp rounds the
 * activations to 8 bits before the product, and a tensorport that
 * multiplied in f32 instead drifted off llama.cpp's ids on IQ2_S and
 * IQ1_M files.
 *
 * The lattice grids are the generated tables of src/quant (iq_grids.h:
 * data only, compiled into every copy of this backend): entry k's byte j
 * is a magnitude (IQ2, IQ3) or a signed value in {-1, 0, 1} (IQ1). */
#include "quant_kernels.h"

#include "../../../src/quant/iq_grids.h"

static const int8_t *q8k_qs(const uint8_t *y) { return (const int8_t *)(y + Q8K_QS); }
static unsigned u16_at(const uint8_t *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }
static uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Eight magnitudes of a grid entry against eight activations, with the
 * signs of `signs` (bit j: minus). */
static int signed_dot8(uint64_t entry, uint8_t signs, const int8_t *q8) {
    int sum = 0;
    for (int j = 0; j < 8; j++) {
        int v = iq_grid_byte(entry, j) * q8[j];
        sum += signs >> j & 1 ? -v : v;
    }
    return sum;
}

/* Four magnitudes of an IQ3 grid entry, signs bits 0..3 of `signs`. */
static int signed_dot4(uint32_t entry, unsigned signs, const int8_t *q8) {
    int sum = 0;
    for (int j = 0; j < 4; j++) {
        int v = (int)(entry >> 8 * j & 0xff) * q8[j];
        sum += signs >> j & 1 ? -v : v;
    }
    return sum;
}

/* IQ2_XXS {f16 d; u16 qs[32]}: per 32: 4 grid bytes, then a u32 of four
 * 7-bit sign indices and a 4-bit scale. */
static void dot_iq2_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        int bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = x + 2 + 8 * ib;
            const uint32_t aux = u32_at(q + 4);
            int sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8)
                sumi += signed_dot8(tport_iq2xxs_grid[q[l]], iq_signs8(aux >> 7 * l & 127), q8);
            bsum += sumi * (int)(2 * (aux >> 28) + 1);
        }
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

/* IQ2_XS {f16 d; u16 qs[32]; u8 scales[8]}: a u16 is a 9-bit grid index
 * and a 7-bit sign index; two 4-bit scales per 32. */
static void dot_iq2_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 74, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        const uint8_t *sc = x + 66;
        int bsum = 0;
        for (int ib = 0; ib < 8; ib++) {
            for (int h = 0; h < 2; h++) {
                int sumi = 0;
                for (int l = 2 * h; l < 2 * h + 2; l++, q8 += 8) {
                    const unsigned q = u16_at(x + 2 + 8 * ib + 2 * l);
                    sumi += signed_dot8(tport_iq2xs_grid[q & 511], iq_signs8(q >> 9), q8);
                }
                bsum += sumi * (2 * (sc[ib] >> 4 * h & 0xf) + 1);
            }
        }
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

/* IQ2_S {f16 d; u8 qs[32]; u8 signs[32]; u8 qh[8]; u8 scales[8]}: 10-bit
 * grid indices (two high bits each from qh), explicit sign bytes. */
static void dot_iq2_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 82, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        const uint8_t *qs = x + 2, *signs = x + 34, *qh = x + 66, *sc = x + 74;
        int bsum = 0;
        for (int ib = 0; ib < 8; ib++, qs += 4, signs += 4) {
            for (int h = 0; h < 2; h++) {
                int sumi = 0;
                for (int l = 2 * h; l < 2 * h + 2; l++, q8 += 8)
                    sumi += signed_dot8(tport_iq2s_grid[qs[l] | (qh[ib] << (8 - 2 * l) & 0x300)], signs[l], q8);
                bsum += sumi * (2 * (sc[ib] >> 4 * h & 0xf) + 1);
            }
        }
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.125f * sum;
}

/* IQ3_XXS {f16 d; u8 qs[64]; u32 scales_and_signs[8]}: 8-bit indices of
 * 4-magnitude entries, per 32 a u32 of four 7-bit sign indices and a
 * 4-bit scale. */
static void dot_iq3_xxs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 98, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        const uint8_t *q3 = x + 2;
        int bsum = 0;
        for (int ib = 0; ib < 8; ib++, q3 += 8) {
            const uint32_t aux = u32_at(x + 66 + 4 * ib);
            int sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8) {
                const uint8_t sg = iq_signs8(aux >> 7 * l & 127);
                sumi += signed_dot4(tport_iq3xxs_grid[q3[2 * l]], sg & 0xf, q8) +
                        signed_dot4(tport_iq3xxs_grid[q3[2 * l + 1]], sg >> 4, q8 + 4);
            }
            bsum += sumi * (int)(2 * (aux >> 28) + 1);
        }
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = 0.25f * sum;
}

/* IQ3_S {f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]}: 9-bit
 * indices (the ninth from qh), explicit signs, a 4-bit scale per 32. */
static void dot_iq3_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 110, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        const uint8_t *qs = x + 2, *qh = x + 66, *signs = x + 74, *sc = x + 106;
        int bsum = 0;
        for (int ib = 0; ib < 8; ib++, qs += 8, signs += 4) {
            int sumi = 0;
            for (int l = 0; l < 4; l++, q8 += 8) {
                const uint32_t g1 = tport_iq3s_grid[qs[2 * l] | (qh[ib] << (8 - 2 * l) & 256)];
                const uint32_t g2 = tport_iq3s_grid[qs[2 * l + 1] | (qh[ib] << (7 - 2 * l) & 256)];
                sumi += signed_dot4(g1, signs[l] & 0xf, q8) + signed_dot4(g2, signs[l] >> 4, q8 + 4);
            }
            bsum += sumi * (2 * (sc[ib / 2] >> 4 * (ib % 2) & 0xf) + 1);
        }
        sum += cpuq_half(x) * cpuq_f32(y) * (float)bsum;
    }
    *s = sum;
}

/* A signed IQ1 grid entry against eight activations. */
static int grid1_dot8(uint64_t entry, const int8_t *q8) {
    int sum = 0;
    for (int j = 0; j < 8; j++)
        sum += (int8_t)iq_grid_byte(entry, j) * q8[j];
    return sum;
}

/* IQ1_S {f16 d; u8 qs[32]; u16 qh[8]}: per 32, qh holds four 3-bit high
 * index parts, a 3-bit scale and the sign of the shift delta. */
static void dot_iq1_s(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 50, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        const uint8_t *qs = x + 2;
        int sumi = 0, sumi1 = 0;
        for (int ib = 0; ib < 8; ib++, qs += 4) {
            const unsigned qh = u16_at(x + 34 + 2 * ib);
            const int ls = 2 * (qh >> 12 & 7) + 1, delta = qh & 0x8000 ? -1 : 1;
            int lsum = 0;
            for (int l = 0; l < 4; l++, q8 += 8)
                lsum += grid1_dot8(tport_iq1s_grid[qs[l] | (qh >> 3 * l & 7) << 8], q8);
            sumi += ls * lsum;
            sumi1 += ls * delta * (cpuq_q8k_bsum(y, 2 * ib) + cpuq_q8k_bsum(y, 2 * ib + 1));
        }
        sum += cpuq_half(x) * cpuq_f32(y) * ((float)sumi + TPORT_IQ1S_DELTA * (float)sumi1);
    }
    *s = sum;
}

/* IQ1_M {u8 qs[32]; u8 qh[16]; u8 scales[8]}: the f16 block scale is
 * spread over the top nibbles of the four u16 scale words; per 8 a 3-bit
 * high index part and a delta sign; two 3-bit scales per 32. */
static void dot_iq1_m(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 56, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        const uint8_t *qs = x, *qh = x + 32;
        unsigned sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = u16_at(x + 48 + 2 * k);
        const unsigned d16 = (sc[0] >> 12) | (sc[1] >> 8 & 0x00f0) | (sc[2] >> 4 & 0x0f00) | (sc[3] & 0xf000);
        const uint8_t dbytes[2] = {(uint8_t)d16, (uint8_t)(d16 >> 8)};
        int sumi1 = 0, sumi2 = 0;
        for (int ib = 0; ib < 8; ib++, qs += 4, qh += 2) {
            int sum1[2] = {0, 0}, sum2[2] = {0, 0};
            for (int l = 0; l < 4; l++, q8 += 8) {
                const unsigned idx = qs[l] | ((unsigned)qh[l / 2] << (8 - 4 * (l % 2)) & 0x700);
                const int delta = qh[l / 2] & (l % 2 ? 0x80 : 0x08) ? -1 : 1;
                int qsum = 0;
                for (int j = 0; j < 8; j++)
                    qsum += q8[j];
                sum1[l / 2] += grid1_dot8(tport_iq1s_grid[idx], q8);
                sum2[l / 2] += qsum * delta;
            }
            const int ls1 = 2 * (sc[ib / 2] >> (6 * (ib % 2)) & 7) + 1;
            const int ls2 = 2 * (sc[ib / 2] >> (6 * (ib % 2) + 3) & 7) + 1;
            sumi1 += sum1[0] * ls1 + sum1[1] * ls2;
            sumi2 += sum2[0] * ls1 + sum2[1] * ls2;
        }
        sum += cpuq_half(dbytes) * cpuq_f32(y) * ((float)sumi1 + TPORT_IQ1S_DELTA * (float)sumi2);
    }
    *s = sum;
}

/* A base-3 digit of a TQ1_0 byte: the byte times 3^l keeps the fraction
 * whose leading trit is the digit (ggml's packing). */
static int trit(uint8_t q, unsigned pow3) {
    const uint8_t shifted = (uint8_t)(q * pow3);
    return (int)(((unsigned)shifted * 3) >> 8) - 1;
}

/* TQ1_0 {u8 qs[48]; u8 qh[4]; f16 d}: five trits per qs byte, four per
 * qh byte, values in {-1, 0, 1}. */
static void dot_tq1_0(int64_t n, float *s, const void *vx, const void *vy) {
    static const unsigned pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 54, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        int isum = 0;
        for (int j = 0; j < 32; j++) /* the first 32 bytes: 160 values */
            for (int l = 0; l < 5; l++)
                isum += trit(x[j], pow3[l]) * q8[l * 32 + j];
        for (int j = 32; j < 48; j++) /* the next 16: 80 values */
            for (int l = 0; l < 5; l++)
                isum += trit(x[j], pow3[l]) * q8[160 + l * 16 + (j - 32)];
        for (int l = 0; l < 4; l++) /* qh: the last 16 */
            for (int j = 0; j < 4; j++)
                isum += trit(x[48 + j], pow3[l]) * q8[240 + l * 4 + j];
        sum += (float)isum * (cpuq_half(x + 52) * cpuq_f32(y));
    }
    *s = sum;
}

/* TQ2_0 {u8 qs[64]; f16 d}: 2-bit codes 0..2 for -1..1, four per byte.
 * The sum of code * q8 minus the sum of q8 (from the bsums): the same
 * integer as ggml's, and no (code - 1) product, which gcc 12 vectorizes
 * wrongly for AVX-512 VNNI (a signed dot product taken as unsigned). */
static void dot_tq2_0(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += 66, y += BQ8_K) {
        const int8_t *q8 = q8k_qs(y);
        int isum = 0;
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; l++)
                for (int k = 0; k < 32; k++)
                    isum += q8[j * 4 + l * 32 + k] * (x[j + k] >> 2 * l & 3);
        for (int g = 0; g < 16; g++)
            isum -= cpuq_q8k_bsum(y, g);
        sum += (float)isum * (cpuq_f32(y) * cpuq_half(x + 64));
    }
    *s = sum;
}

CPUQ_KERNEL_TABLE(scalar_iq_kernel,
                  {TPORT_TYPE_IQ2_XXS, dot_iq2_xxs},
                  {TPORT_TYPE_IQ2_XS, dot_iq2_xs},
                  {TPORT_TYPE_IQ2_S, dot_iq2_s},
                  {TPORT_TYPE_IQ3_XXS, dot_iq3_xxs},
                  {TPORT_TYPE_IQ3_S, dot_iq3_s},
                  {TPORT_TYPE_IQ1_S, dot_iq1_s},
                  {TPORT_TYPE_IQ1_M, dot_iq1_m},
                  {TPORT_TYPE_TQ1_0, dot_tq1_0},
                  {TPORT_TYPE_TQ2_0, dot_tq2_0})
