/* Block-quantized ONNX decoders (onnx_quant_write.py, python3-onnx and
 * numpy): com.microsoft.MatMulNBits 4-bit (block 16, 32, 64; zero points
 * or none), 8-bit, and DequantizeLinear INT4 / UINT8 / INT8 (QDQ), each
 * beside a float reference folder holding (code - zero_point) * scale as
 * numpy computes it.  Every weight tport loads decodes to exactly the
 * reference's values, in the layout the table below expects (a lossless
 * one where one exists, f32 where none does); tport runs the model with
 * the reference's greedy ids (both computed in f32); a q4_0 model
 * converts to a GGUF holding the same bytes, which runs with the same
 * ids; g_idx, 2-bit, a block of 24, a short B and quantized activations
 * are refused, naming them; genai_config.json is applied or refused. */
#include "core/tensor.h"
#include "hf_writer.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif
#ifndef TPORT_ONNX_QUANT_WRITER
#error "TPORT_ONNX_QUANT_WRITER must name onnx_quant_write.py"
#endif

static const char *python;
/* hf_writer.h's helpers this test does not need */
static void (*const unused_helpers[])(void) = {(void (*)(void))run_llama_cpp, (void (*)(void))check_llama_cpp,
                                                (void (*)(void))check_same_tensors, (void (*)(void))write_config,
                                                (void (*)(void))write_model, (void (*)(void))check_same_run};

static bool find_python(void) {
    static const char *const candidates[] = {"python3", "/usr/bin/python3"};
    for (size_t i = 0; i < 2; i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import onnx, numpy' >/dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0) {
            python = candidates[i];
            return true;
        }
    }
    return false;
}

static float *decode(const tport_mf_tensor *t) {
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    float *out = malloc((size_t)n * sizeof *out);
    if (out && tport_dequantize(t->type, t->data, out, n) != TPORT_STATUS_OK) {
        free(out);
        return NULL;
    }
    return out;
}

/* Every tensor of the reference, decoded, equals the model's. */
static void check_values(const char *what, const tport_model_file *ref, const tport_model_file *f) {
    CHECK(f->n_tensors == ref->n_tensors, "%s: %d tensors, reference %d", what, f->n_tensors, ref->n_tensors);
    int same = 0;
    for (int i = 0; i < ref->n_tensors; i++) {
        const tport_mf_tensor *a = &ref->tensors[i], *b = tport_model_file_find(f, a->name);
        CHECK(b && !memcmp(a->ne, b->ne, sizeof a->ne), "%s: %s missing or of another shape", what, a->name);
        if (!b || memcmp(a->ne, b->ne, sizeof a->ne))
            continue;
        float *x = decode(a), *y = decode(b);
        CHECK(x && y, "%s: %s decodes (%s)", what, a->name, tport_last_error());
        int64_t n = a->ne[0] * a->ne[1] * a->ne[2] * a->ne[3], bad = 0, first = -1;
        for (int64_t j = 0; x && y && j < n; j++)
            if (x[j] != y[j] && first < 0)
                first = j, bad++;
            else if (x[j] != y[j])
                bad++;
        CHECK(x && y && bad == 0, "%s: %s (%s): %lld of %lld values differ, first at %lld: %g, reference %g", what,
              a->name, tport_type_name(b->type), (long long)bad, (long long)n, (long long)first,
              first >= 0 && y ? (double)y[first] : 0.0, first >= 0 && x ? (double)x[first] : 0.0);
        same += x && y && !bad;
        free(x);
        free(y);
    }
    printf("%s: %d tensors decode to the reference's values exactly\n", what, same);
}

static const struct {
    const char *form, *q_type, *down_type, *note;
} FORMS[] = {
    /* block 32, f16 scales, zero point 8: q4_0 */
    {"nbits4", "q4_0", "q4_0", "MatMulNBits"},
    /* zero points: -scale * zp is exact in f32, not in f16; ffn_down's
     * K = 96 ends in half a block of 64 */
    {"nbits4zp", "q4_1_qnt0", "q4_1_qnt0", "MatMulNBits"},
    {"nbits8", "q8_0_qnt1", "q8_0_qnt1", "MatMulNBits"},
    {"nbits4b16", "q4_2_qnt0", "q4_2_qnt0", "MatMulNBits"},
    {"qdq4", "q4_0", "q4_0", "DequantizeLinear"},
    /* uint8 per channel with zero points: code - zp spans 9 bits */
    {"qdq8", "f32", "f32", "DequantizeLinear"},
};

/* tport's greedy ids from two models (extra: options of both runs). */
static void check_run(const char *what, const char *a_model, const char *b_model, const char *extra) {
    char cmd[1600], a[4096], b[4096];
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m '%s' -p 'Once upon a time' -n 8 --temp 0 --ids %s 2>/dev/null",
             a_model, extra);
    bool ok_a = run_cmd(cmd, a, sizeof a);
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m '%s' -p 'Once upon a time' -n 8 --temp 0 --ids %s 2>/dev/null",
             b_model, extra);
    bool ok_b = run_cmd(cmd, b, sizeof b);
    CHECK(ok_a && ok_b && a[0] && !strcmp(a, b), "%s: tport run ids\n  reference: %s\n  ONNX:      %s", what, a, b);
    printf("%s: tport run ids %s", what, b);
}

static void make_model(const char *form, const tport_model_file *vocab, char *model, size_t cap, char *ref,
                       size_t ref_cap) {
    char name[64], cmd[1600];
    snprintf(name, sizeof name, "%s-ref", form);
    snprintf(ref, ref_cap, "%s", make_folder(name));
    write_tokenizer(ref, vocab, "spm");
    char *folder = make_folder(form);
    write_tokenizer(folder, vocab, "spm");
    snprintf(model, cap, "%s/model.onnx", folder);
    snprintf(cmd, sizeof cmd, "%s '%s' %s '%s' '%s'", python, TPORT_ONNX_QUANT_WRITER, form, folder, ref);
    CHECK(system(cmd) == 0, "%s", cmd);
}

/* onnxruntime-genai's genai_config.json beside the model: applied where
 * it agrees with config.json and the weights, refused, naming what,
 * where it does not or asks what tport cannot do. */
static const char *GENAI =
    "{\"model\": {\"bos_token_id\": 1, \"context_length\": 512, \"eos_token_id\": %s, \"pad_token_id\": 0,"
    " \"type\": \"%s\", \"vocab_size\": 32000, \"decoder\": {\"filename\": \"model.onnx\", \"head_size\": 16,"
    " \"hidden_size\": %d, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"num_hidden_layers\": 2}},"
    " \"search\": {\"do_sample\": false, \"top_k\": 50, \"top_p\": 0.875, \"temperature\": 0.75,"
    " \"repetition_penalty\": 1.0, \"max_length\": 512, \"num_beams\": %d, \"diversity_penalty\": 0.0}}";

static tport_model_file *open_genai(const char *folder, const char *model, const char *eos, const char *type,
                                    int hidden, int beams, tport_status *st) {
    char path[700], text[1200];
    snprintf(path, sizeof path, "%s/genai_config.json", folder);
    snprintf(text, sizeof text, GENAI, eos, type, hidden, beams);
    write_text(path, text);
    tport_model_file *f = NULL;
    *st = tport_model_file_open(model, &f);
    return f;
}

static void check_genai(const char *model) {
    char folder[600];
    snprintf(folder, sizeof folder, "%.*s", (int)(strrchr(model, '/') - model), model);
    tport_status st;
    tport_model_file *f = open_genai(folder, model, "[2, 3]", "llama", 64, 1, &st);
    CHECK(st == TPORT_STATUS_OK, "genai_config.json: %s", tport_last_error());
    if (f) {
        const tport_kv *k = tport_model_file_kv(f, "general.sampling.top_k"),
                       *p = tport_model_file_kv(f, "general.sampling.top_p");
        CHECK(f->hp.n_ctx == 512 && f->vocab.bos == 1 && f->vocab.eos == 2 && f->vocab.pad == 0,
              "genai_config.json: n_ctx %u, bos %d, eos %d, pad %d", f->hp.n_ctx, f->vocab.bos, f->vocab.eos,
              f->vocab.pad);
        CHECK(k && k->v.u == 1 && p && p->v.f == 0.875f, "genai_config.json: greedy search as top_k 1, top_p kept");
        CHECK(strstr(f->notes, "genai_config.json") && strstr(f->notes, "eos 3 no stop"),
              "genai_config.json: the notes say so, and name the eos ids not honoured: %s", f->notes);
        tport_model_file_close(f);
    }
    static const struct {
        const char *type;
        int hidden, beams;
        const char *why;
    } BAD[] = {{"qwen2", 64, 1, "model.type"}, {"llama", 32, 1, "hidden_size"}, {"llama", 64, 4, "num_beams"}};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        f = open_genai(folder, model, "2", BAD[i].type, BAD[i].hidden, BAD[i].beams, &st);
        CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), BAD[i].why), "genai_config.json: %s refused: %s",
              BAD[i].why, st ? tport_last_error() : "opened");
        tport_model_file_close(f);
    }
    char cfg[700];
    snprintf(cfg, sizeof cfg, "%s/config.json", folder);
    unlink(cfg);
    f = open_genai(folder, model, "2", "llama", 64, 1, &st);
    CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), "rms_norm_eps"),
          "genai_config.json without config.json is refused, naming what it lacks: %s",
          st ? tport_last_error() : "opened");
    tport_model_file_close(f);
}

int main(void) {
    char buf[512];
    const char *tiny = test_shared_path("models/llama-2-tiny-random.gguf", buf, sizeof buf);
    if (!tiny)
        test_skip("test_formats_onnx_quant", "models/llama-2-tiny-random.gguf absent (its vocabulary is used)");
    (void)unused_helpers;
    if (!find_python())
        test_skip("test_formats_onnx_quant", "python3 with onnx (python3-onnx) and numpy not installed");
    snprintf(dir, sizeof dir, "%s/tport-onnxq-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    tport_model_file *g = NULL;
    CHECK(tport_model_file_open(tiny, &g) == TPORT_STATUS_OK, "%s: %s", tiny, tport_last_error());
    if (!g)
        return test_finish("test_formats_onnx_quant");

    for (size_t i = 0; i < sizeof FORMS / sizeof FORMS[0]; i++) {
        char model[600], ref[600], what[64];
        snprintf(what, sizeof what, "onnx-%s", FORMS[i].form);
        make_model(FORMS[i].form, g, model, sizeof model, ref, sizeof ref);
        tport_model_file *f = NULL, *r = NULL;
        CHECK(tport_model_file_open(model, &f) == TPORT_STATUS_OK, "%s: %s", model, tport_last_error());
        CHECK(tport_model_file_open(ref, &r) == TPORT_STATUS_OK, "%s: %s", ref, tport_last_error());
        if (f && r) {
            CHECK(!strcmp(f->arch, "llama"), "%s: arch %s", what, f->arch);
            check_values(what, r, f);
            const tport_mf_tensor *q = tport_model_file_find(f, "blk.0.attn_q.weight"),
                                  *d = tport_model_file_find(f, "blk.1.ffn_down.weight");
            CHECK(q && !strcmp(tport_type_name(q->type), FORMS[i].q_type), "%s: attn_q is %s, expected %s", what,
                  q ? tport_type_name(q->type) : "missing", FORMS[i].q_type);
            CHECK(d && !strcmp(tport_type_name(d->type), FORMS[i].down_type), "%s: ffn_down is %s, expected %s",
                  what, d ? tport_type_name(d->type) : "missing", FORMS[i].down_type);
            CHECK(strstr(f->notes, FORMS[i].note) && strstr(f->notes, FORMS[i].q_type), "%s: the notes say what "
                  "the weights became: %s", what, f->notes);
        }
        tport_model_file_close(f);
        tport_model_file_close(r);
        /* the same values computed the same way: the same ids (the
         * quantized kernels round activations, so the layouts as they
         * are run against the converted GGUF below) */
        check_run(what, ref, model, "--weight-type f32");
        if (!strcmp(FORMS[i].form, "nbits4")) { /* q4_0 through tport convert */
            char out[700], cmd[1600];
            snprintf(out, sizeof out, "%s/%s.gguf", dir, what);
            snprintf(cmd, sizeof cmd, TPORT_CLI " convert '%s' '%s' --quiet 2>&1", model, out);
            CHECK(system(cmd) == 0, "%s", cmd);
            tport_model_file *c = NULL, *o = NULL;
            CHECK(tport_model_file_open(out, &c) == TPORT_STATUS_OK, "%s: %s", out, tport_last_error());
            CHECK(tport_model_file_open(model, &o) == TPORT_STATUS_OK, "%s: %s", model, tport_last_error());
            if (c && o) {
                const tport_mf_tensor *a = tport_model_file_find(o, "blk.0.attn_q.weight"),
                                      *b = tport_model_file_find(c, "blk.0.attn_q.weight");
                CHECK(a && b && a->type == b->type && a->nbytes == b->nbytes && !memcmp(a->data, b->data, a->nbytes),
                      "%s: the GGUF holds the q4_0 bytes of the ONNX model", what);
            }
            tport_model_file_close(c);
            tport_model_file_close(o);
            check_run("onnx-nbits4 converted (q4_0 kernels)", out, model, "");
            check_genai(model);
        }
    }
    /* refused, naming what */
    static const char *const BAD[][2] = {{"gidx", "g_idx"},
                                         {"bits2", "2-bit weights"},
                                         {"bs24", "block_size 24 is not a power of 2"},
                                         {"shortb", "MatMulNBits B"},
                                         {"qdqact", "dequantizes an activation"}};
    for (size_t i = 0; i < sizeof BAD / sizeof BAD[0]; i++) {
        char model[600], ref[600];
        make_model(BAD[i][0], g, model, sizeof model, ref, sizeof ref);
        tport_model_file *f = NULL;
        tport_status st = tport_model_file_open(model, &f);
        CHECK(st != TPORT_STATUS_OK && strstr(tport_last_error(), BAD[i][1]), "%s refused naming '%s': %s",
              BAD[i][0], BAD[i][1], st ? tport_last_error() : "opened");
        if (st)
            printf("%s: refused: %s\n", BAD[i][0], tport_last_error());
        tport_model_file_close(f);
    }
    tport_model_file_close(g);
    char cmd[400];
    if (getenv("TPORT_KEEP_TEST_FILES")) {
        printf("kept %s\n", dir);
    } else {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        CHECK(system(cmd) == 0, "%s", cmd);
    }
    return test_finish("test_formats_onnx_quant");
}
