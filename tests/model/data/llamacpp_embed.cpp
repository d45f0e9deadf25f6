// Reference tool, not part of any build: prints llama.cpp's pooled
// embedding of a token sequence for a GGUF file as one JSON object.
// embed_refs.json was made with it (see README.md there).  A client of
// llama.cpp's public API, built outside this tree against the prebuilt
// libraries of node-llama-cpp 3.21.1, as llamacpp_greedy.cpp:
//
//   BINS=.../@node-llama-cpp/linux-x64/bins/linux-x64
//   g++ -O2 -std=c++17 -I LLAMA/include -I LLAMA/ggml/include
//       llamacpp_embed.cpp -o llamacpp_embed -L$BINS
//       -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so
//       -Wl,-rpath,$BINS
//   (one command; LLAMA is the llama.cpp source of the same release)
//
// usage: LLAMA_BINS=$BINS llamacpp_embed MODEL POOLING ID...
// POOLING: file (the file's pooling_type), or none|mean|cls|last to
// override it (what llama-server --pooling does).  Prints the pooled
// embedding (llama_get_embeddings_seq), its Euclidean norm, and the
// embedding divided by it (llama-server's default embd_normalize 2).
// CPU, 1 thread, f32 KV cache, flash attention off, the sequence as one
// batch (a non-causal model must see it in one ubatch).
#include "ggml-backend.h"
#include "llama.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL file|none|mean|cls|last ID...\n", argv[0]);
        return 2;
    }
    const char *bins = getenv("LLAMA_BINS");
    llama_log_set(quiet, nullptr);
    ggml_backend_load_all_from_path(bins ? bins : ".");
    llama_backend_init();

    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    std::vector<llama_token> ids;
    for (int i = 3; i < argc; i++)
        ids.push_back((llama_token)atoi(argv[i]));

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 256;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.embeddings = true;
    const char *pool = argv[2];
    cp.pooling_type = !strcmp(pool, "none") ? LLAMA_POOLING_TYPE_NONE
                      : !strcmp(pool, "mean") ? LLAMA_POOLING_TYPE_MEAN
                      : !strcmp(pool, "cls")  ? LLAMA_POOLING_TYPE_CLS
                      : !strcmp(pool, "last") ? LLAMA_POOLING_TYPE_LAST
                                              : LLAMA_POOLING_TYPE_UNSPECIFIED;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx || ids.empty() || ids.size() > 256) {
        fprintf(stderr, "no context, or 1..256 ids needed\n");
        return 1;
    }
    if (llama_pooling_type(ctx) == LLAMA_POOLING_TYPE_NONE) {
        fprintf(stderr, "pooling none: no pooled embedding\n");
        return 1;
    }
    llama_batch batch = llama_batch_get_one(ids.data(), (int32_t)ids.size());
    if (llama_decode(ctx, batch) != 0)
        return 1;
    const float *e = llama_get_embeddings_seq(ctx, 0);
    const int n = llama_model_n_embd(model);
    if (!e)
        return 1;
    double sq = 0;
    for (int i = 0; i < n; i++)
        sq += (double)e[i] * e[i];
    double norm = std::sqrt(sq);
    printf("{\"pooling\": %d, \"n_embd\": %d, \"prompt_ids\": [", (int)llama_pooling_type(ctx), n);
    for (size_t i = 0; i < ids.size(); i++)
        printf("%s%d", i ? ", " : "", ids[i]);
    printf("], \"norm\": %.9g, \"embedding\": [", norm);
    for (int i = 0; i < n; i++)
        printf("%s%.9g", i ? ", " : "", norm > 0 ? e[i] / norm : 0.0);
    printf("]}\n");
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
