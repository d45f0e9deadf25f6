/* tport bench: prompt-processing and generation speed of a model, measured
 * the way llama.cpp's llama-bench measures them so the two can be compared:
 *   ppP  P prompt tokens evaluated as one batch from an empty cache,
 *   tgN  N single-token evaluations from an empty cache,
 * each preceded by one warm-up run (the whole prompt; one generated token),
 * token ids random except a leading BOS.  Reports the median tokens/s of -r
 * repetitions, the weight bytes one generated token streams through the
 * processor and the implied bandwidth. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "dist/dist.h"
#include "formats/model_file.h"
#include "tport/tport.h"

#define BENCH_MAX_TOKENS 1000000
#define BENCH_MAX_REPS 1000

typedef struct bench_opts {
    const char *model;
    const char *backend;
    int n_prompt, n_gen, reps, threads;
    bool json;
} bench_opts;

/* What the file says about its weights (all zero if it could not be read). */
typedef struct weight_stats {
    bool known;
    uint64_t n_params;
    uint64_t total_bytes;     /* every tensor in the file                  */
    uint64_t bytes_per_token; /* read once per generated token: every
                                 weight except the embedding table, of
                                 which one row is gathered (the whole
                                 table again when it doubles as output)  */
} weight_stats;

typedef struct bench_result {
    int n_tokens;
    int n_samples;
    double *ts;               /* tokens/s of each repetition               */
    double median, mean;
    /* staged copies between host and device memory per evaluation (per
     * token for tg) and the bytes they moved, from the last repetition */
    double copies, bytes_moved;
} bench_result;

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport bench -m FILE [-p N] [-n N] [-r REPS] [--threads N] [--backend NAME] [--isolate NAME] [--json]\n"
            "  -p N            prompt tokens evaluated as one batch, ppN (default 512, 0 = skip)\n"
            "  -n N            tokens generated one at a time, tgN (default 128, 0 = skip)\n"
            "  -r REPS         repetitions; the median is reported (default 5)\n"
            "  -t, --threads N threads (default: number of cores)\n"
            "  --backend NAME  force a backend\n"
            "  --isolate NAME  run the plug-in NAME (or all) in a helper process\n"
            "  --json          one JSON document on stdout\n");
    fputs(tport_dist_usage(), out);
}

static bool parse_int(const char *s, int lo, int hi, int *out) {
    if (!s || !*s)
        return false;
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi)
        return false;
    *out = (int)v;
    return true;
}

static int parse_args(int argc, char **argv, bench_opts *o) {
    *o = (bench_opts){.n_prompt = 512, .n_gen = 128, .reps = 5};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        } else if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            if (!v)
                return tool_fail(2, "bench: %s needs a file", a);
            o->model = v;
            i++;
        } else if (!strcmp(a, "--isolate")) {
            if (!v || tport_backend_isolate(v) != TPORT_STATUS_OK)
                return tool_fail(2, "bench: --isolate needs a backend name");
            i++;
        } else if (!strcmp(a, "--backend")) {
            if (!v)
                return tool_fail(2, "bench: --backend needs a name");
            o->backend = v;
            i++;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) {
            if (!parse_int(v, 0, BENCH_MAX_TOKENS, &o->n_prompt))
                return tool_fail(2, "bench: %s needs a number in [0, %d]", a, BENCH_MAX_TOKENS);
            i++;
        } else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) {
            if (!parse_int(v, 0, BENCH_MAX_TOKENS, &o->n_gen))
                return tool_fail(2, "bench: %s needs a number in [0, %d]", a, BENCH_MAX_TOKENS);
            i++;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions")) {
            if (!parse_int(v, 1, BENCH_MAX_REPS, &o->reps))
                return tool_fail(2, "bench: %s needs a number in [1, %d]", a, BENCH_MAX_REPS);
            i++;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            if (!parse_int(v, 1, 4096, &o->threads))
                return tool_fail(2, "bench: %s needs a number in [1, 4096]", a);
            i++;
        } else {
            usage(stderr);
            return tool_fail(2, "bench: unknown argument '%s'", a);
        }
    }
    if (!o->model) {
        usage(stderr);
        return tool_fail(2, "bench: no model (-m FILE)");
    }
    if (o->n_prompt == 0 && o->n_gen == 0)
        return tool_fail(2, "bench: nothing to measure (-p 0 and -n 0)");
    return 0;
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Deterministic token ids (xorshift64*), like llama-bench's rand(). */
static tport_token random_token(uint64_t *state, int32_t n_vocab) {
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (tport_token)((x * 2685821657736338717ULL >> 33) % (uint64_t)n_vocab);
}

static weight_stats read_weight_stats(const char *path) {
    weight_stats w = {0};
    tport_model_file *mf = NULL;
    if (tport_model_file_open(path, &mf) != TPORT_STATUS_OK)
        return w;
    const tport_mf_tensor *embd = NULL;
    bool has_output = false;
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        uint64_t n = 1;
        for (int d = 0; d < t->n_dims && d < 4; d++)
            n *= (uint64_t)(t->ne[d] > 0 ? t->ne[d] : 0);
        w.n_params += n;
        w.total_bytes += t->nbytes;
        if (!strcmp(t->name, "token_embd.weight"))
            embd = t;
        else
            w.bytes_per_token += t->nbytes;
        if (!strcmp(t->name, "output.weight"))
            has_output = true;
    }
    if (embd) {
        uint64_t rows = embd->n_dims >= 2 && embd->ne[1] > 0 ? (uint64_t)embd->ne[1] : 1;
        w.bytes_per_token += has_output ? embd->nbytes / rows : embd->nbytes;
    }
    w.known = true;
    tport_model_file_close(mf);
    return w;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void summarize(bench_result *r) {
    double *sorted = malloc((size_t)r->n_samples * sizeof *sorted);
    double sum = 0;
    for (int i = 0; i < r->n_samples; i++)
        sum += r->ts[i];
    r->mean = sum / r->n_samples;
    if (!sorted) {
        r->median = r->mean;
        return;
    }
    memcpy(sorted, r->ts, (size_t)r->n_samples * sizeof *sorted);
    qsort(sorted, (size_t)r->n_samples, sizeof *sorted, cmp_double);
    int h = r->n_samples / 2;
    r->median = r->n_samples % 2 ? sorted[h] : 0.5 * (sorted[h - 1] + sorted[h]);
    free(sorted);
}

/* Under mpirun, rank 0's pipeline (see src/dist); NULL otherwise. */
static tport_dist *dist;

/* One prompt-processing run: a fresh cache, then all n tokens in one call. */
static tport_status run_prompt(tport_session *s, const tport_model *m, tport_token *ids, int n,
                               uint64_t *rng) {
    int32_t n_vocab = tport_model_n_vocab(m);
    tport_token bos = tport_model_bos(m);
    for (int i = 0; i < n; i++)
        ids[i] = random_token(rng, n_vocab);
    if (bos >= 0)
        ids[0] = bos;
    tport_dist_reset(dist, s);
    return tport_dist_eval(dist, s, ids, n);
}

/* One generation run: a fresh cache, then n evaluations of one token. */
static tport_status run_gen(tport_session *s, const tport_model *m, int n, uint64_t *rng) {
    int32_t n_vocab = tport_model_n_vocab(m);
    tport_token tok = tport_model_bos(m);
    if (tok < 0)
        tok = random_token(rng, n_vocab);
    tport_dist_reset(dist, s);
    for (int i = 0; i < n; i++) {
        tport_status st = tport_dist_eval(dist, s, &tok, 1);
        if (st != TPORT_STATUS_OK)
            return st;
        tok = random_token(rng, n_vocab);
    }
    return TPORT_STATUS_OK;
}

static int measure(tport_session *s, const tport_model *m, bool prompt, int n, int reps,
                   bench_result *r) {
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    tport_token *ids = prompt ? malloc((size_t)n * sizeof *ids) : NULL;
    r->n_tokens = n;
    r->n_samples = reps;
    r->ts = calloc((size_t)reps, sizeof *r->ts);
    if ((prompt && !ids) || !r->ts) {
        free(ids);
        return tool_fail(1, "bench: out of memory");
    }
    /* Warm-up, as llama-bench: the whole prompt, or one generated token. */
    tport_status st = prompt ? run_prompt(s, m, ids, n, &rng) : run_gen(s, m, 1, &rng);
    for (int i = 0; i < reps && st == TPORT_STATUS_OK; i++) {
        double t0 = now_seconds();
        st = prompt ? run_prompt(s, m, ids, n, &rng) : run_gen(s, m, n, &rng);
        double dt = now_seconds() - t0;
        r->ts[i] = dt > 0 ? n / dt : 0;
    }
    free(ids);
    if (st != TPORT_STATUS_OK)
        return tool_fail(1, "bench: evaluation failed: %s", tport_last_error());
    tport_sched_stats total;
    int32_t n_evals = 0;
    if (tport_session_stats(s, NULL, &total, &n_evals) == TPORT_STATUS_OK && n_evals > 0) {
        r->copies = (double)(total.n_uploads + total.n_downloads) / n_evals;
        r->bytes_moved = (double)(total.bytes_up + total.bytes_down) / n_evals;
    }
    summarize(r);
    return 0;
}

static void print_json_result(const char *key, const bench_result *r, const weight_stats *w,
                              bool last) {
    printf("  \"%s\": {\"n_tokens\": %d, \"median_ts\": %.6g, \"avg_ts\": %.6g, \"samples_ts\": [",
           key, r->n_tokens, r->median, r->mean);
    for (int i = 0; i < r->n_samples; i++)
        printf("%s%.6g", i ? ", " : "", r->ts[i]);
    printf("]");
    if (w && w->known)
        printf(", \"gb_per_s\": %.6g", r->median * (double)w->bytes_per_token / 1e9);
    printf(", \"copies_per_eval\": %.6g, \"bytes_moved_per_eval\": %.6g", r->copies, r->bytes_moved);
    printf("}%s\n", last ? "" : ",");
}

static void print_json(const bench_opts *o, const tport_model *m, const weight_stats *w,
                       const bench_result *pp, const bench_result *tg) {
    printf("{\n  \"model\": ");
    tool_json_string(stdout, o->model);
    printf(",\n  \"backend\": ");
    const char *be = o->backend ? o->backend : tport_backend_name(0);
    if (be)
        tool_json_string(stdout, be);
    else
        printf("null");
    printf(",\n  \"threads\": %d,\n  \"n_vocab\": %" PRId32 ",\n", o->threads, tport_model_n_vocab(m));
    if (w->known)
        printf("  \"n_params\": %" PRIu64 ",\n  \"weight_bytes\": %" PRIu64
               ",\n  \"bytes_per_token\": %" PRIu64 ",\n",
               w->n_params, w->total_bytes, w->bytes_per_token);
    else
        printf("  \"n_params\": null,\n  \"weight_bytes\": null,\n  \"bytes_per_token\": null,\n");
    printf("  \"n_prompt\": %d,\n  \"n_gen\": %d,\n  \"reps\": %d%s\n", o->n_prompt, o->n_gen,
           o->reps, pp->n_samples || tg->n_samples ? "," : "");
    if (pp->n_samples)
        print_json_result("pp", pp, NULL, tg->n_samples == 0);
    if (tg->n_samples)
        print_json_result("tg", tg, w, true);
    printf("}\n");
}

static void print_text(const bench_opts *o, const tport_model *m, const weight_stats *w,
                       const bench_result *pp, const bench_result *tg) {
    const char *be = o->backend ? o->backend : tport_backend_name(0);
    printf("model    %s (n_vocab %" PRId32 ")\n", o->model, tport_model_n_vocab(m));
    if (w->known)
        printf("weights  %.2f M params, %.2f MiB; %.2f MiB streamed per generated token\n",
               (double)w->n_params / 1e6, (double)w->total_bytes / 1048576.0,
               (double)w->bytes_per_token / 1048576.0);
    printf("backend  %s, %d threads, %d repetitions (median; warm-up excluded)\n\n",
           be ? be : "?", o->threads, o->reps);
    printf("%-8s %12s %12s\n", "test", "t/s median", "t/s mean");
    if (pp->n_samples)
        printf("pp%-6d %12.2f %12.2f\n", pp->n_tokens, pp->median, pp->mean);
    if (tg->n_samples) {
        printf("tg%-6d %12.2f %12.2f", tg->n_tokens, tg->median, tg->mean);
        if (w->known)
            printf("   (%.2f GB/s of weights)", tg->median * (double)w->bytes_per_token / 1e9);
        printf("\n");
    }
    if (pp->copies > 0 || tg->copies > 0)
        printf("\nstaged copies between host and device memory: %.1f per prompt (%.0f bytes), %.1f per "
               "generated token (%.0f bytes)\n", pp->copies, pp->bytes_moved, tg->copies, tg->bytes_moved);
}

int cmd_bench(int argc, char **argv) {
    bench_opts o;
    int rc = tport_dist_begin("bench", &argc, argv, &dist);
    if (rc)
        return rc;
    rc = parse_args(argc, argv, &o);
    if (rc)
        return tport_dist_end(dist, rc < 0 ? 0 : rc);
    if (o.threads == 0) { /* report the count actually used, not "default" */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        o.threads = n > 0 && n < 4096 ? (int)n : 1;
    }

    tport_model_params mp = {.backend = o.backend, .n_threads = o.threads};
    bool stop = false;
    if (dist && (rc = tport_dist_start(dist, o.model, &mp, &stop), stop))
        return tport_dist_end(dist, rc);
    tport_model *m = tport_dist_model_load(dist, o.model, &mp);
    if (!m)
        return tport_dist_end(dist, tool_fail(1, "bench: %s", tport_last_error()));
    weight_stats w = read_weight_stats(o.model);

    /* The cache holds the prompt and the generated tokens, as llama-bench's
     * n_ctx = n_prompt + n_gen; the prompt goes in as one batch. */
    tport_session_params sp = {
        .n_ctx = (int32_t)(o.n_prompt + o.n_gen),
        .n_batch = o.n_prompt > 0 ? o.n_prompt : 1,
        .n_threads = o.threads,
    };
    tport_session *s = tport_dist_session_new(dist, m, &sp);
    if (!s) {
        tport_model_free(m);
        return tport_dist_end(dist, tool_fail(1, "bench: %s", tport_last_error()));
    }

    bench_result pp = {0}, tg = {0};
    rc = 0;
    if (o.n_prompt > 0)
        rc = measure(s, m, true, o.n_prompt, o.reps, &pp);
    if (!rc && o.n_gen > 0)
        rc = measure(s, m, false, o.n_gen, o.reps, &tg);
    if (!rc) {
        if (o.json)
            print_json(&o, m, &w, &pp, &tg);
        else
            print_text(&o, m, &w, &pp, &tg);
    }
    free(pp.ts);
    free(tg.ts);
    tport_session_free(s);
    tport_model_free(m);
    return tport_dist_end(dist, rc);
}
