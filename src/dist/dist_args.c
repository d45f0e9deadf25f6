/* The distribution options of run and bench, taken out of argv before the
 * command parses the rest, so the command's own options stay unchanged. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist/dist.h"
#include "dist/dist_internal.h"

const char *tport_dist_usage(void) {
    return "\n"
           "Under mpirun (mpirun -np N tport ...; see README, \"Running across machines\"):\n"
           "  --split A,B,...         share of the layers of each rank (default: even)\n"
           "  --model-rank R=PATH     the model file of rank R (default: -m on every rank)\n"
           "  --micro-batch N         prompt tokens per pipeline step (default: the batch, at most 64)\n"
           "  --rank-timeout S        seconds without an answer before a rank counts as\n"
           "                          lost (default 60)\n"
           "  --plan                  also print on stderr, before loading, which rank holds which\n"
           "                          layers, the weight bytes per rank and the bytes sent per token\n";
}

static int fail(bool quiet, const char *cmd, const char *what, const char *value) {
    if (!quiet)
        fprintf(stderr, "tport: %s: %s '%s'\n", cmd, what, value ? value : "");
    return 2;
}

static void drop(int *argc, char **argv, int i, int n) {
    memmove(&argv[i], &argv[i + n], (size_t)(*argc - i - n + 1) * sizeof *argv);
    *argc -= n;
}

int dist_take_options(const char *cmd, int *argc, char **argv, int n_ranks, bool quiet, dist_opts *o) {
    memset(o, 0, sizeof *o);
    o->timeout_s = DIST_DEFAULT_TIMEOUT_S;
    for (int i = 1; i < *argc;) {
        const char *a = argv[i];
        bool flag = !strcmp(a, "--plan");
        bool valued = !strcmp(a, "--split") || !strcmp(a, "--model-rank") || !strcmp(a, "--micro-batch") ||
                      !strcmp(a, "--rank-timeout");
        if (!strcmp(a, "--")) /* the rest is not ours */
            break;
        if ((!flag && !valued) || (flag && n_ranks <= 1)) { /* one process: --plan is the command's */
            i++;
            continue;
        }
        if (n_ranks <= 1)
            return fail(quiet, cmd, "this option works only under mpirun with more than one rank:", a);
        if (flag) {
            /* run's own --plan (rank 0's backends, after the run) stays */
            o->plan = true;
            if (strcmp(cmd, "run") != 0)
                drop(argc, argv, i, 1);
            else
                i++;
            continue;
        }
        if (i + 1 >= *argc)
            return fail(quiet, cmd, "missing value after", a);
        const char *v = argv[i + 1];
        char *end;
        errno = 0;
        if (!strcmp(a, "--split")) {
            o->split = v;
        } else if (!strcmp(a, "--micro-batch")) {
            long x = strtol(v, &end, 10);
            if (errno || end == v || *end || x < 1 || x > 1 << 16)
                return fail(quiet, cmd, "--micro-batch needs an integer in [1, 65536], not", v);
            o->micro_batch = (int)x;
        } else if (!strcmp(a, "--rank-timeout")) {
            double x = strtod(v, &end);
            if (errno || end == v || *end || !(x > 0 && x <= 86400))
                return fail(quiet, cmd, "--rank-timeout needs seconds in (0, 86400], not", v);
            o->timeout_s = x;
        } else {
            long r = strtol(v, &end, 10);
            if (errno || end == v || *end != '=' || !end[1])
                return fail(quiet, cmd, "--model-rank needs R=PATH, not", v);
            if (r < 0 || r >= n_ranks) {
                if (!quiet)
                    fprintf(stderr, "tport: %s: --model-rank %s: there are ranks 0..%d\n", cmd, v, n_ranks - 1);
                return 2;
            }
            o->model_rank[r] = end + 1;
        }
        drop(argc, argv, i, 2);
    }
    return 0;
}
