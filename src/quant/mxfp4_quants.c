/* MXFP4 (OCP microscaling FP4; the weights of gpt-oss files): 32-element
 * blocks of 4-bit E2M1 codes sharing one power-of-two scale.  Layout
 * (ggml-common.h block_mxfp4):
 *   { u8 e; u8 qs[16]; }                                        17 bytes
 * e is an E8M0 exponent; element j is the low nibble of qs[j] and element
 * j+16 the high nibble.  Like ggml we keep the E2M1 values doubled (so
 * they are integers) and halve the scale instead: y = kvalues[q] * 2^(e-128).
 *
 * The quantizer follows ggml's quantize_row_mxfp4_ref, whose bytes depend
 * on two details reproduced here:
 * - the exponent is floor(log2f(amax)) - 2 + 127, with log2f from the C
 *   library (glibc rounds log2f of values just below a power of two up to
 *   the integer, which moves the scale up one step);
 * - that float goes to uint8_t through a plain C cast, undefined below 0
 *   (amax < 2^-125); x86-64 compilers emit a 32-bit truncation and keep the
 *   low 8 bits, so we do the same through q_cvtt.  Such a block decodes to
 *   zeros either way: its elements are all nearer 0 than any code.
 * Each element takes the nearest code, the lowest index on a tie (so +0
 * over -0, and the smaller magnitude between two codes). */
#include "quant_impl.h"
#include "quant_rows.h"

enum { MXFP4_BLOCK = 32, MXFP4_BYTES = 17 };

const int8_t tport_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* 2^(e-128), i.e. half the E8M0 value, as ggml_e8m0_to_fp32_half: e = 0
 * and 1 are the subnormals 2^-128 and 2^-127. */
static float e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? UINT32_C(0x00200000) << e : (uint32_t)(e - 1) << 23;
    float d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* The same linear search as ggml's best_index_mxfp4 (strict <: the first
 * index wins a tie).  kvalues[i]*d is exact (a small integer times a power
 * of two), so contraction could not change it, but the file is built with
 * -ffp-contract=off like the rest of src/quant. */
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

void tport_quant_mxfp4(const float *x, void *vy, int64_t n) {
    uint8_t *y = vy;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, x += MXFP4_BLOCK, y += MXFP4_BYTES) {
        float amax = 0.0f;
        for (int j = 0; j < MXFP4_BLOCK; j++)
            if (amax < fabsf(x[j]))
                amax = fabsf(x[j]);
        const uint8_t e = amax > 0.0f ? q_to_u8(q_cvtt(floorf(log2f(amax)) - 2 + 127)) : 0;
        const float d = e8m0_half(e);
        y[0] = e;
        for (int j = 0; j < MXFP4_BLOCK / 2; j++)
            y[1 + j] = (uint8_t)(best_index(x[j], d) | best_index(x[j + 16], d) << 4);
    }
}

void tport_dequant_mxfp4(const void *vx, float *y, int64_t n) {
    const uint8_t *x = vx;
    for (int64_t b = 0; b < n / MXFP4_BLOCK; b++, x += MXFP4_BYTES, y += MXFP4_BLOCK) {
        const float d = e8m0_half(x[0]);
        for (int j = 0; j < MXFP4_BLOCK / 2; j++) {
            y[j] = (float)tport_kvalues_mxfp4[x[1 + j] & 0xf] * d;
            y[j + 16] = (float)tport_kvalues_mxfp4[x[1 + j] >> 4] * d;
        }
    }
}
