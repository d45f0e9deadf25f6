/* Every quantized type: round-trip error bounds, blocks independent of each
 * other (odd block counts), all-zero blocks, and NaN/Inf inputs.
 *
 * What ggml's reference quantizers do with special values (x86-64), and so
 * what ours do:
 *  - all-zero block: scale 0, every quant the zero point; decodes to +0.
 *  - NaN: comparisons with NaN are false, so a NaN never becomes the block
 *    maximum; the scale comes from the other elements.  The NaN element's
 *    quant is the float->int conversion of NaN, which x86 gives as
 *    INT32_MIN, i.e. 0 after narrowing: Q8_0 decodes it as 0, Q4_0 as -8*d.
 *  - Inf becomes the maximum: d = Inf (stored as f16 Inf), id = 1/Inf = 0,
 *    every quant is the zero point (Inf*0 = NaN -> 0), and decoding yields
 *    NaN (0*Inf).
 *  - k-quants and IQ4 with NaN/Inf give unspecified bytes upstream; we only
 *    require no crash/UB and that other blocks of the row are unaffected. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "quant/type_table.h"

#define N 4096

static unsigned long long rng = 42;

/* Bits per quant (not per weight): the resolution of each type's grid. */
static int quant_bits(const tport_type_traits *t) {
    const char *f = t->family;
    if (!strcmp(f, "q2_K")) return 2;
    if (!strcmp(f, "q3_K")) return 3;
    if (!strncmp(f, "q5", 2)) return 5;
    if (!strcmp(f, "q6_K")) return 6;
    if (!strncmp(f, "q8", 2)) return 8;
    /* E2M1 codes: 8 magnitudes a side, spaced like a float (coarsest at the
     * top), under a power-of-two scale that can clip the top quarter of a
     * block (amax just under 2^k gets codes up to 0.75 * 2^k): no better
     * than a 3-bit uniform grid */
    if (!strcmp(f, "mxfp4") || !strcmp(f, "nvfp4")) return 3;
    /* 8 levels, but 4 at a time from a 256-entry grid (of 4096 points) */
    if (!strncmp(f, "iq3", 3)) return 3;
    if (!strncmp(f, "iq2", 3)) return 2;
    if (!strncmp(f, "iq1", 3)) return 1;
    /* ternary (TQ1_0, TQ2_0; Q2_0's fourth code, 2d, is never chosen
     * since d = amax) and Q1_0's two signs times the mean |x| */
    if (!strcmp(f, "tq1_0") || !strcmp(f, "tq2_0") || !strcmp(f, "q1_0") || !strcmp(f, "q2_0")) return 1;
    return 4;
}

static void test_round_trip(void) {
    static float x[N], y[N];
    static uint8_t q[N * 4];
    for (int i = 0; i < N; i++)
        x[i] = test_rng_uniform(&rng);
    for (int k = 0; k < tport_traits_count(); k++) {
        const tport_type_traits *t = tport_traits_at(k);
        if (!t->info.is_quantized || !t->from_float)
            continue;
        t->from_float(x, q, N);
        t->to_float(q, y, N);
        double ss = 0;
        for (int i = 0; i < N; i++)
            ss += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
        const double rmse = sqrt(ss / N);
        /* Values span [-1, 1): a grid of 2^b levels has step 2/2^b and a
         * uniform quantizer's rmse is step/sqrt(12); allow 2x that. */
        const double step = 2.0 / (double)(1 << quant_bits(t));
        const double bound = 2.0 * step / sqrt(12.0);
        CHECK(rmse < bound && rmse > 0, "%s: round-trip rmse %g, bound %g", t->info.name, rmse, bound);
        printf("%-10s rmse %.6f (bound %.6f)\n", t->info.name, rmse, bound);
    }
}

/* Quantizing 3 blocks at once equals quantizing them one by one. */
static void test_blocks_independent(void) {
    static float x[3 * 256];
    static uint8_t all[3 * 300], one[300];
    for (int i = 0; i < 3 * 256; i++)
        x[i] = test_rng_uniform(&rng) * (float)(1 + i / 256);
    for (int k = 0; k < tport_traits_count(); k++) {
        const tport_type_traits *t = tport_traits_at(k);
        if (!t->from_float)
            continue;
        const int64_t bs = t->info.block_size, bb = (int64_t)t->info.block_bytes;
        const int64_t nblk = 3 * (bs >= 32 ? 1 : 2); /* an odd number of 32-element units */
        const int64_t n = nblk * bs;
        if (n > 3 * 256 || nblk * bb > (int64_t)sizeof all)
            continue;
        t->from_float(x, all, n);
        for (int64_t b = 0; b < nblk; b++) {
            t->from_float(x + b * bs, one, bs);
            CHECK(memcmp(all + b * bb, one, (size_t)bb) == 0, "%s: block %lld depends on its neighbours",
                  t->info.name, (long long)b);
        }
    }
}

static void test_zero_blocks(void) {
    static float x[512], y[512];
    static uint8_t q[2048];
    for (int k = 0; k < tport_traits_count(); k++) {
        const tport_type_traits *t = tport_traits_at(k);
        if (!t->from_float)
            continue;
        memset(x, 0, sizeof x);
        for (int i = 0; i < 512; i++)
            y[i] = 1.0f;
        t->from_float(x, q, 512);
        t->to_float(q, y, 512);
        int bad = 0;
        for (int i = 0; i < 512; i++)
            bad += y[i] != 0.0f;
        CHECK(bad == 0, "%s: all-zero input decodes to %d non-zeros", t->info.name, bad);
    }
}

static void test_nan_inf_legacy(void) {
    float x[32], y[32];
    uint8_t q[40];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 10) / 16.0f;
    x[5] = NAN;
    const tport_type_traits *q8 = tport_traits(TPORT_TYPE_Q8_0), *q4 = tport_traits(TPORT_TYPE_Q4_0);
    q8->from_float(x, q, 32);
    q8->to_float(q, y, 32);
    CHECK(y[5] == 0.0f, "q8_0: NaN element decodes to %g, ggml gives 0", (double)y[5]);
    for (int i = 0; i < 32; i++)
        if (i != 5)
            CHECK(fabsf(y[i] - x[i]) <= (21.0f / 16 / 127) / 2 * 1.01f, "q8_0 [%d] %g vs %g", i, (double)y[i],
                  (double)x[i]);
    q4->from_float(x, q, 32);
    q4->to_float(q, y, 32);
    const float d4 = tport_fp16_to_fp32((uint16_t)(q[0] | q[1] << 8));
    CHECK(d4 == tport_fp16_to_fp32(tport_fp32_to_fp16((21.0f / 16) / -8)), "q4_0 scale ignores the NaN");
    CHECK(y[5] == -8 * d4, "q4_0: NaN element decodes to %g, ggml gives -8*d", (double)y[5]);

    x[5] = -INFINITY;
    q8->from_float(x, q, 32);
    CHECK((q[0] | q[1] << 8) == 0x7c00, "q8_0: Inf block scale %04x, want f16 +Inf", q[0] | q[1] << 8);
    int zeros = 0;
    for (int i = 0; i < 32; i++)
        zeros += q[2 + i] == 0;
    CHECK(zeros == 32, "q8_0: Inf block has %d zero quants, want 32", zeros);
    q8->to_float(q, y, 32);
    CHECK(isnan(y[0]) && isnan(y[5]), "q8_0: Inf block decodes to NaN");
}

/* NaN/Inf in block 0 must not change block 1 (and must not be UB). */
static void test_nan_inf_isolated(void) {
    static float x[512];
    static uint8_t a[2048], b[2048];
    for (int k = 0; k < tport_traits_count(); k++) {
        const tport_type_traits *t = tport_traits_at(k);
        if (!t->from_float || !t->info.is_quantized)
            continue;
        const int64_t bs = t->info.block_size, bb = (int64_t)t->info.block_bytes;
        for (int special = 0; special < 3; special++) {
            for (int i = 0; i < 2 * bs; i++)
                x[i] = test_rng_uniform(&rng);
            x[3] = special == 0 ? NAN : special == 1 ? INFINITY : -INFINITY;
            if (special == 0)
                x[bs - 1] = NAN;
            t->from_float(x, a, 2 * bs);
            t->from_float(x + bs, b, bs);
            CHECK(memcmp(a + bb, b, (size_t)bb) == 0, "%s: special value leaks into the next block",
                  t->info.name);
            static float y[512];
            t->to_float(a, y, 2 * bs); /* must not crash */
        }
    }
}

int main(void) {
    test_round_trip();
    test_blocks_independent();
    test_zero_blocks();
    test_nan_inf_legacy();
    test_nan_inf_isolated();
    return test_finish("test_quant_roundtrip");
}
