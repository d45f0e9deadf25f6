/* llama2.c checkpoints written here from export.py's layouts (legacy,
 * version 1, version 2 with group sizes 32 and 16) and read back. */
#include "byte_builder.h"
#include "formats/model_file.h"
#include "../test_util.h"

enum { DIM = 32, HIDDEN = 64, LAYERS = 2, HEADS = 4, KV_HEADS = 2, VOCAB = 48, SEQ = 16 };
enum { HEAD = DIM / HEADS, KV_DIM = HEAD * KV_HEADS };

/* Deterministic, distinct value for element i of weight kind k. */
static float val(int k, int layer, int i) {
    return (float)k * 1000.0f + (float)layer * 100.0f + (float)(i % 97) * 0.5f;
}

static void f32s(bb *b, int k, int layer, int n) {
    for (int i = 0; i < n; i++)
        bb_f32(b, val(k, layer, i));
}

enum { K_EMB, K_ATTN_NORM, K_Q, K_K, K_V, K_O, K_FFN_NORM, K_W1, K_W2, K_W3, K_NORM, K_CLS };

static const struct {
    int kind, n_in, n_out;
    const char *name; /* NULL: not per layer */
} per_layer[] = {
    {K_ATTN_NORM, DIM, 1, "attn_norm.weight"}, {K_Q, DIM, DIM, "attn_q.weight"},
    {K_K, DIM, KV_DIM, "attn_k.weight"},        {K_V, DIM, KV_DIM, "attn_v.weight"},
    {K_O, DIM, DIM, "attn_output.weight"},      {K_FFN_NORM, DIM, 1, "ffn_norm.weight"},
    {K_W1, DIM, HIDDEN, "ffn_gate.weight"},     {K_W2, HIDDEN, DIM, "ffn_down.weight"},
    {K_W3, DIM, HIDDEN, "ffn_up.weight"},
};

static void header7(bb *b, int vocab) {
    int32_t h[7] = {DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, vocab, SEQ};
    for (int i = 0; i < 7; i++)
        bb_i32(b, h[i]);
}

static void build_legacy(bb *b, bool shared) {
    header7(b, shared ? VOCAB : -VOCAB);
    f32s(b, K_EMB, 0, VOCAB * DIM);
    for (size_t k = 0; k < sizeof per_layer / sizeof per_layer[0]; k++)
        for (int l = 0; l < LAYERS; l++)
            f32s(b, per_layer[k].kind, l, per_layer[k].n_in * per_layer[k].n_out);
    f32s(b, K_NORM, 0, DIM);
    f32s(b, 99, 0, SEQ * HEAD / 2); /* freq_cis_real */
    f32s(b, 98, 0, SEQ * HEAD / 2); /* freq_cis_imag */
    if (!shared)
        f32s(b, K_CLS, 0, VOCAB * DIM);
}

static void versioned_header(bb *b, int version, bool shared, int32_t gs) {
    bb_u32(b, 0x616b3432);
    bb_i32(b, version);
    header7(b, VOCAB);
    bb_u8(b, shared ? 1 : 0);
    if (version == 2)
        bb_i32(b, gs);
    bb_pad_to(b, 256);
}

static void build_v1(bb *b, bool shared) {
    versioned_header(b, 1, shared, 0);
    for (int l = 0; l < LAYERS; l++)
        f32s(b, K_ATTN_NORM, l, DIM);
    for (int l = 0; l < LAYERS; l++)
        f32s(b, K_FFN_NORM, l, DIM);
    f32s(b, K_NORM, 0, DIM);
    f32s(b, K_EMB, 0, VOCAB * DIM);
    for (size_t k = 0; k < sizeof per_layer / sizeof per_layer[0]; k++)
        if (per_layer[k].n_out > 1)
            for (int l = 0; l < LAYERS; l++)
                f32s(b, per_layer[k].kind, l, per_layer[k].n_in * per_layer[k].n_out);
    if (!shared)
        f32s(b, K_CLS, 0, VOCAB * DIM);
}

/* Version 2: int8 q[i] = (i % 255) - 127 per tensor, scale of group g = (g + 1) / 64 + kind. */
static int8_t q_of(int i) { return (int8_t)(i % 255 - 127); }
static float scale_of(int kind, int g) { return (float)(g + 1) / 64.0f + (float)kind; }

static void build_v2(bb *b, bool shared, int gs) {
    versioned_header(b, 2, shared, gs);
    for (int l = 0; l < LAYERS; l++)
        f32s(b, K_ATTN_NORM, l, DIM);
    for (int l = 0; l < LAYERS; l++)
        f32s(b, K_FFN_NORM, l, DIM);
    f32s(b, K_NORM, 0, DIM);
    struct { int kind, n, reps; } q[9] = {{K_EMB, VOCAB * DIM, 1}};
    int nq = 1;
    for (size_t k = 0; k < sizeof per_layer / sizeof per_layer[0]; k++)
        if (per_layer[k].n_out > 1)
            q[nq].kind = per_layer[k].kind, q[nq].n = per_layer[k].n_in * per_layer[k].n_out, q[nq++].reps = LAYERS;
    if (!shared)
        q[nq].kind = K_CLS, q[nq].n = VOCAB * DIM, q[nq++].reps = 1;
    for (int k = 0; k < nq; k++)
        for (int r = 0; r < q[k].reps; r++)
            for (int i = 0; i < q[k].n; i++)
                bb_u8(b, (uint8_t)q_of(i));
    for (int k = 0; k < nq; k++)
        for (int r = 0; r < q[k].reps; r++)
            for (int g = 0; g < q[k].n / gs; g++)
                bb_f32(b, scale_of(q[k].kind, g));
}

static void check_common(const tport_model_file *mf, const char *what) {
    CHECK(mf->container == TPORT_CONTAINER_LLAMA2C, "%s container", what);
    CHECK(!strcmp(mf->arch, "llama"), "%s arch", what);
    const tport_mf_hparams *hp = &mf->hp;
    CHECK(hp->n_embd == DIM && hp->n_ff == HIDDEN && hp->n_layer == LAYERS && hp->n_head == HEADS &&
              hp->n_head_kv == KV_HEADS && hp->n_vocab == VOCAB && hp->n_ctx == SEQ && hp->n_rot == HEAD,
          "%s hparams", what);
    CHECK(hp->rope_mode == TPORT_ROPE_NORMAL && hp->norm_eps == 1e-5f && hp->rope_freq_base == 10000.0f,
          "%s rope/eps", what);
    CHECK(mf->vocab.n_tokens == 0, "%s: llama2.c files carry no vocabulary", what);
    const tport_mf_tensor *t = tport_model_file_find(mf, "blk.1.attn_k.weight");
    CHECK(t && t->n_dims == 2 && t->ne[0] == DIM && t->ne[1] == KV_DIM, "%s attn_k shape", what);
    t = tport_model_file_find(mf, "blk.1.ffn_down.weight");
    CHECK(t && t->ne[0] == HIDDEN && t->ne[1] == DIM, "%s ffn_down shape", what);
    t = tport_model_file_find(mf, "blk.1.ffn_norm.weight");
    CHECK(t && t->n_dims == 1 && t->type == TPORT_TYPE_F32 && ((const float *)t->data)[3] == val(K_FFN_NORM, 1, 3),
          "%s ffn_norm data", what);
    t = tport_model_file_find(mf, "output_norm.weight");
    CHECK(t && ((const float *)t->data)[5] == val(K_NORM, 0, 5), "%s output_norm data", what);
    CHECK(tport_model_file_find(mf, "blk.2.attn_q.weight") == NULL, "%s no layer 2", what);
}

static void check_f32(const char *path, bool shared, int version) {
    tport_model_file *mf = NULL;
    char what[64];
    snprintf(what, sizeof what, "v%d %s", version, shared ? "shared" : "unshared");
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "%s: %s", what, tport_last_error());
    if (s)
        return;
    check_common(mf, what);
    CHECK(mf->version == (uint32_t)version, "%s version %u", what, mf->version);
    CHECK(mf->n_tensors == 2 + 9 * LAYERS + (shared ? 0 : 1), "%s tensors %d", what, mf->n_tensors);
    const tport_mf_tensor *t = tport_model_file_find(mf, "blk.1.attn_v.weight");
    CHECK(t && ((const float *)t->data)[40] == val(K_V, 1, 40), "%s attn_v data", what);
    t = tport_model_file_find(mf, "token_embd.weight");
    CHECK(t && t->ne[0] == DIM && t->ne[1] == VOCAB && ((const float *)t->data)[100] == val(K_EMB, 0, 100),
          "%s embd", what);
    t = tport_model_file_find(mf, "output.weight");
    CHECK(shared ? t == NULL : (t && ((const float *)t->data)[7] == val(K_CLS, 0, 7)), "%s classifier", what);
    tport_model_file_close(mf);
}

static void check_q8(const char *path, bool shared, int gs) {
    tport_model_file *mf = NULL;
    char what[64];
    snprintf(what, sizeof what, "v2 gs %d %s", gs, shared ? "shared" : "unshared");
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "%s: %s", what, tport_last_error());
    if (s)
        return;
    check_common(mf, what);
    CHECK(mf->version == 2, "%s version", what);
    const tport_mf_tensor *t = tport_model_file_find(mf, "blk.1.ffn_up.weight");
    CHECK(t != NULL, "%s ffn_up", what);
    if (t) {
        /* element 70 of this tensor: group 70 / gs; value q * scale */
        int i = 70;
        float want = (float)q_of(i) * scale_of(K_W3, i / gs);
        if (gs == 32) {
            CHECK(t->type == TPORT_TYPE_Q8_0_QNT1 && t->nbytes == (uint64_t)(DIM * HIDDEN / 32) * 36, "%s type", what);
            const uint8_t *blk = (const uint8_t *)t->data + (i / 32) * 36;
            float d;
            memcpy(&d, blk, 4);
            CHECK(d * (float)(int8_t)blk[4 + i % 32] == want, "%s value %g vs %g", what,
                  (double)(d * (float)(int8_t)blk[4 + i % 32]), (double)want);
        } else {
            CHECK(t->type == TPORT_TYPE_F32, "%s type f32", what);
            CHECK(((const float *)t->data)[i] == want, "%s value", what);
        }
    }
    CHECK((tport_model_file_find(mf, "output.weight") != NULL) == !shared, "%s classifier", what);
    tport_model_file_close(mf);
}

/* llama2.c's tokenizer.bin for a vocabulary-less checkpoint: pieces come
 * back in SentencePiece spelling; short or corrupt files are refused. */
static void test_vocab_file(void) {
    bb m = {0}, t = {0};
    char mpath[256], tpath[256];
    build_v1(&m, true);
    bb_save(&m, mpath);
    bb_i32(&t, 7);
    for (int i = 0; i < VOCAB; i++) {
        char piece[16];
        int n = i == 1 ? snprintf(piece, sizeof piece, "\n<s>\n") : snprintf(piece, sizeof piece, " w%d", i);
        bb_f32(&t, -(float)i), bb_i32(&t, n), bb_raw(&t, piece, (size_t)n);
    }
    for (size_t cut = t.n + 37; cut >= 37; cut -= 37) { /* the whole file, then shorter and shorter */
        if (cut > t.n)
            cut = t.n;
        bb_write_temp(t.p, cut, tpath);
        tport_model_file *mf = NULL;
        CHECK(tport_model_file_open(mpath, &mf) == TPORT_STATUS_OK, "open model");
        tport_status s = mf ? tport_model_file_load_llama2c_vocab(mf, tpath) : TPORT_STATUS_ERROR;
        if (cut == t.n) {
            CHECK(s == TPORT_STATUS_OK, "vocab: %s", tport_last_error());
            CHECK(mf->vocab.n_tokens == VOCAB && !strcmp(mf->vocab.tokens[1], "<s>") &&
                      !strcmp(mf->vocab.tokens[5], "\xe2\x96\x81w5") && mf->vocab.scores[5] == -5.0f,
                  "pieces in SentencePiece spelling: '%s' '%s'", mf->vocab.tokens[1], mf->vocab.tokens[5]);
        } else {
            CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "offset"), "cut at %zu: %s", cut,
                  tport_last_error());
        }
        tport_model_file_close(mf);
        unlink(tpath);
    }
    unlink(mpath);
    bb_free(&m);
    bb_free(&t);
}

int main(void) {
    char path[256];
    test_vocab_file();
    for (int shared = 0; shared < 2; shared++) {
        bb b = {0};
        build_legacy(&b, shared);
        bb_save(&b, path);
        check_f32(path, shared, 0);
        unlink(path);
        /* the legacy layout is recognised by its exact size: one byte more is not llama2.c */
        bb_u8(&b, 0);
        bb_save(&b, path);
        tport_model_file *mf = NULL;
        CHECK(tport_model_file_open(path, &mf) == TPORT_STATUS_BAD_FORMAT, "legacy + 1 byte not recognised");
        unlink(path);
        bb_free(&b);

        build_v1(&b, shared);
        bb_save(&b, path);
        check_f32(path, shared, 1);
        unlink(path);
        bb_free(&b);

        int gss[2] = {32, 16};
        for (int g = 0; g < 2; g++) {
            build_v2(&b, shared, gss[g]);
            bb_save(&b, path);
            check_q8(path, shared, gss[g]);
            unlink(path);
            bb_free(&b);
        }
    }
    return test_finish("test_formats_llama2c");
}
