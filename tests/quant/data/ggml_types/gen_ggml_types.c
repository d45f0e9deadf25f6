/* Writes this folder's vectors with ggml's own functions (node-llama-cpp's
 * prebuilt libggml-base.so; see README.md):
 *   cc -std=c11 -D_GNU_SOURCE -O2 -o /tmp/gen_ggml_types gen_ggml_types.c -ldl -lm
 *   /tmp/gen_ggml_types "$TPORT_NODE_LLAMA_CPP" .
 * For every type of gt_types: <t>.blocks (2 KiB of gt_fill_blocks' blocks,
 * whole blocks) and <t>.deq.f32 (them decoded by dequantize_row_<t>).  For
 * the types tensorport quantizes: input.f32 (gt_fill_input), <t>.q (row by
 * row through quantize_row_<t>_ref; not for IQ2_XXS, weighted only) and <t>.qw (quantize_<t> over all rows
 * with the importance weights of gt_fill_weights). */
#include <stdlib.h>

#include "ggml_types.h"

static int write_file(const char *dir, const char *name, const char *ext, const void *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, ext);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(p, 1, n, f) == n;
    if (f && fclose(f) != 0)
        ok = 0;
    if (!ok)
        fprintf(stderr, "gen_ggml_types: cannot write %s\n", path);
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gen_ggml_types NODE_LLAMA_CPP_PREFIX OUT_DIR\n");
        return 2;
    }
    gt_ggml g;
    char why[1200];
    if (!gt_ggml_open(argv[1], &g, why, sizeof why)) {
        fprintf(stderr, "gen_ggml_types: %s\n", why);
        return 1;
    }
    static float x[GT_N], w[GT_ROW], y[GT_BLOCKS_BYTES * 8];
    static uint8_t blocks[GT_BLOCKS_BYTES], q[GT_N * 2];
    gt_fill_input(x);
    gt_fill_weights(w);
    int ok = write_file(argv[2], "input", ".f32", x, sizeof x);
    for (int k = 0; k < GT_NTYPES && ok; k++) {
        const gt_type *t = &gt_types[k];
        gt_dequant_fn deq = (gt_dequant_fn)(uintptr_t)gt_sym(&g, "dequantize_row_", t->name, "");
        if (!deq) {
            fprintf(stderr, "gen_ggml_types: no dequantize_row_%s\n", t->name);
            return 1;
        }
        const int nb = GT_BLOCKS_BYTES / t->bytes;
        gt_fill_blocks(t, blocks, nb, 0x51ED270Bu + (uint32_t)t->id);
        deq(blocks, y, (int64_t)nb * t->block);
        ok = write_file(argv[2], t->name, ".blocks", blocks, (size_t)nb * (size_t)t->bytes) &&
             write_file(argv[2], t->name, ".deq.f32", y, (size_t)nb * (size_t)t->block * sizeof(float));
        if (!ok || !t->quantizer)
            continue;
        gt_quant_ref_fn ref = (gt_quant_ref_fn)(uintptr_t)gt_sym(&g, "quantize_row_", t->name, "_ref");
        gt_quantize_fn qz = (gt_quantize_fn)(uintptr_t)gt_sym(&g, "quantize_", t->name, "");
        if ((!ref && t->quantizer == 1) || !qz) { /* 3: .q from quantize_<t>(NULL) */
            fprintf(stderr, "gen_ggml_types: no quantizer for %s\n", t->name);
            return 1;
        }
        const size_t row_bytes = (size_t)(GT_ROW / t->block) * (size_t)t->bytes;
        if (t->quantizer == 1) { /* 2: weighted only, no .q */
            for (int r = 0; r < GT_ROWS; r++)
                ref(x + r * GT_ROW, q + r * row_bytes, GT_ROW);
            ok = write_file(argv[2], t->name, ".q", q, GT_ROWS * row_bytes);
        } else if (t->quantizer == 3) {
            ok = qz(x, q, GT_ROWS, GT_ROW, NULL) == GT_ROWS * row_bytes &&
                 write_file(argv[2], t->name, ".q", q, GT_ROWS * row_bytes);
        }
        memset(q, 0, sizeof q);
        ok = ok && qz(x, q, GT_ROWS, GT_ROW, w) == GT_ROWS * row_bytes &&
             write_file(argv[2], t->name, ".qw", q, GT_ROWS * row_bytes);
    }
    return ok ? 0 : 1;
}
