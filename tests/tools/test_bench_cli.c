/* `tport bench` on a tiny synthetic model: --json prints one JSON document
 * with the asked test sizes, one positive finite tokens/s sample per
 * repetition, a median among the samples, and weight byte counts equal to
 * what the file holds; the text output names both tests; bad arguments
 * fail with a non-zero status. */
#include <ctype.h>
#include <math.h>

#include "../test_util.h"
#include "formats/model_file.h"
#include "json_min.h"
#include "tool_run.h"

#define NAME "test_bench_cli"

static double num(const json *obj, const char *key) {
    const json *v = json_get(obj, key);
    return v && v->kind == JSON_NUMBER ? v->number : NAN;
}

/* One test's record: n_tokens, samples_ts (reps positive values), a median
 * inside the samples. */
static double check_test(const json *doc, const char *key, int n_tokens, int reps) {
    const json *t = json_get(doc, key);
    CHECK(t && t->kind == JSON_OBJECT, "no \"%s\" object", key);
    if (!t)
        return NAN;
    CHECK(num(t, "n_tokens") == n_tokens, "%s.n_tokens %g, want %d", key, num(t, "n_tokens"), n_tokens);
    const json *s = json_get(t, "samples_ts");
    CHECK(s && s->kind == JSON_ARRAY && (int)s->n == reps, "%s.samples_ts: want %d values", key, reps);
    double lo = INFINITY, hi = 0;
    for (size_t i = 0; s && s->kind == JSON_ARRAY && i < s->n; i++) {
        double x = s->items[i].kind == JSON_NUMBER ? s->items[i].number : NAN;
        CHECK(isfinite(x) && x > 0, "%s.samples_ts[%zu] = %g", key, i, x);
        lo = fmin(lo, x);
        hi = fmax(hi, x);
    }
    double med = num(t, "median_ts");
    CHECK(isfinite(med) && med > 0 && med >= lo && med <= hi, "%s.median_ts %g outside [%g, %g]", key, med, lo, hi);
    return med;
}

/* The file must hold exactly one JSON object: '{' first, '}' last. */
static int one_object(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int c, first = 0, last = 0;
    while ((c = fgetc(f)) != EOF) {
        if (isspace(c))
            continue;
        if (!first)
            first = c;
        last = c;
    }
    fclose(f);
    return first == '{' && last == '}';
}

int main(void) {
    char dir[4096], model[4200], out[4200], args[9000];
    if (!tool_scratch_dir(dir, sizeof dir, "bench"))
        return 1;
    snprintf(model, sizeof model, "%s/m.gguf", dir);
    snprintf(out, sizeof out, "%s/out.json", dir);
    snprintf(args, sizeof args,
             "synth --dim 64 --layers 2 --heads 4 --ff 128 --vocab 300 --ctx 64 --type f32 -o '%s' >/dev/null", model);
    CHECK(tool_run(args) == 0, "synth failed");

    snprintf(args, sizeof args, "bench -m '%s' -p 16 -n 8 -r 3 --threads 1 --json > '%s'", model, out);
    int rc = tool_run(args);
    CHECK(rc == 0, "tport bench --json exited with %d", rc);
    CHECK(one_object(out), "output is not one JSON object");
    json *doc = json_load(out);
    CHECK(doc && doc->kind == JSON_OBJECT, "output does not parse as JSON");
    if (doc) {
        CHECK(num(doc, "n_prompt") == 16 && num(doc, "n_gen") == 8 && num(doc, "reps") == 3 &&
                  num(doc, "threads") == 1,
              "n_prompt %g n_gen %g reps %g threads %g", num(doc, "n_prompt"), num(doc, "n_gen"), num(doc, "reps"),
              num(doc, "threads"));
        CHECK(num(doc, "n_vocab") == 300, "n_vocab %g", num(doc, "n_vocab"));
        /* no --backend: "auto", and each test names the backends that ran it */
        const json *be = json_get(doc, "backend"), *ran = json_get(json_get(doc, "tg"), "ran_on");
        CHECK(be && be->kind == JSON_STRING && !strcmp(be->str, "auto"), "JSON backend is not \"auto\"");
        CHECK(ran && ran->kind == JSON_STRING && strstr(ran->str, "cpu"), "tg.ran_on lacks cpu: %s",
              ran && ran->kind == JSON_STRING ? ran->str : "(missing)");
        check_test(doc, "pp", 16, 3);
        double tg = check_test(doc, "tg", 8, 3);

        /* Byte counts, computed here from the file: every tensor; and per
         * generated token every tensor but the embedding table, of which one
         * row is read (the file has its own output.weight). */
        tport_model_file *mf = NULL;
        CHECK(tport_model_file_open(model, &mf) == TPORT_STATUS_OK, "open %s", model);
        if (mf) {
            double total = 0, embd = 0, embd_rows = 1;
            for (int i = 0; i < mf->n_tensors; i++) {
                total += (double)mf->tensors[i].nbytes;
                if (!strcmp(mf->tensors[i].name, "token_embd.weight")) {
                    embd = (double)mf->tensors[i].nbytes;
                    embd_rows = (double)mf->tensors[i].ne[1];
                }
            }
            double per_token = total - embd + embd / embd_rows;
            CHECK(num(doc, "weight_bytes") == total, "weight_bytes %g, file holds %g", num(doc, "weight_bytes"), total);
            CHECK(num(doc, "bytes_per_token") == per_token, "bytes_per_token %g, want %g",
                  num(doc, "bytes_per_token"), per_token);
            double gbs = num(json_get(doc, "tg"), "gb_per_s");
            CHECK(fabs(gbs - tg * per_token / 1e9) <= 1e-4 * gbs, "tg.gb_per_s %g, want %g", gbs, tg * per_token / 1e9);
            tport_model_file_close(mf);
        }
        json_free(doc);
    }

    /* A mixture of 8 experts, 2 a token: a token streams 2/8 of each expert
     * stack (tensors with a third dimension of 8), everything else whole. */
    char moe[4200];
    snprintf(moe, sizeof moe, "%s/moe.gguf", dir);
    snprintf(args, sizeof args,
             "synth --arch qwen3moe --dim 64 --layers 2 --heads 4 --ff 128 --experts 8 --experts-used 2 --expert-ff 32 "
             "--vocab 300 --ctx 64 --type f32 -o '%s' >/dev/null",
             moe);
    CHECK(tool_run(args) == 0, "synth qwen3moe failed");
    snprintf(args, sizeof args, "bench -m '%s' -p 0 -n 2 -r 1 --threads 1 --json > '%s'", moe, out);
    CHECK(tool_run(args) == 0, "tport bench on a mixture failed");
    doc = json_load(out);
    tport_model_file *mf = NULL;
    CHECK(doc && tport_model_file_open(moe, &mf) == TPORT_STATUS_OK, "bench JSON / open %s", moe);
    if (doc && mf) {
        double per_token = 0, stacks = 0;
        for (int i = 0; i < mf->n_tensors; i++) {
            const tport_mf_tensor *t = &mf->tensors[i];
            double b = (double)t->nbytes;
            if (t->n_dims >= 3 && t->ne[2] == 8) {
                per_token += b / 8 * 2;
                stacks++;
            } else if (!strcmp(t->name, "token_embd.weight")) {
                per_token += b / (double)t->ne[1];
            } else {
                per_token += b;
            }
        }
        CHECK(stacks == 6, "the mixture has %g expert stacks, want 6", stacks);
        CHECK(num(doc, "bytes_per_token") == per_token, "mixture: bytes_per_token %g, want %g (the used experts)",
              num(doc, "bytes_per_token"), per_token);
    }
    if (mf)
        tport_model_file_close(mf);
    json_free(doc);

    /* Forced to one backend, that one runs every node. */
    snprintf(args, sizeof args, "bench -m '%s' -p 8 -n 2 -r 1 --threads 1 --backend cpu --json > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench --backend cpu failed");
    json *fd = json_load(out);
    const json *fb = fd ? json_get(fd, "backend") : NULL, *fp = fd ? json_get(json_get(fd, "pp"), "ran_on") : NULL;
    CHECK(fb && fb->kind == JSON_STRING && !strcmp(fb->str, "cpu"), "forced: JSON backend is not \"cpu\"");
    CHECK(fp && fp->kind == JSON_STRING && !strcmp(fp->str, "cpu"), "forced: pp.ran_on is not \"cpu\": %s",
          fp && fp->kind == JSON_STRING ? fp->str : "(missing)");
    json_free(fd);

    /* Text output names both tests. */
    snprintf(args, sizeof args, "bench -m '%s' -p 8 -n 4 -r 1 --threads 1 > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench (text) failed");
    FILE *f = fopen(out, "rb");
    char text[4096] = "";
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(text, "pp8") && strstr(text, "tg4"), "text output lacks pp8/tg4:\n%s", text);

    /* At a depth: the text names it, the JSON records it and the KV type. */
    snprintf(args, sizeof args, "bench -m '%s' -p 0 -n 3 -d 40 -r 1 --threads 1 > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench -d 40 failed");
    f = fopen(out, "rb");
    n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(text, "tg3 @ d40") && strstr(text, "f16 KV cache"), "text output lacks 'tg3 @ d40':\n%s", text);
    snprintf(args, sizeof args, "bench -m '%s' -p 4 -n 0 -d 9 -r 1 --kv-type f32 --json > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench -d 9 --kv-type f32 --json failed");
    json *dj = json_load(out);
    CHECK(dj && num(dj, "n_depth") == 9 && num(dj, "n_prompt") == 4, "JSON lacks n_depth 9");
    const json *kt = dj ? json_get(dj, "kv_type") : NULL;
    CHECK(kt && kt->kind == JSON_STRING && !strcmp(kt->str, "f32"), "JSON kv_type is not \"f32\"");
    json_free(dj);
    snprintf(args, sizeof args, "bench -m '%s' -d -1 2>/dev/null >/dev/null", model);
    CHECK(tool_run(args) != 0, "-d -1 accepted");
    snprintf(args, sizeof args, "bench -m '%s' --kv-type q4_0 2>/dev/null >/dev/null", model);
    CHECK(tool_run(args) != 0, "--kv-type q4_0 accepted");

    /* --parallel 3: the tests of three sequences together (aggregate t/s),
     * one sequence's tg beside, and the step cost between them. */
    snprintf(args, sizeof args, "bench -m '%s' -p 6 -n 5 -r 2 --threads 1 --parallel 3 --json > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench --parallel 3 --json failed");
    CHECK(one_object(out), "--parallel: output is not one JSON object");
    json *pj = json_load(out);
    CHECK(pj && pj->kind == JSON_OBJECT, "--parallel: output does not parse as JSON");
    if (pj) {
        CHECK(num(pj, "parallel") == 3, "--parallel: \"parallel\" is %g, want 3", num(pj, "parallel"));
        check_test(pj, "pp", 6, 2);
        double agg = check_test(pj, "tg", 5, 2), one = check_test(pj, "tg_single", 5, 2);
        double cost = num(pj, "step_cost_vs_single"), up = num(pj, "speedup_vs_single");
        CHECK(isfinite(cost) && cost > 0 && fabs(cost - 3 * one / agg) <= 1e-4 * cost,
              "step_cost_vs_single %g, want 3 x %g / %g", cost, one, agg);
        CHECK(isfinite(up) && fabs(up - agg / one) <= 1e-4 * up, "speedup_vs_single %g, want %g / %g", up, agg, one);
        const json *pr = json_get(json_get(pj, "tg"), "ran_on");
        CHECK(pr && pr->kind == JSON_STRING && strstr(pr->str, "cpu"), "--parallel: tg.ran_on lacks cpu");
    }
    json_free(pj);
    /* the classic output has no parallel keys */
    snprintf(args, sizeof args, "bench -m '%s' -p 0 -n 2 -r 1 --threads 1 --json > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench -n 2 --json failed");
    pj = json_load(out);
    CHECK(pj && !json_get(pj, "parallel") && !json_get(pj, "tg_single"), "without --parallel: parallel keys");
    json_free(pj);
    snprintf(args, sizeof args, "bench -m '%s' -p 4 -n 3 -d 5 -r 1 --threads 1 --parallel 2 > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench --parallel 2 (text) failed");
    f = fopen(out, "rb");
    n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(text, "pp4 x2 @ d5") && strstr(text, "tg3 x2 @ d5") && strstr(text, "tg3 x1 @ d5") &&
              strstr(text, "a step of 2 sequences costs"),
          "--parallel 2 text lacks its tests:\n%s", text);
    /* one sequence: no comparison with itself */
    snprintf(args, sizeof args, "bench -m '%s' -p 2 -n 2 -r 1 --threads 1 --parallel 1 --json > '%s'", model, out);
    CHECK(tool_run(args) == 0, "tport bench --parallel 1 failed");
    pj = json_load(out);
    CHECK(pj && num(pj, "parallel") == 1 && json_get(pj, "tg") && !json_get(pj, "tg_single"),
          "--parallel 1: want tg and no tg_single");
    json_free(pj);
    /* bad counts are refused, naming the option */
    const char *bad[] = {"0", "257", "-1", "x", ""};
    char err[4200];
    snprintf(err, sizeof err, "%s/err.txt", dir);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        snprintf(args, sizeof args, "bench -m '%s' -p 2 -n 2 --parallel '%s' >/dev/null 2>'%s'", model, bad[i], err);
        CHECK(tool_run(args) == 2, "--parallel '%s' not refused with status 2", bad[i]);
        f = fopen(err, "rb");
        n = f ? fread(text, 1, sizeof text - 1, f) : 0;
        text[n] = '\0';
        if (f)
            fclose(f);
        CHECK(strstr(text, "--parallel"), "--parallel '%s': the message does not name the option: %s", bad[i], text);
    }
    snprintf(args, sizeof args, "bench --help > '%s'", out);
    CHECK(tool_run(args) == 0, "bench --help failed");
    f = fopen(out, "rb");
    n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    text[n] = '\0';
    if (f)
        fclose(f);
    CHECK(strstr(text, "--parallel N"), "bench --help does not list --parallel");
    remove(err);

    /* Bad arguments. */
    snprintf(args, sizeof args, "bench -m '%s' -p abc 2>/dev/null >/dev/null", model);
    CHECK(tool_run(args) != 0, "-p abc accepted");
    snprintf(args, sizeof args, "bench -m '%s' -p 0 -n 0 2>/dev/null >/dev/null", model);
    CHECK(tool_run(args) != 0, "-p 0 -n 0 accepted");
    snprintf(args, sizeof args, "bench -m '%s/absent.gguf' 2>/dev/null >/dev/null", dir);
    CHECK(tool_run(args) != 0, "a missing model accepted");
    CHECK(tool_run("bench -p 8 2>/dev/null >/dev/null") != 0, "no -m accepted");

    remove(model);
    remove(out);
    rmdir(dir);
    return test_finish(NAME);
}
