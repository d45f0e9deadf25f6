// Reference tool, not part of any build: prints llama.cpp's greedy ids for
// a GGUF file, with the top-1/top-2 logit gap of every generated step, as
// one JSON object. arch_refs.json was made with it (see README.md there).
// It is a client of llama.cpp's public API, built outside this tree against
// the prebuilt libraries of node-llama-cpp 3.21.1:
//
//   BINS=.../@node-llama-cpp/linux-x64/bins/linux-x64
//   g++ -O2 -std=c++17 -I LLAMA/include -I LLAMA/ggml/include
//       llamacpp_greedy.cpp -o llamacpp_greedy -L$BINS
//       -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so
//       -Wl,-rpath,$BINS
//   (one command; LLAMA is the llama.cpp source of the same release)
//
// usage: LLAMA_BINS=$BINS llamacpp_greedy MODEL N_GEN ids ID...
//        LLAMA_BINS=$BINS llamacpp_greedy MODEL N_GEN text TEXT
// The ids come from an f32 KV cache (what tensorport is compared at). A
// second context with an f16 cache is fed the same tokens: "kv_f16_dev" is
// the largest |logit(f16) - logit(f32)| over all steps and tokens, the size
// of the disagreement llama.cpp's own rounding causes, and a step whose
// top-1/top-2 gap is below twice that is a coin toss.
#include "ggml-backend.h"
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level, const char *, void *) {}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL N_GEN ids ID... | text TEXT\n", argv[0]);
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
    const llama_vocab *vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);
    const int n_gen = atoi(argv[2]);

    std::vector<llama_token> prompt;
    if (strcmp(argv[3], "text") == 0) {
        // add_special = true (BOS where the vocabulary adds it),
        // parse_special = false: what tport run -p does.
        const char *text = argv[4];
        std::vector<llama_token> buf(strlen(text) + 8);
        int n = llama_tokenize(vocab, text, (int32_t)strlen(text), buf.data(),
                               (int32_t)buf.size(), true, false);
        if (n < 0) return 1;
        prompt.assign(buf.begin(), buf.begin() + n);
    } else {
        for (int i = 4; i < argc; i++) prompt.push_back(atoi(argv[i]));
    }

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = 256;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    llama_context *ctx = llama_init_from_model(model, cp);
    cp.type_k = cp.type_v = GGML_TYPE_F16;
    llama_context *ctx16 = llama_init_from_model(model, cp);
    if (!ctx || !ctx16) return 1;

    printf("{\"prompt_ids\": [");
    for (size_t i = 0; i < prompt.size(); i++) printf("%s%d", i ? ", " : "", prompt[i]);
    printf("], \"ids\": [");
    std::vector<double> gaps;
    llama_batch batch = llama_batch_get_one(prompt.data(), (int32_t)prompt.size());
    llama_token tok = 0;
    double dev = 0;
    for (int step = 0; step < n_gen; step++) {
        if (llama_decode(ctx, batch) != 0 || llama_decode(ctx16, batch) != 0) return 1;
        const float *logits = llama_get_logits_ith(ctx, -1);
        const float *l16 = llama_get_logits_ith(ctx16, -1);
        for (int v = 0; v < n_vocab; v++) {
            double d = (double)l16[v] - (double)logits[v];
            dev = d > dev ? d : -d > dev ? -d : dev;
        }
        int best = 0;
        for (int v = 1; v < n_vocab; v++)
            if (logits[v] > logits[best]) best = v;
        float second = -1e30f;
        for (int v = 0; v < n_vocab; v++)
            if (v != best && logits[v] > second) second = logits[v];
        gaps.push_back((double)logits[best] - (double)second);
        tok = best;
        printf("%s%d", step ? ", " : "", tok);
        batch = llama_batch_get_one(&tok, 1);
    }
    double min_gap = gaps.empty() ? 0 : gaps[0];
    for (double g : gaps) min_gap = g < min_gap ? g : min_gap;
    printf("], \"gaps\": [");
    for (size_t i = 0; i < gaps.size(); i++) printf("%s%.4g", i ? ", " : "", gaps[i]);
    printf("], \"min_margin\": %.4g, \"kv_f16_dev\": %.4g}\n", min_gap, dev);
    llama_free(ctx16);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
