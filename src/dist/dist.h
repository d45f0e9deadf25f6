/* Pipeline-parallel inference across MPI ranks: a layer of the runtime
 * above the scheduler (see README, "Running across machines").
 *
 * Rank r holds a contiguous range of layers, loaded with
 * tport_model_params.layer_begin/end so it maps, places and converts only
 * those, keeps the KV cache of those layers, and runs them through the
 * normal scheduler on its own best backends.  Rank 0 also holds the
 * embedding and the head (final norm + output) and runs the command
 * (tokenizer, sampler, output); ranks 1..N-1 serve.  Only hidden states
 * cross ranks: n_embd floats per token from rank r to r+1, and the last
 * token's row from rank N-1 back to rank 0.
 *
 * With d == NULL (not started by a launcher, or one rank) every function
 * here is the plain single-process call, so commands use them
 * unconditionally.  Errors follow the library's style (tport_last_error);
 * the functions that return an exit status have printed their error. */
#ifndef TPORT_DIST_DIST_H
#define TPORT_DIST_DIST_H

#include <stdbool.h>

#include "tport/tport.h"

typedef struct tport_dist tport_dist;

/* Under a launcher with more than one rank: initializes MPI and takes the
 * distribution options (--split, --model-rank, --micro-batch,
 * --rank-timeout, --plan) out of argv.  *out stays NULL otherwise.
 * Returns 0, or an exit status after printing the error (a build without
 * MPI started by mpirun says so). */
int tport_dist_begin(const char *cmd, int *argc, char **argv, tport_dist **out);

/* Help text for the options above (for a command's --help). */
const char *tport_dist_usage(void);

/* Every rank opens its model file's header; rank 0 checks the split
 * against the layer count and every rank's file, and prints the plan with
 * --plan.  Ranks > 0 then load their stage and serve until rank 0 ends.
 * Sets *stop when the caller must return tport_dist_end(d, status) now
 * (plan printed, served, or an error); returns that status. */
int tport_dist_start(tport_dist *d, const char *model, const tport_model_params *mp, bool *stop);

/* Rank 0's stage of the model (embedding, its layers, the head). */
tport_model *tport_dist_model_load(tport_dist *d, const char *path, const tport_model_params *mp);
/* Rank 0's session; every other rank creates its own with the same
 * context (its batch is the micro-batch). */
tport_session *tport_dist_session_new(tport_dist *d, tport_model *m, const tport_session_params *p);
/* tport_session_eval across the pipeline: prompts go through in
 * micro-batches that overlap across ranks; the logits end up in s. */
tport_status tport_dist_eval(tport_dist *d, tport_session *s, const tport_token *ids, int32_t n);
void tport_dist_reset(tport_dist *d, tport_session *s);

/* Ends the run: with status 0 rank 0 stops the servers, collects and
 * prints their figures (layers, peak RSS, compute and communication time)
 * and everyone finalizes MPI; with another status rank 0 aborts the job.
 * Frees d; returns status. */
int tport_dist_end(tport_dist *d, int status);

#endif
