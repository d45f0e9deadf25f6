/* MXFP4's x8 layout and its AVX-512 VNNI kernels (backends/cpu/
 * cpu_mul_mat_x8_mxfp4.c), compiled here with those instruction sets under
 * other symbol names (on a CPU without them the test says "skipped"):
 *   - encoding groups of 8 plain rows and reading each row back gives the
 *     plain bytes, and a group takes exactly its rows' bytes;
 *   - against 1 .. 4 Q8_0 columns (a padded column stride; random columns
 *     and one of extreme bytes, -128 and 127), K of 1, 2, 3, 9 and 90
 *     blocks, random nibbles and exponents (the subnormal scales of e = 0
 *     and 1 included): with `fold` (the AMX tiles' order) every output is
 *     bit for bit acc = fma(dx dy, isum, acc) block by block, isum ggml's
 *     integer sum of table value x quant; without, within float-order
 *     tolerance of libtport's scalar MXFP4 x Q8_0 kernel, which the fold
 *     results are held to as well;
 *   - the two-group kernel gives the one-group kernel's bits;
 *   - mutations: one nibble (of a large activation, in the block of the
 *     largest exponent) or one exponent of one row changes that row's
 *     result beyond the tolerance, and no other row's bits. */
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
#include "simd_usable.h"
#include "x8_round_trip.h"

#define NAME "test_quant_x8_mxfp4"

/* Declared in cpu_internal.h only for 512-bit builds; this file is not one. */
void cpu_x8_mxfp4_dot(const uint8_t *group, int64_t K, const uint8_t *y, size_t y_stride, const cpu_x8_act *act,
                      size_t act_stride, int ncols, bool fold, float *out);
void cpu_x8_mxfp4_dot_pair(const uint8_t *group, size_t group_stride, int64_t K, const uint8_t *y, size_t y_stride,
                           const cpu_x8_act *act, size_t act_stride, bool fold, float *out);

enum { GROUPS = 2, ROWS = 8 * GROUPS, COLS = 4 };

static const int8_t values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}; /* ggml's, doubled */
static unsigned long long rng = 41;

static uint8_t rand_byte(void) { return (uint8_t)(test_rng_next(&rng) >> 56); }

static float e8m0_half(uint8_t e) { /* 2^(e - 128), ggml's */
    uint32_t bits = e < 2 ? UINT32_C(0x00200000) << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static float q8_d(const uint8_t *blk) {
    uint16_t h;
    memcpy(&h, blk, 2);
    return tport_fp16_to_fp32(h);
}

/* Row r's block b (17 bytes at x) against column block y: ggml's integer sum. */
static int block_isum(const uint8_t *x, const uint8_t *y) {
    int s = 0;
    for (int j = 0; j < 16; j++)
        s += values[x[1 + j] & 15] * (int8_t)y[2 + j] + values[x[1 + j] >> 4] * (int8_t)y[18 + j];
    return s;
}

/* The fold order, exactly: acc = fma(dx dy, isum, acc), block by block. */
static float fold_ref(const uint8_t *row, const uint8_t *col, int64_t nblk) {
    float acc = 0.0f;
    for (int64_t b = 0; b < nblk; b++) {
        const uint8_t *x = row + 17 * b, *y = col + 34 * b;
        acc = fmaf(e8m0_half(x[0]) * q8_d(y), (float)block_isum(x, y), acc);
    }
    return acc;
}

/* sum |x y| over the dequantized values: the scale of the tolerance. */
static double magnitude(const uint8_t *row, const uint8_t *col, int64_t nblk) {
    double m = 0;
    for (int64_t b = 0; b < nblk; b++) {
        const uint8_t *x = row + 17 * b, *y = col + 34 * b;
        double s = 0;
        for (int j = 0; j < 16; j++)
            s += abs(values[x[1 + j] & 15] * (int8_t)y[2 + j]) + abs(values[x[1 + j] >> 4] * (int8_t)y[18 + j]);
        m += s * (double)e8m0_half(x[0]) * fabs((double)q8_d(y));
    }
    return m;
}

static bool within(float got, float ref, double mag, int64_t nblk) {
    return fabs((double)got - (double)ref) <= 3e-7 * (double)(nblk + 4) * mag + 1e-30;
}

typedef struct fixture {
    int64_t K, nblk;
    size_t ys, row_bytes, group_bytes;
    uint8_t *plain, *x8, *cols;
    cpu_x8_act *act;
} fixture;

static void act_info(fixture *f) {
    for (int c = 0; c < COLS; c++)
        for (int64_t b = 0; b < f->nblk; b++) {
            const uint8_t *y = f->cols + (size_t)c * f->ys + 34 * (size_t)b;
            int s = 0;
            for (int j = 0; j < 32; j++)
                s += (int8_t)y[2 + j];
            f->act[c * f->nblk + b] = (cpu_x8_act){.d = q8_d(y), .sum = s};
        }
}

static void encode(fixture *f) {
    for (int g = 0; g < GROUPS; g++)
        cpu_x8_mxfp4_encode(f->plain + (size_t)g * 8 * f->row_bytes, f->row_bytes, f->nblk,
                            f->x8 + (size_t)g * f->group_bytes);
}

/* out[g][c][r] for every group, column count ncols, and fold. */
static void run(const fixture *f, int ncols, bool fold, float out[GROUPS][COLS * 8]) {
    for (int g = 0; g < GROUPS; g++)
        cpu_x8_mxfp4_dot(f->x8 + (size_t)g * f->group_bytes, f->K, f->cols, f->ys, f->act, (size_t)f->nblk, ncols,
                         fold, out[g]);
}

static void check_k(int64_t nblk) {
    fixture f = {.K = 32 * nblk, .nblk = nblk, .ys = (size_t)(34 * nblk + 34), .row_bytes = (size_t)(17 * nblk)};
    f.group_bytes = 8 * f.row_bytes;
    f.plain = malloc(ROWS * f.row_bytes);
    f.x8 = malloc(ROWS * f.row_bytes);
    f.cols = malloc(COLS * f.ys);
    f.act = malloc(COLS * (size_t)nblk * sizeof *f.act);
    for (size_t i = 0; i < ROWS * f.row_bytes; i++)
        f.plain[i] = rand_byte();
    for (int r = 0; r < ROWS; r++)
        for (int64_t b = 0; b < nblk; b++) { /* exponents 110 .. 141, some subnormal scales */
            uint8_t *e = f.plain + (size_t)r * f.row_bytes + 17 * (size_t)b;
            *e = (r + b) % 11 == 5 ? (uint8_t)((r + b) & 1) : (uint8_t)(110 + rand_byte() % 32);
        }
    /* columns 0..2 Q8_0 from random floats, column 3 raw extremes */
    const tport_type_traits *q8 = tport_traits(TPORT_TYPE_Q8_0);
    float *xf = malloc((size_t)f.K * sizeof *xf);
    for (int c = 0; c < 3; c++) {
        for (int64_t k = 0; k < f.K; k++)
            xf[k] = test_rng_uniform(&rng);
        q8->from_float(xf, f.cols + (size_t)c * f.ys, f.K);
    }
    free(xf);
    for (int64_t b = 0; b < nblk; b++) {
        uint8_t *y = f.cols + 3 * f.ys + 34 * (size_t)b;
        y[0] = 0x1f, y[1] = 0x21; /* f16 about 0.01 */
        for (int j = 0; j < 32; j++)
            y[2 + j] = rand_byte() & 1 ? 0x80 : 0x7f;
    }
    act_info(&f);

    /* the layout */
    encode(&f);
    int bad_rt = x8_rows_read_back_differ(cpu_x8_mxfp4_row, f.x8, f.group_bytes, f.plain, f.row_bytes, ROWS, nblk);
    CHECK(!bad_rt, "K%lld: %d rows read back differ from the plain rows", (long long)f.K, bad_rt);

    cpu_vec_dot_fn scalar = cpu_vec_dot_scalar_for(TPORT_TYPE_MXFP4);
    CHECK(scalar != NULL, "no scalar MXFP4 kernel");
    if (!scalar)
        return;
    float ref[ROWS][COLS], exact[ROWS][COLS];
    double mag[ROWS][COLS];
    for (int r = 0; r < ROWS; r++)
        for (int c = 0; c < COLS; c++) {
            const uint8_t *row = f.plain + (size_t)r * f.row_bytes, *col = f.cols + (size_t)c * f.ys;
            scalar(f.K, &ref[r][c], row, col);
            exact[r][c] = fold_ref(row, col, nblk);
            mag[r][c] = magnitude(row, col, nblk);
        }

    float out[GROUPS][COLS * 8], fold4[2][GROUPS][COLS * 8];
    for (int fold = 0; fold <= 1; fold++)
        for (int nc = 1; nc <= COLS; nc++) {
            run(&f, nc, fold, out);
            if (nc == COLS)
                memcpy(fold4[fold], out, sizeof out);
            int bad_exact = 0, bad_tol = 0;
            for (int r = 0; r < ROWS; r++)
                for (int c = 0; c < nc; c++) {
                    float got = out[r / 8][8 * c + r % 8];
                    bad_exact += fold && memcmp(&got, &exact[r][c], 4) != 0;
                    bad_tol += !within(got, ref[r][c], mag[r][c], nblk);
                }
            CHECK(!bad_exact && !bad_tol, "K%lld %d columns fold %d: %d outputs not the fma order's bits, %d off the "
                  "scalar kernel", (long long)f.K, nc, fold, bad_exact, bad_tol);
        }

    /* the two-group kernel: the one-group kernel's bits */
    for (int fold = 0; fold <= 1; fold++) {
        float pair[2 * COLS * 8];
        cpu_x8_mxfp4_dot_pair(f.x8, f.group_bytes, f.K, f.cols, f.ys, f.act, (size_t)nblk, fold, pair);
        CHECK(!memcmp(pair, fold4[fold][0], sizeof fold4[fold][0]) &&
                  !memcmp(pair + COLS * 8, fold4[fold][1], sizeof fold4[fold][1]),
              "K%lld fold %d: the two-group kernel differs from the one-group kernel", (long long)f.K, fold);
    }

    /* mutations of row 11 (group 1, row 3) against column 0: a nibble in
     * the block of the largest exponent, at the column's largest quant
     * there; the exponent of the block of the largest |dx dy isum| */
    const int mr = 11;
    uint8_t *row = f.plain + (size_t)mr * f.row_bytes;
    for (int m = 0; m < 2; m++) {
        int64_t mb = 0;
        double best = -1;
        for (int64_t b = 0; b < nblk; b++) {
            const uint8_t *x = row + 17 * b, *y = f.cols + 34 * (size_t)b;
            double w = m ? fabs((double)e8m0_half(x[0]) * q8_d(y) * block_isum(x, y)) : (double)x[0];
            if (w > best)
                best = w, mb = b;
        }
        const uint8_t *y0 = f.cols + 34 * (size_t)mb;
        int mj = 0;
        for (int j = 1; j < 32; j++)
            if (abs((int8_t)y0[2 + j]) > abs((int8_t)y0[2 + mj]))
                mj = j;
        const uint8_t saved = m ? row[17 * mb] : row[17 * mb + 1 + mj % 16];
        if (m) {
            row[17 * mb] = (uint8_t)(saved + 1); /* the block's scale doubled */
        } else { /* the value moved by 4 or more: 0..3 to -12 or 12 (sign flipped), the others to 0 */
            const int shift = mj < 16 ? 0 : 4, code = (saved >> shift) & 15;
            const int to = (code & 7) < 4 ? (code ^ 8) | 7 : code & 8;
            row[17 * mb + 1 + mj % 16] = (uint8_t)((saved & ~(15 << shift)) | to << shift);
        }
        encode(&f);
        for (int fold = 0; fold <= 1; fold++) {
            run(&f, COLS, fold, out);
            float got = out[mr / 8][mr % 8];
            int moved = 0;
            for (int r = 0; r < ROWS; r++)
                for (int c = 0; c < COLS; c++)
                    moved += r != mr && memcmp(&out[r / 8][8 * c + r % 8], &fold4[fold][r / 8][8 * c + r % 8], 4);
            CHECK(!within(got, ref[mr][0], mag[mr][0], nblk) && !moved,
                  "K%lld fold %d: a changed %s of row %d %s, %d outputs of other rows moved", (long long)f.K, fold,
                  m ? "exponent" : "nibble", mr, within(got, ref[mr][0], mag[mr][0], nblk) ? "went unseen" : "seen",
                  moved);
        }
        if (m)
            row[17 * mb] = saved;
        else
            row[17 * mb + 1 + mj % 16] = saved;
    }
    free(f.plain), free(f.x8), free(f.cols), free(f.act);
}

int main(void) {
    if (!test_simd_usable(TEST_SIMD))
        test_skip(NAME, "this CPU lacks the AVX-512 VNNI kernels' instruction sets");
    static const int64_t blocks[] = {1, 2, 3, 9, 90};
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        check_k(blocks[i]);
    return test_finish(NAME);
}
