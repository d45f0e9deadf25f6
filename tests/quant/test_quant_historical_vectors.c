/* Every historical quantizer rule that ggml's public history still builds,
 * against the bytes that history produced (data/historical/README.md says
 * how they were made; the input comes from ../shared). */
#include <stdio.h>
#include <string.h>

#include "tport/tport.h"
#include "../test_util.h"

static bool read_exact(const char *path, void *dst, size_t n) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t got = fread(dst, 1, n, f);
    int extra = fgetc(f);
    fclose(f);
    return got == n && extra == EOF;
}

int main(void) {
    static const struct {
        const char *type, *rule;
        size_t bytes; /* for the 1024 input values */
    } vec[] = {
        {"q4_0_qnt0", "amax7", 640},       {"q4_1_qnt0", "roundf", 768},         {"q4_2_qnt0", "amax7", 640},
        {"q4_2_qnt0", "rmse", 640},        {"q4_3_qnt0", "min-max", 768},        {"q4_0_qnt0", "max-8", 640},
        {"q4_2_qnt0", "max-8", 640},       {"q5_0_qnt0", "max-16-int", 704},     {"q5_1_qnt0", "min-max-int", 768},
        {"q8_0_qnt1", "amax127", 1152},    {"q4_0_qnt1", "max-8-trunc", 640},    {"q4_1_qnt1", "min-max-trunc", 768},
        {"q5_0", "ggml-ref", 704},         {"q5_1", "ggml-ref", 768},
    };
    char path[1024];
    static float x[1024];
    if (!test_shared_path("testdata/quant-current/input_4x256.f32", path, sizeof path) ||
        !read_exact(path, x, sizeof x)) {
        printf("test_quant_historical_vectors: skipped (../shared/testdata/quant-current absent)\n");
        return 77;
    }
    for (size_t v = 0; v < sizeof vec / sizeof vec[0]; v++) {
        static uint8_t want[2048], got[2048];
        snprintf(path, sizeof path, "%s/%s.%s.q", TPORT_QUANT_TEST_DATA, vec[v].type, vec[v].rule);
        CHECK(read_exact(path, want, vec[v].bytes), "cannot read %s (%zu bytes)", path, vec[v].bytes);
        int64_t type = tport_type_from_name(vec[v].type);
        CHECK(type >= 0, "type %s", vec[v].type);
        if (type < 0)
            continue;
        memset(got, 0xA5, sizeof got);
        const size_t row = vec[v].bytes / 4;
        bool ok = true;
        for (int r = 0; r < 4 && ok; r++) /* row by row, as ggml_quantize_* with k = 256 */
            ok = tport_quantize((tport_type_id)type, vec[v].rule, x + 256 * r, got + row * r, 256) == TPORT_STATUS_OK;
        CHECK(ok, "%s %s: %s", vec[v].type, vec[v].rule, tport_last_error());
        size_t first = vec[v].bytes;
        int n_diff = 0;
        for (size_t i = 0; i < vec[v].bytes; i++)
            if (got[i] != want[i]) {
                n_diff++;
                if (first == vec[v].bytes)
                    first = i;
            }
        CHECK(n_diff == 0, "%s %s: %d bytes differ from ggml, the first at %zu (%02x, ggml %02x)", vec[v].type,
              vec[v].rule, n_diff, first, first < vec[v].bytes ? got[first] : 0, first < vec[v].bytes ? want[first] : 0);
        printf("%-10s %-14s %s\n", vec[v].type, vec[v].rule, n_diff ? "DIFFERS" : "bit-exact with ggml");
    }
    return test_finish("test_quant_historical_vectors");
}
