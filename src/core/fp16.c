#include "fp16.h"

#include <string.h>

static uint32_t bits_of(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float float_of(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float tport_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) /* Inf or NaN: keep the payload */
        return float_of(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        if (man == 0)
            return float_of(sign);
        /* subnormal: value = man * 2^-24, exact in f32 */
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return float_of(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t tport_fp32_to_fp16(float f) {
    uint32_t u = bits_of(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) /* NaN: a quiet NaN, as ggml's scalar path gives */
        return sign | 0x7e00u;
    if (abs >= 0x477ff000u) /* rounds to >= 65520: infinity */
        return sign | 0x7c00u;
    if (abs < 0x38800000u) {
        /* result is subnormal or zero: scale so that the f16 subnormal unit
         * (2^-24) becomes the f32 unit of the last place, letting the FPU
         * round to nearest even for us. */
        float v = float_of(abs) + 0.5f; /* 0.5 = 2^-1: ulp there is 2^-24 */
        return sign | (uint16_t)(bits_of(v) - bits_of(0.5f));
    }
    /* normal: round the 13 dropped mantissa bits to nearest even */
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xfffu + mant_odd;
    return sign | (uint16_t)((abs - (112u << 23)) >> 13);
}

float tport_bf16_to_fp32(uint16_t h) {
    return float_of((uint32_t)h << 16);
}

uint16_t tport_fp32_to_bf16(float f) {
    uint32_t u = bits_of(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: force quiet */
        return (uint16_t)((u >> 16) | 64u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
