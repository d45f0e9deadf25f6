/* tport bench: prompt-processing and generation speed of a model, measured
 * the way llama.cpp's llama-bench measures them so the two can be compared:
 *   ppP  P prompt tokens evaluated as one batch from an empty cache,
 *   tgN  N single-token evaluations from an empty cache,
 * each preceded by one warm-up run (the whole prompt; one generated token),
 * token ids random except a leading BOS.  With -d N (llama-bench's -d)
 * every run first fills the cache with N tokens, untimed, so the test
 * measures at depth N.  Reports the median tokens/s of -r
 * repetitions, the weight bytes one generated token streams through the
 * processor and the implied bandwidth.  With --parallel N the tests run
 * N sequences together (bench_parallel.c). */
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

#include "bench.h"
#include "commands.h"
#include "dist/dist.h"
#include "tport/model_file.h"
#include "tport/tport.h"

#define BENCH_MAX_TOKENS 1000000
#define BENCH_MAX_REPS 1000

typedef struct bench_opts {
    const char *model;
    const char *backend;
    int n_prompt, n_gen, reps, threads, depth;
    int parallel; /* --parallel N, 0 when not given */
    bool json, kv_f32;
} bench_opts;

/* What the file says about its weights (all zero if it could not be read). */
typedef struct weight_stats {
    bool known;
    uint64_t n_params;
    uint64_t total_bytes;     /* every tensor in the file                  */
    uint64_t bytes_per_token; /* read once per generated token: every
                                 weight except the embedding table, of
                                 which one row is gathered (the whole
                                 table again when it doubles as output);
                                 of a mixture's expert stacks, the share
                                 of the experts a token uses            */
} weight_stats;

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport bench -m FILE [-p N] [-n N] [-d N] [-r REPS] [--threads N] [--kv-type f16|f32]\n"
            "                   [--parallel N] [--backend NAME] [--isolate NAME] [--json]\n"
            "  -p N            prompt tokens evaluated as one batch, ppN (default 512, 0 = skip)\n"
            "  -n N            tokens generated one at a time, tgN (default 128, 0 = skip)\n"
            "  -d N            depth: fill the cache with N tokens (untimed) before each run (default 0)\n"
            "  -r REPS         repetitions; the median is reported (default 5)\n"
            "  --parallel N    N sequences together (as tport serve's slots): ppP evaluates their N\n"
            "                  prompts in one batch, tgN runs after the prompts, each step one token\n"
            "                  of every sequence; t/s counts all N (aggregate), and tg compares a step\n"
            "                  with one of a single sequence (1..%d)\n"
            "  --kv-type T     KV cache type, f16 (default, as llama.cpp) or f32\n"
            "  -t, --threads N threads (default: number of cores)\n"
            "  --backend NAME  force a backend\n"
            "  --isolate NAME  run the plug-in NAME (or all) in a helper process\n"
            "  --json          one JSON document on stdout\n",
            BENCH_MAX_PARALLEL);
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
        } else if (!strcmp(a, "-d") || !strcmp(a, "--n-depth")) {
            if (!parse_int(v, 0, BENCH_MAX_TOKENS, &o->depth))
                return tool_fail(2, "bench: %s needs a number in [0, %d]", a, BENCH_MAX_TOKENS);
            i++;
        } else if (!strcmp(a, "--parallel")) {
            if (!parse_int(v, 1, BENCH_MAX_PARALLEL, &o->parallel))
                return tool_fail(2, "bench: --parallel needs a number of sequences in [1, %d]", BENCH_MAX_PARALLEL);
            i++;
        } else if (!strcmp(a, "--kv-type")) {
            if (!v || (strcmp(v, "f16") && strcmp(v, "f32")))
                return tool_fail(2, "bench: --kv-type needs f16 or f32");
            o->kv_f32 = !strcmp(v, "f32");
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

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Deterministic token ids (xorshift64*), like llama-bench's rand(). */
tport_token bench_random_token(uint64_t *state, int32_t n_vocab) {
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
    /* a token reads n_used of a stack's n_expert experts (the generation
     * bound of a mixture is set by its active bytes) */
    uint64_t n_expert = tool_arch_u32(mf, mf->arch, "expert_count");
    uint64_t n_used = tool_arch_u32(mf, mf->arch, "expert_used_count");
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
        else if (n_expert > 1 && n_used && n_used < n_expert && t->n_dims >= 3 && (uint64_t)t->ne[2] == n_expert)
            w.bytes_per_token += t->nbytes / n_expert * n_used;
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

void bench_summarize(bench_result *r) {
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

/* A fresh cache holding `depth` tokens (BOS first); not timed. */
static tport_status fill_depth(tport_session *s, const tport_model *m, tport_token *ids, int depth,
                               uint64_t *rng) {
    tport_dist_reset(dist, s);
    if (depth == 0)
        return TPORT_STATUS_OK;
    int32_t n_vocab = tport_model_n_vocab(m);
    for (int i = 0; i < depth; i++)
        ids[i] = bench_random_token(rng, n_vocab);
    if (tport_model_bos(m) >= 0)
        ids[0] = tport_model_bos(m);
    return tport_dist_eval(dist, s, ids, depth);
}

/* One prompt-processing run: all n tokens in one call (BOS first when
 * the cache is empty). */
static tport_status run_prompt(tport_session *s, const tport_model *m, tport_token *ids, int n, bool first,
                               uint64_t *rng) {
    int32_t n_vocab = tport_model_n_vocab(m);
    tport_token bos = tport_model_bos(m);
    for (int i = 0; i < n; i++)
        ids[i] = bench_random_token(rng, n_vocab);
    if (bos >= 0 && first)
        ids[0] = bos;
    return tport_dist_eval(dist, s, ids, n);
}

/* One generation run: n evaluations of one token. */
static tport_status run_gen(tport_session *s, const tport_model *m, int n, bool first, uint64_t *rng) {
    int32_t n_vocab = tport_model_n_vocab(m);
    tport_token tok = first ? tport_model_bos(m) : -1;
    if (tok < 0)
        tok = bench_random_token(rng, n_vocab);
    for (int i = 0; i < n; i++) {
        tport_status st = tport_dist_eval(dist, s, &tok, 1);
        if (st != TPORT_STATUS_OK)
            return st;
        tok = bench_random_token(rng, n_vocab);
    }
    return TPORT_STATUS_OK;
}

/* The backends that ran nodes of the session's last evaluation, in the
 * order tport_session_placement lists them, "+" between names. */
void bench_backends_that_ran(const tport_session *s, char *out, size_t cap) {
    const char *listed[16];
    int n_listed = 0;
    size_t len = 0;
    out[0] = '\0';
    const char *be = NULL;
    for (int32_t i = 0; tport_session_placement(s, i, &be, NULL) > 0 && n_listed < 16; i++) {
        bool seen = !be;
        for (int j = 0; !seen && j < n_listed; j++)
            seen = !strcmp(listed[j], be);
        if (seen || len + strlen(be) + 2 > cap)
            continue;
        listed[n_listed++] = be;
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? "+" : "", be);
    }
}

static int measure(tport_session *s, const tport_model *m, bool prompt, int n, int depth, int reps,
                   bench_result *r) {
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    size_t n_ids = (size_t)(prompt && n > depth ? n : depth) + 1;
    tport_token *ids = malloc(n_ids * sizeof *ids);
    r->n_tokens = n;
    r->n_samples = reps;
    r->ts = calloc((size_t)reps, sizeof *r->ts);
    if (!ids || !r->ts) {
        free(ids);
        return tool_fail(1, "bench: out of memory");
    }
    /* Warm-up, as llama-bench: the whole prompt, or one generated token. */
    tport_status st = fill_depth(s, m, ids, depth, &rng);
    if (st == TPORT_STATUS_OK)
        st = prompt ? run_prompt(s, m, ids, n, depth == 0, &rng) : run_gen(s, m, 1, depth == 0, &rng);
    for (int i = 0; i < reps && st == TPORT_STATUS_OK; i++) {
        st = fill_depth(s, m, ids, depth, &rng);
        if (st != TPORT_STATUS_OK)
            break;
        double t0 = bench_now();
        st = prompt ? run_prompt(s, m, ids, n, depth == 0, &rng) : run_gen(s, m, n, depth == 0, &rng);
        double dt = bench_now() - t0;
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
    bench_backends_that_ran(s, r->ran_on, sizeof r->ran_on);
    bench_summarize(r);
    return 0;
}

/* The weights are read once a step: with --parallel N a step makes N
 * tokens, so per_step is N for its tg (1 otherwise). */
static void print_json_result(const char *key, const bench_result *r, const weight_stats *w, int per_step,
                              bool last) {
    printf("  \"%s\": {\"n_tokens\": %d, \"median_ts\": %.6g, \"avg_ts\": %.6g, \"samples_ts\": [",
           key, r->n_tokens, r->median, r->mean);
    for (int i = 0; i < r->n_samples; i++)
        printf("%s%.6g", i ? ", " : "", r->ts[i]);
    printf("]");
    if (w && w->known)
        printf(", \"gb_per_s\": %.6g", r->median / per_step * (double)w->bytes_per_token / 1e9);
    printf(", \"copies_per_eval\": %.6g, \"bytes_moved_per_eval\": %.6g, \"ran_on\": ", r->copies,
           r->bytes_moved);
    tool_json_string(stdout, r->ran_on);
    printf("}%s\n", last ? "" : ",");
}

/* --parallel N against one sequence: what a step of N costs in steps of
 * one (N x one's t/s / N's t/s), and the aggregate speed-up. */
static double step_cost(const bench_parallel *bp) {
    return bp->tg.median > 0 ? bp->n * bp->single.median / bp->tg.median : 0;
}

static void print_json(const bench_opts *o, const tport_model *m, const weight_stats *w,
                       const bench_result *pp, const bench_result *tg, const bench_parallel *bp) {
    printf("{\n  \"model\": ");
    tool_json_string(stdout, o->model);
    /* forced with --backend, or "auto": the best backend for each
     * operation (each test's ran_on says which ran) */
    printf(",\n  \"backend\": ");
    tool_json_string(stdout, o->backend ? o->backend : "auto");
    printf(",\n  \"threads\": %d,\n  \"n_vocab\": %" PRId32 ",\n", o->threads, tport_model_n_vocab(m));
    if (w->known)
        printf("  \"n_params\": %" PRIu64 ",\n  \"weight_bytes\": %" PRIu64
               ",\n  \"bytes_per_token\": %" PRIu64 ",\n",
               w->n_params, w->total_bytes, w->bytes_per_token);
    else
        printf("  \"n_params\": null,\n  \"weight_bytes\": null,\n  \"bytes_per_token\": null,\n");
    if (bp)
        printf("  \"parallel\": %d,\n", bp->n);
    bool single = bp && bp->single.n_samples;
    if (single)
        printf("  \"step_cost_vs_single\": %.6g,\n  \"speedup_vs_single\": %.6g,\n", step_cost(bp),
               bp->single.median > 0 ? bp->tg.median / bp->single.median : 0);
    printf("  \"n_prompt\": %d,\n  \"n_gen\": %d,\n  \"n_depth\": %d,\n  \"kv_type\": \"%s\",\n"
           "  \"reps\": %d%s\n", o->n_prompt, o->n_gen, o->depth, o->kv_f32 ? "f32" : "f16",
           o->reps, pp->n_samples || tg->n_samples ? "," : "");
    if (pp->n_samples)
        print_json_result("pp", pp, NULL, 1, tg->n_samples == 0);
    if (tg->n_samples)
        print_json_result("tg", tg, w, bp ? bp->n : 1, !single);
    if (single)
        print_json_result("tg_single", &bp->single, w, 1, true);
    printf("}\n");
}

static void print_text(const bench_opts *o, const tport_model *m, const weight_stats *w,
                       const bench_result *pp, const bench_result *tg, const bench_parallel *bp) {
    printf("model    %s (n_vocab %" PRId32 ")\n", o->model, tport_model_n_vocab(m));
    if (w->known)
        printf("weights  %.2f M params, %.2f MiB; %.2f MiB streamed per generated token\n",
               (double)w->n_params / 1e6, (double)w->total_bytes / 1048576.0,
               (double)w->bytes_per_token / 1048576.0);
    printf("backend  %s, %d threads, %d repetitions (median; warm-up excluded), %s KV cache\n",
           o->backend ? o->backend : "auto (the best for each operation)", o->threads, o->reps,
           o->kv_f32 ? "f32" : "f16");
    if (bp)
        printf("parallel %d sequences a step (t/s of all of them; tg after their prompts)\n", bp->n);
    printf("\n");
    char at[48] = "";
    int len = 0;
    if (bp)
        len = snprintf(at, sizeof at, " x%d", bp->n);
    if (o->depth)
        snprintf(at + len, sizeof at - (size_t)len, " @ d%d", o->depth);
    printf("%-16s %12s %12s\n", "test", "t/s median", "t/s mean");
    char name[64];
    if (pp->n_samples) {
        snprintf(name, sizeof name, "pp%d%s", pp->n_tokens, at);
        printf("%-16s %12.2f %12.2f\n", name, pp->median, pp->mean);
    }
    const bench_result *tgs[2] = {tg, bp && bp->single.n_samples ? &bp->single : NULL};
    for (int k = 0; k < 2; k++) {
        const bench_result *r = tgs[k];
        if (!r || !r->n_samples)
            continue;
        if (k == 1)
            snprintf(name, sizeof name, "tg%d x1%s", r->n_tokens, o->depth ? at + len : "");
        else
            snprintf(name, sizeof name, "tg%d%s", r->n_tokens, at);
        printf("%-16s %12.2f %12.2f", name, r->median, r->mean);
        if (w->known)
            printf("   (%.2f GB/s of weights)",
                   r->median / (k == 0 && bp ? bp->n : 1) * (double)w->bytes_per_token / 1e9);
        printf("\n");
    }
    if (tgs[1])
        printf("\na step of %d sequences costs %.2f steps of one; %.2fx one sequence's t/s\n", bp->n,
               step_cost(bp), bp->single.median > 0 ? tg->median / bp->single.median : 0);
    printf("\nran on  ");
    if (pp->n_samples)
        printf(" pp: %s%s", pp->ran_on[0] ? pp->ran_on : "?", tg->n_samples ? ";" : "");
    if (tg->n_samples)
        printf(" tg: %s", tg->ran_on[0] ? tg->ran_on : "?");
    printf("\n");
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
    if (dist && o.parallel)
        return tport_dist_end(dist, tool_fail(2, "bench: --parallel cannot run under mpirun (a pipeline stage "
                                                 "cannot batch sequences)"));
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

    /* The cache holds the depth, the prompt and the generated tokens, as
     * llama-bench's n_ctx = n_depth + n_prompt + n_gen; the prompt goes in
     * as one batch, the depth in batches of up to 512. */
    int fill_batch = o.depth < 512 ? o.depth : 512;
    tport_session_params sp = {
        .n_ctx = (int32_t)(o.depth + o.n_prompt + o.n_gen),
        .n_batch = o.n_prompt > fill_batch ? o.n_prompt : fill_batch > 0 ? fill_batch : 1,
        .n_threads = o.threads,
        .kv_f32 = o.kv_f32,
    };
    tport_session *s = tport_dist_session_new(dist, m, &sp);
    if (!s) {
        tport_model_free(m);
        return tport_dist_end(dist, tool_fail(1, "bench: %s", tport_last_error()));
    }

    bench_result pp = {0}, tg = {0};
    bench_parallel par = {0}, *bp = o.parallel ? &par : NULL;
    rc = 0;
    if (bp) {
        rc = bench_parallel_run(m, &sp, o.parallel, o.n_prompt, o.n_gen, o.depth, o.reps, bp);
        pp = par.pp;
        tg = par.tg;
    } else {
        if (o.n_prompt > 0)
            rc = measure(s, m, true, o.n_prompt, o.depth, o.reps, &pp);
        if (!rc && o.n_gen > 0)
            rc = measure(s, m, false, o.n_gen, o.depth, o.reps, &tg);
    }
    if (!rc) {
        if (o.json)
            print_json(&o, m, &w, &pp, &tg, bp);
        else
            print_text(&o, m, &w, &pp, &tg, bp);
    }
    if (bp) {
        bench_parallel_free(bp);
    } else {
        free(pp.ts);
        free(tg.ts);
    }
    tport_session_free(s);
    tport_model_free(m);
    return tport_dist_end(dist, rc);
}
