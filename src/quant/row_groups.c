/* The row-grouped removed types; see row_groups.h for the layout. */
#include "row_groups.h"

#include <string.h>

#include "core/error.h"
#include "type_table.h"

/* ggml-aarch64.c: quantize_q4_0_4x4 = quantize_q4_0_nr_bl(.., 4, 4),
 * _4x8 = (.., 4, 8), _8x8 = (.., 8, 8), each with xor 0x88; IQ4_NL_4_4 is
 * repack_iq4_nl_to_iq4_nl_4_bl(.., 4), no xor. */
static const tport_row_group groups[] = {
    {TPORT_TYPE_Q4_0_4_4, TPORT_TYPE_Q4_0, 4, 4, 0x88},
    {TPORT_TYPE_Q4_0_4_8, TPORT_TYPE_Q4_0, 4, 8, 0x88},
    {TPORT_TYPE_Q4_0_8_8, TPORT_TYPE_Q4_0, 8, 8, 0x88},
    {TPORT_TYPE_IQ4_NL_4_4, TPORT_TYPE_IQ4_NL, 4, 4, 0x00},
};

enum { QK = 32, BLOCK = 18, QS = 16 };

const tport_row_group *tport_row_group_of(tport_type_id id) {
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        if (groups[i].id == id)
            return &groups[i];
    return NULL;
}

tport_status tport_row_group_check(const tport_row_group *g, int64_t ne0, int64_t nrows) {
    const tport_type_traits *t = tport_traits(g->id);
    const char *name = t ? t->info.name : "row-grouped type";
    if (ne0 <= 0 || ne0 % QK)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: a row of %lld elements is not whole blocks of %d", name,
                           (long long)ne0, QK);
    /* a partial group would have been read past its end by ggml's
     * quantize_q4_0_nr_bl; no file holds one */
    if (nrows <= 0 || nrows % g->rows)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s interleaves rows in groups of %d; %lld rows is not a multiple of %d", name, g->rows,
                           (long long)nrows, g->rows);
    if (ne0 > INT64_MAX / 64 / nrows)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: [%lld x %lld] is too large", name, (long long)ne0,
                           (long long)nrows);
    return TPORT_STATUS_OK;
}

tport_status tport_row_group_ungroup(const tport_row_group *g, const void *src, void *dst, int64_t ne0,
                                     int64_t nrows) {
    tport_status st = tport_row_group_check(g, ne0, nrows);
    if (st != TPORT_STATUS_OK)
        return st;
    if (!src || !dst)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "row groups: NULL buffer");
    const int64_t nb = ne0 / QK, R = g->rows, chunks = QS * R / g->chunk;
    const uintptr_t s0 = (uintptr_t)src, d0 = (uintptr_t)dst, len = (uintptr_t)(nb * nrows * BLOCK);
    if (d0 < s0 + len && s0 < d0 + len)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "row groups: buffers overlap");
    const uint8_t *sb = src;
    uint8_t *d = dst;
    for (int64_t row0 = 0; row0 < nrows; row0 += R) {
        for (int64_t x = 0; x < nb; x++, sb += R * BLOCK) {
            /* the scales first, one per row of the group */
            for (int64_t r = 0; r < R; r++)
                memcpy(d + ((row0 + r) * nb + x) * BLOCK, sb + 2 * r, 2);
            const uint8_t *qs = sb + 2 * R;
            for (int64_t c = 0; c < chunks; c++) {
                uint8_t *out = d + ((row0 + c % R) * nb + x) * BLOCK + 2 + c / R * g->chunk;
                for (int k = 0; k < g->chunk; k++)
                    out[k] = qs[c * g->chunk + k] ^ g->xor_mask;
            }
        }
    }
    return TPORT_STATUS_OK;
}
