/* The CPU backend's vectorized f32 -> Q8_0 activation quantizer
 * (backends/cpu/cpu_quantize_q8_0.c, compiled into this test with the
 * AVX-512 variant's flags) against the reference quantizer of the type
 * table: byte for byte, on blocks that hit every rounding case (exact
 * halves, which roundf rounds away from zero), zeros, tiny and large
 * values.  Skipped where the processor lacks AVX-512. */
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "quant/type_table.h"

#include <stdbool.h>
#include <stdint.h>
bool cpu_quantize_q8_0_available(void);
void cpu_quantize_q8_0(const float *x, uint8_t *y, int64_t n);

enum { N = 32 * 1024 };

static float value(int i, int kind, unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    float r = (float)((*seed >> 8) & 0xFFFF) / 32768.0f - 1.0f;
    switch (kind) {
    case 0: return r;
    case 1: return r * 1e-30f;                                                    /* subnormal scales */
    case 2: return i % 32 == 0 ? 127.0f : (float)((int)(*seed >> 9) % 255 - 127) + 0.5f; /* d = 1: halves */
    case 3: return 0.0f;
    case 4: return r * 3e4f;
    default: return i % 32 == 5 ? -254.0f : (float)((int)(*seed >> 9) % 509 - 254) * 0.5f; /* d = 2 */
    }
}

int main(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    /* every AVX-512 processor has F16C (clang's builtin does not know "f16c") */
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw"))
        test_skip("test_cpu_quantize_q8_0", "no AVX-512 on this processor");
#endif
    if (!cpu_quantize_q8_0_available())
        test_skip("test_cpu_quantize_q8_0", "the quantizer was compiled without AVX-512");
    const tport_type_traits *tr = tport_traits(TPORT_TYPE_Q8_0);
    CHECK(tr && tr->from_float, "q8_0 has a reference quantizer");
    if (!tr || !tr->from_float)
        return test_finish("test_cpu_quantize_q8_0");
    float *x = malloc(N * sizeof *x);
    uint8_t *want = malloc(N / 32 * 34), *got = malloc(N / 32 * 34);
    unsigned seed = 7;
    for (int kind = 0; kind < 6; kind++) {
        for (int i = 0; i < N; i++)
            x[i] = value(i, (kind + i / 32) % 6, &seed);
        tr->from_float(x, want, N);
        memset(got, 0xAA, N / 32 * 34);
        cpu_quantize_q8_0(x, got, N);
        int bad = 0;
        for (int i = 0; i < N / 32 * 34; i++)
            bad += want[i] != got[i];
        CHECK(!bad, "pass %d: %d bytes differ from the reference quantizer", kind, bad);
    }
    free(x);
    free(want);
    free(got);
    return test_finish("test_cpu_quantize_q8_0");
}
