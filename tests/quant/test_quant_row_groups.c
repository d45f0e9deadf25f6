/* The removed row-grouped types (src/quant/row_groups.h): Q4_0 and IQ4_NL
 * data interleaved here exactly as ggml did it (this file's own code,
 * following ggml-aarch64.c of fcf83895: make_block_q4_0x4/x8 byte by byte
 * and quantize_q4_0_nr_bl's order of groups and blocks; IQ4_NL_4_4 as
 * repack_iq4_nl_to_iq4_nl_4_bl of bb693904, which used the same formula
 * without the xor) re-encode to the original bytes bit for bit; the
 * conversion kinds, shapes that are refused, and the bytes real ggml wrote
 * (data/row_groups, see its README). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "row_group_interleave.h"
#include "quant/convert.h"
#include "quant/row_groups.h"
#include "quant/type_table.h"
#include "tport/tport.h"


static unsigned long long rng = 0x2545F4914F6CDD1DULL;

static const struct {
    tport_type_id id, base;
    int R, bsi;
    uint8_t xor_mask;
} layouts[] = {
    {TPORT_TYPE_Q4_0_4_4, TPORT_TYPE_Q4_0, 4, 4, 0x88},
    {TPORT_TYPE_Q4_0_4_8, TPORT_TYPE_Q4_0, 4, 8, 0x88},
    {TPORT_TYPE_Q4_0_8_8, TPORT_TYPE_Q4_0, 8, 8, 0x88},
    {TPORT_TYPE_IQ4_NL_4_4, TPORT_TYPE_IQ4_NL, 4, 4, 0x00},
};
#define N_LAYOUTS (int)(sizeof layouts / sizeof layouts[0])

/* Interleave quantized random rows; the re-encoding gives them back, and
 * every lossless or lossy conversion equals that of the base type. */
static void test_lossless(void) {
    enum { NE0 = 256, ROWS = 16, NB = NE0 / QK, BYTES = ROWS * NB * BB };
    static float x[NE0 * ROWS], a[NE0 * ROWS], b[NE0 * ROWS];
    static uint8_t base[BYTES], grouped[BYTES], back[BYTES], via[NE0 * ROWS * 4], direct[NE0 * ROWS * 4];
    for (int l = 0; l < N_LAYOUTS; l++) {
        const tport_type_traits *bt = tport_traits(layouts[l].base), *gt = tport_traits(layouts[l].id);
        for (int i = 0; i < NE0 * ROWS; i++)
            x[i] = test_rng_uniform(&rng) * (float)(1 + i % 7);
        bt->from_float(x, base, NE0 * ROWS);
        interleave(base, NE0, ROWS, layouts[l].R, layouts[l].bsi, layouts[l].xor_mask, grouped);
        CHECK(memcmp(grouped, base, BYTES) != 0, "%s: interleaving changed nothing", gt->info.name);
        tport_convert_report rep;
        memset(back, 0xA5, sizeof back);
        CHECK(tport_convert_rows(gt->info.id, grouped, bt->info.id, back, NE0, ROWS, &rep) == TPORT_STATUS_OK,
              "%s -> %s", gt->info.name, bt->info.name);
        CHECK(memcmp(back, base, BYTES) == 0, "%s -> %s: not the original bytes", gt->info.name, bt->info.name);
        CHECK(rep.kind == TPORT_CONV_LOSSLESS && rep.n == NE0 * ROWS && rep.rmse == 0, "%s: report",
              gt->info.name);
        /* through the base type: f32 (lossless) and q8_0 (lossy) */
        const tport_type_id others[] = {TPORT_TYPE_F32, TPORT_TYPE_Q8_0};
        for (int k = 0; k < 2; k++) {
            tport_convert_report r1, r2;
            CHECK(tport_convert_rows(gt->info.id, grouped, others[k], via, NE0, ROWS, &r1) == TPORT_STATUS_OK &&
                      tport_convert(bt->info.id, base, others[k], direct, NE0 * ROWS, &r2) == TPORT_STATUS_OK,
                  "%s -> %u", gt->info.name, others[k]);
            CHECK(memcmp(via, direct, (size_t)tport_row_size(others[k], NE0) * ROWS) == 0 && r1.kind == r2.kind &&
                      r1.rmse == r2.rmse, "%s -> %u differs from %s's", gt->info.name, others[k], bt->info.name);
        }
        bt->to_float(base, a, NE0 * ROWS);
        CHECK(tport_convert_rows(gt->info.id, grouped, TPORT_TYPE_F32, b, NE0, ROWS, NULL) == TPORT_STATUS_OK &&
                  memcmp(a, b, sizeof a) == 0, "%s -> f32: values differ", gt->info.name);
        CHECK(tport_conversion_kind(gt->info.id, bt->info.id) == TPORT_CONV_LOSSLESS &&
                  tport_conversion_kind(bt->info.id, gt->info.id) == TPORT_CONV_IMPOSSIBLE &&
                  tport_conversion_kind(gt->info.id, gt->info.id) == TPORT_CONV_IDENTITY,
              "%s: kinds", gt->info.name);
    }
}

/* What is refused, with a message: rows that are not whole groups, rows
 * that are not whole blocks, a run of elements (no row length), overlap. */
static void test_refused(void) {
    static uint8_t src[8 * 8 * BB], dst[8 * 8 * BB];
    for (int l = 0; l < N_LAYOUTS; l++) {
        const tport_type_id g = layouts[l].id, base = layouts[l].base;
        const int R = layouts[l].R;
        CHECK(tport_convert_rows(g, src, base, dst, 64, R + 2, NULL) == TPORT_STATUS_BAD_FORMAT &&
                  strstr(tport_last_error(), "groups of"), "%u: %d rows accepted", g, R + 2);
        CHECK(tport_convert_rows(g, src, base, dst, 48, R, NULL) == TPORT_STATUS_BAD_FORMAT, "%u: ne0 48", g);
        CHECK(tport_convert_rows(g, src, base, dst, 0, R, NULL) == TPORT_STATUS_BAD_FORMAT, "%u: ne0 0", g);
        CHECK(tport_convert(g, src, base, dst, 64 * R, NULL) == TPORT_STATUS_UNSUPPORTED, "%u: by elements", g);
        CHECK(tport_convert_rows(g, src, base, src, 64, R, NULL) == TPORT_STATUS_INVALID_ARGUMENT, "%u: overlap", g);
        CHECK(tport_convert_rows(g, src, base, dst, INT64_MAX / 2, R, NULL) != TPORT_STATUS_OK, "%u: huge", g);
        CHECK(tport_convert_rows(g, src, base, dst, 64, -R, NULL) != TPORT_STATUS_OK, "%u: negative", g);
    }
}

static long read_file(const char *path, void *buf, long cap) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    long n = (long)fread(buf, 1, (size_t)cap, f);
    fclose(f);
    return n;
}

/* The bytes ggml fcf83895's quantize_q4_0_4x4/4x8/8x8 and bb693904's
 * IQ4_NL_4_4 repack wrote (data/row_groups):
 * this file's interleave of ggml's own Q4_0 bytes reproduces them, the
 * re-encoding turns them back into those Q4_0 bytes, and (when the shared
 * input is here) tensorport's Q4_0 quantizer makes the same Q4_0 bytes. */
static void test_ggml_vectors(void) {
    static const struct {
        const char *file, *q4_0;
        tport_type_id id;
        int64_t ne0, rows;
        int l;
    } vec[] = {
        {"q4_0_4x4.4x256.q", "q4_0.4x256.q", TPORT_TYPE_Q4_0_4_4, 256, 4, 0},
        {"q4_0_4x8.4x256.q", "q4_0.4x256.q", TPORT_TYPE_Q4_0_4_8, 256, 4, 1},
        {"q4_0_8x8.8x128.q", "q4_0.8x128.q", TPORT_TYPE_Q4_0_8_8, 128, 8, 2},
        /* bb693904's runtime repack of ggml's IQ4_NL bytes (README) */
        {"iq4_nl_4x4.4x256.q", "iq4_nl.4x256.q", TPORT_TYPE_IQ4_NL_4_4, 256, 4, 3},
    };
    enum { BYTES = 1024 / QK * BB };
    static uint8_t ggml_g[BYTES + 1], ggml_q[BYTES + 1], mine[BYTES], back[BYTES];
    static float in[1024];
    char path[1024], shared[1024];
    const bool have_input = test_shared_path("testdata/quant-current/input_4x256.f32", shared, sizeof shared) &&
                            read_file(shared, in, sizeof in) == (long)sizeof in;
    for (size_t v = 0; v < sizeof vec / sizeof vec[0]; v++) {
        snprintf(path, sizeof path, "%s/%s", TPORT_QUANT_TEST_DATA, vec[v].file);
        CHECK(read_file(path, ggml_g, sizeof ggml_g) == BYTES, "%s: not %d bytes", path, BYTES);
        snprintf(path, sizeof path, "%s/%s", TPORT_QUANT_TEST_DATA, vec[v].q4_0);
        CHECK(read_file(path, ggml_q, sizeof ggml_q) == BYTES, "%s: not %d bytes", path, BYTES);
        const int l = vec[v].l;
        interleave(ggml_q, vec[v].ne0, vec[v].rows, layouts[l].R, layouts[l].bsi, layouts[l].xor_mask, mine);
        CHECK(memcmp(mine, ggml_g, BYTES) == 0, "%s: ggml interleaved otherwise", vec[v].file);
        CHECK(tport_convert_rows(vec[v].id, ggml_g, layouts[l].base, back, vec[v].ne0, vec[v].rows, NULL) ==
                      TPORT_STATUS_OK && memcmp(back, ggml_q, BYTES) == 0,
              "%s: not re-encoded to ggml's %s bytes", vec[v].file, vec[v].q4_0);
        /* ggml's IQ4_NL quantizer leaves the nibbles of an all-zero group
         * undefined (data/iq4/README.md): compare only Q4_0 */
        if (have_input && layouts[l].base == TPORT_TYPE_Q4_0) {
            tport_traits(TPORT_TYPE_Q4_0)->from_float(in, mine, 1024);
            CHECK(memcmp(mine, ggml_q, BYTES) == 0, "%s: tensorport's q4_0 differs", vec[v].q4_0);
        }
    }
    if (!have_input)
        printf("test_quant_row_groups: ../shared/testdata absent; tensorport's own q4_0 not compared\n");
}

int main(void) {
    test_lossless();
    test_refused();
    test_ggml_vectors();
    return test_finish("test_quant_row_groups");
}
