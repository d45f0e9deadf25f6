/* NVFP4 (ggml id 40; NVIDIA's FP4 checkpoints): 64-element blocks of four
 * 16-element sub-blocks, each with an unsigned E4M3 scale, elements as
 * E2M1 codes (the MXFP4 code table, doubled).  Layout (ggml-common.h):
 *   {u8 d[4] (UE4M3); u8 qs[32]}                               36 bytes
 * sub-block s: element j is the low nibble of qs[8s + j], element j + 8
 * its high nibble.  Like ggml the scale decodes to half its value (the
 * codes are doubled): y = kvalues[q] * ue4m3(d) / 2.
 *
 * The UE4M3 conversions are ggml's (ggml-impl.h), including what they do
 * with bytes that are not UE4M3 numbers: 0 and 0x7f (NaN) decode to 0, the
 * sign bit is ignored otherwise (0x80 decodes to 0 too, 0xff to 480 / 2).
 * Encoding rounds half up on the fourth mantissa bit, saturates to 0x7e
 * (448), and rounds subnormals with (int)(x * 512 + 0.5).  The quantizer is
 * quantize_row_nvfp4_ref (quantize_nvfp4 ignores importance weights). */
#include "quant_impl.h"
#include "quant_rows.h"

enum { NVFP4_BLOCK = 64, NVFP4_SUB = 16, NVFP4_BYTES = 36 };

static float ue4m3_half(uint8_t x) {
    if (x == 0 || x == 0x7f)
        return 0.0f;
    const int e = (x >> 3) & 0xf, m = x & 7;
    const float raw = e == 0 ? ldexpf((float)m, -9) : ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return raw * 0.5f;
}

static uint8_t to_ue4m3(float x) {
    if (!(x > 0.0f))
        return 0;
    if (x > 448.0f)
        x = 448.0f;
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 23) & 0xff) - 127 + 7;
    if (e <= 0) {
        const int m = (int)(x * 512.0f + 0.5f); /* x < 2^-6 here: no overflow */
        return m < 1 ? 0 : (uint8_t)(m > 7 ? 7 : m);
    }
    if (e >= 15)
        return 0x7e;
    int m = (int)((bits >> 20) & 7) + (int)((bits >> 19) & 1);
    if (m > 7) {
        m = 0;
        if (++e >= 15)
            return 0x7e;
    }
    return (uint8_t)(e << 3 | m);
}

/* Nearest code, lowest index on a tie: ggml's best_index_mxfp4. */
static uint8_t best_index(float x, float d) {
    int best = 0;
    float best_err = fabsf((float)tport_kvalues_mxfp4[0] * d - x);
    for (int i = 1; i < 16; i++) {
        const float err = fabsf((float)tport_kvalues_mxfp4[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return (uint8_t)best;
}

void tport_dequant_nvfp4(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, x += NVFP4_BYTES)
        for (int s = 0; s < 4; s++, y += NVFP4_SUB) {
            const float d = ue4m3_half(x[s]);
            for (int j = 0; j < NVFP4_SUB / 2; j++) {
                const uint8_t q = x[4 + s * (NVFP4_SUB / 2) + j];
                y[j] = (float)tport_kvalues_mxfp4[q & 0xf] * d;
                y[j + NVFP4_SUB / 2] = (float)tport_kvalues_mxfp4[q >> 4] * d;
            }
        }
}

void tport_quant_nvfp4(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / NVFP4_BLOCK; b++, y += NVFP4_BYTES)
        for (int s = 0; s < 4; s++, x += NVFP4_SUB) {
            float amax = 0.0f;
            for (int j = 0; j < NVFP4_SUB; j++)
                if (amax < fabsf(x[j]))
                    amax = fabsf(x[j]);
            const uint8_t ue = to_ue4m3(amax / 6.0f);
            const float d = ue4m3_half(ue);
            y[s] = ue;
            for (int j = 0; j < NVFP4_SUB / 2; j++)
                y[4 + s * (NVFP4_SUB / 2) + j] =
                    (uint8_t)(best_index(x[j], d) | best_index(x[j + NVFP4_SUB / 2], d) << 4);
        }
}
