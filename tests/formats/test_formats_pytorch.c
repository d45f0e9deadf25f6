/* PyTorch checkpoints written by real PyTorch (Debian's python3-torch,
 * through pytorch_write.py) from the weights of ../shared/models/
 * stories260K.bin: Meta (consolidated.00.pth + params.json, zip and
 * legacy stream, with a column-major view, storage offsets and a shared
 * storage) and Hugging Face (pytorch_model.bin + config.json, q/k
 * permuted) layouts read back to the same tensors as the llama2.c file
 * and the same greedy ids; f16/bf16 values as torch rounded them; int8;
 * `tport convert` to GGUF and `tport run`; pickles that would run code
 * refused without running it.  Skipped (exit 77) without python3-torch,
 * except under CI=true, where it must run. */
#include <sys/stat.h>
#include <sys/wait.h>

#include "formats/model_file.h"
#include "quant/type_table.h"
#include "tport/tport.h"
#include "../test_util.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif
#ifndef TPORT_PYTORCH_WRITER
#error "TPORT_PYTORCH_WRITER must name pytorch_write.py"
#endif

#define PYTHON "/usr/bin/python3" /* Debian's, where python3-torch lives */

static char dir[256];

static int run(const char *cmd, char *out, size_t cap) {
    char full[4096];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static tport_model_file *open_in(const char *rel) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(path, &mf) == TPORT_STATUS_OK, "open %s: %s", rel, tport_last_error());
    return mf;
}

/* Every tensor of the llama2.c file, by GGUF name, byte-equal in mf. */
static void same_tensors(const char *what, const tport_model_file *ref, const tport_model_file *mf) {
    int n_same = 0;
    for (int i = 0; i < ref->n_tensors; i++) {
        const tport_mf_tensor *a = &ref->tensors[i], *b = tport_model_file_find(mf, a->name);
        CHECK(b != NULL, "%s: tensor %s present", what, a->name);
        if (!b)
            continue;
        bool same = b->type == a->type && b->nbytes == a->nbytes && !memcmp(a->ne, b->ne, sizeof a->ne) &&
                    !memcmp(a->data, b->data, (size_t)a->nbytes);
        CHECK(same, "%s: tensor %s equals the llama2.c file's", what, a->name);
        n_same += same;
    }
    printf("%s: %d of %d llama2.c tensors byte-equal\n", what, n_same, ref->n_tensors);
}

static int greedy(const char *path, tport_token *out, int n) {
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load %s: %s", path, tport_last_error());
    if (!m)
        return 0;
    tport_session *s = tport_session_new(m, NULL);
    const tport_token prompt[3] = {1, 400, 30};
    int done = 0;
    if (s && tport_session_eval(s, prompt, 3) == TPORT_STATUS_OK) {
        int32_t nv = tport_model_n_vocab(m);
        while (done < n) {
            const float *lg = tport_session_logits(s);
            tport_token best = 0;
            for (int32_t i = 1; lg && i < nv; i++)
                if (lg[i] > lg[best])
                    best = i;
            out[done++] = best;
            if (done < n && tport_session_eval(s, &best, 1) != TPORT_STATUS_OK)
                break;
        }
    }
    tport_session_free(s);
    tport_model_free(m);
    return done;
}

/* f16/bf16: every tensor decodes to what torch rounded to (ref.f32, state
 * dict order, which is the tensor order). */
static void rounded_values(const char *sub, tport_type_id want_type) {
    char rel[64], path[512];
    snprintf(rel, sizeof rel, "%s/consolidated.00.pth", sub);
    tport_model_file *mf = open_in(rel);
    snprintf(path, sizeof path, "%s/%s/ref.f32", dir, sub);
    FILE *f = fopen(path, "rb");
    CHECK(mf && f, "%s: model and ref.f32", sub);
    int bad = 0;
    for (int i = 0; mf && f && i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        float *want = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
        CHECK(t->type == want_type, "%s: %s has type %u", sub, t->name, t->type);
        if (fread(want, 4, (size_t)n, f) != (size_t)n) {
            CHECK(0, "%s: ref.f32 short at %s", sub, t->name);
        } else {
            tport_traits(t->type)->to_float(t->data, got, n);
            bad += memcmp(want, got, (size_t)n * 4) != 0;
        }
        free(want);
        free(got);
    }
    CHECK(mf && bad == 0, "%s: %d tensors differ from torch's values", sub, bad);
    printf("%s: %d tensors decode to torch's values\n", sub, mf ? mf->n_tensors - bad : 0);
    if (f)
        fclose(f);
    tport_model_file_close(mf);
}

static void test_int8(void) {
    tport_model_file *mf = open_in("int8/int8.pt");
    const tport_mf_tensor *a = mf ? tport_model_file_find(mf, "a") : NULL, *b = mf ? tport_model_file_find(mf, "b") : NULL;
    CHECK(a && b && a->type == TPORT_TYPE_I8 && b->type == TPORT_TYPE_I8, "int8 tensors");
    if (a && b) {
        const int8_t *pa = a->data, *pb = b->data;
        CHECK(a->ne[0] == 5 && a->ne[1] == 3 && b->ne[0] == 3 && b->ne[1] == 4, "int8 shapes");
        bool ok = true;
        for (int i = 0; i < 15; i++)
            ok = ok && pa[i] == i - 7;
        for (int r = 0; r < 4; r++) /* b = arange(12).reshape(3, 4).t(): b[r][c] = 4c + r */
            for (int c = 0; c < 3; c++)
                ok = ok && pb[r * 3 + c] == 4 * c + r;
        CHECK(ok, "int8 values (the transposed view gathered)");
    }
    tport_model_file_close(mf);
}

static void test_hostile(void) {
    static const struct {
        const char *file, *global;
    } h[] = {{"reduce_os_system.pt", "posix.system"},
             {"legacy_os_system.pt", "posix.system"},
             {"unknown_global.pt", "collections.Counter"},
             {"module.pt", "torch.nn.modules.linear.Linear"}};
    char path[512], marker[512];
    snprintf(marker, sizeof marker, "%s/hostile/PICKLE-RAN", dir);
    for (size_t i = 0; i < sizeof h / sizeof h[0]; i++) {
        snprintf(path, sizeof path, "%s/hostile/%s", dir, h[i].file);
        tport_model_file *mf = NULL;
        tport_status s = tport_model_file_open(path, &mf);
        CHECK(s == TPORT_STATUS_BAD_FORMAT && !mf && strstr(tport_last_error(), h[i].global) &&
                  strstr(tport_last_error(), "not allowed"),
              "%s refused naming %s: %s", h[i].file, h[i].global, tport_last_error());
        tport_model_file_close(mf);
    }
    CHECK(access(marker, F_OK) != 0, "no pickle ran (%s absent)", marker);
}

static void test_cli(const tport_token *want, int n) {
    static char out[1 << 16];
    char cmd[2048];
    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s/hf/pytorch_model.bin", dir);
    int st = run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, "pytorch (zip archive)") && strstr(out, "un-permuted"), "info: %d %.400s", st, out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s/hf/pytorch_model.bin %s/hf.gguf", dir, dir);
    st = run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, "wrote"), "convert: %d %.400s", st, out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s/hf.gguf --prompt-ids 1,400,30 -n %d --temp 0 --ids", dir, n);
    st = run(cmd, out, sizeof out);
    char want_s[256] = "";
    for (int i = 0, k = 0; i < n; i++)
        k += snprintf(want_s + k, sizeof want_s - (size_t)k, i ? ",%d" : "%d", (int)want[i]);
    CHECK(st == 0 && strstr(out, want_s), "run on the converted GGUF gives %s: %d %.400s", want_s, st, out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s/legacy/consolidated.00.pth --prompt-ids 1,400,30 -n %d --temp 0 --ids",
             dir, n);
    st = run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, want_s), "run on the legacy .pth gives %s: %d %.400s", want_s, st, out);
}

int main(void) {
    static char out[1 << 16];
    char ref_buf[512], cmd[2048];
    const char *ref_path = test_shared_path("models/stories260K.bin", ref_buf, sizeof ref_buf);
    bool ci = getenv("CI") && !strcmp(getenv("CI"), "true");
    if (run(PYTHON " -c 'import torch'", out, sizeof out) != 0) {
        if (ci) {
            CHECK(0, PYTHON " has no torch module under CI: install python3-torch (.ci/run)");
            return test_finish("test_formats_pytorch");
        }
        printf("test_formats_pytorch: skipped (no python3-torch for " PYTHON "; apt-get install python3-torch)\n");
        return 77;
    }
    if (!ref_path) {
        printf("test_formats_pytorch: skipped (../shared/models/stories260K.bin absent)\n");
        return 77;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tport-pt-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    snprintf(cmd, sizeof cmd, PYTHON " %s %s %s", TPORT_PYTORCH_WRITER, ref_path, dir);
    int st = run(cmd, out, sizeof out);
    CHECK(st == 0, "pytorch_write.py: %d %s", st, out);

    tport_model_file *ref = NULL;
    CHECK(tport_model_file_open(ref_path, &ref) == TPORT_STATUS_OK, "llama2.c file: %s", tport_last_error());
    static const char *const f32_files[] = {"meta/consolidated.00.pth", "legacy/consolidated.00.pth",
                                            "hf/pytorch_model.bin"};
    for (size_t i = 0; ref && i < 3; i++) {
        tport_model_file *mf = open_in(f32_files[i]);
        if (mf) {
            CHECK(mf->container == TPORT_CONTAINER_PYTORCH && mf->version == (i == 1 ? 0u : 1u) &&
                      mf->hp.n_layer == ref->hp.n_layer && mf->hp.n_head == ref->hp.n_head &&
                      mf->hp.n_head_kv == ref->hp.n_head_kv && mf->hp.n_ff == ref->hp.n_ff &&
                      mf->hp.norm_eps == ref->hp.norm_eps && !strcmp(mf->arch, "llama"),
                  "%s: container %d v%u, hparams", f32_files[i], mf->container, mf->version);
            same_tensors(f32_files[i], ref, mf);
            if (i == 2) /* the HF file's rotary_emb.inv_freq buffers are not weights */
                CHECK(strstr(mf->notes, "5 state dict entries") && strstr(mf->notes, "un-permuted") &&
                          mf->n_tensors == ref->n_tensors + 1,
                      "hf notes: %s (%d tensors)", mf->notes, mf->n_tensors);
        }
        tport_model_file_close(mf);
    }
    tport_model_file_close(ref);

    enum { N = 16 };
    tport_token want[N], got[N];
    int nw = greedy(ref_path, want, N);
    CHECK(nw == N, "greedy on the llama2.c file");
    for (size_t i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, f32_files[i]);
        int ng = greedy(path, got, N);
        CHECK(ng == N && !memcmp(want, got, sizeof want), "%s: greedy ids equal the llama2.c file's", f32_files[i]);
    }
    printf("greedy ids (llama2.c = meta = legacy = hf):");
    for (int i = 0; i < nw; i++)
        printf(" %d", (int)want[i]);
    printf("\n");
    rounded_values("f16", TPORT_TYPE_F16);
    rounded_values("bf16", TPORT_TYPE_BF16);
    test_int8();
    test_hostile();
    test_cli(want, N);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return test_finish("test_formats_pytorch");
}
