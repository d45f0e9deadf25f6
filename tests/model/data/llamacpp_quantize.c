/* Reference tool, not part of any build: quantizes a GGUF file with
 * llama.cpp's own quantizer (llama_model_quantize, what llama-quantize
 * calls), so that the quantized references of arch_refs.json are files of
 * llama.cpp's type mix (Q4_K_M: q4_K with q6_K for the classifier and
 * some attn_v / ffn_down, and llama.cpp's fallbacks for rows that are not
 * a multiple of 256), not tensorport's idea of it.  make_quant_mix.py
 * (this folder) runs it and turns the mix it chose into a `tport synth
 * --tensor-type` recipe.  Built outside this tree against the prebuilt
 * libraries of node-llama-cpp 3.21.1:
 *
 *   BINS=.../@node-llama-cpp/linux-x64/bins/linux-x64
 *   gcc -O2 -I LLAMA/include -I LLAMA/ggml/include llamacpp_quantize.c
 *       -o llamacpp_quantize -L$BINS -l:libllama.v0.4.0.so
 *       -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,$BINS
 *   (one command; LLAMA is the llama.cpp source of the same release)
 *
 * usage: LLAMA_BINS=$BINS llamacpp_quantize IN.gguf OUT.gguf FTYPE
 * FTYPE is llama.cpp's llama_ftype number (7 = Q8_0, 15 = Q4_K_M); no
 * importance matrix, one thread, every other parameter llama.cpp's
 * default (llama_model_quantize_default_params). */
#include "ggml-backend.h"
#include "llama.h"

#include <stdio.h>
#include <stdlib.h>

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)level, (void)text, (void)user;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s IN.gguf OUT.gguf FTYPE\n", argv[0]);
        return 2;
    }
    const char *bins = getenv("LLAMA_BINS");
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(bins ? bins : ".");
    llama_backend_init();
    llama_model_quantize_params p = llama_model_quantize_default_params();
    p.nthread = 1;
    p.ftype = (enum llama_ftype)atoi(argv[3]);
    uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
    if (rc)
        fprintf(stderr, "llama_model_quantize failed (%u)\n", rc);
    llama_backend_free();
    return rc ? 1 : 0;
}
