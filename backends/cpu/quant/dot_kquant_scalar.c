/* Scalar dot products of the k-quants and IQ4_XS with Q8_K activations
 * {f32 d; i8 qs[256]; i16 bsums[16]} (bsums[j] = sum of qs[16j..16j+15]).
 * Each super-block: integer sums weighted by the small scales, then
 * d_x * d_y * isum (minus the mins' contribution via bsums). */
#include "quant_kernels.h"

static const int8_t *q8k_qs(const uint8_t *y) { return (const int8_t *)(y + Q8K_QS); }
/* 256 signed quants against the activations, in 16 groups of 16, each
 * group's sum times its scale. */
static int scaled_dot16(const int8_t q[QK_K], const int8_t *q8, const int8_t sc[16]) {
    int isum = 0;
    for (int g = 0; g < 16; g++) {
        int gs = 0;
        for (int l = 0; l < 16; l++)
            gs += q[16 * g + l] * q8[16 * g + l];
        isum += sc[g] * gs;
    }
    return isum;
}

static void dot_q2_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ2_K, y += BQ8_K) {
        const uint8_t *sc = x, *q2 = x + 16;
        const int8_t *q8 = q8k_qs(y);
        int summs = 0;
        for (int j = 0; j < 16; j++)
            summs += cpuq_q8k_bsum(y, j) * (sc[j] >> 4);
        const float dy = cpuq_f32(y);
        const float dall = dy * cpuq_half(x + 80), dmin = dy * cpuq_half(x + 82);
        int isum = 0, is = 0;
        for (int k = 0; k < 2; k++, q2 += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int h = 0; h < 2; h++, q8 += 16) {
                    int isuml = 0;
                    for (int l = 0; l < 16; l++)
                        isuml += q8[l] * ((q2[16 * h + l] >> shift) & 3);
                    isum += (sc[is++] & 0xF) * isuml;
                }
            }
        }
        sum += dall * (float)isum - dmin * (float)summs;
    }
    *s = sum;
}

static void dot_q3_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    int8_t sc[16], q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ3_K, y += BQ8_K) {
        const uint8_t *hm = x, *qs = x + 32;
        cpuq_scales_q3k(x + 96, sc);
        /* element 128k + 32j + l: 2 bits at shift 2j of qs[32k + l];
         * high bit (set = no -4) in hmask[l] bit 4k + j */
        for (int k = 0; k < 2; k++)
            for (int j = 0; j < 4; j++)
                for (int l = 0; l < 32; l++)
                    q[128 * k + 32 * j + l] = (int8_t)(((qs[32 * k + l] >> (2 * j)) & 3) -
                                                       ((hm[l] >> (4 * k + j)) & 1 ? 0 : 4));
        const int isum = scaled_dot16(q, q8k_qs(y), sc);
        sum += cpuq_half(x + 108) * cpuq_f32(y) * (float)isum;
    }
    *s = sum;
}

/* Q4_K and Q5_K: 8 groups of 32 with 6-bit scales and mins. */
static void dot_q45_K(int64_t n, float *s, const uint8_t *x, const uint8_t *y, int five) {
    float sum = 0;
    uint8_t sc[8], mn[8];
    const int bx = five ? BQ5_K : BQ4_K;
    for (int64_t i = 0; i < n / QK_K; i++, x += bx, y += BQ8_K) {
        cpuq_scale_min_k4(x + 4, sc, mn);
        const uint8_t *qs = x + (five ? 48 : 16), *qh = x + 16;
        const int8_t *q8 = q8k_qs(y);
        const int msum = cpuq_k4_min_sum(mn, y);
        int isum = 0;
        for (int g = 0; g < 8; g++) {
            int gs = 0;
            for (int l = 0; l < 32; l++) {
                const uint8_t byte = qs[32 * (g / 2) + l];
                int q = g % 2 ? byte >> 4 : byte & 15;
                if (five)
                    q += ((qh[l] >> g) & 1) << 4;
                gs += q * q8[32 * g + l];
            }
            isum += sc[g] * gs;
        }
        const float dy = cpuq_f32(y);
        sum += cpuq_half(x) * dy * (float)isum - cpuq_half(x + 2) * dy * (float)msum;
    }
    *s = sum;
}

static void dot_q4_K(int64_t n, float *s, const void *x, const void *y) { dot_q45_K(n, s, x, y, 0); }
static void dot_q5_K(int64_t n, float *s, const void *x, const void *y) { dot_q45_K(n, s, x, y, 1); }

static void dot_q6_K(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, x += BQ6_K, y += BQ8_K) {
        const uint8_t *ql = x, *qh = x + 128;
        const int8_t *sc = (const int8_t *)(x + 192);
        for (int k = 0; k < 2; k++) {
            for (int l = 0; l < 32; l++) {
                const uint8_t a = ql[64 * k + l], b = ql[64 * k + l + 32], h = qh[32 * k + l];
                q[128 * k + l] = (int8_t)(((a & 15) | ((h >> 0) & 3) << 4) - 32);
                q[128 * k + l + 32] = (int8_t)(((b & 15) | ((h >> 2) & 3) << 4) - 32);
                q[128 * k + l + 64] = (int8_t)(((a >> 4) | ((h >> 4) & 3) << 4) - 32);
                q[128 * k + l + 96] = (int8_t)(((b >> 4) | ((h >> 6) & 3) << 4) - 32);
            }
        }
        const int isum = scaled_dot16(q, q8k_qs(y), sc);
        sum += cpuq_half(x + 208) * cpuq_f32(y) * (float)isum;
    }
    *s = sum;
}

static void dot_iq4_xs(int64_t n, float *s, const void *vx, const void *vy) {
    const uint8_t *x = vx, *y = vy;
    float sum = 0;
    for (int64_t i = 0; i < n / QK_K; i++, x += BIQ4_XS, y += BQ8_K) {
        const unsigned scales_h = (unsigned)(x[2] | x[3] << 8);
        const uint8_t *qs = x + 8;
        const int8_t *q8 = q8k_qs(y);
        int isum = 0;
        for (int g = 0; g < 8; g++, qs += 16, q8 += 32) {
            const int ls = cpuq_iq4xs_scale(x, scales_h, g);
            int gs = 0;
            for (int j = 0; j < 16; j++)
                gs += CPUQ(kvalues_iq4nl)[qs[j] & 15] * q8[j] + CPUQ(kvalues_iq4nl)[qs[j] >> 4] * q8[j + 16];
            isum += ls * gs;
        }
        sum += cpuq_half(x) * cpuq_f32(y) * (float)isum;
    }
    *s = sum;
}

CPUQ_KERNEL_TABLE(scalar_kquant_kernel,
                  {TPORT_TYPE_Q2_K, dot_q2_K},
                  {TPORT_TYPE_Q3_K, dot_q3_K},
                  {TPORT_TYPE_Q4_K, dot_q4_K},
                  {TPORT_TYPE_Q5_K, dot_q5_K},
                  {TPORT_TYPE_Q6_K, dot_q6_K},
                  {TPORT_TYPE_IQ4_XS, dot_iq4_xs})
