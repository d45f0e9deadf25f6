/* Shared by gen_mxfp4.c (which wrote the vectors in this folder) and
 * tests/quant/test_quant_mxfp4.c (which checks tensorport against them, and
 * against ggml live when node-llama-cpp is installed): the input rows, and
 * ggml's MXFP4 reference functions dlopen'ed from node-llama-cpp's prebuilt
 * libggml-base.so.  Header-only, every function static: each includer is
 * one program. */
#ifndef TPORT_TEST_MXFP4_GGML_H
#define TPORT_TEST_MXFP4_GGML_H

#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

enum { MX_ROWS = 8, MX_ROW = 256, MX_N = MX_ROWS * MX_ROW, MX_BLOCK = 32, MX_BYTES = 17 };

/* The LCG and uniform draw of ../shared/testdata/quant-current: exact f32
 * values in [-1, 1). */
static float mx_uniform(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)((int32_t)(*s >> 8) - 8388608) / 8388608.0f;
}

/* 8 rows of 256 (8 blocks each):
 *   0  u                         4  huge: u * 2^(120 + blk), one block amax FLT_MAX
 *   1  u * 2^-6                  5  tiny: u * 2^(-118 - 4 blk) (scale exponent < 0)
 *   2  u^3 * 8 (heavy tails)     6  u * 2^k, k drawn in [-30, 30] per block
 *   3  hand-picked blocks        7  amax just below 2^k (log2f rounds up)
 * Row 3's blocks: all zeros; +-0.5; 6 then every midpoint between two codes
 * (ties); -0.0 and tiny values around -3; amax exactly 8; amax 2^-125
 * (the smallest exponent that needs no wrap); 1e-45 (the smallest
 * subnormal); u * 3 with -0.0. */
static void mx_fill_input(float *x) {
    uint32_t s = 0x2545F491u;
    static const float mid[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
    for (int r = 0; r < MX_ROWS; r++)
        for (int i = 0; i < MX_ROW; i++) {
            const int blk = i / MX_BLOCK, j = i % MX_BLOCK;
            const float u = mx_uniform(&s);
            float v = u;
            switch (r) {
            case 1: v = ldexpf(u, -6); break;
            case 2: v = u * u * u * 8.0f; break;
            case 3:
                switch (blk) {
                case 0: v = 0.0f; break;
                case 1: v = j % 2 ? -0.5f : 0.5f; break;
                case 2: v = j == 0 ? 6.0f : (j % 2 ? -mid[j % 7] : mid[j % 7]); break;
                case 3: v = j == 5 ? -3.0f : j % 3 == 0 ? -0.0f : ldexpf(u, -20); break;
                case 4: v = j == 7 ? 8.0f : u * 8.0f; break;
                case 5: v = j == 0 ? ldexpf(1.0f, -125) : ldexpf(u, -126); break;
                case 6: v = j == 3 ? 1e-45f : 0.0f; break;
                default: v = j == 9 ? -0.0f : u * 3.0f; break;
                }
                break;
            case 4: v = blk == 7 && j == 0 ? 3.4028235e38f : ldexpf(u, 120 + blk); break;
            case 5: v = ldexpf(u, -118 - 4 * blk); break;
            case 6: {
                static int k;
                if (j == 0)
                    k = (int)(s >> 27) * 2 - 31; /* from the draw before: odd k in [-31, 31] */
                v = ldexpf(u, k);
                break;
            }
            case 7: {
                const float top = nextafterf(ldexpf(1.0f, blk - 3), 0.0f);
                v = j == 11 ? (blk % 2 ? -top : top) : u * top;
                break;
            }
            default: break;
            }
            x[r * MX_ROW + i] = v;
        }
}

typedef void (*mx_quant_fn)(const float *x, void *y, int64_t k);
typedef void (*mx_dequant_fn)(const void *x, float *y, int64_t k);

typedef struct mx_ggml {
    void *lib;
    mx_quant_fn quantize;     /* quantize_row_mxfp4_ref */
    mx_dequant_fn dequantize; /* dequantize_row_mxfp4   */
} mx_ggml;

/* node-llama-cpp's libggml-base.so under `root` (an npm prefix); false,
 * with the reason in why[], when it is not there. */
static int mx_ggml_open(const char *root, mx_ggml *g, char *why, size_t cap) {
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
    /* dlsym returns an object pointer; POSIX guarantees function pointers convert */
    *(void **)&g->quantize = dlsym(g->lib, "quantize_row_mxfp4_ref");
    *(void **)&g->dequantize = dlsym(g->lib, "dequantize_row_mxfp4");
    if (!g->quantize || !g->dequantize) {
        snprintf(why, cap, "%s has no MXFP4 reference functions", path);
        return 0;
    }
    return 1;
}

#endif
