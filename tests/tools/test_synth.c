/* `tport synth`: the file it writes reads back as a GGUF v3 llama model of
 * the asked shape and types, with a valid generated vocabulary, norms of
 * exactly 1 and finite random weights of the documented scale (standard
 * deviation 1/sqrt(fan_in)); the same seed gives the same bytes, another
 * seed other weights, the quantized file is the F32 file up to
 * quantization error, and a type whose block does not divide a row falls
 * back as llama.cpp's quantizer does.  Bad arguments fail cleanly. */
#include <math.h>
#include <stdint.h>

#include "../test_util.h"
#include "formats/model_file.h"
#include "quant/type_table.h"
#include "tool_run.h"

#define NAME "test_synth"

static char dir[1024];

static const char *path_in(const char *file) {
    static char buf[8][2048];
    static int k;
    char *p = buf[k++ % 8];
    if (snprintf(p, sizeof buf[0], "%s/%s", dir, file) >= (int)sizeof buf[0])
        p[0] = '\0'; /* too long: opening "" fails visibly */
    return p;
}

static int synth(const char *opts, const char *file) {
    char args[8192];
    snprintf(args, sizeof args, "synth %s -o '%s' >/dev/null", opts, path_in(file));
    return tool_run(args);
}

static tport_model_file *open_model(const char *file) {
    tport_model_file *mf = NULL;
    tport_status st = tport_model_file_open(path_in(file), &mf);
    CHECK(st == TPORT_STATUS_OK, "open %s: %s", file, tport_last_error());
    return st == TPORT_STATUS_OK ? mf : NULL;
}

/* The tensor, checked for type and 1-D or 2-D shape (ne1 == 0: 1-D). */
static const tport_mf_tensor *expect_tensor(const tport_model_file *mf, const char *name, tport_type_id type,
                                            int64_t ne0, int64_t ne1) {
    const tport_mf_tensor *t = tport_model_file_find(mf, name);
    CHECK(t != NULL, "%s missing", name);
    if (!t)
        return NULL;
    CHECK(t->type == type, "%s: type %d, want %d", name, (int)t->type, (int)type);
    CHECK(t->n_dims == (ne1 ? 2 : 1), "%s: %d dims", name, t->n_dims);
    CHECK(t->ne[0] == ne0 && t->ne[1] == (ne1 ? ne1 : 1), "%s: ne %lld x %lld, want %lld x %lld", name,
          (long long)t->ne[0], (long long)t->ne[1], (long long)ne0, (long long)(ne1 ? ne1 : 1));
    return t;
}

/* Dequantized values of a tensor (caller frees), or NULL. */
static float *values(const tport_mf_tensor *t, int64_t *n) {
    const tport_type_traits *tr = t ? tport_traits(t->type) : NULL;
    *n = t ? t->ne[0] * t->ne[1] : 0;
    float *v = tr && tr->to_float ? malloc((size_t)*n * sizeof *v) : NULL;
    if (v)
        tr->to_float(t->data, v, *n);
    return v;
}

/* Weights uniform in [-a, a], a = sqrt(3/fan_in): bounded, mean ~0, std ~1/sqrt(fan_in). */
static void check_weight_stats(const tport_mf_tensor *t, double tolerance) {
    int64_t n;
    float *v = values(t, &n);
    CHECK(v != NULL, "%s: cannot dequantize", t ? t->name : "?");
    if (!v)
        return;
    double a = sqrt(3.0 / (double)t->ne[0]), sum = 0, sum2 = 0, amax = 0;
    int finite = 1;
    for (int64_t i = 0; i < n; i++) {
        finite &= isfinite(v[i]) != 0;
        sum += v[i];
        sum2 += (double)v[i] * v[i];
        if (fabs(v[i]) > amax)
            amax = fabs(v[i]);
    }
    double mean = sum / (double)n, sd = sqrt(sum2 / (double)n - mean * mean), want_sd = 1.0 / sqrt((double)t->ne[0]);
    CHECK(finite, "%s: non-finite weights", t->name);
    CHECK(amax <= a * (1.0 + tolerance), "%s: |w| up to %g, bound %g", t->name, amax, a);
    CHECK(fabs(sd / want_sd - 1.0) < 0.1, "%s: std %g, want about %g", t->name, sd, want_sd);
    CHECK(fabs(mean) < 0.1 * want_sd, "%s: mean %g", t->name, mean);
    free(v);
}

static void check_norm_is_one(const tport_mf_tensor *t) {
    int64_t n;
    float *v = values(t, &n);
    int ones = 0;
    for (int64_t i = 0; v && i < n; i++)
        ones += v[i] == 1.0f;
    CHECK(v && ones == n, "%s: %d of %lld values are 1", t ? t->name : "?", ones, (long long)n);
    free(v);
}

static void check_generated_vocab(const tport_vocab *v, int32_t n) {
    CHECK(v->n_tokens == n, "vocab has %d tokens, want %d", v->n_tokens, n);
    CHECK(!strcmp(v->model, "llama"), "tokenizer model '%s'", v->model);
    CHECK(v->bos == 1 && v->eos == 2 && v->unk == 0, "bos %d eos %d unk %d", v->bos, v->eos, v->unk);
    if (v->n_tokens != n || !v->tokens || !v->token_type)
        return;
    CHECK(!strcmp(v->tokens[0], "<unk>") && !strcmp(v->tokens[1], "<s>") && !strcmp(v->tokens[2], "</s>"),
          "special tokens %s %s %s", v->tokens[0], v->tokens[1], v->tokens[2]);
    CHECK(v->token_type[0] == 2 && v->token_type[1] == 3 && v->token_type[2] == 3, "special token types");
    int bytes_ok = 1;
    for (int b = 0; b < 256; b++) {
        char want[8];
        snprintf(want, sizeof want, "<0x%02X>", b);
        bytes_ok &= !strcmp(v->tokens[3 + b], want) && v->token_type[3 + b] == 6;
    }
    CHECK(bytes_ok, "byte tokens <0x00>..<0xFF> at 3..258 with type 6");
    int unique = 1;
    for (int32_t i = 0; i < n && unique; i++)
        for (int32_t j = i + 1; j < n && unique; j++)
            unique &= strcmp(v->tokens[i], v->tokens[j]) != 0;
    CHECK(unique, "token texts are unique");
}

static bool same_file(const char *a, const char *b) {
    FILE *fa = fopen(path_in(a), "rb"), *fb = fopen(path_in(b), "rb");
    bool same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        same = ca == cb;
        if (ca == EOF || cb == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static bool file_exists(const char *file) {
    FILE *f = fopen(path_in(file), "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

static void test_shape_and_types(void) {
    const char *shape = "--dim 64 --layers 2 --heads 4 --kv-heads 2 --ff 96 --vocab 300 --ctx 128";
    char opts[512];
    snprintf(opts, sizeof opts, "%s --type q8_0 --seed 7", shape);
    CHECK(synth(opts, "q8.gguf") == 0, "synth q8_0 failed");
    snprintf(opts, sizeof opts, "%s --type f32 --seed 7", shape);
    CHECK(synth(opts, "f32.gguf") == 0, "synth f32 failed");
    tport_model_file *q = open_model("q8.gguf"), *f = open_model("f32.gguf");
    if (!q || !f)
        goto done;
    CHECK(q->container == TPORT_CONTAINER_GGUF && q->version == 3, "container %d version %u",
          (int)q->container, q->version);
    CHECK(!strcmp(q->arch, "llama"), "arch '%s'", q->arch);
    const tport_mf_hparams *hp = &q->hp;
    CHECK(hp->n_vocab == 300 && hp->n_ctx == 128 && hp->n_embd == 64 && hp->n_ff == 96 && hp->n_layer == 2 &&
              hp->n_head == 4 && hp->n_head_kv == 2 && hp->n_rot == 16,
          "hparams vocab %u ctx %u embd %u ff %u layer %u head %u kv %u rot %u", hp->n_vocab, hp->n_ctx,
          hp->n_embd, hp->n_ff, hp->n_layer, hp->n_head, hp->n_head_kv, hp->n_rot);
    CHECK(fabsf(hp->norm_eps - 1e-5f) < 1e-9f, "norm eps %g", hp->norm_eps);
    CHECK(q->n_tensors == 3 + 9 * 2, "%d tensors", q->n_tensors);
    check_generated_vocab(&q->vocab, 300);

    const tport_type_id Q = TPORT_TYPE_Q8_0;
    check_weight_stats(expect_tensor(q, "token_embd.weight", Q, 64, 300), 0.01);
    check_weight_stats(expect_tensor(q, "output.weight", Q, 64, 300), 0.01);
    check_norm_is_one(expect_tensor(q, "output_norm.weight", TPORT_TYPE_F32, 64, 0));
    for (int l = 0; l < 2; l++) {
        char name[64];
#define BLK(suffix, type, a, b) (snprintf(name, sizeof name, "blk.%d." suffix, l), expect_tensor(q, name, type, a, b))
        check_norm_is_one(BLK("attn_norm.weight", TPORT_TYPE_F32, 64, 0));
        check_norm_is_one(BLK("ffn_norm.weight", TPORT_TYPE_F32, 64, 0));
        check_weight_stats(BLK("attn_q.weight", Q, 64, 64), 0.01);
        check_weight_stats(BLK("attn_k.weight", Q, 64, 32), 0.01);
        check_weight_stats(BLK("attn_v.weight", Q, 64, 32), 0.01);
        check_weight_stats(BLK("attn_output.weight", Q, 64, 64), 0.01);
        check_weight_stats(BLK("ffn_gate.weight", Q, 64, 96), 0.01);
        check_weight_stats(BLK("ffn_up.weight", Q, 64, 96), 0.01);
        check_weight_stats(BLK("ffn_down.weight", Q, 96, 64), 0.01);
#undef BLK
    }

    /* Same seed, other type: the same weights up to Q8_0's rounding (half a
     * step of amax/127, plus the f16 scale's rounding). */
    for (int i = 0; i < f->n_tensors; i++) {
        const tport_mf_tensor *tf = &f->tensors[i], *tq = tport_model_file_find(q, tf->name);
        CHECK(tf->type == TPORT_TYPE_F32, "%s: f32 file has type %d", tf->name, (int)tf->type);
        int64_t nf, nq;
        float *vf = values(tf, &nf), *vq = values(tq, &nq);
        double a = sqrt(3.0 / (double)tf->ne[0]), worst = 0;
        for (int64_t k = 0; vf && vq && nf == nq && k < nf; k++)
            worst = fmax(worst, fabs((double)vf[k] - vq[k]));
        CHECK(vf && vq && nf == nq && worst <= 0.6 * a / 127.0, "%s: f32 vs q8_0 differ by %g (bound %g)",
              tf->name, worst, 0.6 * a / 127.0);
        free(vf);
        free(vq);
    }
done:
    tport_model_file_close(q);
    tport_model_file_close(f);
}

static void test_seeds(void) {
    const char *opts = "--dim 64 --layers 1 --heads 2 --ff 64 --vocab 260 --type q4_0 --seed 11";
    CHECK(synth(opts, "s11a.gguf") == 0 && synth(opts, "s11b.gguf") == 0, "synth seed 11 failed");
    CHECK(same_file("s11a.gguf", "s11b.gguf"), "the same seed gave different files");
    CHECK(synth("--dim 64 --layers 1 --heads 2 --ff 64 --vocab 260 --type q4_0 --seed 12", "s12.gguf") == 0,
          "synth seed 12 failed");
    tport_model_file *a = open_model("s11a.gguf"), *b = open_model("s12.gguf");
    if (a && b) {
        const tport_mf_tensor *ta = tport_model_file_find(a, "blk.0.attn_q.weight");
        const tport_mf_tensor *tb = tport_model_file_find(b, "blk.0.attn_q.weight");
        CHECK(ta && tb && ta->nbytes == tb->nbytes && memcmp(ta->data, tb->data, ta->nbytes) != 0,
              "seeds 11 and 12 gave the same attn_q");
    }
    tport_model_file_close(a);
    tport_model_file_close(b);
}

/* q4_K needs rows of 256: rows of 64 fall back to q5_0 (llama.cpp's rule),
 * rows of 256 and 512 keep q4_K. */
static void test_fallback(void) {
    CHECK(synth("--dim 64 --layers 1 --heads 2 --ff 64 --vocab 259 --type q4_k", "k64.gguf") == 0,
          "synth q4_k dim 64 failed");
    CHECK(synth("--dim 256 --layers 1 --heads 2 --ff 512 --vocab 259 --type q4_K", "k256.gguf") == 0,
          "synth q4_K dim 256 failed");
    tport_model_file *s = open_model("k64.gguf"), *l = open_model("k256.gguf");
    if (s && l) {
        expect_tensor(s, "blk.0.attn_q.weight", TPORT_TYPE_Q5_0, 64, 64);
        expect_tensor(s, "blk.0.attn_norm.weight", TPORT_TYPE_F32, 64, 0);
        check_weight_stats(expect_tensor(l, "blk.0.attn_q.weight", TPORT_TYPE_Q4_K, 256, 256), 0.15);
        check_weight_stats(expect_tensor(l, "blk.0.ffn_down.weight", TPORT_TYPE_Q4_K, 512, 256), 0.15);
        check_generated_vocab(&l->vocab, 259);
    }
    tport_model_file_close(s);
    tport_model_file_close(l);
}

/* --tensor-type: one tensor of a llama-quantize mix gets its own type, the
 * others --type's; a name that is no 2-D tensor, or a type whose block
 * does not divide its rows, is refused. */
static void test_tensor_type(void) {
    CHECK(synth("--dim 256 --layers 2 --heads 4 --ff 256 --vocab 259 --type q4_k --tensor-type "
                "output.weight=q6_k --tensor-type blk.1.ffn_down.weight=q6_K",
                "mix.gguf") == 0,
          "synth with --tensor-type failed");
    tport_model_file *m = open_model("mix.gguf");
    if (m) {
        expect_tensor(m, "output.weight", TPORT_TYPE_Q6_K, 256, 259);
        expect_tensor(m, "blk.1.ffn_down.weight", TPORT_TYPE_Q6_K, 256, 256);
        expect_tensor(m, "blk.0.ffn_down.weight", TPORT_TYPE_Q4_K, 256, 256);
        expect_tensor(m, "blk.1.attn_v.weight", TPORT_TYPE_Q4_K, 256, 256);
    }
    tport_model_file_close(m);
    CHECK(synth("--dim 64 --vocab 300 --tensor-type blk.9.attn_q.weight=q8_0 2>/dev/null", "bad8.gguf") != 0,
          "--tensor-type of a missing tensor accepted");
    CHECK(synth("--dim 64 --vocab 300 --tensor-type blk.0.attn_norm.weight=q8_0 2>/dev/null", "bad9.gguf") != 0,
          "--tensor-type of a 1-D tensor accepted");
    CHECK(synth("--dim 64 --vocab 300 --tensor-type output.weight=q6_k 2>/dev/null", "bad10.gguf") != 0,
          "--tensor-type whose block does not divide the rows accepted");
    CHECK(!file_exists("bad8.gguf") && !file_exists("bad9.gguf") && !file_exists("bad10.gguf"),
          "a refused --tensor-type wrote a file");
}

/* --shape sets every hyperparameter; a later option overrides one. */
static void test_named_shape(void) {
    CHECK(synth("--shape stories15M --layers 1 --type q8_0", "s15.gguf") == 0, "synth stories15M failed");
    tport_model_file *m = open_model("s15.gguf");
    if (m) {
        const tport_mf_hparams *hp = &m->hp;
        CHECK(hp->n_embd == 288 && hp->n_layer == 1 && hp->n_head == 6 && hp->n_head_kv == 6 && hp->n_ff == 768 &&
                  hp->n_vocab == 32000 && hp->n_ctx == 256,
              "stories15M hparams embd %u layer %u head %u kv %u ff %u vocab %u ctx %u", hp->n_embd, hp->n_layer,
              hp->n_head, hp->n_head_kv, hp->n_ff, hp->n_vocab, hp->n_ctx);
        expect_tensor(m, "output.weight", TPORT_TYPE_Q8_0, 288, 32000);
        CHECK(m->vocab.n_tokens == 32000, "vocab %d", m->vocab.n_tokens);
    }
    tport_model_file_close(m);
}

/* --experts-type: the stacks in their own type, the router f32 (as
 * llama-quantize's MXFP4_MOE leaves it), the other matrices --type, and
 * gpt-oss's biases f32 whatever the types (a row per expert included). */
static void test_experts_type(void) {
    CHECK(synth("--arch gpt-oss --dim 64 --layers 1 --heads 2 --ff 64 --vocab 259 --experts 4 --experts-used 2 "
                "--expert-ff 64 --type q8_0 --experts-type mxfp4",
                "moe.gguf") == 0,
          "synth gpt-oss q8_0 + mxfp4 experts failed");
    tport_model_file *m = open_model("moe.gguf");
    if (m) {
        expect_tensor(m, "blk.0.attn_q.weight", TPORT_TYPE_Q8_0, 64, 64);
        expect_tensor(m, "blk.0.ffn_gate_inp.weight", TPORT_TYPE_F32, 64, 4);
        expect_tensor(m, "blk.0.ffn_up_exps.bias", TPORT_TYPE_F32, 64, 4);
        expect_tensor(m, "blk.0.attn_sinks.weight", TPORT_TYPE_F32, 2, 0);
        const tport_mf_tensor *t = tport_model_file_find(m, "blk.0.ffn_down_exps.weight");
        CHECK(t && t->type == TPORT_TYPE_MXFP4 && t->n_dims == 3 && t->ne[2] == 4, "ffn_down_exps not an mxfp4 stack");
    }
    tport_model_file_close(m);
    CHECK(synth("--experts-type mxfp4 2>/dev/null", "bad8.gguf") != 0, "--experts-type without experts accepted");
    CHECK(synth("--experts 4 --experts-used 2 --experts-type nosuch 2>/dev/null", "bad9.gguf") != 0,
          "unknown --experts-type accepted");
    CHECK(!file_exists("bad8.gguf") && !file_exists("bad9.gguf"), "a refused --experts-type wrote a file");
}

static void test_bad_arguments(void) {
    CHECK(synth("--dim 64 --heads 5 --vocab 300 2>/dev/null", "bad1.gguf") != 0, "dim not a multiple of heads");
    CHECK(synth("--dim 64 --heads 4 --kv-heads 3 2>/dev/null", "bad2.gguf") != 0, "heads not a multiple of kv-heads");
    CHECK(synth("--type nosuch 2>/dev/null", "bad3.gguf") != 0, "unknown type accepted");
    CHECK(synth("--type q8_K 2>/dev/null", "bad4.gguf") != 0, "in-memory-only type accepted");
    CHECK(synth("--vocab 100 2>/dev/null", "bad5.gguf") != 0, "vocabulary below 259 tokens accepted");
    CHECK(synth("--dim -4 2>/dev/null", "bad6.gguf") != 0, "negative dim accepted");
    CHECK(synth("--shape llama-9000 2>/dev/null", "bad7.gguf") != 0, "unknown shape accepted");
    CHECK(tool_run("synth --dim 64 2>/dev/null") != 0, "no -o accepted");
    const char *bad[] = {"bad1.gguf", "bad2.gguf", "bad3.gguf", "bad4.gguf", "bad5.gguf", "bad6.gguf", "bad7.gguf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(!file_exists(bad[i]), "%s was written", bad[i]);
}

int main(void) {
    if (!tool_scratch_dir(dir, sizeof dir, "synth")) {
        fprintf(stderr, "cannot create a scratch folder\n");
        return 1;
    }
    test_shape_and_types();
    test_seeds();
    test_fallback();
    test_named_shape();
    test_tensor_type();
    test_bad_arguments();
    test_experts_type();
    const char *files[] = {"q8.gguf", "f32.gguf", "s11a.gguf", "s11b.gguf", "s12.gguf", "k64.gguf",
                           "k256.gguf", "s15.gguf", "moe.gguf",
                           "mix.gguf"};
    tool_scratch_clean(dir, files, (int)(sizeof files / sizeof files[0]));
    return test_finish(NAME);
}
