/* Helpers shared by the reference (de)quantizers in src/quant/.
 *
 * Blocks are read and written byte by byte (memcpy for multi-byte fields):
 * model data may sit at any offset of a memory map, so no block is ever
 * accessed through a struct pointer.  Multi-byte fields are little-endian;
 * like ggml we assume a little-endian host.
 *
 * Float arithmetic must follow ggml's reference order with no FMA
 * contraction: gcc in -std=c11 (ISO) mode defaults to -ffp-contract=off and
 * clang defaults to "on" only within one expression, which the pragma
 * below turns off.  tests/quant checks the result bit for bit. */
#ifndef TPORT_QUANT_IMPL_H
#define TPORT_QUANT_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/fp16.h"

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#define QK_K 256

static inline float q_rd_f32(const uint8_t *p) {
    float v;
    memcpy(&v, p, 4);
    return v;
}
static inline void q_wr_f32(uint8_t *p, float v) { memcpy(p, &v, 4); }
static inline uint16_t q_rd_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline void q_wr_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}
static inline uint32_t q_rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void q_wr_u32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
/* f16 field -> f32 and f32 -> f16 field (round to nearest even). */
static inline float q_rd_f16(const uint8_t *p) { return tport_fp16_to_fp32(q_rd_u16(p)); }
static inline void q_wr_f16(uint8_t *p, float v) { q_wr_u16(p, tport_fp32_to_fp16(v)); }

/* C's float -> integer conversion is undefined when the value does not fit
 * (NaN, Inf, huge).  ggml's reference code does such conversions; on
 * x86-64 they compile to cvttss2si, which gives INT32_MIN for every such
 * value and truncates otherwise.  We reproduce that, without UB, so NaN and
 * Inf blocks come out as ggml's do on x86-64.  The narrowing to 8 bits is
 * then done by the caller, modulo 256, as the compilers do. */
static inline int32_t q_cvtt(float f) {
    if (!(f > -2147483648.0f && f < 2147483648.0f))
        return INT32_MIN;
    return (int32_t)f;
}
static inline int8_t q_to_i8(int32_t v) { return (int8_t)(uint8_t)((uint32_t)v & 0xffu); }
static inline uint8_t q_to_u8(int32_t v) { return (uint8_t)((uint32_t)v & 0xffu); }

/* ggml's nearest_int: round to nearest (ties to even) through the float
 * mantissa, valid for |f| <= 4194303; outside that it returns what the bit
 * trick gives, as ggml's does (its assert is off in release builds). */
static inline int q_nearest_int(float fval) {
    float val = fval + 12582912.f;
    int32_t i;
    memcpy(&i, &val, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

static inline int q_min_i(int a, int b) { return a < b ? a : b; }
static inline int q_max_i(int a, int b) { return a > b ? a : b; }

/* The signed value of largest magnitude among x[0..n) (the first one wins a
 * tie, a NaN never wins); its magnitude goes to *amax_out.  0 and 0 for an
 * all-zero block.  The max search of every ggml reference quantizer. */
static inline float q_max_by_abs(const float *x, int n, float *amax_out) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < n; j++) {
        const float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    *amax_out = amax;
    return max;
}

#endif
