/* tport imatrix: an importance matrix computed as llama.cpp's llama-imatrix
 * computes it, in the file it writes (imatrix_file.h), so that either
 * quantizer (tport convert --imatrix, llama-quantize) takes either's file:
 *  - the text is tokenized whole and cut into chunks of --ctx tokens (the
 *    tail is dropped; at least 2 chunks' worth is needed), each evaluated
 *    from an empty cache with its first token replaced by BOS when the
 *    vocabulary adds one, every token's logits asked for (so the last layer
 *    runs on every token, as llama-imatrix's batches make it);
 *  - for each product with a weight (tport_session_watch_weights): the
 *    squares of its input's columns are summed per matrix.  A plain product
 *    counts its rows once (one count per weight); an expert product counts
 *    each row for the expert it went to.  As llama-imatrix: only weights
 *    named blk.* (and output.weight with --process-output), plain products
 *    of fewer than 16 rows are left out, and a non-finite sum is an error.
 *    Rows are what llama-imatrix's micro-batches (-ub 512) hold: with
 *    chunks of up to 1024 tokens it evaluates several chunks per batch
 *    (-b 2048) as parallel sequences, at least 16 rows a product, and
 *    tport evaluates each chunk in one batch; a longer chunk goes in
 *    batches of 512 in both, so a tail of fewer than 16 tokens is left
 *    out of the plain products in both;
 *  - the chunk count written is the largest count over the chunk size;
 *  - unless --no-ppl, the perplexity as llama-imatrix prints it (as tport
 *    perplexity computes it): "[i]PPL," per chunk, then the final estimate. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "imatrix_file.h"
#include "tport/tport.h"

#define DEFAULT_CTX 512
#define LLAMA_UBATCH 512 /* llama-imatrix's default micro-batch (-ub)      */
#define LLAMA_PARALLEL 1024 /* chunks up to this share a batch (-b 2048)   */
#define MIN_ROWS 16      /* llama-imatrix leaves out smaller plain products */

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport imatrix -m FILE -f TEXT [-o FILE] [options]\n"
            "\n"
            "The importance matrix of a model on a text, as llama.cpp's llama-imatrix computes\n"
            "it and in its file (GGUF by default, the legacy .dat with --output-format dat),\n"
            "for tport convert --imatrix or llama-quantize --imatrix.\n"
            "\n"
            "  -m, --model FILE    model file (any format tport run reads)\n"
            "  -f, --file TEXT     the text (UTF-8); it needs at least 2 x --ctx tokens\n"
            "  -o, --output FILE   where to write it (default imatrix.gguf)\n"
            "  --output-format F   gguf (default) or dat\n"
            "  --ctx N             tokens per chunk (default %d, as llama-imatrix's -c)\n"
            "  --chunks N          at most N chunks (default: all)\n"
            "  --from-chunk N      skip the text's first N chunks (--chunk N too)\n"
            "  --process-output    also collect output.weight\n"
            "  --no-ppl            do not print the perplexity (printed by default, as\n"
            "                      llama-imatrix: \"[i]PPL,\" per chunk, then the final estimate)\n"
            "  --threads N         threads, 0 = all cores (default 0)\n"
            "  --kv-type T         KV cache type: f16 (default, as llama.cpp) or f32\n"
            "  --backend NAME      force a backend (default: the best for each operation)\n",
            DEFAULT_CTX);
}

typedef struct imx_opts {
    const char *model, *file, *out, *backend;
    long ctx, chunks, from_chunk, threads;
    bool kv_f32, dat, process_output, no_ppl;
} imx_opts;

static int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    return tool_parse_long("imatrix", flag, s, lo, hi, out);
}

static bool is(const char *a, const char *s1, const char *s2) { return !strcmp(a, s1) || (s2 && !strcmp(a, s2)); }

/* 0 when parsed, -1 after --help, else the exit status. */
static int parse_args(int argc, char **argv, imx_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is(a, "-h", "--help")) {
            usage(stdout);
            return -1;
        }
        if (is(a, "--process-output", NULL) || is(a, "--no-ppl", "--ppl")) {
            o->process_output |= !strcmp(a, "--process-output");
            o->no_ppl = !strcmp(a, "--no-ppl") || (o->no_ppl && strcmp(a, "--ppl"));
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = is(a, "-m", "--model") || is(a, "-f", "--file") || is(a, "-o", "--output") ||
                     is(a, "--output-format", NULL) || is(a, "--ctx", "-c") || is(a, "--chunks", NULL) ||
                     is(a, "--from-chunk", "--chunk") || is(a, "--threads", "-t") || is(a, "--kv-type", NULL) ||
                     is(a, "--backend", NULL);
        if (!takes)
            return tool_fail(2, "imatrix: unknown option '%s' (see tport imatrix --help)", a);
        if (!v)
            return tool_fail(2, "imatrix: missing value after %s", a);
        i++;
        int rc = 0;
        if (is(a, "-m", "--model"))
            o->model = v;
        else if (is(a, "-f", "--file"))
            o->file = v;
        else if (is(a, "-o", "--output"))
            o->out = v;
        else if (is(a, "--backend", NULL))
            o->backend = v;
        else if (is(a, "--ctx", "-c"))
            rc = parse_long(a, v, 1, 1 << 20, &o->ctx);
        else if (is(a, "--chunks", NULL))
            rc = parse_long(a, v, 1, 1 << 30, &o->chunks);
        else if (is(a, "--from-chunk", "--chunk"))
            rc = parse_long(a, v, 0, 1 << 30, &o->from_chunk);
        else if (is(a, "--threads", "-t"))
            rc = parse_long(a, v, 0, 1024, &o->threads);
        else if (is(a, "--output-format", NULL)) {
            if (strcmp(v, "gguf") && strcmp(v, "dat"))
                return tool_fail(2, "imatrix: --output-format needs gguf or dat, not '%s'", v);
            o->dat = !strcmp(v, "dat");
        } else if (strcmp(v, "f16") && strcmp(v, "f32"))
            return tool_fail(2, "imatrix: --kv-type needs f16 or f32, not '%s'", v);
        else
            o->kv_f32 = !strcmp(v, "f32");
        if (rc)
            return rc;
    }
    if (!o->model || !o->file)
        return tool_fail(2, "imatrix: give a model (-m FILE) and a text (-f FILE); see --help");
    return 0;
}

/* What the watch collects: one entry per weight. */
typedef struct collector {
    tport_imatrix_entry *e;
    int n, cap, last;
    int64_t min_rows; /* plain products of fewer rows are left out */
    bool process_output;
} collector;

static tport_imatrix_entry *entry_for(collector *c, const tport_weight_input *in) {
    if (c->last < c->n && !strcmp(c->e[c->last].name, in->weight))
        return &c->e[c->last];
    for (int i = 0; i < c->n; i++)
        if (!strcmp(c->e[i].name, in->weight))
            return &c->e[c->last = i];
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        tport_imatrix_entry *e = realloc(c->e, sizeof *e * (size_t)cap);
        if (!e)
            return NULL;
        c->e = e;
        c->cap = cap;
    }
    tport_imatrix_entry *e = &c->e[c->n];
    *e = (tport_imatrix_entry){.n_cols = in->n_cols, .n_mat = in->n_mat, .n_counts = in->routed ? in->n_mat : 1};
    e->name = strdup(in->weight);
    e->sums = calloc((size_t)in->n_cols * (size_t)in->n_mat, sizeof *e->sums);
    e->counts = calloc((size_t)e->n_counts, sizeof *e->counts);
    if (!e->name || !e->sums || !e->counts) {
        free(e->name);
        free(e->sums);
        free(e->counts);
        return NULL;
    }
    c->last = c->n++;
    return e;
}

static tport_status collect(void *user, const tport_weight_input *in) {
    collector *c = user;
    if (strncmp(in->weight, "blk.", 4) && !(c->process_output && !strcmp(in->weight, "output.weight")))
        return TPORT_STATUS_OK;
    if (!in->routed && in->n_rows / in->n_mat < c->min_rows)
        return TPORT_STATUS_OK;
    tport_imatrix_entry *e = entry_for(c, in);
    if (!e)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "imatrix: out of memory");
    if (e->n_cols != in->n_cols || e->n_mat != in->n_mat || e->n_counts != (in->routed ? in->n_mat : 1))
        return tport_error(TPORT_STATUS_ERROR, "imatrix: %s is read as %lld x %d matrices, then as %lld x %d",
                           in->weight, (long long)e->n_cols, (int)e->n_mat, (long long)in->n_cols, (int)in->n_mat);
    const int64_t k = in->n_cols;
    for (int64_t r = 0; r < in->n_rows; r++) {
        const int32_t mat = in->mat ? in->mat[r] : 0;
        const float *x = in->x + r * k;
        float *acc = e->sums + (int64_t)mat * k;
        for (int64_t j = 0; j < k; j++)
            acc[j] += x[j] * x[j];
        if (in->routed)
            e->counts[mat]++;
    }
    if (!in->routed)
        e->counts[0] += in->n_rows / in->n_mat;
    for (int64_t j = 0; j < k * e->n_mat; j++)
        if (!isfinite(e->sums[j]))
            return tport_error(TPORT_STATUS_ERROR, "imatrix: non-finite values detected in %s", in->weight);
    return TPORT_STATUS_OK;
}

static void collector_free(collector *c) {
    for (int i = 0; i < c->n; i++) {
        free(c->e[i].name);
        free(c->e[i].sums);
        free(c->e[i].counts);
    }
    free(c->e);
}

int cmd_imatrix(int argc, char **argv) {
    imx_opts o = {.ctx = DEFAULT_CTX, .out = "imatrix.gguf"};
    int rc = parse_args(argc, argv, &o);
    if (rc)
        return rc < 0 ? 0 : rc;
    tport_model_params mp = {.backend = o.backend, .n_threads = (int)o.threads};
    tport_model *m = tport_model_load(o.model, &mp);
    if (!m)
        return tool_fail(2, "%s", tport_last_error());
    int status = 0;
    tport_session *s = NULL;
    float *logits = NULL;
    collector col = {.process_output = o.process_output};
    int32_t n_tokens = 0;
    fprintf(stderr, "imatrix: tokenizing the input ..\n");
    tport_token *tokens = tool_tokenize_file(m, o.file, "imatrix", &n_tokens);
    if (!tokens) {
        status = 2;
        goto done;
    }
    const int32_t n_ctx = (int32_t)o.ctx, n_vocab = tport_model_n_vocab(m);
    /* llama-imatrix's --chunk: the first chunks' tokens are dropped, and
     * two chunks must be left after them */
    int32_t first = 0;
    if (o.from_chunk > 0) {
        if ((o.from_chunk + 2) * (long)n_ctx >= n_tokens) {
            status = tool_fail(2, "imatrix: there will be not enough tokens left after removing %ld chunks",
                               o.from_chunk);
            goto done;
        }
        first = (int32_t)(o.from_chunk * n_ctx);
        n_tokens -= first;
        fprintf(stderr, "imatrix: removing initial %ld chunks (%d tokens)\n", o.from_chunk, (int)first);
    }
    if (n_tokens < 2 * n_ctx) {
        status = tool_fail(2, "imatrix: you need at least %d tokens for a context of %d; %s tokenizes to only %d "
                           "tokens", 2 * n_ctx, (int)n_ctx, o.file, (int)n_tokens);
        goto done;
    }
    int32_t n_chunk = n_tokens / n_ctx;
    if (o.chunks && o.chunks < n_chunk)
        n_chunk = (int32_t)o.chunks;
    /* the rows llama-imatrix's products have (see the top) */
    const int32_t n_batch = n_ctx <= LLAMA_PARALLEL ? n_ctx : LLAMA_UBATCH;
    col.min_rows = n_ctx <= LLAMA_PARALLEL ? 0 : MIN_ROWS;
    tport_session_params sp = {.n_ctx = n_ctx, .n_batch = n_batch, .n_threads = (int)o.threads,
                               .kv_f32 = o.kv_f32};
    s = tport_session_new(m, &sp);
    logits = malloc((size_t)n_ctx * (size_t)n_vocab * sizeof *logits);
    if (!s || !logits || tport_session_watch_weights(s, collect, &col)) {
        status = tool_fail(2, "imatrix: %s", s && !logits ? "out of memory" : tport_last_error());
        goto done;
    }
    fprintf(stderr, "imatrix: computing over %d chunks, n_ctx=%d, batch_size=%d\n", (int)n_chunk, (int)n_ctx,
            (int)n_batch);
    const bool add_bos = tool_adds_bos(m);
    double nll = 0.0, nll2 = 0.0;
    long count = 0;
    for (int32_t i = 0; i < n_chunk; i++) {
        tport_token *chunk = tokens + (size_t)first + (size_t)i * (size_t)n_ctx;
        const tport_token kept = chunk[0];
        if (add_bos)
            chunk[0] = tport_model_bos(m);
        tport_session_reset(s);
        tport_status st = tport_session_eval_all(s, chunk, n_ctx, logits);
        chunk[0] = kept;
        if (st != TPORT_STATUS_OK) {
            status = tool_fail(2, "imatrix: chunk %d: %s", (int)i + 1, tport_last_error());
            goto done;
        }
        if (o.no_ppl) {
            fprintf(stderr, "[%d/%d]\r", (int)i + 1, (int)n_chunk);
            continue;
        }
        for (int32_t j = n_ctx / 2; j < n_ctx - 1; j++) {
            const double v = tool_neg_log_prob(logits + (size_t)j * (size_t)n_vocab, n_vocab, chunk[j + 1]);
            nll += v;
            nll2 += v * v;
        }
        count += n_ctx - n_ctx / 2 - 1;
        printf("[%d]%.4f,", (int)i + 1, exp(nll / (double)count));
        fflush(stdout);
    }
    if (!o.no_ppl && count > 1) {
        nll /= (double)count;
        nll2 = nll2 / (double)count - nll * nll;
        if (nll2 > 0)
            printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", exp(nll), sqrt(nll2 / (double)(count - 1)) * exp(nll));
        else
            printf("\nUnexpected negative standard deviation of log(prob)\n");
    }
    int64_t most = 0;
    for (int i = 0; i < col.n; i++)
        for (int32_t k = 0; k < col.e[i].n_counts; k++)
            most = col.e[i].counts[k] > most ? col.e[i].counts[k] : most;
    tport_imatrix_about about = {.dataset = o.file, .chunk_count = (int32_t)(most / n_ctx), .chunk_size = n_ctx};
    if (col.n == 0) {
        status = tool_fail(2, "imatrix: the model has no weight products llama-imatrix collects (blk.*)");
        goto done;
    }
    tport_status st = o.dat ? tport_imatrix_write_dat(o.out, col.e, col.n, &about)
                            : tport_imatrix_write_gguf(o.out, col.e, col.n, &about);
    if (st) {
        status = tool_fail(2, "%s", tport_last_error());
        goto done;
    }
    fprintf(stderr, "imatrix: %d entries from %d chunks written to %s\n", col.n, (int)about.chunk_count, o.out);
done:
    free(logits);
    free(tokens);
    collector_free(&col);
    tport_session_free(s);
    tport_model_free(m);
    return status;
}
