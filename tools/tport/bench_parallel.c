/* tport bench --parallel N: the speed of N sequences evaluated together,
 * as tport serve's continuous batching runs its slots.  N sessions each
 * get their prompt (all N prompts in one tport_batch_eval), then every
 * generation step evaluates one token of each of the N sequences in one
 * tport_batch_eval: the weights are read once a step for all of them, so
 * the aggregate tokens/s against one sequence's says what a step of N
 * costs beyond the weight reads.  One sequence is measured the same way
 * (a batch of one) for that comparison. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "commands.h"

typedef struct par_ctx {
    tport_model *m;
    tport_session **s;
    tport_batch_item *items;
    tport_token *ids;  /* room for n sequences' prompts or depths */
    tport_token *toks; /* each sequence's next generated token */
    int n, n_prompt, n_gen, depth;
    size_t stride;     /* ids of one sequence */
    uint64_t rng;
} par_ctx;

static void random_ids(par_ctx *c, tport_token *ids, int n, bool bos_first) {
    int32_t n_vocab = tport_model_n_vocab(c->m);
    for (int i = 0; i < n; i++)
        ids[i] = bench_random_token(&c->rng, n_vocab);
    if (bos_first && n > 0 && tport_model_bos(c->m) >= 0)
        ids[0] = tport_model_bos(c->m);
}

/* The first n sessions emptied and filled with `depth` tokens (BOS first),
 * one at a time: not timed. */
static tport_status start(par_ctx *c, int n) {
    for (int i = 0; i < n; i++) {
        tport_session_reset(c->s[i]);
        if (!c->depth)
            continue;
        random_ids(c, c->ids, c->depth, true);
        tport_status st = tport_session_eval(c->s[i], c->ids, c->depth);
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}

/* The prompts of the first n sessions in one batch. */
static tport_status prompts(par_ctx *c, tport_batch *b, int n) {
    for (int i = 0; i < n; i++) {
        tport_token *ids = c->ids + (size_t)i * c->stride;
        random_ids(c, ids, c->n_prompt, c->depth == 0);
        c->items[i] = (tport_batch_item){.session = c->s[i], .ids = ids, .n = c->n_prompt};
    }
    return tport_batch_eval(b, c->items, n);
}

/* `steps` steps of one token of each of the first n sessions. */
static tport_status generate(par_ctx *c, tport_batch *b, int n, int steps) {
    int32_t n_vocab = tport_model_n_vocab(c->m);
    for (int i = 0; i < n; i++) {
        bool first = tport_session_pos(c->s[i]) == 0 && tport_model_bos(c->m) >= 0;
        c->toks[i] = first ? tport_model_bos(c->m) : bench_random_token(&c->rng, n_vocab);
    }
    for (int k = 0; k < steps; k++) {
        for (int i = 0; i < n; i++)
            c->items[i] = (tport_batch_item){.session = c->s[i], .ids = &c->toks[i], .n = 1};
        tport_status st = tport_batch_eval(b, c->items, n);
        if (st)
            return st;
        for (int i = 0; i < n; i++)
            c->toks[i] = bench_random_token(&c->rng, n_vocab);
    }
    return TPORT_STATUS_OK;
}

/* One test of the first n sessions: pp (the prompts, timed) or tg (the
 * prompts untimed, then n_gen timed steps); a warm-up run first. */
static int measure(par_ctx *c, int n, bool pp, int reps, bench_result *r) {
    /* a batch keeps the graph of its last shape: prompts and steps apart */
    tport_batch *bp = tport_batch_new(c->m), *bg = tport_batch_new(c->m);
    r->n_tokens = pp ? c->n_prompt : c->n_gen;
    r->n_samples = reps;
    r->ts = calloc((size_t)reps, sizeof *r->ts);
    if (!bp || !bg || !r->ts) {
        tport_batch_free(bp);
        tport_batch_free(bg);
        return tool_fail(1, "bench: out of memory");
    }
    tport_status st = TPORT_STATUS_OK;
    for (int i = -1; i < reps && !st; i++) { /* -1: the warm-up */
        st = start(c, n);
        if (!st && !pp && c->n_prompt)
            st = prompts(c, bp, n);
        if (st)
            break;
        double t0 = bench_now();
        st = pp ? prompts(c, bp, n) : generate(c, bg, n, i < 0 ? 1 : c->n_gen);
        double dt = bench_now() - t0;
        if (i >= 0)
            r->ts[i] = dt > 0 ? (double)n * r->n_tokens / dt : 0;
    }
    tport_batch_free(bp);
    tport_batch_free(bg);
    if (st)
        return tool_fail(1, "bench: --parallel %d: evaluation failed: %s", n, tport_last_error());
    tport_sched_stats total;
    int32_t n_evals = 0;
    if (tport_session_stats(c->s[0], NULL, &total, &n_evals) == TPORT_STATUS_OK && n_evals > 0) {
        r->copies = (double)(total.n_uploads + total.n_downloads) / n_evals;
        r->bytes_moved = (double)(total.bytes_up + total.bytes_down) / n_evals;
    }
    bench_backends_that_ran(c->s[0], r->ran_on, sizeof r->ran_on);
    bench_summarize(r);
    return 0;
}

int bench_parallel_run(tport_model *m, const tport_session_params *sp, int n_par, int n_prompt, int n_gen,
                       int depth, int reps, bench_parallel *out) {
    *out = (bench_parallel){.n = n_par};
    par_ctx c = {.m = m, .n = n_par, .n_prompt = n_prompt, .n_gen = n_gen, .depth = depth,
                 .rng = 0x9E3779B97F4A7C15ULL};
    c.stride = (size_t)(n_prompt > depth ? n_prompt : depth) + 1;
    c.s = calloc((size_t)n_par, sizeof *c.s);
    c.items = calloc((size_t)n_par, sizeof *c.items);
    c.toks = calloc((size_t)n_par, sizeof *c.toks);
    c.ids = calloc((size_t)n_par * c.stride, sizeof *c.ids);
    int rc = !c.s || !c.items || !c.toks || !c.ids ? tool_fail(1, "bench: out of memory") : 0;
    for (int i = 0; i < n_par && !rc; i++)
        if (!(c.s[i] = tport_session_new(m, sp)))
            rc = tool_fail(1, "bench: --parallel %d: session %d: %s", n_par, i + 1, tport_last_error());
    if (!rc && n_prompt > 0)
        rc = measure(&c, n_par, true, reps, &out->pp);
    if (!rc && n_gen > 0)
        rc = measure(&c, n_par, false, reps, &out->tg);
    if (!rc && n_gen > 0 && n_par > 1)
        rc = measure(&c, 1, false, reps, &out->single);
    for (int i = 0; c.s && i < n_par; i++)
        tport_session_free(c.s[i]);
    free(c.s);
    free(c.items);
    free(c.toks);
    free(c.ids);
    return rc;
}

void bench_parallel_free(bench_parallel *bp) {
    free(bp->pp.ts);
    free(bp->tg.ts);
    free(bp->single.ts);
}
