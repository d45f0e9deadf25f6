/* Starting the helper: fork + exec with everything prepared before the
 * fork (the host may have threads; between fork and exec the child only
 * makes async-signal-safe calls).  What the helper gets:
 *  - descriptor 3, its end of the socketpair; 0 and 1 on /dev/null; 2 the
 *    host's stderr (the plug-in's log lines); every other one is closed;
 *  - an environment reduced to the allow-list below, plus the names in
 *    TPORT_ISOLATE_ENV (','-separated) for a plug-in that needs more;
 *  - PR_SET_PDEATHSIG = SIGKILL: it dies with the host (and it exits on
 *    the socket's EOF too). */
#include "isolate/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/signal_name.h"

extern char **environ;

/* Exact names, then prefixes, passed to the helper. */
static const char *const keep_exact[] = {
    "PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "LD_LIBRARY_PATH", "TPORT_LOG", "TPORT_ISA_DISABLE",
    "TPORT_NO_UNLOAD", "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "ZE_AFFINITY_MASK", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS",
};
/* TPORT_GGML_: the ggml bridge finds ggml and its devices through them */
static const char *const keep_prefix[] = {"TPORT_CPU_", "TPORT_GGML_", "VK_", "MESA_", "GGML_"};

static bool name_is(const char *entry, const char *name) {
    size_t n = strlen(name);
    return !strncmp(entry, name, n) && entry[n] == '=';
}

static bool listed_extra(const char *entry, const char *extra) {
    for (const char *p = extra; p && *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n && !strncmp(entry, p, n) && entry[n] == '=')
            return true;
        p = end ? end + 1 : NULL;
    }
    return false;
}

static bool keep(const char *entry, const char *extra) {
    for (size_t i = 0; i < sizeof keep_exact / sizeof *keep_exact; i++)
        if (name_is(entry, keep_exact[i]))
            return true;
    for (size_t i = 0; i < sizeof keep_prefix / sizeof *keep_prefix; i++)
        if (!strncmp(entry, keep_prefix[i], strlen(keep_prefix[i])))
            return true;
    return listed_extra(entry, extra);
}

/* Sanitizers in the helper must let a crash be a crash (the host tells the
 * signal), not turn it into a report and exit status 1. */
static const char asan_crash[] = "handle_segv=0:handle_sigill=0:handle_abort=0:handle_sigbus=0:handle_sigfpe=0";

static char **build_env(const char *extra) {
    size_t n = 0;
    for (char **e = environ; e && *e; e++)
        n++;
    char **env = calloc(n + 2, sizeof *env);
    if (!env)
        return NULL;
    size_t k = 0;
    bool asan_seen = false;
    for (char **e = environ; e && *e; e++) {
        if (!keep(*e, extra))
            continue;
        if (name_is(*e, "ASAN_OPTIONS")) {
            size_t len = strlen(*e) + sizeof asan_crash + 2;
            char *s = malloc(len);
            if (s)
                snprintf(s, len, "%s:%s", *e, asan_crash);
            env[k++] = s;
            asan_seen = true;
        } else {
            env[k++] = strdup(*e);
        }
        if (!env[k - 1])
            k--;
    }
    if (!asan_seen) {
        size_t len = sizeof asan_crash + sizeof "ASAN_OPTIONS=";
        char *s = malloc(len);
        if (s) {
            snprintf(s, len, "ASAN_OPTIONS=%s", asan_crash);
            env[k++] = s;
        }
    }
    env[k] = NULL;
    return env;
}

static void free_env(char **env) {
    for (char **e = env; e && *e; e++)
        free(*e);
    free(env);
}

/* In the child, before exec: only async-signal-safe calls. */
static void child_exec(const char *helper, char *const argv[], char *const envp[], int sock, pid_t parent) {
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(127);
    if (sock != 3) {
        if (dup2(sock, 3) < 0)
            _exit(127);
    } else if (fcntl(3, F_SETFD, 0) < 0) {
        _exit(127);
    }
    int null = open("/dev/null", O_RDWR);
    if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0)
        _exit(127);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0)
#endif
    {
        long max = sysconf(_SC_OPEN_MAX);
        if (max < 0 || max > 1 << 20)
            max = 1 << 20;
        for (long fd = 4; fd < max; fd++)
            close((int)fd);
    }
    execve(helper, argv, envp);
    _exit(127);
}

pid_t iso_spawn(const char *helper, const char *keep_env, int *sock, char *why, size_t cap) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        snprintf(why, cap, "socketpair: %s", strerror(errno));
        return -1;
    }
    char **envp = build_env(keep_env);
    char *argv[] = {(char *)"tport-backend-host", (char *)"--socket=3", NULL};
    if (!envp) {
        close(sv[0]);
        close(sv[1]);
        snprintf(why, cap, "out of memory");
        return -1;
    }
    const pid_t parent = getpid();
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid == 0)
        child_exec(helper, argv, envp, sv[1], parent);
    int err = errno;
    free_env(envp);
    close(sv[1]);
    if (pid < 0) {
        close(sv[0]);
        snprintf(why, cap, "fork: %s", strerror(err));
        return -1;
    }
    *sock = sv[0];
    return pid;
}

static const char *signal_name(int sig) {
    const char *name = tport_signal_name(sig);
    return name ? name : "another signal";
}

static void describe(int status, char *desc, size_t cap) {
    if (WIFSIGNALED(status))
        snprintf(desc, cap, "killed by signal %d (%s)", WTERMSIG(status), signal_name(WTERMSIG(status)));
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
        snprintf(desc, cap, "exited with status 127 (the helper could not be started)");
    else if (WIFEXITED(status))
        snprintf(desc, cap, "exited with status %d (a plug-in must not exit)", WEXITSTATUS(status));
    else
        snprintf(desc, cap, "ended (status 0x%x)", (unsigned)status);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* waitpid without blocking for up to ms; true once reaped. */
static bool wait_for_exit(pid_t pid, long long ms, int *status) {
    for (long long waited = 0;; waited += 2) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return true; /* reaped, or not ours to reap (SIGCHLD ignored) */
        if (waited >= ms)
            return false;
        sleep_ms(2);
    }
}

void iso_reap(pid_t pid, bool peer_gone, char *desc, size_t cap) {
    int status = 0;
    if (pid <= 0) {
        snprintf(desc, cap, "gone");
        return;
    }
    if (peer_gone && wait_for_exit(pid, 1000, &status)) {
        describe(status, desc, cap);
        return;
    }
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (peer_gone)
        describe(status, desc, cap);
    else
        snprintf(desc, cap, "killed");
}

bool iso_reap_clean(pid_t pid, long long ms) {
    int status = 0;
    if (pid <= 0)
        return true;
    if (wait_for_exit(pid, ms, &status))
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return false;
}
