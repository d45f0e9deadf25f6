/* tport check-backend NAME|PATH [--json] [-v]: conformance of a backend.
 *  ABI tier: the plug-in negotiates with hosts of an older and a newer
 *  minor (and refuses another major), and works through each.
 *  Numerics tier: every op x type x shape case it claims (supports_op) runs
 *  on it and on the reference (the embedded CPU backend); max error vs the
 *  tolerance of the types involved.
 * Exit status 0 when everything claimed passes, 1 on any failure, 2 when
 * the backend cannot be loaded at all.
 *
 * A plug-in file is first probed in a child process (entry, init, device
 * query; killed after TPORT_PROBE_TIMEOUT seconds, default 10), so one that
 * crashes, hangs or exits there is reported with exit status 2 instead of
 * taking the checker down with it.  The check itself then runs in a child
 * too: a backend that crashes inside compute ends that child, and the
 * checker reports the signal with exit status 1.
 *
 * With --isolate NAME the backend named NAME runs in its helper process
 * (tport-backend-host) and the numerics and device-memory tiers drive it
 * through the isolation proxy, exactly as a program would; the ABI tier, which calls
 * the entry point with test host tables, needs the plug-in in-process and
 * is skipped (a crash is then reported as the device lost). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "tport/check.h"
#include "tport/tport.h"

typedef struct printer {
    bool json, verbose;
    int rows;
} printer;

static void print_result(const tport_check_result *r, void *user) {
    printer *p = user;
    if (p->json) {
        printf("%s\n    {\"tier\": ", p->rows++ ? "," : "");
        tool_json_string(stdout, r->tier);
        printf(", \"op\": ");
        tool_json_string(stdout, r->op);
        printf(", \"types\": ");
        tool_json_string(stdout, r->types);
        printf(", \"shape\": ");
        tool_json_string(stdout, r->shape);
        if (r->max_err >= 0 && isfinite(r->max_err))
            printf(", \"max_error\": %.3g", r->max_err);
        else
            printf(", \"max_error\": null");
        printf(", \"tolerance\": %.3g, \"result\": ", r->tolerance);
        tool_json_string(stdout, tport_check_outcome_name(r->outcome));
        printf(", \"note\": ");
        tool_json_string(stdout, r->note);
        printf("}");
        return;
    }
    if (!p->verbose && (r->outcome == TPORT_CHECK_NOT_CLAIMED))
        return;
    if (!p->rows++)
        printf("%-8s %-9s %-24s %-44s %-9s %-8s %s\n", "tier", "op", "types", "shape", "max err", "tol", "result");
    char err[32] = "-", tol[32] = "-";
    if (r->max_err >= 0)
        snprintf(err, sizeof err, "%.2e", r->max_err);
    if (r->tolerance > 0)
        snprintf(tol, sizeof tol, "%.0e", r->tolerance);
    printf("%-8s %-9s %-24s %-44s %-9s %-8s %s%s%s\n", r->tier, r->op, r->types, r->shape, err, tol,
           tport_check_outcome_name(r->outcome), r->note[0] ? "  " : "", r->note);
}

static int usage(void) {
    printf("usage: tport check-backend NAME|PATH [--json] [-v] [--isolate NAME]\n"
           "  NAME: an active backend (see tport backends); PATH: a plug-in file.\n"
           "  Runs the ABI tier (older/newer host minor, other major) and every\n"
           "  op x type x shape the backend claims against the reference cpu backend.\n"
           "  -v also lists the cases the backend does not claim.\n"
           "  --isolate NAME  run the backend NAME in its helper process (numerics tier\n"
           "                  through the isolation proxy; the ABI tier is skipped)\n");
    return 0;
}

/* The header line, when the backend is loaded. */
static void print_begin(const tport_check_subject *sub, void *user) {
    printer *p = user;
    if (p->json) {
        printf("{\n  \"backend\": ");
        tool_json_string(stdout, sub->name);
        if (!sub->isolated) {
            printf(", \"version\": ");
            tool_json_string(stdout, sub->version);
        }
        printf(", \"path\": ");
        tool_json_string(stdout, sub->path);
        printf("%s, \"host_abi\": \"%d.%d\",\n  \"results\": [", sub->isolated ? ", \"isolated\": true" : "",
               TPORT_ABI_MAJOR, TPORT_ABI_MINOR);
    } else if (sub->isolated) {
        printf("checking '%s' (%s) isolated in its helper process; ABI tier skipped (it needs the plug-in "
               "in-process)\n\n", sub->name, sub->path);
    } else {
        printf("checking '%s' %s (%s), negotiated ABI %u.%u, score %d\n\n", sub->name, sub->version,
               strcmp(sub->path, "(embedded)") ? sub->path : "embedded", sub->abi_major, sub->abi_minor,
               sub->score);
    }
}

/* Runs the check and prints its summary; the exit status of the command. */
static int run_check(const char *target, bool isolated, printer *prp) {
    printer pr = *prp;
    const tport_check_callbacks cb = {.begin = print_begin, .result = print_result, .user = &pr};
    tport_check_counts abi, num;
    if (tport_check_backend(target, isolated, &cb, &abi, &num) != TPORT_STATUS_OK)
        return tool_fail(2, "check-backend: %s", tport_last_error());
    /* A backend that claims nothing could run nothing: not conformant. */
    const bool claims_nothing = !num.passed && !num.failed;
    const int failed = abi.failed + num.failed + (claims_nothing ? 1 : 0);
    if (pr.json) {
        printf("\n  ],\n  \"passed\": %d, \"failed\": %d, \"not_claimed\": %d, \"no_reference\": %d\n}\n",
               abi.passed + num.passed, failed, num.not_claimed, num.no_reference);
    } else {
        printf("\n%d passed, %d failed, %d not claimed, %d without a reference", abi.passed + num.passed, failed,
               num.not_claimed, num.no_reference);
        if (isolated)
            printf(" (isolated)\n");
        else
            printf(" (ABI tier: %d/%d)\n", abi.passed, abi.passed + abi.failed);
        if (claims_nothing)
            printf("FAIL: the backend claimed none of the numerics cases (it could run nothing)\n");
    }
    fflush(stdout);
    return failed ? 1 : 0;
}

/* run_check in a child process: a crash in the backend's compute costs the
 * child, not the report.  Falls back to running it here if fork fails. */
static int run_contained(const char *target, bool isolated, printer *pr) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return run_check(target, isolated, pr);
    if (pid == 0) {
        setvbuf(stdout, NULL, _IOLBF, 0); /* rows before a crash survive it */
        int rc = run_check(target, isolated, pr);
        fflush(NULL);
        exit(rc); /* exit, not _exit: sanitizers still check the child */
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFSIGNALED(status)) {
        fflush(stdout);
        return tool_fail(1, "check-backend: %s: the backend crashed during the check: %s", target,
                         strsignal(WTERMSIG(status)));
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int cmd_check_backend(int argc, char **argv) {
    printer pr = {0};
    const char *target = NULL;
    bool isolated = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--isolate")) {
            if (i + 1 >= argc || tport_backend_isolate(argv[++i]) != TPORT_STATUS_OK)
                return tool_fail(2, "check-backend: --isolate needs a backend name");
            isolated = true;
        } else if (!strcmp(argv[i], "--json"))
            pr.json = true;
        else if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose"))
            pr.verbose = true;
        else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
            return usage();
        else if (argv[i][0] == '-')
            return tool_fail(2, "check-backend: unknown option '%s'", argv[i]);
        else if (!target)
            target = argv[i];
        else
            return tool_fail(2, "check-backend: one backend at a time");
    }
    if (!target)
        return tool_fail(2, "check-backend: which backend? (a name from 'tport backends' or a plug-in file)");
    /* Isolated, the helper process already contains a crash (device lost). */
    return isolated ? run_check(target, true, &pr) : run_contained(target, false, &pr);
}
