/* The round trip of the x8 layouts' tests (test_quant_x8_mxfp4.c,
 * test_quant_x8_q6k.c): how many of `rows` plain rows (row_bytes each)
 * a layout's row decoder does not give back exactly from their groups
 * (group_bytes each, 8 rows a group; n: the decoder's block count). */
#ifndef TPORT_TEST_X8_ROUND_TRIP_H
#define TPORT_TEST_X8_ROUND_TRIP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*x8_row_fn)(const uint8_t *group, int r, int64_t n, uint8_t *out);

static int x8_rows_read_back_differ(x8_row_fn row, const uint8_t *x8, size_t group_bytes, const uint8_t *plain,
                                    size_t row_bytes, int rows, int64_t n) {
    int bad = 0;
    uint8_t *back = malloc(row_bytes);
    for (int r = 0; r < rows; r++) {
        row(x8 + (size_t)(r / 8) * group_bytes, r % 8, n, back);
        bad += memcmp(back, plain + (size_t)r * row_bytes, row_bytes) != 0;
    }
    free(back);
    return bad;
}

#endif
