/* The public quantization API (tport.h "---- quantization ----"):
 * argument errors with messages, the rule listing, rules reachable by
 * name, conversions with reports, and today's default rules bit-exact with
 * ggml's vectors in ../shared/testdata/quant-current through the API
 * (skipped when the data is absent). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "tport/tport.h"

static void check_errors(void) {
    float x[64] = {1.0f};
    uint8_t y[256];
    float back[64];
    CHECK(tport_quantize(9999, NULL, x, y, 32) == TPORT_STATUS_INVALID_ARGUMENT, "unknown type");
    CHECK(strstr(tport_last_error(), "9999") != NULL, "message names the id: %s", tport_last_error());
    CHECK(tport_quantize(TPORT_TYPE_Q4_0, "nope", x, y, 32) == TPORT_STATUS_INVALID_ARGUMENT, "unknown rule");
    CHECK(strstr(tport_last_error(), "nope") && strstr(tport_last_error(), "q4_0"), "message: %s",
          tport_last_error());
    CHECK(tport_quantize(TPORT_TYPE_Q4_0, NULL, x, y, 33) == TPORT_STATUS_INVALID_ARGUMENT, "n not a block multiple");
    CHECK(strstr(tport_last_error(), "33") && strstr(tport_last_error(), "32"), "message: %s", tport_last_error());
    CHECK(tport_quantize(TPORT_TYPE_Q4_2_QNT0, "rmse", x, y, 24) == TPORT_STATUS_INVALID_ARGUMENT, "q4_2: 24 %% 16");
    CHECK(tport_quantize(TPORT_TYPE_Q4_2_QNT0, "rmse", x, y, 48) == TPORT_STATUS_OK, "q4_2: 48 elements");
    CHECK(tport_quantize(TPORT_TYPE_Q4_0, NULL, x, y, -32) == TPORT_STATUS_INVALID_ARGUMENT, "negative n");
    CHECK(tport_quantize(TPORT_TYPE_Q4_0, NULL, NULL, y, 32) == TPORT_STATUS_INVALID_ARGUMENT, "NULL src");
    CHECK(tport_quantize(TPORT_TYPE_Q4_0, NULL, x, NULL, 32) == TPORT_STATUS_INVALID_ARGUMENT, "NULL dst");
    CHECK(tport_quantize(TPORT_TYPE_Q4_0, NULL, NULL, NULL, 0) == TPORT_STATUS_OK, "n = 0 is a no-op");
    CHECK(tport_quantize(TPORT_TYPE_I32, NULL, x, y, 4) == TPORT_STATUS_UNSUPPORTED, "i32 has no quantizer");
    CHECK(tport_quantize(TPORT_TYPE_Q4_K_QK64, NULL, x, y, 64) == TPORT_STATUS_UNSUPPORTED, "qk64: decode only");
    CHECK(tport_quantize(TPORT_TYPE_Q4_0, NULL, x, y, INT64_MAX - 31) == TPORT_STATUS_INVALID_ARGUMENT, "huge n");

    CHECK(tport_dequantize(9999, y, back, 32) == TPORT_STATUS_INVALID_ARGUMENT, "dequantize unknown type");
    CHECK(tport_dequantize(TPORT_TYPE_Q4_0, y, back, 31) == TPORT_STATUS_INVALID_ARGUMENT, "dequantize 31");
    CHECK(tport_dequantize(TPORT_TYPE_Q4_0, NULL, back, 32) == TPORT_STATUS_INVALID_ARGUMENT, "dequantize NULL");
    CHECK(tport_dequantize(TPORT_TYPE_Q4_0, y, NULL, 32) == TPORT_STATUS_INVALID_ARGUMENT, "dequantize NULL dst");
    const int32_t ints[4] = {-3, 0, 7, 100000};
    CHECK(tport_dequantize(TPORT_TYPE_I32, ints, back, 4) == TPORT_STATUS_OK && back[0] == -3.0f &&
              back[3] == 100000.0f,
          "i32 decodes");
}

static void check_rule_listing(void) {
    CHECK(tport_quant_rule_count(TPORT_TYPE_Q4_0_QNT0) == 2, "q4_0_qnt0 rules");
    CHECK(tport_quant_rule_count(TPORT_TYPE_Q4_2_QNT0) == 3, "q4_2_qnt0 rules");
    CHECK(tport_quant_rule_count(TPORT_TYPE_I32) == 0 && tport_quant_rule_count(9999) == 0, "no rules");
    const char *q42[] = {"amax7", "rmse", "max-8"};
    for (int i = 0; i < 3; i++) {
        const char *name = tport_quant_rule_name(TPORT_TYPE_Q4_2_QNT0, i);
        CHECK(name && !strcmp(name, q42[i]), "q4_2_qnt0 rule %d: %s", i, name ? name : "(null)");
        const char *about = tport_quant_rule_about(TPORT_TYPE_Q4_2_QNT0, i);
        CHECK(about && strstr(about, "2023-04"), "q4_2_qnt0 rule %d about: %s", i, about ? about : "(null)");
    }
    CHECK(!strcmp(tport_quant_rule_name(TPORT_TYPE_Q4_0_QNT1, 0), "max-8-trunc"), "q4_0_qnt1 rule");
    CHECK(!strcmp(tport_quant_rule_name(TPORT_TYPE_Q4_0, 0), "ggml-ref"), "q4_0 rule");
    CHECK(tport_quant_rule_name(TPORT_TYPE_Q4_0, 1) == NULL && tport_quant_rule_name(TPORT_TYPE_Q4_0, -1) == NULL &&
              tport_quant_rule_about(TPORT_TYPE_Q4_0, 1) == NULL && tport_quant_rule_name(9999, 0) == NULL,
          "out of range gives NULL");

    /* Each rule is reachable by name and the default is the last rule.  The
     * data are all negative, where Q4_1's "flt-min" differs from "roundf". */
    enum { N = 256 };
    float x[N];
    unsigned long long s = 5;
    for (int i = 0; i < N; i++)
        x[i] = test_rng_uniform(&s) - 1.5f;
    static uint8_t a[N * 8], b[N * 8];
    const tport_type_id types[] = {TPORT_TYPE_Q4_0_QNT0, TPORT_TYPE_Q4_1_QNT0, TPORT_TYPE_Q4_2_QNT0};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const tport_type_id t = types[k];
        const size_t bytes = tport_row_size(t, N);
        const int n = tport_quant_rule_count(t);
        CHECK(tport_quantize(t, NULL, x, a, N) == TPORT_STATUS_OK, "default");
        CHECK(tport_quantize(t, tport_quant_rule_name(t, n - 1), x, b, N) == TPORT_STATUS_OK, "last by name");
        CHECK(memcmp(a, b, bytes) == 0, "type %u: the default is the last rule", t);
        CHECK(tport_quantize(t, tport_quant_rule_name(t, 0), x, b, N) == TPORT_STATUS_OK, "first by name");
        CHECK(memcmp(a, b, bytes) != 0, "type %u: the first rule writes other bytes on random data", t);
    }
}

static void check_convert(void) {
    enum { N = 256 };
    float x[N];
    unsigned long long s = 9;
    for (int i = 0; i < N; i++)
        x[i] = test_rng_uniform(&s);
    static uint8_t q0[N * 2], q1[N * 2], q2[N * 2];
    float d0[N], d1[N];
    tport_conversion rep;
    CHECK(tport_quantize(TPORT_TYPE_Q4_0_QNT0, NULL, x, q0, N) == 0, "quantize qnt0");
    CHECK(tport_convert_data(TPORT_TYPE_Q4_0_QNT0, q0, TPORT_TYPE_Q4_0_QNT1, q1, N, &rep) == 0, "qnt0->qnt1");
    CHECK(rep.kind == 1 && rep.n == N && rep.rmse == 0.0 && rep.max_abs_err == 0.0, "lossless report %d %g",
          rep.kind, rep.rmse);
    tport_dequantize(TPORT_TYPE_Q4_0_QNT0, q0, d0, N);
    tport_dequantize(TPORT_TYPE_Q4_0_QNT1, q1, d1, N);
    CHECK(memcmp(d0, d1, sizeof d0) == 0, "nibble permutation keeps the values");
    CHECK(tport_convert_data(TPORT_TYPE_Q4_0_QNT1, q1, TPORT_TYPE_Q4_0, q2, N, &rep) == 0 && rep.kind == 2 &&
              rep.rmse > 0.0 && rep.max_abs_err >= rep.rmse,
          "qnt1->current is lossy with an error: kind %d rmse %g", rep.kind, rep.rmse);
    CHECK(tport_convert_data(TPORT_TYPE_Q4_0, q2, TPORT_TYPE_Q4_0, q1, N, &rep) == 0 && rep.kind == 0 &&
              memcmp(q1, q2, tport_row_size(TPORT_TYPE_Q4_0, N)) == 0,
          "identity");
    CHECK(tport_convert_data(TPORT_TYPE_Q4_0, q2, TPORT_TYPE_I32, q1, N, &rep) != 0 && rep.kind == 3, "impossible");
    CHECK(tport_last_error()[0] != 0, "impossible conversion says why");
    CHECK(tport_convert_data(TPORT_TYPE_Q4_0, q2, TPORT_TYPE_Q4_2_QNT0, q1, 40, &rep) == TPORT_STATUS_INVALID_ARGUMENT,
          "40 elements: not a multiple of 32");
    CHECK(tport_convert_data(TPORT_TYPE_Q4_0, q2, TPORT_TYPE_F32, d1, N, NULL) == 0, "NULL report is fine");
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static uint8_t bufs[4][8192];
    static int next;
    uint8_t *b = bufs[next++ % 4];
    *n = fread(b, 1, sizeof bufs[0], f);
    fclose(f);
    return b;
}

/* Today's default rules through the API, bit for bit with ggml. */
static int check_vectors(void) {
    char buf[1024], path[256];
    if (!test_shared_path("testdata/quant-current/input_4x256.f32", buf, sizeof buf))
        return 0;
    size_t n_in = 0;
    const uint8_t *in_bytes = slurp(buf, &n_in);
    CHECK(n_in == 4096, "input size %zu", n_in);
    float in[1024];
    memcpy(in, in_bytes, sizeof in);
    static const char *types[] = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K",
                                  "q3_K", "q4_K", "q5_K", "q6_K", "q8_K"};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const int64_t id = tport_type_from_name(types[k]);
        CHECK(id >= 0, "%s known", types[k]);
        if (id < 0)
            continue;
        snprintf(path, sizeof path, "testdata/quant-current/%s.q", types[k]);
        size_t nq = 0, nd = 0;
        const uint8_t *want_q = test_shared_path(path, buf, sizeof buf) ? slurp(buf, &nq) : NULL;
        snprintf(path, sizeof path, "testdata/quant-current/%s.deq.f32", types[k]);
        const uint8_t *want_d = test_shared_path(path, buf, sizeof buf) ? slurp(buf, &nd) : NULL;
        CHECK(want_q && want_d && nd == 4096, "%s vectors present", types[k]);
        if (!want_q || !want_d)
            continue;
        const size_t row = tport_row_size((tport_type_id)id, 256);
        CHECK(nq == 4 * row, "%s: %zu bytes, want %zu", types[k], nq, 4 * row);
        static uint8_t got[4 * 1200];
        for (int r = 0; r < 4; r++)
            CHECK(tport_quantize((tport_type_id)id, r % 2 ? "ggml-ref" : NULL, in + 256 * r, got + row * r, 256) == 0,
                  "%s row %d: %s", types[k], r, tport_last_error());
        CHECK(memcmp(got, want_q, 4 * row) == 0, "%s: quantized bytes differ from ggml's", types[k]);
        float back[1024];
        CHECK(tport_dequantize((tport_type_id)id, want_q, back, 1024) == 0, "%s dequantize", types[k]);
        CHECK(memcmp(back, want_d, sizeof back) == 0, "%s: decoded values differ from ggml's", types[k]);

        /* formats.md 3.7: the 2023 quantizer of q2_K, q4_K, q5_K, q6_K and
         * q8_K wrote other bytes than today's on this very input.  On the
         * ordinary rows 0..2 its error must be of the same order (row 3's
         * constant sub-block decodes to 0 under 2023's make_qkx1_quants). */
        if (tport_quant_rule_count((tport_type_id)id) == 2) {
            static uint8_t old[4 * 1200];
            float back_old[1024];
            CHECK(tport_quantize((tport_type_id)id, "2023", in, old, 1024) == 0, "%s 2023", types[k]);
            CHECK(memcmp(old, want_q, 4 * row) != 0, "%s: the 2023 rule wrote today's bytes", types[k]);
            tport_dequantize((tport_type_id)id, old, back_old, 1024);
            double e_old = 0, e_now = 0;
            for (int i = 0; i < 768; i++) {
                e_old += ((double)back_old[i] - in[i]) * ((double)back_old[i] - in[i]);
                e_now += ((double)back[i] - in[i]) * ((double)back[i] - in[i]);
            }
            CHECK(e_old <= 1.5 * e_now, "%s: 2023 rule squared error %g vs today's %g", types[k], e_old, e_now);
        }
    }
    return 1;
}

/* tport_quantize_rows: argument checks, weights required or refused as
 * the table says, rows independent of each other, and the weighted
 * search differing from the _ref one (the bytes themselves are checked
 * against llama-quantize's by test_quant_cli_mixes). */
static void check_quantize_rows(void) {
    enum { N = 512, ROWS = 3 };
    static float x[ROWS * N], w[N];
    static uint8_t a[ROWS * N * 2], b[ROWS * N * 2];
    unsigned long long rng = 99;
    for (int i = 0; i < ROWS * N; i++)
        x[i] = test_rng_uniform(&rng);
    for (int i = 0; i < N; i++)
        w[i] = 1.0f + (float)(i % 7);
    CHECK(tport_quantize_rows(TPORT_TYPE_Q4_K, x, a, ROWS, 300, NULL) == TPORT_STATUS_INVALID_ARGUMENT,
          "rows: 300 is not whole q4_K blocks");
    CHECK(tport_quantize_rows(TPORT_TYPE_Q8_1, x, a, ROWS, N, NULL) == TPORT_STATUS_UNSUPPORTED,
          "rows: q8_1 is no type llama-quantize writes");
    CHECK(tport_quantize_rows(TPORT_TYPE_IQ2_XXS, x, a, ROWS, N, NULL) == TPORT_STATUS_INVALID_ARGUMENT,
          "rows: iq2_xxs needs weights");
    CHECK(tport_quantize_rows(TPORT_TYPE_IQ2_XXS, x, a, ROWS, N, w) == TPORT_STATUS_OK, "rows: iq2_xxs with weights");
    CHECK(tport_quantize_rows(TPORT_TYPE_Q4_K, x, a, ROWS, N, NULL) == TPORT_STATUS_OK &&
              tport_quantize(TPORT_TYPE_Q4_K, NULL, x, b, ROWS * N) == TPORT_STATUS_OK &&
              !memcmp(a, b, tport_row_size(TPORT_TYPE_Q4_K, N) * ROWS),
          "rows: q4_K without weights is the _ref quantizer");
    CHECK(tport_quantize_rows(TPORT_TYPE_Q4_K, x, a, ROWS, N, w) == TPORT_STATUS_OK &&
              memcmp(a, b, tport_row_size(TPORT_TYPE_Q4_K, N) * ROWS),
          "rows: q4_K with weights searches otherwise");
    CHECK(tport_quantize_rows(TPORT_TYPE_Q6_K, x + N, b, 1, N, w) == TPORT_STATUS_OK &&
              tport_quantize_rows(TPORT_TYPE_Q6_K, x, a, ROWS, N, w) == TPORT_STATUS_OK &&
              !memcmp(a + tport_row_size(TPORT_TYPE_Q6_K, N), b, tport_row_size(TPORT_TYPE_Q6_K, N)),
          "rows: each row quantized on its own");
    CHECK(tport_quantize_rows(TPORT_TYPE_IQ4_NL, x, a, 1, N, NULL) == TPORT_STATUS_OK &&
              tport_quantize(TPORT_TYPE_IQ4_NL, NULL, x, b, N) == TPORT_STATUS_OK &&
              memcmp(a, b, tport_row_size(TPORT_TYPE_IQ4_NL, N)),
          "rows: iq4_nl's chunk path is not its _ref (a scale search)");
}

int main(void) {
    check_quantize_rows();
    check_errors();
    check_rule_listing();
    check_convert();
    const int had_data = check_vectors();
    if (!had_data) {
        if (test_failures)
            return test_finish("test_quant_public_api");
        test_skip("test_quant_public_api", "../shared/testdata/quant-current absent; vector part not run");
    }
    return test_finish("test_quant_public_api");
}
