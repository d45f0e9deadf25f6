/* test_embed NAME: the entry NAME of data/embed_refs.json regenerated with
 * `tport synth`, its pooled, normalised embedding (tport_session_embed)
 * against llama.cpp's (llamacpp_embed.cpp).
 *
 * Tolerance: cosine > 0.9999 and every component within 5e-5 of
 * llama.cpp's, the norm before normalisation within 1e-3 relative.  Both
 * compute in f32 with f32 caches; what differs is the order of sums
 * (matmul blocking, softmax, the norms), about 1e-6 relative per op;
 * measured: at most 4e-6 on components of ~0.1 (gpt2-mean), 2e-7 for the
 * others, so 5e-5 leaves room for other CPUs' SIMD paths.  A wrong pooling (mean for last, the wrong row) or a missing final
 * norm moves the cosine below 0.99 (checked below for the pooling: the
 * last row's normed state must NOT match a mean or CLS reference).
 *
 * bert entries (a non-causal encoder, bert-bge's WordPiece vocabulary from
 * ../shared: skipped without it) run the same way, with --out-gain 0.5:
 * larger gains make every row of a random encoder alike (mean and last
 * row at cosine 0.99), and then the pooling would not be tested.
 *
 * test_embed refuse: a file declaring pooling none or rank is refused.
 * test_embed normalize: embd_normalize's norms (library and tport embed). */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test_util.h"
#include "json_min.h"
#include "tport/tport.h"

#define COS_MIN 0.9999
#define ABS_MAX 5e-5
#define NORM_REL_MAX 1e-3

static void temp_path(char *path, size_t cap, const char *tag) {
    const char *dir = getenv("TMPDIR");
    snprintf(path, cap, "%s/tport-embed-%s-XXXXXX", dir && *dir ? dir : "/tmp", tag);
    int fd = mkstemp(path);
    if (fd >= 0)
        close(fd);
}

static bool synth(const char *recipe, const char *path) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' synth %s -o '%s' >/dev/null", TPORT_CLI, recipe, path);
    return system(cmd) == 0;
}

static double cosine(const float *a, const float *b, int n) {
    double ab = 0, aa = 0, bb = 0;
    for (int i = 0; i < n; i++) {
        ab += (double)a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += (double)b[i] * b[i];
    }
    return aa > 0 && bb > 0 ? ab / sqrt(aa * bb) : 0;
}

static int refuse(void) {
    const char *name = "test_embed refuse";
    const char *kinds[] = {"none", "rank"};
    for (int k = 0; k < 2; k++) {
        char path[256], recipe[256];
        temp_path(path, sizeof path, kinds[k]);
        snprintf(recipe, sizeof recipe, "--dim 32 --layers 1 --heads 2 --ff 64 --vocab 300 --ctx 64 --pooling %s",
                 kinds[k]);
        CHECK(synth(recipe, path), "synth %s", recipe);
        tport_model *m = tport_model_load(path, NULL);
        CHECK(m != NULL, "load: %s", tport_last_error());
        tport_session *s = m ? tport_session_new(m, NULL) : NULL;
        if (s) {
            float out[32];
            tport_token ids[] = {1, 2, 3};
            CHECK((int)tport_model_pooling(m) == (k ? TPORT_POOLING_RANK : TPORT_POOLING_NONE), "pooling %d",
                  (int)tport_model_pooling(m));
            tport_status st = tport_session_embed(s, ids, 3, true, out, 32);
            CHECK(st == TPORT_STATUS_UNSUPPORTED && strstr(tport_last_error(), "pooling"),
                  "pooling %s: status %d (%s)", kinds[k], (int)st, tport_last_error());
            /* too little room is refused before anything runs */
            CHECK(tport_session_embed(s, ids, 3, true, out, 31) == TPORT_STATUS_INVALID_ARGUMENT, "cap 31");
        }
        tport_session_free(s);
        tport_model_free(m);
        unlink(path);
    }
    return test_finish(name);
}

/* tport embed --embd-normalize NORM (none when ""): the vector printed. */
static int cli_embed(const char *path, const char *norm, double *v, int cap) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' embed --threads 1 -m '%s' --ids 1,5,9,2 %s%s 2>/dev/null", TPORT_CLI, path,
             *norm ? "--embd-normalize " : "", norm);
    FILE *f = popen(cmd, "r");
    static char line[1 << 16];
    char *at = f && fgets(line, sizeof line, f) ? strstr(line, "\"embedding\": [") : NULL;
    int n = 0;
    for (at = at ? at + 14 : NULL; at && n < cap; n++) {
        char *end;
        v[n] = strtod(at, &end);
        if (end == at)
            break;
        at = *end == ',' ? end + 1 : end;
    }
    int rc = f ? pclose(f) : -1;
    return rc == 0 ? n : -1;
}

/* test_embed normalize: llama-server's embd_normalize norms
 * (tport_embd_normalize) on vectors worked out by hand, and `tport embed
 * --embd-normalize N` against its raw vector divided here. */
static int normalize(void) {
    const char *name = "test_embed normalize";
    static const float in[4] = {3, -4, 0, 12};
    static const struct {
        int32_t p;
        double want[4];
    } cases[] = {
        {-1, {3, -4, 0, 12}},
        {0, {8190, -10920, 0, 32760}}, /* 32760 / 12 = 2730 */
        {1, {3.0 / 19, -4.0 / 19, 0, 12.0 / 19}},
        {2, {3.0 / 13, -4.0 / 13, 0, 12.0 / 13}}, /* 9 + 16 + 144 = 13^2 */
        {3, {3 / 12.207054953820636, -4 / 12.207054953820636, 0, 12 / 12.207054953820636}}, /* 27 + 64 + 1728 = 1819 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        float out[4];
        tport_embd_normalize(in, out, 4, cases[c].p);
        for (int i = 0; i < 4; i++)
            CHECK(fabs(out[i] - cases[c].want[i]) <= 1e-6 * fmax(1.0, fabs(cases[c].want[i])),
                  "norm %d: [%d] %.9g, want %.9g", (int)cases[c].p, i, out[i], cases[c].want[i]);
    }
    /* in place; a zero vector stays zero; a large p is the largest
     * magnitude (2^2000 would overflow a double: no zeros) */
    float z[3] = {0, 0, 0}, big[2] = {2, 1}, same[4] = {3, -4, 0, 12};
    tport_embd_normalize(z, z, 3, 2);
    tport_embd_normalize(z, z, 3, 0);
    CHECK(z[0] == 0 && z[1] == 0 && z[2] == 0, "a zero vector: %g %g %g", z[0], z[1], z[2]);
    tport_embd_normalize(big, big, 2, 2000);
    CHECK(fabs(big[0] - 1.0) < 1e-6 && fabs(big[1] - 0.5) < 1e-6, "p 2000: %.9g %.9g", big[0], big[1]);
    tport_embd_normalize(same, same, 4, 2);
    CHECK(fabs(same[3] - 12.0 / 13) < 1e-6, "in place: %.9g", same[3]);

    char path[256];
    temp_path(path, sizeof path, "normalize");
    CHECK(synth("--dim 32 --layers 1 --heads 2 --ff 64 --vocab 300 --ctx 64", path), "synth");
    static double raw[64], got[64];
    int n = cli_embed(path, "-1", raw, 64);
    CHECK(n == 32, "tport embed --embd-normalize -1: %d values", n);
    static const int ps[] = {0, 1, 2, 3, 5};
    for (size_t k = 0; n == 32 && k < sizeof ps / sizeof ps[0]; k++) {
        char arg[16];
        snprintf(arg, sizeof arg, "%d", ps[k]);
        int m = cli_embed(path, arg, got, 64);
        double norm = 0;
        for (int i = 0; i < n; i++)
            norm = ps[k] == 0 ? fmax(norm, fabs(raw[i]) / 32760) : norm + pow(fabs(raw[i]), ps[k]);
        if (ps[k])
            norm = pow(norm, 1.0 / ps[k]);
        double worst = m == n ? 0 : 1;
        for (int i = 0; m == n && i < n; i++)
            worst = fmax(worst, fabs(got[i] - raw[i] / norm) / fmax(1.0, fabs(raw[i] / norm)));
        CHECK(norm > 0 && fabs(norm - 1.0) > 1e-3 && worst < 1e-6, "--embd-normalize %d: %d values, worst "
              "relative error %.3g (norm %.6g)", ps[k], m, worst, norm);
    }
    double def[64];
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' embed -m '%s' --ids 1,5,9,2 --embd-normalize -2 >/dev/null 2>&1", TPORT_CLI, path);
    CHECK(system(cmd) != 0, "--embd-normalize -2 is refused");
    /* without the option: Euclidean, as llama-server's default */
    CHECK(cli_embed(path, "", def, 64) == 32 && cli_embed(path, "2", got, 64) == 32 && !memcmp(def, got, sizeof def),
          "the default is --embd-normalize 2");
    unlink(path);
    return test_finish(name);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_embed NAME|refuse\n");
        return 2;
    }
    if (!strcmp(argv[1], "refuse"))
        return refuse();
    if (!strcmp(argv[1], "normalize"))
        return normalize();
    char test_name[96];
    snprintf(test_name, sizeof test_name, "test_embed %s", argv[1]);
    json *refs = json_load(TPORT_MODEL_TEST_DATA "/embed_refs.json");
    CHECK(refs != NULL, "cannot read embed_refs.json");
    const json *list = refs ? json_get(refs, "entries") : NULL, *e = NULL;
    for (size_t i = 0; list && i < list->n && !e; i++) {
        const json *n = json_get(&list->items[i], "name");
        if (n && n->kind == JSON_STRING && !strcmp(n->str, argv[1]))
            e = &list->items[i];
    }
    CHECK(e != NULL, "no entry %s", argv[1]);
    const json *recipe = e ? json_get(e, "synth") : NULL, *ref = e ? json_get(e, "llamacpp") : NULL;
    const json *ids_j = ref ? json_get(ref, "prompt_ids") : NULL, *emb_j = ref ? json_get(ref, "embedding") : NULL;
    const json *norm_j = ref ? json_get(ref, "norm") : NULL, *pool_j = ref ? json_get(ref, "pooling") : NULL;
    if (!recipe || recipe->kind != JSON_STRING || !ids_j || !emb_j || !norm_j || !pool_j || ids_j->n < 1 ||
        ids_j->n > 64 || emb_j->n < 1 || emb_j->n > 4096) {
        CHECK(false, "entry %s is incomplete", argv[1]);
        json_free(refs);
        return test_finish(test_name);
    }
    /* a vocabulary from ../shared (bert's WordPiece), or none */
    const json *vocab = json_get(e, "vocab_from");
    char vocab_path[1024] = "", full[2048];
    if (vocab && vocab->kind == JSON_STRING && vocab->str[0] &&
        !test_shared_path(vocab->str, vocab_path, sizeof vocab_path)) {
        json_free(refs);
        test_skip(test_name, "the vocabulary file is not in ../shared");
    }
    snprintf(full, sizeof full, "%s%s%s%s", recipe->str, vocab_path[0] ? " --vocab-from '" : "", vocab_path,
             vocab_path[0] ? "'" : "");
    char path[256];
    temp_path(path, sizeof path, argv[1]);
    CHECK(synth(full, path), "synth %s", full);
    tport_model *m = tport_model_load(path, NULL);
    CHECK(m != NULL, "load: %s", tport_last_error());
    tport_session_params sp = {.kv_f32 = true}; /* as the reference */
    tport_session *s = m ? tport_session_new(m, &sp) : NULL;
    int n_embd = (int)emb_j->n, n_ids = (int)ids_j->n;
    if (s) {
        CHECK(tport_model_n_embd(m) == n_embd, "n_embd %d, reference %d", (int)tport_model_n_embd(m), n_embd);
        CHECK((int)tport_model_pooling(m) == (int)pool_j->number, "pooling %d, llama.cpp's %d",
              (int)tport_model_pooling(m), (int)pool_j->number);
        tport_token ids[64];
        float want[4096], got[4096], raw[4096], last[4096];
        for (int i = 0; i < n_ids; i++)
            ids[i] = (tport_token)ids_j->items[i].number;
        for (int i = 0; i < n_embd; i++)
            want[i] = (float)emb_j->items[i].number;
        /* evaluate something first: embed must start from position 0;
         * an encoder (bert) refuses to give logits */
        bool encoder = !tport_model_generates(m);
        tport_status ev = tport_session_eval(s, ids, 3);
        CHECK(encoder ? ev != TPORT_STATUS_OK && strstr(tport_last_error(), "encoder") : ev == TPORT_STATUS_OK,
              "eval: status %d: %s", (int)ev, tport_last_error());
        tport_status st = tport_session_embed(s, ids, n_ids, true, got, 4096);
        CHECK(st == TPORT_STATUS_OK, "embed: %s", tport_last_error());
        st = st ? st : tport_session_embed(s, ids, n_ids, false, raw, n_embd);
        CHECK(st == TPORT_STATUS_OK, "embed (raw): %s", tport_last_error());
        if (!st) {
            double cos = cosine(got, want, n_embd), dmax = 0, sq = 0, spread = 0;
            for (int i = 0; i < n_embd; i++) {
                dmax = fmax(dmax, fabs((double)got[i] - want[i]));
                sq += (double)raw[i] * raw[i];
                spread += (double)want[i] * want[i] > 1e-4;
            }
            double rel = fabs(sqrt(sq) - norm_j->number) / norm_j->number;
            printf("  %s: cosine %.8f, max |diff| %.3g, norm %.6g (llama.cpp %.6g)\n", argv[1], cos, dmax,
                   sqrt(sq), norm_j->number);
            CHECK(spread >= n_embd / 2, "the reference is nearly zero in most components");
            CHECK(cos > COS_MIN, "cosine %.8f <= %g", cos, COS_MIN);
            CHECK(dmax < ABS_MAX, "max |diff| %.3g >= %g", dmax, ABS_MAX);
            CHECK(rel < NORM_REL_MAX, "norm %.6g vs %.6g", sqrt(sq), norm_j->number);
            CHECK(fabs(cosine(got, raw, n_embd) - 1.0) < 1e-6, "normalising changed the direction");
            /* the pooling matters: the last row alone does not give a
             * mean or CLS reference */
            tport_stage_io io = {.ids = ids, .n = n_ids, .hidden_out = last, .out_last_only = true, .normed = true};
            tport_session_reset(s);
            CHECK(tport_session_eval_stage(s, &io) == TPORT_STATUS_OK, "stage: %s", tport_last_error());
            double c_last = cosine(last, want, n_embd);
            if ((int)pool_j->number == TPORT_POOLING_LAST)
                CHECK(c_last > COS_MIN, "last row: cosine %.8f", c_last);
            else
                CHECK(c_last < 0.99, "pooling %d: the last row alone matches too (cosine %.6f): the test "
                      "cannot tell poolings apart", (int)pool_j->number, c_last);
        }
    }
    /* tport embed --ids prints the same vector */
    if (s) {
        char cmd[8192], *p = cmd;
        p += snprintf(p, sizeof cmd, "'%s' embed --threads 1 -m '%s' --ids ", TPORT_CLI, path);
        for (int i = 0; i < n_ids; i++)
            p += snprintf(p, sizeof cmd - (size_t)(p - cmd), i ? ",%d" : "%d", (int)ids_j->items[i].number);
        FILE *f = popen(cmd, "r");
        static char line[1 << 16];
        char *at = f && fgets(line, sizeof line, f) ? strstr(line, "\"embedding\": [") : NULL;
        double dmax = at ? 0 : 1;
        int got = 0;
        for (at = at ? at + 14 : NULL; at && got < n_embd; got++) {
            char *end;
            double x = strtod(at, &end);
            if (end == at)
                break;
            dmax = fmax(dmax, fabs(x - emb_j->items[got].number));
            at = *end == ',' ? end + 1 : end;
        }
        if (f)
            pclose(f);
        CHECK(got == n_embd && dmax < ABS_MAX, "tport embed: %d values, max |diff| %.3g", got, dmax);
    }
    tport_session_free(s);
    tport_model_free(m);
    unlink(path);
    json_free(refs);
    return test_finish(test_name);
}
