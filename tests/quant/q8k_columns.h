/* Q8_K activation columns for the tiled-kernel tests (test_quant_iqtile.c,
 * test_quant_kqtile.c): random (the quantizer's bytes, from *rng), or
 * every byte `low` / 127 in runs, with bsums to match and d = 1/64.
 * low = -128 is a byte no quantizer writes (they stay within +-127),
 * against which unsigned values' maddubs pairs are at their largest;
 * kernels that rely on +-127 (IQ4_XS's AVX2 sign trick) get -127.
 * Include after test_util.h and the type table. */
#ifndef TPORT_TEST_Q8K_COLUMNS_H
#define TPORT_TEST_Q8K_COLUMNS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { Q8K_COLUMN_QK = 256, Q8K_COLUMN_BYTES = 292 };

static void q8k_test_column(uint8_t *y, int64_t K, int extreme, int low, unsigned long long *rng) {
    if (!extreme) {
        float *f = malloc((size_t)K * sizeof *f);
        for (int64_t i = 0; i < K; i++)
            f[i] = test_rng_uniform(rng);
        tport_traits(TPORT_TYPE_Q8_K)->from_float(f, y, K);
        free(f);
        return;
    }
    for (int64_t b = 0; b < K / Q8K_COLUMN_QK; b++) {
        uint8_t *yb = y + (size_t)b * Q8K_COLUMN_BYTES;
        const float d = 1.0f / 64;
        memcpy(yb, &d, sizeof d);
        int8_t *qs = (int8_t *)(yb + 4);
        for (int i = 0; i < Q8K_COLUMN_QK; i++)
            qs[i] = (int8_t)(((i / 8 + b + extreme) & 1) ? low : 127);
        for (int g = 0; g < 16; g++) {
            int16_t s = 0;
            for (int i = 0; i < 16; i++)
                s = (int16_t)(s + qs[16 * g + i]);
            memcpy(yb + 260 + 2 * g, &s, sizeof s);
        }
    }
}

#endif
