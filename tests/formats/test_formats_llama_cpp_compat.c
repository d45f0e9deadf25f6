/* Does llama.cpp read what the GGUF writer writes?  Runs only when
 * node-llama-cpp (which bundles llama.cpp) is installed: in the folder named
 * by TPORT_NODE_LLAMA_CPP, or in /work.  The real tiny llama GGUF is copied
 * through tport_model_file_open + the writer (with 64-byte alignment), and
 * split by `tport convert --split-max-tensors` / `--split-max-size` (loaded
 * by llama.cpp from the first part, finding the others itself); llama.cpp
 * must tokenize and greedily generate the same ids from all of them.  The
 * parts must also be byte for byte what gguf-split writes from the same
 * whole file (its strategy replayed through node-llama-cpp's libggml-base,
 * gguf_split_reference.h). */
#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "gguf_split_reference.h"
#include "../test_util.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

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

static bool run(const char *lib, const char *js, const char *const *models, int n_models, char *out, size_t cap) {
    char cmd[4096];
    int k = snprintf(cmd, sizeof cmd, "node '%s' '%s'", js, lib);
    for (int i = 0; i < n_models && k > 0 && (size_t)k < sizeof cmd; i++)
        k += snprintf(cmd + k, sizeof cmd - (size_t)k, " '%s'", models[i]);
    if (k <= 0 || (size_t)k + 16 >= sizeof cmd)
        return false;
    snprintf(cmd + k, sizeof cmd - (size_t)k, " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    return pclose(p) == 0 && n > 0;
}

static bool same_file(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    int ca = 0, cb = 0;
    while (same && (ca = fgetc(fa)) == (cb = fgetc(fb)) && ca != EOF)
        ;
    same = same && ca == EOF && cb == EOF;
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* tport convert --split-max-* of `model` against gguf-split of tport
 * convert's whole file (the same keys): every part equal, byte for byte. */
static void compare_with_gguf_split(const gguf_api *g, const char *model, const char *dir, const char *tag,
                                    const char *opt, int64_t max_tensors, uint64_t max_bytes) {
    char cmd[1600], whole[400], ref[400], ours[400];
    snprintf(whole, sizeof whole, "%s/%s-whole.gguf", dir, tag);
    snprintf(ref, sizeof ref, "%s/%s-ref", dir, tag);
    snprintf(ours, sizeof ours, "%s/%s-tport", dir, tag);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert '%s' '%s' --quiet 2>&1", model, whole);
    CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert '%s' '%s.gguf' %s --quiet 2>&1", model, ours, opt);
    CHECK(system(cmd) == 0, "%s", cmd);
    int n = gguf_split_reference(g, whole, ref, max_tensors, max_bytes);
    CHECK(n >= 2, "%s: gguf-split's strategy makes %d parts", tag, n);
    for (int k = 0; k < n; k++) {
        char a[500], b[500];
        snprintf(a, sizeof a, "%s-%05d-of-%05d.gguf", ref, k + 1, n);
        snprintf(b, sizeof b, "%s-%05d-of-%05d.gguf", ours, k + 1, n);
        CHECK(same_file(a, b), "%s %s: part %d of %d is gguf-split's byte for byte (%s vs %s)", tag, opt, k + 1, n, a, b);
    }
    printf("%s %s: %d parts, byte for byte as gguf-split writes them\n", tag, opt, n);
}

static void check_bytes(const char *root, const char *src, const char *dir) {
    char lib[700], why[1024], synth[400], cmd[1200];
    snprintf(lib, sizeof lib, "%s/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libggml-base.so", root);
    gguf_api g = {0};
    bool ok = gguf_api_load(&g, lib, why, sizeof why);
    CHECK(ok, "ggml's gguf API from node-llama-cpp: %s", why);
    if (!ok)
        return;
    compare_with_gguf_split(&g, src, dir, "real-t", "--split-max-tensors 5", 5, 0);
    compare_with_gguf_split(&g, src, dir, "real-s", "--split-max-size 600K", 0, 600000);
    snprintf(synth, sizeof synth, "%s/synth.gguf", dir);
    snprintf(cmd, sizeof cmd, TPORT_CLI " synth --dim 64 --layers 3 --heads 4 --ff 128 --vocab 300 --type q8_0 -o '%s' >/dev/null 2>&1",
             synth);
    CHECK(system(cmd) == 0, "%s", cmd);
    compare_with_gguf_split(&g, synth, dir, "synth-s", "--split-max-size 70K", 0, 70000);
    compare_with_gguf_split(&g, synth, dir, "synth-t", "--split-max-tensors 7", 7, 0);
    dlclose(g.lib);
}

int main(void) {
    char lib[600], buf[512];
    const char *root = getenv("TPORT_NODE_LLAMA_CPP");
    snprintf(lib, sizeof lib, "%s/node_modules/node-llama-cpp/dist/index.js", root && *root ? root : "/work");
    if (access(lib, R_OK) != 0) {
        /* CI sets the variable: a named install that is not there is a failure, not a skip */
        if (root && *root) {
            CHECK(0, "TPORT_NODE_LLAMA_CPP=%s, but %s is not there", root, lib);
            return test_finish("test_formats_llama_cpp_compat");
        }
        test_skip("test_formats_llama_cpp_compat", "node-llama-cpp not installed (set TPORT_NODE_LLAMA_CPP)");
    }
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

    /* two splits written by tport convert: 3 parts by tensor count, 2 by size */
    char cmd[1200], split_t[300], split_s[300];
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert '%s' '%s/t.gguf' --split-max-tensors 5 --quiet 2>&1", src, dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert '%s' '%s/s.gguf' --split-max-size 600K --quiet 2>&1", src, dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    snprintf(split_t, sizeof split_t, "%s/t-00001-of-00003.gguf", dir);
    snprintf(split_s, sizeof split_s, "%s/s-00001-of-00002.gguf", dir);

    static const char *const what[] = {"original", "written", "split by tensors", "split by size"};
    const char *models[] = {src, out_path, split_t, split_s};
    enum { N = 4 };
    char all[16384];
    bool ok = run(lib, js, models, N, all, sizeof all);
    const char *line[N] = {all};
    int n_lines = 1;
    for (char *p = all; n_lines < N && (p = strchr(p, '\n')); p++)
        line[n_lines++] = p + 1;
    CHECK(ok && n_lines == N && strchr(line[N - 1], '\n'), "llama.cpp loads the original, the copy and both splits: %s",
          all);
    if (ok && n_lines == N) {
        size_t len = (size_t)(strchr(line[0], '\n') - line[0]);
        for (int i = 1; i < N; i++) {
            CHECK(len > 0 && strncmp(line[0], line[i], len) == 0 && line[i][len] == '\n',
                  "same tokens and generation:\n  original: %.*s\n  %s: %.*s", (int)len, line[0], what[i],
                  (int)(strchr(line[i], '\n') ? strchr(line[i], '\n') - line[i] : 0), line[i]);
            printf("llama.cpp on the %s file: %.*s\n", what[i], (int)len, line[i]);
        }
    }
    check_bytes(root && *root ? root : "/work", src, dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "%s", cmd);
    return test_finish("test_formats_llama_cpp_compat");
}
