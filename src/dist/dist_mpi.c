/* The MPI side of a pipeline run: start-up (options, every rank's model
 * file checked before any work, the split agreed), the polled waits with
 * a deadline that name a rank that stopped answering, and the end of the
 * run with every rank's figures.  Errors return (MPI_ERRORS_RETURN): no MPI
 * call may abort or hang the job behind rank 0's back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tport/tport.h"
#include "dist/dist_mpi.h"
#include "tport/model_file.h"

double dist_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Spin briefly (a hop of a generated token takes microseconds), then
 * sleep so a waiting rank leaves the cores to the stages that compute. */
void dist_backoff(int *round) {
    int r = (*round)++;
    if (r < 64)
        return;
    long us = r < 96 ? 10 : r < 160 ? 50 : 200;
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

tport_status dist_mpi_fail(int rc, int peer, const char *what) {
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    return tport_error(TPORT_STATUS_DEVICE_LOST, "rank %d: %s failed: %s", peer, what, text);
}

static void post_ack(tport_dist *d, int r) {
    MPI_Irecv(&d->ack_buf[r], 1, MPI_INT64_T, r, TAG_ACK, d->comm, &d->ack_req[r]);
}

static void post_err(tport_dist *d) {
    MPI_Irecv(d->err_buf, DIST_MSG, MPI_CHAR, MPI_ANY_SOURCE, TAG_ERR, d->comm, &d->err_req);
}

/* The rank a stuck pipeline waits for: the first one behind rank 0. */
static int culprit(const tport_dist *d) {
    for (int r = 1; r < d->size; r++)
        if (d->acked[r] < d->seq)
            return r;
    return d->size - 1;
}

tport_status dist_watch(tport_dist *d) {
    if (d->rank != 0)
        return TPORT_STATUS_OK;
    int flag = 0;
    MPI_Status ms;
    for (int r = 1; r < d->size && d->ready; r++) {
        int rc = MPI_Test(&d->ack_req[r], &flag, &ms);
        if (rc != MPI_SUCCESS)
            return dist_mpi_fail(rc, r, "receiving progress");
        if (flag) {
            d->acked[r] = d->ack_buf[r];
            d->last_progress = dist_now_ms();
            post_ack(d, r);
        }
    }
    int rc = d->ready ? MPI_Test(&d->err_req, &flag, &ms) : MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        return dist_mpi_fail(rc, culprit(d), "receiving errors");
    if (flag) {
        d->err_buf[DIST_MSG - 1] = '\0';
        post_err(d);
        return tport_error(TPORT_STATUS_ERROR, "rank %d: %s", ms.MPI_SOURCE, d->err_buf);
    }
    if (dist_now_ms() - d->last_progress > d->o.timeout_s * 1e3)
        return tport_error(TPORT_STATUS_DEVICE_LOST, "rank %d stopped answering (nothing for %g s; see "
                           "--rank-timeout)", culprit(d), d->o.timeout_s);
    return TPORT_STATUS_OK;
}

tport_status dist_wait(tport_dist *d, MPI_Request *req, int peer, const char *what) {
    for (int round = 0;;) {
        int flag = 0;
        int rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return dist_mpi_fail(rc, peer, what);
        if (flag) {
            d->last_progress = dist_now_ms();
            return TPORT_STATUS_OK;
        }
        tport_status st = dist_watch(d);
        if (st != TPORT_STATUS_OK) {
            if (d->rank == 0 && st == TPORT_STATUS_DEVICE_LOST && d->seq == 0)
                /* nothing was sent yet: the rank we wait for is the one */
                tport_error(st, "rank %d stopped answering (%s; nothing for %g s)", peer, what, d->o.timeout_s);
            return st;
        }
        dist_backoff(&round);
    }
}

tport_status dist_slot_wait(tport_dist *d, dist_slot *sl, int peer) {
    for (int i = 0; i < 3; i++) {
        tport_status st = dist_wait(d, &sl->req[i], peer, "sending a hidden state");
        if (st != TPORT_STATUS_OK)
            return st;
    }
    return TPORT_STATUS_OK;
}

bool dist_slot_reserve(dist_slot *sl, size_t floats) {
    if (floats <= sl->cap)
        return true;
    float *b = realloc(sl->buf, floats * sizeof *b);
    if (!b)
        return false;
    sl->buf = b;
    sl->cap = floats;
    return true;
}

double dist_peak_rss_mib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    double kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtod(line + 6, NULL);
    if (f)
        fclose(f);
    return kib / 1024.0;
}

int tport_dist_begin(const char *cmd, int *argc, char **argv, tport_dist **out) {
    *out = NULL;
    int lrank = 0, lsize = 0;
    dist_launcher(&lrank, &lsize);
    dist_opts o;
    if (lsize <= 1) /* no launcher, or one rank: the ordinary command */
        return dist_take_options(cmd, argc, argv, lsize, false, &o);
    int provided = 0;
    if (MPI_Init_thread(argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return fprintf(stderr, "tport: %s: MPI_Init failed\n", cmd), 2;
    tport_dist *d = calloc(1, sizeof *d);
    if (!d) {
        MPI_Finalize();
        return fprintf(stderr, "tport: %s: out of memory\n", cmd), 2;
    }
    d->cmd = cmd;
    MPI_Comm_dup(MPI_COMM_WORLD, &d->comm);
    MPI_Comm_set_errhandler(d->comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(d->comm, &d->rank);
    MPI_Comm_size(d->comm, &d->size);
    int rc = provided < MPI_THREAD_FUNNELED ? (d->rank ? 2 : fprintf(stderr, "tport: %s: the MPI library "
                                               "does not support threads (MPI_THREAD_FUNNELED)\n", cmd), 2)
             : d->size > DIST_MAX_RANKS ? (d->rank ? 2 : fprintf(stderr, "tport: %s: %d ranks: at most %d are "
                                           "supported\n", cmd, d->size, DIST_MAX_RANKS), 2)
             : dist_take_options(cmd, argc, argv, d->size, d->rank != 0, &d->o);
    if (rc) {
        /* every rank found the same problem in the same arguments */
        MPI_Comm_free(&d->comm);
        MPI_Finalize();
        free(d);
        return rc;
    }
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 3; k++)
            d->slot[i].req[k] = MPI_REQUEST_NULL;
    for (int r = 0; r < DIST_MAX_RANKS; r++)
        d->ack_req[r] = MPI_REQUEST_NULL;
    d->err_req = MPI_REQUEST_NULL;
    *out = d;
    return 0;
}

/* Opens this rank's file header and describes it for rank 0. */
static dist_hello hello_of(tport_dist *d, tport_model_file **mf) {
    dist_hello h = {0};
    tport_file_shape sh;
    tport_status st = tport_model_file_open(d->path, mf);
    if (st == TPORT_STATUS_OK)
        st = tport_model_file_shape(*mf, &sh);
    if (st != TPORT_STATUS_OK) {
        snprintf(h.msg, sizeof h.msg, "%s", tport_last_error());
        return h;
    }
    h.ok = 1;
    h.n_layer = sh.n_layer;
    h.n_embd = sh.n_embd;
    h.n_vocab = sh.n_vocab;
    return h;
}

/* Rank 0: every rank's hello, checked; the split.  0 to go on, else the
 * status to stop with (the message is recorded). */
static int gather_hellos(tport_dist *d, const dist_hello *own) {
    if (!own->ok)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "rank 0: %s", own->msg), 2;
    d->last_progress = dist_now_ms();
    for (int r = 1; r < d->size; r++) {
        dist_hello h;
        MPI_Request req;
        MPI_Irecv(&h, (int)sizeof h, MPI_BYTE, r, TAG_HELLO, d->comm, &req);
        if (dist_wait(d, &req, r, "opening its model file") != TPORT_STATUS_OK)
            return 3;
        h.msg[DIST_MSG - 1] = '\0';
        if (!h.ok)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "rank %d: %s", r, h.msg), 2;
        if (h.n_layer != own->n_layer || h.n_embd != own->n_embd || h.n_vocab != own->n_vocab)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "rank %d's model (%d layers, n_embd %d, vocab %d) is not "
                               "rank 0's (%d layers, n_embd %d, vocab %d)", r, h.n_layer, h.n_embd, h.n_vocab,
                               own->n_layer, own->n_embd, own->n_vocab), 2;
    }
    if (dist_split_layers(d->o.split, d->size, own->n_layer, d->begin) != TPORT_STATUS_OK)
        return 2;
    return 0;
}

int tport_dist_start(tport_dist *d, const char *model, const tport_model_params *mp, bool *stop) {
    *stop = true;
    d->path = d->o.model_rank[d->rank] ? d->o.model_rank[d->rank] : model;
    tport_model_file *mf = NULL;
    dist_hello h = hello_of(d, &mf);
    d->n_embd = h.n_embd;
    /* GO: status (0 go on, else stop with it), then the split */
    int32_t go[DIST_MAX_RANKS + 3] = {0};
    int status = 0;
    if (d->rank == 0) {
        status = gather_hellos(d, &h);
        if (status == 3) /* a rank is not there: no GO can reach it */
            goto out;
        if (!status && d->o.plan) {
            dist_print_plan(stderr, mf, d->size, d->begin, h.n_embd, d->o.micro_batch ? d->o.micro_batch : 64,
                            (const char *const *)d->o.model_rank);
            fflush(stderr);
        }
        go[0] = status;
        memcpy(go + 1, d->begin, (size_t)(d->size + 1) * sizeof *go);
        for (int r = 1; r < d->size; r++)
            MPI_Send(go, d->size + 2, MPI_INT32_T, r, TAG_GO, d->comm);
        if (status > 0)
            fprintf(stderr, "tport: %s: %s\n", d->cmd, tport_last_error());
    } else {
        MPI_Request req;
        MPI_Send(&h, (int)sizeof h, MPI_BYTE, 0, TAG_HELLO, d->comm);
        MPI_Irecv(go, d->size + 2, MPI_INT32_T, 0, TAG_GO, d->comm, &req);
        if (dist_wait(d, &req, 0, "waiting for the split") != TPORT_STATUS_OK)
            status = 2;
        else
            status = go[0];
        memcpy(d->begin, go + 1, (size_t)(d->size + 1) * sizeof *go);
    }
    d->agreed_stop = status != 0;
out:
    tport_model_file_close(mf);
    if (status == 3) {
        fprintf(stderr, "tport: %s: %s\n", d->cmd, tport_last_error());
        return 3;
    }
    if (status)
        return status;
    if (d->rank == 0) {
        *stop = false;
        return 0;
    }
    /* a serving rank: its stage, then the loop */
    tport_model_params p = mp ? *mp : (tport_model_params){0};
    p.layer_begin = d->begin[d->rank];
    p.layer_end = d->begin[d->rank + 1];
    p.no_embedding = p.no_head = true;
    d->m = tport_model_load(d->path, &p);
    dist_hello loaded = {.ok = d->m != NULL};
    if (!d->m)
        snprintf(loaded.msg, sizeof loaded.msg, "%s", tport_last_error());
    else
        d->mine.weight_bytes = dist_stage_weight_bytes(tport_model_file_of(d->m), d->rank, p.layer_begin, p.layer_end);
    MPI_Send(&loaded, (int)sizeof loaded, MPI_BYTE, 0, TAG_LOADED, d->comm);
    return d->m ? dist_serve_loop(d) : 2;
}

tport_model *tport_dist_model_load(tport_dist *d, const char *path, const tport_model_params *mp) {
    if (!d)
        return tport_model_load(path, mp);
    tport_model_params p = mp ? *mp : (tport_model_params){0};
    p.layer_begin = 0;
    p.layer_end = d->begin[1];
    tport_model *m = tport_model_load(d->path, &p);
    if (!m)
        return tport_error(TPORT_STATUS_ERROR, "rank 0: %s", tport_last_error()), NULL;
    d->mine.weight_bytes = dist_stage_weight_bytes(tport_model_file_of(m), 0, 0, p.layer_end);
    for (int r = 1; r < d->size; r++) {
        dist_hello h;
        MPI_Request req;
        MPI_Irecv(&h, (int)sizeof h, MPI_BYTE, r, TAG_LOADED, d->comm, &req);
        d->last_progress = dist_now_ms();
        if (dist_wait(d, &req, r, "loading its layers") != TPORT_STATUS_OK) {
            tport_model_free(m);
            return NULL;
        }
        h.msg[DIST_MSG - 1] = '\0';
        if (!h.ok) {
            tport_error(TPORT_STATUS_ERROR, "rank %d: %s", r, h.msg);
            tport_model_free(m);
            return NULL;
        }
    }
    (void)path;
    return m;
}

tport_session *tport_dist_session_new(tport_dist *d, tport_model *m, const tport_session_params *p) {
    if (!d)
        return tport_session_new(m, p);
    tport_session_params sp = p ? *p : (tport_session_params){0};
    int32_t batch = sp.n_batch ? sp.n_batch : 64;
    d->micro = d->o.micro_batch ? d->o.micro_batch : batch < DIST_MAX_MICRO_BATCH ? batch : DIST_MAX_MICRO_BATCH;
    sp.n_batch = d->micro;
    sp.n_ctx = sp.n_ctx ? sp.n_ctx : tport_model_n_ctx(m);
    tport_session *s = tport_session_new(m, &sp);
    if (!s)
        return NULL;
    /* SETUP: the context and the micro-batch; threads come from argv */
    dist_ctrl c = {.cmd = CMD_SETUP, .pos = sp.n_threads, .n = sp.n_ctx, .flags = d->micro};
    for (int r = 1; r < d->size; r++)
        MPI_Send(&c, (int)sizeof c, MPI_BYTE, r, TAG_CTRL, d->comm);
    d->last_progress = dist_now_ms();
    for (int r = 1; r < d->size; r++)
        post_ack(d, r);
    post_err(d);
    d->ready = true;
    d->mine.l0 = 0;
    d->mine.l1 = d->begin[1];
    return s;
}

static void print_figures(tport_dist *d, const dist_stats *st) {
    double compute = 0;
    int64_t tokens = st[0].gen_tokens;
    for (int r = 0; r < d->size; r++) {
        fprintf(stderr, "tport %s: rank %d: layers [%d, %d), %.2f MiB of weights, peak RSS %.1f MiB, compute: "
                "prompt %.1f ms, generation %.3f ms/token\n", d->cmd, r, st[r].l0, st[r].l1,
                (double)st[r].weight_bytes / 1048576.0, st[r].peak_rss_mib, st[r].prompt_ms,
                st[r].gen_tokens ? st[r].gen_ms / (double)st[r].gen_tokens : 0.0);
        if (st[r].gen_tokens)
            compute += st[r].gen_ms / (double)st[r].gen_tokens;
    }
    if (tokens) {
        double wall = d->gen_wall_ms / (double)tokens, comm = wall > compute ? wall - compute : 0;
        fprintf(stderr, "tport %s: pipeline generation: %.3f ms/token = compute %.3f ms + communication and "
                "waiting %.3f ms (%.0f%%)\n", d->cmd, wall, compute, comm, wall > 0 ? 100.0 * comm / wall : 0.0);
    }
}

int tport_dist_end(tport_dist *d, int status) {
    if (!d)
        return status;
    if (d->rank == 0 && d->ready && status == 0) {
        /* QUIT down the chain, then everyone's figures */
        dist_ctrl c = {.cmd = CMD_QUIT};
        MPI_Request req;
        tport_status st = dist_slot_wait(d, &d->slot[0], 1);
        if (st == TPORT_STATUS_OK)
            st = dist_slot_wait(d, &d->slot[1], 1);
        if (st == TPORT_STATUS_OK) {
            MPI_Isend(&c, (int)sizeof c, MPI_BYTE, 1, TAG_CTRL, d->comm, &req);
            st = dist_wait(d, &req, 1, "stopping");
        }
        dist_stats all[DIST_MAX_RANKS];
        all[0] = d->mine;
        all[0].peak_rss_mib = dist_peak_rss_mib();
        for (int r = 1; r < d->size && st == TPORT_STATUS_OK; r++) {
            MPI_Irecv(&all[r], (int)sizeof all[r], MPI_BYTE, r, TAG_STATS, d->comm, &req);
            st = dist_wait(d, &req, r, "reporting its figures");
        }
        if (st == TPORT_STATUS_OK)
            print_figures(d, all);
        else {
            fprintf(stderr, "tport: %s: %s\n", d->cmd, tport_last_error());
            status = 3;
        }
    }
    if (d->rank == 0 && status != 0 && !d->agreed_stop) {
        /* a rank may be gone or stuck: finalizing could hang */
        fflush(stdout);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, status);
    }
    if (d->rank == 0 && d->ready) {
        for (int r = 1; r < d->size; r++) {
            MPI_Cancel(&d->ack_req[r]);
            MPI_Wait(&d->ack_req[r], MPI_STATUS_IGNORE);
        }
        MPI_Cancel(&d->err_req);
        MPI_Wait(&d->err_req, MPI_STATUS_IGNORE);
    }
    dist_worker_free(d->w);
    tport_session_free(d->s);
    tport_model_free(d->m);
    for (int i = 0; i < 2; i++)
        free(d->slot[i].buf);
    MPI_Comm_free(&d->comm);
    MPI_Finalize();
    free(d);
    return status;
}
