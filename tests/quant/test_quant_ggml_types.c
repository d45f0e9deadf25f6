/* The types of issue 39 that ggml's libggml-base exports functions for
 * (IQ2_XXS .. Q2_0, data/ggml_types/ggml_types.h): tensorport's dequantizers
 * are bit-exact with ggml's dequantize_row_<t>, and its quantizers byte-exact
 * with ggml's: TQ1_0, TQ2_0, NVFP4, Q1_0, Q2_0, IQ3_XXS, IQ3_S, IQ2_S with
 * quantize_row_<t>_ref and with quantize_<t> given importance weights
 * (which TQ*, NVFP4, Q1_0 and Q2_0 ignore); IQ2_XXS, IQ2_XS and IQ1_S,
 * which ggml quantizes only with weights, with quantize_<t>; IQ1_M, which
 * has no _ref, with quantize_iq1_m without and with weights:
 *   - against the committed vectors of data/ggml_types (made by
 *     gen_ggml_types.c through node-llama-cpp's libggml-base.so);
 *   - against ggml live when TPORT_NODE_LLAMA_CPP names a node-llama-cpp
 *     install: 32x more blocks, a sweep of row magnitudes, every NVFP4
 *     scale byte.
 * Plus hand-built facts that do not need ggml (TQ1_0's base-3 bytes,
 * UE4M3 scales, Q1_0/Q2_0 codes, I64 and F64). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "data/ggml_types/ggml_types.h"
#include "quant/quant_rows.h"
#include "quant/type_table.h"

static int read_exact(const char *path, void *buf, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    const size_t got = fread(buf, 1, n + 1, f);
    fclose(f);
    return got == n;
}

static int read_data(const char *name, const char *ext, void *buf, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s", TPORT_QUANT_TEST_DATA, name, ext);
    const int ok = read_exact(path, buf, n);
    CHECK(ok, "cannot read %s (%zu bytes)", path, n);
    return ok;
}

/* First differing float index, or -1 (bits compared: -0.0 is not 0.0). */
static long first_diff(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0)
            return (long)i;
    return -1;
}

static const tport_type_traits *row_of(const gt_type *t) {
    const tport_type_traits *tr = tport_traits((tport_type_id)t->id);
    CHECK(tr && !strcmp(tr->info.name, t->name) && tr->info.block_size == t->block &&
              tr->info.block_bytes == (uint64_t)t->bytes && tr->to_float && (tr->from_float != NULL) == (t->quantizer == 1 || t->quantizer == 3),
          "%s: the type table row disagrees with ggml-common.h", t->name);
    return tr && tr->to_float ? tr : NULL;
}

/* Quantizes rows of GT_ROW with tensorport, given the row's importance
 * weights w (NULL: none; the types other than IQ3_XXS ignore them, as
 * ggml's quantize_<t> do); blocks that differ from want. */
static int compare_quant(const tport_type_traits *tr, const float *x, int rows, const uint8_t *want, const float *w) {
    static uint8_t q[GT_ROW * 2];
    const size_t rb = (size_t)(GT_ROW / tr->info.block_size) * (size_t)tr->info.block_bytes;
    int bad = 0;
    for (int r = 0; r < rows; r++) {
        if (w && tr->info.id == TPORT_TYPE_IQ3_XXS)
            tport_quant_iq3_xxs_weighted(x + (size_t)r * GT_ROW, q, GT_ROW, w);
        else if (tr->info.id == TPORT_TYPE_IQ2_XXS)
            tport_quant_iq2_xxs_weighted(x + (size_t)r * GT_ROW, q, GT_ROW, w);
        else if (w && tr->info.id == TPORT_TYPE_IQ1_M)
            tport_quant_iq1_m_weighted(x + (size_t)r * GT_ROW, q, GT_ROW, w);
        else if (tr->info.id == TPORT_TYPE_IQ1_S)
            tport_quant_iq1_s_weighted(x + (size_t)r * GT_ROW, q, GT_ROW, w);
        else if (tr->info.id == TPORT_TYPE_IQ2_XS)
            tport_quant_iq2_xs_weighted(x + (size_t)r * GT_ROW, q, GT_ROW, w);
        else if (w && tr->info.id == TPORT_TYPE_IQ2_S)
            tport_quant_iq2_s_weighted(x + (size_t)r * GT_ROW, q, GT_ROW, w);
        else if (w && tr->info.id == TPORT_TYPE_IQ3_S)
            tport_quant_iq3_s_weighted(x + (size_t)r * GT_ROW, q, GT_ROW, w);
        else
            tr->from_float(x + (size_t)r * GT_ROW, q, GT_ROW);
        for (size_t b = 0; b < rb; b += tr->info.block_bytes)
            bad += memcmp(q + b, want + r * rb + b, (size_t)tr->info.block_bytes) != 0;
    }
    return bad;
}

static void test_vectors(void) {
    static float x[GT_N], committed[GT_N], want[GT_BLOCKS_BYTES * 8], got[GT_BLOCKS_BYTES * 8], w[GT_ROW];
    gt_fill_weights(w);
    static uint8_t blocks[GT_BLOCKS_BYTES], gen[GT_BLOCKS_BYTES], q[GT_N * 2];
    gt_fill_input(x);
    if (read_data("input", ".f32", committed, sizeof committed))
        CHECK(!memcmp(x, committed, sizeof x), "gt_fill_input no longer gives input.f32");
    for (int k = 0; k < GT_NTYPES; k++) {
        const gt_type *t = &gt_types[k];
        const tport_type_traits *tr = row_of(t);
        const int nb = GT_BLOCKS_BYTES / t->bytes;
        const size_t n = (size_t)nb * (size_t)t->block;
        if (!tr || !read_data(t->name, ".blocks", blocks, (size_t)nb * (size_t)t->bytes) ||
            !read_data(t->name, ".deq.f32", want, n * sizeof(float)))
            continue;
        gt_fill_blocks(t, gen, nb, 0x51ED270Bu + (uint32_t)t->id);
        CHECK(!memcmp(gen, blocks, (size_t)nb * (size_t)t->bytes), "%s: gt_fill_blocks no longer gives .blocks",
              t->name);
        tr->to_float(blocks, got, (int64_t)n);
        const long d = first_diff(got, want, n);
        CHECK(d < 0, "%s: dequantized [%ld] = %a, ggml %a", t->name, d, d < 0 ? 0.0 : (double)got[d],
              d < 0 ? 0.0 : (double)want[d]);
        if (!t->quantizer)
            continue;
        const size_t rb = (size_t)(GT_ROW / t->block) * (size_t)t->bytes;
        if (t->quantizer != 2 && read_data(t->name, ".q", q, GT_ROWS * rb)) {
            const int bad = compare_quant(tr, x, GT_ROWS, q, NULL);
            CHECK(bad == 0, "%s: %d blocks differ from quantize_row_%s_ref's", t->name, bad, t->name);
        }
        if (read_data(t->name, ".qw", q, GT_ROWS * rb)) {
            const int bad = compare_quant(tr, x, GT_ROWS, q, w);
            CHECK(bad == 0, "%s: %d blocks differ from quantize_%s's with weights", t->name, bad, t->name);
        }
    }
}

/* Rows whose magnitude sweeps 2^-30 .. 2^17 (and a few zero rows). */
static void sweep_rows(float *x, int rows, uint32_t seed) {
    uint32_t s = seed;
    for (int r = 0; r < rows; r++) {
        const int e = r % 50 == 49 ? -200 : r % 48 - 30;
        for (int i = 0; i < GT_ROW; i++)
            x[(size_t)r * GT_ROW + i] = e == -200 ? 0.0f : ldexpf(gt_uniform(&s), e);
    }
}

static void test_live(void) {
    gt_ggml g;
    char why[1200];
    if (!gt_ggml_open(getenv("TPORT_NODE_LLAMA_CPP"), &g, why, sizeof why)) {
        printf("test_quant_ggml_types: live ggml comparison skipped (%s)\n", why);
        return;
    }
    enum { LIVE_BYTES = 32 * GT_BLOCKS_BYTES, SWEEP_ROWS = 200 };
    static uint8_t blocks[LIVE_BYTES], q[SWEEP_ROWS * GT_ROW];
    static float want[LIVE_BYTES * 8], got[LIVE_BYTES * 8], x[SWEEP_ROWS * GT_ROW], w[GT_ROW];
    gt_fill_weights(w);
    for (int k = 0; k < GT_NTYPES; k++) {
        const gt_type *t = &gt_types[k];
        const tport_type_traits *tr = row_of(t);
        gt_dequant_fn deq = (gt_dequant_fn)(uintptr_t)gt_sym(&g, "dequantize_row_", t->name, "");
        CHECK(deq != NULL, "ggml has no dequantize_row_%s", t->name);
        if (!tr || !deq)
            continue;
        const int nb = LIVE_BYTES / t->bytes;
        const size_t n = (size_t)nb * (size_t)t->block;
        gt_fill_blocks(t, blocks, nb, 0xC0FFEEu + (uint32_t)t->id);
        if (t->id == TPORT_TYPE_NVFP4) /* every UE4M3 byte, in every sub-block position */
            for (int b = 0; b < nb; b++)
                for (int s = 0; s < 4; s++)
                    blocks[(size_t)b * 36 + s] = (uint8_t)(b * 4 + s + b / 64);
        deq(blocks, want, (int64_t)n);
        tr->to_float(blocks, got, (int64_t)n);
        const long d = first_diff(got, want, n);
        CHECK(d < 0, "%s live: dequantized [%ld] = %a, ggml %a", t->name, d, d < 0 ? 0.0 : (double)got[d],
              d < 0 ? 0.0 : (double)want[d]);
        int bad_ref = 0, bad_w = 0;
        if (t->quantizer) {
            gt_quant_ref_fn ref = (gt_quant_ref_fn)(uintptr_t)gt_sym(&g, "quantize_row_", t->name, "_ref");
            gt_quantize_fn qz = (gt_quantize_fn)(uintptr_t)gt_sym(&g, "quantize_", t->name, "");
            CHECK((ref || t->quantizer >= 2) && qz, "ggml has no quantizer for %s", t->name);
            if ((!ref && t->quantizer == 1) || !qz)
                continue;
            sweep_rows(x, SWEEP_ROWS, 0xABCDu + (uint32_t)t->id);
            const size_t rb = (size_t)(GT_ROW / t->block) * (size_t)t->bytes;
            if (t->quantizer == 1) {
                for (int r = 0; r < SWEEP_ROWS; r++)
                    ref(x + (size_t)r * GT_ROW, q + r * rb, GT_ROW);
                bad_ref = compare_quant(tr, x, SWEEP_ROWS, q, NULL);
            } else if (t->quantizer == 3) {
                qz(x, q, SWEEP_ROWS, GT_ROW, NULL);
                bad_ref = compare_quant(tr, x, SWEEP_ROWS, q, NULL);
            }
            qz(x, q, SWEEP_ROWS, GT_ROW, w);
            bad_w = compare_quant(tr, x, SWEEP_ROWS, q, w);
            CHECK(bad_ref == 0 && bad_w == 0, "%s live: %d / %d blocks differ from ggml's (ref / weighted)",
                  t->name, bad_ref, bad_w);
        }
        printf("%-8s live against ggml: %d blocks dequantize %s%s\n", t->name, nb, d < 0 ? "bit-exact" : "DIFFERENTLY",
               !t->quantizer                ? ""
               : bad_ref || bad_w           ? "; quantize DIFFERENTLY"
               : t->quantizer == 2          ? "; quantize byte-exact (weighted; ggml has no other)"
               : t->quantizer == 3          ? "; quantize byte-exact (unweighted quantize_<t> and weighted)"
                                            : "; quantize byte-exact (ref and weighted)");
    }
}

/* TQ1_0 stores ceil(v * 256 / 243) for v = 5 trits in base 3 (the first
 * element the most significant); TQ2_0 2-bit codes; Q1_0 signs; Q2_0
 * codes; NVFP4's UE4M3 scale; I64 and F64. */
static void test_hand_built(void) {
    const tport_type_traits *tq1 = tport_traits(TPORT_TYPE_TQ1_0), *q1 = tport_traits(TPORT_TYPE_Q1_0),
                            *q2 = tport_traits(TPORT_TYPE_Q2_0), *nv = tport_traits(TPORT_TYPE_NVFP4),
                            *i64 = tport_traits(TPORT_TYPE_I64), *f64 = tport_traits(TPORT_TYPE_F64);
    if (!tq1 || !q1 || !q2 || !nv || !i64 || !f64) {
        CHECK(0, "a type row is missing");
        return;
    }
    uint8_t b[64] = {0};
    float y[256];
    for (int v = 0; v < 243; v++) {
        b[0] = (uint8_t)((v * 256 + 242) / 243);
        b[52] = 0x00, b[53] = 0x3c; /* d = 1 */
        tq1->to_float(b, y, 256);
        int digits[5], r = v;
        for (int n = 4; n >= 0; n--, r /= 3)
            digits[n] = r % 3;
        for (int n = 0; n < 5; n++)
            CHECK(y[32 * n] == (float)(digits[n] - 1), "tq1_0 byte for %d: trit %d decodes to %g", v, n,
                  (double)y[32 * n]);
    }
    memset(b, 0, sizeof b);
    b[0] = 0x00, b[1] = 0x40; /* d = 2 */
    b[2] = 0xA5;              /* elements 0..7: + - + - - + - + */
    q1->to_float(b, y, 128);
    CHECK(y[0] == 2 && y[1] == -2 && y[2] == 2 && y[5] == 2 && y[6] == -2 && y[7] == 2 && y[8] == -2, "q1_0 signs");
    b[2] = 0xE4; /* codes 0 1 2 3 */
    q2->to_float(b, y, 64);
    CHECK(y[0] == -2 && y[1] == 0 && y[2] == 2 && y[3] == 4 && y[4] == -2, "q2_0 codes");
    memset(b, 0, sizeof b);
    b[0] = 0x38; /* UE4M3 1.0, halved like the doubled codes: code 0x7 (12/2 = 6) is 6.0 */
    b[1] = 0x7f; /* NaN: 0 */
    b[2] = 0x01; /* smallest subnormal 2^-9 */
    b[3] = 0x7e; /* 448 */
    for (int s = 0; s < 4; s++)
        b[4 + 8 * s] = 0x07;
    nv->to_float(b, y, 64);
    CHECK(y[0] == 6.0f && y[16] == 0.0f && y[32] == 6.0f * 0x1p-9f && y[48] == 6.0f * 448.0f, "nvfp4 scales: %g %g %g %g",
          (double)y[0], (double)y[16], (double)y[32], (double)y[48]);
    const int64_t iv[3] = {-5, INT64_C(1) << 40, 7};
    i64->to_float(iv, y, 3);
    CHECK(y[0] == -5.0f && y[1] == 0x1p40f && y[2] == 7.0f, "i64");
    const double dv[3] = {0.1, -1e300, 3.0};
    f64->to_float(dv, y, 3);
    CHECK(y[0] == 0.1f && y[1] == -INFINITY && y[2] == 3.0f, "f64");
}

int main(void) {
    test_hand_built();
    test_vectors();
    test_live();
    return test_finish("test_quant_ggml_types");
}
