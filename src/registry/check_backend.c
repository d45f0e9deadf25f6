/* tport_check_backend (tport/check.h): finds the backend to check, loads
 * it as the registry would, and runs the conformance tiers on it. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "candidate.h"
#include "conformance.h"
#include "core/error.h"
#include "isolate/isolate.h"
#include "registry.h"

static bool looks_like_path(const char *s) {
    return strchr(s, '/') || access(s, F_OK) == 0;
}

static void add_counts(tport_check_counts *to, tport_check_counts c) {
    to->passed += c.passed;
    to->failed += c.failed;
    to->not_claimed += c.not_claimed;
    to->no_reference += c.no_reference;
}

/* A plug-in file or the embedded cpu, loaded in this process. */
static tport_status check_in_process(const char *path, bool embedded, const tport_check_callbacks *cb,
                                     tport_check_counts *abi, tport_check_counts *num) {
    tport_candidate c = {.path = embedded ? NULL : (char *)path, .origin = "check-backend"};
    if (!tport_candidate_open(&c, embedded ? tport_cpu_embedded_entry : NULL)) {
        tport_status st = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %s", embedded ? "(embedded)" : path, c.reason);
        tport_candidate_close(&c, false);
        return st;
    }
    tport_backend_entry_fn entry = tport_cpu_embedded_entry;
    if (!embedded) {
        void *sym = dlsym(c.handle, TPORT_BACKEND_ENTRY_NAME);
        memcpy(&entry, &sym, sizeof entry);
    }
    const tport_check_subject subject = {.name = c.name, .version = c.version,
                                         .path = embedded ? "(embedded)" : path, .abi_major = c.abi_major,
                                         .abi_minor = c.abi_minor, .score = c.score};
    if (cb->begin)
        cb->begin(&subject, cb->user);
    *abi = tport_conformance_abi(entry, cb->result, cb->user);
    if (tport_candidate_start(&c)) {
        add_counts(num, tport_conformance_numerics(c.api, c.active.state, &c.active.mem, cb->result, cb->user));
        add_counts(num, tport_conformance_device(c.api, c.active.state, &c.active.mem, cb->result, cb->user));
    } else {
        tport_check_result r = {.tier = "numerics", .max_err = -1, .outcome = TPORT_CHECK_FAIL};
        snprintf(r.op, sizeof r.op, "init");
        snprintf(r.note, sizeof r.note, "%.150s", c.reason);
        cb->result(&r, cb->user);
        num->failed++;
    }
    tport_candidate_close(&c, false);
    return TPORT_STATUS_OK;
}

/* The file of the active backend called `name` ("" for the embedded cpu),
 * looked up in a child process.  Finding it starts every backend (the
 * registry inits them), and a started backend may leave threads and
 * driver state behind that a later fork cannot carry: ggml's Vulkan on
 * lavapipe keeps its queue and JIT threads after shutdown (ggml stays
 * loaded), and the probe that forks before loading the file again would
 * find lavapipe's locks held by threads that do not exist in it.  So this
 * process starts nothing before its own probe and load. */
static tport_status find_by_name(const char *name, char *path, size_t cap, bool *embedded) {
    int fd[2];
    if (pipe(fd) != 0)
        return tport_error(TPORT_STATUS_IO, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]), close(fd[1]);
        return tport_error(TPORT_STATUS_IO, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(fd[0]);
        const tport_active_backend *a = tport_registry_find(name);
        /* "-": none; "=": the embedded cpu; else the file */
        const char *answer = !a ? "-" : !a->path ? "=" : a->path;
        size_t n = strlen(answer);
        ssize_t w = write(fd[1], answer, n);
        tport_registry_shutdown();
        _exit(w == (ssize_t)n ? 0 : 1);
    }
    close(fd[1]);
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd[0], path + got, cap - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || (got += (size_t)r) >= cap - 1)
            break;
    }
    close(fd[0]);
    path[got] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got == 0)
        return tport_error(TPORT_STATUS_IO, "looking up backend '%s' failed (the lookup process %s)", name,
                           WIFSIGNALED(status) ? "was killed by a signal" : "did not answer");
    if (!strcmp(path, "-"))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "no active backend named '%s' (see tport backends)", name);
    *embedded = !strcmp(path, "=");
    if (*embedded)
        path[0] = '\0';
    return TPORT_STATUS_OK;
}

/* The active isolated backend named (or loaded from) target, through its
 * proxy; the ABI tier needs the plug-in in-process and is skipped. */
static tport_status check_isolated(const char *target, const tport_check_callbacks *cb, tport_check_counts *num) {
    const bool by_path = looks_like_path(target);
    if (by_path && tport_backend_load(target) != TPORT_STATUS_OK)
        return TPORT_STATUS_IO; /* the message is tport_backend_load's */
    const tport_active_backend *a = NULL;
    for (int i = 0; i < tport_registry_active_count() && !a; i++) {
        const tport_active_backend *b = tport_registry_active(i);
        bool match = by_path ? (b->path && !strcmp(b->path, target)) : !strcmp(b->name, target);
        if (match && b->api == tport_isolate_proxy_api())
            a = b;
    }
    if (!a)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "'%s' is not active as an isolated backend (see tport backends with "
                           "TPORT_BACKEND_ISOLATE)", target);
    const tport_check_subject subject = {.name = a->name, .version = "", .path = a->path ? a->path : "(embedded)",
                                         .abi_major = TPORT_ABI_MAJOR, .abi_minor = a->abi_minor,
                                         .score = a->score, .isolated = true};
    if (cb->begin)
        cb->begin(&subject, cb->user);
    add_counts(num, tport_conformance_numerics(a->api, a->state, &a->mem, cb->result, cb->user));
    add_counts(num, tport_conformance_device(a->api, a->state, &a->mem, cb->result, cb->user));
    return TPORT_STATUS_OK;
}

tport_status tport_check_backend(const char *target, bool isolated, const tport_check_callbacks *cb,
                                 tport_check_counts *abi, tport_check_counts *num) {
    if (!target || !cb || !cb->result || !abi || !num)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tport_check_backend: NULL argument");
    *abi = (tport_check_counts){0};
    *num = (tport_check_counts){0};
    if (isolated) {
        tport_status st = check_isolated(target, cb, num);
        tport_registry_shutdown();
        return st;
    }
    /* A name is looked up among the active backends and checked from its
     * file; the embedded cpu has none and is driven directly. */
    char path[4096] = "";
    bool embedded = false;
    if (looks_like_path(target)) {
        snprintf(path, sizeof path, "%s", target);
    } else {
        tport_status st = find_by_name(target, path, sizeof path, &embedded);
        if (st != TPORT_STATUS_OK)
            return st;
    }
    if (!embedded) {
        char why[256];
        if (!tport_probe_file(path, why, sizeof why))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %s", path, why);
    }
    return check_in_process(path, embedded, cb, abi, num);
}
