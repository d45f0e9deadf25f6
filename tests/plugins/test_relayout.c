/* ABI 1.1 for a host-memory backend that keeps weights in a layout of its
 * own (relayout_backend.c: F32 mul_mat with weights stored transposed):
 * each matrix it takes is uploaded once, the scheduler hands it its own
 * copy (by buffer handle) and every other backend the file's bytes, and
 * the greedy ids equal the CPU's. */
#include <dlfcn.h>
#include <stdio.h>

#include "../model/greedy.h"
#include "../test_util.h"
#include "tport/tport.h"

typedef struct relayout_counters {
    unsigned long long uploads, own_reads, plain_reads;
} relayout_counters;

static relayout_counters counters(void) {
    void *h = dlopen(RELAYOUT_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    const relayout_counters *(*get)(void) =
        h ? (const relayout_counters *(*)(void))dlsym(h, "relayout_counters_get") : NULL;
    return get ? *get() : (relayout_counters){0};
}

static int run(const char *path, const char *backend, tport_token *ids, int n) {
    tport_model_params mp = {.backend = backend, .n_threads = 1};
    tport_model *m = tport_model_load(path, &mp);
    if (!m) {
        fprintf(stderr, "  %s\n", tport_last_error());
        return 0;
    }
    const tport_token prompt[1] = {1};
    int got = greedy_ids(m, prompt, 1, ids, n);
    tport_model_free(m);
    return got;
}

int main(void) {
    char buf[1024];
    const char *path = test_shared_path("models/stories260K.bin", buf, sizeof buf);
    if (!path)
        test_skip("test_relayout", "../shared/models/stories260K.bin absent");
    tport_token want[16], got[16];
    int n_want = run(path, "cpu", want, 16);
    relayout_counters before = counters();
    int n_got = run(path, NULL, got, 16);
    relayout_counters after = counters();
    CHECK(n_want == 16 && n_got == 16, "generated %d and %d of 16", n_want, n_got);
    int diff = first_difference(got, n_got, want, n_want);
    CHECK(diff < 0, "greedy id %d differs from the cpu's", diff);
    /* stories260K: 7 matrices in each of 5 layers; token_embd (also the
     * classifier) is read by get_rows, which relayout declines */
    CHECK(after.uploads - before.uploads == 35, "%llu matrices uploaded, expected 35", after.uploads - before.uploads);
    CHECK(after.own_reads > before.own_reads, "its own copies were never used");
    CHECK(after.plain_reads > before.plain_reads, "the classifier (plain bytes) never ran on it");
    printf("test_relayout: %llu uploads, %llu mul_mats on its own copies, %llu on the file's bytes\n",
           after.uploads - before.uploads, after.own_reads - before.own_reads, after.plain_reads - before.plain_reads);
    return test_finish("test_relayout");
}
