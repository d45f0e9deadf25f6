/* Helpers for the multi-rank tests: mpirun on this one machine with the
 * settings docs/distributed-research.md found necessary (as root, more
 * ranks than cores, no core binding, no CMA single-copy in containers),
 * and commands run with their output and exit status captured. */
#ifndef TPORT_TESTS_MPI_TEST_H
#define TPORT_TESTS_MPI_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../test_util.h"

#if !defined(TPORT_CLI) || !defined(TPORT_MPIEXEC)
#error "TPORT_CLI and TPORT_MPIEXEC must be defined"
#endif

static inline bool mpi_is_open_mpi(void) {
    static int known = -1;
    if (known < 0) {
        char cmd[4096], line[512];
        snprintf(cmd, sizeof cmd, "'%s' --version 2>&1", TPORT_MPIEXEC);
        FILE *p = popen(cmd, "r");
        known = 0;
        while (p && fgets(line, sizeof line, p))
            known |= strstr(line, "Open MPI") || strstr(line, "OpenRTE") || strstr(line, "open-mpi");
        if (p)
            pclose(p);
    }
    return known == 1;
}

/* Open MPI 4.1 (Debian 12) on one host as root: see the research note. */
static inline void mpi_test_env(void) {
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    setenv("OMPI_MCA_btl_vader_single_copy_mechanism", "none", 1);
    setenv("OMPI_MCA_rmaps_base_oversubscribe", "1", 1);
    setenv("OMPI_MCA_btl_base_warn_component_unused", "0", 1);
    setenv("TPORT_LOG", "error", 1);
    /* sanitizer builds: MPI's own leaks are not ours (lsan.supp) */
    setenv("OMPI_MCA_mca_base_component_disable_dlclose", "1", 1);
    setenv("PMIX_MCA_mca_base_component_disable_dlclose", "1", 1);
#ifdef TPORT_MPI_LSAN_SUPP
    char opts[4096];
    const char *old = getenv("LSAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%ssuppressions=%s:print_suppressions=0", old ? old : "", old && *old ? ":" : "",
             TPORT_MPI_LSAN_SUPP);
    setenv("LSAN_OPTIONS", opts, 1);
    /* MPI's libraries have no frame pointers: the slow unwinder finds
     * their frames, so the suppressions match */
    old = getenv("ASAN_OPTIONS");
    snprintf(opts, sizeof opts, "%s%sfast_unwind_on_malloc=0", old ? old : "", old && *old ? ":" : "");
    setenv("ASAN_OPTIONS", opts, 1);
#endif
}

/* The mpirun prefix for n ranks. */
static inline void mpi_prefix(char *buf, size_t cap, int n) {
    if (mpi_is_open_mpi())
        snprintf(buf, cap, "'%s' --oversubscribe --bind-to none --allow-run-as-root -np %d '%s'", TPORT_MPIEXEC, n,
                 TPORT_CLI);
    else /* MPICH's Hydra */
        snprintf(buf, cap, "'%s' -bind-to none -np %d '%s'", TPORT_MPIEXEC, n, TPORT_CLI);
}

static inline double mpi_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct mpi_result {
    int status;        /* exit status, -1 if it did not exit */
    double seconds;
    char out[65536], err[65536];
} mpi_result;

static inline void slurp(const char *path, char *buf, size_t cap) {
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
    remove(path);
}

/* Runs `mpirun -np n tport ARGS` (n = 0: plain `tport ARGS`). */
static inline void mpi_run(mpi_result *r, int n, const char *args) {
    char pre[4096], cmd[24576], o[64], e[64];
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(o, sizeof o, "mpi-out-%d", (int)getpid());
    snprintf(e, sizeof e, "mpi-err-%d", (int)getpid());
    if (n > 0)
        mpi_prefix(pre, sizeof pre, n);
    else
        snprintf(pre, sizeof pre, "'%s'", TPORT_CLI);
    snprintf(cmd, sizeof cmd, "timeout -k 5 240 %s %s >'%s/%s' 2>'%s/%s' </dev/null", pre, args, tmp, o, tmp, e);
    double t0 = mpi_now();
    int st = system(cmd);
    r->seconds = mpi_now() - t0;
    r->status = st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmp, o);
    slurp(path, r->out, sizeof r->out);
    snprintf(path, sizeof path, "%s/%s", tmp, e);
    slurp(path, r->err, sizeof r->err);
}

/* The first line of s that contains `what`, for messages. */
static inline const char *mpi_line(const char *s, const char *what) {
    const char *p = strstr(s, what);
    return p ? p : "(not found)";
}

#endif
