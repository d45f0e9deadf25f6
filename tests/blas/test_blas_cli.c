/* The blas plug-in through the tport tool: `tport check-backend` passes on
 * it, and a real model's greedy ids with a 40-token prompt (prompt batches
 * on blas) equal those of a run kept on the CPU (TPORT_BACKEND=cpu); the
 * CPU keeps copies of the weights only when blas takes none of them. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"

#ifndef TPORT_BLAS_PLUGIN
int main(void) {
    test_skip("test_blas_cli", "the blas plug-in was not built (OpenBLAS not found)");
}
#else

static char out_path[600], err_path[600];

/* Contents of a file (malloc'd, NUL-terminated; "" on failure). */
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

/* Runs `tport ARGS`, stdout and stderr to the scratch files; exit status. */
static int run(const char *args) {
    char cmd[8192];
    if (snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", TPORT_CLI, args, out_path, err_path) >= (int)sizeof cmd)
        return -1;
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void check_backend(void) {
    /* check-backend's cases have batches of a few columns: let the plug-in
     * claim every mul_mat it can compute (F16 weights are opt-in), so each
     * one is checked */
    setenv("TPORT_BLAS_MIN_BATCH", "1", 1);
    setenv("TPORT_BLAS_F16", "1", 1);
    setenv("TPORT_BLAS_F32", "1", 1);
    int rc = run("check-backend '" TPORT_BLAS_PLUGIN "'");
    unsetenv("TPORT_BLAS_MIN_BATCH");
    unsetenv("TPORT_BLAS_F16");
    unsetenv("TPORT_BLAS_F32");
    char *out = slurp(out_path), *err = slurp(err_path);
    CHECK(rc == 0, "check-backend exit %d\n%s%s", rc, out ? out : "", err ? err : "");
    CHECK(out && strstr(out, "numerics mul_mat   f32 x f32"), "no f32 mul_mat case ran:\n%s", out ? out : "");
    CHECK(out && strstr(out, "numerics mul_mat   f16 x f32"), "no f16 mul_mat case ran:\n%s", out ? out : "");
    CHECK(out && !strstr(out, "FAIL"), "a case failed:\n%s", out ? out : "");
    free(out);
    free(err);
}

/* Greedy ids of stories260K after a 40-token prompt; log in *log. */
static char *model_ids(const char *model, char **log) {
    char ids[512] = "", args[2048];
    for (int i = 0; i < 40; i++) {
        size_t len = strlen(ids);
        snprintf(ids + len, sizeof ids - len, "%s%d", i ? "," : "", 1 + (i * 37) % 500);
    }
    snprintf(args, sizeof args, "run -m '%s' --prompt-ids %s -n 24 --ids --temp 0 --threads 2 --plan", model, ids);
    int rc = run(args);
    char *out = slurp(out_path);
    *log = slurp(err_path);
    CHECK(rc == 0, "tport run exit %d: %s", rc, *log ? *log : "");
    return out;
}

static void same_greedy_ids(void) {
    char buf[1024];
    const char *model = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!model) {
        printf("test_blas_cli: model comparison skipped (../shared/models/stories260K.bin absent)\n");
        return;
    }
    setenv("TPORT_LOG", "debug", 1);
    setenv("TPORT_BACKEND_PATH", TPORT_BLAS_PLUGIN, 1);
    unsetenv("TPORT_BACKEND");
    /* stories260K's weights are F32: taken unless the plug-in leaves F32
     * to the CPU backend (an AVX-512 CPU under older OpenBLAS kernels) */
    setenv("TPORT_BLAS_F32", "1", 1);
    char *log_blas = NULL, *log_cpu = NULL, *log_declined = NULL;
    char *with_blas = model_ids(model, &log_blas);
    setenv("TPORT_BLAS_F32", "0", 1);
    char *declined = model_ids(model, &log_declined);
    unsetenv("TPORT_BLAS_F32");
    setenv("TPORT_BACKEND", "cpu", 1);
    char *cpu_only = model_ids(model, &log_cpu);
    unsetenv("TPORT_BACKEND");
    unsetenv("TPORT_BACKEND_PATH");
    unsetenv("TPORT_LOG");
    CHECK(log_blas && strstr(log_blas, " on blas"), "with the plug-in no node ran on blas");
    CHECK(log_declined && !strstr(log_declined, " on blas"), "with TPORT_BLAS_F32=0 an F32 node still ran on blas");
    /* blas reads the file's bytes for the batches it takes: the CPU then
     * keeps no copy of those weights (it would hold them twice), and does
     * when it runs them all */
    CHECK(log_blas && strstr(log_blas, "backend cpu (host memory): layers none with weights in host memory; 0 B resident"),
          "with blas taking the F32 batches the CPU still keeps copies:\n%s", log_blas ? log_blas : "");
    CHECK(log_declined && strstr(log_declined, "backend cpu (host memory)") &&
              !strstr(log_declined, "; 0 B resident"),
          "with TPORT_BLAS_F32=0 the CPU keeps no copies:\n%s", log_declined ? log_declined : "");
    CHECK(declined && cpu_only && !strcmp(declined, cpu_only), "greedy ids differ with TPORT_BLAS_F32=0");
    CHECK(log_cpu && !strstr(log_cpu, " on blas"), "with TPORT_BACKEND=cpu a node still ran on blas");
    CHECK(with_blas && cpu_only && strlen(with_blas) > 10 && !strcmp(with_blas, cpu_only),
          "greedy ids differ:\n  blas+cpu: %s\n  cpu:      %s", with_blas ? with_blas : "", cpu_only ? cpu_only : "");
    printf("greedy ids (blas and cpu agree): %s", with_blas ? with_blas : "\n");
    free(with_blas);
    free(cpu_only);
    free(log_blas);
    free(log_cpu);
    free(declined);
    free(log_declined);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tport-blas-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        CHECK(0, "cannot create a scratch folder");
        return test_finish("test_blas_cli");
    }
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    unsetenv("TPORT_BACKEND");
    check_backend();
    same_greedy_ids();
    remove(out_path);
    remove(err_path);
    rmdir(dir);
    return test_finish("test_blas_cli");
}
#endif
