/* Which weights the CPU backend keeps a copy of in its own layout (ABI 1.1
 * upload slots, backends/cpu/cpu_repack.c): on a synthesized q8_0 llama
 * with an untied output, the matrices of the blocks and the output head
 * are copied, the token embedding (read only by get_rows, a few rows a
 * token) stays in the file's mapping, and the model still generates.
 * (TPORT_CPU_REPACK=0 is read once per process: test_cpu_repack checks
 * it.)  On a machine whose CPU plug-in has no re-encoded layout (no AVX2)
 * the test says skipped. */
#include <stdlib.h>

#include "../test_util.h"
#include "../tools/tool_run.h"
#include "core/tensor.h"
#include "greedy.h"
#include "model/model.h"

static const char *name = "test_weight_residency";

static bool copied(const tport_tensor *w) {
    return w && w->res.backend != NULL;
}

int main(void) {
    char dir[512], path[600], args[1024];
    CHECK(tool_scratch_dir(dir, sizeof dir, "residency") != NULL, "no scratch folder");
    if (test_failures)
        return test_finish(name);
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    snprintf(args, sizeof args, "synth --dim 64 --layers 2 --heads 4 --ff 128 --vocab 320 --ctx 64 --type q8_0 "
             "--seed 3 -o '%s' >/dev/null", path);
    CHECK(tool_run(args) == 0, "failed: tport %s", args);
    static const char *const files[] = {"m.gguf"};
    unsetenv("TPORT_CPU_REPACK");
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (m && tport_model_resident_bytes(m, "cpu") == 0) {
        tport_model_free(m);
        tool_scratch_clean(dir, files, 1);
        test_skip(name, "the active cpu backend keeps no weights in a layout of its own (no AVX2 kernels)");
    }
    tport_token prompt[3] = {1, 17, 99}, ids[12] = {0};
    if (m) {
        CHECK(m->w.output && m->w.output != m->w.tok_embd, "the synthesized model has its own output head");
        CHECK(copied(m->layers[0].wq) && copied(m->layers[1].w_down) && copied(m->w.output),
              "the matrices of the blocks and the head are copied");
        CHECK(!copied(m->w.tok_embd), "the token embedding (get_rows only) stays in the file");
        CHECK(greedy_ids(m, prompt, 3, ids, 12) == 12, "generates with copies");
    }
    tport_model_free(m);
    tool_scratch_clean(dir, files, 1);
    return test_finish(name);
}
