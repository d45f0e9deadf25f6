/* Turns a little-endian GGUF v3 file into the big-endian file an s390x
 * writer would have made (formats.md 2.4; data as gguf-py's
 * gguf_convert_endian.py swaps it), in place.  Written from the documented
 * layout, independently of the reader.  Tensors of other types keep their
 * bytes (the reader must refuse them). */
#ifndef TPORT_TEST_GGUF_BIG_ENDIAN_H
#define TPORT_TEST_GGUF_BIG_ENDIAN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct gbe {
    uint8_t *p;
    size_t n, pos;
    bool ok;
} gbe;

static inline void gbe_flip(uint8_t *p, size_t k) {
    for (size_t j = 0; j < k / 2; j++) {
        uint8_t t = p[j];
        p[j] = p[k - 1 - j];
        p[k - 1 - j] = t;
    }
}
/* Reads a little-endian field of k bytes and swaps it where it lies. */
static inline uint64_t gbe_field(gbe *g, size_t k) {
    if (!g->ok || k > g->n - g->pos) {
        g->ok = false;
        return 0;
    }
    uint64_t v = 0;
    for (size_t j = 0; j < k; j++)
        v |= (uint64_t)g->p[g->pos + j] << (8 * j);
    gbe_flip(g->p + g->pos, k);
    g->pos += k;
    return v;
}
static inline void gbe_skip(gbe *g, uint64_t k) {
    if (!g->ok || k > g->n - g->pos)
        g->ok = false;
    else
        g->pos += (size_t)k;
}
static inline void gbe_value(gbe *g, uint32_t type, int depth) {
    static const uint8_t size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type == 8) {
        gbe_skip(g, gbe_field(g, 8));
    } else if (type == 9) {
        uint32_t et = (uint32_t)gbe_field(g, 4);
        uint64_t n = gbe_field(g, 8);
        for (uint64_t i = 0; i < n && g->ok && depth < 8; i++)
            gbe_value(g, et, depth + 1);
    } else if (type < 13) {
        gbe_field(g, size[type]);
    } else {
        g->ok = false;
    }
}

/* Element size (block = 1) or block geometry; false for types whose
 * big-endian layout this helper does not know. */
static inline bool gbe_type(uint32_t type, uint64_t *block, uint64_t *bytes, int *n_f16, uint64_t f16_at[2]) {
    *block = 1, *n_f16 = 0;
    switch (type) {
    case 0: case 26: *bytes = 4; return true;           /* f32, i32 */
    case 1: case 25: case 30: *bytes = 2; return true;  /* f16, i16, bf16 */
    case 24: *bytes = 1; return true;                   /* i8 */
    case 2: *block = 32, *bytes = 18, *n_f16 = 1, f16_at[0] = 0; return true;   /* q4_0: d */
    case 8: *block = 32, *bytes = 34, *n_f16 = 1, f16_at[0] = 0; return true;   /* q8_0: d */
    case 12: *block = 256, *bytes = 144, *n_f16 = 2, f16_at[0] = 0, f16_at[1] = 2; return true; /* q4_K */
    case 14: *block = 256, *bytes = 210, *n_f16 = 1, f16_at[0] = 208; return true; /* q6_K: d last */
    default: return false;
    }
}

/* Returns false if the bytes are not a GGUF v3 file it can walk. */
static inline bool gguf_to_big_endian(uint8_t *p, size_t n) {
    gbe g = {p, n, 4, true};
    if (n < 24 || memcmp(p, "GGUF", 4) || gbe_field(&g, 4) != 3)
        return false;
    uint64_t n_tensors = gbe_field(&g, 8), n_kv = gbe_field(&g, 8), align = 32;
    for (uint64_t i = 0; i < n_kv && g.ok; i++) {
        uint64_t klen = gbe_field(&g, 8);
        size_t kat = g.pos;
        gbe_skip(&g, klen);
        uint32_t type = (uint32_t)gbe_field(&g, 4);
        size_t vat = g.pos;
        gbe_value(&g, type, 0);
        if (g.ok && type == 4 && klen == 17 && !memcmp(p + kat, "general.alignment", 17)) {
            align = 0;
            for (int j = 0; j < 4; j++)
                align = align << 8 | p[vat + (size_t)j]; /* now big-endian */
        }
    }
    if (n_tensors > n / 8)
        return false;
    uint32_t *types = calloc((size_t)n_tensors + 1, sizeof *types);
    uint64_t *offs = calloc((size_t)n_tensors + 1, sizeof *offs), *nel = calloc((size_t)n_tensors + 1, 8);
    for (uint64_t t = 0; t < n_tensors && g.ok; t++) {
        gbe_skip(&g, gbe_field(&g, 8));
        uint32_t nd = (uint32_t)gbe_field(&g, 4);
        nel[t] = 1;
        for (uint32_t d = 0; d < nd && d < 4; d++)
            nel[t] *= gbe_field(&g, 8);
        types[t] = (uint32_t)gbe_field(&g, 4);
        offs[t] = gbe_field(&g, 8);
    }
    size_t start = (g.pos + (size_t)align - 1) / (size_t)align * (size_t)align;
    for (uint64_t t = 0; t < n_tensors && g.ok; t++) {
        uint64_t block, bytes, at[2];
        int n_f16;
        if (!gbe_type(types[t], &block, &bytes, &n_f16, at))
            continue;
        uint64_t size = nel[t] / block * bytes;
        if (start + offs[t] > n || size > n - start - offs[t]) {
            g.ok = false;
            break;
        }
        uint8_t *d = p + start + offs[t];
        for (uint64_t b = 0; b < size; b += bytes) {
            if (n_f16 == 0)
                gbe_flip(d + b, (size_t)bytes);
            for (int k = 0; k < n_f16; k++)
                gbe_flip(d + b + at[k], 2);
        }
    }
    free(types), free(offs), free(nel);
    return g.ok;
}

#endif
