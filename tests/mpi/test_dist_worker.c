/* The pipeline's compute thread (src/dist/dist_worker.c) without MPI: jobs
 * handed over and polled from the main thread give the same hidden states
 * as evaluating on the main thread, and a worker freed while busy or idle
 * shuts down cleanly.  Run under TSan by the sanitizer builds. */
#include <string.h>
#include <time.h>

#include "../test_util.h"
#include "dist/dist_mpi.h"

#define N 9

static void wait_done(dist_worker *w, dist_job *job) {
    struct timespec ts = {0, 100000};
    while (!dist_worker_done(w, job))
        nanosleep(&ts, NULL);
}

int main(void) {
    char buf[4096];
    const char *path = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!path)
        test_skip("test_dist_worker", "../shared/models/stories260K.bin is missing");
    tport_model_params p = {.n_threads = 2, .layer_begin = 0, .layer_end = 3, .no_head = true};
    tport_model *m = tport_model_load(path, &p);
    CHECK(m, "stage [0, 3) loads: %s", tport_last_error());
    if (!m)
        return test_finish("test_dist_worker");
    tport_session_params sp = {.n_ctx = 32, .n_batch = 4};
    tport_session *direct = tport_session_new(m, &sp), *threaded = tport_session_new(m, &sp);
    int32_t ne = tport_model_n_embd(m);
    static float a[N * 512], b[N * 512];
    tport_token ids[N];
    for (int i = 0; i < N; i++)
        ids[i] = 1 + i * 7;
    dist_worker *w = dist_worker_new(threaded);
    CHECK(w && direct && threaded && ne <= 512, "a worker and two sessions");
    for (int round = 0; round < 3 && w; round++) {
        tport_stage_io io = {.ids = ids, .n = N, .hidden_out = a};
        CHECK(tport_session_eval_stage(direct, &io) == TPORT_STATUS_OK, "direct: %s", tport_last_error());
        dist_job job = {.io = {.ids = ids, .n = N, .hidden_out = b}};
        dist_worker_submit(w, &job);
        wait_done(w, &job);
        CHECK(job.st == TPORT_STATUS_OK && job.ms >= 0, "threaded: %s", job.err);
        CHECK(!memcmp(a, b, (size_t)N * (size_t)ne * sizeof(float)), "round %d: the same hidden states", round);
    }
    /* an evaluation that fails reports its message through the job */
    dist_job bad = {.io = {.ids = ids, .n = 64, .hidden_out = b}};
    dist_worker_submit(w, &bad);
    wait_done(w, &bad);
    CHECK(bad.st != TPORT_STATUS_OK && strstr(bad.err, "do not fit"), "the error crosses threads: %s", bad.err);
    /* freed while busy: the job finishes, the thread ends */
    dist_job busy = {.io = {.ids = ids, .n = 2, .hidden_out = b}};
    tport_session_reset(threaded);
    dist_worker_submit(w, &busy);
    dist_worker_free(w);
    tport_session_free(direct);
    tport_session_free(threaded);
    tport_model_free(m);
    return test_finish("test_dist_worker");
}
