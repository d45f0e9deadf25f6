/* The tiled batch kernel of the lattice i-quants and Q2_K (backends/cpu/
 * cpu_mul_mat_iqtile.c: IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
 * IQ1_M, Q2_K against Q8_K) against the scalar per-row kernels
 * (quant/dot_iq_scalar.c, dot_kquant_scalar.c) of libtport.
 *
 * Built twice, TEST_SIMD "avx2" and "avx512": the test's own copy of the
 * tile kernel is compiled with those instruction sets (its symbols
 * renamed); on a CPU without them the test says "skipped".
 *
 * Weights are raw random blocks (every code, those no quantizer writes
 * included) with a sane block scale; activations are Q8_K from random
 * floats, plus blocks of extreme bytes (-128, 127) against which the
 * largest magnitudes would overflow maddubs' int16 pairs were the offset
 * or the layout wrong.  Tiles of 1 .. 8 rows (rows past nrows are never
 * read: NULL), 1 .. 4 columns with a padded column stride, K of 1, 3 and
 * 7 super-blocks; the scratch is exactly cpu_iqtile_scratch bytes, filled
 * with garbage first.  The integers per super-block are the scalar
 * kernels' exactly, the float additions go in another order: tolerance
 * 3e-7 (blocks + 4) sum |x y| (sum over dequantized weights and
 * activations; Q2_K's x = d ls q - dmin m counted as |d ls q| + |dmin m|),
 * while one wrong element is off by about 1e-3 of that. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "simd_usable.h"
#include "cpu_internal.h"
#include "cpu_quant.h"
#include "quant/type_table.h"
#include "q8k_columns.h"

#define QK 256
#define Q8K_BYTES 292

static unsigned long long rng = 11;


static uint8_t rand_byte(void) { return (uint8_t)(test_rng_next(&rng) >> 56); }

/* Random blocks of `type` with a block scale of about 0.01 (f16 0x211f,
 * IQ1_M's spread over the top nibbles of its four scale words). */
static void random_blocks(tport_type_id type, uint8_t *x, int64_t nb, size_t bytes) {
    for (size_t i = 0; i < (size_t)nb * bytes; i++)
        x[i] = rand_byte();
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = x + (size_t)b * bytes;
        if (type == TPORT_TYPE_Q2_K) { /* d and dmin */
            blk[80] = blk[82] = 0x1f;
            blk[81] = blk[83] = 0x21;
        } else if (type == TPORT_TYPE_TQ2_0) { /* d after the 64 bytes of quants */
            blk[64] = 0x1f;
            blk[65] = 0x21;
        } else if (type == TPORT_TYPE_IQ1_M) {
            const unsigned nib[4] = {0xf, 0x1, 0x1, 0x2}; /* 0x211f, lowest nibble first */
            for (int k = 0; k < 4; k++)
                blk[49 + 2 * k] = (uint8_t)((blk[49 + 2 * k] & 0x0f) | nib[k] << 4);
        } else {
            blk[0] = 0x1f;
            blk[1] = 0x21;
        }
    }
}

/* sum |x y| of weight row x and column y, dequantized */
static double magnitude(const tport_type_traits *t, const uint8_t *x, const uint8_t *y, int64_t K) {
    float *xf = malloc((size_t)K * sizeof *xf), *yf = malloc((size_t)K * sizeof *yf);
    t->to_float(x, xf, K);
    if (t->info.id == TPORT_TYPE_Q2_K) { /* |d ls q| + |dmin m|: element 128 k + 32 j + l of qs[32 k + l] */
        const tport_type_traits *f16 = tport_traits(TPORT_TYPE_F16);
        for (int64_t b = 0; b < K / QK; b++) {
            const uint8_t *blk = x + b * 84;
            float dm[2];
            f16->to_float(blk + 80, dm, 2);
            for (int e = 0; e < QK; e++) {
                const int q = blk[16 + 32 * (e / 128) + e % 32] >> (2 * (e % 128 / 32)) & 3, sc = blk[e / 16];
                xf[b * QK + e] = fabsf(dm[0] * (float)((sc & 15) * q)) + fabsf(dm[1] * (float)(sc >> 4));
            }
        }
    }
    tport_traits(TPORT_TYPE_Q8_K)->to_float(y, yf, K);
    double m = 0;
    for (int64_t i = 0; i < K; i++)
        m += fabs((double)xf[i] * yf[i]);
    free(xf);
    free(yf);
    return m;
}

static void check_case(tport_type_id type, int64_t nb, int nrows, int ncols, int extreme) {
    const tport_type_traits *t = tport_traits(type);
    const cpu_vec_dot_fn ref = cpu_vec_dot_scalar_for(type);
    const int64_t K = nb * QK;
    const size_t bytes = t->info.block_bytes, row_bytes = (size_t)nb * bytes;
    const size_t y_stride = (size_t)nb * Q8K_BYTES + 24; /* padded: the stride is used */
    uint8_t *w = malloc(row_bytes * CPU_Q8TILE_ROWS), *y = malloc(y_stride * 4);
    const size_t scratch = cpu_iqtile_scratch(K);
    uint8_t *tile = malloc(scratch);
    memset(tile, 0xA5, scratch);
    random_blocks(type, w, nb * CPU_Q8TILE_ROWS, bytes);
    for (int c = 0; c < ncols; c++)
        q8k_test_column(y + (size_t)c * y_stride, K, extreme ? c + 1 : 0, -128, &rng);
    const uint8_t *rows[CPU_Q8TILE_ROWS] = {0};
    for (int r = 0; r < nrows; r++)
        rows[r] = w + (size_t)r * row_bytes;
    cpu_iqtile_unpack(type, rows, nrows, K, tile);
    float out[4 * CPU_Q8TILE_ROWS];
    for (int i = 0; i < 4 * CPU_Q8TILE_ROWS; i++)
        out[i] = NAN;
    cpu_iqtile_dot(type, tile, K, y, y_stride, ncols, out);
    int bad = 0;
    for (int c = 0; c < ncols; c++) {
        const uint8_t *yc = y + (size_t)c * y_stride;
        for (int r = 0; r < CPU_Q8TILE_ROWS; r++) {
            const float got = out[c * CPU_Q8TILE_ROWS + r];
            float want = 0.0f;
            double tol = 0.0;
            if (r < nrows) {
                ref(K, &want, rows[r], yc);
                tol = 3e-7 * (double)(nb + 4) * magnitude(t, rows[r], yc, K);
            }
            if (!(fabs((double)got - want) <= tol)) {
                if (!bad++)
                    fprintf(stderr, "%s nb %lld rows %d cols %d%s: [r %d, c %d] = %.9g, scalar %.9g (tol %g)\n",
                            t->info.name, (long long)nb, nrows, ncols, extreme ? " extreme" : "", r, c, got, want,
                            tol);
            }
        }
    }
    CHECK(!bad, "%s: %lld blocks, %d rows, %d columns%s: %d outputs off", t->info.name, (long long)nb, nrows, ncols,
          extreme ? ", extreme activations" : "", bad);
    free(w);
    free(y);
    free(tile);
}

int main(void) {
    if (!test_simd_usable(TEST_SIMD))
        test_skip("test_quant_iqtile_" TEST_SIMD, "this CPU lacks " TEST_SIMD);
    static const tport_type_id types[] = {TPORT_TYPE_IQ2_XXS, TPORT_TYPE_IQ2_XS, TPORT_TYPE_IQ2_S, TPORT_TYPE_IQ3_XXS,
                                          TPORT_TYPE_IQ3_S,   TPORT_TYPE_IQ1_S,  TPORT_TYPE_IQ1_M, TPORT_TYPE_Q2_K,
                                          TPORT_TYPE_TQ2_0};
    static const int64_t blocks[] = {1, 3, 7};
    static const int nrows[] = {1, 3, 5, 8};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const tport_type_id type = types[i];
        CHECK(cpu_iqtile_available(type), "type %u has a tile kernel", type);
        CHECK(cpu_vec_dot_scalar_for(type) != NULL, "type %u has a scalar kernel", type);
        if (!cpu_iqtile_available(type) || !cpu_vec_dot_scalar_for(type))
            continue;
        for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
            for (size_t r = 0; r < sizeof nrows / sizeof nrows[0]; r++)
                for (int c = 1; c <= 4; c++)
                    check_case(type, blocks[b], nrows[r], c, 0);
        for (int c = 1; c <= 4; c++)
            check_case(type, 3, 8, c, 1);
    }
    /* types of other tile kernels, or none yet, are not taken */
    CHECK(!cpu_iqtile_available(TPORT_TYPE_Q4_K) && !cpu_iqtile_available(TPORT_TYPE_Q3_K) &&
              !cpu_iqtile_available(TPORT_TYPE_IQ4_XS) &&
              !cpu_iqtile_available(TPORT_TYPE_TQ1_0),
          "only the lattice types, Q2_K and TQ2_0");
    return test_finish("test_quant_iqtile_" TEST_SIMD);
}
