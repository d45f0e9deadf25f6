/* Bit-exactness with today's ggml: every <type>.q of
 * ../shared/testdata/quant-current is reproduced from input_4x256.f32 by
 * our reference quantizer, and every <type>.deq.f32 from the .q by our
 * dequantizer (README.md there says how the vectors were made). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/type_table.h"
#include "../test_util.h"

#define ROWS 4
#define COLS 256

static void *read_file(const char *rel, size_t expect) {
    char path[1024];
    if (!test_shared_path(rel, path, sizeof path))
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    void *buf = malloc(expect + 1);
    const size_t got = fread(buf, 1, expect + 1, f);
    fclose(f);
    if (got != expect) {
        fprintf(stderr, "%s: %zu bytes, expected %zu\n", rel, got, expect);
        free(buf);
        return NULL;
    }
    return buf;
}

static const struct {
    const char *file;
    tport_type_id type;
} cases[] = {
    {"q4_0", TPORT_TYPE_Q4_0}, {"q4_1", TPORT_TYPE_Q4_1}, {"q5_0", TPORT_TYPE_Q5_0},
    {"q5_1", TPORT_TYPE_Q5_1}, {"q8_0", TPORT_TYPE_Q8_0}, {"q2_K", TPORT_TYPE_Q2_K},
    {"q3_K", TPORT_TYPE_Q3_K}, {"q4_K", TPORT_TYPE_Q4_K}, {"q5_K", TPORT_TYPE_Q5_K},
    {"q6_K", TPORT_TYPE_Q6_K}, {"q8_K", TPORT_TYPE_Q8_K},
};

int main(void) {
    float *input = read_file("testdata/quant-current/input_4x256.f32", sizeof(float) * ROWS * COLS);
    if (!input)
        test_skip("test_quant_vectors", "../shared/testdata/quant-current not found");

    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const tport_type_traits *t = tport_traits(cases[c].type);
        CHECK(t && t->to_float && t->from_float, "%s has no traits", cases[c].file);
        if (!t || !t->to_float || !t->from_float)
            continue;
        const size_t row_bytes = (size_t)(COLS / t->info.block_size) * t->info.block_bytes;
        char rel[256];
        snprintf(rel, sizeof rel, "testdata/quant-current/%s.q", cases[c].file);
        uint8_t *want_q = read_file(rel, row_bytes * ROWS);
        snprintf(rel, sizeof rel, "testdata/quant-current/%s.deq.f32", cases[c].file);
        float *want_deq = read_file(rel, sizeof(float) * ROWS * COLS);
        CHECK(want_q && want_deq, "%s: vector files missing or of the wrong size", cases[c].file);
        if (!want_q || !want_deq) {
            free(want_q);
            free(want_deq);
            continue;
        }
        uint8_t *q = calloc(ROWS, row_bytes);
        float *deq = calloc(ROWS * COLS, sizeof(float));
        for (int r = 0; r < ROWS; r++)
            t->from_float(input + r * COLS, q + r * row_bytes, COLS);
        size_t bad_bytes = 0, first_bad = 0;
        for (size_t i = 0; i < ROWS * row_bytes; i++)
            if (q[i] != want_q[i] && bad_bytes++ == 0)
                first_bad = i;
        CHECK(bad_bytes == 0, "%s: quantize differs in %zu of %zu bytes (first at byte %zu: %02x, want %02x)",
              cases[c].file, bad_bytes, ROWS * row_bytes, first_bad, q[first_bad], want_q[first_bad]);
        t->to_float(want_q, deq, ROWS * COLS);
        size_t bad_vals = 0;
        for (int i = 0; i < ROWS * COLS; i++)
            if (memcmp(&deq[i], &want_deq[i], sizeof(float)) != 0 && bad_vals++ == 0)
                fprintf(stderr, "%s: first dequantize mismatch at %d: %.9g, want %.9g\n", cases[c].file, i,
                        (double)deq[i], (double)want_deq[i]);
        CHECK(bad_vals == 0, "%s: dequantize differs in %zu of %d values", cases[c].file, bad_vals,
              ROWS * COLS);
        printf("%-5s quantize %s (%zu bytes), dequantize %s\n", cases[c].file, bad_bytes ? "DIFFERS" : "bit-exact",
               ROWS * row_bytes, bad_vals ? "DIFFERS" : "bit-exact");
        free(q);
        free(deq);
        free(want_q);
        free(want_deq);
    }
    free(input);
    return test_finish("test_quant_vectors");
}
