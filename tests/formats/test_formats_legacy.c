/* Pre-GGUF llama files of every generation (unversioned GGML, GGMF v1, GGJT
 * v1/v2/v3, and the ggml examples' qnt*1000+ftype encoding) written here
 * from formats.md section 1, read back with the right layout revisions. */
#include "byte_builder.h"
#include "formats/model_file.h"
#include "../test_util.h"

#define MAGIC_GGML 0x67676d6cu
#define MAGIC_GGMF 0x67676d66u
#define MAGIC_GGJT 0x67676a74u

typedef struct rec {
    const char *name, *want_name;
    uint32_t code;
    int n_dims;
    int32_t ne[2];
} rec;

/* Block geometry per on-disk code and quantization version (formats.md 3). */
static bool geometry(uint32_t code, int qnt, int *block, int *bytes) {
    static const int q0[9][2] = {{1, 4}, {1, 2}, {32, 20}, {32, 24}, {16, 10}, {16, 12}, {32, 22}, {32, 24}, {32, 36}};
    static const int q2[9][2] = {{1, 4}, {1, 2}, {32, 18}, {32, 20}, {0, 0}, {0, 0}, {32, 22}, {32, 24}, {32, 34}};
    if (code == 12) { /* k-quants only exist at QNT2; used elsewhere to build refused files */
        *block = 256, *bytes = 144;
        return true;
    }
    if (code > 8)
        return false;
    const int *g = qnt == 2 ? q2[code] : q0[code];
    *block = g[0], *bytes = g[1];
    return *block != 0;
}

/* The type each generation's bytes are (backend.h ids), from the tables. */
static tport_type_id expected_type(uint32_t code, int qnt) {
    if (code <= 1 || qnt == 2)
        return code;
    if (qnt == 0) {
        const tport_type_id t[] = {0, 0, 200, 201, 202, 203, 204, 205, 206};
        return t[code];
    }
    const tport_type_id t[] = {0, 0, 207, 208, 0, 0, TPORT_TYPE_Q5_0, TPORT_TYPE_Q5_1, 206};
    return t[code];
}

static uint8_t data_byte(int tensor, size_t i) {
    return (uint8_t)(i * 13 + (size_t)tensor * 7 + 1);
}

#define N_VOCAB 5
static const char *const vocab[N_VOCAB] = {"<unk>", "<s>", "</s>", " hello", "\xe2\x96\x81x"};

static void build(bb *b, uint32_t magic, uint32_t version, uint32_t ftype, const rec *r, int n, size_t *data_at) {
    memset(b, 0, sizeof *b);
    bb_u32(b, magic);
    if (magic != MAGIC_GGML)
        bb_u32(b, version);
    uint32_t hp[7] = {N_VOCAB, 64, 16, 4, 1, 16, ftype};
    for (int i = 0; i < 7; i++)
        bb_u32(b, hp[i]);
    for (int i = 0; i < N_VOCAB; i++) {
        bb_u32(b, (uint32_t)strlen(vocab[i]));
        bb_raw(b, vocab[i], strlen(vocab[i]));
        if (magic != MAGIC_GGML)
            bb_f32(b, -(float)i);
    }
    int qnt = magic == MAGIC_GGJT ? (int)version - 1 : (int)(ftype / 1000);
    for (int t = 0; t < n; t++) {
        bb_i32(b, r[t].n_dims);
        bb_i32(b, (int32_t)strlen(r[t].name));
        bb_u32(b, r[t].code);
        for (int d = 0; d < r[t].n_dims; d++)
            bb_i32(b, r[t].ne[d]);
        bb_raw(b, r[t].name, strlen(r[t].name));
        if (magic == MAGIC_GGJT)
            bb_pad_to(b, 32);
        data_at[t] = b->n;
        int block = 1, bytes = 1;
        if (!geometry(r[t].code, qnt, &block, &bytes))
            geometry(r[t].code, 0, &block, &bytes); /* for files that must be refused */
        size_t nb = (size_t)r[t].ne[0] / (size_t)block * (size_t)(r[t].n_dims == 2 ? r[t].ne[1] : 1) * (size_t)bytes;
        for (size_t i = 0; i < nb; i++)
            bb_u8(b, data_byte(t, i));
    }
}

static void check(const char *what, uint32_t magic, uint32_t version, uint32_t ftype, const rec *r, int n) {
    bb b;
    size_t data_at[16];
    char path[256];
    build(&b, magic, version, ftype, r, n, data_at);
    bb_save(&b, path);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "%s: %s", what, tport_last_error());
    if (s) {
        unlink(path);
        bb_free(&b);
        return;
    }
    int qnt = magic == MAGIC_GGJT ? (int)version - 1 : (int)(ftype / 1000);
    tport_container want_c = magic == MAGIC_GGML ? TPORT_CONTAINER_GGML
                             : magic == MAGIC_GGMF ? TPORT_CONTAINER_GGMF
                                                   : TPORT_CONTAINER_GGJT;
    CHECK(mf->container == want_c && mf->version == version, "%s: container %d v%u", what, mf->container, mf->version);
    CHECK(mf->quant_version == qnt, "%s: quant version %d, want %d", what, mf->quant_version, qnt);
    CHECK(mf->file_type == ftype % 1000, "%s: ftype %u", what, mf->file_type);
    CHECK(!strcmp(mf->arch, "llama"), "%s: arch", what);
    const tport_mf_hparams *hp = &mf->hp;
    CHECK(hp->n_vocab == N_VOCAB && hp->n_embd == 64 && hp->n_head == 4 && hp->n_head_kv == 4 && hp->n_layer == 1 &&
              hp->n_rot == 16,
          "%s: hparams", what);
    /* n_ff: from the ffn_gate tensor when present, else ((2*4*64/3 + 15)/16)*16 = 176 */
    uint32_t want_ff = 176;
    for (int t = 0; t < n; t++)
        if (!strcmp(r[t].want_name, "blk.0.ffn_gate.weight"))
            want_ff = (uint32_t)r[t].ne[1];
    CHECK(hp->n_ff == want_ff, "%s: n_ff %u want %u", what, hp->n_ff, want_ff);
    CHECK(hp->norm_eps == 1e-6f && hp->rope_mode == TPORT_ROPE_NORMAL, "%s: eps/rope", what);
    CHECK(mf->vocab.n_tokens == N_VOCAB && !strcmp(mf->vocab.tokens[3], " hello") && mf->vocab.token_len[4] == 4,
          "%s: vocab", what);
    if (magic == MAGIC_GGML)
        CHECK(mf->vocab.scores == NULL, "%s: unversioned files have no scores", what);
    else
        CHECK(mf->vocab.scores && mf->vocab.scores[4] == -4.0f, "%s: scores", what);
    CHECK(mf->vocab.bos == 1 && mf->vocab.eos == 2, "%s: bos/eos", what);
    CHECK(mf->n_tensors == n, "%s: %d tensors", what, mf->n_tensors);
    for (int t = 0; t < n; t++) {
        const tport_mf_tensor *x = tport_model_file_find(mf, r[t].want_name);
        CHECK(x != NULL, "%s: tensor %s", what, r[t].want_name);
        if (!x)
            continue;
        CHECK(x->type == expected_type(r[t].code, qnt), "%s: %s type %u, want %u", what, x->name, x->type,
              expected_type(r[t].code, qnt));
        CHECK(x->ne[0] == r[t].ne[0] && x->n_dims == r[t].n_dims, "%s: %s shape", what, x->name);
        CHECK(x->offset == data_at[t], "%s: %s offset %llu want %zu", what, x->name, (unsigned long long)x->offset,
              data_at[t]);
        if (magic == MAGIC_GGJT)
            CHECK(x->offset % 32 == 0, "%s: %s aligned", what, x->name);
        bool same = true;
        for (uint64_t i = 0; i < x->nbytes; i++)
            same = same && ((const uint8_t *)x->data)[i] == data_byte(t, (size_t)i);
        CHECK(same, "%s: %s data", what, x->name);
    }
    tport_model_file_close(mf);
    unlink(path);
    bb_free(&b);
}

static const rec base[] = {
    {"tok_embeddings.weight", "token_embd.weight", 1, 2, {64, N_VOCAB}},
    {"norm.weight", "output_norm.weight", 0, 1, {64, 1}},
    {"layers.0.attention.wq.weight", "blk.0.attn_q.weight", 2, 2, {64, 64}},
    {"layers.0.attention.wk.weight", "blk.0.attn_k.weight", 3, 2, {64, 64}},
    {"layers.0.attention.wv.weight", "blk.0.attn_v.weight", 8, 2, {64, 64}},
    {"layers.0.attention.wo.weight", "blk.0.attn_output.weight", 6, 2, {64, 64}},
    {"layers.0.feed_forward.w1.weight", "blk.0.ffn_gate.weight", 7, 2, {64, 192}},
    {"layers.0.attention_norm.weight", "blk.0.attn_norm.weight", 0, 1, {64, 1}},
    {"output.weight", "output.weight", 1, 2, {64, N_VOCAB}},
    {"layers.0.ffn_norm.weight", "blk.0.ffn_norm.weight", 0, 1, {64, 1}},
    {"layers.0.feed_forward.w2.weight", "blk.0.ffn_down.weight", 0, 2, {192, 64}},
    {"layers.0.feed_forward.w3.weight", "blk.0.ffn_up.weight", 0, 2, {64, 192}},
};
enum { N_BASE = sizeof base / sizeof base[0] };

static void test_generations(void) {
    check("ggml", MAGIC_GGML, 0, 2, base, N_BASE);
    check("ggmf v1", MAGIC_GGMF, 1, 2, base, N_BASE);
    check("ggjt v1", MAGIC_GGJT, 1, 2, base, N_BASE);
    check("ggjt v2", MAGIC_GGJT, 2, 2, base, N_BASE);
    check("ggjt v3", MAGIC_GGJT, 3, 2, base, N_BASE);
    check("ggml qnt1 (ftype 1002)", MAGIC_GGML, 0, 1002, base, N_BASE);
    check("ggml qnt2 (ftype 2002)", MAGIC_GGML, 0, 2002, base, N_BASE);
    /* Q4_2/Q4_3 exist only at QNT0; k-quants only in GGJT v3 */
    rec v[N_BASE];
    memcpy(v, base, sizeof base);
    v[N_BASE - 2].code = 4; /* ffn_down [192, 64] as q4_2 */
    v[N_BASE - 1].code = 5; /* ffn_up [64, 192] as q4_3 */
    check("ggjt v1 q4_2/q4_3", MAGIC_GGJT, 1, 5, v, N_BASE);
    memcpy(v, base, sizeof base);
    v[N_BASE - 2].ne[0] = 256, v[N_BASE - 2].ne[1] = 4, v[N_BASE - 2].code = 12;
    check("ggjt v3 q4_k", MAGIC_GGJT, 3, 15, v, N_BASE);
    /* grouped-query attention: attn_k with 1 of 4 heads' rows -> n_head_kv 1 */
    memcpy(v, base, sizeof base);
    v[3].ne[1] = 16;
    v[4].ne[1] = 16;
    {
        bb g;
        size_t gat[16];
        char gpath[256];
        build(&g, MAGIC_GGJT, 3, 1, v, N_BASE, gat);
        bb_save(&g, gpath);
        tport_model_file *gm = NULL;
        CHECK(tport_model_file_open(gpath, &gm) == TPORT_STATUS_OK && gm->hp.n_head_kv == 1,
              "n_head_kv from attn_k's shape: %s", tport_last_error());
        tport_model_file_close(gm);
        unlink(gpath);
        bb_free(&g);
    }
    /* one tensor short of a 1-layer llama: a valid container, read with
     * what it has and what a complete model would also need
     * (test_formats_partial covers every container) */
    bb b;
    size_t at[16];
    char path[256];
    build(&b, MAGIC_GGJT, 3, 1, base, N_BASE - 1, at);
    bb_save(&b, path);
    tport_model_file *mf = NULL;
    CHECK(tport_model_file_open(path, &mf) == TPORT_STATUS_OK && mf->n_tensors == N_BASE - 1 && mf->n_missing == 1,
          "incomplete tensor set: %s", mf ? mf->missing : tport_last_error());
    tport_model_file_close(mf);
    unlink(path);
    bb_free(&b);
}

static void test_refused(void) {
    struct {
        const char *what;
        uint32_t magic, version, code;
    } cases[] = {{"q4_2 in ggjt v2", MAGIC_GGJT, 2, 4}, {"q4_3 in ggjt v3", MAGIC_GGJT, 3, 5},
                 {"q4_k in ggjt v1", MAGIC_GGJT, 1, 12}, {"ggjt v4", MAGIC_GGJT, 4, 0},
                 {"ggmf v2", MAGIC_GGMF, 2, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rec r[N_BASE];
        memcpy(r, base, sizeof base);
        r[2].code = cases[i].code, r[2].ne[0] = 256, r[2].ne[1] = 2;
        bb b;
        size_t at[16];
        char path[256];
        /* build with geometry of the QNT that would make the size valid */
        build(&b, cases[i].magic, cases[i].version > 3 ? 3 : cases[i].version, 2, r, N_BASE, at);
        if (cases[i].magic != MAGIC_GGML)
            memcpy(b.p + 4, &cases[i].version, 4);
        bb_save(&b, path);
        tport_model_file *mf = NULL;
        tport_status s = tport_model_file_open(path, &mf);
        CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "offset"), "%s refused: %s", cases[i].what,
              tport_last_error());
        unlink(path);
        bb_free(&b);
    }
}

/* 2023-03-10 Q4_0: per row all f32 scales, then all nibbles. */
static void test_rowsplit(void) {
    enum { NE0 = 256, ROWS = 3, NB = NE0 / 32 };
    bb b = {0};
    uint8_t rowsplit[ROWS][NB * 20];
    for (int r = 0; r < ROWS; r++) {
        for (int k = 0; k < NB; k++) {
            float d = 0.01f * (float)(1 + k + r);
            memcpy(&rowsplit[r][4 * k], &d, 4);
        }
        for (int i = 0; i < NB * 16; i++)
            rowsplit[r][4 * NB + i] = (uint8_t)(0x80 | ((i * 37 + r) & 0x7f));
    }
    bb_u32(&b, MAGIC_GGML);
    uint32_t hp[7] = {N_VOCAB, 64, 16, 4, 1, 16, 2};
    for (int i = 0; i < 7; i++)
        bb_u32(&b, hp[i]);
    for (int i = 0; i < N_VOCAB; i++)
        bb_u32(&b, 1), bb_u8(&b, 'a');
    bb_i32(&b, 2), bb_i32(&b, 28), bb_u32(&b, 2), bb_i32(&b, NE0), bb_i32(&b, ROWS);
    bb_raw(&b, "layers.0.attention.wq.weight", 28);
    bb_raw(&b, rowsplit, sizeof rowsplit);
    for (int t = 0; t < N_BASE; t++) { /* the rest of a 1-layer llama, as small f32 vectors */
        if (!strcmp(base[t].name, "layers.0.attention.wq.weight"))
            continue;
        bb_i32(&b, 1), bb_i32(&b, (int32_t)strlen(base[t].name)), bb_u32(&b, 0), bb_i32(&b, 4);
        bb_raw(&b, base[t].name, strlen(base[t].name));
        bb_zeros(&b, 16);
    }
    char path[256];
    bb_save(&b, path);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "rowsplit: %s", tport_last_error());
    if (!s) {
        const tport_mf_tensor *t = tport_model_file_find(mf, "blk.0.attn_q.weight");
        CHECK(t && t->type == TPORT_TYPE_Q4_0_QNT0 && t->nbytes == sizeof rowsplit, "rowsplit tensor");
        bool ok = t != NULL;
        for (int r = 0; ok && r < ROWS; r++)
            for (int k = 0; k < NB; k++) {
                const uint8_t *blk = (const uint8_t *)t->data + (size_t)(r * NB + k) * 20;
                ok = ok && !memcmp(blk, &rowsplit[r][4 * k], 4) && !memcmp(blk + 4, &rowsplit[r][4 * NB + 16 * k], 16);
            }
        CHECK(ok, "rowsplit re-interleaved to {d, qs[16]} blocks");
        CHECK(strstr(mf->notes, "row-split") != NULL, "note says so: '%s'", mf->notes);
        tport_model_file_close(mf);
    }
    unlink(path);
    bb_free(&b);
}

int main(void) {
    test_generations();
    test_refused();
    test_rowsplit();
    return test_finish("test_formats_legacy");
}
