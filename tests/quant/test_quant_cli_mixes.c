/* `tport convert --type MIX [--imatrix F]` against llama-quantize: for every
 * file type recorded in data/mixes/refs.txt and refs_moe.txt (made by llama.cpp's
 * llama_model_quantize, see data/mixes/README.md), the same tensor types
 * and the same bytes (FNV-1a 64 of each tensor's data) and the same
 * general.file_type; a mix llama.cpp refused is refused too.
 *
 * The inputs are made here, deterministically: a `tport synth` llama
 * (MODEL_ARGS) and an importance matrix in llama-imatrix's GGUF form
 * (write_imatrix).  `test_quant_cli_mixes --write-inputs DIR` writes them
 * for the reference generator (data/mixes/make_refs.sh). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test_util.h"
#include "tport/gguf.h"
#include "tport/model_file.h"
#include "tport/tport.h"

/* 10 layers: llama.cpp walks blk.0 .. blk.9 by layer; ff 288 is not whole
 * 256-blocks (ffn_down falls back); 4 heads on 2 kv heads (n_gqa 2). */
/* Debug (sanitizer) builds run the IQ searches ~10x slower: they check one
 * mix of each family of the dense model (both with and without the
 * imatrix); release builds check every mix of every model. */
#define DEBUG_MIXES " Q4_K_M Q3_K_L Q5_0 IQ3_M IQ2_M IQ4_NL MXFP4_MOE Q1_0 "

#define MODEL_ARGS "synth --dim 256 --layers 10 --heads 4 --kv-heads 2 --ff 288 --vocab 512 --seed 7"
/* A mixture of 8 experts (llama.cpp's n_expert == 8 rules, 3-D expert
 * tensors, layers read from the names, per-expert importance weights) on
 * 4 heads sharing 1 kv head (n_gqa 4). */
#define MOE_ARGS                                                                                                 \
    "synth --dim 256 --layers 2 --heads 4 --kv-heads 1 --experts 8 --experts-used 2 --expert-ff 256 --ff 256 "  \
    "--vocab 512 --seed 9"

/* Falcon: llama.cpp's falcon rules (output Q8_0, its ffn_down and
 * attn_output choices) and a fused attn_qkv (an attn_v for the rules). */
#define FALCON_ARGS "synth --arch falcon --dim 256 --layers 3 --heads 4 --kv-heads 1 --ff 512 --vocab 512 --seed 11"

/* The inputs and their references (data/mixes). */
static const struct {
    const char *tag, *synth, *refs;
} inputs[] = {{"dense", MODEL_ARGS, "refs.txt"}, {"moe", MOE_ARGS, "refs_moe.txt"},
              {"falcon", FALCON_ARGS, "refs_falcon.txt"}};

static int run(const char *args, char *buf, size_t cap) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", TPORT_CLI_PATH, args);
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    size_t n = fread(buf, 1, cap - 1, p);
    buf[n] = 0;
    const int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* An importance matrix for the model: for each matrix-multiplied weight an
 * in_sum2 of ne0 values (count * (0.05 + u), u uniform in [0, 1) from a
 * fixed LCG) and a count of 17, per expert for expert tensors (ne0 x
 * n_expert sums, n_expert counts); blk.3.ffn_gate has a count of 0 (llama
 * quantizes with weights 1), and so has expert 5 of blk.1.ffn_up_exps.  output.weight, which llama-imatrix records,
 * has no entry here: it is quantized without weights. */
static int write_imatrix(const char *model, const char *path) {
    tport_model_file *mf = NULL;
    if (tport_model_file_open(model, &mf))
        return -1;
    tport_gguf_writer *w = tport_gguf_writer_new();
    const char *datasets[] = {"synthetic"};
    tport_status s = tport_gguf_set_array(w, "imatrix.datasets", TPORT_KV_STRING, datasets, 1);
    s = s ? s : tport_gguf_set_u32(w, "imatrix.chunk_count", 1);
    s = s ? s : tport_gguf_set_u32(w, "imatrix.chunk_size", 512);
    float *bufs[256];
    int nb = 0;
    unsigned long long rng = 12345;
    static const char *const kinds[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                                        "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight", "_exps.weight",
                                        "attn_qkv.weight"};
    for (int i = 0; !s && i < mf->n_tensors && nb < 254; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        bool use = false;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            use |= strstr(t->name, kinds[k]) != NULL;
        if (!use)
            continue;
        const int64_t ne2 = t->ne[2], nv = t->ne[0] * ne2;
        float *v = bufs[nb++] = malloc(sizeof(float) * (size_t)nv);
        float *c = bufs[nb++] = malloc(sizeof(float) * (size_t)ne2);
        for (int64_t j = 0; j < nv; j++)
            v[j] = 17.0f * (0.05f + 0.5f * (test_rng_uniform(&rng) + 1.0f));
        for (int64_t e = 0; e < ne2; e++)
            c[e] = !strcmp(t->name, "blk.3.ffn_gate.weight") ||
                           (e == 5 && !strcmp(t->name, "blk.1.ffn_up_exps.weight"))
                       ? 0.0f
                       : 17.0f;
        char name[160];
        const int64_t ne_v[2] = {t->ne[0], ne2}, ne_c[2] = {1, ne2};
        /* counts first: ggml's reader wants the last tensor's padding in
         * the file, which tport's writer leaves out; in_sum2 needs none */
        snprintf(name, sizeof name, "%s.counts", t->name);
        s = tport_gguf_add_tensor(w, name, TPORT_TYPE_F32, 2, ne_c, c, sizeof(float) * (uint64_t)ne2);
        snprintf(name, sizeof name, "%s.in_sum2", t->name);
        s = s ? s : tport_gguf_add_tensor(w, name, TPORT_TYPE_F32, 2, ne_v, v, sizeof(float) * (uint64_t)nv);
    }
    s = s ? s : tport_gguf_write(w, path);
    for (int i = 0; i < nb; i++)
        free(bufs[i]);
    tport_gguf_writer_free(w);
    tport_model_file_close(mf);
    return s ? -1 : 0;
}

/* The same importance matrix as llama-imatrix's legacy .dat: per entry the
 * weights themselves (in_sum2 / count, in float as llama-quantize divides;
 * 1 where the count is 0) with ncall 1, so that llama-quantize's legacy
 * reading (values / ncall) gives the same weights as the GGUF form. */
static int write_imatrix_dat(const char *model, const char *path) {
    tport_model_file *mf = NULL;
    if (tport_model_file_open(model, &mf))
        return -1;
    FILE *f = fopen(path, "wb");
    if (!f) {
        tport_model_file_close(mf);
        return -1;
    }
    static const char *const kinds[] = {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                                        "ffn_gate.weight", "ffn_up.weight", "ffn_down.weight"};
    unsigned long long rng = 12345;
    int32_t n_entries = 0;
    fwrite(&n_entries, 4, 1, f); /* patched below */
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        bool use = false;
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            use |= strstr(t->name, kinds[k]) != NULL;
        if (!use)
            continue;
        const bool zero = !strcmp(t->name, "blk.3.ffn_gate.weight");
        const int32_t len = (int32_t)strlen(t->name), ncall = 1, nval = (int32_t)t->ne[0];
        fwrite(&len, 4, 1, f);
        fwrite(t->name, 1, (size_t)len, f);
        fwrite(&ncall, 4, 1, f);
        fwrite(&nval, 4, 1, f);
        for (int64_t j = 0; j < t->ne[0]; j++) {
            const float sum = 17.0f * (0.05f + 0.5f * (test_rng_uniform(&rng) + 1.0f));
            const float w = zero ? 1.0f : sum / 17.0f;
            fwrite(&w, 4, 1, f);
        }
        n_entries++;
    }
    fseek(f, 0, SEEK_SET);
    fwrite(&n_entries, 4, 1, f);
    const bool ok = fclose(f) == 0;
    tport_model_file_close(mf);
    return ok ? 0 : -1;
}

/* DIR/TAG.gguf and DIR/TAG-imatrix.gguf of inputs[k]. */
static int write_inputs(const char *dir, int k, char *model, char *imatrix, size_t cap) {
    static char out[8192];
    char args[1024];
    snprintf(model, cap, "%s/%s.gguf", dir, inputs[k].tag);
    snprintf(imatrix, cap, "%s/%s-imatrix.gguf", dir, inputs[k].tag);
    snprintf(args, sizeof args, "%s -o '%s'", inputs[k].synth, model);
    if (run(args, out, sizeof out)) {
        fprintf(stderr, "synth: %s\n", out);
        return -1;
    }
    return write_imatrix(model, imatrix);
}

static unsigned long long fnv64(const uint8_t *p, uint64_t n) {
    unsigned long long h = 0xcbf29ce484222325ull;
    for (uint64_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

typedef struct ref {
    char name[96], type[16];
    unsigned long long hash;
} ref;

/* Runs one recorded mix and compares; refs[0..n). */
/* refused: llama.cpp's reason for refusing the file (NULL: it wrote it). */
static void check_mix(const char *dir, const char *model, const char *imatrix, const char *mix, int with_im,
                      long file_type, const char *opts, const char *refused, const ref *refs, int n) {
#ifndef NDEBUG
    char key[40];
    snprintf(key, sizeof key, " %s ", mix);
    if (!strstr(DEBUG_MIXES, key))
        return;
#endif
    static char out[65536];
    char args[2048], conv[512];
    snprintf(conv, sizeof conv, "%s/%s-%d.gguf", dir, mix, with_im);
    snprintf(args, sizeof args, "convert '%s' '%s' --type %s %s%s%s %s --quiet", model, conv, mix,
             with_im ? "--imatrix '" : "", with_im ? imatrix : "", with_im ? "'" : "", opts);
    const int st = run(args, out, sizeof out);
    if (refused) {
        /* the same reason: a missing importance matrix, or no fallback */
        const char *want = strstr(refused, "imatrix") || strstr(refused, "importance matrix") ? "importance matrix"
                           : strstr(refused, "fallback")                                       ? "no fallback"
                                                                                              : "";
        CHECK(st != 0 && want[0] && strstr(out, want), "%s%s: refused as llama.cpp does (%s): %d %s", mix,
              with_im ? " + imatrix" : "", refused, st, out);
        return;
    }
    CHECK(st == 0, "%s%s: convert: %d %s", mix, with_im ? " + imatrix" : "", st, out);
    if (st)
        return;
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(conv, &mf) == TPORT_STATUS_OK, "%s: reopen: %s", mix, tport_last_error());
    if (!mf)
        return;
    const tport_kv *ft = tport_model_file_kv(mf, "general.file_type");
    CHECK(ft && (long)ft->v.u == file_type, "%s: general.file_type %ld (llama.cpp: %ld)", mix,
          ft ? (long)ft->v.u : -1L, file_type);
    int bad_type = 0, bad_bytes = 0;
    CHECK(mf->n_tensors == n, "%s: %d tensors (llama.cpp: %d)", mix, mf->n_tensors, n);
    for (int i = 0; i < n; i++) {
        const tport_mf_tensor *t = tport_model_file_find(mf, refs[i].name);
        if (!t) {
            CHECK(false, "%s: tensor %s missing", mix, refs[i].name);
            continue;
        }
        const tport_type_info *ti = tport_type_get(t->type);
        if (!ti || strcmp(ti->name, refs[i].type)) {
            if (bad_type++ < 5)
                fprintf(stderr, "  %s %s: %s, llama.cpp %s\n", mix, refs[i].name, ti ? ti->name : "?",
                        refs[i].type);
        } else if (fnv64(t->data, t->nbytes) != refs[i].hash) {
            if (bad_bytes++ < 5)
                fprintf(stderr, "  %s %s (%s): bytes differ from llama.cpp's\n", mix, refs[i].name, refs[i].type);
        }
    }
    CHECK(!bad_type && !bad_bytes, "%s%s%s: %d tensors: every type and byte as llama-quantize's (%d types, %d "
          "tensors' bytes differ)", mix, with_im ? " + imatrix" : "", opts, n, bad_type, bad_bytes);
    tport_model_file_close(mf);
    unlink(conv);
}

/* The legacy .dat form of the same matrix gives Q4_K_M's bytes with the
 * GGUF form (compared file to file); hostile or foreign importance
 * matrices are refused, naming why. */
static void check_legacy_and_hostile(const char *dir, const char *model, const char *imatrix) {
    static char out[8192];
    char dat[512], a[512], b[512], bad[512], args[2048];
    snprintf(dat, sizeof dat, "%s/imatrix.dat", dir);
    snprintf(a, sizeof a, "%s/gguf-im.gguf", dir);
    snprintf(b, sizeof b, "%s/dat-im.gguf", dir);
    snprintf(bad, sizeof bad, "%s/bad.imatrix", dir);
    CHECK(write_imatrix_dat(model, dat) == 0, "write the legacy .dat");
    snprintf(args, sizeof args, "convert '%s' '%s' --type q4_k_m --imatrix '%s' --quiet", model, a, imatrix);
    int st = run(args, out, sizeof out);
    CHECK(st == 0, "Q4_K_M with the GGUF imatrix: %d %s", st, out);
    snprintf(args, sizeof args, "convert '%s' '%s' --type Q4_K_M --imatrix '%s' --quiet", model, b, dat);
    st = run(args, out, sizeof out);
    CHECK(st == 0, "Q4_K_M with the legacy .dat imatrix: %d %s", st, out);
    tport_model_file *ma = NULL, *mb = NULL;
    int differ = -1;
    if (!tport_model_file_open(a, &ma) && !tport_model_file_open(b, &mb) && ma->n_tensors == mb->n_tensors) {
        differ = 0;
        for (int i = 0; i < ma->n_tensors; i++)
            differ += ma->tensors[i].nbytes != mb->tensors[i].nbytes ||
                      memcmp(ma->tensors[i].data, mb->tensors[i].data, ma->tensors[i].nbytes);
    }
    CHECK(differ == 0, "legacy .dat and GGUF imatrix give the same tensors (%d differ)", differ);
    /* llama-quantize's record of the importance matrix */
    const tport_kv *kf = ma ? tport_model_file_kv(ma, "quantize.imatrix.file") : NULL,
                   *kd = ma ? tport_model_file_kv(ma, "quantize.imatrix.dataset") : NULL,
                   *ke = ma ? tport_model_file_kv(ma, "quantize.imatrix.entries_count") : NULL,
                   *kc = ma ? tport_model_file_kv(ma, "quantize.imatrix.chunks_count") : NULL;
    CHECK(kf && kf->type == TPORT_KV_STRING && !strncmp(kf->v.s, imatrix, 127) && kd &&
              kd->type == TPORT_KV_STRING && !strcmp(kd->v.s, "synthetic") && ke && ke->type == TPORT_KV_U32 &&
              ke->v.u == 70 && kc && kc->type == TPORT_KV_U32 && kc->v.u == 1,
          "quantize.imatrix.* keys as llama-quantize writes them");
    tport_model_file_close(ma);
    tport_model_file_close(mb);
    /* a model file is no importance matrix: no imatrix.* keys */
    snprintf(args, sizeof args, "convert '%s' '%s' --type Q4_K_M --imatrix '%s' --quiet", model, b, model);
    st = run(args, out, sizeof out);
    CHECK(st != 0 && strstr(out, "missing imatrix metadata"), "a GGUF without imatrix keys is refused: %d %s", st,
          out);
    /* legacy files cut short, or with absurd counts */
    static const struct {
        const char *bytes;
        size_t n;
        const char *want;
    } hostile[] = {
        {"\001\000\000\000\003\000\000\000abc\001\000\000\000\002\000\000\000\000\000\200?", 23, "truncated"},
        {"\001\000\000\000\003\000\000\000abc\001\000\000\000\377\377\377\177", 19, "truncated"},
        {"\377\377\377\177", 4, "not an imatrix file"},
        {"GGUF\003\000\000\000", 8, "GGUF header"},
    };
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
        FILE *f = fopen(bad, "wb");
        fwrite(hostile[i].bytes, 1, hostile[i].n, f);
        fclose(f);
        snprintf(args, sizeof args, "convert '%s' '%s' --type Q4_K_M --imatrix '%s' --quiet", model, b, bad);
        st = run(args, out, sizeof out);
        CHECK(st != 0 && strstr(out, hostile[i].want), "hostile imatrix %zu refused (%s): %d %s", i,
              hostile[i].want, st, out);
    }
    /* options that need a file type */
    snprintf(args, sizeof args, "convert '%s' '%s' --type q4_0 --pure --quiet", model, b);
    st = run(args, out, sizeof out);
    CHECK(st == 0, "--pure with Q4_0 (a file type): %d %s", st, out);
    snprintf(args, sizeof args, "convert '%s' '%s' --type q8_1 --pure --quiet", model, b);
    st = run(args, out, sizeof out);
    CHECK(st == 2 && strstr(out, "go with a llama-quantize file type"), "--pure with a tensor type: %d %s", st, out);
    unlink(dat), unlink(a), unlink(b), unlink(bad);
}

/* Every mix of one refs file; returns how many were checked. */
static int check_refs(FILE *f, const char *dir, const char *model, const char *imatrix, const char *only) {
    ref *refs = calloc(512, sizeof *refs);
    int n = 0, mixes = 0;
    char line[512], mix[32] = "", next_mix[32], reason[256], opts[256] = "", next_opts[256];
    int with_im = 0, next_im = 0;
    long ft = -1, next_ft = -1;
    bool have = false;
    for (;;) {
        const bool got = fgets(line, sizeof line, f) != NULL;
        bool flush = !got;
        bool refused = false;
        if (got && line[0] == '#')
            continue;
        reason[0] = next_opts[0] = '\0';
        if (got && (sscanf(line, "mix %31s %d %ld %255[^\n]", next_mix, &next_im, &next_ft, next_opts) >= 3 ||
                    (refused = sscanf(line, "refused %31s %d %255[^\n]", next_mix, &next_im, reason) >= 2)))
            flush = true;
        if (flush && have && (!only || !strcmp(only, mix))) {
            check_mix(dir, model, imatrix, mix, with_im, ft, opts, NULL, refs, n);
            mixes++;
        }
        if (!got)
            break;
        if (refused) {
            if (!only || !strcmp(only, next_mix)) {
                check_mix(dir, model, imatrix, next_mix, next_im, -1, "", reason, NULL, 0);
                mixes++;
            }
            have = false;
            continue;
        }
        if (flush) {
            snprintf(mix, sizeof mix, "%s", next_mix);
            snprintf(opts, sizeof opts, "%s", next_opts);
            with_im = next_im, ft = next_ft, n = 0, have = true;
            continue;
        }
        if (n < 512 && sscanf(line, "t %95s %15s %llx", refs[n].name, refs[n].type, &refs[n].hash) == 3)
            n++;
    }
    free(refs);
    return mixes;
}

int main(int argc, char **argv) {
    char model[512], imatrix[512];
    const int n_inputs = (int)(sizeof inputs / sizeof inputs[0]);
    if (argc == 3 && !strcmp(argv[1], "--write-inputs")) {
        for (int k = 0; k < n_inputs; k++)
            if (write_inputs(argv[2], k, model, imatrix, sizeof model))
                return 1;
        return 0;
    }
    char dir[] = "/tmp/tport_mixes_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    /* Optional filter (a mix name) to run one mix while debugging. */
    const char *only = getenv("TPORT_MIX_ONLY");
    if (only && !*only)
        only = NULL;
#ifndef NDEBUG
    printf("debug build: checking only" DEBUG_MIXES "of the dense model\n");
#endif
    for (int k = 0; k < n_inputs; k++) {
#ifndef NDEBUG
        if (k > 0)
            break;
#endif
        char path[512];
        snprintf(path, sizeof path, "%s/%s", TPORT_QUANT_TEST_DATA, inputs[k].refs);
        FILE *f = fopen(path, "r");
        if (!f) {
            rmdir(dir);
            test_skip("test_quant_cli_mixes", "data/mixes refs absent");
        }
        CHECK(write_inputs(dir, k, model, imatrix, sizeof model) == 0, "%s: synth model and imatrix",
              inputs[k].tag);
        const int mixes = check_refs(f, dir, model, imatrix, only);
        fclose(f);
        CHECK(mixes > 0 || only, "%s holds mixes (%d)", inputs[k].refs, mixes);
        if (k == 0)
            check_legacy_and_hostile(dir, model, imatrix);
        unlink(model);
        unlink(imatrix);
    }
    rmdir(dir);
    return test_finish("test_quant_cli_mixes");
}
