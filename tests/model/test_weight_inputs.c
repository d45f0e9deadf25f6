/* tport_session_watch_weights on models tport synth writes (a 2-layer
 * llama and a 2-layer llama with 8 experts, 2 per token):
 *  - watching changes nothing: every token's logits are bit for bit those
 *    of an unwatched session (the inputs only become graph results);
 *  - every product with a weight is reported once per step, in graph
 *    order: q, k, v, output, gate, up, down per layer (the router and the
 *    three expert stacks instead of gate/up/down with experts), then the
 *    head -- with rows of the weight's input width;
 *  - q, k and v read the same rows; a plain product has one row per token
 *    and no matrix ids; an expert product one row per token and chosen
 *    expert, ids in range, each token's chosen experts distinct, and the
 *    up and gate stacks read the same rows for the same experts;
 *  - a batch of 16 tokens evaluated in batches of 5 reports 4 steps;
 *  - a callback's failure fails the evaluation with its status; NULL
 *    turns the watch off.
 * tests/model/test_imatrix.py compares what tport imatrix builds on this
 * with llama-imatrix. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define N_TOK 16
#define MAX_SEEN 64

typedef struct seen {
    char name[64];
    int64_t n_cols, n_rows;
    int32_t n_mat;
    bool routed;
    float *x;
    int32_t *mat;
} seen;

typedef struct watch {
    seen s[MAX_SEEN];
    int n, steps;
    tport_status fail_with;
} watch;

static tport_status on_input(void *user, const tport_weight_input *in) {
    watch *w = user;
    if (w->fail_with)
        return tport_error(w->fail_with, "the test's callback refuses %s", in->weight);
    if (!strcmp(in->weight, "blk.0.attn_q.weight"))
        w->steps++;
    if (w->n == MAX_SEEN)
        return TPORT_STATUS_OK;
    seen *s = &w->s[w->n++];
    snprintf(s->name, sizeof s->name, "%s", in->weight);
    s->n_cols = in->n_cols;
    s->n_rows = in->n_rows;
    s->n_mat = in->n_mat;
    s->routed = in->routed;
    s->x = malloc(sizeof(float) * (size_t)(in->n_cols * in->n_rows));
    s->mat = in->mat ? malloc(sizeof(int32_t) * (size_t)in->n_rows) : NULL;
    if (s->x)
        memcpy(s->x, in->x, sizeof(float) * (size_t)(in->n_cols * in->n_rows));
    if (s->mat)
        memcpy(s->mat, in->mat, sizeof(int32_t) * (size_t)in->n_rows);
    return TPORT_STATUS_OK;
}

static void watch_clear(watch *w) {
    for (int i = 0; i < w->n; i++) {
        free(w->s[i].x);
        free(w->s[i].mat);
    }
    memset(w, 0, sizeof *w);
}

static const seen *find(const watch *w, const char *name) {
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->s[i].name, name))
            return &w->s[i];
    return NULL;
}

static bool synth(const char *args, const char *path) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' synth %s -o '%s' >/dev/null 2>&1", TPORT_CLI, args, path);
    return system(cmd) == 0;
}

static void check_model(const char *what, const char *args, int n_expert, int n_used) {
    char path[256];
    snprintf(path, sizeof path, "%s/tport-winputs-%s-%d.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", what,
             (int)getpid());
    CHECK(synth(args, path), "%s: synth", what);
    tport_model_params mp = {.n_threads = 1};
    tport_model *m = tport_model_load(path, &mp);
    CHECK(m != NULL, "%s: load: %s", what, tport_last_error());
    if (!m)
        return;
    const int32_t nv = tport_model_n_vocab(m), nd = tport_model_n_embd(m);
    tport_token ids[N_TOK];
    for (int i = 0; i < N_TOK; i++)
        ids[i] = (tport_token)((i * 37 + 3) % nv);
    tport_session_params sp = {.n_ctx = 64, .n_batch = N_TOK, .n_threads = 1};
    tport_session *plain = tport_session_new(m, &sp), *watched = tport_session_new(m, &sp);
    float *a = malloc(sizeof(float) * (size_t)nv * N_TOK), *b = malloc(sizeof(float) * (size_t)nv * N_TOK);
    static watch w;
    CHECK(plain && watched && a && b, "%s: sessions", what);
    if (plain && watched && a && b) {
        CHECK(tport_session_watch_weights(watched, on_input, &w) == TPORT_STATUS_OK, "%s: watch", what);
        CHECK(tport_session_eval_all(plain, ids, N_TOK, a) == TPORT_STATUS_OK, "%s: eval", what);
        CHECK(tport_session_eval_all(watched, ids, N_TOK, b) == TPORT_STATUS_OK, "%s: watched eval: %s", what,
              tport_last_error());
        CHECK(!memcmp(a, b, sizeof(float) * (size_t)nv * N_TOK), "%s: watching changed the logits", what);
        const int per_layer = n_expert ? 8 : 7;
        CHECK(w.n == 2 * per_layer + 1 && w.steps == 1, "%s: %d products reported in %d steps", what, w.n, w.steps);
        static const char *const dense[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                                            "ffn_down"};
        static const char *const moe[] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate_inp",
                                          "ffn_up_exps", "ffn_gate_exps", "ffn_down_exps"};
        for (int il = 0; il < 2 && w.n == 2 * per_layer + 1; il++)
            for (int k = 0; k < per_layer; k++) {
                char name[64];
                snprintf(name, sizeof name, "blk.%d.%s.weight", il, n_expert ? moe[k] : dense[k]);
                const seen *s = find(&w, name);
                CHECK(s != NULL, "%s: %s not reported", what, name);
                if (!s)
                    continue;
                const bool routed = n_expert && strstr(name, "_exps");
                CHECK(s->routed == routed && s->n_rows == (routed ? N_TOK * n_used : N_TOK) &&
                          s->n_mat == (routed ? n_expert : 1) && (s->mat != NULL) == routed,
                      "%s: %s: %lld rows, %d matrices, routed %d", what, name, (long long)s->n_rows, (int)s->n_mat,
                      (int)s->routed);
                CHECK(k > 3 || s->n_cols == nd, "%s: %s reads rows of %lld", what, name, (long long)s->n_cols);
                for (int64_t r = 0; routed && s->mat && r < s->n_rows; r++) {
                    CHECK(s->mat[r] >= 0 && s->mat[r] < n_expert, "%s: %s: expert %d", what, name, (int)s->mat[r]);
                    if (r % n_used)
                        CHECK(s->mat[r] != s->mat[r - 1], "%s: %s: a token chose expert %d twice", what, name,
                              (int)s->mat[r]);
                }
            }
        const seen *q = find(&w, "blk.1.attn_q.weight"), *k = find(&w, "blk.1.attn_k.weight"),
                   *v = find(&w, "blk.1.attn_v.weight");
        CHECK(q && k && v && q->x && k->x && v->x && !memcmp(q->x, k->x, sizeof(float) * (size_t)(nd * N_TOK)) &&
                  !memcmp(q->x, v->x, sizeof(float) * (size_t)(nd * N_TOK)),
              "%s: q, k and v must read the same rows", what);
        const seen *up = find(&w, "blk.0.ffn_up_exps.weight"), *gate = find(&w, "blk.0.ffn_gate_exps.weight");
        if (n_expert)
            CHECK(up && gate && up->x && gate->x && up->mat && gate->mat &&
                      !memcmp(up->x, gate->x, sizeof(float) * (size_t)(up->n_cols * up->n_rows)) &&
                      !memcmp(up->mat, gate->mat, sizeof(int32_t) * (size_t)up->n_rows),
                  "%s: the up and gate stacks must read the same rows for the same experts", what);
        const seen *head = find(&w, "output.weight");
        CHECK(head && head->n_rows == N_TOK && !head->routed, "%s: the head is reported for every token", what);
        /* smaller batches: one report per step */
        watch_clear(&w);
        tport_session_free(watched);
        tport_session_params sp5 = sp;
        sp5.n_batch = 5;
        watched = tport_session_new(m, &sp5);
        CHECK(watched && tport_session_watch_weights(watched, on_input, &w) == 0 &&
                  tport_session_eval_all(watched, ids, N_TOK, b) == 0 && w.steps == 4,
              "%s: batches of 5: %d steps reported", what, w.steps);
        /* a failing callback fails the evaluation; NULL turns it off */
        watch_clear(&w);
        w.fail_with = TPORT_STATUS_UNSUPPORTED;
        tport_session_reset(watched);
        CHECK(tport_session_eval(watched, ids, 4) == TPORT_STATUS_UNSUPPORTED &&
                  strstr(tport_last_error(), "the test's callback refuses"),
              "%s: a refusing callback: %s", what, tport_last_error());
        CHECK(tport_session_watch_weights(watched, NULL, NULL) == 0, "%s: unwatch", what);
        tport_session_reset(watched);
        CHECK(tport_session_eval(watched, ids, 4) == TPORT_STATUS_OK && w.n == 0, "%s: unwatched: %d reports", what,
              w.n);
    }
    watch_clear(&w);
    free(a);
    free(b);
    tport_session_free(plain);
    tport_session_free(watched);
    tport_model_free(m);
    remove(path);
}

int main(void) {
    CHECK(tport_session_watch_weights(NULL, on_input, NULL) == TPORT_STATUS_INVALID_ARGUMENT, "no session");
    check_model("llama", "--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 96 --vocab 300 --ctx 64 "
                "--seed 5 --norm-noise 0.5", 0, 0);
    check_model("moe", "--arch llama --dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 96 --vocab 300 --ctx 64 "
                "--experts 8 --experts-used 2 --seed 6 --norm-noise 0.5", 8, 2);
    return test_finish("test_weight_inputs");
}
