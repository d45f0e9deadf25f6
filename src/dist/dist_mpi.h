/* Private to src/dist (MPI builds): the run's state, the messages and the
 * polled waits shared by rank 0's pipeline and the serving ranks. */
#ifndef TPORT_DIST_MPI_H
#define TPORT_DIST_MPI_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "dist/dist.h"
#include "dist/dist_internal.h"

enum { TAG_HELLO = 1, TAG_GO, TAG_LOADED, TAG_CTRL, TAG_HIDDEN, TAG_ACK, TAG_ERR, TAG_STATS };
enum { CMD_EVAL = 1, CMD_RESET, CMD_QUIT, CMD_SETUP };
enum { FLAG_WANT_OUT = 1 };

#define DIST_MSG 384

/* Every message is a fixed struct sent as bytes: the ranks must share the
 * architecture (documented in the README). */
typedef struct dist_ctrl {
    int32_t cmd, pos, n, flags;
    int64_t seq;
} dist_ctrl;

typedef struct dist_hello {
    int32_t ok, n_layer, n_embd, n_vocab;
    char msg[DIST_MSG];
} dist_hello;

typedef struct dist_stats {
    int32_t l0, l1;
    uint64_t weight_bytes;
    double peak_rss_mib, prompt_ms, gen_ms;
    int64_t gen_tokens;
} dist_stats;

typedef struct dist_job {
    tport_stage_io io;
    tport_status st;
    double ms;
    char err[DIST_MSG];
} dist_job;

typedef struct dist_worker dist_worker;
dist_worker *dist_worker_new(tport_session *s);
void dist_worker_submit(dist_worker *w, const dist_job *job);
bool dist_worker_done(dist_worker *w, dist_job *out);   /* non-blocking */
void dist_worker_free(dist_worker *w);

/* Where a micro-batch's output waits until its sends complete. */
typedef struct dist_slot {
    dist_ctrl ctrl;
    float *buf;
    size_t cap;             /* floats */
    MPI_Request req[3];     /* ctrl, data, ack */
} dist_slot;

struct tport_dist {
    MPI_Comm comm;
    int rank, size;
    const char *cmd;
    dist_opts o;
    const char *path;       /* this rank's model file */
    int32_t begin[DIST_MAX_RANKS + 1];
    int32_t n_embd, micro;
    tport_model *m;         /* serving ranks: their stage */
    tport_session *s;
    dist_worker *w;
    dist_slot slot[2];
    /* rank 0: progress of every rank, and errors they report */
    int64_t seq, acked[DIST_MAX_RANKS], ack_buf[DIST_MAX_RANKS];
    MPI_Request ack_req[DIST_MAX_RANKS], err_req;
    char err_buf[DIST_MSG];
    double last_progress;
    bool ready;             /* rank 0: the side channels are posted */
    bool agreed_stop;       /* every rank knows the run stops: no abort */
    /* figures */
    dist_stats mine;
    double gen_wall_ms;
};

double dist_now_ms(void);
/* Sleeps a little more each call while nothing happens (reset with 0). */
void dist_backoff(int *round);
/* An MPI call's error as a recorded tport error naming the peer rank. */
tport_status dist_mpi_fail(int rc, int peer, const char *what);

/* Rank 0: services the acks and error reports of the other ranks; fails
 * (message names the rank) when one reported an error or none made
 * progress within the timeout. */
tport_status dist_watch(tport_dist *d);
/* Waits for req: rank 0 with the watch above, the others without a
 * deadline (rank 0 decides when the job is over). */
tport_status dist_wait(tport_dist *d, MPI_Request *req, int peer, const char *what);
tport_status dist_slot_wait(tport_dist *d, dist_slot *sl, int peer);
bool dist_slot_reserve(dist_slot *sl, size_t floats);

/* Serving ranks: the loop that runs their stage until CMD_QUIT. */
int dist_serve_loop(tport_dist *d);
/* This process's peak resident memory (VmHWM) in MiB, 0 if unknown. */
double dist_peak_rss_mib(void);

#endif
