/* tport perplexity: the perplexity of a model on a text, computed as
 * llama.cpp's llama-perplexity computes it, so the two figures compare:
 *  - the whole text is tokenized once (BOS/EOS as the file says);
 *  - it is cut into chunks of --ctx tokens (the tail that does not fill a
 *    chunk is dropped); each chunk starts from an empty cache, with its
 *    first token replaced by BOS when the vocabulary adds one;
 *  - only the second half of each chunk is scored: the negative log
 *    likelihood of token j + 1 under the logits at j, for j from ctx/2 to
 *    ctx - 2 (the model always has half a context behind it);
 *  - after each chunk "[i]PPL," with the running estimate; at the end
 *    "Final estimate: PPL = x +/- y", y from the standard error of the
 *    per-token log-likelihoods (double sums, float log-softmax as theirs).
 * llama-perplexity evaluates several chunks as parallel sequences; each
 * sequence attends only to itself, so one chunk at a time is the same
 * computation. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "tport/tport.h"

#define DEFAULT_CTX 512

static void usage(FILE *out) {
    fprintf(out,
            "usage: tport perplexity -m FILE -f TEXT [options]\n"
            "\n"
            "Perplexity of the model on a text file, as llama.cpp's llama-perplexity computes\n"
            "it (the same chunks, the same half-context scoring, the same output lines), so\n"
            "the figures compare directly.\n"
            "\n"
            "  -m, --model FILE   model file (any format tport run reads)\n"
            "  -f, --file TEXT    the text (UTF-8); it needs at least 2 x --ctx tokens\n"
            "  --ctx N            tokens per chunk (default %d, as llama-perplexity)\n"
            "  --chunks N         score at most N chunks (default: all)\n"
            "  --batch N          tokens per evaluation (default: the chunk, one batch)\n"
            "  --threads N        threads, 0 = all cores (default 0)\n"
            "  --kv-type T        KV cache type: f16 (default, as llama.cpp) or f32\n"
            "  --backend NAME     force a backend (default: the best for each operation)\n"
            "\n"
            "Prints \"[i]PPL,\" after every chunk and \"Final estimate: PPL = x +/- y\" on stdout;\n"
            "progress goes to stderr.\n",
            DEFAULT_CTX);
}

typedef struct ppl_opts {
    const char *model, *file, *backend;
    long ctx, chunks, batch, threads;
    bool kv_f32;
} ppl_opts;

static int parse_long(const char *flag, const char *s, long lo, long hi, long *out) {
    return tool_parse_long("perplexity", flag, s, lo, hi, out);
}

/* 0 when parsed, -1 after --help, else the exit status. */
static int parse_args(int argc, char **argv, ppl_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return -1;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = !strcmp(a, "-m") || !strcmp(a, "--model") || !strcmp(a, "-f") || !strcmp(a, "--file") ||
                     !strcmp(a, "--ctx") || !strcmp(a, "--chunks") || !strcmp(a, "--batch") ||
                     !strcmp(a, "--threads") || !strcmp(a, "--kv-type") || !strcmp(a, "--backend");
        if (!takes)
            return tool_fail(2, "perplexity: unknown option '%s' (see tport perplexity --help)", a);
        if (!v)
            return tool_fail(2, "perplexity: missing value after %s", a);
        i++;
        int rc = 0;
        if (!strcmp(a, "-m") || !strcmp(a, "--model"))
            o->model = v;
        else if (!strcmp(a, "-f") || !strcmp(a, "--file"))
            o->file = v;
        else if (!strcmp(a, "--backend"))
            o->backend = v;
        else if (!strcmp(a, "--ctx"))
            rc = parse_long(a, v, 4, 1 << 20, &o->ctx);
        else if (!strcmp(a, "--chunks"))
            rc = parse_long(a, v, 1, 1 << 30, &o->chunks);
        else if (!strcmp(a, "--batch"))
            rc = parse_long(a, v, 1, 1 << 20, &o->batch);
        else if (!strcmp(a, "--threads"))
            rc = parse_long(a, v, 0, 1024, &o->threads);
        else if (strcmp(v, "f16") && strcmp(v, "f32"))
            return tool_fail(2, "perplexity: --kv-type needs f16 or f32, not '%s'", v);
        else
            o->kv_f32 = !strcmp(v, "f32");
        if (rc)
            return rc;
    }
    if (!o->model || !o->file)
        return tool_fail(2, "perplexity: give a model (-m FILE) and a text (-f FILE); see --help");
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int cmd_perplexity(int argc, char **argv) {
    ppl_opts o = {.ctx = DEFAULT_CTX};
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
    fprintf(stderr, "perplexity: tokenizing the input ..\n");
    int32_t n_tokens = 0;
    tport_token *tokens = tool_tokenize_file(m, o.file, "perplexity", &n_tokens);
    if (!tokens) {
        status = 2;
        goto done;
    }
    const bool add_bos = tool_adds_bos(m);
    const int32_t n_ctx = (int32_t)o.ctx, n_vocab = tport_model_n_vocab(m);
    if (n_tokens < 2 * n_ctx) {
        status = tool_fail(2, "perplexity: you need at least %d tokens to evaluate perplexity with a context of %d; "
                           "%s tokenizes to only %d tokens", 2 * n_ctx, (int)n_ctx, o.file, (int)n_tokens);
        goto done;
    }
    int32_t n_chunk = n_tokens / n_ctx;
    if (o.chunks && o.chunks < n_chunk)
        n_chunk = (int32_t)o.chunks;
    const int32_t n_batch = o.batch ? (int32_t)o.batch : n_ctx;
    tport_session_params sp = {.n_ctx = n_ctx, .n_batch = n_batch, .n_threads = (int)o.threads,
                               .kv_f32 = o.kv_f32};
    s = tport_session_new(m, &sp);
    logits = malloc((size_t)n_ctx * (size_t)n_vocab * sizeof *logits);
    if (!s || !logits) {
        status = tool_fail(2, "perplexity: %s", s ? "out of memory" : tport_last_error());
        goto done;
    }
    fprintf(stderr, "perplexity: calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d, n_seq=1\n",
            (int)n_chunk, (int)n_ctx, (int)n_batch);
    const int32_t first = n_ctx / 2;
    double nll = 0.0, nll2 = 0.0;
    long count = 0;
    for (int32_t i = 0; i < n_chunk; i++) {
        tport_token *chunk = tokens + (size_t)i * (size_t)n_ctx;
        const tport_token kept = chunk[0];
        if (add_bos)
            chunk[0] = tport_model_bos(m);
        double t0 = now_s();
        tport_session_reset(s);
        tport_status st = tport_session_eval_all(s, chunk, n_ctx, logits);
        chunk[0] = kept;
        if (st != TPORT_STATUS_OK) {
            status = tool_fail(2, "perplexity: chunk %d: %s", (int)i + 1, tport_last_error());
            goto done;
        }
        if (i == 0)
            fprintf(stderr, "perplexity: %.2f seconds per pass - ETA %.2f minutes\n", now_s() - t0,
                    (now_s() - t0) * n_chunk / 60.0);
        for (int32_t j = first; j < n_ctx - 1; j++) {
            const double v = tool_neg_log_prob(logits + (size_t)j * (size_t)n_vocab, n_vocab, chunk[j + 1]);
            nll += v;
            nll2 += v * v;
        }
        count += n_ctx - first - 1;
        printf("[%d]%.4f,", (int)i + 1, exp(nll / (double)count));
        fflush(stdout);
    }
    printf("\n");
    nll /= (double)count;
    nll2 = nll2 / (double)count - nll * nll;
    const double ppl = exp(nll);
    if (nll2 > 0) {
        printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, sqrt(nll2 / (double)(count - 1)) * ppl);
    } else {
        status = tool_fail(1, "perplexity: unexpected negative standard deviation of log(prob) (PPL = %.4f)", ppl);
    }
done:
    free(logits);
    free(tokens);
    tport_session_free(s);
    tport_model_free(m);
    return status;
}
