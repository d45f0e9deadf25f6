/* Shared by gen_ggml_types.c (which wrote the vectors in this folder) and
 * tests/quant/test_quant_ggml_types.c (which checks tensorport against them,
 * and against ggml live when node-llama-cpp is installed): the types of
 * issue 39 that ggml's libggml-base.so exports functions for, the blocks and
 * input rows they are checked on, and the dlopen of ggml's functions
 * (node-llama-cpp's prebuilt libggml-base.so).  Header-only, every
 * function static: each includer is one program. */
#ifndef TPORT_TEST_GGML_TYPES_H
#define TPORT_TEST_GGML_TYPES_H

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

typedef void (*gt_dequant_fn)(const void *x, float *y, int64_t k);
typedef void (*gt_quant_ref_fn)(const float *x, void *y, int64_t k);
typedef size_t (*gt_quantize_fn)(const float *src, void *dst, int64_t nrow, int64_t n_per_row, const float *w);

/* A type of ggml.h: its id, block, bytes, and where its f16 scale sits
 * (-1: none; -2: IQ1_M's, spread over the top nibbles of 4 u16 at 48). */
typedef struct gt_type {
    const char *name; /* ggml's, as in its function names */
    int id, block, bytes, f16_at;
    int quantizer; /* 1: tensorport has a reference quantizer for it; 2: only
                    * with importance weights (ggml asserts them); 3: one,
                    * ggml's quantize_<t> without weights (no _ref) */
} gt_type;

static const gt_type gt_types[] = {
    {"iq2_xxs", 16, 256, 66, 0, 2}, {"iq2_xs", 17, 256, 74, 0, 2}, {"iq3_xxs", 18, 256, 98, 0, 1},
    {"iq1_s", 19, 256, 50, 0, 2},   {"iq3_s", 21, 256, 110, 0, 1}, {"iq2_s", 22, 256, 82, 0, 1},
    {"iq1_m", 29, 256, 56, -2, 3},  {"tq1_0", 34, 256, 54, 52, 1}, {"tq2_0", 35, 256, 66, 64, 1},
    {"nvfp4", 40, 64, 36, -1, 1},   {"q1_0", 41, 128, 18, 0, 1},   {"q2_0", 42, 64, 18, 0, 1},
};
enum { GT_NTYPES = sizeof gt_types / sizeof gt_types[0] };

/* Input rows for the quantizers: GT_ROWS rows of GT_ROW floats. */
enum { GT_ROWS = 8, GT_ROW = 512, GT_N = GT_ROWS * GT_ROW, GT_BLOCKS_BYTES = 2048 };

/* The LCG of ../shared/testdata/quant-current. */
static uint32_t gt_next(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return *s;
}
static float gt_uniform(uint32_t *s) { return (float)((int32_t)(gt_next(s) >> 8) - 8388608) / 8388608.0f; }

/* A finite f16 of either sign, magnitude 2^-14 .. 2^5 (a zero or a
 * subnormal one time in 16). */
static uint16_t gt_half(uint32_t *s) {
    const uint32_t r = gt_next(s);
    const uint16_t sign = (uint16_t)((r >> 31) << 15), man = (uint16_t)((r >> 8) & 0x3ff);
    if ((r & 15) == 0)
        return (uint16_t)(sign | ((r >> 4) & 1 ? man : 0));
    return (uint16_t)(sign | (1 + (r >> 4) % 20) << 10 | man);
}

/* nblocks random blocks of type t: every byte random, then the f16 scale
 * made finite (a random f16 is Inf or NaN 1 time in 32, and NaN payloads
 * are not what is being compared). */
static void gt_fill_blocks(const gt_type *t, uint8_t *b, int nblocks, uint32_t seed) {
    uint32_t s = seed;
    for (int k = 0; k < nblocks; k++, b += t->bytes) {
        for (int i = 0; i < t->bytes; i++)
            b[i] = (uint8_t)(gt_next(&s) >> 24);
        const uint16_t h = gt_half(&s);
        if (t->f16_at >= 0) {
            b[t->f16_at] = (uint8_t)h;
            b[t->f16_at + 1] = (uint8_t)(h >> 8);
        } else if (t->f16_at == -2) {
            /* nibble k of the f16 is the top nibble of u16 k at byte 48 */
            for (int q = 0; q < 4; q++)
                b[48 + 2 * q + 1] = (uint8_t)((b[48 + 2 * q + 1] & 0x0f) | ((h >> (4 * q)) & 0xf) << 4);
        }
    }
}

/* Rows: 0 uniform; 1 uniform * 2^-10; 2 heavy tails (u^3 * 8); 3 with
 * exact zeros (all of elements 32..63: an all-zero group of 32 inside a
 * block), -0.0 and repeated values (ties of |x|); 4 tiny (u * 2^-20:
 * NVFP4's subnormal scales); 5 huge (u * 2^14: NVFP4's saturated scale);
 * 6 blocks of one sign; 7 random magnitudes per 16 (2^-12 .. 2^6). */
static void gt_fill_input(float *x) {
    uint32_t s = 0x2545F491u;
    for (int r = 0; r < GT_ROWS; r++) {
        int k = 0;
        for (int i = 0; i < GT_ROW; i++) {
            const float u = gt_uniform(&s);
            float v = u;
            switch (r) {
            case 1: v = ldexpf(u, -10); break;
            case 2: v = u * u * u * 8.0f; break;
            case 3: v = (i >= 32 && i < 64) || i % 5 == 0 ? 0.0f : i % 7 == 0 ? -0.0f : i % 3 == 0 ? (i % 2 ? -0.75f : 0.75f) : u; break;
            case 4: v = ldexpf(u, -20); break;
            case 5: v = ldexpf(u, 14); break;
            case 6: v = (i / 64) % 2 ? fabsf(u) : -fabsf(u); break;
            case 7:
                if (i % 16 == 0)
                    k = (int)(gt_next(&s) % 19) - 12;
                v = ldexpf(u, k);
                break;
            default: break;
            }
            x[r * GT_ROW + i] = v;
        }
    }
}

/* Importance weights for quantize_<t>: positive, spread over 1/8 .. 8. */
static void gt_fill_weights(float *w) {
    uint32_t s = 0x9E3779B9u;
    for (int i = 0; i < GT_ROW; i++) {
        /* the exponent first, then the mantissa: the order gcc evaluated
         * the two calls in when they were arguments of one call (C leaves
         * it unspecified; clang takes the other one), which the committed
         * .qw files were made with */
        const int e = (int)(gt_next(&s) % 7) - 3;
        const float m = 1.0f + fabsf(gt_uniform(&s));
        w[i] = ldexpf(m, e);
    }
}

typedef struct gt_ggml {
    void *lib;
} gt_ggml;

/* node-llama-cpp's libggml-base.so under `root` (an npm prefix); 0, with
 * the reason in why[], when it is not there. */
static int gt_ggml_open(const char *root, gt_ggml *g, char *why, size_t cap) {
    struct utsname u;
    memset(g, 0, sizeof *g);
    if (!root || !*root || uname(&u) != 0) {
        snprintf(why, cap, "TPORT_NODE_LLAMA_CPP not set");
        return 0;
    }
    const char *plat = !strcmp(u.machine, "x86_64") ? "linux-x64" : !strcmp(u.machine, "aarch64") ? "linux-arm64" : "";
    char path[1024];
    snprintf(path, sizeof path, "%s/node_modules/@node-llama-cpp/%s/bins/%s/libggml-base.so", root, plat, plat);
    if (access(path, R_OK) != 0) {
        snprintf(why, cap, "%s absent", path);
        return 0;
    }
    g->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) {
        snprintf(why, cap, "dlopen %s: %s", path, dlerror());
        return 0;
    }
    /* the IQ3 quantizers need their neighbour tables (ggml_quantize_init) */
    void (*iq3_init)(int) = (void (*)(int))(uintptr_t)dlsym(g->lib, "iq3xs_init_impl");
    if (!iq3_init) {
        snprintf(why, cap, "%s has no iq3xs_init_impl", path);
        return 0;
    }
    iq3_init(256);
    iq3_init(512);
    void (*iq2_init)(int) = (void (*)(int))(uintptr_t)dlsym(g->lib, "iq2xs_init_impl");
    if (!iq2_init) {
        snprintf(why, cap, "%s has no iq2xs_init_impl", path);
        return 0;
    }
    iq2_init(16); /* GGML_TYPE_IQ2_XXS */
    iq2_init(17); /* GGML_TYPE_IQ2_XS */
    iq2_init(22); /* GGML_TYPE_IQ2_S */
    iq2_init(19); /* GGML_TYPE_IQ1_S (and IQ1_M) */
    return 1;
}

/* ggml's `prefix<name>suffix`, or NULL. */
static void *gt_sym(const gt_ggml *g, const char *prefix, const char *name, const char *suffix) {
    char sym[128];
    snprintf(sym, sizeof sym, "%s%s%s", prefix, name, suffix);
    return g->lib ? dlsym(g->lib, sym) : NULL;
}

#endif
