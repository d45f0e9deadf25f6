/* Builds model files byte by byte in tests, from the documented layouts
 * (independently of the code under test), and writes them to temp files. */
#ifndef TPORT_TEST_BYTE_BUILDER_H
#define TPORT_TEST_BYTE_BUILDER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct bb {
    uint8_t *p;
    size_t n, cap;
} bb;

static inline void bb_raw(bb *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n)
            cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
        b->p = q;
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->n, src, n);
    b->n += n;
}
static inline void bb_u8(bb *b, uint8_t v) { bb_raw(b, &v, 1); }
static inline void bb_u16(bb *b, uint16_t v) { uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)}; bb_raw(b, x, 2); }
static inline void bb_u32(bb *b, uint32_t v) {
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    bb_raw(b, x, 4);
}
static inline void bb_i32(bb *b, int32_t v) { bb_u32(b, (uint32_t)v); }
static inline void bb_u64(bb *b, uint64_t v) { bb_u32(b, (uint32_t)v); bb_u32(b, (uint32_t)(v >> 32)); }
static inline void bb_f32(bb *b, float f) { uint32_t u; memcpy(&u, &f, 4); bb_u32(b, u); }
static inline void bb_zeros(bb *b, size_t n) { while (n--) bb_u8(b, 0); }
static inline void bb_pad_to(bb *b, size_t align) { while (b->n % align) bb_u8(b, 0); }
static inline void bb_free(bb *b) { free(b->p); memset(b, 0, sizeof *b); }

/* Writes bytes to a fresh temp file; the name is written to path (cap 256). */
static inline void bb_write_temp(const void *p, size_t n, char *path) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, 256, "%s/tport-fmt-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(1);
    }
    if (n && write(fd, p, n) != (ssize_t)n) {
        perror("write");
        exit(1);
    }
    close(fd);
}

static inline void bb_save(const bb *b, char *path) { bb_write_temp(b->p, b->n, path); }

#endif
