/* The pipeline itself.  Rank 0 cuts an evaluation into micro-batches, runs
 * its stage on each on its compute thread and sends the hidden state on
 * while the next one computes; rank r receives micro-batch k+1 while it
 * computes k and forwards k when done, so all stages work at once on a
 * long prompt.  The last rank returns the last token's row to rank 0,
 * whose head turns it into logits.  Every finished micro-batch is
 * acknowledged to rank 0, which is how it names a rank that stopped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tport/tport.h"
#include "dist/dist_mpi.h"

static tport_status slot_progress(dist_slot *sl, int peer) {
    int flag = 0;
    MPI_Status st[3]; /* not MPI_STATUSES_IGNORE: gcc 12 misreads MPICH's array parameter */
    int rc = MPI_Testall(3, sl->req, &flag, st);
    return rc == MPI_SUCCESS ? TPORT_STATUS_OK : dist_mpi_fail(rc, peer, "sending a hidden state");
}

/* Runs job on the compute thread, keeping MPI (and the watch) moving. */
static tport_status compute(tport_dist *d, dist_job *job, tport_status (*poll)(tport_dist *, void *), void *arg) {
    dist_worker_submit(d->w, job);
    for (int round = 0; !dist_worker_done(d->w, job);) {
        tport_status st = dist_watch(d);
        for (int i = 0; i < 2 && st == TPORT_STATUS_OK; i++)
            st = slot_progress(&d->slot[i], d->rank + 1 < d->size ? d->rank + 1 : 0);
        if (st == TPORT_STATUS_OK && poll)
            st = poll(d, arg);
        if (st != TPORT_STATUS_OK) {
            /* the thread must be idle before anyone frees the session */
            while (!dist_worker_done(d->w, job))
                dist_backoff(&round);
            return st;
        }
        dist_backoff(&round);
    }
    if (job->st != TPORT_STATUS_OK)
        return tport_error(job->st, "rank %d: %s", d->rank, job->err);
    return TPORT_STATUS_OK;
}

static void account(dist_stats *st, int32_t n, double ms) {
    if (n == 1) {
        st->gen_ms += ms;
        st->gen_tokens++;
    } else {
        st->prompt_ms += ms;
    }
}

tport_status tport_dist_eval(tport_dist *d, tport_session *s, const tport_token *ids, int32_t n) {
    if (!d)
        return tport_session_eval(s, ids, n);
    if (!s || !ids || n <= 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_eval: no tokens");
    if (!d->w && !(d->w = dist_worker_new(s)))
        return TPORT_STATUS_ERROR;
    double t0 = dist_now_ms(), own_ms = 0;
    float *result = malloc((size_t)d->n_embd * sizeof *result);
    if (!result)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    MPI_Request res_req;
    MPI_Irecv(result, d->n_embd, MPI_FLOAT, d->size - 1, TAG_HIDDEN, d->comm, &res_req);
    int32_t pos0 = tport_session_pos(s);
    tport_status st = TPORT_STATUS_OK;
    for (int32_t off = 0; off < n && st == TPORT_STATUS_OK; off += d->micro) {
        int32_t cnt = n - off < d->micro ? n - off : d->micro;
        dist_slot *sl = &d->slot[d->seq % 2];
        if ((st = dist_slot_wait(d, sl, 1)) != TPORT_STATUS_OK)
            break;
        if (!dist_slot_reserve(sl, (size_t)cnt * (size_t)d->n_embd)) {
            st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
            break;
        }
        dist_job job = {.io = {.ids = ids + off, .n = cnt, .hidden_out = sl->buf}};
        if ((st = compute(d, &job, NULL, NULL)) != TPORT_STATUS_OK)
            break;
        own_ms += job.ms;
        sl->ctrl = (dist_ctrl){.cmd = CMD_EVAL, .pos = pos0 + off, .n = cnt,
                               .flags = off + cnt == n ? FLAG_WANT_OUT : 0, .seq = ++d->seq};
        MPI_Isend(&sl->ctrl, (int)sizeof sl->ctrl, MPI_BYTE, 1, TAG_CTRL, d->comm, &sl->req[0]);
        MPI_Isend(sl->buf, cnt * d->n_embd, MPI_FLOAT, 1, TAG_HIDDEN, d->comm, &sl->req[1]);
    }
    if (st == TPORT_STATUS_OK)
        st = dist_wait(d, &res_req, d->size - 1, "returning the last hidden state");
    if (st == TPORT_STATUS_OK) {
        double t1 = dist_now_ms();
        tport_stage_io io = {.hidden_in = result, .n = 1, .head_only = true};
        st = tport_session_eval_stage(s, &io);
        own_ms += dist_now_ms() - t1;
        if (st != TPORT_STATUS_OK)
            st = tport_error(st, "rank 0: %s", tport_last_error());
    } else {
        MPI_Cancel(&res_req);
        MPI_Request_free(&res_req);
    }
    free(result);
    if (st == TPORT_STATUS_OK) {
        account(&d->mine, n, own_ms);
        if (n == 1)
            d->gen_wall_ms += dist_now_ms() - t0;
    }
    return st;
}

void tport_dist_reset(tport_dist *d, tport_session *s) {
    tport_session_reset(s);
    if (!d)
        return;
    /* in order behind every evaluation already sent; tiny, so eager */
    dist_ctrl c = {.cmd = CMD_RESET};
    MPI_Send(&c, (int)sizeof c, MPI_BYTE, 1, TAG_CTRL, d->comm);
}

/* ---- serving ranks ------------------------------------------------------- */

/* A control message from the previous rank and, for an evaluation, its
 * hidden state. */
typedef struct inbox {
    dist_ctrl c;
    MPI_Request rc, rd;
    float *buf;
    size_t cap;
    int state; /* 0 idle, 1 waiting for control, 2 for data, 3 ready */
} inbox;

static void inbox_post(tport_dist *d, inbox *ib) {
    MPI_Irecv(&ib->c, (int)sizeof ib->c, MPI_BYTE, d->rank - 1, TAG_CTRL, d->comm, &ib->rc);
    ib->state = 1;
}

static tport_status inbox_advance(tport_dist *d, inbox *ib) {
    int flag = 0, rc = MPI_SUCCESS;
    if (ib->state == 1 && (rc = MPI_Test(&ib->rc, &flag, MPI_STATUS_IGNORE)) == MPI_SUCCESS && flag) {
        ib->state = 3;
        if (ib->c.cmd == CMD_EVAL) {
            if (ib->c.n < 1 || ib->c.n > d->micro)
                return tport_error(TPORT_STATUS_ERROR, "a micro-batch of %d tokens (at most %d)", (int)ib->c.n,
                                   (int)d->micro);
            size_t need = (size_t)ib->c.n * (size_t)d->n_embd;
            if (need > ib->cap) {
                float *b = realloc(ib->buf, need * sizeof *b);
                if (!b)
                    return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
                ib->buf = b;
                ib->cap = need;
            }
            MPI_Irecv(ib->buf, ib->c.n * d->n_embd, MPI_FLOAT, d->rank - 1, TAG_HIDDEN, d->comm, &ib->rd);
            ib->state = 2;
        }
    }
    if (rc == MPI_SUCCESS && ib->state == 2 && (rc = MPI_Test(&ib->rd, &flag, MPI_STATUS_IGNORE)) == MPI_SUCCESS &&
        flag)
        ib->state = 3;
    return rc == MPI_SUCCESS ? TPORT_STATUS_OK : dist_mpi_fail(rc, d->rank - 1, "receiving a hidden state");
}

static tport_status poll_inbox(tport_dist *d, void *arg) { return inbox_advance(d, arg); }

/* An error on a serving rank goes to rank 0, which ends the job. */
static int report_and_park(tport_dist *d) {
    char msg[DIST_MSG];
    snprintf(msg, sizeof msg, "%s", tport_last_error());
    MPI_Send(msg, DIST_MSG, MPI_CHAR, 0, TAG_ERR, d->comm);
    double until = dist_now_ms() + 2e3 * d->o.timeout_s;
    for (int round = 0; dist_now_ms() < until;)
        dist_backoff(&round);
    return 2;
}

static tport_status serve_eval(tport_dist *d, inbox *ib, inbox *next, int64_t *k) {
    bool last = d->rank == d->size - 1;
    dist_slot *sl = &d->slot[(*k)++ % 2];
    tport_status st = dist_slot_wait(d, sl, last ? 0 : d->rank + 1);
    if (st != TPORT_STATUS_OK)
        return st;
    if (!dist_slot_reserve(sl, (size_t)(last ? 1 : ib->c.n) * (size_t)d->n_embd))
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    dist_job job = {.io = {.hidden_in = ib->buf, .n = ib->c.n, .hidden_out = sl->buf, .out_last_only = last}};
    inbox_post(d, next); /* the next micro-batch arrives while this one computes */
    if ((st = compute(d, &job, poll_inbox, next)) != TPORT_STATUS_OK)
        return st;
    account(&d->mine, ib->c.n, job.ms);
    sl->ctrl = ib->c;
    MPI_Isend(&sl->ctrl.seq, 1, MPI_INT64_T, 0, TAG_ACK, d->comm, &sl->req[2]);
    if (!last) {
        MPI_Isend(&sl->ctrl, (int)sizeof sl->ctrl, MPI_BYTE, d->rank + 1, TAG_CTRL, d->comm, &sl->req[0]);
        MPI_Isend(sl->buf, ib->c.n * d->n_embd, MPI_FLOAT, d->rank + 1, TAG_HIDDEN, d->comm, &sl->req[1]);
    } else if (ib->c.flags & FLAG_WANT_OUT) {
        MPI_Isend(sl->buf, d->n_embd, MPI_FLOAT, 0, TAG_HIDDEN, d->comm, &sl->req[1]);
    }
    return TPORT_STATUS_OK;
}

int dist_serve_loop(tport_dist *d) {
    bool last = d->rank == d->size - 1;
    dist_ctrl setup;
    MPI_Request req;
    MPI_Irecv(&setup, (int)sizeof setup, MPI_BYTE, 0, TAG_CTRL, d->comm, &req);
    if (dist_wait(d, &req, 0, "waiting for the session") != TPORT_STATUS_OK || setup.cmd != CMD_SETUP)
        return 2;
    d->micro = setup.flags;
    tport_session_params sp = {.n_ctx = setup.n, .n_batch = d->micro};
    d->s = tport_session_new(d->m, &sp);
    if (!d->s || !(d->w = dist_worker_new(d->s)))
        return report_and_park(d);
    d->mine.l0 = d->begin[d->rank];
    d->mine.l1 = d->begin[d->rank + 1];
    inbox ib[2] = {{.state = 0}, {.state = 0}};
    int cur = 0;
    int64_t k = 0;
    tport_status st = TPORT_STATUS_OK;
    inbox_post(d, &ib[0]);
    for (;;) {
        for (int round = 0; st == TPORT_STATUS_OK && ib[cur].state != 3;) {
            st = inbox_advance(d, &ib[cur]);
            for (int i = 0; i < 2 && st == TPORT_STATUS_OK; i++)
                st = slot_progress(&d->slot[i], last ? 0 : d->rank + 1);
            dist_backoff(&round);
        }
        if (st != TPORT_STATUS_OK)
            break;
        dist_ctrl c = ib[cur].c;
        if (c.cmd == CMD_EVAL) {
            if ((st = serve_eval(d, &ib[cur], &ib[cur ^ 1], &k)) != TPORT_STATUS_OK)
                break;
        } else {
            inbox_post(d, &ib[cur ^ 1]);
            if (c.cmd == CMD_RESET)
                tport_session_reset(d->s);
            if (!last && (c.cmd == CMD_RESET || c.cmd == CMD_QUIT))
                MPI_Send(&c, (int)sizeof c, MPI_BYTE, d->rank + 1, TAG_CTRL, d->comm);
            if (c.cmd == CMD_QUIT)
                break;
        }
        ib[cur].state = 0;
        cur ^= 1;
    }
    for (int i = 0; i < 2 && st == TPORT_STATUS_OK; i++)
        st = dist_slot_wait(d, &d->slot[i], last ? 0 : d->rank + 1);
    for (int i = 0; i < 2; i++) {
        if (ib[i].state == 1) {
            MPI_Cancel(&ib[i].rc);
            MPI_Wait(&ib[i].rc, MPI_STATUS_IGNORE);
        }
        free(ib[i].buf);
    }
    if (st != TPORT_STATUS_OK)
        return report_and_park(d);
    d->mine.peak_rss_mib = dist_peak_rss_mib();
    MPI_Send(&d->mine, (int)sizeof d->mine, MPI_BYTE, 0, TAG_STATS, d->comm);
    return 0;
}
