/* Writes this folder's MXFP4 vectors with ggml's own reference functions
 * (node-llama-cpp's prebuilt libggml-base.so; see README.md):
 *   cc -O2 -o /tmp/gen_mxfp4 gen_mxfp4.c -ldl -lm
 *   /tmp/gen_mxfp4 "$TPORT_NODE_LLAMA_CPP" .
 * input.f32: the rows of mx_fill_input; mxfp4.q: them quantized row by row
 * by quantize_row_mxfp4_ref; mxfp4.deq.f32: those bytes decoded by
 * dequantize_row_mxfp4. */
#include <stdlib.h>

#include "mxfp4_ggml.h"

static int write_file(const char *dir, const char *name, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    const int ok = f && fwrite(p, 1, n, f) == n;
    if (f && fclose(f) != 0)
        return 0;
    if (!ok)
        fprintf(stderr, "gen_mxfp4: cannot write %s\n", path);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gen_mxfp4 NODE_LLAMA_CPP_PREFIX OUT_DIR\n");
        return 2;
    }
    mx_ggml g;
    char why[1200];
    if (!mx_ggml_open(argv[1], &g, why, sizeof why)) {
        fprintf(stderr, "gen_mxfp4: %s\n", why);
        return 1;
    }
    static float x[MX_N], y[MX_N];
    static unsigned char q[MX_N / MX_BLOCK * MX_BYTES];
    mx_fill_input(x);
    for (int r = 0; r < MX_ROWS; r++)
        g.quantize(x + r * MX_ROW, q + r * (MX_ROW / MX_BLOCK) * MX_BYTES, MX_ROW);
    g.dequantize(q, y, MX_N);
    return write_file(argv[2], "input.f32", x, sizeof x) && write_file(argv[2], "mxfp4.q", q, sizeof q) &&
                   write_file(argv[2], "mxfp4.deq.f32", y, sizeof y)
               ? 0
               : 1;
}
