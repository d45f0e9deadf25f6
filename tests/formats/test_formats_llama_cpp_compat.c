/* Does llama.cpp read what the GGUF writer writes?  Runs only when
 * node-llama-cpp (which bundles llama.cpp) is installed: in the folder named
 * by TPORT_NODE_LLAMA_CPP, or in /work.  The real tiny llama GGUF is copied
 * through tport_model_file_open + the writer (with 64-byte alignment), and
 * llama.cpp must tokenize and greedily generate the same ids from both. */
#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "../test_util.h"

#include <sys/stat.h>
#include <unistd.h>

/* One node process loads each model given and prints one line per model. */
static const char *script =
    "const [lib, ...paths] = process.argv.slice(2);\n"
    "const {getLlama, LlamaLogLevel} = await import(lib);\n"
    "const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error});\n"
    "for (const path of paths) {\n"
    "  const model = await llama.loadModel({modelPath: path});\n"
    "  const toks = model.tokenize('Once upon a time', false);\n"
    "  const ctx = await model.createContext({contextSize: 64});\n"
    "  const out = [];\n"
    "  for await (const t of ctx.getSequence().evaluate(Array.from(toks), {temperature: 0})) {\n"
    "    out.push(t); if (out.length >= 8) break; }\n"
    "  console.log(JSON.stringify({tokens: Array.from(toks), generated: out}));\n"
    "  await ctx.dispose(); await model.dispose();\n"
    "}\n"
    "await llama.dispose();\n";

static bool run(const char *lib, const char *js, const char *m1, const char *m2, char *out, size_t cap) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' '%s' 2>/dev/null", js, lib, m1, m2);
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    return pclose(p) == 0 && n > 0;
}

int main(void) {
    char lib[600], buf[512];
    const char *root = getenv("TPORT_NODE_LLAMA_CPP");
    snprintf(lib, sizeof lib, "%s/node_modules/node-llama-cpp/dist/index.js", root && *root ? root : "/work");
    if (access(lib, R_OK) != 0)
        test_skip("test_formats_llama_cpp_compat", "node-llama-cpp not installed (set TPORT_NODE_LLAMA_CPP)");
    const char *src = test_shared_path("models/llama-2-tiny-random.gguf", buf, sizeof buf);
    if (!src)
        test_skip("test_formats_llama_cpp_compat", "models/llama-2-tiny-random.gguf absent");

    char dir[256], js[300], out_path[300];
    snprintf(dir, sizeof dir, "%s/tport-nlc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    snprintf(js, sizeof js, "%s/check.mjs", dir);
    snprintf(out_path, sizeof out_path, "%s/copy.gguf", dir);
    FILE *f = fopen(js, "w");
    fputs(script, f);
    fclose(f);

    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(src, &mf) == TPORT_STATUS_OK, "open: %s", tport_last_error());
    tport_gguf_writer *w = tport_gguf_writer_new();
    for (int i = 0; mf && i < mf->n_kv; i++)
        CHECK(!tport_gguf_set_kv(w, mf->kv[i].key, &mf->kv[i]), "kv %s", mf->kv[i].key);
    CHECK(!tport_gguf_set_alignment(w, 64), "alignment");
    for (int i = 0; mf && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        CHECK(!tport_gguf_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes), "tensor %s", t->name);
    }
    CHECK(tport_gguf_write(w, out_path) == TPORT_STATUS_OK, "write: %s", tport_last_error());
    tport_gguf_writer_free(w);
    tport_model_file_close(mf);

    char both[8192];
    bool ok = run(lib, js, src, out_path, both, sizeof both);
    char *nl = strchr(both, '\n');
    CHECK(ok && nl, "llama.cpp loads the original and the file tport wrote: %s", both);
    if (ok && nl) {
        *nl = '\0';
        const char *a = both, *b = nl + 1;
        CHECK(a[0] && strncmp(a, b, strlen(a)) == 0 && b[strlen(a)] == '\n',
              "same tokens and generation:\n  original: %s\n  written:  %s", a, b);
        printf("llama.cpp on the written file: %s", b);
    }
    unlink(js);
    unlink(out_path);
    rmdir(dir);
    return test_finish("test_formats_llama_cpp_compat");
}
