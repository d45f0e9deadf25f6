/* Embeddings: a sequence evaluated from position 0, its final hidden
 * states after the output norm (llama.cpp's result_norm, before the head),
 * pooled into one vector as the file declares and optionally divided by
 * its Euclidean norm (llama-server's /v1/embeddings default; the other
 * norms of its embd_normalize: tport_embd_normalize).  The states
 * come out of the ordinary evaluation (tport_stage_io with normed), so
 * every architecture whose graph ends in tport_blk_output has them. */
#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "model/arch/arch.h"
#include "model/session.h"

tport_pooling tport_model_pooling(const tport_model *m) {
    if (!m)
        return TPORT_POOLING_NONE;
    if (m->sh.pooling < 0) /* an encoder without the key: llama.cpp's default, none */
        return m->sh.non_causal ? TPORT_POOLING_NONE : TPORT_POOLING_LAST;
    return (tport_pooling)m->sh.pooling;
}

bool tport_model_generates(const tport_model *m) {
    /* a non-causal model has no next token to predict: bert's graph
     * refuses logits (arch/bert.c) */
    return m && !m->sh.non_causal;
}

static const char *pooling_name(int32_t p) {
    switch (p) {
    case TPORT_POOLING_NONE: return "none (one embedding per token)";
    case TPORT_POOLING_RANK: return "rank (a reranker's classification head)";
    default: return "unknown";
    }
}

tport_status tport_session_embed(tport_session *s, const tport_token *ids, int32_t n, bool normalize, float *out,
                                 int32_t cap) {
    if (!s || !ids || n <= 0 || !out)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "embed: no tokens or nowhere to write");
    const tport_model *m = s->m;
    int32_t n_embd = m->sh.n_embd;
    if (cap < n_embd)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "embed: room for %d floats, the embedding has %d",
                           (int)cap, (int)n_embd);
    tport_pooling pooling = tport_model_pooling(m);
    if (pooling != TPORT_POOLING_MEAN && pooling != TPORT_POOLING_CLS && pooling != TPORT_POOLING_LAST)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "embed: %s declares pooling %d, %s: not implemented",
                           m->arch->name, (int)m->sh.pooling, pooling_name(m->sh.pooling));
    if (m->layer_begin != 0 || m->layer_end != m->sh.n_layer || !m->has_embedding || !m->has_head)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "embed: needs the whole model (a pipeline stage "
                           "holds only some of it)");
    /* every row for mean and CLS pooling (CLS is row 0: in a non-causal
     * model it has seen the whole sequence), the last row for last */
    bool last_only = pooling == TPORT_POOLING_LAST;
    float *rows = last_only ? out : malloc((size_t)n * (size_t)n_embd * sizeof *rows);
    if (!rows)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "embed: out of memory for %d tokens", (int)n);
    tport_session_reset(s);
    tport_stage_io io = {.ids = ids, .n = n, .hidden_out = rows, .out_last_only = last_only, .normed = true};
    /* non-causal attention: every token must see the whole sequence, so
     * it is one batch (its graph is as large as the sequence) */
    int32_t n_batch = s->n_batch;
    if (m->sh.non_causal)
        s->n_batch = n;
    tport_status st = tport_session_eval_stage(s, &io);
    s->n_batch = n_batch;
    if (st == TPORT_STATUS_OK && !last_only) {
        int32_t take = pooling == TPORT_POOLING_CLS ? 1 : n;
        for (int32_t j = 0; j < n_embd; j++) {
            double sum = 0.0;
            for (int32_t i = 0; i < take; i++)
                sum += rows[(size_t)i * (size_t)n_embd + (size_t)j];
            out[j] = (float)(sum / take);
        }
    }
    if (!last_only)
        free(rows);
    if (st == TPORT_STATUS_OK && normalize)
        tport_embd_normalize(out, out, n_embd, 2);
    return st;
}

/* common_embd_normalize's rule: -1 none, 0 the largest magnitude to
 * 32760 (an int16 range), 1 taxicab, 2 Euclidean, p > 2 the p-norm.  The
 * p-norm is taken of x / max|x| and scaled back (the same value; without
 * it |x|^p overflows a double for large p and the vector would become
 * zeros).  A zero vector stays zero, as llama.cpp's. */
void tport_embd_normalize(const float *in, float *out, int32_t n, int32_t norm) {
    if (!in || !out || n <= 0)
        return;
    double mx = 0.0, sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        mx = fmax(mx, fabs((double)in[i]));
    if (norm < 0 || mx == 0.0)
        sum = norm < 0 ? 1.0 : 0.0;
    else if (norm == 0)
        sum = mx / 32760.0;
    else if (norm == 1)
        for (int32_t i = 0; i < n; i++)
            sum += fabs((double)in[i]);
    else if (norm == 2) {
        for (int32_t i = 0; i < n; i++)
            sum += (double)in[i] * in[i];
        sum = sqrt(sum);
    } else {
        for (int32_t i = 0; i < n; i++)
            sum += pow(fabs((double)in[i]) / mx, norm);
        sum = mx * pow(sum, 1.0 / norm);
    }
    double scale = sum > 0.0 ? 1.0 / sum : 0.0;
    for (int32_t i = 0; i < n; i++)
        out[i] = (float)(in[i] * scale);
}
