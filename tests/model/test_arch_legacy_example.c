/* tensorport against ggml's historical example programs (gpt-2,
 * starcoder, mpt, gpt-neox, gpt-j of ggml@2a75bd43 and ggml@d5c4ce0b, built
 * outside this repository): data/ggml_example_refs.json holds, for each
 * GGML file, its recipe (one of the file's "recipes", the arch_refs.json
 * models of 2026-12-01 that the programs ran on, written in the example's
 * layout by ggml_example_writer.c, possibly quantized as that commit's
 * quantize tool did), the file's size and FNV-1a hash, and the prompt ids,
 * generated ids and printed text of the historical program for a text
 * prompt with top_k 1 (greedy).  The test rewrites each file from its
 * recipe, checks that its bytes are the ones the historical programs ran
 * on (after the recorded bytes where the program's FMA-contracted
 * quantizer rounded otherwise), then expects tensorport's tokenization of
 * the prompt, its greedy ids (with the program's KV cache type) and
 * their text; for entries marked "convert" also after `tport convert` to
 * GGUF.  Every reference can fail: the JSON's "can_fail" floors (distinct
 * ids, smallest recorded top-2 gap) are checked before anything runs.
 *
 *   test_arch_legacy_example PROGRAM       check every file of PROGRAM
 *   test_arch_legacy_example --write NAME OUT [REFS]   write the file NAME
 *       only (how the inputs were made; the recipes of REFS, a JSON of
 *       this layout, instead of data/ggml_example_refs.json: how
 *       data/make_ggml_example_refs.py tries new recipes) */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/model_file.h"
#include "ggml_example_writer.h"
#include "greedy.h"
#include "model/arch/arch.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define MAX_IDS 256
#define MAX_QUANT 64

static const json *find_named(const json *list, const char *name) {
    for (size_t i = 0; list && i < list->n; i++) {
        const json *n = json_get(&list->items[i], "name");
        if (n && n->kind == JSON_STRING && !strcmp(n->str, name))
            return &list->items[i];
    }
    return NULL;
}

static const char *str_of(const json *o, const char *key) {
    const json *v = o ? json_get(o, key) : NULL;
    return v && v->kind == JSON_STRING ? v->str : NULL;
}

static int ids_of(const json *a, tport_token *out) {
    int n = 0;
    for (size_t i = 0; a && i < a->n && i < MAX_IDS; i++)
        out[n++] = (tport_token)a->items[i].number;
    return n;
}

static uint64_t fnv1a64_file(const char *path, long *size) {
    FILE *f = fopen(path, "rb");
    uint64_t h = 14695981039346656037ull;
    *size = 0;
    if (!f)
        return 0;
    unsigned char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t i = 0; i < n; i++)
            h = (h ^ buf[i]) * 1099511628211ull;
        *size += (long)n;
    }
    fclose(f);
    return h;
}

/* [offset, tensorport's byte, the historical byte]: checks the one, writes the other. */
static bool patch_byte(const char *path, const json *p) {
    if (!p || p->kind != JSON_ARRAY || p->n != 3)
        return false;
    FILE *f = fopen(path, "r+b");
    int c = f && fseek(f, (long)p->items[0].number, SEEK_SET) == 0 ? fgetc(f) : EOF;
    bool ok = c == (int)p->items[1].number && fseek(f, (long)p->items[0].number, SEEK_SET) == 0 &&
              fputc((int)p->items[2].number, f) != EOF;
    if (f)
        ok = fclose(f) == 0 && ok;
    return ok;
}

/* Writes the file of entry e to out; false on failure. */
static bool write_entry(const json *recipes, const json *e, const char *out) {
    const json *ref = find_named(json_get(recipes, "recipes"), str_of(e, "arch_ref") ? str_of(e, "arch_ref") : "");
    const char *synth = str_of(ref, "synth"), *vocab_from = str_of(ref, "vocab_from"), *form = str_of(e, "vocab");
    char vocab_path[1024], gguf[600], cmd[4096];
    if (!synth || !vocab_from || !form || !test_shared_path(vocab_from, vocab_path, sizeof vocab_path))
        return false;
    snprintf(gguf, sizeof gguf, "%s.synth.gguf", out);
    snprintf(cmd, sizeof cmd, "'%s' synth %s --vocab-from '%s' -o '%s' >/dev/null", TPORT_CLI, synth, vocab_path, gguf);
    if (system(cmd) != 0) {
        fprintf(stderr, "  failed: %s\n", cmd);
        return false;
    }
    tport_model_file *mf = NULL;
    bool ok = tport_model_file_open(gguf, &mf) == TPORT_STATUS_OK;
    const tport_arch *arch = ok ? tport_arch_find(mf->arch) : NULL;
    example_write_opts o = {.vocab = !strcmp(form, "latin1-utf8") ? EXAMPLE_VOCAB_LATIN1 : EXAMPLE_VOCAB_BYTES,
                            .qtype = -1};
    const json *expand = json_get(e, "expand_mqa");
    o.expand_mqa = expand && expand->kind == JSON_BOOL && expand->number != 0;
    const json *ft = json_get(e, "ftype"), *q = json_get(e, "quant");
    o.ftype = ft ? (int32_t)ft->number : 0;
    const char *names[MAX_QUANT];
    if (q && q->kind == JSON_OBJECT) {
        const json *t = json_get(q, "tensors"), *code = json_get(q, "ggml_type");
        o.qtype = (int)tport_type_from_name(str_of(q, "type") ? str_of(q, "type") : "");
        o.rule = str_of(q, "rule");
        o.qcode = code ? (int32_t)code->number : -1;
        for (size_t i = 0; t && i < t->n && i < MAX_QUANT; i++)
            names[o.n_quantized++] = t->items[i].str;
        o.quantized = names;
        ok = ok && o.qtype >= 0 && o.qcode >= 0;
    }
    const char *gguf_name, *file_name;
    ok = ok && arch && mf_example_name_at(arch->name, 0, &gguf_name, &file_name) &&
         ggml_example_write(mf, arch, out, &o);
    tport_model_file_close(mf);
    unlink(gguf);
    return ok;
}

static void hex_of(const char *s, size_t n, char *out, size_t cap) {
    size_t k = 0;
    for (size_t i = 0; i < n && k + 3 <= cap; i++, k += 2)
        snprintf(out + k, 3, "%02x", (unsigned char)s[i]);
    out[k < cap ? k : 0] = '\0';
}

/* Each UTF-8 sequence of a code point below 256 becomes that byte, in place. */
static size_t latin1_decode(char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c == 0xC2 || c == 0xC3) && i + 1 < n) {
            s[k++] = (char)((c & 0x03) << 6 | ((unsigned char)s[i + 1] & 0x3F));
            i++;
        } else {
            s[k++] = s[i];
        }
    }
    return k;
}

/* Greedy ids after the prompt, KV cache as the program kept it. */
static int greedy_kv(tport_model *m, const tport_token *prompt, int n_prompt, tport_token *out, int n, bool kv_f32) {
    tport_session_params sp = {.kv_f32 = kv_f32};
    tport_session *s = tport_session_new(m, &sp);
    int done = 0;
    if (!s || tport_session_eval(s, prompt, n_prompt) != TPORT_STATUS_OK)
        n = 0;
    int32_t n_vocab = tport_model_n_vocab(m);
    while (done < n) {
        const float *logits = tport_session_logits(s);
        tport_token best = 0;
        for (int32_t i = 1; logits && i < n_vocab; i++)
            if (logits[i] > logits[best])
                best = i;
        out[done++] = best;
        if (done < n && tport_session_eval(s, &best, 1) != TPORT_STATUS_OK)
            break;
    }
    if (done < n)
        fprintf(stderr, "  greedy: %s\n", tport_last_error());
    tport_session_free(s);
    return done;
}

/* `tport run` (the CPU plug-in variant the machine supports best, whose
 * quantized kernels are the ones the arch tests compare) on the prompt ids. */
static int cli_ids(const char *path, const tport_token *prompt, int n_prompt, int n, bool kv_f32, tport_token *out) {
    char cmd[8192];
    int k = snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -n %d --ids --temp 0 --kv-type %s --prompt-ids ", TPORT_CLI,
                     path, n, kv_f32 ? "f32" : "f16");
    for (int i = 0; i < n_prompt && k > 0 && k < (int)sizeof cmd - 16; i++)
        k += snprintf(cmd + k, sizeof cmd - (size_t)k, "%s%d", i ? "," : "", (int)prompt[i]);
    snprintf(cmd + k, sizeof cmd - (size_t)k, " 2>/dev/null");
    FILE *p = popen(cmd, "r");
    int got = 0;
    for (int v; p && got < n && fscanf(p, "%d,", &v) == 1;)
        out[got++] = (tport_token)v;
    if (p && pclose(p) != 0)
        fprintf(stderr, "  failed: %s\n", cmd);
    return got;
}

/* How many ids were equal: all of them, or -1.  The recorded gaps of
 * every compared step are at least can_fail's floor (check_can_fail), so
 * no step is a near-tie that rounding may decide. */
static int compare_ids(const tport_token *got, int n, const tport_token *want, int n_want) {
    return first_difference(got, n, want, n_want) < 0 ? n_want : -1;
}

static double number_of(const json *o, const char *key) {
    const json *v = o ? json_get(o, key) : NULL;
    return v && v->kind == JSON_NUMBER ? v->number : -1.0;
}

static int distinct(const tport_token *ids, int n) {
    int d = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < i && ids[j] != ids[i])
            j++;
        d += j == i;
    }
    return d;
}

/* A reference that cannot fail checks nothing: a continuation of one or
 * two ids repeated passes a graph that echoes its input, and a step whose
 * top-2 gap is below the arithmetic's own noise is a coin toss.  Before
 * anything runs, every run of PROGRAM's files must have the floors of
 * the JSON's "can_fail" (README.md says why): min_distinct ids among the
 * generated ones and a gap recorded for each step, none below the floor:
 * for f32 files min_gap_f32 and min_gap_over_kv_f16_dev times the file's
 * kv_f16_dev (the largest logit change the program's own f16 KV cache
 * makes), for quantized files min_gap_quantized (a quantized run ends
 * before its first step below it). */
static void check_can_fail(const json *refs, const char *program) {
    const json *floors = json_get(refs, "can_fail"), *files = json_get(refs, "files");
    double min_distinct = number_of(floors, "min_distinct"), f32_floor = number_of(floors, "min_gap_f32");
    double factor = number_of(floors, "min_gap_over_kv_f16_dev"), q_floor = number_of(floors, "min_gap_quantized");
    CHECK(min_distinct >= 6 && f32_floor > 0 && factor >= 1 && q_floor > 0, "ggml_example_refs.json: no can_fail "
          "floors");
    for (size_t i = 0; files && i < files->n; i++) {
        const json *e = &files->items[i], *runs = json_get(e, "runs"), *q = json_get(e, "quant");
        const char *name = str_of(e, "name"), *prog = str_of(e, "program");
        if (!name || !prog || strcmp(prog, program))
            continue;
        bool quantized = q && q->kind != JSON_NULL;
        double dev = number_of(e, "kv_f16_dev");
        CHECK(quantized || dev >= 0, "%s: no kv_f16_dev recorded", name);
        double floor = quantized ? q_floor : (f32_floor > factor * dev ? f32_floor : factor * dev);
        for (size_t r = 0; runs && r < runs->n; r++) {
            const json *gaps = json_get(&runs->items[r], "gaps");
            tport_token ids[MAX_IDS];
            int n = ids_of(json_get(&runs->items[r], "ids"), ids);
            CHECK(distinct(ids, n) >= (int)min_distinct, "%s, run %zu: the reference has %d distinct ids (< %g): it "
                  "cannot tell a graph that repeats itself", name, r, distinct(ids, n), min_distinct);
            CHECK(gaps && gaps->kind == JSON_ARRAY && (int)gaps->n == n, "%s, run %zu: %d ids but not as many gaps",
                  name, r, n);
            for (size_t k = 0; gaps && k < gaps->n; k++)
                CHECK(gaps->items[k].kind == JSON_NUMBER && gaps->items[k].number >= floor, "%s, run %zu, step %zu: "
                      "recorded gap %g below the floor %g, the step is a coin toss", name, r, k,
                      gaps->items[k].number, floor);
        }
    }
}

static void check_run(tport_model *m, const char *path, const char *file, const json *run, bool library) {
    const char *text = str_of(run, "prompt_text"), *commit = str_of(run, "ggml"), *kv = str_of(run, "kv");
    const char *want_hex = str_of(run, "text_hex");
    const json *quirk = json_get(run, "tokenizer_differs");
    tport_token prompt[MAX_IDS], want[MAX_IDS], got[MAX_IDS], mine[MAX_IDS];
    int n_prompt = ids_of(json_get(run, "prompt_ids"), prompt), n_want = ids_of(json_get(run, "ids"), want);
    CHECK(text && commit && kv && want_hex && n_prompt > 0 && n_want > 0, "%s: incomplete run entry", file);
    if (!text || !commit || !kv || !want_hex || n_prompt <= 0 || n_want <= 0)
        return;
    int n_mine = tport_tokenize(m, text, false, mine, MAX_IDS);
    int d = first_difference(mine, n_mine, prompt, n_prompt);
    if (quirk) /* the program's gpt_tokenize had a bug; its ids are fed as given (see data/README.md) */
        CHECK(d >= 0, "%s, ggml@%.8s: expected the documented tokenizer difference, got the same ids", file, commit);
    else
        CHECK(d < 0, "%s, ggml@%.8s: prompt token %d is %d, the program's gpt_tokenize gave %d", file, commit, d,
              d >= 0 && d < n_mine ? (int)mine[d] : -1, d >= 0 && d < n_prompt ? (int)prompt[d] : -1);
    bool kv_f32 = !strcmp(kv, "f32");
    int n = cli_ids(path, prompt, n_prompt, n_want, kv_f32, got);
    int same = compare_ids(got, n, want, n_want);
    d = first_difference(got, n, want, n_want);
    CHECK(same >= 0, "%s, ggml@%.8s (tport run): greedy id %d is %d, the program gave %d", file, commit, d,
          d >= 0 && d < n ? (int)got[d] : -1, d >= 0 && d < n_want ? (int)want[d] : -1);
    if (library) {
        tport_token lib[MAX_IDS];
        int nl = greedy_kv(m, prompt, n_prompt, lib, n_want, kv_f32);
        int dl = first_difference(lib, nl, want, n_want);
        CHECK(compare_ids(lib, nl, want, n_want) >= 0, "%s, ggml@%.8s (library): greedy id %d is %d, the program "
              "gave %d", file, commit, dl, dl >= 0 && dl < nl ? (int)lib[dl] : -1, dl >= 0 && dl < n_want ? (int)want[dl] : -1);
    }
    if (same == n_want) { /* the program printed every prompt and generated token's text */
        static char txt[1 << 14], hex[1 << 15];
        size_t len = 0;
        for (int i = 0; i < n_prompt + n && len < sizeof txt - 512; i++) {
            tport_token id = i < n_prompt ? prompt[i] : got[i - n_prompt];
            int32_t k = tport_token_to_text(m, -1, id, txt + len, 512);
            len += k > 0 ? (size_t)k : 0;
        }
        if (str_of(run, "text_form") && !strcmp(str_of(run, "text_form"), "latin1-decoded"))
            len = latin1_decode(txt, len); /* mpt's loader at ggml@d5c4ce0b turns U+00XX back into bytes */
        hex_of(txt, len, hex, sizeof hex);
        CHECK(!strcmp(hex, want_hex), "%s, ggml@%.8s: the text differs from what the program printed", file, commit);
    }
    printf("%s, ggml@%.8s: %d prompt ids%s, %d of %d generated ids as the program\n", file, commit, n_prompt,
           quirk ? " (the program's, its tokenizer differs)" : "", same < 0 ? d : same, n_want);
}

/* Entries with "convert": `tport convert FILE OUT.gguf --vocab-from` (the
 * recipe's vocabulary) must give the program's ids too: the GGUF
 * path of an architecture llama.cpp has no graph for (gpt-j). */
static void check_converted(const json *recipes, const json *e, const char *path, const char *name,
                            const json *runs) {
    const json *ref = find_named(json_get(recipes, "recipes"), str_of(e, "arch_ref") ? str_of(e, "arch_ref") : "");
    const char *vocab_from = str_of(ref, "vocab_from");
    char vocab_path[1024], gguf[700], cmd[4096];
    CHECK(vocab_from && test_shared_path(vocab_from, vocab_path, sizeof vocab_path), "%s: no vocabulary", name);
    if (!vocab_from)
        return;
    snprintf(gguf, sizeof gguf, "%s.gguf", path);
    snprintf(cmd, sizeof cmd, "'%s' convert '%s' '%s' --vocab-from '%s' --quiet", TPORT_CLI, path, gguf, vocab_path);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(gguf, &mf) == TPORT_STATUS_OK && mf->container == TPORT_CONTAINER_GGUF &&
              tport_model_file_find(mf, "token_embd.weight") && tport_model_file_kv(mf, "tokenizer.ggml.merges"),
          "%s: the converted file is not a GGUF with GGUF names and merges", gguf);
    tport_model_file_close(mf);
    for (size_t r = 0; runs && r < runs->n; r++) {
        const json *run = &runs->items[r];
        const char *kv = str_of(run, "kv"), *commit = str_of(run, "ggml");
        tport_token prompt[MAX_IDS], want[MAX_IDS], got[MAX_IDS];
        int n_prompt = ids_of(json_get(run, "prompt_ids"), prompt), n_want = ids_of(json_get(run, "ids"), want);
        int n = cli_ids(gguf, prompt, n_prompt, n_want, kv && !strcmp(kv, "f32"), got);
        int same = compare_ids(got, n, want, n_want), d = first_difference(got, n, want, n_want);
        CHECK(same >= 0, "%s converted to GGUF, ggml@%.8s: greedy id %d is %d, the program gave %d", name,
              commit ? commit : "?", d, d >= 0 && d < n ? (int)got[d] : -1, d >= 0 && d < n_want ? (int)want[d] : -1);
        printf("%s converted to GGUF, ggml@%.8s: %d of %d generated ids as the program\n", name, commit ? commit : "?",
               same < 0 ? d : same, n_want);
    }
    if (!getenv("TPORT_TEST_KEEP"))
        unlink(gguf);
}

int main(int argc, char **argv) {
    if (argc < 2 || (!strcmp(argv[1], "--write") && argc != 4 && argc != 5)) {
        fprintf(stderr, "usage: test_arch_legacy_example PROGRAM | --write NAME OUT [REFS]\n");
        return 2;
    }
    bool own_refs = argc == 5 && !strcmp(argv[1], "--write");
    json *refs = json_load(own_refs ? argv[4] : TPORT_MODEL_TEST_DATA "/ggml_example_refs.json");
    const json *files = refs ? json_get(refs, "files") : NULL;
    if (!strcmp(argv[1], "--write")) {
        const json *e = find_named(files, argv[2]);
        bool ok = e && write_entry(refs, e, argv[3]);
        if (!ok)
            fprintf(stderr, "cannot write %s as %s\n", argv[3], argv[2]);
        json_free(refs);
        return ok ? 0 : 1;
    }
    char test_name[96], vocab_probe[1024];
    snprintf(test_name, sizeof test_name, "test_arch_legacy_example %s", argv[1]);
    CHECK(files != NULL, "cannot read ggml_example_refs.json");
    check_can_fail(refs, argv[1]); /* the recorded numbers, before anything runs */
    if (!test_shared_path("models/vocab/ggml-vocab-gpt-2.gguf", vocab_probe, sizeof vocab_probe)) {
        json_free(refs);
        if (test_failures) /* a reference that cannot fail is an error even where nothing runs */
            return test_finish(test_name);
        test_skip(test_name, "the vocabulary files are not in ../shared");
        return test_finish(test_name);
    }
    const char *dir = getenv("TMPDIR");
    int n_files = 0;
    for (size_t i = 0; files && i < files->n; i++) {
        const json *e = &files->items[i];
        const char *name = str_of(e, "name"), *program = str_of(e, "program"), *fnv = str_of(e, "fnv1a64");
        const json *bytes = json_get(e, "bytes"), *runs = json_get(e, "runs");
        if (!name || !program || strcmp(program, argv[1]))
            continue;
        n_files++;
        char path[600];
        snprintf(path, sizeof path, "%s/tport-example-%s-%d.bin", dir && *dir ? dir : "/tmp", name, (int)getpid());
        CHECK(write_entry(refs, e, path), "%s: cannot write the file", name);
        /* bytes where the historical quantize tool rounded otherwise than
         * tensorport's rule (see data/README.md): tensorport's bytes must be
         * the recorded ones, then the file becomes the historical one */
        const json *patch = json_get(e, "patch");
        for (size_t k = 0; patch && k < patch->n; k++)
            CHECK(patch_byte(path, &patch->items[k]), "%s: patch %zu does not apply", name, k);
        long size;
        char h[24];
        snprintf(h, sizeof h, "%016llx", (unsigned long long)fnv1a64_file(path, &size));
        CHECK(fnv && bytes && !strcmp(h, fnv) && size == (long)bytes->number,
              "%s: %ld bytes, FNV-1a %s; the historical programs ran on %.0f bytes, %s", name, size, h,
              bytes ? bytes->number : -1.0, fnv ? fnv : "?");
        tport_model *m = tport_model_load(path, NULL);
        CHECK(m != NULL, "load %s: %s", path, tport_last_error());
        const json *q = json_get(e, "quant");
        for (size_t r = 0; m && runs && r < runs->n; r++) /* the linked-in baseline kernels: f32 files only */
            check_run(m, path, name, &runs->items[r], !q || q->kind == JSON_NULL);
        tport_model_free(m);
        const json *conv = json_get(e, "convert");
        if (conv && conv->kind == JSON_BOOL && conv->number != 0)
            check_converted(refs, e, path, name, runs);
        if (!getenv("TPORT_TEST_KEEP"))
            unlink(path);
        else
            fprintf(stderr, "kept %s\n", path);
    }
    CHECK(n_files > 0, "no file of program '%s' in ggml_example_refs.json", argv[1]);
    json_free(refs);
    return test_finish(test_name);
}
