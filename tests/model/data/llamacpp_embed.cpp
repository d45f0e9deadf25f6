// Reference tool, not part of any build: prints llama.cpp's pooled
// embeddings (mean, CLS, last; not normalised) of a token sequence for a
// GGUF file, as one JSON object.  embed_refs.json was made with it (see
// README.md there).  A client of llama.cpp's public API, built outside
// this tree against the prebuilt libraries of node-llama-cpp 3.21.1 as
// llamacpp_greedy.cpp is:
//
//   BINS=.../@node-llama-cpp/linux-x64/bins/linux-x64
//   g++ -O2 -std=c++17 -I LLAMA/include -I LLAMA/ggml/include
//       llamacpp_embed.cpp -o llamacpp_embed -L$BINS
//       -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so
//       -Wl,-rpath,$BINS
//
// usage: LLAMA_BINS=$BINS llamacpp_embed MODEL ID...
// The KV cache is f32 and flash attention off, as in llamacpp_greedy.
#include "ggml-backend.h"
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL ID...\n", argv[0]);
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
    for (int i = 2; i < argc; i++) ids.push_back(atoi(argv[i]));
    const int n_embd = llama_model_n_embd(model);
    printf("{\"prompt_ids\": [");
    for (size_t i = 0; i < ids.size(); i++) printf("%s%d", i ? ", " : "", ids[i]);
    printf("]");
    const struct { const char *name; enum llama_pooling_type type; } kinds[] = {
        {"mean", LLAMA_POOLING_TYPE_MEAN}, {"cls", LLAMA_POOLING_TYPE_CLS}, {"last", LLAMA_POOLING_TYPE_LAST}};
    for (const auto &k : kinds) {
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx = cp.n_batch = cp.n_ubatch = 256;
        cp.n_threads = cp.n_threads_batch = 1;
        cp.type_k = cp.type_v = GGML_TYPE_F32;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        cp.embeddings = true;
        cp.pooling_type = k.type;
        llama_context *ctx = llama_init_from_model(model, cp);
        if (!ctx) return 1;
        llama_batch batch = llama_batch_get_one(ids.data(), (int32_t)ids.size());
        if (llama_decode(ctx, batch) != 0) return 1;
        const float *e = llama_get_embeddings_seq(ctx, 0);
        if (!e) return 1;
        printf(", \"%s\": [", k.name);
        for (int i = 0; i < n_embd; i++) printf("%s%.9g", i ? ", " : "", e[i]);
        printf("]");
        llama_free(ctx);
    }
    printf("}\n");
    llama_model_free(model);
    return 0;
}
