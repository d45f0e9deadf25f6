/* Load-time placement with two backends: the test plug-in "picky"
 * (preferred: TPORT_BACKEND=picky,cpu) runs mul_mat and get_rows only for
 * f32 and q4_0_qnt1 weights; the CPU runs everything else.
 *  - weights picky takes stay zero-copy in the file mapping, and the ids
 *    are llama2.c's (stories260K f32) and llama.cpp's (tiny random, f16
 *    weights converted losslessly to f32 for picky);
 *  - a q4_0_qnt0 file (GGJT v1) is re-encoded at load to q4_0_qnt1, the
 *    lossless target picky takes, reported once, and gives bit-identical
 *    logits and the same ids as the same weights stored as q4_0_qnt1;
 *  - forcing the CPU keeps the file's types; a user weight type goes to the
 *    first backend that takes it (q4_0 -> cpu, q4_0_qnt1 -> picky). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"
#include "greedy.h"
#include "json_min.h"
#include "model/model.h"
#include "model_writer.h"
#include "quant/type_table.h"

#ifndef TEST_PLUGIN
#error "TEST_PLUGIN must name the test plug-in file"
#endif

#define N_IDS 32

static const char *name = "test_placement_plugin";

/* Every matrix of the model, for checks over all of them. */
static int matrices(const tport_model *m, const tport_tensor **out, int cap) {
    int n = 0;
    out[n++] = m->w.tok_embd;
    if (m->w.output != m->w.tok_embd)
        out[n++] = m->w.output;
    for (int32_t i = 0; i < m->sh.n_layer && n + 7 <= cap; i++) {
        const tport_layer *l = &m->layers[i];
        const tport_tensor *w[] = {l->wq, l->wk, l->wv, l->wo, l->w_gate, l->w_up, l->w_down};
        for (int k = 0; k < 7; k++)
            out[n++] = w[k];
    }
    return n;
}

/* Counts matrices of `type` and how many of all point into the file. */
static void census(const tport_model *m, tport_type_id type, int *n_type, int *n_zero_copy, int *n_all) {
    const tport_tensor *w[256];
    *n_all = matrices(m, w, 256);
    *n_type = *n_zero_copy = 0;
    for (int i = 0; i < *n_all; i++) {
        const tport_mf_tensor *t = tport_model_file_find(m->file, tport_tensor_name(w[i]));
        *n_type += tport_tensor_type(w[i]) == type;
        *n_zero_copy += t && t->data == tport_tensor_data(w[i]);
    }
}

static bool report_is(const tport_model *m, const char *want) {
    const char *got = m->placement_report;
    if (!want ? got != NULL : !got || strcmp(got, want) != 0) {
        fprintf(stderr, "  report: '%s'\n  wanted: '%s'\n", got ? got : "(none)", want ? want : "(none)");
        return false;
    }
    return true;
}

static tport_model *load(const char *path, const char *backend, const char *weight_type) {
    tport_model_params p = {.backend = backend, .weight_type = weight_type};
    tport_model *m = tport_model_load(path, &p);
    CHECK(m != NULL, "load %s (backend %s, weight type %s): %s", path, backend ? backend : "-",
          weight_type ? weight_type : "-", tport_last_error());
    return m;
}

/* One mul_mat with a weight of `type`: which backend runs it? */
static void check_node_backend(tport_type_id type, const char *want) {
    tport_ctx *ctx = tport_ctx_new(1 << 16);
    tport_tensor *w = tport_new_tensor_2d(ctx, type, 64, 4), *x = tport_new_tensor_2d(ctx, TPORT_TYPE_F32, 64, 1);
    if (w && x) {
        memset(tport_tensor_data(w), 0, tport_tensor_nbytes(w));
        memset(tport_tensor_data(x), 0, tport_tensor_nbytes(x));
        tport_tensor_set_weight(w);
    }
    tport_tensor *y = tport_mul_mat(ctx, w, x);
    tport_graph *g = tport_graph_new(ctx);
    CHECK(y && g && tport_graph_add(g, y) == TPORT_STATUS_OK && tport_graph_compute(g, NULL) == TPORT_STATUS_OK,
          "mul_mat graph: %s", tport_last_error());
    const char *got = g ? tport_graph_node_backend(g, 0) : NULL;
    CHECK(got && !strcmp(got, want), "mul_mat with a %s weight ran on %s, not %s", tport_type_get(type)->name,
          got ? got : "(none)", want);
    tport_graph_free(g);
    tport_ctx_free(ctx);
}

static void check_stories_f32(const char *path, const tport_token *ref, int n_ref) {
    tport_model *m = load(path, NULL, NULL);
    if (!m)
        return;
    int n_type, n_zc, n_all;
    census(m, TPORT_TYPE_F32, &n_type, &n_zc, &n_all);
    CHECK(n_type == n_all && n_zc == n_all && report_is(m, NULL),
          "f32 weights picky takes stay zero-copy (%d f32, %d zero-copy of %d)", n_type, n_zc, n_all);
    tport_token bos = 1, ids[64];
    int got = greedy_ids(m, &bos, 1, ids, n_ref);
    int diff = first_difference(ids, got, ref, n_ref);
    CHECK(diff < 0, "stories260K on picky+cpu: id %d differs from llama2.c", diff);
    printf("%s: stories260K (f32, zero-copy) on picky+cpu: %d/%d ids match llama2.c\n", name,
           diff < 0 ? n_ref : diff, n_ref);
    tport_model_free(m);

    /* a weight type only the CPU takes goes there; one picky takes, to picky */
    m = load(path, NULL, "q4_0");
    if (m) {
        const char *rep = m->placement_report ? m->placement_report : "";
        const char *head = "31 tensors f32 -> q4_0 (lossy: rmse ";
        double rmse = -1, max_err = -1;
        CHECK(!strncmp(rep, head, strlen(head)) && sscanf(rep + strlen(head), "%lf, max error %lf", &rmse, &max_err) == 2 &&
                  strstr(rep, ") for backend cpu, as weight type q4_0 was asked for"),
              "weight type q4_0 goes to the cpu: '%s'", rep);
        /* the reported error, measured here from the weights themselves */
        const tport_tensor *w[256];
        int n = matrices(m, w, 256);
        double sum_sq = 0, worst = 0, count = 0;
        for (int i = 0; i < n; i++) {
            const tport_mf_tensor *t = tport_model_file_find(m->file, tport_tensor_name(w[i]));
            if (!t || tport_tensor_type(w[i]) != TPORT_TYPE_Q4_0)
                continue;
            int64_t k = tport_tensor_nelements(w[i]);
            float *deq = malloc((size_t)k * sizeof *deq);
            if (!deq)
                continue;
            tport_traits(TPORT_TYPE_Q4_0)->to_float(tport_tensor_data(w[i]), deq, k);
            for (int64_t j = 0; j < k; j++) {
                double d = fabs((double)deq[j] - (double)((const float *)t->data)[j]);
                sum_sq += d * d;
                worst = d > worst ? d : worst;
            }
            count += (double)k;
            free(deq);
        }
        double want = count > 0 ? sqrt(sum_sq / count) : 0;
        CHECK(count > 0 && fabs(rmse - want) <= 0.005 * want && fabs(max_err - worst) <= 0.005 * worst,
              "reported rmse %g and max error %g; measured %g and %g", rmse, max_err, want, worst);
    }
    tport_model_free(m);
    /* forced picky with a type it does not take: refused at load */
    tport_model_params fp = {.backend = "picky", .weight_type = "q4_0"};
    m = tport_model_load(path, &fp);
    CHECK(!m && strstr(tport_last_error(), "backend 'picky' does not run get_rows and mul_mat with token_embd.weight") &&
              strstr(tport_last_error(), "as q4_0"),
          "forced picky cannot take q4_0: '%s'", tport_last_error());
    tport_model_free(m);

    m = load(path, NULL, "q4_0_qnt1");
    int n_q;
    if (m) {
        census(m, TPORT_TYPE_Q4_0_QNT1, &n_q, &n_zc, &n_all);
        CHECK(n_q == 31 && n_zc == 5 && m->placement_report &&
                  strstr(m->placement_report, "31 tensors f32 -> q4_0_qnt1 (lossy: rmse ") &&
                  strstr(m->placement_report, "for backend picky, as weight type q4_0_qnt1 was asked for"),
              "weight type q4_0_qnt1 goes to picky (%d converted, %d zero-copy): %s", n_q, n_zc,
              m->placement_report ? m->placement_report : "(none)");
    }
    tport_model_free(m);
}

static void check_qnt0(const tport_model_file *src) {
    char qnt0_path[256], qnt1_path[256];
    mw_result r;
    mw_temp_path(qnt0_path, "qnt0");
    mw_temp_path(qnt1_path, "qnt1");
    bool ok = mw_write_legacy(src, MW_MAGIC_GGJT, 1, TPORT_TYPE_Q4_0_QNT0, 2, qnt0_path, &r);
    tport_model_file *qnt0 = NULL;
    ok = ok && tport_model_file_open(qnt0_path, &qnt0) == TPORT_STATUS_OK;
    ok = ok && mw_write_legacy(qnt0, MW_MAGIC_GGJT, 2, TPORT_TYPE_Q4_0_QNT1, 2, qnt1_path, &r);
    tport_model_file_close(qnt0);
    CHECK(ok, "writing the q4_0_qnt0 and q4_0_qnt1 files");
    if (!ok)
        return;

    /* q4_0_qnt0: picky does not take it; its lossless re-encoding it does */
    tport_model *a = load(qnt0_path, NULL, NULL);
    tport_model *b = load(qnt1_path, NULL, NULL);
    tport_model *c = load(qnt0_path, "cpu", NULL);
    int n_type, n_zc, n_all;
    if (a) {
        census(a, TPORT_TYPE_Q4_0_QNT1, &n_type, &n_zc, &n_all);
        CHECK(n_type == 32 && n_zc == 5 && n_all == 37, "q4_0_qnt0 file on picky: %d of %d re-encoded, %d zero-copy",
              n_type, n_all, n_zc);
        CHECK(report_is(a, "32 tensors q4_0_qnt0 -> q4_0_qnt1 (lossless) for backend picky, "
                           "which does not take q4_0_qnt0"), "the q4_0_qnt0 conversion is reported once");
    }
    if (b) {
        census(b, TPORT_TYPE_Q4_0_QNT1, &n_type, &n_zc, &n_all);
        CHECK(n_type == 32 && n_zc == n_all && report_is(b, NULL), "q4_0_qnt1 file: zero-copy, no conversion");
    }
    if (c) {
        census(c, TPORT_TYPE_Q4_0_QNT0, &n_type, &n_zc, &n_all);
        CHECK(n_type == 32 && n_zc == n_all && report_is(c, NULL), "forced cpu keeps q4_0_qnt0 (%d of %d)", n_type,
              n_all);
    }
    if (a && b) {
        /* the same decoded weights on the same backend: the same bits */
        tport_session *sa = tport_session_new(a, NULL), *sb = tport_session_new(b, NULL);
        tport_token bos = 1;
        CHECK(sa && sb && tport_session_eval(sa, &bos, 1) == 0 && tport_session_eval(sb, &bos, 1) == 0, "eval");
        const float *la = sa ? tport_session_logits(sa) : NULL, *lb = sb ? tport_session_logits(sb) : NULL;
        CHECK(la && lb && !memcmp(la, lb, (size_t)tport_model_n_vocab(a) * sizeof *la),
              "logits of the converted and the native q4_0_qnt1 weights are bit-identical");
        tport_session_free(sa);
        tport_session_free(sb);
        tport_token ia[N_IDS], ib[N_IDS];
        int na = greedy_ids(a, &bos, 1, ia, N_IDS), nb = greedy_ids(b, &bos, 1, ib, N_IDS);
        int diff = first_difference(ia, na, ib, nb);
        CHECK(na == N_IDS && diff < 0, "converted vs native q4_0_qnt1: id %d differs", diff);
        printf("%s: q4_0_qnt0 re-encoded at load for picky vs native q4_0_qnt1: %d/%d ids identical\n", name,
               diff < 0 ? na : diff, N_IDS);
    }
    tport_model_free(a);
    tport_model_free(b);
    tport_model_free(c);
    remove(qnt0_path);
    remove(qnt1_path);
}

static void check_tiny_f16(const char *path, const json *ref) {
    tport_model *m = load(path, NULL, NULL);
    if (!m)
        return;
    int n_type, n_zc, n_all;
    census(m, TPORT_TYPE_F32, &n_type, &n_zc, &n_all);
    CHECK(n_type == n_all && n_zc == 0, "f16 weights converted to f32 for picky (%d of %d)", n_type, n_all);
    CHECK(report_is(m, "9 tensors f16 -> f32 (lossless) for backend picky, which does not take f16"),
          "the f16 conversion is reported");
    expect_reference_ids(m, ref, name, "llama-2-tiny-random, f16 -> f32 for picky");
    tport_model_free(m);

    /* forcing picky: it gets f32 weights, but it must run every node and
     * cannot (rms_norm...): evaluation fails with a message naming it */
    m = load(path, "picky", NULL);
    if (m) {
        tport_session *s = tport_session_new(m, NULL);
        tport_token bos = 1;
        CHECK(s && tport_session_eval(s, &bos, 1) != TPORT_STATUS_OK && strstr(tport_last_error(), "picky"),
              "a forced backend runs every node or fails naming itself: '%s'", tport_last_error());
        tport_session_free(s);
    }
    tport_model_free(m);
}

int main(void) {
    /* before anything asks the registry */
    setenv("TPORT_BACKEND_PATH", TEST_PLUGIN, 1);
    setenv("TPORT_BACKEND", "picky,cpu", 1);
    CHECK(tport_backend_count() >= 2 && !strcmp(tport_backend_name(0), "picky"),
          "the test plug-in %s is loaded and preferred", TEST_PLUGIN);
    check_node_backend(TPORT_TYPE_F32, "picky");
    check_node_backend(TPORT_TYPE_Q4_0_QNT1, "picky");
    check_node_backend(TPORT_TYPE_Q4_0, "cpu");

    char refs_path[1024], stories[1024], tiny[1024];
    json *refs = test_shared_path("refs/refs.json", refs_path, sizeof refs_path) ? json_load(refs_path) : NULL;
    bool have_stories = test_shared_path("models/stories260K.bin", stories, sizeof stories) != NULL;
    bool have_tiny = test_shared_path("models/llama-2-tiny-random.gguf", tiny, sizeof tiny) != NULL;
    if (!refs || (!have_stories && !have_tiny)) {
        json_free(refs);
        test_skip(name, "../shared/models or refs absent");
    }
    if (have_stories) {
        const json *gen = json_get(json_get(refs, "stories260K.bin"), "generated_ids");
        tport_token ref[64];
        int n_ref = gen ? (int)(gen->n < 64 ? gen->n : 64) : 0;
        for (int i = 0; i < n_ref; i++)
            ref[i] = (tport_token)gen->items[i].number;
        CHECK(n_ref > 0, "refs.json has stories260K ids");
        check_stories_f32(stories, ref, n_ref);
        tport_model_file *src = NULL;
        CHECK(tport_model_file_open(stories, &src) == TPORT_STATUS_OK, "open: %s", tport_last_error());
        if (src)
            check_qnt0(src);
        tport_model_file_close(src);
    }
    if (have_tiny)
        check_tiny_f16(tiny, json_get(refs, "llama-2-tiny-random.gguf"));
    json_free(refs);
    return test_finish(name);
}
