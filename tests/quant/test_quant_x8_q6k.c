/* Q6_K's x8 layout and its AVX-512 VNNI kernels (backends/cpu/
 * cpu_mul_mat_x8_q6k.c), compiled here with those instruction sets under
 * other symbol names (on a CPU without them the test says "skipped"):
 *   - encoding groups of 8 plain rows and reading each row back gives the
 *     plain bytes exactly (random bytes: every bit of the values, scales
 *     and d), and a group takes exactly its rows' bytes;
 *   - against 1 .. 8 Q8_K columns (a padded column stride; random columns
 *     and ones of extreme bytes, -128 and 127, where dpbusd's lanes are at
 *     their largest), K of 1, 2, 3 and 8 super-blocks, 1 .. 4 columns in
 *     the 4-column kernel and 5 .. 8 in the 8-column one (cpu_x8_q6k_dot8,
 *     one group at a time and two at once): every output is bit
 *     for bit acc = fma(dx dy, isum, acc) super-block by super-block, isum
 *     ggml's integer sum, and within float-order tolerance of libtport's
 *     scalar Q6_K x Q8_K kernel;
 *   - the two-group kernels give the one-group kernels' bits, and each
 *     column of a batch of 5 .. 8 gives the bits it gives alone (one
 *     column, the generation kernel), so a sequence's result does not
 *     depend on its batch;
 *   - mutations: one value (at the column's largest quant, in the
 *     super-block of the row's largest scale) or one scale of one row
 *     changes that row's result beyond the tolerance, and no other row's
 *     bits. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "cpu_internal.h"
#include "cpu_quant.h"
#include "quant/type_table.h"
#include "q8k_columns.h" /* after the type table */
#include "simd_usable.h"
#include "x8_round_trip.h"

#define NAME "test_quant_x8_q6k"

/* Declared in cpu_internal.h only for 512-bit builds; this file is not one. */
void cpu_x8_q6k_dot(const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride, int ncols, float *out);
void cpu_x8_q6k_dot_pair(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y, size_t y_stride,
                         float *out);
void cpu_x8_q6k_dot8(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y, size_t y_stride,
                     int ncols, float *out);

enum { GROUPS = 2, ROWS = 8 * GROUPS, COLS = 8, BLK = 210, YB = 292 };

static unsigned long long rng = 43;

static uint8_t rand_byte(void) { return (uint8_t)(test_rng_next(&rng) >> 56); }

/* Value i (-32 .. 31) of a plain block, as ggml lays them out. */
static int q6_value(const uint8_t *x, int i) {
    const int k = i / 128, l = i % 32, part = (i % 128) / 32;
    const uint8_t a = x[64 * k + l + 32 * (part & 1)], h = x[128 + 32 * k + l];
    const int lo = part < 2 ? a & 15 : a >> 4;
    return (lo | ((h >> 2 * part) & 3) << 4) - 32;
}

static float f16(const uint8_t *p) {
    uint16_t h;
    memcpy(&h, p, 2);
    return tport_fp16_to_fp32(h);
}

static float f32(const uint8_t *p) {
    float f;
    memcpy(&f, p, 4);
    return f;
}

static int block_isum(const uint8_t *x, const uint8_t *y) {
    int s = 0;
    for (int j = 0; j < 16; j++) {
        int g = 0;
        for (int i = 16 * j; i < 16 * j + 16; i++)
            g += q6_value(x, i) * (int8_t)y[4 + i];
        s += (int8_t)x[192 + j] * g;
    }
    return s;
}

/* The kernels' order, exactly. */
static float fma_ref(const uint8_t *row, const uint8_t *col, int64_t nsb) {
    float acc = 0.0f;
    for (int64_t b = 0; b < nsb; b++) {
        const uint8_t *x = row + BLK * b, *y = col + YB * b;
        acc = fmaf(f16(x + 208) * f32(y), (float)block_isum(x, y), acc);
    }
    return acc;
}

/* sum |x y| over the dequantized values: the scale of the tolerance. */
static double magnitude(const uint8_t *row, const uint8_t *col, int64_t nsb) {
    double m = 0;
    for (int64_t b = 0; b < nsb; b++) {
        const uint8_t *x = row + BLK * b, *y = col + YB * b;
        double s = 0;
        for (int i = 0; i < 256; i++)
            s += fabs((double)(int8_t)x[192 + i / 16] * q6_value(x, i) * (int8_t)y[4 + i]);
        m += s * fabs((double)f16(x + 208) * f32(y));
    }
    return m;
}

static bool within(float got, float ref, double mag, int64_t nsb) {
    return fabs((double)got - (double)ref) <= 3e-7 * (double)(nsb + 4) * mag + 1e-30;
}

typedef struct fixture {
    int64_t K, nsb;
    size_t ys, row_bytes, group_bytes;
    uint8_t *plain, *x8, *cols;
} fixture;

static void encode(fixture *f) {
    for (int g = 0; g < GROUPS; g++)
        cpu_x8_q6k_encode(f->plain + (size_t)g * 8 * f->row_bytes, f->row_bytes, f->nsb,
                          f->x8 + (size_t)g * f->group_bytes);
}

/* ncols columns from column c0 on, in the kernel x8_task gives them. */
static void run_from(const fixture *f, int c0, int ncols, float out[GROUPS][COLS * 8]) {
    const uint8_t *y = f->cols + (size_t)c0 * f->ys;
    for (int g = 0; g < GROUPS; g++)
        if (ncols > 4)
            cpu_x8_q6k_dot8(f->x8 + (size_t)g * f->group_bytes, 0, f->K, y, f->ys, ncols, out[g]);
        else
            cpu_x8_q6k_dot(f->x8 + (size_t)g * f->group_bytes, f->K, y, f->ys, ncols, out[g]);
}

static void run(const fixture *f, int ncols, float out[GROUPS][COLS * 8]) { run_from(f, 0, ncols, out); }

/* Whether out differs from ref in row mr beyond the tolerance, and in no
 * other row's bits. */
static bool only_row_moved(const float out[GROUPS][COLS * 8], const float base[GROUPS][COLS * 8], int mr,
                           float ref, double mag, int64_t nsb) {
    int moved = 0;
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++)
            moved += r != mr && memcmp(&out[r / 8][8 * c + r % 8], &base[r / 8][8 * c + r % 8], 4) != 0;
    return !moved && !within(out[mr / 8][mr % 8], ref, mag, nsb);
}

static void check_k(int64_t nsb) {
    fixture f = {.K = 256 * nsb, .nsb = nsb, .ys = (size_t)(YB * nsb + 64), .row_bytes = (size_t)(BLK * nsb)};
    f.group_bytes = 8 * f.row_bytes;
    f.plain = malloc(ROWS * f.row_bytes);
    f.x8 = malloc(ROWS * f.row_bytes);
    f.cols = malloc(COLS * f.ys);
    for (size_t i = 0; i < ROWS * f.row_bytes; i++)
        f.plain[i] = rand_byte();
    for (int r = 0; r < ROWS; r++)
        for (int64_t b = 0; b < nsb; b++) { /* d: finite, 2^-14 .. 2^-7 times 1..2, either sign */
            uint8_t *d = f.plain + (size_t)r * f.row_bytes + BLK * (size_t)b + 208;
            d[1] = (uint8_t)((d[1] & 0x80) | (0x04 + rand_byte() % 0x1c));
        }
    /* columns 0 and 2 random, 1 and 3 extreme (-128 / 127 in runs) */
    for (int c = 0; c < COLS; c++)
        q8k_test_column(f.cols + (size_t)c * f.ys, f.K, c % 2 ? c : 0, -128, &rng);

    encode(&f);
    int bad_rt = x8_rows_read_back_differ(cpu_x8_q6k_row, f.x8, f.group_bytes, f.plain, f.row_bytes, ROWS, nsb);
    CHECK(!bad_rt, "K%lld: %d rows read back differ from the plain rows", (long long)f.K, bad_rt);

    cpu_vec_dot_fn scalar = cpu_vec_dot_scalar_for(TPORT_TYPE_Q6_K);
    CHECK(scalar != NULL, "no scalar Q6_K kernel");
    if (!scalar)
        return;
    float ref[ROWS][COLS], exact[ROWS][COLS];
    double mag[ROWS][COLS];
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            const uint8_t *row = f.plain + (size_t)r * f.row_bytes, *col = f.cols + (size_t)c * f.ys;
            scalar(f.K, &ref[r][c], row, col);
            exact[r][c] = fma_ref(row, col, nsb);
            mag[r][c] = magnitude(row, col, nsb);
        }

    float out[GROUPS][COLS * 8], all[GROUPS][COLS * 8], all4[GROUPS][COLS * 8];
    for (int nc = 1; nc <= COLS; nc++) {
        run(&f, nc, out);
        if (nc == 4)
            memcpy(all4, out, sizeof out);
        if (nc == COLS)
            memcpy(all, out, sizeof out);
        int bad_exact = 0, bad_tol = 0;
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < nc; c++) {
                float got = out[r / 8][8 * c + r % 8];
                bad_exact += memcmp(&got, &exact[r][c], 4) != 0;
                bad_tol += !within(got, ref[r][c], mag[r][c], nsb);
            }
        CHECK(!bad_exact && !bad_tol, "K%lld %d columns: %d outputs not the fma order's bits, %d off the scalar "
              "kernel", (long long)f.K, nc, bad_exact, bad_tol);
    }

    float pair[2 * COLS * 8];
    cpu_x8_q6k_dot_pair(f.x8, f.group_bytes, f.K, f.cols, f.ys, pair);
    CHECK(!memcmp(pair, all4[0], 4 * 8 * sizeof(float)) && !memcmp(pair + 32, all4[1], 4 * 8 * sizeof(float)),
          "K%lld: the two-group kernel differs from the one-group kernel", (long long)f.K);
    for (int nc = 5; nc <= COLS; nc++) {
        run(&f, nc, out);
        cpu_x8_q6k_dot8(f.x8, f.group_bytes, f.K, f.cols, f.ys, nc, pair);
        size_t n = (size_t)nc * 8 * sizeof(float);
        CHECK(!memcmp(pair, out[0], n) && !memcmp(pair + 64, out[1], n),
              "K%lld %d columns: the two-group kernel differs from the one-group kernel", (long long)f.K, nc);
        /* every column alone (the generation kernel) */
        int bad_alone = 0;
        for (int c = 0; c < nc; c++) {
            float one[GROUPS][COLS * 8];
            run_from(&f, c, 1, one);
            for (int g = 0; g < GROUPS; g++)
                bad_alone += memcmp(one[g], &out[g][8 * c], 8 * sizeof(float)) != 0;
        }
        CHECK(!bad_alone, "K%lld %d columns: %d groups' columns differ alone from in the batch", (long long)f.K, nc,
              bad_alone);
    }

    /* mutations of row 11 (group 1, row 3) against column 0, in the
     * super-block and sub-block of its largest |scale| */
    const int mr = 11;
    uint8_t *row = f.plain + (size_t)mr * f.row_bytes;
    int64_t mb = 0;
    int mj = 0;
    for (int64_t b = 0; b < nsb; b++)
        for (int j = 0; j < 16; j++)
            if (abs((int8_t)row[BLK * b + 192 + j]) > abs((int8_t)row[BLK * mb + 192 + mj]))
                mb = b, mj = j;
    uint8_t *x = row + BLK * mb;
    const uint8_t *y0 = f.cols + YB * (size_t)mb;
    for (int m = 0; m < 2; m++) {
        uint8_t saved[BLK];
        memcpy(saved, x, BLK);
        if (m) { /* the sub-block's scale negated (or -128 to 0) */
            x[192 + mj] = (uint8_t)(x[192 + mj] == 0x80 ? 0 : -(int8_t)x[192 + mj]);
        } else { /* the value at the sub-block's largest quant moved by 32: its top bit flipped */
            int mi = 16 * mj;
            for (int i = 16 * mj; i < 16 * mj + 16; i++)
                if (abs((int8_t)y0[4 + i]) > abs((int8_t)y0[4 + mi]))
                    mi = i;
            const int k = mi / 128, l = mi % 32, part = (mi % 128) / 32;
            x[128 + 32 * k + l] ^= (uint8_t)(2 << 2 * part);
        }
        encode(&f);
        run(&f, COLS, out);
        CHECK(only_row_moved((const float(*)[COLS * 8])out, (const float(*)[COLS * 8])all, mr, ref[mr][0],
                             mag[mr][0], nsb),
              "K%lld: a changed %s of row %d went unseen, or other rows moved", (long long)f.K,
              m ? "scale" : "value", mr);
        memcpy(x, saved, BLK);
    }
    free(f.plain), free(f.x8), free(f.cols);
}

int main(void) {
    if (!test_simd_usable(TEST_SIMD))
        test_skip(NAME, "this CPU lacks the AVX-512 VNNI kernels' instruction sets");
    static const int64_t sblocks[] = {1, 2, 3, 8};
    for (size_t i = 0; i < sizeof sblocks / sizeof sblocks[0]; i++)
        check_k(sblocks[i]);
    return test_finish(NAME);
}
