/* Faults: a rank that stops answering (SIGSTOP) makes rank 0 name it and
 * exit non-zero within --rank-timeout; a rank that dies (SIGKILL) ends the
 * job non-zero and the rank is named.  Neither may hang. */
#include <dirent.h>
#include <signal.h>
#include <sys/types.h>

#include "mpi_test.h"

#define MARK "TPORT_TEST_MARK"

/* The pid of the tport process that is rank `rank` of this test's job:
 * found by the mark in its environment and its launcher's rank variable. */
static pid_t find_rank(int rank) {
    char mark[64], ompi[64], pmi[64];
    snprintf(mark, sizeof mark, MARK "=%d", (int)getpid());
    snprintf(ompi, sizeof ompi, "OMPI_COMM_WORLD_RANK=%d", rank);
    snprintf(pmi, sizeof pmi, "PMI_RANK=%d", rank);
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t found = 0;
    while (d && !found && (e = readdir(d))) {
        char path[300], env[65536];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/environ", e->d_name);
        FILE *f = fopen(path, "rb");
        size_t n = f ? fread(env, 1, sizeof env - 1, f) : 0;
        if (f)
            fclose(f);
        bool has_mark = false, has_rank = false;
        for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
            env[n] = '\0';
            has_mark |= !strcmp(env + i, mark);
            has_rank |= !strcmp(env + i, ompi) || !strcmp(env + i, pmi);
        }
        if (has_mark && has_rank)
            found = (pid_t)atoi(e->d_name);
    }
    if (d)
        closedir(d);
    return found;
}

/* Starts a long generation on `ranks` ranks, waits for the first id, then
 * sends sig to rank `victim`; returns the job's status and duration. */
static int fault(const char *model, int ranks, int victim, int sig, double *seconds, char *err, size_t cap) {
    char pre[4096], cmd[8192], errpath[512], mark[64];
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(errpath, sizeof errpath, "%s/mpi-fault-%d.err", tmp, (int)getpid());
    snprintf(mark, sizeof mark, "%d", (int)getpid());
    setenv(MARK, mark, 1);
    mpi_prefix(pre, sizeof pre, ranks);
    snprintf(cmd, sizeof cmd, "timeout -k 5 120 %s run -m '%s' --prompt-ids 1 -n 100000 --ctx 4096 --ids --temp 0 "
             "--threads 1 --rank-timeout 3 2>'%s'", pre, model, errpath);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    int c = fgetc(p); /* the first generated id: the pipeline runs */
    pid_t pid = c == EOF ? 0 : find_rank(victim);
    CHECK(pid > 0, "rank %d of the job was found", victim);
    double t0 = mpi_now();
    if (pid > 0)
        kill(pid, sig);
    while (fgetc(p) != EOF) {
    }
    int st = pclose(p);
    *seconds = mpi_now() - t0;
    if (pid > 0 && sig == SIGSTOP)
        kill(pid, SIGKILL); /* in case the launcher left it stopped */
    unsetenv(MARK);
    slurp(errpath, err, cap);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(void) {
    mpi_test_env();
    char cmd[8192], model[512];
    static char err[65536];
    static mpi_result r;
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    /* long enough to be stopped mid-run: 4096 positions, 4 layers */
    snprintf(model, sizeof model, "%s/mpi-fault-%d.gguf", tmp, (int)getpid());
    snprintf(cmd, sizeof cmd, "synth --dim 256 --layers 4 --heads 4 --ff 512 --vocab 512 --ctx 4096 -o '%s'", model);
    mpi_run(&r, 0, cmd);
    CHECK(r.status == 0, "synth: %s", r.err);

    double sec = 0;
    int st = fault(model, 2, 1, SIGSTOP, &sec, err, sizeof err);
    CHECK(st != 0 && st != -1 && sec < 30 && strstr(err, "rank 1 stopped answering"),
          "a stopped rank 1: status %d after %.1f s (timeout 3 s):\n%s", st, sec, err);

    st = fault(model, 3, 2, SIGSTOP, &sec, err, sizeof err);
    CHECK(st != 0 && st != -1 && sec < 30 && strstr(err, "rank 2 stopped answering"),
          "a stopped rank 2 of 3: status %d after %.1f s:\n%s", st, sec, err);

    /* a dead rank: the launcher ends the job; Open MPI's mpirun names the
     * rank ("process rank 1 ... exited on signal 9"), MPICH's Hydra only
     * its pid, so the name is checked with Open MPI */
    st = fault(model, 3, 1, SIGKILL, &sec, err, sizeof err);
    CHECK(st != 0 && sec < 30 && (!mpi_is_open_mpi() || strstr(err, "rank 1")),
          "a killed rank 1 of 3: status %d after %.1f s:\n%s", st, sec, err);
    remove(model);
    return test_finish("test_mpi_faults");
}
