/* Context shift (tport_session_shift), checked two ways.
 *
 * 1. Against a fresh evaluation.  A session generates greedily past its
 *    context, shifting whenever it is full (keeping the first token and
 *    dropping half of the rest, llama.cpp's default).  In a one-layer model
 *    a cached key or value depends only on its token and position, so after
 *    the shift the logits must equal, within a stated tolerance, those of a
 *    fresh session evaluating exactly the kept tokens, and the greedy
 *    continuations must agree; after four shifts too.  (From the second
 *    layer on, a kept token's cache entries were computed attending to the
 *    tokens now dropped, in llama.cpp's shift as here: no fresh evaluation
 *    reproduces them, so deeper models are checked by 2.)
 * 2. The cache itself, every layer, of deeper models (stories260K, a
 *    synthesized 2-layer llama and qwen2): after the shift the first n_keep
 *    positions are untouched, each moved value is bit-identical to the one
 *    it came from, and each moved key equals the old key rotated by
 *    -n_discard positions, computed here in double precision from the RoPE
 *    definition (normal or NeoX pairs, n_rot dims, base, scale).
 *
 * Tolerances (the measured values, CPU backend, are printed): logits (max
 * |difference|) f32 cache 1e-4 (measured 2.2e-6), f16 cache 5e-3 (measured
 * 1.4e-3); keys f32 cache 2e-6 x (1 + |k|) (measured 2.7e-7), f16 cache
 * 1e-3 x (1 + |k|), about two f16 roundings (measured 3.7e-4).
 * gpt2 (learned positions) and mpt (ALiBi) must refuse, naming why. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"
#include "core/fp16.h"
#include "model/session.h"
#include "tport/tport.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define TOL_F32 1e-4 /* measured 2.2e-6 */
#define TOL_F16 5e-3 /* measured 1.4e-3 */
#define N_FOLLOW 16

static int argmax(const float *x, int32_t n, float *margin) {
    int best = 0, second = -1;
    for (int i = 1; i < n; i++) {
        if (x[i] > x[best]) {
            second = best;
            best = i;
        } else if (second < 0 || x[i] > x[second]) {
            second = i;
        }
    }
    if (margin)
        *margin = second >= 0 ? x[best] - x[second] : INFINITY;
    return best;
}

static double max_abs_diff(const float *a, const float *b, int32_t n) {
    double d = 0;
    for (int32_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

/* One model, one cache type: the checks above.  Returns the worst logit
 * difference seen. */
static double check_model(const char *label, const char *path, bool kv_f32, int32_t n_ctx) {
    tport_model_params mp = {.n_threads = 2};
    tport_model *m = tport_model_load(path, &mp);
    CHECK(m != NULL, "%s: load: %s", label, tport_last_error());
    if (!m)
        return INFINITY;
    CHECK(tport_model_can_shift(m), "%s: can_shift", label);
    int32_t nv = tport_model_n_vocab(m);
    tport_session_params sp = {.n_ctx = n_ctx, .n_batch = 16, .kv_f32 = kv_f32};
    tport_session *a = tport_session_new(m, &sp), *b = tport_session_new(m, &sp);
    CHECK(a && b, "%s: session: %s", label, tport_last_error());
    float *la = malloc((size_t)nv * sizeof *la);
    tport_token *kept = malloc(((size_t)n_ctx + 1) * sizeof *kept);
    double worst = 0;
    if (!a || !b || !la || !kept)
        goto out;

    /* fill the context greedily from BOS (token 1 for stories260K too) */
    tport_token bos = tport_model_bos(m) >= 0 ? tport_model_bos(m) : 1, x = bos;
    CHECK(tport_session_eval(a, &x, 1) == 0, "%s: eval: %s", label, tport_last_error());
    while (tport_session_pos(a) < n_ctx) {
        x = argmax(tport_session_logits(a), nv, NULL);
        CHECK(tport_session_eval(a, &x, 1) == 0, "%s: eval: %s", label, tport_last_error());
    }
    x = argmax(tport_session_logits(a), nv, NULL);
    int32_t n_keep = 1, n_discard = (n_ctx - n_keep) / 2;
    /* what the shift must keep: the first token and the last n_ctx -
     * n_keep - n_discard, then x */
    int32_t n_kept = 0;
    const tport_token *held = tport_session_tokens(a);
    for (int32_t i = 0; i < n_ctx; i++)
        if (i < n_keep || i >= n_keep + n_discard)
            kept[n_kept++] = held[i];
    kept[n_kept++] = x;

    CHECK(tport_session_shift(a, n_keep, n_discard) == 0, "%s: shift: %s", label, tport_last_error());
    CHECK(tport_session_pos(a) == n_ctx - n_discard, "%s: pos after shift %d", label, (int)tport_session_pos(a));
    CHECK(!tport_session_logits(a), "%s: logits after a shift must be unavailable", label);
    CHECK(!memcmp(tport_session_tokens(a), kept, (size_t)(n_kept - 1) * sizeof *kept), "%s: tokens after shift",
          label);
    CHECK(tport_session_eval(a, &x, 1) == 0, "%s: eval after shift: %s", label, tport_last_error());
    memcpy(la, tport_session_logits(a), (size_t)nv * sizeof *la);

    CHECK(tport_session_eval(b, kept, n_kept) == 0, "%s: fresh eval: %s", label, tport_last_error());
    double d = max_abs_diff(la, tport_session_logits(b), nv);
    float margin;
    int top = argmax(tport_session_logits(b), nv, &margin);
    printf("%s (%s cache): after the shift max |logit diff| %.3g, top-1 %d, top-1/top-2 margin %.3g\n", label,
           kv_f32 ? "f32" : "f16", d, top, margin);
    worst = fmax(worst, d);
    CHECK(d <= (kv_f32 ? TOL_F32 : TOL_F16), "%s: logits after the shift differ by %g", label, d);

    /* the greedy continuations agree */
    int same = 0, distinct = 0;
    tport_token seen[N_FOLLOW];
    for (int i = 0; i < N_FOLLOW; i++) {
        tport_token ya = argmax(tport_session_logits(a), nv, NULL), yb = argmax(tport_session_logits(b), nv, NULL);
        same += ya == yb;
        bool is_new = true;
        for (int j = 0; j < distinct; j++)
            is_new &= seen[j] != ya;
        if (is_new)
            seen[distinct++] = ya;
        if (ya != yb || tport_session_eval(a, &ya, 1) || tport_session_eval(b, &yb, 1))
            break;
    }
    CHECK(same == N_FOLLOW, "%s: greedy continuation after the shift: %d of %d tokens agree", label, same,
          N_FOLLOW);
    printf("%s (%s cache): %d greedy tokens after the shift agree (%d distinct)\n", label, kv_f32 ? "f32" : "f16",
           same, distinct);

    /* three more shifts; then the cache against a fresh evaluation of
     * the tokens the session holds */
    for (int shifts = 0; shifts < 3;) {
        x = argmax(tport_session_logits(a), nv, NULL);
        if (tport_session_pos(a) == n_ctx) {
            CHECK(tport_session_shift(a, n_keep, n_discard) == 0, "%s: shift: %s", label, tport_last_error());
            shifts++;
        }
        if (tport_session_eval(a, &x, 1)) {
            CHECK(0, "%s: eval: %s", label, tport_last_error());
            break;
        }
    }
    memcpy(la, tport_session_logits(a), (size_t)nv * sizeof *la);
    tport_session_reset(b);
    CHECK(tport_session_eval(b, tport_session_tokens(a), tport_session_pos(a)) == 0, "%s: fresh eval: %s", label,
          tport_last_error());
    d = max_abs_diff(la, tport_session_logits(b), nv);
    printf("%s (%s cache): after 4 shifts max |logit diff| %.3g\n", label, kv_f32 ? "f32" : "f16", d);
    worst = fmax(worst, d);
    CHECK(d <= (kv_f32 ? TOL_F32 : TOL_F16), "%s: logits after 4 shifts differ by %g", label, d);

    /* bad arguments are refused and change nothing */
    int32_t pos = tport_session_pos(a);
    CHECK(tport_session_shift(a, 0, 0) == TPORT_STATUS_INVALID_ARGUMENT, "%s: shift of 0", label);
    CHECK(tport_session_shift(a, pos, 1) == TPORT_STATUS_INVALID_ARGUMENT, "%s: shift past the end", label);
    CHECK(tport_session_pos(a) == pos, "%s: a refused shift moved the position", label);
out:
    free(la);
    free(kept);
    tport_session_free(a);
    tport_session_free(b);
    tport_model_free(m);
    return worst;
}

static float cache_at(const tport_kv_layer *kv, bool value, size_t i) {
    const void *c = value ? kv->v : kv->k;
    if (kv->type == TPORT_TYPE_F32)
        return ((const float *)c)[i];
    return tport_fp16_to_fp32(((const uint16_t *)c)[i]);
}

/* The RoPE definition: pairs (2i, 2i+1) or, NeoX, (i, i + n_rot/2),
 * rotated by delta * scale * base^(-2i/n_rot); dims past n_rot unchanged. */
static void rope_ref(const tport_model_shape *sh, const float *x, int32_t delta, double *y) {
    int half = sh->n_rot / 2;
    for (int i = 0; i < sh->head_dim; i++)
        y[i] = x[i];
    for (int i = 0; i < half; i++) {
        double theta = delta * (double)sh->rope_scale * pow(sh->rope_base, -2.0 * i / sh->n_rot);
        int j0 = sh->rope_mode == TPORT_ROPE_NEOX ? i : 2 * i, j1 = sh->rope_mode == TPORT_ROPE_NEOX ? i + half : 2 * i + 1;
        y[j0] = x[j0] * cos(theta) - x[j1] * sin(theta);
        y[j1] = x[j0] * sin(theta) + x[j1] * cos(theta);
    }
}

/* 2. above: every layer's cache before and after one shift. */
static void check_cache(const char *label, const char *path, bool kv_f32, int32_t n_ctx) {
    tport_model_params mp = {.n_threads = 2};
    tport_model *m = tport_model_load(path, &mp);
    CHECK(m != NULL, "%s: load: %s", label, tport_last_error());
    tport_session_params sp = {.n_ctx = n_ctx, .n_batch = 16, .kv_f32 = kv_f32};
    tport_session *a = m ? tport_session_new(m, &sp) : NULL;
    CHECK(a != NULL, "%s: session: %s", label, tport_last_error());
    if (!a) {
        tport_model_free(m);
        return;
    }
    const tport_model_shape *sh = &m->sh;
    int32_t nv = sh->n_vocab, hd = sh->head_dim;
    size_t row = (size_t)hd * (size_t)sh->n_head_kv, per = row * (size_t)n_ctx;
    float *old = malloc(2 * per * (size_t)sh->n_layer * sizeof *old);
    float x[512];
    double y[512];
    tport_token t = tport_model_bos(m) >= 0 ? tport_model_bos(m) : 1;
    CHECK(tport_session_eval(a, &t, 1) == 0, "%s: eval", label);
    while (tport_session_pos(a) < n_ctx) {
        t = argmax(tport_session_logits(a), nv, NULL);
        CHECK(tport_session_eval(a, &t, 1) == 0, "%s: eval", label);
    }
    for (int32_t il = 0; il < sh->n_layer; il++)
        for (int v = 0; v < 2; v++)
            for (size_t i = 0; i < per; i++)
                old[(2 * (size_t)il + (size_t)v) * per + i] = cache_at(&a->kv[il], v, i);
    int32_t n_keep = 3, n_discard = (n_ctx - n_keep) / 2, n_moved = n_ctx - n_keep - n_discard;
    CHECK(tport_session_shift(a, n_keep, n_discard) == 0, "%s: shift: %s", label, tport_last_error());
    double worst_k = 0, worst_k_rel = 0;
    int bad_prefix = 0, bad_v = 0;
    double tol = kv_f32 ? 2e-6 : 1e-3;
    for (int32_t il = 0; il < sh->n_layer; il++) {
        const float *ok = old + 2 * (size_t)il * per, *ov = ok + per;
        for (size_t i = 0; i < (size_t)n_keep * row; i++)
            bad_prefix += cache_at(&a->kv[il], 0, i) != ok[i] || cache_at(&a->kv[il], 1, i) != ov[i];
        for (int32_t p = 0; p < n_moved; p++) {
            size_t to = (size_t)(n_keep + p) * row, from = (size_t)(n_keep + n_discard + p) * row;
            for (size_t i = 0; i < row; i++)
                bad_v += cache_at(&a->kv[il], 1, to + i) != ov[from + i];
            for (int32_t h = 0; h < sh->n_head_kv; h++) {
                memcpy(x, ok + from + (size_t)h * (size_t)hd, (size_t)hd * sizeof *x);
                rope_ref(sh, x, -n_discard, y);
                for (int32_t i = 0; i < hd; i++) {
                    double d = fabs(cache_at(&a->kv[il], 0, to + (size_t)h * (size_t)hd + (size_t)i) - y[i]);
                    worst_k = fmax(worst_k, d);
                    worst_k_rel = fmax(worst_k_rel, d / (1 + fabs(y[i])));
                }
            }
        }
    }
    printf("%s (%s cache, %d layers): moved keys vs the RoPE definition: max |diff| %.3g (%.3g x (1 + |k|)); "
           "kept prefix changed %d, moved values changed %d\n", label, kv_f32 ? "f32" : "f16", (int)sh->n_layer,
           worst_k, worst_k_rel, bad_prefix, bad_v);
    CHECK(worst_k_rel <= tol, "%s: moved keys differ from the rotated old keys by %g x (1 + |k|)", label, worst_k_rel);
    CHECK(bad_prefix == 0 && bad_v == 0, "%s: prefix or values changed by the shift", label);
    /* and generation goes on */
    CHECK(tport_session_eval(a, &t, 1) == 0 && tport_session_logits(a), "%s: eval after shift", label);
    free(old);
    tport_session_free(a);
    tport_model_free(m);
}

/* Runs a shell command; its stdout into out (cap bytes); the exit status. */
static int run_cmd(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_ids(const char *s) {
    int n = *s && *s != '\n';
    for (; *s; s++)
        n += *s == ',';
    return n;
}

/* tport run -n past the context: shifts by default, stops with
 * --no-context-shift, and the first context's worth of ids agree. */
static void check_run_cli(const char *model) {
    char cmd[2048], shifted[8192], stopped[8192], err[8192];
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --ids --temp 0 -n 100 --ctx 32 2>/dev/null", TPORT_CLI, model);
    CHECK(run_cmd(cmd, shifted, sizeof shifted) == 0, "tport run with a context shift failed");
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --ids --temp 0 -n 100 --ctx 32 --no-context-shift 2>&1 >/dev/null",
             TPORT_CLI, model);
    CHECK(run_cmd(cmd, err, sizeof err) == 0 && strstr(err, "context of 32 tokens is full"), "--no-context-shift: %s",
          err);
    snprintf(cmd, sizeof cmd, "'%s' run -m '%s' --ids --temp 0 -n 100 --ctx 32 --no-context-shift 2>/dev/null",
             TPORT_CLI, model);
    CHECK(run_cmd(cmd, stopped, sizeof stopped) == 0, "tport run --no-context-shift failed");
    CHECK(count_ids(shifted) == 100, "run -n 100 --ctx 32 gave %d ids: %s", count_ids(shifted), shifted);
    CHECK(count_ids(stopped) == 32, "--no-context-shift gave %d ids", count_ids(stopped));
    size_t k = strlen(stopped) - 1; /* without its newline */
    CHECK(!strncmp(shifted, stopped, k), "the ids before the first shift differ:\n %s\n %s", shifted, stopped);
    printf("tport run -n 100 --ctx 32: %d ids, the first 32 as without a shift\n", count_ids(shifted));
}

static bool synth(const char *args, const char *path) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' synth %s -o '%s' >/dev/null 2>&1", TPORT_CLI, args, path);
    return system(cmd) == 0;
}

static void check_refused(const char *arch, const char *args, const char *want) {
    char path[256];
    snprintf(path, sizeof path, "%s/tport-shift-%s-%d.gguf", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", arch,
             (int)getpid());
    char synth_args[256];
    snprintf(synth_args, sizeof synth_args, "--arch %s %s", arch, args);
    CHECK(synth(synth_args, path), "synth %s", arch);
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "%s: load: %s", arch, tport_last_error());
    tport_session_params sp = {.n_ctx = 32};
    tport_session *s = m ? tport_session_new(m, &sp) : NULL;
    if (s) {
        tport_token ids[8] = {1, 5, 6, 7, 8, 9, 10, 11};
        CHECK(tport_session_eval(s, ids, 8) == 0, "%s: eval", arch);
        CHECK(!tport_model_can_shift(m), "%s: can_shift", arch);
        CHECK(tport_session_shift(s, 1, 3) == TPORT_STATUS_UNSUPPORTED && strstr(tport_last_error(), want),
              "%s: shift must be refused naming '%s': %s", arch, want, tport_last_error());
        CHECK(tport_session_pos(s) == 8, "%s: a refused shift changed the session", arch);
    }
    tport_session_free(s);
    tport_model_free(m);
    remove(path);
}

int main(void) {
    char stories[1024], llama1[256], qwen1[256], llama2[256], qwen2[256], ds1[256];
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(llama1, sizeof llama1, "%s/tport-shift-llama1-%d.gguf", tmp, (int)getpid());
    snprintf(qwen1, sizeof qwen1, "%s/tport-shift-qwen1-%d.gguf", tmp, (int)getpid());
    snprintf(llama2, sizeof llama2, "%s/tport-shift-llama2-%d.gguf", tmp, (int)getpid());
    snprintf(qwen2, sizeof qwen2, "%s/tport-shift-qwen2-%d.gguf", tmp, (int)getpid());
    snprintf(ds1, sizeof ds1, "%s/tport-shift-ds1-%d.gguf", tmp, (int)getpid());
    /* grouped KV heads, and a gain that lets attention matter */
    CHECK(synth("--arch llama --dim 128 --heads 4 --kv-heads 2 --layers 1 --ctx 128 --out-gain 4 --seed 3", llama1),
          "synth llama");
    CHECK(synth("--arch qwen2 --dim 128 --heads 4 --kv-heads 2 --layers 1 --ctx 128 --out-gain 4 --seed 4", qwen1),
          "synth qwen2");
    CHECK(synth("--arch llama --dim 128 --heads 4 --kv-heads 2 --layers 2 --ctx 128 --out-gain 4 --seed 5", llama2),
          "synth llama");
    CHECK(synth("--arch qwen2 --dim 128 --heads 4 --kv-heads 2 --layers 2 --ctx 128 --out-gain 4 --seed 6", qwen2),
          "synth qwen2");
    /* deepseek2's latent cache row: only its last n_rot values turn */
    CHECK(synth("--arch deepseek2 --dim 128 --heads 4 --layers 1 --ctx 128 --rot 16 --out-gain 4 --seed 8", ds1),
          "synth deepseek2");
    bool have_stories = test_shared_path("models/stories260K.bin", stories, sizeof stories);
    if (!have_stories)
        printf("stories260K: skipped (../shared/models/stories260K.bin absent)\n");
    double worst_f32 = 0, worst_f16 = 0;
    for (int f32 = 1; f32 >= 0; f32--) {
        double *w = f32 ? &worst_f32 : &worst_f16;
        *w = fmax(*w, check_model("synthetic 1-layer llama", llama1, f32, 64));
        *w = fmax(*w, check_model("synthetic 1-layer qwen2", qwen1, f32, 64));
        *w = fmax(*w, check_model("synthetic 1-layer deepseek2", ds1, f32, 64));
        check_cache("synthetic 2-layer llama", llama2, f32, 64);
        check_cache("synthetic 2-layer qwen2", qwen2, f32, 64);
        if (have_stories)
            check_cache("stories260K", stories, f32, 96);
    }
    check_run_cli(have_stories ? stories : llama2);
    printf("worst max |logit diff| after shifts: f32 cache %.3g (tolerance %g), f16 cache %.3g (tolerance %g)\n",
           worst_f32, TOL_F32, worst_f16, TOL_F16);
    char out[4096], cmd[2048];
    snprintf(cmd, sizeof cmd, "'%s' synth --arch gpt2 -o '%s.gpt2' >/dev/null 2>&1 && '%s' run -m '%s.gpt2' --ids "
             "--temp 0 -n 100 --ctx 32 2>&1 >/dev/null; rm -f '%s.gpt2'", TPORT_CLI, llama1, TPORT_CLI, llama1, llama1);
    CHECK(run_cmd(cmd, out, sizeof out) == 0 && strstr(out, "learned position embeddings, not RoPE"),
          "tport run on gpt2 past the context: %s", out);
    remove(llama1);
    remove(qwen1);
    remove(llama2);
    remove(qwen2);
    remove(ds1);
    check_refused("gpt2", "", "learned position embeddings");
    check_refused("mpt", "", "ALiBi");
    return test_finish("test_context_shift");
}
