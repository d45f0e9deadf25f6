/* The tiled batch kernels of the K-quants (backends/cpu/cpu_mul_mat_kqtile.c:
 * Q4_K, Q5_K, Q6_K, IQ4_XS against Q8_K; cpu_mul_mat_q6tile.c: Q6_K, 8
 * columns a dot, AVX-512 only) against the scalar per-row kernels of
 * libtport.
 *
 * Built twice, TEST_SIMD "avx2" and "avx512": the test's own copy of the
 * tile kernel is compiled with those instruction sets (its symbols
 * renamed); on a CPU without them the test says "skipped".
 *
 * Weights are raw random blocks (every code) with a sane block scale, the
 * last row ending at an inaccessible page (an unpacking that reads past a
 * row faults); activations are Q8_K from random floats, plus blocks of
 * extreme bytes (-128 or -127, 127; see q8k_columns.h).  Tiles of 1 .. 8
 * rows (rows past nrows are never read: NULL), 1 .. 8 columns with a
 * padded column stride, swept 4 (kqtile) or 8 (q6tile) at a time as
 * mul_mat does, K of 1, 3
 * and 8 super-blocks (256, 768, 2048); the scratch is exactly cpu_kqtile_scratch bytes, filled with
 * garbage first.  The integers per super-block are the scalar kernels'
 * exactly, the float additions go in another order: tolerance 3e-7
 * (blocks + 4) sum |y| (|x| + m), m the largest |x| of the element's
 * super-block (which bounds the offset terms the tile takes off apart),
 * while one wrong element is off by about 1e-3 of that. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../test_util.h"
#include "simd_usable.h"
#include "cpu_internal.h"
#include "cpu_quant.h"
#include "quant/type_table.h"
#include "q8k_columns.h"

#define QK 256
#define Q8K_BYTES 292
#define MAX_COLS 8

static unsigned long long rng = 23;

static uint8_t rand_byte(void) { return (uint8_t)(test_rng_next(&rng) >> 56); }

/* Random blocks of `type` with block scales of about 0.01 (f16 0x211f):
 * Q6_K's d is its last two bytes, the others' (and dmin) lead. */
static void random_blocks(tport_type_id type, uint8_t *x, int64_t nb, size_t bytes) {
    for (size_t i = 0; i < (size_t)nb * bytes; i++)
        x[i] = rand_byte();
    for (int64_t b = 0; b < nb; b++) {
        uint8_t *blk = x + (size_t)b * bytes;
        if (type == TPORT_TYPE_Q6_K) {
            blk[208] = 0x1f;
            blk[209] = 0x21;
        } else {
            blk[0] = 0x1f;
            blk[1] = 0x21;
            if (type != TPORT_TYPE_IQ4_XS) {
                blk[2] = 0x1f;
                blk[3] = 0x21;
            }
        }
    }
}

/* sum |y| (|x| + the largest |x| of its super-block), dequantized */
static double magnitude(const tport_type_traits *t, const uint8_t *x, const uint8_t *y, int64_t K) {
    float *xf = malloc((size_t)K * sizeof *xf), *yf = malloc((size_t)K * sizeof *yf);
    t->to_float(x, xf, K);
    tport_traits(TPORT_TYPE_Q8_K)->to_float(y, yf, K);
    double m = 0;
    for (int64_t b = 0; b < K / QK; b++) {
        double top = 0;
        for (int i = 0; i < QK; i++)
            top = fmax(top, fabs((double)xf[b * QK + i]));
        for (int i = 0; i < QK; i++)
            m += fabs((double)yf[b * QK + i]) * (fabs((double)xf[b * QK + i]) + top);
    }
    free(xf);
    free(yf);
    return m;
}

/* bytes before an inaccessible page; *map, *len for munmap */
static uint8_t *before_guard(size_t bytes, void **map, size_t *len) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE), body = (bytes + page - 1) / page * page;
    *len = body + page;
    *map = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (*map == MAP_FAILED || mprotect((uint8_t *)*map + body, page, PROT_NONE) != 0)
        return NULL;
    return (uint8_t *)*map + body - bytes;
}

/* a kernel under test: the tile kinds' interface */
typedef struct kind {
    const char *name;
    bool (*available)(tport_type_id type);
    size_t (*scratch)(int64_t K);
    void (*unpack)(tport_type_id type, const uint8_t *const rows[], int nrows, int64_t K, uint8_t *tile);
    void (*dot)(tport_type_id type, const uint8_t *tile, int64_t K, const uint8_t *y, size_t y_stride, int ncols,
                float *out);
    int cols;
} kind;

static const kind kinds[] = {
    {"kqtile", cpu_kqtile_available, cpu_kqtile_scratch, cpu_kqtile_unpack, cpu_kqtile_dot, 4},
    {"q6tile", cpu_q6tile_available, cpu_q6tile_scratch, cpu_q6tile_unpack, cpu_q6tile_dot, 8},
};

static void check_case(const kind *k, tport_type_id type, int64_t nb, int nrows, int ncols, int extreme) {
    const tport_type_traits *t = tport_traits(type);
    const cpu_vec_dot_fn ref = cpu_vec_dot_scalar_for(type);
    const int64_t K = nb * QK;
    const size_t bytes = t->info.block_bytes, row_bytes = (size_t)nb * bytes;
    const size_t y_stride = (size_t)nb * Q8K_BYTES + 24; /* padded: the stride is used */
    void *map;
    size_t len;
    uint8_t *w = before_guard(row_bytes * (size_t)nrows, &map, &len), *y = malloc(y_stride * MAX_COLS);
    CHECK(w != NULL, "guarded weights");
    if (!w)
        return;
    const size_t scratch = k->scratch(K);
    uint8_t *tile = malloc(scratch);
    memset(tile, 0xA5, scratch);
    random_blocks(type, w, nb * nrows, bytes);
    for (int c = 0; c < ncols; c++)
        q8k_test_column(y + (size_t)c * y_stride, K, extreme ? c + 1 : 0, type == TPORT_TYPE_IQ4_XS ? -127 : -128,
                        &rng);
    const uint8_t *rows[CPU_Q8TILE_ROWS] = {0};
    for (int r = 0; r < nrows; r++)
        rows[r] = w + (size_t)r * row_bytes;
    k->unpack(type, rows, nrows, K, tile);
    float out[MAX_COLS * CPU_Q8TILE_ROWS];
    for (int i = 0; i < MAX_COLS * CPU_Q8TILE_ROWS; i++)
        out[i] = NAN;
    for (int c0 = 0; c0 < ncols; c0 += k->cols)
        k->dot(type, tile, K, y + (size_t)c0 * y_stride, y_stride, ncols - c0 < k->cols ? ncols - c0 : k->cols,
               out + c0 * CPU_Q8TILE_ROWS);
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
                    fprintf(stderr, "%s %s nb %lld rows %d cols %d%s: [r %d, c %d] = %.9g, scalar %.9g (tol %g)\n",
                            k->name, t->info.name, (long long)nb, nrows, ncols, extreme ? " extreme" : "", r, c, got,
                            want, tol);
            }
        }
    }
    CHECK(!bad, "%s %s: %lld blocks, %d rows, %d columns%s: %d outputs off", k->name, t->info.name, (long long)nb,
          nrows, ncols, extreme ? ", extreme activations" : "", bad);
    munmap(map, len);
    free(y);
    free(tile);
}

static void check_kind(const kind *k, tport_type_id type) {
    static const int64_t blocks[] = {1, 3, 8};
    static const int nrows[] = {1, 2, 3, 5, 8};
    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++)
        for (size_t r = 0; r < sizeof nrows / sizeof nrows[0]; r++)
            for (int c = 1; c <= MAX_COLS; c++)
                check_case(k, type, blocks[b], nrows[r], c, 0);
    for (int c = 1; c <= MAX_COLS; c++)
        check_case(k, type, 3, 8, c, 1);
}

int main(void) {
    if (!test_simd_usable(TEST_SIMD))
        test_skip("test_quant_kqtile_" TEST_SIMD, "this CPU lacks " TEST_SIMD);
    static const tport_type_id types[] = {TPORT_TYPE_Q6_K, TPORT_TYPE_Q4_K, TPORT_TYPE_Q5_K, TPORT_TYPE_IQ4_XS};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const tport_type_id type = types[i];
        CHECK(cpu_kqtile_available(type), "type %u has a tile kernel", type);
        CHECK(cpu_vec_dot_scalar_for(type) != NULL, "type %u has a scalar kernel", type);
        if (!cpu_kqtile_available(type) || !cpu_vec_dot_scalar_for(type))
            continue;
        check_kind(&kinds[0], type);
        if (cpu_q6tile_available(type))
            check_kind(&kinds[1], type);
    }
    CHECK(!cpu_kqtile_available(TPORT_TYPE_Q2_K) && !cpu_kqtile_available(TPORT_TYPE_Q8_0),
          "only Q4_K, Q5_K, Q6_K and IQ4_XS");
    /* the q6tile kernel: Q6_K only, in the AVX-512 build only */
    CHECK(cpu_q6tile_available(TPORT_TYPE_Q6_K) == !strcmp(TEST_SIMD, "avx512") &&
              !cpu_q6tile_available(TPORT_TYPE_Q4_K) && !cpu_q6tile_available(TPORT_TYPE_Q5_K),
          "q6tile: Q6_K in the AVX-512 build");
    return test_finish("test_quant_kqtile_" TEST_SIMD);
}
