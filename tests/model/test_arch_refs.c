/* One architecture against llama.cpp: regenerates the random-weight file
 * of data/arch_refs.json's entry with `tport synth` (the recorded command
 * and seed), runs each recorded prompt (through `tport run`, and for f32
 * files also through the library with the linked-in CPU backend) and
 * compares the greedy ids with
 * the ones llama.cpp produced on the same file (how they were made is in
 * data/README.md).  argv[1] names the entry; a missing vocabulary file
 * skips.  With --expect-split (run with the "partial" test plug-in
 * preferred) it also checks that the new ops fell back to the CPU. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "greedy.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define MAX_IDS 256

/* A reference that cannot fail checks nothing: a continuation of one id
 * repeated passes any graph that echoes its input, and a step whose top-2
 * gap is smaller than the arithmetic's own noise is a coin toss.  The
 * floors are arch_refs.json's "can_fail" object (README.md says why);
 * this checks the recorded numbers, before anything runs. */
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

static void check_can_fail(const json *refs, const char *name, size_t r, const json *run, bool quantized,
                           const tport_token *ids, int n) {
    const json *floors = json_get(refs, "can_fail");
    double min_distinct = number_of(floors, "min_distinct"), f32_floor = number_of(floors, "min_margin_f32");
    double factor = number_of(floors, "min_margin_over_kv_f16_dev"), q_floor = number_of(floors, "min_margin_quantized");
    CHECK(min_distinct >= 6 && f32_floor > 0 && factor >= 1 && q_floor > 0, "arch_refs.json: no can_fail floors");
    double margin = number_of(run, "min_margin"), dev = number_of(run, "kv_f16_dev");
    double floor = quantized ? q_floor : (f32_floor > factor * dev ? f32_floor : factor * dev);
    CHECK(distinct(ids, n) >= (int)min_distinct, "%s, run %zu: the reference has %d distinct ids (< %g): it "
          "cannot tell a graph that repeats itself", name, r, distinct(ids, n), min_distinct);
    CHECK(margin >= floor && (quantized || dev >= 0), "%s, run %zu: recorded min_margin %g, kv_f16_dev %g: below "
          "the floor %g, the reference is a coin toss", name, r, margin, dev, floor);
}

static void temp_path(char *path, size_t cap, const char *tag) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, cap, "%s/tport-arch-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
}

static const json *find_entry(const json *refs, const char *name) {
    const json *list = json_get(refs, "archs");
    for (size_t i = 0; list && i < list->n; i++) {
        const json *n = json_get(&list->items[i], "name");
        if (n && n->kind == JSON_STRING && !strcmp(n->str, name))
            return &list->items[i];
    }
    return NULL;
}

static int read_ids(const json *arr, tport_token *out) {
    int n = 0;
    for (size_t i = 0; arr && arr->kind == JSON_ARRAY && i < arr->n && n < MAX_IDS; i++)
        out[n++] = (tport_token)arr->items[i].number;
    return n;
}

/* Greedy ids from `tport run --prompt-ids ... --ids --temp 0`, or with
 * -p TEXT when text is not NULL (plain text without quotes in it); in
 * batches of `batch` prompt tokens (0: the default). */
static int cli_ids(const char *path, const char *text, const tport_token *prompt, int n_prompt, int n,
                   tport_token *out, int batch) {
    char cmd[4096];
    /* the references are llama.cpp's with an f32 KV cache: so is this run's */
    int k = snprintf(cmd, sizeof cmd, "'%s' run -m '%s' -n %d --ids --temp 0 --kv-type f32 ", TPORT_CLI, path, n);
    if (batch > 0)
        k += snprintf(cmd + k, sizeof cmd - (size_t)k, "--batch %d ", batch);
    if (text && !strchr(text, '\''))
        k += snprintf(cmd + k, sizeof cmd - (size_t)k, "-p '%s'", text);
    else
        k += snprintf(cmd + k, sizeof cmd - (size_t)k, "--prompt-ids ");
    for (int i = 0; !text && i < n_prompt && k > 0 && k < (int)sizeof cmd - 16; i++)
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

/* With the test plug-in "partial" (it runs only add) preferred: add runs
 * there, and every op of ids 16..47 that ran at all ran on the CPU (of
 * the mixtures of experts' ids 22..28, those gpt-oss runs). */
static void check_split(tport_model *m, const tport_token *prompt, int n_prompt) {
    tport_session *s = tport_session_new(m, NULL);
    CHECK(s && tport_session_eval(s, prompt, n_prompt) == TPORT_STATUS_OK, "eval: %s", tport_last_error());
    static const char *const arch_ops[] = {"gelu_f16",   "gelu_erf",      "tanh",   "clamp",     "soft_max_ext",
                                           "mul_mat_id", "argsort_top_k", "add_id", "swiglu_oai"};
    int on_partial = 0, arch_on_cpu = 0, arch_elsewhere = 0;
    const char *backend, *op;
    for (int32_t i = 0, n; s && (n = tport_session_placement(s, i, &backend, &op)) > 0; i++) {
        on_partial += !strcmp(backend, "partial") && !strcmp(op, "add");
        for (size_t k = 0; k < sizeof arch_ops / sizeof arch_ops[0]; k++)
            if (!strcmp(op, arch_ops[k])) {
                arch_on_cpu += !strcmp(backend, "cpu");
                arch_elsewhere += !!strcmp(backend, "cpu");
            }
    }
    CHECK(on_partial > 0, "the partial plug-in ran no add");
    CHECK(arch_on_cpu > 0 && arch_elsewhere == 0, "new ops: %d on the cpu, %d elsewhere", arch_on_cpu,
          arch_elsewhere);
    tport_session_free(s);
}

/* With the opaque device plug-in (ABI 1.3, memory of its own, no
 * mixture-of-experts ops) preferred: attention and the router's products
 * run on it, the experts' products on the CPU, where their stacks stay. */
static void check_experts_on_cpu(tport_model *m, const tport_token *prompt, int n_prompt) {
    tport_session *s = tport_session_new(m, NULL);
    CHECK(s && tport_session_eval(s, prompt, n_prompt) == TPORT_STATUS_OK, "eval: %s", tport_last_error());
    int mm_device = 0, id_cpu = 0, id_elsewhere = 0;
    const char *backend, *op;
    for (int32_t i = 0, n; s && (n = tport_session_placement(s, i, &backend, &op)) > 0; i++) {
        mm_device += !strcmp(backend, "opaque") && !strcmp(op, "mul_mat");
        if (!strcmp(op, "mul_mat_id")) {
            id_cpu += !strcmp(backend, "cpu");
            id_elsewhere += !!strcmp(backend, "cpu");
        }
    }
    CHECK(mm_device > 0, "the device ran no mul_mat");
    CHECK(id_cpu > 0 && id_elsewhere == 0, "mul_mat_id: %d on the cpu, %d elsewhere", id_cpu, id_elsewhere);
    tport_session_free(s);
}

/* With --place attention=cpu beside the opaque device: the attention
 * projections (4 a layer) run on the CPU, the router's on the device. */
static void check_attention_on_cpu(tport_model *m, const tport_token *prompt, int n_prompt) {
    tport_session *s = tport_session_new(m, NULL);
    CHECK(s && tport_session_eval(s, prompt, n_prompt) == TPORT_STATUS_OK, "eval: %s", tport_last_error());
    int mm_cpu = 0, mm_device = 0;
    const char *backend, *op;
    for (int32_t i = 0, n; s && (n = tport_session_placement(s, i, &backend, &op)) > 0; i++)
        if (!strcmp(op, "mul_mat")) {
            mm_cpu += !strcmp(backend, "cpu") ? n : 0;
            mm_device += !strcmp(backend, "opaque") ? n : 0;
        }
    CHECK(mm_cpu == 4 * 2 && mm_device > 0, "mul_mat: %d on the cpu (want %d: 2 layers), %d on the device",
          mm_cpu, 4 * 2, mm_device);
    tport_session_free(s);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_arch_refs NAME\n");
        return 2;
    }
    char test_name[96];
    snprintf(test_name, sizeof test_name, "test_arch_refs %s", argv[1]);
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/arch_refs.json");
    CHECK(refs != NULL, "cannot read %s", TPORT_MODEL_TEST_DATA "/arch_refs.json");
    const json *e = refs ? find_entry(refs, argv[1]) : NULL;
    CHECK(e != NULL, "no entry '%s' in arch_refs.json", argv[1]);
    if (!e) {
        json_free(refs);
        return test_finish(test_name);
    }
    const json *arch = json_get(e, "arch"), *synth = json_get(e, "synth"), *vocab = json_get(e, "vocab_from");
    char vocab_path[1024] = "";
    if (vocab && vocab->kind == JSON_STRING && !test_shared_path(vocab->str, vocab_path, sizeof vocab_path)) {
        json_free(refs);
        test_skip(test_name, "the vocabulary file is not in ../shared");
    }
    const json *runs = json_get(e, "runs");
    CHECK(arch && synth && synth->kind == JSON_STRING && runs && runs->kind == JSON_ARRAY && runs->n > 0,
          "entry %s is incomplete", argv[1]);

    char path[256], cmd[4096];
    temp_path(path, sizeof path, argv[1]);
    snprintf(cmd, sizeof cmd, "'%s' synth %s%s%s%s -o '%s' >/dev/null", TPORT_CLI, synth ? synth->str : "",
             vocab_path[0] ? " --vocab-from '" : "", vocab_path, vocab_path[0] ? "'" : "", path);
    CHECK(system(cmd) == 0, "failed: %s", cmd);
    /* tport info names the architecture and says this build runs it */
    snprintf(cmd, sizeof cmd, "'%s' info '%s' 2>&1", TPORT_CLI, path);
    FILE *p = popen(cmd, "r");
    char line[256], want_arch[96];
    bool named = false, runnable = false;
    snprintf(want_arch, sizeof want_arch, "architecture:  %s\n", arch ? arch->str : "?");
    while (p && fgets(line, sizeof line, p)) {
        named |= !strcmp(line, want_arch);
        runnable |= !strncmp(line, "runs:          yes", 18);
    }
    CHECK(p && pclose(p) == 0 && named && runnable, "tport info: architecture line %d, runs line %d", named, runnable);
    /* --place-attention-cpu: the attention matrices placed on the CPU by an
     * override, the rest where the preference order puts it */
    bool place_attn = argc > 2 && !strcmp(argv[2], "--place-attention-cpu");
    tport_model_params mp = {.place = "attn_(q|k|v|output)\\.weight=cpu"};
    tport_model *m = tport_model_load(path, place_attn ? &mp : NULL);
    CHECK(m != NULL, "load %s: %s", path, tport_last_error());
    if (m && arch) {
        CHECK(!strcmp(tport_model_arch(m), arch->str), "architecture %s, want %s", tport_model_arch(m), arch->str);
        if (argc > 2 && !strcmp(argv[2], "--expect-split")) {
            tport_token prompt[MAX_IDS];
            int n_prompt = read_ids(json_get(&runs->items[0], "prompt_ids"), prompt);
            check_split(m, prompt, n_prompt);
        }
        if (place_attn) {
            tport_token prompt[MAX_IDS];
            int n_prompt = read_ids(json_get(&runs->items[0], "prompt_ids"), prompt);
            check_attention_on_cpu(m, prompt, n_prompt);
        }
        if (argc > 2 && !strcmp(argv[2], "--expect-experts-on-cpu")) {
            tport_token prompt[MAX_IDS];
            int n_prompt = read_ids(json_get(&runs->items[0], "prompt_ids"), prompt);
            check_experts_on_cpu(m, prompt, n_prompt);
        }
        for (size_t r = 0; runs && r < runs->n; r++) {
            tport_token prompt[MAX_IDS], want[MAX_IDS], got[MAX_IDS];
            int n_prompt = read_ids(json_get(&runs->items[r], "prompt_ids"), prompt);
            int n_want = read_ids(json_get(&runs->items[r], "ids"), want);
            CHECK(n_prompt > 0 && n_want > 0, "%s: run %zu is incomplete", argv[1], r);
            check_can_fail(refs, argv[1], r, &runs->items[r], strstr(synth->str, "--type") != NULL, want, n_want);
            /* the library with this program's linked-in CPU backend (baseline
             * x86-64 kernels): exact for f32 weights, whose sums do not go
             * through 8-bit activations */
            if (!strstr(synth->str, "--type")) {
                int n = greedy_ids(m, prompt, n_prompt, got, n_want);
                int d = first_difference(got, n, want, n_want);
                CHECK(d < 0, "%s, run %zu: greedy id %d is %d, llama.cpp gave %d", argv[1], r, d,
                      d >= 0 && d < n ? (int)got[d] : -1, d >= 0 && d < n_want ? (int)want[d] : -1);
            }
            /* `tport run`, with the CPU plug-in variant this machine selects */
            /* `tport run`, with the CPU plug-in variant this machine selects;
             * a text run goes through tport's tokenizer, whose ids must be
             * llama.cpp's (prompt_ids) */
            const json *text = json_get(&runs->items[r], "prompt_text");
            const char *t = text && text->kind == JSON_STRING ? text->str : NULL;
            if (t) {
                tport_token ids[MAX_IDS];
                int n_ids = tport_tokenize(m, t, tport_model_bos(m) >= 0 && prompt[0] == tport_model_bos(m), ids,
                                           MAX_IDS);
                CHECK(first_difference(ids, n_ids, prompt, n_prompt) < 0, "%s: tport_tokenize of '%s' differs from "
                      "llama.cpp's", argv[1], t);
            }
            int n = cli_ids(path, t, prompt, n_prompt, n_want, got, 0);
            int d = first_difference(got, n, want, n_want);
            CHECK(d < 0, "%s, run %zu (tport run%s): greedy id %d is %d, llama.cpp gave %d", argv[1], r,
                  t ? " -p" : "", d, d >= 0 && d < n ? (int)got[d] : -1, d >= 0 && d < n_want ? (int)want[d] : -1);
            /* a sliding window: batches of 2 make its layers' caches rings
             * of the window + 1 cells, which the run wraps round many times
             * (the default batch's ring outlasts these short runs) */
            if (strstr(synth->str, "--window")) {
                n = cli_ids(path, t, prompt, n_prompt, n_want, got, 2);
                d = first_difference(got, n, want, n_want);
                CHECK(d < 0, "%s, run %zu (tport run --batch 2): greedy id %d is %d, llama.cpp gave %d", argv[1], r,
                      d, d >= 0 && d < n ? (int)got[d] : -1, d >= 0 && d < n_want ? (int)want[d] : -1);
            }
        }
    }
    tport_model_free(m);
    unlink(path);
    json_free(refs);
    return test_finish(test_name);
}
