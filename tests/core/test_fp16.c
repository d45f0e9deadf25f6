/* F16 and BF16 conversions: every one of the 65,536 bit patterns, and f32
 * rounding against a double-precision round-to-nearest-even reference. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Reference: the representable half value nearest to x (ties to even),
 * found by comparing distances in double precision. */
static uint16_t ref_fp32_to_fp16(float x) {
    if (isnan(x))
        return (uint16_t)((signbit(x) ? 0x8000 : 0) | 0x7e00);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double a = fabs((double)x);
    if (a >= 65520.0)
        return sign | 0x7c00;
    /* candidates: floor and ceil on the half grid */
    int e;
    frexp(a, &e);               /* a = m * 2^e, m in [0.5, 1) */
    int q = e - 11;             /* ulp exponent for 11 significant bits */
    if (q < -24)
        q = -24;                /* subnormal ulp */
    double ulp = ldexp(1.0, q);
    double lo = floor(a / ulp) * ulp, hi = lo + ulp;
    double pick = (a - lo < hi - a) ? lo : (a - lo > hi - a) ? hi : (fmod(lo / ulp, 2.0) == 0 ? lo : hi);
    /* encode pick exactly */
    if (pick == 0)
        return sign;
    int pe;
    double pm = frexp(pick, &pe);
    if (pe - 1 < -14)           /* subnormal */
        return sign | (uint16_t)(pick / ldexp(1.0, -24));
    if (pe - 1 > 15)
        return sign | 0x7c00;
    return sign | (uint16_t)(((pe - 1 + 15) << 10) | ((uint16_t)((pm * 2 - 1) * 1024)));
}

int main(void) {
    /* f16 -> f32 -> f16 is the identity on every non-NaN pattern; NaNs stay NaN */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tport_fp16_to_fp32((uint16_t)h);
        unsigned exp = (h >> 10) & 0x1f, man = h & 0x3ff;
        if (exp == 0x1f && man) {
            CHECK(isnan(f), "pattern %04x should decode to NaN", h);
            continue;
        }
        CHECK(tport_fp32_to_fp16(f) == h, "f16 %04x round trip gave %04x", h, tport_fp32_to_fp16(f));
        /* decoded value equals the mathematical value */
        double want = exp == 0 ? ldexp(man, -24) : exp == 0x1f ? INFINITY : ldexp(1024 + man, (int)exp - 25);
        if (h & 0x8000)
            want = -want;
        CHECK((double)f == want, "f16 %04x decoded to %.9g, want %.9g", h, f, want);
    }
    /* bf16: every pattern round-trips; NaNs stay NaN */
    for (uint32_t h = 0; h < 65536; h++) {
        float f = tport_bf16_to_fp32((uint16_t)h);
        CHECK(bits(f) == h << 16, "bf16 %04x decode", h);
        if (!isnan(f))
            CHECK(tport_fp32_to_bf16(f) == h, "bf16 %04x round trip", h);
        else
            CHECK(isnan(tport_bf16_to_fp32(tport_fp32_to_bf16(f))), "bf16 NaN %04x stays NaN", h);
    }
    /* f32 -> f16 rounding on random and boundary floats */
    unsigned long long s = 0x1234567ULL;
    int bad = 0;
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = (uint32_t)test_rng_next(&s);
        if (i & 1) /* concentrate on the f16 range, including ties */
            u = (u & 0x8000ffffu) | ((0x33000000u + (u & 0x0fff0000u)) & 0x7fff0000u);
        float f;
        memcpy(&f, &u, 4);
        if (tport_fp32_to_fp16(f) != ref_fp32_to_fp16(f) && bad++ < 10)
            CHECK(0, "f32 %08x -> %04x, want %04x", u, tport_fp32_to_fp16(f), ref_fp32_to_fp16(f));
    }
    CHECK(bad == 0, "%d f32->f16 mismatches", bad);
    /* bf16 ties to even */
    CHECK(tport_fp32_to_bf16(1.00390625f) == 0x3f80, "tie down to even");   /* 1 + 2^-8 */
    CHECK(tport_fp32_to_bf16(1.01171875f) == 0x3f82, "tie up to even");     /* 1 + 3*2^-8 */
    return test_finish("test_fp16");
}
