/* MXFP4: hand-built blocks decode as the public layout says; the reference
 * quantizer and dequantizer are bit-exact with ggml's on the vectors of
 * data/mxfp4 (made by data/mxfp4/gen_mxfp4.c); and, when node-llama-cpp is
 * installed (TPORT_NODE_LLAMA_CPP), against ggml's functions live, on those
 * inputs and on a sweep of block magnitudes over the whole float range. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "data/mxfp4/mxfp4_ggml.h"
#include "quant/type_table.h"

static const int8_t kvalues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static int read_exact(const char *path, void *buf, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    const size_t got = fread(buf, 1, n + 1, f);
    fclose(f);
    return got == n;
}

static const tport_type_traits *mxfp4(void) { return tport_traits(TPORT_TYPE_MXFP4); }

/* e = 128 is scale 1 (the doubled E2M1 values as they are), e = 0 and 1 the
 * two subnormal scales, e = 254 the largest normal one. */
static void test_hand_built(void) {
    const tport_type_traits *t = mxfp4();
    CHECK(t && t->info.block_size == 32 && t->info.block_bytes == 17 && t->info.vec_dot_type == TPORT_TYPE_Q8_0,
          "mxfp4 row");
    if (!t)
        return;
    static const struct {
        uint8_t e;
        float scale;
    } cases[] = {{128, 1.0f}, {127, 0.5f}, {0, 0x1p-128f}, {1, 0x1p-127f}, {2, 0x1p-126f}, {254, 0x1p126f}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        uint8_t b[17];
        b[0] = cases[c].e;
        for (int j = 0; j < 16; j++)
            b[1 + j] = (uint8_t)(j | (15 - j) << 4);
        float y[32];
        t->to_float(b, y, 32);
        for (int j = 0; j < 16; j++) {
            CHECK(y[j] == cases[c].scale * kvalues[j], "e=%u [%d] = %g", b[0], j, (double)y[j]);
            CHECK(y[j + 16] == cases[c].scale * kvalues[15 - j], "e=%u [%d] = %g", b[0], j + 16, (double)y[j + 16]);
        }
    }
}

/* Quantizes rows of 256 with tensorport; how many blocks differ from want. */
static int compare_quant(const float *x, const uint8_t *want, int rows, const char *what) {
    static uint8_t q[4096 * MX_BYTES];
    const int nb = rows * (MX_ROW / MX_BLOCK);
    for (int r = 0; r < rows; r++)
        mxfp4()->from_float(x + r * MX_ROW, q + r * (MX_ROW / MX_BLOCK) * MX_BYTES, MX_ROW);
    int bad = 0;
    for (int b = 0; b < nb; b++)
        if (memcmp(q + b * MX_BYTES, want + b * MX_BYTES, MX_BYTES) != 0 && bad++ == 0)
            fprintf(stderr, "%s: first differing block %d (e %u, ggml %u)\n", what, b, q[b * MX_BYTES],
                    want[b * MX_BYTES]);
    return bad;
}

static void test_vectors(void) {
    static float x[MX_N], want_deq[MX_N], deq[MX_N];
    static uint8_t want[MX_N / MX_BLOCK * MX_BYTES];
    char path[1024];
    snprintf(path, sizeof path, "%s/input.f32", TPORT_QUANT_TEST_DATA);
    CHECK(read_exact(path, x, sizeof x), "cannot read %s", path);
    snprintf(path, sizeof path, "%s/mxfp4.q", TPORT_QUANT_TEST_DATA);
    CHECK(read_exact(path, want, sizeof want), "cannot read %s", path);
    snprintf(path, sizeof path, "%s/mxfp4.deq.f32", TPORT_QUANT_TEST_DATA);
    CHECK(read_exact(path, want_deq, sizeof want_deq), "cannot read %s", path);
    const int bad = compare_quant(x, want, MX_ROWS, "vectors");
    CHECK(bad == 0, "mxfp4: %d blocks differ from ggml's", bad);
    mxfp4()->to_float(want, deq, MX_N);
    const int deq_same = memcmp(deq, want_deq, sizeof deq) == 0;
    CHECK(deq_same, "mxfp4: dequantize differs from ggml's");
    printf("mxfp4 vectors: quantize %s, dequantize %s\n", bad ? "DIFFERS" : "bit-exact",
           deq_same ? "bit-exact" : "DIFFERS");
}

/* Rows whose blocks span the float range: block k of the sweep has its
 * largest magnitude just below, at, or just above a power of two from
 * 2^-149 to 2^127 (where log2f rounds and the exponent wraps), or at a
 * random magnitude; the other elements are that times uniform draws. */
static int sweep_input(float *x, int max_rows) {
    uint32_t s = 0x9E3779B9u;
    int nb = 0;
    const int cap = max_rows * (MX_ROW / MX_BLOCK);
    for (int k = -149; k <= 127 && nb + 3 <= cap; k++)
        for (int v = 0; v < 3; v++, nb++) {
            const float p = ldexpf(1.0f, k);
            const float top = v == 0 ? nextafterf(p, 0.0f) : v == 1 ? p : nextafterf(p, HUGE_VALF);
            for (int j = 0; j < MX_BLOCK; j++)
                x[nb * MX_BLOCK + j] = j == (k + 160) % 32 ? ((k + 160) % 2 ? -top : top) : mx_uniform(&s) * top;
        }
    for (; nb < cap; nb++) {
        const int k = (int)(mx_uniform(&s) * 138.0f) - 10; /* [-147, 127] */
        for (int j = 0; j < MX_BLOCK; j++)
            x[nb * MX_BLOCK + j] = ldexpf(mx_uniform(&s), k);
    }
    return nb / (MX_ROW / MX_BLOCK);
}

static void test_live(void) {
    mx_ggml g;
    char why[1200];
    if (!mx_ggml_open(getenv("TPORT_NODE_LLAMA_CPP"), &g, why, sizeof why)) {
        printf("test_quant_mxfp4: live ggml comparison skipped (%s)\n", why);
        return;
    }
    /* the generator's input, and ggml's bytes for it, are still the committed ones */
    static float x[128 * MX_ROW], committed[MX_N], y[128 * MX_ROW], gy[128 * MX_ROW];
    static uint8_t q[128 * MX_ROW / MX_BLOCK * MX_BYTES], want[MX_N / MX_BLOCK * MX_BYTES];
    char path[1024];
    mx_fill_input(x);
    snprintf(path, sizeof path, "%s/input.f32", TPORT_QUANT_TEST_DATA);
    CHECK(read_exact(path, committed, sizeof committed) && !memcmp(committed, x, sizeof committed),
          "mx_fill_input no longer gives input.f32");
    snprintf(path, sizeof path, "%s/mxfp4.q", TPORT_QUANT_TEST_DATA);
    CHECK(read_exact(path, want, sizeof want), "cannot read %s", path);
    for (int r = 0; r < MX_ROWS; r++)
        g.quantize(x + r * MX_ROW, q + r * (MX_ROW / MX_BLOCK) * MX_BYTES, MX_ROW);
    CHECK(!memcmp(q, want, sizeof want), "ggml's bytes for input.f32 are no longer mxfp4.q");

    const int rows = sweep_input(x, 128);
    const size_t qbytes = (size_t)rows * (MX_ROW / MX_BLOCK) * MX_BYTES;
    for (int r = 0; r < rows; r++)
        g.quantize(x + r * MX_ROW, q + r * (MX_ROW / MX_BLOCK) * MX_BYTES, MX_ROW);
    const int bad = compare_quant(x, q, rows, "sweep");
    CHECK(bad == 0, "sweep: %d of %d blocks differ from ggml's", bad, rows * 8);
    /* every scale byte with every code, decoded by both */
    for (size_t i = 0; i < qbytes; i++)
        q[i] = (uint8_t)(i % MX_BYTES == 0 ? i / MX_BYTES % 256 : i * 37 % 256);
    g.dequantize(q, gy, (int64_t)rows * MX_ROW);
    mxfp4()->to_float(q, y, (int64_t)rows * MX_ROW);
    const int deq_same = !memcmp(y, gy, (size_t)rows * MX_ROW * sizeof(float));
    CHECK(deq_same, "sweep: dequantize differs from ggml's");
    printf("mxfp4 live against ggml: %d blocks quantize %s, every scale byte dequantizes %s\n", rows * 8,
           bad ? "DIFFERENTLY" : "bit-exact", deq_same ? "bit-exact" : "DIFFERENTLY");
}

int main(void) {
    test_hand_built();
    test_vectors();
    test_live();
    return test_finish("test_quant_mxfp4");
}
