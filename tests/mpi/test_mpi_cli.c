/* `mpirun -np N tport run|bench`: the plan, bench across ranks, the
 * figures rank 0 prints, and the one-line refusals before any work (a bad
 * --split, more ranks than layers, a model missing on one rank). */
#include "mpi_test.h"

static mpi_result r;

/* Lines of tport's own on stderr ("tport: ..."), not mpirun's banners. */
static int tport_lines(const char *err) {
    int n = 0;
    for (const char *p = err; (p = strstr(p, "tport: ")); p++)
        n += p == err || p[-1] == '\n';
    return n;
}

static void refused(int ranks, const char *args, const char *msg) {
    mpi_run(&r, ranks, args);
    CHECK(r.status != 0 && strstr(r.err, msg) && tport_lines(r.err) == 1 && r.seconds < 60,
          "%d ranks, %s: status %d in %.1f s, want one line with '%s':\n%s", ranks, args, r.status, r.seconds, msg,
          r.err);
}

int main(void) {
    mpi_test_env();
    char b1[4096], b2[4096], cmd[8192];
    const char *m260 = test_shared_path("models/stories260K.bin", b1, sizeof b1);
    const char *tiny = test_shared_path("models/llama-2-tiny-random.gguf", b2, sizeof b2);
    if (!m260 || !tiny)
        test_skip("test_mpi_cli", "../shared/models is incomplete");

    snprintf(cmd, sizeof cmd, "run -m '%s' --prompt-ids 1 -n 4 --ids --plan --split 2,2,1", m260);
    mpi_run(&r, 3, cmd);
    const char *plan = strstr(r.err, "pipeline plan: 3 ranks, 5 layers, n_embd 64");
    const char *loaded = strstr(r.err, "tport run: loaded");
    CHECK(r.status == 0 && plan && loaded && plan < loaded && strstr(plan, "[0, 2)") && strstr(plan, "[2, 4)") &&
              strstr(plan, "[4, 5)") &&
              strstr(plan, "sent per generated token: 3 hops x 256 bytes (n_embd f32) = 768 bytes") &&
              strchr(r.out, ','),
          "--plan shows the split before loading, then runs: status %d\n%s%s", r.status, r.out, r.err);

    snprintf(cmd, sizeof cmd, "bench -m '%s' -p 24 -n 8 -r 1 --threads 1 --micro-batch 8", m260);
    mpi_run(&r, 2, cmd);
    CHECK(r.status == 0 && strstr(r.out, "pp24") && strstr(r.out, "tg8") && strstr(r.err, "rank 1: layers [3, 5)") &&
              strstr(r.err, "peak RSS") && strstr(r.err, "pipeline generation:"),
          "bench over 2 ranks: status %d\n%s%s", r.status, r.out, r.err);

    snprintf(cmd, sizeof cmd, "run -m '%s' --prompt-ids 1 -n 4 --ids --split 1,x", m260);
    refused(2, cmd, "--split '1,x'");
    snprintf(cmd, sizeof cmd, "run -m '%s' --prompt-ids 1 -n 4 --ids --split 1,1,1", m260);
    refused(2, cmd, "has 3 values for 2 ranks");
    snprintf(cmd, sizeof cmd, "run -m '%s' --prompt-ids 1 -n 4 --ids", tiny);
    refused(2, cmd, "2 ranks but the model has 1 layer");
    snprintf(cmd, sizeof cmd, "run -m '%s' --prompt-ids 1 -n 4 --ids --model-rank 2=/nonexistent/model.bin", m260);
    refused(3, cmd, "rank 2: ");
    CHECK(strstr(r.err, "/nonexistent/model.bin"), "the message names the path: %s", mpi_line(r.err, "tport:"));
    snprintf(cmd, sizeof cmd, "run -m '%s' --prompt-ids 1 -n 4 --ids --split 1,1", m260);
    mpi_run(&r, 0, cmd);
    CHECK(r.status != 0 && strstr(r.err, "only under mpirun"), "--split without mpirun: %s", r.err);
    return test_finish("test_mpi_cli");
}
