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
#include "ggml_example_writer.h"
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
    const char *gguf_name, *file_name;
    bool layout = arch && mf_example_name_at(arch->name, 0, &gguf_name, &file_name);
    CHECK(layout, "%s has no ggml-example layout", argv[1]);
    if (layout)
        CHECK(ggml_example_write(mf, arch, ggml, &(example_write_opts){.vocab = EXAMPLE_VOCAB_AS_GGUF, .qtype = -1}),
              "cannot write %s", ggml);
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
