/* What `tport bench` (cmd_bench.c) and its --parallel tests
 * (bench_parallel.c) share: one test's samples and their summary. */
#ifndef TPORT_TOOL_BENCH_H
#define TPORT_TOOL_BENCH_H

#include <stdint.h>

#include "tport/tport.h"

/* --parallel N: at most this many sequences a step (a server's slots) */
#define BENCH_MAX_PARALLEL 256

typedef struct bench_result {
    int n_tokens;
    int n_samples;
    double *ts;               /* tokens/s of each repetition               */
    double median, mean;
    /* staged copies between host and device memory per evaluation (per
     * token for tg) and the bytes they moved, from the last repetition */
    double copies, bytes_moved;
    char ran_on[128];         /* the backends that ran nodes of the last
                                 evaluation, "+" between names          */
} bench_result;

/* The results of --parallel N (N >= 1): pp, N prompts of n_prompt tokens
 * in one batch; tg, n_gen steps of one token of each of the N sequences,
 * after their prompts; single, the same tg steps of one sequence (only
 * for N > 1), which the per-step cost is relative to.  Tokens/s count
 * the tokens of every sequence (aggregate). */
typedef struct bench_parallel {
    int n;
    bench_result pp, tg, single;
} bench_parallel;

double bench_now(void);
tport_token bench_random_token(uint64_t *state, int32_t n_vocab);
void bench_summarize(bench_result *r);
void bench_backends_that_ran(const tport_session *s, char *out, size_t cap);

/* Runs the tests of --parallel (bench_parallel above) on the model with
 * sessions of sp; 0, or tool_fail's status. */
int bench_parallel_run(tport_model *m, const tport_session_params *sp, int n_par, int n_prompt, int n_gen,
                       int depth, int reps, bench_parallel *out);
void bench_parallel_free(bench_parallel *bp);

#endif
