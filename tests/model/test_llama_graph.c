/* The llama graph against a plain scalar forward pass written here from the
 * llama2.c description (no ../shared data needed): a random-weight model
 * with grouped-query attention is written as a legacy llama2.c checkpoint,
 * loaded with tport_model_load, and evaluated in uneven batches; the logits
 * after every batch must match the scalar reference.  Both the tied and the
 * separate classifier layouts are covered.  The last positions go one token
 * at a time, through the graph the session keeps (built once, then only its
 * inputs and cache stores moved): each token's logits must match too. */
#include <math.h>
#include <stdint.h>

#include "../test_util.h"
#include "model/model.h"
#include "tport/tport.h"

enum { DIM = 32, HIDDEN = 48, LAYERS = 2, HEADS = 4, KV_HEADS = 2, VOCAB = 40, SEQ = 24 };
enum { HS = DIM / HEADS, KV_DIM = KV_HEADS * HS };

typedef struct weights {
    float emb[VOCAB][DIM];
    float att_norm[LAYERS][DIM];
    float wq[LAYERS][DIM][DIM], wk[LAYERS][KV_DIM][DIM], wv[LAYERS][KV_DIM][DIM], wo[LAYERS][DIM][DIM];
    float ffn_norm[LAYERS][DIM];
    float w1[LAYERS][HIDDEN][DIM], w2[LAYERS][DIM][HIDDEN], w3[LAYERS][HIDDEN][DIM];
    float final_norm[DIM];
    float cls[VOCAB][DIM];
} weights;

static void fill(float *p, size_t n, float scale, unsigned long long *rng) {
    for (size_t i = 0; i < n; i++)
        p[i] = scale * test_rng_uniform(rng);
}

static int write_checkpoint(const char *path, const weights *w, int tied) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int32_t hdr[7] = {DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, tied ? VOCAB : -VOCAB, SEQ};
    fwrite(hdr, sizeof hdr, 1, f);
    fwrite(w->emb, sizeof w->emb, 1, f);
    fwrite(w->att_norm, sizeof w->att_norm, 1, f);
    fwrite(w->wq, sizeof w->wq, 1, f);
    fwrite(w->wk, sizeof w->wk, 1, f);
    fwrite(w->wv, sizeof w->wv, 1, f);
    fwrite(w->wo, sizeof w->wo, 1, f);
    fwrite(w->ffn_norm, sizeof w->ffn_norm, 1, f);
    fwrite(w->w1, sizeof w->w1, 1, f);
    fwrite(w->w2, sizeof w->w2, 1, f);
    fwrite(w->w3, sizeof w->w3, 1, f);
    fwrite(w->final_norm, sizeof w->final_norm, 1, f);
    for (int table = 0; table < 2; table++) /* legacy layout: cos, then sin tables */
        for (int p = 0; p < SEQ; p++)
            for (int i = 0; i < HS / 2; i++) {
                float v = (float)(table ? sin : cos)(p * pow(10000.0, -2.0 * i / HS));
                fwrite(&v, sizeof v, 1, f);
            }
    if (!tied)
        fwrite(w->cls, sizeof w->cls, 1, f);
    return fclose(f);
}

/* ---- the scalar reference ------------------------------------------------ */
typedef struct ref_state {
    float k[LAYERS][SEQ][KV_DIM], v[LAYERS][SEQ][KV_DIM];
} ref_state;

static void rmsnorm(float *out, const float *x, const float *g, int n) {
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float s = (float)(1.0 / sqrt(ss / n + 1e-5));
    for (int i = 0; i < n; i++)
        out[i] = x[i] * s * g[i];
}

static void matvec(float *out, const float *m, const float *x, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        double acc = 0;
        for (int c = 0; c < cols; c++)
            acc += (double)m[r * cols + c] * x[c];
        out[r] = (float)acc;
    }
}

static void rope(float *v, int n, int pos) {
    for (int i = 0; i < n; i += 2) {
        double theta = pos * pow(10000.0, -(double)(i % HS) / HS);
        double c = cos(theta), s = sin(theta), a = v[i], b = v[i + 1];
        v[i] = (float)(a * c - b * s);
        v[i + 1] = (float)(a * s + b * c);
    }
}

static void ref_forward(const weights *w, int tied, ref_state *st, int token, int pos, float *logits) {
    float x[DIM], h[DIM], q[DIM], att[DIM], o[DIM], g[HIDDEN], u[HIDDEN], d[DIM];
    for (int i = 0; i < DIM; i++)
        x[i] = w->emb[token][i];
    for (int l = 0; l < LAYERS; l++) {
        rmsnorm(h, x, w->att_norm[l], DIM);
        matvec(q, &w->wq[l][0][0], h, DIM, DIM);
        matvec(st->k[l][pos], &w->wk[l][0][0], h, KV_DIM, DIM);
        matvec(st->v[l][pos], &w->wv[l][0][0], h, KV_DIM, DIM);
        rope(q, DIM, pos);
        rope(st->k[l][pos], KV_DIM, pos);
        for (int hd = 0; hd < HEADS; hd++) {
            int kvh = hd / (HEADS / KV_HEADS);
            double score[SEQ], mx = -1e30, sum = 0;
            for (int t = 0; t <= pos; t++) {
                double s = 0;
                for (int i = 0; i < HS; i++)
                    s += (double)q[hd * HS + i] * st->k[l][t][kvh * HS + i];
                score[t] = s / sqrt((double)HS);
                mx = fmax(mx, score[t]);
            }
            for (int t = 0; t <= pos; t++)
                sum += score[t] = exp(score[t] - mx);
            for (int i = 0; i < HS; i++) {
                double acc = 0;
                for (int t = 0; t <= pos; t++)
                    acc += score[t] / sum * st->v[l][t][kvh * HS + i];
                att[hd * HS + i] = (float)acc;
            }
        }
        matvec(o, &w->wo[l][0][0], att, DIM, DIM);
        for (int i = 0; i < DIM; i++)
            x[i] += o[i];
        rmsnorm(h, x, w->ffn_norm[l], DIM);
        matvec(g, &w->w1[l][0][0], h, HIDDEN, DIM);
        matvec(u, &w->w3[l][0][0], h, HIDDEN, DIM);
        for (int i = 0; i < HIDDEN; i++)
            g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
        matvec(d, &w->w2[l][0][0], g, DIM, HIDDEN);
        for (int i = 0; i < DIM; i++)
            x[i] += d[i];
    }
    rmsnorm(h, x, w->final_norm, DIM);
    matvec(logits, tied ? &w->emb[0][0] : &w->cls[0][0], h, VOCAB, DIM);
}

static void check_model(const weights *w, int tied) {
    const char *path = tied ? "test_llama_graph_tied.bin" : "test_llama_graph_cls.bin";
    CHECK(write_checkpoint(path, w, tied) == 0, "cannot write %s", path);
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load %s: %s", path, tport_last_error());
    if (!m) {
        remove(path);
        return;
    }
    CHECK(tport_model_n_vocab(m) == VOCAB && tport_model_n_ctx(m) == SEQ, "vocab %d ctx %d",
          (int)tport_model_n_vocab(m), (int)tport_model_n_ctx(m));
    static ref_state st;
    memset(&st, 0, sizeof st);
    tport_session_params sp = {.n_batch = 3, .n_threads = 2, .kv_f32 = true}; /* the reference's cache is f32 */
    tport_session *s = tport_session_new(m, &sp);
    CHECK(s != NULL, "session: %s", tport_last_error());
    /* batches of 1, 4 (split 3+1 by n_batch), 2, 7 (3+3+1), 1 */
    const int batches[] = {1, 4, 2, 7, 1};
    unsigned long long rng = 99;
    int pos = 0;
    double worst = 0;
    for (size_t b = 0; s && b < sizeof batches / sizeof batches[0]; b++) {
        tport_token ids[8];
        float want[VOCAB];
        for (int i = 0; i < batches[b]; i++) {
            ids[i] = (tport_token)(test_rng_next(&rng) % VOCAB);
            ref_forward(w, tied, &st, ids[i], pos + i, want);
        }
        CHECK(tport_session_eval(s, ids, batches[b]) == TPORT_STATUS_OK, "eval: %s", tport_last_error());
        pos += batches[b];
        const float *got = tport_session_logits(s);
        CHECK(got != NULL, "no logits");
        for (int i = 0; got && i < VOCAB; i++)
            worst = fmax(worst, fabs(got[i] - want[i]) / (1.0 + fabs(want[i])));
    }
    /* the rest one at a time: one graph, run again at each position */
    int64_t built0, reused0, built1, reused1;
    tport_session_graph_counts(s, &built0, &reused0);
    int singles = 0;
    for (; s && pos < SEQ; pos++, singles++) {
        tport_token id = (tport_token)(test_rng_next(&rng) % VOCAB);
        float want[VOCAB];
        ref_forward(w, tied, &st, id, pos, want);
        CHECK(tport_session_eval(s, &id, 1) == TPORT_STATUS_OK, "eval: %s", tport_last_error());
        const float *got = tport_session_logits(s);
        for (int i = 0; got && i < VOCAB; i++)
            worst = fmax(worst, fabs(got[i] - want[i]) / (1.0 + fabs(want[i])));
    }
    tport_session_graph_counts(s, &built1, &reused1);
    CHECK(singles > 2 && built1 - built0 <= 1 && reused1 - reused0 >= singles - 1,
          "%d single tokens built %lld graphs and reused %lld", singles, (long long)(built1 - built0),
          (long long)(reused1 - reused0));
    CHECK(worst < 1e-4, "%s classifier: logits differ from the scalar reference by %g", tied ? "tied" : "separate",
          worst);
    printf("test_llama_graph: %s classifier, %d positions, worst relative difference %.2g\n",
           tied ? "tied" : "separate", pos, worst);
    tport_session_free(s);
    tport_model_free(m);
    remove(path);
}

int main(void) {
    static weights w;
    unsigned long long rng = 12345;
    fill(&w.emb[0][0], sizeof w.emb / sizeof(float), 1.0f, &rng);
    fill(&w.att_norm[0][0], sizeof w.att_norm / sizeof(float), 1.0f, &rng);
    fill(&w.wq[0][0][0], sizeof w.wq / sizeof(float), 0.3f, &rng);
    fill(&w.wk[0][0][0], sizeof w.wk / sizeof(float), 0.3f, &rng);
    fill(&w.wv[0][0][0], sizeof w.wv / sizeof(float), 0.3f, &rng);
    fill(&w.wo[0][0][0], sizeof w.wo / sizeof(float), 0.3f, &rng);
    fill(&w.ffn_norm[0][0], sizeof w.ffn_norm / sizeof(float), 1.0f, &rng);
    fill(&w.w1[0][0][0], sizeof w.w1 / sizeof(float), 0.3f, &rng);
    fill(&w.w2[0][0][0], sizeof w.w2 / sizeof(float), 0.3f, &rng);
    fill(&w.w3[0][0][0], sizeof w.w3 / sizeof(float), 0.3f, &rng);
    fill(w.final_norm, DIM, 1.0f, &rng);
    fill(&w.cls[0][0], sizeof w.cls / sizeof(float), 0.5f, &rng);
    check_model(&w, 1);
    check_model(&w, 0);
    return test_finish("test_llama_graph");
}
