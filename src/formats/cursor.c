/* A bounded cursor over a model file's bytes: every read checks that the
 * bytes exist and reports "FILE: offset N: what" when they do not.  Reads
 * are little-endian, or byte-swapped when the cursor says so. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "formats/mf_internal.h"

tport_status mf_fail(const mf_cursor *c, uint64_t at, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset %llu: %s%s", c->path,
                       (unsigned long long)at, msg, c->swap ? " (reading a big-endian GGUF file)" : "");
}

uint32_t mf_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t mf_le64(const uint8_t *p) {
    return (uint64_t)mf_le32(p) | (uint64_t)mf_le32(p + 4) << 32;
}

static uint16_t bswap16(uint16_t v) { return (uint16_t)(v >> 8 | v << 8); }
static uint32_t bswap32(uint32_t v) {
    return v >> 24 | (v >> 8 & 0xff00u) | (v << 8 & 0xff0000u) | v << 24;
}
static uint64_t bswap64(uint64_t v) { return (uint64_t)bswap32((uint32_t)v) << 32 | bswap32((uint32_t)(v >> 32)); }

void mf_bswap_elems(void *p, uint64_t n, size_t size) {
    uint8_t *b = p;
    for (uint64_t i = 0; i < n; i++, b += size)
        for (size_t j = 0; j < size / 2; j++) {
            uint8_t t = b[j];
            b[j] = b[size - 1 - j];
            b[size - 1 - j] = t;
        }
}

tport_status mf_need(const mf_cursor *c, uint64_t n, const char *what) {
    if (n > mf_left(c))
        return mf_fail(c, c->pos, "%s: needs %llu bytes, only %llu left in the file", what,
                       (unsigned long long)n, (unsigned long long)mf_left(c));
    return TPORT_STATUS_OK;
}

tport_status mf_skip(mf_cursor *c, uint64_t n, const char *what) {
    MF_TRY(mf_need(c, n, what));
    c->pos += n;
    return TPORT_STATUS_OK;
}

tport_status mf_read_bytes(mf_cursor *c, uint64_t n, const uint8_t **p, const char *what) {
    MF_TRY(mf_need(c, n, what));
    *p = c->data + c->pos;
    c->pos += n;
    return TPORT_STATUS_OK;
}

tport_status mf_read_u8(mf_cursor *c, uint8_t *v, const char *what) {
    MF_TRY(mf_need(c, 1, what));
    *v = c->data[c->pos++];
    return TPORT_STATUS_OK;
}

tport_status mf_read_u16(mf_cursor *c, uint16_t *v, const char *what) {
    MF_TRY(mf_need(c, 2, what));
    const uint8_t *p = c->data + c->pos;
    *v = (uint16_t)(p[0] | p[1] << 8);
    if (c->swap)
        *v = bswap16(*v);
    c->pos += 2;
    return TPORT_STATUS_OK;
}

tport_status mf_read_u32(mf_cursor *c, uint32_t *v, const char *what) {
    MF_TRY(mf_need(c, 4, what));
    *v = mf_le32(c->data + c->pos);
    if (c->swap)
        *v = bswap32(*v);
    c->pos += 4;
    return TPORT_STATUS_OK;
}

tport_status mf_read_i32(mf_cursor *c, int32_t *v, const char *what) {
    uint32_t u;
    MF_TRY(mf_read_u32(c, &u, what));
    memcpy(v, &u, sizeof u);
    return TPORT_STATUS_OK;
}

tport_status mf_read_u64(mf_cursor *c, uint64_t *v, const char *what) {
    MF_TRY(mf_need(c, 8, what));
    *v = mf_le64(c->data + c->pos);
    if (c->swap)
        *v = bswap64(*v);
    c->pos += 8;
    return TPORT_STATUS_OK;
}

tport_status mf_read_f32(mf_cursor *c, float *v, const char *what) {
    uint32_t u;
    MF_TRY(mf_read_u32(c, &u, what));
    memcpy(v, &u, sizeof u);
    return TPORT_STATUS_OK;
}

tport_status mf_align(mf_cursor *c, uint64_t align, const char *what) {
    uint64_t rem = c->pos & (align - 1);
    if (rem)
        return mf_skip(c, align - rem, what);
    return TPORT_STATUS_OK;
}
