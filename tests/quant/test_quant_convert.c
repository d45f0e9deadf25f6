/* The conversion table and tport_convert: kinds for every pair of known
 * types, lossless conversions exact on random blocks, QNT1 -> current
 * equal to requantizing (formats.md 3.8), lossy conversions reporting
 * their error, and argument checking. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "quant/convert.h"
#include "quant/type_table.h"

#define N 2048 /* a multiple of every block size, and 8 rows of 256 */

static unsigned long long rng = 0x9E3779B97F4A7C15ULL;

static void random_floats(float *x, int n, float scale) {
    for (int i = 0; i < n; i++)
        x[i] = test_rng_uniform(&rng) * scale;
}

static size_t nbytes(tport_type_id t, int64_t n) {
    const tport_type_traits *tr = tport_traits(t);
    return (size_t)(n / tr->info.block_size) * tr->info.block_bytes;
}

/* Decodes n elements of type f laid out as rows of ne0: a row-grouped
 * type (no to_float of its own) through its successor. */
static void decode(const tport_type_traits *f, const void *src, float *out, int64_t ne0, int64_t n) {
    static uint8_t base[N * 8];
    if (f->to_float) {
        f->to_float(src, out, n);
        return;
    }
    CHECK(tport_convert_rows(f->info.id, src, f->successor, base, ne0, n / ne0, NULL) == TPORT_STATUS_OK,
          "%s -> its successor", f->info.name);
    tport_traits(f->successor)->to_float(base, out, n);
}

/* Lossless pairs: random source blocks, converted, decode to the same bits.
 * By rows (8 of 256), as a row-grouped type converts only whole tensors. */
static void test_lossless_pairs(void) {
    static float x[N], a[N], b[N];
    static uint8_t src[N * 8], dst[N * 8];
    int pairs = 0;
    for (int i = 0; i < tport_traits_count(); i++) {
        for (int j = 0; j < tport_traits_count(); j++) {
            const tport_type_traits *f = tport_traits_at(i), *t = tport_traits_at(j);
            if (tport_conversion_kind(f->info.id, t->info.id) != TPORT_CONV_LOSSLESS)
                continue;
            pairs++;
            random_floats(x, N, 3.0f);
            if (f->info.id == TPORT_TYPE_I32) {
                CHECK(0, "i32 must not convert losslessly");
                continue;
            }
            if (f->from_float) {
                f->from_float(x, src, N);
            } else { /* read-only layouts: random bytes are valid blocks too */
                for (size_t k = 0; k < nbytes(f->info.id, N); k++)
                    src[k] = (uint8_t)test_rng_next(&rng);
            }
            tport_convert_report rep;
            const tport_status st = tport_convert_rows(f->info.id, src, t->info.id, dst, N / 8, 8, &rep);
            CHECK(st == TPORT_STATUS_OK, "%s -> %s failed", f->info.name, t->info.name);
            decode(f, src, a, N / 8, N);
            decode(t, dst, b, N / 8, N);
            CHECK(memcmp(a, b, sizeof a) == 0, "%s -> %s is not lossless", f->info.name, t->info.name);
            CHECK(rep.kind == TPORT_CONV_LOSSLESS && rep.n == N && rep.rmse == 0 && rep.max_abs_err == 0,
                  "%s -> %s report: kind %d rmse %g", f->info.name, t->info.name, rep.kind, rep.rmse);
        }
    }
    /* 32 types -> f32 (all but f32 itself and i32: 30) plus the layout
     * re-encodings listed in formats.md 3.8 and their reverses, and the
     * row-grouped types to their base types and what those reach. */
    CHECK(pairs >= 30 + 12 + 4, "only %d lossless pairs", pairs);
}

static void test_kinds(void) {
    CHECK(tport_conversion_kind(TPORT_TYPE_Q4_0, TPORT_TYPE_Q4_0) == TPORT_CONV_IDENTITY, "identity");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q4_0_QNT0, TPORT_TYPE_Q4_0_QNT1) == TPORT_CONV_LOSSLESS, "qnt0->1");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q4_1_QNT0, TPORT_TYPE_Q4_1_QNT1) == TPORT_CONV_LOSSLESS, "q4_1");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q5_0_QNT0, TPORT_TYPE_Q5_0) == TPORT_CONV_LOSSLESS, "q5_0");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q5_1_QNT0, TPORT_TYPE_Q5_1) == TPORT_CONV_LOSSLESS, "q5_1");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q4_0_QNT1, TPORT_TYPE_Q4_0) == TPORT_CONV_LOSSY, "f32->f16 scale");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q8_0_QNT1, TPORT_TYPE_Q8_0) == TPORT_CONV_LOSSY, "q8_0 qnt1");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q8_0, TPORT_TYPE_Q8_0_QNT1) == TPORT_CONV_LOSSLESS, "q8_0 -> qnt1");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q4_2_QNT0, TPORT_TYPE_F32) == TPORT_CONV_LOSSLESS, "q4_2 -> f32");
    CHECK(tport_conversion_kind(TPORT_TYPE_Q4_2_QNT0, TPORT_TYPE_Q4_0) == TPORT_CONV_LOSSY, "q4_2 -> q4_0");
    CHECK(tport_conversion_kind(TPORT_TYPE_F16, TPORT_TYPE_BF16) == TPORT_CONV_LOSSY, "f16 -> bf16");
    CHECK(tport_conversion_kind(TPORT_TYPE_F32, TPORT_TYPE_Q4_K) == TPORT_CONV_LOSSY, "f32 -> q4_K");
    CHECK(tport_conversion_kind(TPORT_TYPE_F32, TPORT_TYPE_I32) == TPORT_CONV_IMPOSSIBLE, "-> i32");
    CHECK(tport_conversion_kind(TPORT_TYPE_F32, 9999) == TPORT_CONV_IMPOSSIBLE, "unknown");
    CHECK(tport_conversion_kind(9999, TPORT_TYPE_F32) == TPORT_CONV_IMPOSSIBLE, "unknown");
}

/* formats.md 3.8: QNT1 -> QNT2 by rounding the scales equals running
 * today's quantizer on the same floats. */
static void test_qnt1_to_current_equals_requantize(void) {
    static const tport_type_id pairs[][2] = {{TPORT_TYPE_Q4_0_QNT1, TPORT_TYPE_Q4_0},
                                             {TPORT_TYPE_Q4_1_QNT1, TPORT_TYPE_Q4_1},
                                             {TPORT_TYPE_Q8_0_QNT1, TPORT_TYPE_Q8_0}};
    static float x[N];
    static uint8_t old[N * 2], conv[N * 2], direct[N * 2];
    for (int p = 0; p < 3; p++) {
        random_floats(x, N, 0.05f);
        tport_traits(pairs[p][0])->from_float(x, old, N);
        tport_convert_report rep;
        CHECK(tport_convert(pairs[p][0], old, pairs[p][1], conv, N, &rep) == TPORT_STATUS_OK, "convert");
        tport_traits(pairs[p][1])->from_float(x, direct, N);
        CHECK(memcmp(conv, direct, nbytes(pairs[p][1], N)) == 0, "%s -> %s differs from requantizing",
              tport_traits(pairs[p][0])->info.name, tport_traits(pairs[p][1])->info.name);
        /* the values move by at most the scales' relative rounding (2^-11) */
        CHECK(rep.kind == TPORT_CONV_LOSSY && rep.rmse > 0 && rep.max_abs_err < 0.05 * 16 / 2048.0,
              "report kind %d rmse %g max %g", rep.kind, rep.rmse, rep.max_abs_err);
    }
}

static void test_lossy_report(void) {
    static float x[N], y[N];
    static uint8_t q[N * 4];
    random_floats(x, N, 1.0f);
    tport_convert_report rep;
    CHECK(tport_convert(TPORT_TYPE_F32, x, TPORT_TYPE_Q4_0, q, N, &rep) == TPORT_STATUS_OK, "f32 -> q4_0");
    tport_traits(TPORT_TYPE_Q4_0)->to_float(q, y, N);
    double ss = 0, mx = 0;
    for (int i = 0; i < N; i++) {
        const double d = fabs((double)y[i] - x[i]);
        ss += d * d;
        mx = d > mx ? d : mx;
    }
    CHECK(fabs(rep.rmse - sqrt(ss / N)) < 1e-12 && rep.max_abs_err == mx, "report %g/%g, measured %g/%g",
          rep.rmse, rep.max_abs_err, sqrt(ss / N), mx);
    CHECK(rep.rmse > 0.01 && rep.rmse < 0.1, "q4_0 rmse %g", rep.rmse);
    /* q4_K -> q8_0 through floats: bounded by q8_0's step */
    static uint8_t k[N], e[N * 2];
    tport_traits(TPORT_TYPE_Q4_K)->from_float(x, k, N);
    CHECK(tport_convert(TPORT_TYPE_Q4_K, k, TPORT_TYPE_Q8_0, e, N, &rep) == TPORT_STATUS_OK, "q4_K -> q8_0");
    CHECK(rep.max_abs_err <= 1.1 / 127 / 2 + 1e-3, "q4_K -> q8_0 max error %g", rep.max_abs_err);
}

static void test_arguments(void) {
    float x[64] = {0};
    uint8_t q[64];
    tport_convert_report rep;
    CHECK(tport_convert(TPORT_TYPE_F32, x, TPORT_TYPE_Q4_0, q, 48, &rep) == TPORT_STATUS_INVALID_ARGUMENT,
          "48 is not a multiple of 32");
    CHECK(tport_convert(TPORT_TYPE_F32, x, TPORT_TYPE_Q4_0, q, -32, &rep) == TPORT_STATUS_INVALID_ARGUMENT,
          "negative n");
    CHECK(tport_convert(TPORT_TYPE_F32, NULL, TPORT_TYPE_Q4_0, q, 32, &rep) == TPORT_STATUS_INVALID_ARGUMENT,
          "NULL source");
    CHECK(tport_convert(TPORT_TYPE_F32, x, TPORT_TYPE_I32, q, 4, &rep) == TPORT_STATUS_UNSUPPORTED, "-> i32");
    CHECK(tport_convert(TPORT_TYPE_F32, x, 777, q, 4, &rep) == TPORT_STATUS_UNSUPPORTED, "unknown type");
    CHECK(tport_convert(TPORT_TYPE_F32, x, TPORT_TYPE_Q4_0, q, 0, &rep) == TPORT_STATUS_OK && rep.n == 0,
          "n = 0");
    x[3] = 1.5f;
    CHECK(tport_convert(TPORT_TYPE_F32, x, TPORT_TYPE_F32, q, 16, &rep) == TPORT_STATUS_OK &&
              rep.kind == TPORT_CONV_IDENTITY && memcmp(q, x, 64) == 0,
          "identity copy");
    CHECK(tport_convert(TPORT_TYPE_F32, x, TPORT_TYPE_F16, q, 16, NULL) == TPORT_STATUS_OK, "NULL report");
}

/* 2023-03-10 row-split Q4_0 rows re-interleave into QNT0 blocks. */
static void test_rowsplit(void) {
    enum { NB = 5 };
    static float x[NB * 32], a[NB * 32], b[NB * 32];
    static uint8_t blocks[NB * 20], split[NB * 20], back[NB * 20];
    random_floats(x, NB * 32, 2.0f);
    tport_traits(TPORT_TYPE_Q4_0_QNT0)->from_float(x, blocks, NB * 32);
    for (int i = 0; i < NB; i++) { /* build the row-split form by hand */
        memcpy(split + 4 * i, blocks + 20 * i, 4);
        memcpy(split + 4 * NB + 16 * i, blocks + 20 * i + 4, 16);
    }
    CHECK(tport_q4_0_rowsplit_to_qnt0(split, back, NB * 32) == TPORT_STATUS_OK, "rowsplit convert");
    CHECK(memcmp(back, blocks, sizeof blocks) == 0, "rowsplit -> qnt0 bytes differ");
    tport_traits(TPORT_TYPE_Q4_0_QNT0)->to_float(back, a, NB * 32);
    tport_traits(TPORT_TYPE_Q4_0_QNT0)->to_float(blocks, b, NB * 32);
    CHECK(memcmp(a, b, sizeof a) == 0, "rowsplit values");
    CHECK(tport_q4_0_rowsplit_to_qnt0(split, back, 33) == TPORT_STATUS_INVALID_ARGUMENT, "bad length");
    CHECK(tport_q4_0_rowsplit_to_qnt0(split, split + 4, 64) == TPORT_STATUS_INVALID_ARGUMENT, "overlap");
}

/* Every possible pair on arbitrary bytes (NaN/Inf scales included), with
 * buffers of exactly the right size: no crash, no out-of-bounds access (run
 * under ASan/UBSan), and the documented status.  8 rows of 256: whole
 * blocks of every type, whole row groups of every row-grouped type. */
static void test_all_pairs_random_bytes(void) {
    enum { NE0 = 256, ROWS = 8, M = NE0 * ROWS };
    int converted = 0;
    for (int i = 0; i < tport_traits_count(); i++) {
        for (int j = 0; j < tport_traits_count(); j++) {
            const tport_type_traits *f = tport_traits_at(i), *t = tport_traits_at(j);
            const tport_conv_kind kind = tport_conversion_kind(f->info.id, t->info.id);
            const size_t sb = nbytes(f->info.id, M), db = nbytes(t->info.id, M);
            uint8_t *src = malloc(sb), *dst = malloc(db);
            for (size_t k = 0; k < sb; k++)
                src[k] = (uint8_t)test_rng_next(&rng);
            tport_convert_report rep;
            const tport_status st = tport_convert_rows(f->info.id, src, t->info.id, dst, NE0, ROWS, &rep);
            if (kind == TPORT_CONV_IMPOSSIBLE) {
                CHECK(st == TPORT_STATUS_UNSUPPORTED, "%s -> %s: status %d", f->info.name, t->info.name, st);
            } else {
                CHECK(st == TPORT_STATUS_OK && rep.kind == kind && rep.n == M, "%s -> %s: status %d",
                      f->info.name, t->info.name, st);
                converted++;
            }
            free(src);
            free(dst);
        }
    }
    CHECK(converted > 700, "only %d pairs convert", converted);
}

int main(void) {
    test_all_pairs_random_bytes();
    test_rowsplit();
    test_kinds();
    test_lossless_pairs();
    test_qnt1_to_current_equals_requantize();
    test_lossy_report();
    test_arguments();
    return test_finish("test_quant_convert");
}
