/* The ggml examples' GGML-container files (gpt-2, starcoder, mpt,
 * gpt-neox) run through the same architecture code as GGUF: for an entry
 * of data/arch_refs.json the test regenerates the GGUF file with `tport
 * synth`, writes the same weights as the example program's file would hold
 * them (its hparams header, vocabulary, tensor names; gpt-neox's
 * query_key_value per head interleaved, as HF stores it), loads that file
 * and expects llama.cpp's greedy ids recorded for the GGUF file.  Then
 * `tport convert --vocab-from` makes a GGUF of it again (GGUF names,
 * [Q|K|V] rows, the vocabulary's merges), which must give the same ids.
 * Layouts follow ggml's examples/{gpt-2,mpt,gpt-neox}/main.cpp (formats.md
 * 1.3).  With TPORT_TEST_KEEP set the files are kept (for running them
 * through llama.cpp by hand, see data/README.md). */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/model_file.h"
#include "greedy.h"
#include "model/arch/arch.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define MAX_IDS 256

/* Greedy ids of the file for every run of the entry. */
static void check_runs(const char *path, const char *arch, const json *runs, const char *what) {
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load %s: %s", path, tport_last_error());
    if (!m)
        return;
    CHECK(!strcmp(tport_model_arch(m), arch), "%s read as %s", what, tport_model_arch(m));
    for (size_t r = 0; r < runs->n; r++) {
        tport_token prompt[MAX_IDS], want[MAX_IDS], got[MAX_IDS];
        const json *p = json_get(&runs->items[r], "prompt_ids"), *w = json_get(&runs->items[r], "ids");
        int n_prompt = 0, n_want = 0;
        for (size_t i = 0; p && i < p->n && i < MAX_IDS; i++)
            prompt[n_prompt++] = (tport_token)p->items[i].number;
        for (size_t i = 0; w && i < w->n && i < MAX_IDS; i++)
            want[n_want++] = (tport_token)w->items[i].number;
        int n = greedy_ids(m, prompt, n_prompt, got, n_want);
        int d = first_difference(got, n, want, n_want);
        CHECK(d < 0, "%s, run %zu: greedy id %d is %d, llama.cpp gave %d on the GGUF", what, r, d,
              d >= 0 && d < n ? (int)got[d] : -1, d >= 0 && d < n_want ? (int)want[d] : -1);
    }
    tport_model_free(m);
}

static void put_i32(FILE *f, int32_t v) { fwrite(&v, 4, 1, f); }
static void put_f32(FILE *f, float v) { fwrite(&v, 4, 1, f); }

static int32_t kv_u32(const tport_model_file *mf, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    const tport_kv *kv = tport_model_file_kv(mf, key);
    return kv ? (int32_t)kv->v.u : 0;
}

static float kv_f32(const tport_model_file *mf, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    const tport_kv *kv = tport_model_file_kv(mf, key);
    return kv ? (float)kv->v.f : 0.0f;
}

/* One f32 tensor record; rows reordered from [Q|K|V] to per-head [q,k,v]
 * when interleave (n_head heads of hd). */
static void put_tensor(FILE *f, const char *name, const tport_mf_tensor *t, bool interleave, int64_t nh, int64_t hd) {
    int n_dims = t->ne[1] > 1 ? 2 : 1;
    put_i32(f, n_dims);
    put_i32(f, (int32_t)strlen(name));
    put_i32(f, 0); /* f32 */
    for (int d = 0; d < n_dims; d++)
        put_i32(f, (int32_t)t->ne[d]);
    fwrite(name, 1, strlen(name), f);
    const float *src = t->data;
    size_t row = (size_t)(n_dims == 2 ? t->ne[0] : 1);
    if (!interleave) {
        fwrite(src, sizeof(float), (size_t)(t->ne[0] * t->ne[1]), f);
        return;
    }
    for (int64_t h = 0; h < nh; h++)
        for (int64_t part = 0; part < 3; part++)
            fwrite(src + (size_t)(part * nh * hd + h * hd) * row, sizeof(float), (size_t)hd * row, f);
}

/* The example file of the GGUF model mf (f32 weights); false on failure. */
static bool write_example(const tport_model_file *mf, const tport_arch *arch, const char *path) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    int32_t n_vocab = mf->vocab.n_tokens, n_ctx = kv_u32(mf, "context_length"), n_embd = kv_u32(mf, "embedding_length");
    int32_t n_head = kv_u32(mf, "attention.head_count"), n_layer = kv_u32(mf, "block_count");
    bool neox = !strcmp(arch->name, "gptneox"), mpt = !strcmp(arch->name, "mpt");
    put_i32(f, 0x67676d6c);
    if (mpt) {
        put_i32(f, n_embd), put_i32(f, n_ctx), put_i32(f, n_head), put_i32(f, n_layer), put_i32(f, n_vocab);
        put_f32(f, kv_f32(mf, "attention.max_alibi_bias")), put_f32(f, kv_f32(mf, "attention.clamp_kqv"));
        put_i32(f, 0);
    } else {
        put_i32(f, n_vocab), put_i32(f, n_ctx), put_i32(f, n_embd), put_i32(f, n_head), put_i32(f, n_layer);
        if (neox) {
            const tport_kv *par = tport_model_file_kv(mf, "gptneox.use_parallel_residual");
            put_i32(f, kv_u32(mf, "rope.dimension_count"));
            put_i32(f, par && par->v.b);
        }
        put_i32(f, 0); /* ftype: all f32 */
        put_i32(f, n_vocab);
    }
    for (int32_t i = 0; i < n_vocab; i++) {
        put_i32(f, (int32_t)mf->vocab.token_len[i]);
        fwrite(mf->vocab.tokens[i], 1, mf->vocab.token_len[i], f);
    }
    int64_t hd = n_embd / n_head;
    for (int k = 0; k < arch->n_tensors; k++) {
        const tport_arch_tensor *t = &arch->tensors[k];
        int copies = t->flags & TENSOR_LAYER ? n_layer : 1;
        for (int il = 0; il < copies; il++) {
            char gguf_name[96], legacy[96];
            const tport_mf_tensor *src = tport_arch_file_tensor(mf, arch, t->name, il, gguf_name, sizeof gguf_name);
            if (!src)
                continue;
            const char *pattern = NULL;
            for (int i = 0; arch->legacy_names[i][0]; i++)
                if (!strcmp(arch->legacy_names[i][0], t->name))
                    pattern = arch->legacy_names[i][1];
            if (!pattern || src->type != TPORT_TYPE_F32) {
                fclose(f);
                fprintf(stderr, "  %s: no example name or not f32\n", gguf_name);
                return false;
            }
            snprintf(legacy, sizeof legacy, pattern, il);
            bool qkv = neox && strstr(t->name, "attn_qkv");
            put_tensor(f, legacy, src, qkv, n_head, hd);
        }
    }
    return fclose(f) == 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_arch_legacy NAME\n");
        return 2;
    }
    char test_name[96];
    snprintf(test_name, sizeof test_name, "test_arch_legacy %s", argv[1]);
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/arch_refs.json");
    const json *list = refs ? json_get(refs, "archs") : NULL, *e = NULL;
    for (size_t i = 0; list && i < list->n; i++) {
        const json *n = json_get(&list->items[i], "name");
        if (n && n->kind == JSON_STRING && !strcmp(n->str, argv[1]))
            e = &list->items[i];
    }
    CHECK(e != NULL, "no entry '%s' in arch_refs.json", argv[1]);
    const json *synth = e ? json_get(e, "synth") : NULL, *vocab = e ? json_get(e, "vocab_from") : NULL;
    const json *runs = e ? json_get(e, "runs") : NULL;
    char vocab_path[1024] = "";
    if (!e || !synth || !runs || !vocab || !test_shared_path(vocab->str, vocab_path, sizeof vocab_path)) {
        json_free(refs);
        if (e && synth && runs)
            test_skip(test_name, "the vocabulary file is not in ../shared");
        return test_finish(test_name);
    }
    const char *dir = getenv("TMPDIR");
    char gguf[512], ggml[512], cmd[4096];
    snprintf(gguf, sizeof gguf, "%s/tport-legacy-%s-%d.gguf", dir && *dir ? dir : "/tmp", argv[1], (int)getpid());
    snprintf(ggml, sizeof ggml, "%s/tport-legacy-%s-%d.bin", dir && *dir ? dir : "/tmp", argv[1], (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s' synth %s --vocab-from '%s' -o '%s' >/dev/null", TPORT_CLI, synth->str, vocab_path,
             gguf);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(gguf, &mf) == TPORT_STATUS_OK, "open %s: %s", gguf, tport_last_error());
    const tport_arch *arch = mf ? tport_arch_find(mf->arch) : NULL;
    CHECK(arch && arch->legacy_names, "%s has no ggml-example layout", argv[1]);
    if (arch && arch->legacy_names)
        CHECK(write_example(mf, arch, ggml), "cannot write %s", ggml);
    tport_model_file_close(mf);
    char what[128], back[600];
    snprintf(what, sizeof what, "%s (GGML file)", argv[1]);
    if (arch)
        check_runs(ggml, arch->name, runs, what);
    /* and back to GGUF, as llama.cpp reads it */
    snprintf(back, sizeof back, "%s.gguf", ggml);
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --vocab-from '%s' --quiet", TPORT_CLI, ggml, back, vocab_path);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    tport_model_file *conv = NULL;
    CHECK(tport_model_file_open(back, &conv) == TPORT_STATUS_OK, "open %s: %s", back, tport_last_error());
    CHECK(conv && tport_model_file_find(conv, "token_embd.weight") && tport_model_file_find(conv, "blk.0.attn_qkv.weight") &&
              tport_model_file_kv(conv, "tokenizer.ggml.merges"),
          "%s: the converted file lacks GGUF names or merges", back);
    tport_model_file_close(conv);
    snprintf(what, sizeof what, "%s (GGML file converted to GGUF)", argv[1]);
    if (arch)
        check_runs(back, arch->name, runs, what);
    if (!getenv("TPORT_TEST_KEEP"))
        unlink(back);
    else
        fprintf(stderr, "kept %s and %s\n", ggml, back);
    unlink(gguf);
    if (!getenv("TPORT_TEST_KEEP"))
        unlink(ggml);
    json_free(refs);
    return test_finish(test_name);
}
