// Reference tool, not part of any build: quantizes a GGUF file with
// llama.cpp's llama_model_quantize (what llama-quantize runs) for each file
// type named, with or without an importance matrix, and prints every output
// tensor's type and the FNV-1a 64 hash of its bytes.  refs.txt was made with
// it (see README.md here: make_refs.sh builds and runs it).  A client of
// llama.cpp's public API, built against the prebuilt libraries of
// node-llama-cpp 3.21.1 (llama.cpp release of the same version's headers):
//
//   g++ -O2 -std=c++17 -I LLAMA/include -I LLAMA/ggml/include \
//       llamacpp_quantize_refs.cpp -o llamacpp_quantize_refs -L$BINS \
//       -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so -l:libggml-base.so -Wl,-rpath,$BINS
//
// usage: llamacpp_quantize_refs MODEL.gguf TMP.gguf IMATRIX.gguf|- FTYPE_NUMBER NAME [OPTION...]
// OPTIONs, as llama-quantize's (and tport convert's): --pure,
// --output-tensor-type T, --token-embedding-type T (T a ggml type name).
// The imatrix is read as llama-quantize reads it (in_sum2 / counts, 1 where
// a count is 0).  Output lines:
//   mix NAME IMATRIX(0|1) FILE_TYPE [OPTION...]
//   t TENSOR TYPE FNV64
// or, for a file llama.cpp refuses to write:
//   refused NAME IMATRIX(0|1) REASON
#include "ggml.h"
#include "gguf.h"
#include "llama.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// Keeps llama.cpp's reason for refusing a file ("failed to quantize: ...").
static std::string g_reason;
static void quiet(enum ggml_log_level, const char *text, void *) {
    const char *p = strstr(text, "failed to quantize: ");
    if (p) {
        g_reason = p + 20;
        while (!g_reason.empty() && (g_reason.back() == '\n' || g_reason.back() == ' '))
            g_reason.pop_back();
    }
}

static bool load_imatrix(const char *path, std::map<std::string, std::vector<float>> &out) {
    ggml_context *ctx = nullptr;
    gguf_init_params p = {false, &ctx};
    gguf_context *g = gguf_init_from_file(path, p);
    if (!g)
        return false;
    std::map<std::string, std::pair<ggml_tensor *, ggml_tensor *>> sc;
    for (ggml_tensor *t = ggml_get_first_tensor(ctx); t; t = ggml_get_next_tensor(ctx, t)) {
        std::string n = t->name;
        if (n.size() > 8 && n.compare(n.size() - 8, 8, ".in_sum2") == 0)
            sc[n.substr(0, n.size() - 8)].first = t;
        else if (n.size() > 7 && n.compare(n.size() - 7, 7, ".counts") == 0)
            sc[n.substr(0, n.size() - 7)].second = t;
    }
    for (auto &kv : sc) {
        const ggml_tensor *s = kv.second.first, *c = kv.second.second;
        if (!s || !c)
            return false;
        const int64_t nval = ggml_nelements(s), ncounts = ggml_nelements(c), ne0 = nval / ncounts;
        std::vector<float> &e = out[kv.first];
        e.resize(nval);
        for (int64_t j = 0; j < ncounts; j++) {
            const float count = (float)std::lround(((const float *)c->data)[j]);
            for (int64_t i = 0; i < ne0; i++)
                e[j * ne0 + i] = count > 0.0f ? ((const float *)s->data)[j * ne0 + i] / count : 1.0f;
        }
    }
    gguf_free(g);
    ggml_free(ctx);
    return true;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL TMP IMATRIX|- FTYPE NAME [OPTION...]\n", argv[0]);
        return 2;
    }
    llama_log_set(quiet, nullptr);
    llama_backend_init();
    std::map<std::string, std::vector<float>> im;
    std::vector<llama_model_imatrix_data> imd;
    const bool with_im = strcmp(argv[3], "-") != 0;
    if (with_im) {
        if (!load_imatrix(argv[3], im)) {
            fprintf(stderr, "cannot read imatrix %s\n", argv[3]);
            return 1;
        }
        for (auto &kv : im)
            imd.push_back({kv.first.c_str(), kv.second.data(), kv.second.size()});
        imd.push_back({nullptr, nullptr, 0});
    }
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.nthread = 1;
    qp.ftype = (llama_ftype)atoi(argv[4]);
    qp.imatrix = with_im ? imd.data() : nullptr;
    std::string opts;
    for (int i = 6; i < argc; i++) {
        opts += std::string(" ") + argv[i];
        if (!strcmp(argv[i], "--pure")) {
            qp.pure = true;
            continue;
        }
        ggml_type *dst = !strcmp(argv[i], "--output-tensor-type")     ? &qp.output_tensor_type
                         : !strcmp(argv[i], "--token-embedding-type") ? &qp.token_embedding_type
                                                                       : nullptr;
        if (!dst || i + 1 >= argc) {
            fprintf(stderr, "bad option %s\n", argv[i]);
            return 2;
        }
        opts += std::string(" ") + argv[++i];
        for (int t = 0; t < GGML_TYPE_COUNT; t++)
            if (ggml_type_name((ggml_type)t) && !strcmp(ggml_type_name((ggml_type)t), argv[i]))
                *dst = (ggml_type)t;
    }
    if (llama_model_quantize(argv[1], argv[2], &qp) != 0) {
        printf("refused %s %d %s\n", argv[5], with_im ? 1 : 0, g_reason.c_str());
        return 0;
    }
    gguf_init_params p = {true, nullptr};
    gguf_context *g = gguf_init_from_file(argv[2], p);
    FILE *f = fopen(argv[2], "rb");
    if (!g || !f)
        return 1;
    const int64_t kft = gguf_find_key(g, "general.file_type");
    printf("mix %s %d %u%s\n", argv[5], with_im ? 1 : 0, kft >= 0 ? gguf_get_val_u32(g, kft) : 9999u, opts.c_str());
    const size_t base = gguf_get_data_offset(g);
    for (int64_t i = 0; i < gguf_get_n_tensors(g); i++) {
        const size_t n = gguf_get_tensor_size(g, i);
        std::vector<unsigned char> buf(n);
        fseek(f, (long)(base + gguf_get_tensor_offset(g, i)), SEEK_SET);
        if (fread(buf.data(), 1, n, f) != n)
            return 1;
        uint64_t h = 0xcbf29ce484222325ull;
        for (unsigned char b : buf)
            h = (h ^ b) * 0x100000001b3ull;
        printf("t %s %s %016llx\n", gguf_get_tensor_name(g, i), ggml_type_name(gguf_get_tensor_type(g, i)),
               (unsigned long long)h);
    }
    fclose(f);
    gguf_free(g);
    return 0;
}
