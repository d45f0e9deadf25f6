/* ABI 1.1 end to end with the opaque device (opaque_device.c), whose memory
 * the host cannot address: a real model gives the same greedy ids as on
 * the CPU alone, weights are uploaded once, and only activations at split
 * boundaries move per token.  One scenario per run (argv[1]), set up by
 * the environment ctest gives it:
 *   basic    everything on the device
 *   decline  the device declines rope (TPORT_OPAQUE_DECLINE=rope)
 *   late     the device declines mul_mat after the weights were uploaded:
 *            the host must use the file's bytes, never download a weight
 *   async    completions arrive late on a worker thread, and downloads
 *            hold poison until then (TPORT_OPAQUE_ASYNC=1)
 *   oom      the device runs out of memory for weights at load
 *   lost     the device is lost in the middle of generation
 *   hang     an asynchronous job never completes (TPORT_COMPUTE_TIMEOUT=1)
 *   lostload the device is lost while the weights are uploaded
 *   readable the device reads host memory directly (HOST_READABLE): the
 *            inputs are not staged */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../model/greedy.h"
#include "../test_util.h"
#include "tport/tport.h"

typedef struct opaque_counters {
    unsigned long long weight_writes, weight_buffers, other_writes, reads, fills, copies, computes;
    unsigned long long host_pointers_seen, bad_handles, jobs_late, compiles, replays, forgets;
} opaque_counters;

static const opaque_counters *counters(void) {
    void *h = dlopen(OPAQUE_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    const opaque_counters *(*get)(void) = h ? (const opaque_counters *(*)(void))dlsym(h, "opaque_counters_get") : NULL;
    static const opaque_counters none;
    return get ? get() : &none;
}

typedef struct model_case {
    const char *file;
    tport_token prompt[8];
    int n_prompt, n_gen;
} model_case;

static const model_case cases[] = {
    {"models/stories260K.bin", {1}, 1, 24},
    {"models/llama-2-tiny-random.gguf", {1, 9038, 2501, 263, 931}, 5, 16},
};

static int generate(const char *path, const char *backend, const model_case *c, tport_token *ids,
                    tport_sched_stats *last, int *n_evals) {
    tport_model_params mp = {.backend = backend, .n_threads = 2};
    tport_model *m = tport_model_load(path, &mp);
    if (!m) {
        fprintf(stderr, "  load %s: %s\n", path, tport_last_error());
        return 0;
    }
    const char *late = getenv("TEST_DECLINE_LATE");
    if (late && !backend)
        setenv("TPORT_OPAQUE_DECLINE_LATE", late, 1);
    unsigned long long writes_at_load = counters()->weight_writes;
    tport_session *s = tport_session_new(m, NULL);
    int got = 0;
    if (s && tport_session_eval(s, c->prompt, c->n_prompt) == TPORT_STATUS_OK) {
        for (got = 0; got < c->n_gen; got++) {
            const float *logits = tport_session_logits(s);
            tport_token best = 0;
            for (int32_t i = 1; logits && i < tport_model_n_vocab(m); i++)
                if (logits[i] > logits[best])
                    best = i;
            ids[got] = best;
            if (got + 1 < c->n_gen && tport_session_eval(s, &best, 1) != TPORT_STATUS_OK) {
                fprintf(stderr, "  eval: %s\n", tport_last_error());
                break;
            }
        }
    } else {
        fprintf(stderr, "  session: %s\n", tport_last_error());
    }
    tport_session_stats(s, last, NULL, n_evals);
    if (!backend)
        CHECK(counters()->weight_writes == writes_at_load, "%s: %llu weight writes during generation", path,
              counters()->weight_writes - writes_at_load);
    unsetenv("TPORT_OPAQUE_DECLINE_LATE");
    tport_session_free(s);
    tport_model_free(m);
    return got;
}

int main(int argc, char **argv) {
    const char *scenario = argc > 1 ? argv[1] : "basic";
    char name[64], buf[1024];
    snprintf(name, sizeof name, "test_device_memory_%s", scenario);
    int ran = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const model_case *c = &cases[k];
        const char *path = test_shared_path(c->file, buf, sizeof buf);
        if (!path) {
            printf("%s: %s absent, skipped\n", name, c->file);
            continue;
        }
        ran++;
        tport_token want[64], got[64];
        tport_sched_stats cpu_stats, dev_stats;
        int n_evals = 0;
        int n_want = generate(path, "cpu", c, want, &cpu_stats, &n_evals);
        CHECK(n_want == c->n_gen, "%s: cpu generated %d of %d", c->file, n_want, c->n_gen);
        opaque_counters before = *counters();
        int n_got = generate(path, NULL, c, got, &dev_stats, &n_evals);
        opaque_counters after = *counters();
        int diff = first_difference(got, n_got, want, n_want);
        CHECK(diff < 0, "%s (%s): greedy id %d differs from the cpu's (%d vs %d)", c->file, scenario, diff,
              diff >= 0 && diff < n_got ? got[diff] : -1, diff >= 0 && diff < n_want ? want[diff] : -1);
        CHECK(after.host_pointers_seen == 0, "%s: the device was given %llu host pointers for its own memory",
              c->file, after.host_pointers_seen);
        CHECK(after.bad_handles == 0, "%s: %llu unknown handles", c->file, after.bad_handles);
        CHECK(cpu_stats.n_uploads == 0 && cpu_stats.n_downloads == 0, "%s: the cpu-only run staged copies", c->file);
        unsigned long long wrote = after.weight_writes - before.weight_writes;
        printf("%s: %s: %llu graphs recorded, %llu replayed\n", name, c->file, after.compiles - before.compiles,
               after.replays - before.replays);
        printf("%s: %s: %llu weights uploaded, last token: %d splits, %d uploads (%llu B), %d downloads (%llu B)\n",
               name, c->file, wrote, dev_stats.n_splits, dev_stats.n_uploads, (unsigned long long)dev_stats.bytes_up,
               dev_stats.n_downloads, (unsigned long long)dev_stats.bytes_down);
        if (!strcmp(scenario, "basic") || !strcmp(scenario, "async")) {
            CHECK(wrote > 0 && wrote == after.weight_buffers - before.weight_buffers,
                  "%s: %llu weight writes for %llu weight buffers", c->file, wrote,
                  after.weight_buffers - before.weight_buffers);
            /* all on the device: ids, positions and mask in, logits out */
            CHECK(dev_stats.n_splits == 1, "%s: %d splits", c->file, dev_stats.n_splits);
            CHECK(dev_stats.n_uploads == 3 && dev_stats.n_downloads == 1, "%s: %d uploads, %d downloads per token",
                  c->file, dev_stats.n_uploads, dev_stats.n_downloads);
            if (k == 0)
                CHECK(wrote == 2 + 9 * 5, "stories260K: %llu weights uploaded, it has 47", wrote);
            /* recorded once per structure: the one-token prompt and every
             * decode step share one graph (n_kv is padded to 32); a longer
             * prompt is one structure more */
            unsigned long long compiles = after.compiles - before.compiles;
            CHECK(compiles == (c->n_prompt == 1 ? 1u : 2u), "%s: %llu graphs recorded for %d evaluations", c->file,
                  compiles, c->n_gen);
            CHECK(after.replays - before.replays + compiles >= (unsigned long long)c->n_gen,
                  "%s: %llu replays", c->file, after.replays - before.replays);
        }
        if (!strcmp(scenario, "readable"))
            CHECK(dev_stats.n_splits == 1 && dev_stats.n_uploads == 0 && dev_stats.n_downloads == 1,
                  "%s: %d splits, %d uploads, %d downloads per token", c->file, dev_stats.n_splits,
                  dev_stats.n_uploads, dev_stats.n_downloads);
        if (!strcmp(scenario, "async"))
            CHECK(after.jobs_late > before.jobs_late, "no job completed late: not asynchronous");
        if (!strcmp(scenario, "decline")) {
            /* every rope runs on the cpu between device splits: one copy in
             * and one out per cpu split, plus ids and mask in and logits out */
            int cpu_splits = (dev_stats.n_splits - 1) / 2;
            CHECK(dev_stats.n_splits > 1 && dev_stats.n_splits % 2 == 1, "%s: %d splits", c->file, dev_stats.n_splits);
            CHECK(dev_stats.n_downloads == cpu_splits + 1 && dev_stats.n_uploads == cpu_splits + 2,
                  "%s: %d cpu splits, %d downloads, %d uploads", c->file, cpu_splits, dev_stats.n_downloads,
                  dev_stats.n_uploads);
        }
        if (!strcmp(scenario, "late"))
            CHECK(after.reads - before.reads <= (unsigned long long)(n_evals + 8) * 64,
                  "%s: %llu downloads", c->file, after.reads - before.reads);
        if (!strcmp(scenario, "oom")) {
            /* the plug-in counts over its life: the second model gets none */
            CHECK(after.weight_buffers - before.weight_buffers == (k == 0 ? 3u : 0u), "%s: %llu weights on the "
                  "device", c->file, after.weight_buffers - before.weight_buffers);
            CHECK(dev_stats.n_uploads > 3, "%s: weights left in host memory must be copied per token", c->file);
        }
        if (!strcmp(scenario, "lost") || !strcmp(scenario, "hang") || !strcmp(scenario, "lostload"))
            CHECK(dev_stats.n_uploads == 0, "%s: the lost device is still used (%d uploads)", c->file,
                  dev_stats.n_uploads);
    }
    if (!ran)
        test_skip(name, "no model files under ../shared/models");
    return test_finish(name);
}
