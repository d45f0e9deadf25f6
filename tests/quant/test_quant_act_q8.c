/* Activations to Q8_0 / Q8_1 the way llama.cpp's x86 CPU backend makes them
 * (backends/cpu/quant/act_quant.c): id = 127/amax and rounding half to even,
 * where the reference quantizer (ggml's *_ref, our src/quant) rounds halves
 * away from zero.  That difference made tensorport's greedy ids diverge
 * from llama.cpp's.
 *
 * - a hand-computed block whose quants are exact halves (amax = 127, so
 *   d = id = 1): the expected bytes are written out here, and the
 *   reference quantizer is checked to give the other answer;
 * - an all-zero block;
 * - random rows over many magnitudes (subnormal f16 scales included): d is
 *   the reference's d byte for byte, every quant is within 1 of the
 *   reference's, Q8_1's s is f16(d * sum(q));
 * - the vector version (compiled into this copy with TEST_SIMD, or the one
 *   in libtport) gives the scalar version's bytes;
 * - Q8_K (vector version only): exactly the reference quantizer's bytes, on
 *   random rows of many magnitudes, rows whose largest magnitude appears
 *   with both signs (the first one decides), and all-zero blocks. */
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "simd_usable.h"
#include "quant/quant_kernels.h"
#include "quant/type_table.h"

static unsigned long long rng = 11;

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* IEEE binary16 -> double (exact). */
static double f16_to_double(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    if (e == 31)
        return m ? NAN : h & 0x8000 ? -INFINITY : INFINITY;
    const double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}

static int simd_usable(void) {
#ifdef TEST_SIMD
    return test_simd_usable(TEST_SIMD);
#else
    return 1;
#endif
}

static void test_halves(tport_type_id type) {
    const int with_sum = type == TPORT_TYPE_Q8_1, qs = with_sum ? 4 : 2;
    float x[32] = {2.5f, -0.5f, 1.5f, -2.5f, 0.5f, 126.5f, -127.0f, 127.0f, 3.49f, -3.5f};
    /* round half to even: 2.5 -> 2, -0.5 -> 0, 1.5 -> 2, -2.5 -> -2, 0.5 -> 0,
     * 126.5 -> 126, -3.5 -> -4 */
    const int8_t want[10] = {2, 0, 2, -2, 0, 126, -127, 127, 3, -4};
    uint8_t y[36], ref[36];
    CHECK(CPUQ(quantize_act_scalar)(type, x, y, 32), "type %u: scalar refused", type);
    CHECK(rd16(y) == 0x3c00, "type %u: d = 0x%04x, want 1.0", type, rd16(y));
    for (int j = 0; j < 32; j++)
        CHECK((int8_t)y[qs + j] == (j < 10 ? want[j] : 0), "type %u: q[%d] = %d", type, j, (int8_t)y[qs + j]);
    if (with_sum) /* sum(q) = 2+0+2-2+0+126-127+127+3-4 = 127 -> f16 127.0 = 0x57f0 */
        CHECK(rd16(y + 2) == 0x57f0, "q8_1: s = 0x%04x, want 127.0", rd16(y + 2));
    /* the reference rounds the halves away from zero: 2.5 -> 3 */
    const tport_type_traits *t = tport_traits(type);
    CHECK(t && t->from_float, "type %u: no reference quantizer", type);
    if (t && t->from_float) {
        t->from_float(x, ref, 32);
        CHECK((int8_t)ref[qs] == 3 && (int8_t)ref[qs + 1] == -1, "type %u: the reference gave %d, %d", type,
              (int8_t)ref[qs], (int8_t)ref[qs + 1]);
    }
}

static void test_zero(tport_type_id type) {
    const float x[32] = {0};
    uint8_t y[36];
    memset(y, 0x5a, sizeof y);
    CHECK(CPUQ(quantize_act_scalar)(type, x, y, 32), "type %u: scalar refused", type);
    int nonzero = 0;
    for (size_t i = 0; i < (type == TPORT_TYPE_Q8_1 ? 36u : 34u); i++)
        nonzero += y[i] != 0;
    CHECK(!nonzero, "type %u: zero block has %d non-zero bytes", type, nonzero);
}

static void test_random(tport_type_id type) {
    const int with_sum = type == TPORT_TYPE_Q8_1, qs = with_sum ? 4 : 2, bb = with_sum ? BQ8_1 : BQ8_0;
    const int64_t n = 32 * 64;
    const tport_type_traits *t = tport_traits(type);
    if (!t || !t->from_float)
        return;
    float *x = malloc(sizeof(float) * (size_t)n);
    uint8_t *y = malloc((size_t)(n / 32 * bb)), *v = malloc((size_t)(n / 32 * bb)), *ref = malloc((size_t)(n / 32 * bb));
    int d_diff = 0, far = 0, s_bad = 0, simd_diff = 0, simd_rows = 0, q_diff = 0;
    for (int row = 0; row < 200; row++) {
        const float scale = ldexpf(1.0f, row % 60 - 40); /* 2^-40 .. 2^19: subnormal and large d */
        for (int64_t i = 0; i < n; i++) {
            float r = test_rng_uniform(&rng);
            /* every other row: many exact halves of the step */
            /* odd rows: any value; even rows: amax = 127 * scale (a power of
             * two, so id = 1 / scale exactly) and every other quant a half */
            x[i] = row % 2 ? r * scale : (i % 32 ? (float)(int)(r * 126) + (r < 0 ? -0.5f : 0.5f) : 127.0f) * scale;
        }
        CPUQ(quantize_act_scalar)(type, x, y, n);
        t->from_float(x, ref, n);
        if (CPUQ(quantize_act)(type, x, v, n)) {
            simd_rows++;
            simd_diff += memcmp(v, y, (size_t)(n / 32 * bb)) != 0;
        }
        for (int64_t b = 0; b < n / 32; b++) {
            const uint8_t *yb = y + b * bb, *rb = ref + b * bb;
            d_diff += rd16(yb) != rd16(rb);
            int sum = 0;
            for (int j = 0; j < 32; j++) {
                const int a = (int8_t)yb[qs + j], c = (int8_t)rb[qs + j];
                far += abs(a - c) > 1;
                q_diff += a != c;
                sum += a;
            }
            if (with_sum) { /* s = f16(d * sum): within half an f16 step of it */
                float amax = 0;
                for (int j = 0; j < 32; j++)
                    amax = fmaxf(amax, fabsf(x[b * 32 + j]));
                const double want = (double)(amax / 127.f * (float)sum), got = f16_to_double(rd16(yb + 2));
                if (fabs(want) >= 65520) /* beyond the largest f16 */
                    s_bad += !(isinf(got) && (got > 0) == (want > 0));
                else
                    s_bad += !(fabs(got - want) <= ldexp(fabs(want), -11) + ldexp(1.0, -25));
            }
        }
    }
    CHECK(!d_diff, "type %u: %d block scales differ from the reference's", type, d_diff);
    CHECK(!far, "type %u: %d quants more than 1 away from the reference's", type, far);
    CHECK(q_diff > 0, "type %u: no quant differs from the reference's on rows full of halves", type);
    CHECK(!s_bad, "type %u: %d bad sums", type, s_bad);
    CHECK(!simd_diff, "type %u: %d rows differ between the vector and scalar versions", type, simd_diff);
    printf("type %u: %d rows, %d quants differ from the reference's, %d rows compared with the vector version\n",
           type, 200, q_diff, simd_rows);
    free(x), free(y), free(v), free(ref);
}

static void test_q8_K(void) {
    const tport_type_traits *t = tport_traits(TPORT_TYPE_Q8_K);
    enum { N = 1024, BYTES = N / 256 * 292 };
    float x[N];
    uint8_t v[BYTES], ref[BYTES];
    if (!CPUQ(quantize_act)(TPORT_TYPE_Q8_K, x, v, N)) {
        printf("q8_K: no vector version in this build\n");
        return;
    }
    int bad = 0;
    for (int row = 0; row < 300; row++) {
        const float scale = ldexpf(1.0f, row % 50 - 25);
        for (int i = 0; i < N; i++)
            x[i] = test_rng_uniform(&rng) * scale;
        if (row % 3 == 1) { /* the largest magnitude twice, with both signs */
            x[17] = -2.0f * scale;
            x[200] = 2.0f * scale;
            x[256 + 3] = 2.0f * scale;
            x[256 + 9] = -2.0f * scale;
        }
        if (row % 5 == 2)
            memset(x + 512, 0, 256 * sizeof(float)); /* an all-zero block */
        CPUQ(quantize_act)(TPORT_TYPE_Q8_K, x, v, N);
        t->from_float(x, ref, N);
        bad += memcmp(v, ref, BYTES) != 0;
    }
    CHECK(!bad, "q8_K: %d of 300 rows differ from the reference quantizer's bytes", bad);
    printf("q8_K: 300 rows, the vector version equals the reference byte for byte\n");
}

int main(void) {
    if (!simd_usable())
        test_skip("test_quant_act_q8", "this CPU lacks the instruction set");
    const tport_type_id types[2] = {TPORT_TYPE_Q8_0, TPORT_TYPE_Q8_1};
    for (int i = 0; i < 2; i++) {
        test_halves(types[i]);
        test_zero(types[i]);
        test_random(types[i]);
    }
    test_q8_K();
    uint8_t y[34];
    const float x[32] = {1};
    CHECK(!CPUQ(quantize_act)(TPORT_TYPE_Q4_0, x, y, 32), "q4_0 accepted");
    CHECK(!CPUQ(quantize_act_scalar)(TPORT_TYPE_Q8_0, x, y, 31), "n = 31 accepted");
    return test_finish("test_quant_act_q8");
}
