/* `tport info`, `tport convert` and `tport run` on the ggml examples'
 * files (gpt-2, gpt-j, gpt-neox, starcoder, mpt) and on a QK_K = 64 GGJT v3 file, run as
 * a user would; the converted GGUF is read back and compared value by
 * value with the source. */
#include <math.h>
#include <sys/wait.h>

#include "formats/model_file.h"
#include "model/arch/arch.h"
#include "quant/convert.h"
#include "sample_files.h"
#include "../test_util.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static char dir[256];
static char out[65536];

static int run(const char *cmd) {
    char full[2048];
    snprintf(full, sizeof full, "%s 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void save(const bb *b, const char *p) {
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(b->p, 1, b->n, f) != b->n) {
        perror(p);
        exit(1);
    }
    fclose(f);
}

/* Decoded values of a tensor (n elements) as f32; NULL on failure. */
static float *decode(const tport_mf_tensor *t) {
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    float *y = malloc((size_t)n * sizeof *y);
    if (y && tport_convert(t->type, t->data, TPORT_TYPE_F32, y, n, NULL) != TPORT_STATUS_OK) {
        free(y);
        y = NULL;
    }
    return y;
}

/* Where element k of a tensor of `row` elements per row lands after
 * gpt-neox's per-head [q,k,v] rows are re-ordered to [Q|K|V]. */
static int64_t qkv_index(int64_t k, int64_t row, int64_t nh, int64_t hd) {
    int64_t r = k / row, h = r / (3 * hd), part = r % (3 * hd) / hd, d = r % hd;
    return (part * nh * hd + h * hd + d) * row + k % row;
}

/* Every tensor of `src` is in `dst` with the same shape, matched by name
 * through the architecture's GGUF names where convert renamed them (archs
 * this build runs); returns the largest absolute difference of the decoded
 * values (INFINITY if one is missing or cannot be decoded). */
static double compare_files(const tport_model_file *src, const tport_model_file *dst, float *max_abs) {
    double worst = 0;
    *max_abs = 0;
    const tport_arch *arch = tport_arch_find(src->arch);
    for (int i = 0; i < src->n_tensors; i++) {
        char name[128];
        bool qkv = false;
        const tport_mf_tensor *a = &src->tensors[i];
        if (!arch || !tport_arch_gguf_name(arch, a->name, (int)src->hp.n_layer, name, sizeof name, &qkv))
            snprintf(name, sizeof name, "%s", a->name);
        const tport_mf_tensor *b = tport_model_file_find(dst, name);
        if (!b || memcmp(a->ne, b->ne, sizeof a->ne))
            return INFINITY;
        float *x = decode(a), *y = decode(b);
        if (!x || !y) {
            free(x), free(y);
            return INFINITY;
        }
        int64_t row = a->ne[1] > 1 ? a->ne[0] : 1, hd = (int64_t)(src->hp.n_embd / src->hp.n_head);
        for (int64_t k = 0; k < a->ne[0] * a->ne[1] * a->ne[2] * a->ne[3]; k++) {
            int64_t kd = qkv ? qkv_index(k, row, (int64_t)src->hp.n_head, hd) : k;
            double d = fabs((double)x[k] - (double)y[kd]);
            worst = d > worst ? d : worst;
            *max_abs = fabsf(x[k]) > *max_abs ? fabsf(x[k]) : *max_abs;
        }
        free(x), free(y);
    }
    return worst;
}

static void test_examples(void) {
    static const char *const archs[] = {"gpt2", "gptj", "gptneox", "starcoder", "mpt"};
    static const int32_t ftypes[] = {1002, 2, 2002, 2, 1002};
    static const char *const src_types[] = {"q4_0_qnt1", "q4_0_qnt0", "q4_0", "q4_0_qnt0", "q4_0_qnt1"};
    for (int arch = SAMPLE_GPT2; arch <= SAMPLE_MPT; arch++) {
        /* a Q4_0 block with an exactly representable scale: the historical
         * -> current conversion must then keep every value */
        uint8_t blk[20];
        float d = 0.5f;
        int qnt = ftypes[arch] / 1000, bytes = qnt < 2 ? 20 : 18;
        if (qnt < 2) {
            memcpy(blk, &d, 4);
        } else {
            uint16_t h = sample_f16_of(d);
            memcpy(blk, &h, 2);
        }
        for (int j = 0; j < 16; j++)
            blk[bytes - 16 + j] = (uint8_t)(j | (15 - j) << 4);
        bb b = {0};
        sample_ggml_example(&b, arch, 32, ftypes[arch], 2, 32, bytes, blk);
        char in[300], gguf[300], cmd[1024], want[128];
        snprintf(in, sizeof in, "%s/%s.bin", dir, archs[arch]);
        snprintf(gguf, sizeof gguf, "%s/%s.gguf", dir, archs[arch]);
        save(&b, in);
        bb_free(&b);

        snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", in);
        int st = run(cmd);
        snprintf(want, sizeof want, "architecture:  %s\n", archs[arch]);
        char ctx_key[64];
        snprintf(ctx_key, sizeof ctx_key, "%s.context_length", archs[arch]);
        CHECK(st == 0 && strstr(out, "container:     ggml") && strstr(out, want) && strstr(out, src_types[arch]) &&
                  strstr(out, ctx_key) && strstr(out, "tokenizer:     gpt2, 3 tokens"),
              "info %s: status %d\n%s", archs[arch], st, out);
        snprintf(want, sizeof want, "quantization:  version %d\n", qnt);
        CHECK(strstr(out, want) != NULL, "info %s shows %s", archs[arch], want);
        snprintf(cmd, sizeof cmd, TPORT_CLI " info --json %s", in);
        snprintf(want, sizeof want, "\"architecture\": \"%s\"", archs[arch]);
        CHECK(run(cmd) == 0 && strstr(out, want), "info --json %s", archs[arch]);

        snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s", in, gguf);
        st = run(cmd);
        CHECK(st == 0, "convert %s: status %d\n%s", archs[arch], st, out);
        CHECK(qnt == 2 || (strstr(out, src_types[arch]) && strstr(out, "-> q4_0")), "convert %s reports:\n%s",
              archs[arch], out);
        tport_model_file *src = NULL, *dst = NULL;
        CHECK(tport_model_file_open(in, &src) == TPORT_STATUS_OK, "reopen source");
        CHECK(tport_model_file_open(gguf, &dst) == TPORT_STATUS_OK, "read converted: %s", tport_last_error());
        if (src && dst) {
            CHECK(dst->container == TPORT_CONTAINER_GGUF && !strcmp(dst->arch, archs[arch]), "converted arch '%s'",
                  dst->arch);
            char key[96];
            snprintf(key, sizeof key, "%s.block_count", archs[arch]);
            const tport_kv *kv = tport_model_file_kv(dst, key);
            CHECK(kv && kv->v.u == 1, "%s in the GGUF", key);
            snprintf(key, sizeof key, "%s.embedding_length", archs[arch]);
            kv = tport_model_file_kv(dst, key);
            CHECK(kv && kv->v.u == 32, "%s in the GGUF", key);
            kv = tport_model_file_kv(dst, "tokenizer.ggml.model");
            CHECK(kv && kv->type == TPORT_KV_STRING && !strcmp(kv->v.s, "gpt2"), "tokenizer.ggml.model gpt2");
            CHECK(dst->vocab.n_tokens == 3 && !strcmp(dst->vocab.tokens[2], "<|endoftext|>"), "tokens kept");
            CHECK(dst->n_tensors == src->n_tensors, "tensor count %d", dst->n_tensors);
            for (int i = 0; i < dst->n_tensors; i++)
                CHECK(dst->tensors[i].type < TPORT_TYPE_Q4_0_QNT0, "current types only: %s is %u",
                      dst->tensors[i].name, dst->tensors[i].type);
            float max_abs;
            double err = compare_files(src, dst, &max_abs);
            CHECK(err == 0 && max_abs > 0, "%s: values kept (max diff %g)", archs[arch], err);
        }
        tport_model_file_close(src);
        tport_model_file_close(dst);

        if (tport_arch_supported(archs[arch])) {
            /* an architecture this build runs: one generated id */
            snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s --prompt-ids 0 -n 1 --ids --temp 0", in);
            st = run(cmd);
            /* one line of the output is the id (0, 1 or 2), whatever is logged around it */
            bool one_id = false;
            for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
                one_id |= l[0] >= '0' && l[0] <= '2' && l[1] == '\n';
            CHECK(st == 0 && one_id, "run %s: status %d '%s'", archs[arch], st, out);
        } else {
            /* another: a one-line error naming it, status 2 */
            snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s -p hi -n 1", in);
            st = run(cmd);
            CHECK(st == 2 && strstr(out, archs[arch]) && strchr(out, '\n') == out + strlen(out) - 1,
                  "run %s: status %d '%s'", archs[arch], st, out);
        }
        unlink(in);
        unlink(gguf);
    }
}

static void test_qk64(void) {
    uint8_t blk[38];
    float want[64];
    sample_qk64_q4k_block(blk, want);
    for (int E = 64; E <= 256; E += 192) {
        bb b = {0};
        sample_ggjt3_kquant(&b, E, 12, blk, 38, 2 * E / 64 * 38);
        char in[300], gguf[300], cmd[1024];
        snprintf(in, sizeof in, "%s/qk64-%d.bin", dir, E);
        snprintf(gguf, sizeof gguf, "%s/qk64-%d.gguf", dir, E);
        save(&b, in);
        bb_free(&b);
        snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", in);
        CHECK(run(cmd) == 0 && strstr(out, "q4_K_qk64") && strstr(out, "QK_K = 64"), "info qk64:\n%s", out);
        snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s", in, gguf);
        int st = run(cmd);
        /* a row of 256 becomes today's q4_K (requantized: lossy, reported);
         * a row of 64 fits no 256-block and becomes f16 */
        tport_type_id to = E == 256 ? TPORT_TYPE_Q4_K : TPORT_TYPE_F16;
        CHECK(st == 0 && strstr(out, "q4_K_qk64") && strstr(out, E == 256 ? "-> q4_K" : "-> f16"),
              "convert qk64 E=%d: status %d\n%s", E, st, out);
        CHECK(E != 256 || strstr(out, "lossy"), "the requantization is reported as lossy");
        tport_model_file *src = NULL, *dst = NULL;
        CHECK(tport_model_file_open(in, &src) == TPORT_STATUS_OK, "reopen");
        CHECK(tport_model_file_open(gguf, &dst) == TPORT_STATUS_OK, "read converted: %s", tport_last_error());
        const tport_mf_tensor *t = dst ? tport_model_file_find(dst, "blk.0.attn_q.weight") : NULL;
        CHECK(t && t->type == to, "E=%d: converted type %u", E, t ? t->type : 999u);
        if (src && dst) {
            float max_abs;
            double err = compare_files(src, dst, &max_abs);
            /* f16 holds these values exactly; q4_K within a few % of the range */
            CHECK(E == 256 ? err < 0.02 * max_abs : err == 0, "E=%d: max diff %g of %g", E, err, (double)max_abs);
        }
        tport_model_file_close(src);
        tport_model_file_close(dst);
        unlink(in);
        unlink(gguf);
    }
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/tport-examples-cli-XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    test_examples();
    test_qk64();
    rmdir(dir);
    return test_finish("test_formats_examples_cli");
}
