/* The ggml bridge (backends/ggml) through the tport tool, on one ggml
 * device (argv[1]: "CPU" or "Vulkan0"; lavapipe needs
 * GGML_VK_VISIBLE_DEVICES=0): `tport backends -v` names the ggml version
 * and the device; `tport run --backend ggml` gives run.c's greedy ids on
 * stories260K and llama.cpp's on llama-2-tiny-random (../shared/refs), with
 * the whole model on the device (--plan); the device computes
 * asynchronously (tickets, waited for) where ggml's does (Vulkan) and not
 * on ggml's CPU; on the CPU device also `tport check-backend ggml` passes
 * every tier, its replay check through a re-bound kept graph, a GPT-2 (whose exact GELU ggml's
 * CPU does not compute) runs split between ggml and tensorport's CPU with
 * the CPU's ids, a missing ggml and another ggml release are refused with
 * one line each, and an isolated bridge survives a ggml abort.  The ggml
 * libraries come from TPORT_GGML_LIBS (the npm packages'
 * bins/ folder, see docs/bring-your-ggml-backend.md); without them the
 * test is skipped, and under CI=true it fails.  One thread: ggml's CPU
 * thread pool spin-waits at its barriers, which on a loaded machine makes
 * two threads hundreds of times slower than one (bench/results run 32). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../model/json_min.h"
#include "../test_util.h"

#if defined(TPORT_GGML_PLUGIN) && defined(TPORT_CLI) /* used only where the bridge is built */
/* Whether some line of text starts with `start` and contains `has`. */
static bool line_with(const char *text, const char *start, const char *has) {
    size_t n = strlen(start);
    for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        if (len >= n && !strncmp(l, start, n)) {
            for (const char *p = l; p + strlen(has) <= l + len; p++)
                if (!strncmp(p, has, strlen(has)))
                    return true;
        }
    }
    return false;
}
#endif

#define NAME "test_ggml_cli"

static void unavailable(const char *why) {
    const char *ci = getenv("CI");
    if (ci && (!strcmp(ci, "true") || !strcmp(ci, "1"))) {
        printf("%s: FAILED: %s (CI=true: the ggml tests must run)\n", NAME, why);
        exit(1);
    }
    test_skip(NAME, why);
}

#if !defined(TPORT_GGML_PLUGIN) || !defined(TPORT_CLI)
int main(void) {
    unavailable("the ggml bridge was not built (configure with TPORT_GGML_DIR)");
}
#else

static char dir[512], out_path[600], err_path[600], *out, *err;

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 1 << 20);
    if (f && buf) {
        size_t n = fread(buf, 1, (1 << 20) - 1, f);
        buf[n] = 0;
    }
    if (f)
        fclose(f);
    return buf;
}

/* Runs `ENV tport ARGS`; stdout and stderr in out and err. */
static int run(const char *env, const char *args) {
    char cmd[4096];
    free(out), free(err);
    out = err = NULL;
    if (snprintf(cmd, sizeof cmd, "%s '%s' %s >'%s' 2>'%s'", env, TPORT_CLI, args, out_path, err_path) >=
        (int)sizeof cmd)
        return -1;
    int st = system(cmd);
    out = slurp(out_path), err = slurp(err_path);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; s && *s; s++)
        n += *s == '\n';
    return n;
}

/* "a,b,c" of a refs.json array of ids (the first max) */
static void ids_of(const json *a, int max, char *buf, size_t cap) {
    buf[0] = 0;
    for (size_t i = 0; a && a->kind == JSON_ARRAY && i < a->n && (int)i < max; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, cap - len, "%s%d", i ? "," : "", (int)a->items[i].number);
    }
}

static int distinct(const char *ids) {
    int seen[64], n = 0;
    for (const char *p = ids; *p;) {
        int v = atoi(p), j = 0;
        while (j < n && seen[j] != v)
            j++;
        if (j == n && n < 64)
            seen[n++] = v;
        p = strchr(p, ',');
        p = p ? p + 1 : "";
    }
    return n;
}

static void reference_run(const char *env, const json *refs, const char *model, const char *extra) {
    char path[1024];
    if (!test_shared_path(model, path, sizeof path)) {
        printf("%s: %s skipped (absent from ../shared)\n", NAME, model);
        return;
    }
    const json *e = json_get(refs, strrchr(model, '/') + 1);
    char prompt[256], want[1024];
    ids_of(e ? json_get(e, "prompt_ids") : NULL, 64, prompt, sizeof prompt);
    ids_of(e ? json_get(e, "generated_ids") : NULL, 64, want, sizeof want);
    CHECK(prompt[0] && distinct(want) >= 6, "refs.json: no usable reference for %s", model);
    int n = 1;
    for (const char *p = want; *p; p++)
        n += *p == ',';
    char args[2048];
    snprintf(args, sizeof args, "run -m '%s' --prompt-ids %s -n %d --ids --temp 0 --threads 1 --backend ggml --plan %s",
             path, prompt, n, extra);
    int rc = run(env, args);
    CHECK(rc == 0, "%s: exit %d: %s", model, rc, err ? err : "");
    char *nl = out ? strchr(out, '\n') : NULL;
    if (nl)
        *nl = 0;
    CHECK(out && !strcmp(out, want), "%s: greedy ids differ from the reference:\n  got:  %s\n  want: %s", model,
          out ? out : "", want);
    CHECK(err && strstr(err, "backend ggml (device memory)") && !strstr(err, "backend cpu"),
          "%s: not all of the model ran on ggml:\n%s", model, err ? err : "");
    printf("%s: %s: %d ids equal to the reference\n", NAME, model, n);
}

int main(int argc, char **argv) {
    const char *device = argc > 1 ? argv[1] : "CPU";
    const char *libs = getenv("TPORT_GGML_LIBS");
    if (!libs || !*libs || access(libs, R_OK) != 0)
        unavailable("TPORT_GGML_LIBS names no folder of ggml libraries (the npm packages of "
                    "docs/bring-your-ggml-backend.md)");
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tport-ggml-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    unsetenv("TPORT_BACKEND");
    unsetenv("TPORT_BACKEND_ISOLATE");
    char env[2048];
    snprintf(env, sizeof env, "TPORT_GGML_PATH='%s' TPORT_GGML_DEVICES=%s", libs, device);

    /* the version and the device */
    int rc = run(env, "backends -v");
    CHECK(rc == 0 && out && strstr(out, "bridge to ggml " TPORT_GGML_VERSION), "backends -v: exit %d, no ggml:\n%s%s",
          rc, out ? out : "", err ? err : "");
    char want[128];
    snprintf(want, sizeof want, "device 0: %s (", device);
    if (!out || !strstr(out, want)) {
        char why[256];
        snprintf(why, sizeof why, "ggml offers no device %s here", device);
        unavailable(why);
    }
    CHECK(strstr(out, "ggml " TPORT_GGML_VERSION " (commit"), "backends -v does not name the loaded ggml:\n%s", out);

    json *refs = json_load(TPORT_SHARED_REFS);
    if (!refs)
        printf("%s: ../shared/refs/refs.json absent: reference runs skipped\n", NAME);
    else {
        reference_run(env, refs, "models/stories260K.bin", "");
        /* the reference computed in f32; its top-2 gap is as small as 6e-4 */
        reference_run(env, refs, "models/llama-2-tiny-random.gguf", "--kv-type f32");
        json_free(refs);
    }

    /* asynchronous compute where ggml's device has it (Vulkan), waited
     * for; synchronous on ggml's CPU */
    char model_path[1024];
    bool cpu = !strcmp(device, "CPU");
    run(env, "backends -v");
    CHECK(cpu != (strstr(out ? out : "", "memory of its own, asynchronous") != NULL),
          "device %s: asynchronous should be %s:\n%s", device, cpu ? "off" : "on", out ? out : "");
    /* ggml-vulkan rounds the operands of f32 products to f16 (on a device
     * with f16 arithmetic, lavapipe's included): declared (ABI 1.5), so
     * check-backend judges those products by f16's tolerance */
    CHECK(cpu != (strstr(out ? out : "", "f32 products on f16 operands") != NULL),
          "device %s: f16 operands of f32 products should be %s:\n%s", device, cpu ? "undeclared" : "declared",
          out ? out : "");
    if (test_shared_path("models/stories260K.bin", model_path, sizeof model_path)) {
        char async_env[2100], args[1400];
        snprintf(async_env, sizeof async_env, "%s TPORT_LOG=debug", env);
        snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1 -n 4 --ids --temp 0 --threads 1 --backend ggml",
                 model_path);
        rc = run(async_env, args);
        bool waited = err && strstr(err, "waited for async ticket");
        CHECK(rc == 0 && waited == !cpu, "device %s: exit %d, async waits %s:\n%.3000s", device, rc,
              waited ? "seen" : "not seen", err ? err : "");
    }

    /* every tier of check-backend passes on the device.  On lavapipe
     * without mul_mat and get_rows: its iq1_s mul_mat shader ran for more
     * than 10 minutes on a loaded machine (docs/bring-your-ggml-backend.md);
     * the rest runs there, flash attention by the f16-operand tolerance
     * the device declares, and without the crash in lavapipe's queue that
     * destroyed buffers caused (28 of 43 such runs before the bridge
     * retired them) */
    char debug_env[2200];
    snprintf(debug_env, sizeof debug_env, "%s TPORT_LOG=debug%s", env, cpu ? "" : " TPORT_GGML_SKIP_OPS=mul_mat,get_rows");
    rc = run(debug_env, "check-backend ggml");
    CHECK(rc == 0 && out && strstr(out, "numerics") && strstr(out, "negotiate") && strstr(out, " 0 failed"),
          "check-backend ggml (%s): exit %d\n%s%.3000s", device, rc, out ? out : "", err ? err : "");
    CHECK(cpu != (strstr(out ? out : "", "f16-operand tolerance") != NULL),
          "check-backend ggml (%s): the f16-operand tolerance should be %s:\n%s", device, cpu ? "unused" : "used",
          out ? out : "");
    if (!cpu)
        printf("%s: check-backend ggml on %s: every tier passes (mul_mat, get_rows skipped)\n", NAME, device);

    if (!strcmp(device, "CPU")) {
        /* the replay check runs one graph key twice in new buffers: the
         * bridge re-binds the graph it kept instead of building it again
         * (and the check proves the results right both times) */
        CHECK(out && strstr(out, "same graph key, new bind key, right twice"), "no passing replay check:\n%s",
              out ? out : "");
        CHECK(err && strstr(err, "re-bound to new buffers"), "the kept graph was rebuilt, not re-bound:\n%.2000s",
              err ? err : "");

        /* mixed placement: the norms on tensorport's CPU (TPORT_GGML_SKIP_OPS
         * keeps them off ggml), everything else on ggml, run.c's ids */
        char model[700], args[1600];
        snprintf(model, sizeof model, "%s/models/stories260K.bin", TPORT_SHARED_DIR);
        json *r2 = json_load(TPORT_SHARED_REFS);
        const json *e = r2 ? json_get(r2, "stories260K.bin") : NULL;
        char want_ids[1024];
        ids_of(e ? json_get(e, "generated_ids") : NULL, 24, want_ids, sizeof want_ids);
        json_free(r2);
        /* TPORT_GGML_SKIP_OPS=OP:TYPE keeps one weight type of an op off
         * ggml: the q8_0 products are not claimed, the q4_0 ones still are */
        char type_env[2200];
        snprintf(type_env, sizeof type_env, "%s TPORT_GGML_SKIP_OPS=mul_mat:Q8_0", env);
        rc = run(type_env, "check-backend ggml -v");
        CHECK(rc == 0 && out && line_with(out, "numerics mul_mat   q8_0 x f32", "not claimed") &&
                  !line_with(out, "numerics mul_mat   q8_0 x f32", " pass") &&
                  line_with(out, "numerics mul_mat   q4_0 x f32", " pass"),
              "mul_mat:Q8_0 skipped only q8_0 products: exit %d\n%.4000s", rc, out ? out : "");

        char mixed_env[2200];
        snprintf(mixed_env, sizeof mixed_env, "%s TPORT_BACKEND=ggml,cpu TPORT_GGML_SKIP_OPS=rms_norm", env);
        snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1 -n 24 --ids --temp 0 --threads 1 --plan", model);
        bool have_model = access(model, R_OK) == 0 && want_ids[0];
        if (have_model) {
            rc = run(mixed_env, args);
            char *nl = out ? strchr(out, '\n') : NULL;
            if (nl)
                *nl = 0;
            CHECK(rc == 0 && out && !strcmp(out, want_ids), "mixed ggml + cpu: exit %d, ids\n  %s\n  want\n  %s", rc,
                  out ? out : "", want_ids);
            CHECK(err && strstr(err, "backend ggml") && strstr(err, "backend cpu") && strstr(err, "rms_norm"),
                  "mixed placement did not use both backends:\n%s", err ? err : "");
        } else {
            printf("%s: mixed placement skipped (stories260K absent)\n", NAME);
        }

        /* a missing ggml: one line, the rest of tensorport unaffected */
        rc = run("TPORT_GGML_PATH=/nonexistent/ggml", "backends");
        CHECK(rc == 0 && out && strstr(out, "ggml: no libggml-base.so in TPORT_GGML_PATH (/nonexistent/ggml)"),
              "a missing ggml is not named:\n%s%s", out ? out : "", err ? err : "");
        snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1 -n 2 --ids --backend ggml", model);
        rc = have_model ? run("TPORT_GGML_PATH=/nonexistent/ggml", args) : 1;
        CHECK(rc != 0 && (!have_model || (count_lines(err) == 1 && strstr(err, "ggml"))),
              "--backend ggml without ggml: exit %d, stderr not one line:\n%s", rc, err ? err : "");

        /* another ggml release: refused before anything else is called */
        char fake_env[1200];
        snprintf(fake_env, sizeof fake_env, "TPORT_GGML_PATH='%s'", TPORT_GGML_FAKE_DIR);
        rc = run(fake_env, "backends");
        CHECK(rc == 0 && out && strstr(out, "is ggml 0.0.1, this bridge was built for ggml " TPORT_GGML_VERSION),
              "another ggml release is not refused naming both versions:\n%s%s", out ? out : "", err ? err : "");

        /* ggml aborts (GGML_ABORT) in an isolated bridge: the run goes on
         * on tensorport's CPU, with run.c's ids */
        snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1 -n 24 --ids --temp 0 --threads 1 --isolate ggml",
                 model);
        char abort_env[2400];
        snprintf(abort_env, sizeof abort_env, "%s TPORT_BACKEND=ggml,cpu TPORT_GGML_FAIL=abort-compute GGML_NO_BACKTRACE=1", env);
        if (have_model) {
            rc = run(abort_env, args);
            char *nl = out ? strchr(out, '\n') : NULL;
            if (nl)
                *nl = 0;
            CHECK(rc == 0 && out && !strcmp(out, want_ids), "isolated ggml abort: exit %d, ids\n  %s\n  want\n  %s\n%s",
                  rc, out ? out : "", want_ids, err ? err : "");
            /* the abort itself, not a bridge that never started in its
             * helper (the helper's environment must carry TPORT_GGML_*) */
            CHECK(err && strstr(err, "backend ggml lost") && strstr(err, "SIGABRT"),
                  "the isolated bridge did not run and abort:\n%s", err ? err : "");
        }
    }
    remove(out_path), remove(err_path), rmdir(dir);
    free(out), free(err);
    return test_finish(NAME);
}
#endif
