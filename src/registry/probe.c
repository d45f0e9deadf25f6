/* Isolated probing: the first load of a plug-in file happens in a forked
 * child, so a crash in foreign code (a SIGILL from a variant built for a
 * newer CPU, a SIGSEGV in a broken init) costs that plug-in, not the
 * process.  The child reports every step before it takes it over a pipe;
 * the parent learns how the child ended from waitpid.  A child that does
 * not finish within TPORT_PROBE_TIMEOUT seconds (default 10) is killed and
 * the plug-in refused as hung: the parent never waits forever. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "candidate.h"
#include "core/error.h"
#include "core/signal_name.h"

#define PROBE_TIMEOUT_DEFAULT 10
#define PROBE_TIMEOUT_MAX 3600

/* TPORT_PROBE_TIMEOUT in whole seconds (1..3600), else the default. */
static int probe_timeout_seconds(void) {
    const char *v = tport_registry_getenv("TPORT_PROBE_TIMEOUT");
    if (!v || !v[0])
        return PROBE_TIMEOUT_DEFAULT;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > PROBE_TIMEOUT_MAX) {
        tport_log(TPORT_LOG_WARN, "backends: TPORT_PROBE_TIMEOUT='%.20s' is not 1..%d seconds; using %d", v,
                  PROBE_TIMEOUT_MAX, PROBE_TIMEOUT_DEFAULT);
        return PROBE_TIMEOUT_DEFAULT;
    }
    return (int)n;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int probe_fd = -1;

static void write_all(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void report_stage(const char *stage) {
    char line[64];
    int n = snprintf(line, sizeof line, "%s\n", stage);
    if (n > 0)
        write_all(probe_fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static const char *signal_name(int sig, char *buf, size_t cap) {
    if (sig == SIGALRM)
        return "SIGALRM (timed out)";
    const char *name = tport_signal_name(sig);
    if (name)
        return name;
    snprintf(buf, cap, "signal %d", sig);
    return buf;
}

static void child(const char *path, int fd) {
    probe_fd = fd;
    tport_candidate_set_stage_hook(report_stage);
    tport_candidate c = {.path = (char *)path, .origin = "probe"};
    if (tport_candidate_open(&c, NULL))
        tport_candidate_start(&c);
    tport_candidate_close(&c, true);
    report_stage("finished");
    _exit(0);
}

bool tport_probe_file(const char *path, char *reason, size_t cap) {
    const int timeout = probe_timeout_seconds();
    int fds[2];
    if (pipe(fds) != 0) {
        tport_log(TPORT_LOG_WARN, "backends: probe of %s not possible (pipe: %s); loading directly", path,
                  strerror(errno));
        return true;
    }
    fflush(NULL); /* no buffered output duplicated into the child */
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        tport_log(TPORT_LOG_WARN, "backends: probe of %s not possible (fork: %s); loading directly", path,
                  strerror(errno));
        return true;
    }
    if (pid == 0) {
        close(fds[0]);
        child(path, fds[1]);
    }
    close(fds[1]);
    /* Keep the last complete line: the step the child was in. */
    char buf[512], last[64] = "start", line[64];
    size_t line_len = 0;
    const long long deadline = now_ms() + (long long)timeout * 1000;
    bool hung = false;
    for (;;) {
        long long left = deadline - now_ms();
        struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
        int ready = left > 0 ? poll(&pfd, 1, (int)left) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready == 0) {
            hung = true;
            kill(pid, SIGKILL);
            break;
        }
        if (ready < 0)
            break;
        ssize_t n = read(fds[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] == '\n') {
                line[line_len] = '\0';
                memcpy(last, line, line_len + 1);
                line_len = 0;
            } else if (line_len < sizeof line - 1) {
                line[line_len++] = buf[i];
            }
        }
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    char tmp[32];
    if (hung) {
        snprintf(reason, cap, "hung in probe during %s: no answer within %d s (TPORT_PROBE_TIMEOUT), killed", last,
                 timeout);
        return false;
    }
    if (WIFSIGNALED(status)) {
        snprintf(reason, cap, "crashed in probe during %s: %s", last,
                 signal_name(WTERMSIG(status), tmp, sizeof tmp));
        return false;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        snprintf(reason, cap, "probe process exited with status %d during %s (a plug-in must not exit)",
                 WEXITSTATUS(status), last);
        return false;
    }
    if (strcmp(last, "finished") != 0) {
        snprintf(reason, cap, "probe process exited during %s (a plug-in must not exit)", last);
        return false;
    }
    tport_log(TPORT_LOG_DEBUG, "backends: %s: probe came back cleanly", path);
    return true;
}
