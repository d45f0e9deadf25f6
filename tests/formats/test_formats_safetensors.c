/* safetensors files (with and without a Hugging Face config.json) written
 * here: dtypes, shape order, name mapping, hyperparameters and the q/k
 * un-permutation into Meta/GGUF order. */
#include <sys/stat.h>

#include "byte_builder.h"
#include "formats/model_file.h"
#include "../test_util.h"

enum { EMBD = 8, HEADS = 2, KV_HEADS = 1, HD = EMBD / HEADS, VOCAB = 3 };

static char dir[256];

static void write_text(const char *name, const char *text) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0) {
        perror(path);
        exit(1);
    }
    fclose(f);
}

/* q: [EMBD out, EMBD in] f32 with value = 100*row + col; k: [KV_HEADS*HD, EMBD] f16 of (row);
 * embed: [VOCAB, EMBD] bf16; norm: [EMBD] f32. */
static void write_model(const char *name) {
    bb data = {0};
    for (int r = 0; r < EMBD; r++)
        for (int c = 0; c < EMBD; c++)
            bb_f32(&data, (float)(100 * r + c));
    size_t k_at = data.n;
    static const uint16_t f16_int[8] = {0x0000, 0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600, 0x4700}; /* 0..7 */
    for (int r = 0; r < KV_HEADS * HD; r++)
        for (int c = 0; c < EMBD; c++)
            bb_u16(&data, f16_int[r]);
    size_t e_at = data.n;
    for (int i = 0; i < VOCAB * EMBD; i++)
        bb_u16(&data, 0x3f80); /* bf16 1.0 */
    size_t n_at = data.n;
    for (int i = 0; i < EMBD; i++)
        bb_f32(&data, 1.0f);
    char json[1024];
    int n = snprintf(json, sizeof json,
                     "{\"__metadata__\": {\"format\": \"pt\"},"
                     " \"model.layers.0.self_attn.q_proj.weight\": {\"dtype\": \"F32\", \"shape\": [%d, %d], "
                     "\"data_offsets\": [0, %zu]},"
                     " \"model.layers.0.self_attn.k_proj.weight\": {\"dtype\": \"F16\", \"shape\": [%d, %d], "
                     "\"data_offsets\": [%zu, %zu]},"
                     " \"model.embed_tokens.weight\": {\"dtype\": \"BF16\", \"shape\": [%d, %d], "
                     "\"data_offsets\": [%zu, %zu]},"
                     " \"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [%d], \"data_offsets\": [%zu, %zu]}}",
                     EMBD, EMBD, k_at, KV_HEADS * HD, EMBD, k_at, e_at, VOCAB, EMBD, e_at, n_at, EMBD, n_at, data.n);
    while (n % 8)
        json[n++] = ' '; /* header padding with spaces, as the writers do */
    bb file = {0};
    bb_u64(&file, (uint64_t)n);
    bb_raw(&file, json, (size_t)n);
    bb_raw(&file, data.p, data.n);
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    fwrite(file.p, 1, file.n, f);
    fclose(f);
    bb_free(&data);
    bb_free(&file);
}

int main(void) {
    snprintf(dir, sizeof dir, "%s/tport-st-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    char path[400];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_model("model.safetensors");

    /* without config.json: tensors read, q/k left as stored */
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    if (s != TPORT_STATUS_OK && strstr(tport_last_error(), "without cJSON")) {
        unlink(path);
        rmdir(dir);
        test_skip("test_formats_safetensors", "built without cJSON");
    }
    CHECK(s == TPORT_STATUS_OK, "open: %s", tport_last_error());
    if (!s) {
        CHECK(mf->container == TPORT_CONTAINER_SAFETENSORS && mf->n_tensors == 4, "container, 4 tensors");
        const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
        CHECK(e && e->type == TPORT_TYPE_BF16 && e->ne[0] == EMBD && e->ne[1] == VOCAB, "embd bf16 [8, 3]");
        CHECK(mf->hp.n_embd == EMBD && mf->hp.n_vocab == VOCAB, "dims from the embedding");
        const tport_mf_tensor *q = tport_model_file_find(mf, "blk.0.attn_q.weight");
        CHECK(q && ((const float *)q->data)[1 * EMBD] == 100.0f, "q rows as stored without config");
        CHECK(strstr(mf->notes, "config.json") != NULL, "note: %s", mf->notes);
        tport_model_file_close(mf);
    }

    write_text("config.json", "{\"model_type\": \"llama\", \"hidden_size\": 8, \"intermediate_size\": 16,"
                              " \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"num_key_value_heads\": 1,"
                              " \"vocab_size\": 3, \"max_position_embeddings\": 64, \"rms_norm_eps\": 1e-05,"
                              " \"rope_theta\": 500000.0}");
    s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "open with config: %s", tport_last_error());
    if (!s) {
        const tport_mf_hparams *hp = &mf->hp;
        CHECK(!strcmp(mf->arch, "llama") && hp->n_embd == 8 && hp->n_ff == 16 && hp->n_layer == 1 && hp->n_head == 2 &&
                  hp->n_head_kv == 1 && hp->n_ctx == 64 && hp->n_vocab == 3 && hp->n_rot == 4,
              "hparams from config.json");
        CHECK(hp->norm_eps == 1e-5f && hp->rope_freq_base == 500000.0f && hp->rope_mode == TPORT_ROPE_NORMAL,
              "eps, theta, rope mode");
        /* Meta row 2i (+1) of each head = HF row i (+ HD/2) of that head */
        const tport_mf_tensor *q = tport_model_file_find(mf, "blk.0.attn_q.weight");
        bool ok = q != NULL;
        for (int h = 0; ok && h < HEADS; h++)
            for (int i = 0; i < HD / 2; i++)
                for (int j = 0; j < 2; j++) {
                    int meta_row = h * HD + 2 * i + j, hf_row = h * HD + j * (HD / 2) + i;
                    ok = ok && ((const float *)q->data)[meta_row * EMBD + 3] == (float)(100 * hf_row + 3);
                }
        CHECK(ok, "q un-permuted");
        const tport_mf_tensor *k = tport_model_file_find(mf, "blk.0.attn_k.weight");
        /* one kv head of 4 rows holding 0,1,2,3 -> Meta order 0,2,1,3 */
        static const uint16_t want[4] = {0x0000, 0x4000, 0x3c00, 0x4200};
        ok = k && k->type == TPORT_TYPE_F16 && k->ne[1] == 4;
        for (int r = 0; ok && r < 4; r++)
            ok = ((const uint16_t *)k->data)[r * EMBD] == want[r];
        CHECK(ok, "k un-permuted with the kv head count");
        tport_model_file_close(mf);
    }

    /* hostile headers */
    const char *bad[] = {
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 8]}}",           /* size mismatch */
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 1600000]}}",     /* past the end */
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [-4], \"data_offsets\": [0, 16]}}",         /* negative */
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [4.5], \"data_offsets\": [0, 16]}}",        /* fraction */
        "{\"a\": {\"dtype\": \"Q9\", \"shape\": [4], \"data_offsets\": [0, 16]}}",           /* dtype */
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [1e300, 1e300], \"data_offsets\": [0, 16]}}",/* huge */
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [16, 0]}}",          /* reversed */
        "{\"a\": {\"dtype\": \"U8\", \"shape\": [16], \"data_offsets\": [0, 16]}}",            /* U8: MXFP4 only */
        "{\"a\": [1, 2]}",
        "[1, 2, 3]",
        "{\"a\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}",           /* truncated JSON */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        bb b = {0};
        bb_u64(&b, strlen(bad[i]));
        bb_raw(&b, bad[i], strlen(bad[i]));
        bb_zeros(&b, 16);
        char p2[256];
        bb_save(&b, p2);
        s = tport_model_file_open(p2, &mf);
        CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "offset"), "bad header %zu: %s", i,
              tport_last_error());
        unlink(p2);
        bb_free(&b);
    }
    char cfg[400];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    unlink(cfg);
    unlink(path);
    rmdir(dir);
    return test_finish("test_formats_safetensors");
}
