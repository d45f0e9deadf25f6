/* Helpers for the tests that run the tport executable: a scratch folder
 * and running a command with its exit status. */
#ifndef TPORT_TESTS_TOOL_RUN_H
#define TPORT_TESTS_TOOL_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

/* Creates a fresh folder under $TMPDIR (or /tmp); NULL on failure. */
static inline const char *tool_scratch_dir(char *buf, size_t cap, const char *tag) {
    const char *tmp = getenv("TMPDIR");
    if (snprintf(buf, cap, "%s/tport-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag) >= (int)cap)
        return NULL;
    return mkdtemp(buf);
}

/* Removes the files named and then the folder (best effort). */
static inline void tool_scratch_clean(const char *dir, const char *const *files, int n) {
    char path[4096];
    for (int i = 0; i < n; i++) {
        if (snprintf(path, sizeof path, "%s/%s", dir, files[i]) < (int)sizeof path)
            remove(path);
    }
    rmdir(dir);
}

/* Runs `tport ARGS` through the shell; returns its exit status, or -1. */
static inline int tool_run(const char *args) {
    char cmd[8192];
    if (snprintf(cmd, sizeof cmd, "'%s' %s", TPORT_CLI, args) >= (int)sizeof cmd)
        return -1;
    int st = system(cmd);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

#endif
