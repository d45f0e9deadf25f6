/* Valid GGML/GGMF/GGJT containers that are not complete models: the
 * records run to the end of the file and nothing counts them, so a file
 * with some of a model's tensors (a partial export, a quantize test's
 * file) is read as it is, with mf->missing naming what a complete model
 * would also need.  A record whose header or data is cut short is still
 * an error with its offset.  Every legacy container (llama layout) and
 * every ggml-example layout, built by sample_files.h; then `tport info`,
 * `convert` and `run` on one such file. */
#include <sys/wait.h>
#include <time.h>

#include "sample_files.h"
#include "formats/model_file.h"
#include "../model/model_writer.h"
#include "../test_util.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static tport_status open_bytes(const bb *b, tport_model_file **mf) {
    char path[256];
    bb_save(b, path);
    *mf = NULL;
    tport_status s = tport_model_file_open(path, mf);
    unlink(path);
    return s;
}

/* A cut at `at` bytes must be an error that names an offset. */
static void expect_cut_error(const bb *whole, size_t at, const char *what) {
    bb cut = {0};
    bb_raw(&cut, whole->p, at);
    tport_model_file *mf;
    tport_status s = open_bytes(&cut, &mf);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && !mf && strstr(tport_last_error(), ": offset "), "%s: status %d, '%s'", what,
          s, tport_last_error());
    tport_model_file_close(mf);
    bb_free(&cut);
}

static const struct {
    const char *label;
    uint32_t magic, version;
    tport_container container;
} legacy[] = {
    {"ggml", 0x67676d6cu, 0, TPORT_CONTAINER_GGML},   {"ggmf v1", 0x67676d66u, 1, TPORT_CONTAINER_GGMF},
    {"ggjt v1", 0x67676a74u, 1, TPORT_CONTAINER_GGJT}, {"ggjt v2", 0x67676a74u, 2, TPORT_CONTAINER_GGJT},
    {"ggjt v3", 0x67676a74u, 3, TPORT_CONTAINER_GGJT},
};

/* sample_legacy's record order: tok_embeddings, norm, wq, output, wk, wv,
 * wo, attention_norm, ffn_norm, w1, w2, w3 */
static const char *const legacy_gguf_names[SAMPLE_LEGACY_TENSORS] = {
    "token_embd.weight",     "output_norm.weight",     "blk.0.attn_q.weight",    "output.weight",
    "blk.0.attn_k.weight",   "blk.0.attn_v.weight",    "blk.0.attn_output.weight", "blk.0.attn_norm.weight",
    "blk.0.ffn_norm.weight", "blk.0.ffn_gate.weight",  "blk.0.ffn_down.weight",  "blk.0.ffn_up.weight",
};

static void test_legacy_partial(void) {
    for (size_t c = 0; c < sizeof legacy / sizeof legacy[0]; c++) {
        for (int keep = 0; keep < SAMPLE_LEGACY_TENSORS; keep += 7) { /* none; the first 7 */
            bb b = {0};
            sample_legacy_first(&b, legacy[c].magic, legacy[c].version, keep);
            tport_model_file *mf;
            tport_status s = open_bytes(&b, &mf);
            CHECK(s == TPORT_STATUS_OK && mf, "%s with %d of 12 tensors opens: %s", legacy[c].label, keep,
                  s ? tport_last_error() : "");
            if (mf) {
                CHECK(mf->container == legacy[c].container && !strcmp(mf->arch, "llama") && mf->n_tensors == keep &&
                          mf->n_missing == SAMPLE_LEGACY_TENSORS - keep && mf->vocab.n_tokens == 3,
                      "%s/%d: container %d arch %s, %d tensors, %d missing", legacy[c].label, keep, mf->container,
                      mf->arch, mf->n_tensors, mf->n_missing);
                CHECK(strstr(mf->missing, "1-layer llama"), "%s/%d: names the model: %s", legacy[c].label, keep,
                      mf->missing);
                for (int i = 0; i < SAMPLE_LEGACY_TENSORS; i++) {
                    bool have = tport_model_file_find(mf, legacy_gguf_names[i]) != NULL;
                    bool listed = strstr(mf->missing, legacy_gguf_names[i]) != NULL;
                    CHECK(have == (i < keep) && listed == (i >= keep), "%s/%d: %s present %d, listed missing %d",
                          legacy[c].label, keep, legacy_gguf_names[i], have, listed);
                }
            }
            tport_model_file_close(mf);
            bb_free(&b);
        }
        /* the complete file reports nothing missing */
        bb full = {0};
        sample_legacy(&full, legacy[c].magic, legacy[c].version);
        tport_model_file *mf;
        CHECK(open_bytes(&full, &mf) == TPORT_STATUS_OK && mf->n_missing == 0 && !mf->missing[0],
              "%s complete: %s", legacy[c].label, mf ? mf->missing : tport_last_error());
        tport_model_file_close(mf);
        bb_free(&full);
        /* real truncation: the 8th record's header, then its data, cut short */
        bb seven = {0}, eight = {0};
        sample_legacy_first(&seven, legacy[c].magic, legacy[c].version, 7);
        sample_legacy_first(&eight, legacy[c].magic, legacy[c].version, 8);
        char what[96];
        snprintf(what, sizeof what, "%s: record header cut", legacy[c].label);
        expect_cut_error(&eight, seven.n + 6, what);
        snprintf(what, sizeof what, "%s: record data cut", legacy[c].label);
        expect_cut_error(&eight, eight.n - 1, what);
        bb_free(&seven);
        bb_free(&eight);
    }
}

/* n_layer comes from the header: a file claiming 2^24 layers with 7
 * tensors reads at once, with the count right (not by listing 150M names). */
static void test_huge_layer_count(void) {
    bb b = {0};
    sample_legacy_first(&b, 0x67676a74u, 3, 7);
    uint32_t n_layer = 1u << 24;
    memcpy(b.p + 8 + 4 * 4, &n_layer, 4); /* magic, version, n_vocab n_embd n_mult n_head, n_layer */
    clock_t t0 = clock();
    tport_model_file *mf;
    tport_status s = open_bytes(&b, &mf);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(s == TPORT_STATUS_OK && mf && mf->hp.n_layer == n_layer &&
              mf->n_missing == (int)(3 + 9 * (uint64_t)n_layer - 7) && strstr(mf->missing, ", ..."),
          "2^24 layers: %s", mf ? mf->missing : tport_last_error());
    CHECK(secs < 0.5, "2^24 layers read in %.2f s", secs);
    tport_model_file_close(mf);
    bb_free(&b);
}

static const struct {
    int arch;
    const char *label, *gguf_arch;
    int32_t ftype;
} examples[] = {
    {SAMPLE_GPT2, "gpt-2", "gpt2", 2},       {SAMPLE_GPTJ, "gpt-j", "gptj", 2},
    {SAMPLE_NEOX, "gpt-neox", "gptneox", 2}, {SAMPLE_MPT, "mpt", "mpt", 2},
    {SAMPLE_STARCODER, "gpt-2", "starcoder", 2},
};

static void test_example_partial(void) {
    for (size_t e = 0; e < sizeof examples / sizeof examples[0]; e++) {
        int n;
        const sample_tensor *t = sample_example_tensors(examples[e].arch, &n);
        int keep = n - 3;
        bb b = {0};
        /* q4_0 at QNT0 (ftype 2): 32 values in 20 bytes */
        sample_ggml_example_first(&b, examples[e].arch, 32, examples[e].ftype, 2, 32, 20, NULL, keep);
        tport_model_file *mf;
        tport_status s = open_bytes(&b, &mf);
        CHECK(s == TPORT_STATUS_OK && mf, "%s with %d of %d tensors opens: %s", examples[e].gguf_arch, keep, n,
              s ? tport_last_error() : "");
        if (mf) {
            CHECK(!strcmp(mf->arch, examples[e].gguf_arch) && mf->n_tensors == keep && mf->n_missing == 3 &&
                      strstr(mf->missing, examples[e].label),
                  "%s: arch %s, %d tensors, %d missing: %s", examples[e].gguf_arch, mf->arch, mf->n_tensors,
                  mf->n_missing, mf->missing);
            for (int i = keep; i < n; i++)
                CHECK(strstr(mf->missing, t[i].name) && !tport_model_file_find(mf, t[i].name), "%s: %s listed",
                      examples[e].gguf_arch, t[i].name);
        }
        tport_model_file_close(mf);
        bb_free(&b);
        /* truncation inside the next record's header and inside its data */
        bb before = {0}, with = {0};
        sample_ggml_example_first(&before, examples[e].arch, 32, examples[e].ftype, 2, 32, 20, NULL, keep);
        sample_ggml_example_first(&with, examples[e].arch, 32, examples[e].ftype, 2, 32, 20, NULL, keep + 1);
        char what[96];
        snprintf(what, sizeof what, "%s: record header cut", examples[e].gguf_arch);
        expect_cut_error(&with, before.n + 10, what);
        snprintf(what, sizeof what, "%s: record data cut", examples[e].gguf_arch);
        expect_cut_error(&with, with.n - 1, what);
        bb_free(&before);
        bb_free(&with);
    }
}

static int run(const char *cmd, char *out, size_t cap) {
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* info warns, convert writes every tensor it has, run refuses in one line. */
static void test_cli(void) {
    static char out[65536];
    char in[256], gguf[280], cmd[1024];
    bb b = {0};
    sample_legacy_first(&b, 0x67676a74u, 3, 7);
    bb_save(&b, in);
    bb_free(&b);
    snprintf(gguf, sizeof gguf, "%s.gguf", in);
    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", in);
    int st = run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, "warning:") && strstr(out, "blk.0.ffn_up.weight") &&
              strstr(out, "blk.0.attn_output.weight"),
          "info on a partial file: status %d\n%s", st, out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " info --json %s", in);
    st = run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, "\"complete\": false"), "info --json: status %d", st);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s", in, gguf);
    st = run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, "warning: not a complete model") && strstr(out, "7 tensors"),
          "convert of a partial file: status %d\n%s", st, out);
    tport_model_file *src = NULL, *dst = NULL;
    CHECK(tport_model_file_open(in, &src) == TPORT_STATUS_OK && tport_model_file_open(gguf, &dst) == TPORT_STATUS_OK,
          "reopen: %s", tport_last_error());
    if (src && dst) {
        CHECK(dst->n_tensors == 7 && dst->n_missing == 0, "converted file: %d tensors", dst->n_tensors);
        for (int i = 0; i < src->n_tensors; i++) {
            const tport_mf_tensor *a = &src->tensors[i], *c = tport_model_file_find(dst, a->name);
            /* f32/f16 stay as they are: byte-equal data under the same name */
            if (a->type <= TPORT_TYPE_F16)
                CHECK(c && c->nbytes == a->nbytes && !memcmp(c->data, a->data, a->nbytes), "%s kept", a->name);
            else
                CHECK(c != NULL, "%s written", a->name);
        }
    }
    tport_model_file_close(src);
    tport_model_file_close(dst);
    /* a ggml-example (gpt-2) file with 10 of its 16 tensors converts too */
    {
        char ex[256], ex_gguf[280];
        bb e = {0};
        sample_ggml_example_first(&e, SAMPLE_GPT2, 32, 2, 2, 32, 20, NULL, 10);
        bb_save(&e, ex);
        bb_free(&e);
        snprintf(ex_gguf, sizeof ex_gguf, "%s.gguf", ex);
        snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s", ex, ex_gguf);
        st = run(cmd, out, sizeof out);
        tport_model_file *g = NULL;
        CHECK(st == 0 && strstr(out, "6 tensors: model/h0/ln_2/g") && tport_model_file_open(ex_gguf, &g) == 0 &&
                  g->n_tensors == 10 && !strcmp(g->arch, "gpt2"),
              "convert of a partial gpt-2 file: status %d\n%s", st, out);
        tport_model_file_close(g);
        unlink(ex);
        unlink(ex_gguf);
    }
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s --prompt-ids 1 -n 1", in);
    st = run(cmd, out, sizeof out);
    const char *nl = strchr(out, '\n');
    CHECK(st != 0 && strstr(out, "tport: ") == out && strstr(out, "not a complete model") &&
              strstr(out, "blk.0.ffn_gate.weight") && nl && !nl[1],
          "run refuses in one line: status %d\n%s", st, out);
    unlink(in);
    unlink(gguf);
}

/* A partial export of a real model: the first tensors of the llama2.c
 * stories260K written by the model tests' writer (tests/model/
 * model_writer.c) in each legacy container; every tensor it wrote reads
 * back byte-equal, the rest are listed missing, and loading refuses. */
static void test_real_partial(void) {
    char buf[512];
    const char *path = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!path) {
        printf("real-model partial files: skipped (../shared/models/stories260K.bin absent)\n");
        return;
    }
    tport_model_file *src = NULL;
    CHECK(tport_model_file_open(path, &src) == TPORT_STATUS_OK, "open %s: %s", path, tport_last_error());
    if (!src)
        return;
    static const struct { uint32_t magic, version; const char *label; } c[] = {
        {MW_MAGIC_GGML, 0, "ggml"}, {MW_MAGIC_GGMF, 1, "ggmf v1"}, {MW_MAGIC_GGJT, 3, "ggjt v3"}};
    for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
        tport_model_file part = *src; /* a view of the first 20 tensors (the writer adds output.weight) */
        part.n_tensors = 20;
        char out[256];
        mw_temp_path(out, "partial");
        mw_result res;
        CHECK(mw_write_legacy(&part, c[k].magic, c[k].version, TPORT_TYPE_F32, 0, out, &res), "write %s",
              c[k].label);
        tport_model_file *mf = NULL;
        CHECK(tport_model_file_open(out, &mf) == TPORT_STATUS_OK, "%s partial opens: %s", c[k].label,
              tport_last_error());
        if (mf) {
            int complete = 3 + 9 * (int)src->hp.n_layer;
            CHECK(mf->n_tensors == 21 && mf->n_missing == complete - 21, "%s: %d tensors, %d missing (of %d)",
                  c[k].label, mf->n_tensors, mf->n_missing, complete);
            for (int i = 0; i < part.n_tensors; i++) {
                const tport_mf_tensor *a = &src->tensors[i], *b = tport_model_file_find(mf, a->name);
                CHECK(b && b->nbytes == a->nbytes && !memcmp(a->data, b->data, (size_t)a->nbytes),
                      "%s: %s as written", c[k].label, a->name);
            }
            for (int i = part.n_tensors; i < src->n_tensors; i++)
                CHECK(strstr(mf->missing, src->tensors[i].name) || strstr(mf->missing, ", ..."),
                      "%s: %s listed missing", c[k].label, src->tensors[i].name);
        }
        tport_model_file_close(mf);
        tport_model *m = tport_model_load(out, NULL);
        CHECK(!m && strstr(tport_last_error(), "not a complete model"), "%s: load refused: %s", c[k].label,
              tport_last_error());
        tport_model_free(m);
        unlink(out);
    }
    tport_model_file_close(src);
}

int main(void) {
    test_legacy_partial();
    test_huge_layer_count();
    test_real_partial();
    test_example_partial();
    test_cli();
    return test_finish("test_formats_partial");
}
