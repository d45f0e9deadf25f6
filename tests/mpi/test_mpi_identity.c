/* Identical output across ranks: the greedy ids of `mpirun -np N tport run`
 * equal the single-process ids for 2 and 3 ranks at every split point of
 * stories260K (5 layers), for a long prompt that goes through the
 * pipeline in several micro-batches, for a synthesized file of the
 * stories110M shape (12 layers, n_embd 768; q8_0 to keep it quick), and
 * for synthesized files of other architectures. */
#include "mpi_test.h"

static mpi_result r;

static void expect_same(int n, const char *args, const char *want, const char *what) {
    mpi_run(&r, n, args);
    CHECK(r.status == 0 && !strcmp(r.out, want), "%s, %d ranks: status %d, ids\n  %s  want\n  %s  stderr: %s", what,
          n, r.status, r.out, want, r.err);
}

static void one_split(const char *model, int ranks, const char *args, const char *split, const char *want) {
    char cmd[16384], what[128];
    snprintf(cmd, sizeof cmd, "run -m '%s' %s --split %s", model, args, split);
    snprintf(what, sizeof what, "--split %s", split);
    expect_same(ranks, cmd, want, what);
}

/* Every way to cut `layers` into 2 or 3 non-empty ranges. */
static void every_split(const char *model, int ranks, int layers, const char *args, const char *want) {
    char split[64];
    for (int a = 1; a < layers; a++) {
        if (ranks == 2) {
            snprintf(split, sizeof split, "%d,%d", a, layers - a);
            one_split(model, 2, args, split, want);
            continue;
        }
        for (int b = a + 1; b < layers; b++) {
            snprintf(split, sizeof split, "%d,%d,%d", a, b - a, layers - b);
            one_split(model, 3, args, split, want);
        }
    }
}

int main(void) {
    mpi_test_env();
    char buf[4096], cmd[8192], want[65536];
    const char *m260 = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!m260)
        test_skip("test_mpi_identity", "../shared/models/stories260K.bin is missing");
    const char *args = "--prompt-ids 1 -n 16 --ids --temp 0 --threads 1";
    snprintf(cmd, sizeof cmd, "run -m '%s' %s", m260, args);
    mpi_run(&r, 0, cmd);
    CHECK(r.status == 0 && strchr(r.out, ','), "one process: %s", r.err);
    snprintf(want, sizeof want, "%s", r.out);
    expect_same(1, cmd, want, "mpirun -np 1 (the ordinary path)");
    for (int ranks = 2; ranks <= 3; ranks++)
        every_split(m260, ranks, 5, args, want);

    /* 41 prompt tokens in micro-batches of 8: six hops per stage */
    char prompt[512] = "1";
    for (int i = 0; i < 40; i++)
        snprintf(prompt + strlen(prompt), sizeof prompt - strlen(prompt), ",%d", 5 + i * 11);
    char long_args[1024];
    snprintf(long_args, sizeof long_args, "--prompt-ids %s -n 8 --ids --temp 0 --threads 1 --batch 8", prompt);
    snprintf(cmd, sizeof cmd, "run -m '%s' %s", m260, long_args);
    mpi_run(&r, 0, cmd);
    snprintf(want, sizeof want, "%s", r.out);
    expect_same(2, cmd, want, "a 41-token prompt");
    expect_same(3, cmd, want, "a 41-token prompt");

    /* the stories110M shape, synthesized */
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char s110[512];
    snprintf(s110, sizeof s110, "%s/mpi-stories110M-%d.gguf", tmp, (int)getpid());
    snprintf(cmd, sizeof cmd, "synth --shape stories110M --type q8_0 --seed 7 -o '%s'", s110);
    mpi_run(&r, 0, cmd);
    CHECK(r.status == 0, "synth: %s", r.err);
    snprintf(long_args, sizeof long_args, "--prompt-ids 1,%s -n 8 --ids --temp 0 --threads 1 --batch 8",
             "400,31,9000,77,1234,5,600,23000,42,8,15");
    snprintf(cmd, sizeof cmd, "run -m '%s' %s", s110, long_args);
    mpi_run(&r, 0, cmd);
    snprintf(want, sizeof want, "%s", r.out);
    CHECK(r.status == 0 && strchr(want, ','), "stories110M shape, one process: %s", r.err);
    const char *splits[][2] = {{"2", "1,11"}, {"3", "1,10,1"}, {"2", "1,1"}, {"2", "11,1"}, {"3", "1,1,1"}};
    size_t n_splits = sizeof splits / sizeof splits[0];
#ifdef TPORT_TEST_SANITIZED
    n_splits = 2; /* 136 MiB under a sanitizer: the two extreme splits only */
#endif
    for (size_t i = 0; i < n_splits; i++) {
        char c2[8400], what[64];
        snprintf(c2, sizeof c2, "%s --split %s", cmd, splits[i][1]);
        snprintf(what, sizeof what, "stories110M shape, --split %s", splits[i][1]);
        expect_same(atoi(splits[i][0]), c2, want, what);
    }
    remove(s110);

    /* other architectures: bloom normalizes the embedding and gemma scales
     * it, which only the first stage may do; 3 ranks, micro-batches of 2 */
    const char *archs[] = {"bloom", "gemma", "gpt2", "falcon"};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        char path[512], what[64];
        snprintf(path, sizeof path, "%s/mpi-%s-%d.gguf", tmp, archs[i], (int)getpid());
        snprintf(cmd, sizeof cmd, "synth --arch %s --layers 3 -o '%s'", archs[i], path);
        mpi_run(&r, 0, cmd);
        CHECK(r.status == 0, "synth --arch %s: %s", archs[i], r.err);
        snprintf(cmd, sizeof cmd, "run -m '%s' --prompt-ids 1,5,9,200,7 -n 8 --ids --temp 0 --threads 1 --batch 2",
                 path);
        mpi_run(&r, 0, cmd);
        snprintf(want, sizeof want, "%s", r.out);
        snprintf(what, sizeof what, "architecture %s", archs[i]);
        expect_same(3, cmd, want, what);
        remove(path);
    }
    return test_finish("test_mpi_identity");
}
