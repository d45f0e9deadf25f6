/* Private to src/dist: options, the layer split and the plan, shared by
 * the MPI transport and the build without MPI. */
#ifndef TPORT_DIST_INTERNAL_H
#define TPORT_DIST_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "tport/model_file.h"

#define DIST_MAX_RANKS 256
#define DIST_DEFAULT_TIMEOUT_S 60.0
#define DIST_MAX_MICRO_BATCH 64 /* default micro-batch: the batch, at most this */

typedef struct dist_opts {
    const char *split;                   /* --split as given, or NULL   */
    const char *model_rank[DIST_MAX_RANKS]; /* --model-rank R=PATH      */
    int micro_batch;                     /* 0 = the batch, at most 64   */
    double timeout_s;                    /* --rank-timeout              */
    bool plan;
} dist_opts;

/* Rank and size a launcher gave this process in its environment
 * (Open MPI: OMPI_COMM_WORLD_SIZE/RANK; MPICH Hydra: PMI_SIZE/RANK; PMIx and
 * others); size 0 when not started by one. */
void dist_launcher(int *rank, int *size);

/* Takes the distribution options out of argv (rank count n_ranks, for
 * --model-rank's range).  0, or 2 after printing a one-line error (when
 * `quiet` is false: only rank 0 prints what every rank finds). */
int dist_take_options(const char *cmd, int *argc, char **argv, int n_ranks, bool quiet, dist_opts *o);

/* The layer range of every rank: begin[r] .. begin[r+1] (begin has
 * n_ranks + 1 entries), in proportion to the --split weights (NULL: even).
 * Fails with a one-line message when the split is malformed or a rank
 * would get no layer. */
tport_status dist_split_layers(const char *split, int n_ranks, int32_t n_layer, int32_t *begin);

/* Bytes of the weights rank r of n holding layers [l0, l1) reads: its
 * layers' tensors, plus the embedding, final norm and output on rank 0. */
uint64_t dist_stage_weight_bytes(const tport_model_file *mf, int rank, int32_t l0, int32_t l1);

/* Prints the plan (which rank holds which layers, weight bytes, bytes
 * sent per token). */
void dist_print_plan(FILE *out, const tport_model_file *mf, int n_ranks, const int32_t *begin, int32_t n_embd,
                     int micro_batch, const char *const *paths);

#endif
