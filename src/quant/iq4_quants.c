/* IQ4_NL (32-element blocks) and IQ4_XS (256-element super-blocks): 4-bit
 * indices into ggml's non-linear table kvalues_iq4nl.  Layouts (ggml-common.h):
 *   block_iq4_nl { f16 d; u8 qs[16]; }                            18 bytes
 *   block_iq4_xs { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]; } 136
 * In each 32-element group, element j is the low nibble of qs[j] and
 * element j+16 the high nibble.  IQ4_XS group scales are 6-bit, biased by
 * 32: low 4 bits in scales_l (two per byte), high 2 bits in scales_h.
 *
 * The quantizer follows ggml's quantize_row_iq4_nl_impl; the reference row
 * quantizers call it with ntry = -1 (IQ4_NL: no scale search) and ntry = 7
 * (IQ4_XS, through quantize_iq4_xs without an importance matrix).  An
 * all-zero group gets scale 0 and decodes to zeros.  Its nibbles are index
 * 8 (code value +1, the one nearest 0): what IQ4_XS's requantization gives
 * such a group upstream; ggml's IQ4_NL leaves them uninitialised. */
#include "quant_impl.h"
#include "quant_rows.h"

const int8_t tport_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                        1,    13,   25,  38,  53,  69,  89,  113};

static int best_index_int8(int n, const int8_t *val, float x) {
    if (x <= val[0])
        return 0;
    if (x >= val[n - 1])
        return n - 1;
    int ml = 0, mu = n - 1;
    while (mu - ml > 1) {
        const int mav = (ml + mu) / 2;
        if (x < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return x - val[mu - 1] < val[mu] - x ? mu - 1 : mu;
}

/* One super-block of `sbs` elements in groups of 32. */
static void iq4_quantize_superblock(int sbs, const float *x, uint8_t *dh, uint8_t *q4, uint8_t *scales_h,
                                    uint8_t *scales_l, int ntry, const float *qw) {
    const int8_t *values = tport_kvalues_iq4nl;
    enum { BS = 32 };
    float scales[QK_K / BS], weight[BS];
    uint8_t L[QK_K];
    memset(q4, 0, (size_t)sbs / 2);
    memset(L, 8, sizeof L);
    q_wr_f16(dh, 0.f);

    float sigma2 = 0;
    for (int j = 0; j < sbs; ++j)
        sigma2 += x[j] * x[j];
    sigma2 *= 2.f / (float)sbs;

    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < sbs / BS; ++ib) {
        const float *xb = x + ib * BS;
        uint8_t *Lb = L + ib * BS;
        for (int j = 0; j < BS; ++j)
            weight[j] = qw ? qw[ib * BS + j] * sqrtf(sigma2 + xb[j] * xb[j]) : xb[j] * xb[j];
        float amax;
        const float max = q_max_by_abs(xb, BS, &amax);
        if (amax < 1e-15f) {
            scales[ib] = 0;
            continue;
        }
        float d = ntry > 0 ? -max / (float)values[0] : max / (float)values[0];
        float id = 1 / d;
        float sumqx = 0, sumq2 = 0;
        for (int j = 0; j < BS; ++j) {
            const int l = best_index_int8(16, values, id * xb[j]);
            Lb[j] = (uint8_t)l;
            const float q = values[l], w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
        float best = d * sumqx;
        for (int itry = -ntry; itry <= ntry; ++itry) {
            id = ((float)itry + (float)values[0]) / max;
            sumqx = sumq2 = 0;
            for (int j = 0; j < BS; ++j) {
                const int l = best_index_int8(16, values, id * xb[j]);
                const float q = values[l], w = weight[j];
                sumqx += w * q * xb[j];
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                d = sumqx / sumq2;
                best = d * sumqx;
            }
        }
        scales[ib] = d;
        if (fabsf(d) > amax_scale) {
            amax_scale = fabsf(d);
            max_scale = d;
        }
    }

    if (sbs / BS > 1) {
        memset(scales_h, 0, 2);
        uint16_t sh = 0;
        const float d = -max_scale / 32;
        q_wr_f16(dh, d);
        const float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < sbs / BS; ++ib) {
            int l = q_nearest_int(id * scales[ib]);
            l = q_max_i(-32, q_min_i(31, l));
            const float dl = d * (float)l;
            const float idl = dl ? 1 / dl : 0.f;
            for (int j = 0; j < BS; ++j)
                L[ib * BS + j] = (uint8_t)best_index_int8(16, values, idl * x[ib * BS + j]);
            l += 32;
            const uint8_t l_l = (uint8_t)(l & 0xf), l_h = (uint8_t)(l >> 4);
            if (ib % 2 == 0)
                scales_l[ib / 2] = l_l;
            else
                scales_l[ib / 2] = (uint8_t)(scales_l[ib / 2] | l_l << 4);
            sh = (uint16_t)(sh | l_h << 2 * (ib % 8));
        }
        q_wr_u16(scales_h, sh);
    } else {
        q_wr_f16(dh, scales[0]);
        if (ntry > 0) {
            const float id = scales[0] ? 1 / scales[0] : 0;
            for (int j = 0; j < sbs; ++j)
                L[j] = (uint8_t)best_index_int8(16, values, id * x[j]);
        }
    }
    for (int i = 0; i < sbs / 32; ++i)
        for (int j = 0; j < 16; ++j)
            q4[16 * i + j] = (uint8_t)(L[32 * i + j] | L[32 * i + 16 + j] << 4);
}

void tport_quant_iq4_nl(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 18)
        iq4_quantize_superblock(32, x, y, y + 2, NULL, NULL, -1, NULL);
}

/* ggml's quantize_iq4_nl (the path of llama-quantize): a scale search of
 * 7 steps either side, importance weights or NULL. */
void tport_quant_iq4_nl_weighted(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / 32; b++, x += 32, y += 18)
        iq4_quantize_superblock(32, x, y, y + 2, NULL, NULL, 7, qw ? qw + 32 * b : NULL);
}

void tport_quant_iq4_xs_weighted(const float *x, void *vy, int64_t n, const float *qw) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K, y += 136)
        iq4_quantize_superblock(QK_K, x, y, y + 8, y + 2, y + 4, 7, qw ? qw + QK_K * b : NULL);
}

void tport_dequant_iq4_nl(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / 32; b++, x += 18, y += 32) {
        const float d = q_rd_f16(x);
        for (int j = 0; j < 16; ++j) {
            y[j] = d * (float)tport_kvalues_iq4nl[x[2 + j] & 0xf];
            y[j + 16] = d * (float)tport_kvalues_iq4nl[x[2 + j] >> 4];
        }
    }
}

void tport_quant_iq4_xs(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / QK_K; b++, x += QK_K, y += 136)
        iq4_quantize_superblock(QK_K, x, y, y + 8, y + 2, y + 4, 7, NULL);
}

void tport_dequant_iq4_xs(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / QK_K; b++, x += 136) {
        const float d = q_rd_f16(x);
        const uint16_t scales_h = q_rd_u16(x + 2);
        const uint8_t *qs = x + 8;
        for (int ib = 0; ib < QK_K / 32; ++ib, qs += 16, y += 32) {
            const int ls = ((x[4 + ib / 2] >> 4 * (ib % 2)) & 0xf) | ((scales_h >> 2 * ib) & 3) << 4;
            const float dl = d * (float)(ls - 32);
            for (int j = 0; j < 16; ++j) {
                y[j] = dl * (float)tport_kvalues_iq4nl[qs[j] & 0xf];
                y[j + 16] = dl * (float)tport_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}
