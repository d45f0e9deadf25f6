/* Which weights the CPU backend keeps a copy of in its own layout (ABI 1.1
 * upload slots, backends/cpu/cpu_repack.c): on a synthesized q8_0 llama
 * with an untied output, the matrices of the blocks and the output head
 * are copied, the token embedding (read only by get_rows, a few rows a
 * token) stays in the file's mapping, and the model still generates.
 * (TPORT_CPU_REPACK=0 is read once per process: test_cpu_repack checks
 * it.)  On a machine whose CPU plug-in has no re-encoded layout (no AVX2)
 * the test says skipped.
 *
 * Then what stays out of the process's resident memory: the 1-D weights
 * live in the model's own memory, and generating from a 16384-token
 * vocabulary maps no page of the embedding's file mapping (its rows are
 * read from the file: tport_model_file_copy), which /proc/self/pagemap
 * tells where the kernel provides it.
 *
 * And quick_start (test_quick_start): the copies wait until the second
 * batch, and which layout a batch reads depends on nothing but the order
 * of batches. */
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "../test_util.h"
#include "../tools/tool_run.h"
#include "core/tensor.h"
#include "greedy.h"
#include "model/model.h"

static const char *name = "test_weight_residency";

static bool copied(const tport_tensor *w) {
    return w && w->res.backend != NULL;
}

static bool in_mapping(const tport_model *m, const tport_tensor *w) {
    uintptr_t p = (uintptr_t)w->data, lo = (uintptr_t)m->file->map;
    return p >= lo && p - lo < m->file->map_size;
}

/* Pages of [p, p + n) mapped in this process (bit 63 of each pagemap
 * entry), or -1 when pagemap cannot be read. */
static long present_pages(const void *p, size_t n) {
    long page = sysconf(_SC_PAGESIZE);
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0 || page <= 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    uintptr_t first = (uintptr_t)p / (uintptr_t)page, last = ((uintptr_t)p + n - 1) / (uintptr_t)page;
    long count = 0;
    for (uintptr_t v = first; v <= last && count >= 0; v++) {
        uint64_t e;
        if (pread(fd, &e, sizeof e, (off_t)(v * sizeof e)) != (ssize_t)sizeof e)
            count = -1;
        else
            count += (long)(e >> 63);
    }
    close(fd);
    return count;
}

/* The second model: a 16384-token embedding (1.1 MiB of q8_0 rows), and
 * 48 tokens spread over it, each row in a page of its own. */
static void test_embedding_stays_in_the_file(const char *path) {
    char args[1024];
    snprintf(args, sizeof args, "synth --dim 64 --layers 1 --heads 4 --ff 128 --vocab 16384 --ctx 64 --type q8_0 "
             "--seed 5 -o '%s' >/dev/null", path);
    CHECK(tool_run(args) == 0, "failed: tport %s", args);
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (!m)
        return;
    CHECK(!in_mapping(m, m->layers[0].attn_norm) && !in_mapping(m, m->w.output_norm),
          "the 1-D weights are in the model's memory, not the file's mapping");
    const tport_tensor *te = m->w.tok_embd;
    CHECK(in_mapping(m, te), "the token embedding is read from the file");
    size_t bytes = (size_t)te->nb[1] * (size_t)te->ne[1];
    long before = present_pages(te->data, bytes);
    tport_token prompt[48], ids[4];
    for (int i = 0; i < 48; i++)
        prompt[i] = (tport_token)(1 + i * 337);
    CHECK(greedy_ids(m, prompt, 48, ids, 4) == 4, "generates");
    long after = present_pages(te->data, bytes);
    if (before < 0 || after < 0)
        printf("%s: pagemap: skipped (/proc/self/pagemap cannot be read)\n", name);
    else
        CHECK(after == before, "the embedding's mapping gained %ld pages (of %zu) while generating", after - before,
              bytes / 4096);
    tport_model_free(m);
}

/* The first logits of a new session on m after evaluating p[0..n). */
static bool first_logits(tport_model *m, const tport_token *p, int n, float *out) {
    tport_session *s = tport_session_new(m, NULL);
    bool ok = s && tport_session_eval(s, p, n) == TPORT_STATUS_OK && tport_session_logits(s);
    if (ok)
        memcpy(out, tport_session_logits(s), (size_t)tport_model_n_vocab(m) * sizeof *out);
    else
        fprintf(stderr, "  eval: %s\n", tport_last_error());
    tport_session_free(s);
    return ok;
}

/* quick_start: the copies are made when the host waits, before the second
 * batch (or before a first one of more than 32 tokens); a first short
 * batch reads the file's layout.  Which one a batch reads follows from
 * the order of batches alone: the same bits on every load. */
static void test_quick_start(const char *path) {
    enum { V = 320 };
    static float eager[V], eager_long[V], early[V], early2[V], later[V], first_long[V];
    tport_token p[40];
    for (int i = 0; i < 40; i++)
        p[i] = (tport_token)(1 + i * 7);
    tport_model_params qp = {.quick_start = true};
    tport_model *e = tport_model_load(path, NULL), *q1 = tport_model_load(path, &qp),
                *q2 = tport_model_load(path, &qp), *q3 = tport_model_load(path, &qp);
    CHECK(e && q1 && q2 && q3, "load: %s", tport_last_error());
    if (e && q1 && q2 && q3) {
        CHECK(tport_model_deferred_uploads(e) == 0, "a model loaded without quick_start left uploads pending");
        int pending = tport_model_deferred_uploads(q1);
        CHECK(pending > 0 && pending == q1->n_resident,
              "a quick-start load deferred %d uploads of %d copies", pending, q1->n_resident);
        CHECK(first_logits(e, p, 3, eager) && first_logits(e, p, 40, eager_long), "eager model evaluates");
        CHECK(first_logits(q1, p, 3, early), "quick-start model, first batch");
        CHECK(tport_model_deferred_uploads(q1) == pending, "the first short batch waited for the uploads");
        CHECK(first_logits(q1, p, 3, later), "quick-start model, second batch");
        CHECK(tport_model_deferred_uploads(q1) == 0, "the second batch left uploads pending");
        CHECK(!memcmp(later, eager, sizeof eager), "after the wait the logits are not the eager model's");
        double worst = 0;
        for (int i = 0; i < V; i++)
            worst = fmax(worst, fabs((double)early[i] - eager[i]) / (1.0 + fabs((double)eager[i])));
        CHECK(worst < 1e-3, "the first batch (file layout) is off the copies' by %g", worst);
        CHECK(first_logits(q2, p, 3, early2) && !memcmp(early2, early, sizeof early),
              "a second quick-start load's first batch gave other bits");
        CHECK(first_logits(q3, p, 40, first_long) && tport_model_deferred_uploads(q3) == 0,
              "a first batch of 40 tokens did not wait");
        CHECK(!memcmp(first_long, eager_long, sizeof eager_long), "a long first batch did not read the copies");
    }
    tport_model_free(e), tport_model_free(q1), tport_model_free(q2), tport_model_free(q3);
}

int main(void) {
    char dir[512], path[600], args[1024];
    CHECK(tool_scratch_dir(dir, sizeof dir, "residency") != NULL, "no scratch folder");
    if (test_failures)
        return test_finish(name);
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    snprintf(args, sizeof args, "synth --dim 64 --layers 2 --heads 4 --ff 128 --vocab 320 --ctx 64 --type q8_0 "
             "--seed 3 -o '%s' >/dev/null", path);
    CHECK(tool_run(args) == 0, "failed: tport %s", args);
    static const char *const files[] = {"m.gguf"};
    unsetenv("TPORT_CPU_REPACK");
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    if (m && tport_model_resident_bytes(m, "cpu") == 0) {
        tport_model_free(m);
        tool_scratch_clean(dir, files, 1);
        test_skip(name, "the active cpu backend keeps no weights in a layout of its own (no AVX2 kernels)");
    }
    tport_token prompt[3] = {1, 17, 99}, ids[12] = {0};
    if (m) {
        CHECK(m->w.output && m->w.output != m->w.tok_embd, "the synthesized model has its own output head");
        CHECK(copied(m->layers[0].wq) && copied(m->layers[1].w_down) && copied(m->w.output),
              "the matrices of the blocks and the head are copied");
        CHECK(!copied(m->w.tok_embd), "the token embedding (get_rows only) stays in the file");
        CHECK(greedy_ids(m, prompt, 3, ids, 12) == 12, "generates with copies");
    }
    tport_model_free(m);
    test_quick_start(path);
    char path2[600];
    snprintf(path2, sizeof path2, "%s/e.gguf", dir);
    test_embedding_stays_in_the_file(path2);
    static const char *const files2[] = {"m.gguf", "e.gguf"};
    tool_scratch_clean(dir, files2, 2);
    return test_finish(name);
}
