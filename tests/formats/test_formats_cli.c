/* The `tport info` and `tport convert` commands, run as a user would:
 * exit statuses and one-line errors for bad files; a GGJT v1 file and a
 * Hugging Face safetensors folder made from the real tiny llama GGUF,
 * converted back to GGUF and compared tensor by tensor (and, when
 * node-llama-cpp is installed, loaded by llama.cpp). */
#include <sys/stat.h>
#include <sys/wait.h>

#include "byte_builder.h"
#include "formats/model_file.h"
#include "quant/convert.h"
#include "../test_util.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static char dir[256];

/* Runs a shell command; stdout+stderr into out.  Returns the exit status. */
static int run(const char *cmd, char *out, size_t cap) {
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_usage_and_bad_files(void) {
    static char out[65536];
    char cmd[1024], bad[300], gguf_out[300];
    CHECK(run(TPORT_CLI " info --help", out, sizeof out) == 0 && strstr(out, "usage: tport info"), "info --help");
    CHECK(run(TPORT_CLI " convert --help", out, sizeof out) == 0 && strstr(out, "usage: tport convert"),
          "convert --help");
    snprintf(bad, sizeof bad, "%s/bad.gguf", dir);
    snprintf(gguf_out, sizeof gguf_out, "%s/never.gguf", dir);
    bb b = {0};
    bb_raw(&b, "GGUF", 4), bb_u32(&b, 3), bb_u64(&b, 1ULL << 60), bb_u64(&b, 0);
    FILE *f = fopen(bad, "wb");
    fwrite(b.p, 1, b.n, f);
    fclose(f);
    bb_free(&b);
    char want[400];
    snprintf(want, sizeof want, "tport: %s: offset 8: ", bad);
    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", bad);
    int st = run(cmd, out, sizeof out);
    CHECK(st == 2 && strstr(out, want) == out && strchr(out, '\n') == out + strlen(out) - 1,
          "info on a bad file: status %d, '%s'", st, out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s", bad, gguf_out);
    st = run(cmd, out, sizeof out);
    CHECK(st == 2 && strstr(out, want) == out && strchr(out, '\n') == out + strlen(out) - 1,
          "convert on a bad file: status %d, '%s'", st, out);
    CHECK(access(gguf_out, F_OK) != 0, "no output for a bad input");
    unlink(bad);

    /* --json stays valid JSON (UTF-8) whatever bytes the file's strings hold */
    bb_raw(&b, "GGUF", 4), bb_u32(&b, 3), bb_u64(&b, 0), bb_u64(&b, 1);
    bb_u64(&b, 6), bb_raw(&b, "k\xff\"\n\xc3\xa9", 6), bb_u32(&b, 8), bb_u64(&b, 3), bb_raw(&b, "a\\\x01", 3);
    f = fopen(bad, "wb");
    fwrite(b.p, 1, b.n, f);
    fclose(f);
    bb_free(&b);
    snprintf(cmd, sizeof cmd, TPORT_CLI " info --json %s", bad);
    st = run(cmd, out, sizeof out);
    CHECK(st == 0 && strstr(out, "\"k\\ufffd\\\"\\u000a\xc3\xa9\": \"a\\\\\\u0001\"") && !strchr(out, '\xff'),
          "json escapes: %s", out);
    unlink(bad);
}

/* ---- a GGJT v1 llama file from a GGUF model ------------------------------ */

static const char *legacy_name(const char *gguf, char *buf, size_t cap) {
    static const struct { const char *from, *to; } m[] = {
        {"attn_q", "attention.wq"}, {"attn_k", "attention.wk"}, {"attn_v", "attention.wv"},
        {"attn_output", "attention.wo"}, {"attn_norm", "attention_norm"}, {"ffn_norm", "ffn_norm"},
        {"ffn_gate", "feed_forward.w1"}, {"ffn_down", "feed_forward.w2"}, {"ffn_up", "feed_forward.w3"}};
    if (!strcmp(gguf, "token_embd.weight"))
        return "tok_embeddings.weight";
    if (!strcmp(gguf, "output_norm.weight"))
        return "norm.weight";
    if (!strcmp(gguf, "output.weight"))
        return "output.weight";
    int layer;
    char part[64];
    if (sscanf(gguf, "blk.%d.%63[a-z_].weight", &layer, part) == 2)
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
            if (!strcmp(part, m[i].from)) {
                snprintf(buf, cap, "layers.%d.%s.weight", layer, m[i].to);
                return buf;
            }
    return gguf;
}

static void run_node(const char *model, char *out, size_t cap) {
    static char cached_model[512], cached[4096]; /* node is slow to start: the reference runs once */
    if (!strcmp(model, cached_model)) {
        snprintf(out, cap, "%s", cached);
        return;
    }
    out[0] = '\0';
    const char *root = getenv("TPORT_NODE_LLAMA_CPP");
    char lib[600], js[300], cmd[2048];
    snprintf(lib, sizeof lib, "%s/node_modules/node-llama-cpp/dist/index.js", root && *root ? root : "/work");
    if (access(lib, R_OK) != 0)
        return;
    snprintf(js, sizeof js, "%s/tok.mjs", dir);
    FILE *f = fopen(js, "w");
    fputs("const [lib, path] = process.argv.slice(2);\n"
          "const {getLlama, LlamaLogLevel} = await import(lib);\n"
          "const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error});\n"
          "const model = await llama.loadModel({modelPath: path});\n"
          "console.log(JSON.stringify(Array.from(model.tokenize('Once upon a time, 42 <0x0A> ok', false))));\n"
          "await model.dispose(); await llama.dispose();\n",
          f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' 2>/dev/null", js, lib, model);
    FILE *p = popen(cmd, "r");
    size_t n = p ? fread(out, 1, cap - 1, p) : 0;
    out[n] = '\0';
    if (p && pclose(p) != 0)
        out[0] = '\0';
    unlink(js);
    if (out[0] && strstr(model, "/models/")) {
        snprintf(cached_model, sizeof cached_model, "%s", model);
        snprintf(cached, sizeof cached, "%s", out);
    }
}

static void test_ggjt_v1_round_trip(const tport_model_file *src, const char *src_path) {
    static char out[1 << 16];
    char bin[300], gguf[300], cmd[1024];
    snprintf(bin, sizeof bin, "%s/model-ggjt-v1.bin", dir);
    snprintf(gguf, sizeof gguf, "%s/from-ggjt.gguf", dir);
    const tport_mf_hparams *hp = &src->hp;
    bb b = {0};
    bb_u32(&b, 0x67676a74), bb_u32(&b, 1);
    uint32_t n_mult = hp->n_ff; /* ((2*4*n_embd/3 + n_mult - 1)/n_mult)*n_mult == n_ff when n_ff >= 8*n_embd/3 */
    uint32_t hdr[7] = {(uint32_t)src->vocab.n_tokens, hp->n_embd, n_mult, hp->n_head, hp->n_layer, hp->n_rot, 1};
    for (int i = 0; i < 7; i++)
        bb_u32(&b, hdr[i]);
    for (int i = 0; i < src->vocab.n_tokens; i++) {
        bb_u32(&b, src->vocab.token_len[i]);
        bb_raw(&b, src->vocab.tokens[i], src->vocab.token_len[i]);
        bb_f32(&b, src->vocab.scores ? src->vocab.scores[i] : 0.0f);
    }
    /* ffn_down (rows of n_ff) becomes Q4_0 in the QNT0 layout of spring 2023 */
    void *q4 = NULL, *q4_qnt0 = NULL;
    size_t q4_bytes = 0;
    for (int i = 0; i < src->n_tensors; i++) {
        const tport_mf_tensor *t = &src->tensors[i];
        char buf[128];
        const char *name = legacy_name(t->name, buf, sizeof buf);
        uint32_t code = t->type;
        const void *data = t->data;
        size_t nbytes = (size_t)t->nbytes;
        int64_t n = t->ne[0] * t->ne[1];
        if (!strcmp(t->name, "blk.0.ffn_down.weight") && t->ne[0] % 32 == 0 && !q4) {
            q4_bytes = (size_t)(n / 32 * 18);
            q4 = malloc(q4_bytes);
            q4_qnt0 = malloc((size_t)(n / 32 * 20));
            CHECK(tport_convert(t->type, t->data, TPORT_TYPE_Q4_0, q4, n, NULL) == TPORT_STATUS_OK, "to q4_0: %s",
                  tport_last_error());
            CHECK(tport_convert(TPORT_TYPE_Q4_0, q4, TPORT_TYPE_Q4_0_QNT0, q4_qnt0, n, NULL) == TPORT_STATUS_OK,
                  "to q4_0_qnt0: %s", tport_last_error());
            code = 2;
            data = q4_qnt0;
            nbytes = (size_t)(n / 32 * 20);
        }
        bb_i32(&b, t->n_dims), bb_i32(&b, (int32_t)strlen(name)), bb_u32(&b, code);
        for (int d = 0; d < t->n_dims; d++)
            bb_i32(&b, (int32_t)t->ne[d]);
        bb_raw(&b, name, strlen(name));
        bb_pad_to(&b, 32);
        bb_raw(&b, data, nbytes);
    }
    FILE *f = fopen(bin, "wb");
    fwrite(b.p, 1, b.n, f);
    fclose(f);
    bb_free(&b);

    snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s --ctx 4096", bin, gguf);
    int st = run(cmd, out, sizeof out);
    CHECK(st == 0, "convert ggjt v1: status %d\n%s", st, out);
    CHECK(!q4 || (strstr(out, "q4_0_qnt0") && strstr(out, "historical")), "convert says what it did:\n%s", out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", bin);
    CHECK(run(cmd, out, sizeof out) == 0 && strstr(out, "ggjt v1") && strstr(out, "q4_0_qnt0"), "info on ggjt:\n%.400s",
          out);

    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(gguf, &mf) == TPORT_STATUS_OK, "read converted: %s", tport_last_error());
    if (mf) {
        CHECK(mf->container == TPORT_CONTAINER_GGUF && mf->quant_version == 2, "gguf v3, quantization version 2");
        CHECK(mf->hp.n_embd == hp->n_embd && mf->hp.n_ff == hp->n_ff && mf->hp.n_head == hp->n_head &&
                  mf->hp.n_layer == hp->n_layer && mf->hp.n_rot == hp->n_rot && mf->hp.n_ctx == 4096,
              "llama keys");
        CHECK(mf->vocab.n_tokens == src->vocab.n_tokens && mf->vocab.bos == 1 && mf->vocab.eos == 2, "vocab");
        bool same_types = mf->vocab.token_type && src->vocab.token_type;
        for (int i = 0; same_types && i < src->vocab.n_tokens; i++)
            same_types = mf->vocab.token_type[i] == src->vocab.token_type[i];
        CHECK(same_types, "token types derived for the legacy vocabulary match the original GGUF's");
        for (int i = 0; i < src->n_tensors; i++) {
            const tport_mf_tensor *a = &src->tensors[i], *c = tport_model_file_find(mf, a->name);
            CHECK(c != NULL, "tensor %s", a->name);
            if (!c)
                continue;
            if (q4 && !strcmp(a->name, "blk.0.ffn_down.weight"))
                CHECK(c->type == TPORT_TYPE_Q4_0 && c->nbytes == q4_bytes && !memcmp(c->data, q4, q4_bytes),
                      "q4_0_qnt0 -> q4_0 restores the bytes exactly");
            else
                CHECK(c->type == a->type && c->nbytes == a->nbytes && !memcmp(c->data, a->data, (size_t)a->nbytes),
                      "tensor %s unchanged", a->name);
        }
        tport_model_file_close(mf);
    }
    char t_src[4096], t_conv[4096];
    run_node(src_path, t_src, sizeof t_src);
    if (t_src[0]) {
        run_node(gguf, t_conv, sizeof t_conv);
        CHECK(t_conv[0] && !strcmp(t_src, t_conv), "llama.cpp tokenizes the same with the converted file: %s vs %s",
              t_src, t_conv);
        printf("llama.cpp loaded the GGUF converted from GGJT v1: %s", t_conv);
    } else {
        printf("llama.cpp check: skipped (node-llama-cpp not installed)\n");
    }
    free(q4);
    free(q4_qnt0);
    unlink(bin);
    unlink(gguf);
}

/* ---- a Hugging Face folder from a GGUF model ------------------------------ */

static void test_safetensors_round_trip(const tport_model_file *src) {
    static char out[1 << 16];
    char sub[300], st_path[400], cfg_path[400], gguf[300], cmd[1200];
    snprintf(sub, sizeof sub, "%s/hf", dir);
    mkdir(sub, 0755);
    snprintf(st_path, sizeof st_path, "%s/model.safetensors", sub);
    snprintf(cfg_path, sizeof cfg_path, "%s/config.json", sub);
    snprintf(gguf, sizeof gguf, "%s/from-hf.gguf", dir);
    static const struct { const char *gguf, *hf; } names[] = {
        {"attn_q", "self_attn.q_proj"}, {"attn_k", "self_attn.k_proj"}, {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"}, {"attn_norm", "input_layernorm"},
        {"ffn_norm", "post_attention_layernorm"}, {"ffn_gate", "mlp.gate_proj"}, {"ffn_down", "mlp.down_proj"},
        {"ffn_up", "mlp.up_proj"}};
    const tport_mf_hparams *hp = &src->hp;
    bb json = {0}, data = {0};
    bb_raw(&json, "{", 1);
    for (int i = 0; i < src->n_tensors; i++) {
        const tport_mf_tensor *t = &src->tensors[i];
        char hf[128] = "";
        int layer;
        char part[64];
        if (!strcmp(t->name, "token_embd.weight"))
            snprintf(hf, sizeof hf, "model.embed_tokens.weight");
        else if (!strcmp(t->name, "output_norm.weight"))
            snprintf(hf, sizeof hf, "model.norm.weight");
        else if (!strcmp(t->name, "output.weight"))
            snprintf(hf, sizeof hf, "lm_head.weight");
        else if (sscanf(t->name, "blk.%d.%63[a-z_].weight", &layer, part) == 2)
            for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
                if (!strcmp(part, names[k].gguf))
                    snprintf(hf, sizeof hf, "model.layers.%d.%s.weight", layer, names[k].hf);
        const char *dtype = t->type == TPORT_TYPE_F32 ? "F32" : "F16";
        size_t begin = data.n;
        bool q = strstr(t->name, "attn_q") != NULL, k = strstr(t->name, "attn_k") != NULL;
        if (q || k) { /* the HF order: row h*hd + j*hd/2 + i holds Meta row h*hd + 2i + j */
            int64_t rows = t->ne[1], heads = q ? hp->n_head : hp->n_head_kv, hd = rows / heads;
            size_t row_bytes = (size_t)(t->nbytes / (uint64_t)rows);
            for (int64_t r = 0; r < rows; r++) {
                int64_t h = r / hd, rem = r % hd, j = rem / (hd / 2), ii = rem % (hd / 2);
                bb_raw(&data, (const uint8_t *)t->data + (size_t)(h * hd + 2 * ii + j) * row_bytes, row_bytes);
            }
        } else {
            bb_raw(&data, t->data, (size_t)t->nbytes);
        }
        char e[512];
        if (t->n_dims == 2)
            snprintf(e, sizeof e, "%s\"%s\": {\"dtype\": \"%s\", \"shape\": [%lld, %lld], \"data_offsets\": [%zu, %zu]}",
                     i ? ", " : "", hf, dtype, (long long)t->ne[1], (long long)t->ne[0], begin, data.n);
        else
            snprintf(e, sizeof e, "%s\"%s\": {\"dtype\": \"%s\", \"shape\": [%lld], \"data_offsets\": [%zu, %zu]}",
                     i ? ", " : "", hf, dtype, (long long)t->ne[0], begin, data.n);
        bb_raw(&json, e, strlen(e));
    }
    bb_raw(&json, "}", 1);
    bb file = {0};
    bb_u64(&file, json.n);
    bb_raw(&file, json.p, json.n);
    bb_raw(&file, data.p, data.n);
    FILE *f = fopen(st_path, "wb");
    fwrite(file.p, 1, file.n, f);
    fclose(f);
    f = fopen(cfg_path, "w");
    fprintf(f,
            "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": %u, "
            "\"intermediate_size\": %u, \"num_hidden_layers\": %u, \"num_attention_heads\": %u, "
            "\"num_key_value_heads\": %u, \"vocab_size\": %d, \"max_position_embeddings\": %u, "
            "\"rms_norm_eps\": %g}\n",
            hp->n_embd, hp->n_ff, hp->n_layer, hp->n_head, hp->n_head_kv, src->vocab.n_tokens, hp->n_ctx,
            (double)hp->norm_eps);
    fclose(f);
    bb_free(&json), bb_free(&data), bb_free(&file);

    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", st_path);
    int st = run(cmd, out, sizeof out);
    if (st != 0 && strstr(out, "without cJSON")) {
        printf("safetensors round trip: skipped (built without cJSON)\n");
    } else {
        CHECK(st == 0 && strstr(out, "un-permuted"), "info on safetensors: %.300s", out);
        snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s", st_path, gguf);
        st = run(cmd, out, sizeof out);
        CHECK(st == 0, "convert safetensors: %d %s", st, out);
        tport_model_file *mf = NULL;
        CHECK(tport_model_file_open(gguf, &mf) == TPORT_STATUS_OK, "read converted: %s", tport_last_error());
        for (int i = 0; mf && i < src->n_tensors; i++) {
            const tport_mf_tensor *a = &src->tensors[i], *c = tport_model_file_find(mf, a->name);
            CHECK(c && c->type == a->type && c->nbytes == a->nbytes && !memcmp(c->data, a->data, (size_t)a->nbytes),
                  "tensor %s back in GGUF order", a->name);
        }
        CHECK(mf && mf->hp.n_head_kv == hp->n_head_kv && mf->hp.norm_eps == hp->norm_eps, "hparams");
        tport_model_file_close(mf);
    }
    unlink(st_path);
    unlink(cfg_path);
    rmdir(sub);
    unlink(gguf);
}

/* ---- a llama2.c checkpoint plus llama2.c's tokenizer.bin ---------------- */

static void test_llama2c_with_vocab(const tport_model_file *ref, const char *ref_path) {
    static char out[1 << 16];
    char buf[512], bin[300], gguf[300], cmd[1400];
    const char *tok = test_shared_path("models/llama2-tokenizer.bin", buf, sizeof buf);
    if (!tok) {
        printf("llama2.c + tokenizer.bin: skipped (llama2-tokenizer.bin absent)\n");
        return;
    }
    enum { DIM = 32, HIDDEN = 64, HEADS = 4, KV = 2, VOCAB = 32000, SEQ = 64 };
    snprintf(bin, sizeof bin, "%s/l2c.bin", dir);
    snprintf(gguf, sizeof gguf, "%s/l2c.gguf", dir);
    bb b = {0};
    bb_u32(&b, 0x616b3432), bb_i32(&b, 1);
    int32_t h[7] = {DIM, HIDDEN, 1, HEADS, KV, VOCAB, SEQ};
    for (int i = 0; i < 7; i++)
        bb_i32(&b, h[i]);
    bb_u8(&b, 1), bb_pad_to(&b, 256);
    unsigned long long rng = 7;
    /* norms, embedding, q, k, v, o, w1, w2, w3 (f32) */
    long n = DIM * 3L + (long)VOCAB * DIM + DIM * DIM + 2L * DIM * (DIM / HEADS * KV) + DIM * DIM + 3L * DIM * HIDDEN;
    for (long i = 0; i < n; i++)
        bb_f32(&b, i < 3 * DIM ? 1.0f : 0.05f * test_rng_uniform(&rng));
    FILE *f = fopen(bin, "wb");
    fwrite(b.p, 1, b.n, f);
    fclose(f);
    bb_free(&b);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s --vocab %s --type q8_0 --quiet", bin, gguf, tok);
    int st = run(cmd, out, sizeof out);
    CHECK(st == 0, "convert llama2.c --vocab: %d %s", st, out);
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(gguf, &mf) == TPORT_STATUS_OK, "read: %s", tport_last_error());
    if (mf) {
        const tport_vocab *v = &mf->vocab, *r = &ref->vocab;
        CHECK(v->n_tokens == VOCAB && v->bos == 1 && v->eos == 2 && v->unk == 0, "vocab size and specials");
        int diff_tok = 0, diff_score = 0, diff_type = 0;
        for (int i = 0; v->n_tokens == r->n_tokens && i < v->n_tokens; i++) {
            diff_tok += v->token_len[i] != r->token_len[i] || memcmp(v->tokens[i], r->tokens[i], r->token_len[i]);
            diff_score += !v->scores || v->scores[i] != r->scores[i];
            diff_type += !v->token_type || v->token_type[i] != r->token_type[i];
        }
        CHECK(v->n_tokens == r->n_tokens && !diff_tok && !diff_score && !diff_type,
              "tokenizer.bin read back as the SentencePiece vocabulary of the GGUF: %d tokens, %d scores, %d types "
              "differ",
              diff_tok, diff_score, diff_type);
        const tport_mf_tensor *q = tport_model_file_find(mf, "blk.0.attn_k.weight");
        CHECK(q && q->type == TPORT_TYPE_Q8_0 && q->ne[1] == DIM / HEADS * KV, "attn_k requantized, GQA shape");
        CHECK(mf->hp.n_ctx == SEQ && mf->hp.n_head_kv == KV && mf->hp.n_rot == DIM / HEADS, "hparams");
        tport_model_file_close(mf);
    }
    char t_ref[4096], t_conv[4096];
    run_node(ref_path, t_ref, sizeof t_ref);
    if (t_ref[0]) {
        run_node(gguf, t_conv, sizeof t_conv);
        CHECK(t_conv[0] && !strcmp(t_ref, t_conv), "llama.cpp tokenizes the same with the llama2.c model: %s vs %s",
              t_ref, t_conv);
    }
    unlink(bin);
    unlink(gguf);
}

/* `tport --version` names the optional parts this build was configured with. */
static void test_version(void) {
    static char out[4096];
    int st = run(TPORT_CLI " --version", out, sizeof out);
    CHECK(st == 0 && strstr(out, "optional parts: "), "--version: %d %s", st, out);
#ifdef TPORT_TEST_SAFETENSORS
    CHECK(strstr(out, "safetensors(cJSON ") != NULL, "--version lists safetensors: %s", out);
#endif
#ifdef TPORT_TEST_PYTORCH
    CHECK(strstr(out, "pytorch(libzip ") != NULL, "--version lists pytorch: %s", out);
#else
    CHECK(strstr(out, "pytorch(") == NULL, "--version without pytorch: %s", out);
#endif
}

/* A GGUF holding a tensor of a type id this build does not know (43:
 * ggml's GGML_TYPE_COUNT today, the next id it will give, and 250): it opens and `tport info` lists
 * it with its raw id and says why it would not run; `tport run` and
 * `tport convert` refuse it naming the tensor. */
static void test_unknown_type(void) {
    static char out[65536];
    char path[300], cmd[1024];
    snprintf(path, sizeof path, "%s/unknown-type.gguf", dir);
    bb b = {0};
    bb_raw(&b, "GGUF", 4);
    bb_u32(&b, 3);
    bb_u64(&b, 3); /* tensors */
    bb_u64(&b, 1); /* keys */
    bb_u64(&b, 20), bb_raw(&b, "general.architecture", 20), bb_u32(&b, 8), bb_u64(&b, 5), bb_raw(&b, "llama", 5);
    bb_u64(&b, 17), bb_raw(&b, "token_embd.weight", 17), bb_u32(&b, 2), bb_u64(&b, 8), bb_u64(&b, 2);
    bb_u32(&b, 0), bb_u64(&b, 0);
    bb_u64(&b, 14), bb_raw(&b, "blk.0.future_a", 14), bb_u32(&b, 2), bb_u64(&b, 256), bb_u64(&b, 2);
    bb_u32(&b, 43), bb_u64(&b, 64);
    bb_u64(&b, 14), bb_raw(&b, "blk.0.future_b", 14), bb_u32(&b, 1), bb_u64(&b, 32);
    bb_u32(&b, 250), bb_u64(&b, 256);
    bb_pad_to(&b, 32);
    bb_zeros(&b, 256 + 64);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b.p, 1, b.n, f) == b.n, "write %s", path);
    if (f)
        fclose(f);
    bb_free(&b);
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(path, &mf) == TPORT_STATUS_OK, "open: %s", tport_last_error());
    if (mf) {
        const tport_mf_tensor *u = tport_model_file_unknown_tensor(mf);
        CHECK(u && !strcmp(u->name, "blk.0.future_a") && u->unknown_type == 43 && u->type == TPORT_MF_TYPE_UNKNOWN,
              "the first unknown tensor");
        CHECK(mf->n_tensors == 3 && mf->tensors[2].unknown_type == 250, "all three tensors listed");
        tport_model_file_close(mf);
    }
    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", path);
    CHECK(run(cmd, out, sizeof out) == 0, "info exits 0: %s", out);
    CHECK(strstr(out, "type43?") && strstr(out, "type250?"), "info lists the raw ids: %s", out);
    CHECK(strstr(out, "blk.0.future_a of type id 43, a type this build does not know"), "info says why: %s", out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s --prompt-ids 1 -n 1", path);
    CHECK(run(cmd, out, sizeof out) != 0 && strstr(out, "blk.0.future_a of type id 43"), "run refuses: %s", out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s/unknown-out.gguf", path, dir);
    CHECK(run(cmd, out, sizeof out) == 2 && strstr(out, "'blk.0.future_a' has type id 43"), "convert refuses: %s",
          out);
    unlink(path);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/tport-cli-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    test_version();
    test_usage_and_bad_files();
    test_unknown_type();
    char buf[512];
    const char *path = test_shared_path("models/llama-2-tiny-random.gguf", buf, sizeof buf);
    if (path) {
        tport_model_file *src = NULL;
        CHECK(tport_model_file_open(path, &src) == TPORT_STATUS_OK, "open %s", path);
        if (src) {
            test_ggjt_v1_round_trip(src, path);
            test_safetensors_round_trip(src);
            test_llama2c_with_vocab(src, path);
            tport_model_file_close(src);
        }
    } else {
        printf("round trips from the real model: skipped (llama-2-tiny-random.gguf absent)\n");
    }
    rmdir(dir);
    return test_finish("test_formats_cli");
}
