/* The vulkan plug-in through the tport tool, end to end on the device:
 * `tport check-backend` passes on it; `tport backends -v` describes the
 * device (a software rasteriser says it is for testing); greedy ids with
 * --backend vulkan equal the CPU's on stories260K, llama-2-tiny-random and
 * synthesized f32/f16/q8_0/q4_0/q4_k/q6_k files; per token only the logits
 * come back from the device (tport run --plan); TPORT_VULKAN_DEVICE naming
 * no device leaves the plug-in without devices, skipped with that reason;
 * injected failures (TPORT_VULKAN_FAIL) end cleanly: a shader that fails to
 * build stops the run with a one-line error, a device lost in the middle of
 * generation is recovered from on the CPU with the same ids. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vulkan_test.h"

#define NAME "test_vulkan_cli"

#ifndef TPORT_VULKAN_PLUGIN
int main(void) {
    vulkan_test_unavailable(NAME, "the vulkan plug-in was not built (Vulkan loader or glslc not found)");
}
#else

static char dir[512], out_path[600], err_path[600];

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    char *buf = calloc(1, 1 << 20);
    if (!buf) {
        if (f)
            fclose(f);
        return NULL;
    }
    if (f) {
        size_t n = fread(buf, 1, (1 << 20) - 1, f);
        buf[n] = 0;
        fclose(f);
    }
    return buf;
}

/* Runs `tport ARGS` (stdout, stderr to scratch files); its exit status. */
static int run(const char *args) {
    char cmd[4096];
    if (snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", TPORT_CLI, args, out_path, err_path) >= (int)sizeof cmd)
        return -1;
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* True if the plug-in has a device here (else skip, or fail under CI). */
static void require_device(void) {
    int rc = run("backends -v");
    char *out = slurp(out_path);
    const char *line = out ? strstr(out, "libtport-vulkan.so") : NULL;
    bool active = out && strstr(out, "active   vulkan");
    if (rc != 0 || !active) {
        char why[400];
        const char *end = line ? strchr(line, '\n') : NULL;
        snprintf(why, sizeof why, "the vulkan plug-in is not active here: %.*s", end ? (int)(end - line) : 40,
                 line ? line : "(not found)");
        free(out);
        vulkan_test_unavailable(NAME, why);
    }
    /* name, driver and memory of the device; lavapipe says what it is for */
    CHECK(strstr(out, "device 0:") && strstr(out, "Vulkan 1."), "backends -v lacks the device line:\n%s", out);
    if (strstr(out, "llvmpipe"))
        CHECK(strstr(out, "software rasteriser: for testing, not speed"), "lavapipe is not called a software rasteriser");
    free(out);
}

static void check_backend(void) {
    int rc = run("check-backend '" TPORT_VULKAN_PLUGIN "'");
    char *out = slurp(out_path), *err = slurp(err_path);
    CHECK(rc == 0, "check-backend exit %d\n%s%s", rc, out ? out : "", err ? err : "");
    const char *must[] = {"mul_mat   q4_0", "mul_mat   q8_0", "mul_mat   q4_K", "mul_mat   q6_K", "get_rows  f16",
                          "rope", "soft_max", "rms_norm", "cpy       f32 -> f16"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        CHECK(out && strstr(out, must[i]), "check-backend ran no '%s' case", must[i]);
    CHECK(out && !strstr(out, "FAIL") && strstr(out, " 0 failed"), "a case failed:\n%s", out ? out : "");
    free(out);
    free(err);
}

/* Greedy ids of a model on a backend (NULL: the tool's output). */
static char *ids_on(const char *model, const char *backend, const char *extra) {
    char args[2048];
    snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1,5,9 -n 16 --ids --temp 0 --threads 2 --backend %s %s",
             model, backend, extra);
    int rc = run(args);
    char *out = slurp(out_path);
    if (rc != 0) {
        char *err = slurp(err_path);
        CHECK(0, "%s on %s: exit %d: %s", model, backend, rc, err ? err : "");
        free(err);
    }
    return out;
}

static void same_ids(const char *model, const char *what) {
    char *cpu = ids_on(model, "cpu", ""), *vk = ids_on(model, "vulkan", "--plan");
    char *plan = slurp(err_path);
    CHECK(cpu && vk && strlen(cpu) > 10 && !strcmp(cpu, vk), "%s: greedy ids differ:\n  cpu:    %s  vulkan: %s", what,
          cpu ? cpu : "", vk ? vk : "");
    /* everything on the device; per token only the logits come back */
    CHECK(plan && strstr(plan, "backend vulkan (device memory)"), "%s: nothing ran on vulkan:\n%s", what,
          plan ? plan : "");
    CHECK(plan && !strstr(plan, "backend cpu"), "%s: part of the model ran on cpu:\n%s", what, plan ? plan : "");
    CHECK(plan && strstr(plan, " 1 download ("), "%s: not one download per token:\n%s", what, plan ? plan : "");
    printf("%s: %-28s %s", NAME, what, vk && strlen(vk) > 10 ? vk : "(none)\n");
    free(cpu);
    free(vk);
    free(plan);
}

static void models(void) {
    char buf[1024];
    const char *shared[] = {"models/stories260K.bin", "models/llama-2-tiny-random.gguf"};
    for (int i = 0; i < 2; i++) {
        const char *m = test_shared_path(shared[i], buf, sizeof buf);
        if (m)
            same_ids(m, shared[i] + 7);
        else
            printf("%s: %s skipped (absent from ../shared)\n", NAME, shared[i]);
    }
    const char *types[] = {"f32", "f16", "q8_0", "q4_0", "q4_k", "q6_k"};
    for (int i = 0; i < 6; i++) {
        char path[700], args[900], what[64];
        snprintf(path, sizeof path, "%s/synth_%s.gguf", dir, types[i]);
        snprintf(args, sizeof args, "synth --type %s --kv-heads 2 --seed %d -o '%s'", types[i], 3 + i, path);
        int rc = run(args);
        CHECK(rc == 0, "tport %s: exit %d", args, rc);
        snprintf(what, sizeof what, "synthesized %s", types[i]);
        if (rc == 0)
            same_ids(path, what);
        remove(path);
    }
}

static void no_such_device(void) {
    setenv("TPORT_VULKAN_DEVICE", "99", 1);
    int rc = run("backends -v");
    unsetenv("TPORT_VULKAN_DEVICE");
    char *out = slurp(out_path);
    CHECK(rc == 0 && out && !strstr(out, "active   vulkan") && strstr(out, "libtport-vulkan.so"),
          "TPORT_VULKAN_DEVICE=99 still gave vulkan a device:\n%s", out ? out : "");
    free(out);
}

static void failures(void) {
    char buf[1024];
    const char *m = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!m)
        return;
    char *cpu = ids_on(m, "cpu", "");
    setenv("TPORT_VULKAN_FAIL", "shader", 1);
    char args[1200];
    snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1 -n 4 --ids --temp 0 --backend vulkan", m);
    int rc = run(args);
    char *err = slurp(err_path);
    const char *line = err ? strstr(err, "tport: ") : NULL;
    CHECK(rc > 0 && rc < 128 && line && strstr(line, "failed to build") && strchr(line, '\n') &&
              !strchr(strchr(line, '\n') + 1, '\n'),
          "a failing shader: exit %d, stderr:\n%s", rc, err ? err : "");
    free(err);
    /* lost after 120 submissions: uploads (one each) and about a dozen
     * tokens in; the host re-places the work on the cpu */
    setenv("TPORT_VULKAN_FAIL", "lost:120", 1);
    setenv("TPORT_BACKEND", "vulkan,cpu", 1);
    snprintf(args, sizeof args, "run -m '%s' --prompt-ids 1,5,9 -n 16 --ids --temp 0 --threads 2", m);
    rc = run(args);
    char *out = slurp(out_path);
    err = slurp(err_path);
    unsetenv("TPORT_BACKEND");
    unsetenv("TPORT_VULKAN_FAIL");
    CHECK(rc == 0 && err && strstr(err, "backend vulkan lost") && strstr(err, "re-placed"),
          "a lost device: exit %d, stderr:\n%s", rc, err ? err : "");
    CHECK(out && cpu && !strcmp(out, cpu), "ids after the loss differ from the cpu's:\n  %s  %s", out ? out : "",
          cpu ? cpu : "");
    free(out);
    free(err);
    free(cpu);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tport-vulkan-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        CHECK(0, "cannot create a scratch folder");
        return test_finish(NAME);
    }
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    unsetenv("TPORT_BACKEND");
    unsetenv("TPORT_VULKAN_DEVICE");
    setenv("TPORT_BACKEND_PATH", TPORT_VULKAN_PLUGIN, 1);
    require_device();
    check_backend();
    models();
    no_such_device();
    failures();
    remove(out_path);
    remove(err_path);
    rmdir(dir);
    return test_finish(NAME);
}
#endif
