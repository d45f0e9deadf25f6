/* Multi-part GGML/GGMF llama files (formats.md 1.7): a model written whole
 * and the same model split into FNAME, FNAME.1, ... by the documented
 * layout (1-D tensors repeated; token_embd, wo, w2 split by columns; the
 * other 2-D tensors by rows) read as the same tensors; a missing or
 * mismatched part is an error. */
#include "formats/model_file.h"
#include "sample_files.h"
#include "../test_util.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

#define N_EMBD 128
#define N_FF 256
#define N_VOCAB 4

typedef struct spec {
    const char *name;
    uint32_t type; /* 0 f32, 1 f16, 2 q4_0 (QNT0: {f32 d; u8 qs[16]}) */
    int64_t ne0, ne1;
    bool by_cols;
} spec;

static const spec tensors[] = {
    {"tok_embeddings.weight", 1, N_EMBD, N_VOCAB, true},
    {"norm.weight", 0, N_EMBD, 1, false},
    {"output.weight", 0, N_EMBD, N_VOCAB, false},
    {"layers.0.attention.wq.weight", 2, N_EMBD, N_EMBD, false},
    {"layers.0.attention.wk.weight", 1, N_EMBD, N_EMBD, false},
    {"layers.0.attention.wv.weight", 0, N_EMBD, N_EMBD, false},
    {"layers.0.attention.wo.weight", 2, N_EMBD, N_EMBD, true},
    {"layers.0.attention_norm.weight", 0, N_EMBD, 1, false},
    {"layers.0.ffn_norm.weight", 0, N_EMBD, 1, false},
    {"layers.0.feed_forward.w1.weight", 0, N_EMBD, N_FF, false},
    {"layers.0.feed_forward.w2.weight", 2, N_FF, N_EMBD, true},
    {"layers.0.feed_forward.w3.weight", 1, N_EMBD, N_FF, false},
};
#define N_TENSORS (int)(sizeof tensors / sizeof tensors[0])

static uint64_t row_bytes(uint32_t type, int64_t ne0) {
    return type == 0 ? (uint64_t)ne0 * 4 : type == 1 ? (uint64_t)ne0 * 2 : (uint64_t)ne0 / 32 * 20;
}

/* Byte k of row r of tensor i of the whole model (q4_0 scales kept
 * plausible so nothing looks like the 03-10 row-split layout). */
static uint8_t byte_at(int i, uint64_t r, uint64_t k) {
    return (uint8_t)(i * 29 + r * 7 + k * 13 + 1);
}

/* Part `part` of `n` (n == 1: the whole model). */
static void build(bb *b, uint32_t magic, int part, int n, int drop_tensor) {
    bb_u32(b, magic);
    if (magic != 0x67676d6cu)
        bb_u32(b, 1);
    uint32_t hp[7] = {N_VOCAB, N_EMBD, 32, 2, 1, 32, 2};
    for (int i = 0; i < 7; i++)
        bb_u32(b, hp[i]);
    for (int i = 0; i < N_VOCAB; i++) {
        bb_u32(b, 2), bb_u8(b, 'a'), bb_u8(b, (uint8_t)('a' + i));
        if (magic != 0x67676d6cu)
            bb_f32(b, (float)i);
    }
    for (int i = 0; i < N_TENSORS; i++) {
        if (i == drop_tensor)
            continue;
        const spec *t = &tensors[i];
        int n_dims = t->ne1 > 1 ? 2 : 1;
        int64_t ne0 = t->ne0, ne1 = t->ne1;
        if (n_dims == 2 && t->by_cols)
            ne0 /= n;
        else if (n_dims == 2)
            ne1 /= n;
        bb_i32(b, n_dims), bb_i32(b, (int32_t)strlen(t->name)), bb_u32(b, t->type), bb_i32(b, (int32_t)ne0);
        if (n_dims == 2)
            bb_i32(b, (int32_t)ne1);
        bb_raw(b, t->name, strlen(t->name));
        uint64_t full_row = row_bytes(t->type, t->ne0), slice = row_bytes(t->type, ne0);
        int64_t r0 = n_dims == 2 && !t->by_cols ? part * ne1 : 0;
        uint64_t k0 = n_dims == 2 && t->by_cols ? (uint64_t)part * slice : 0;
        for (int64_t r = r0; r < r0 + ne1; r++)
            for (uint64_t k = k0; k < k0 + slice; k++) {
                uint8_t v = byte_at(i, (uint64_t)r, k);
                if (t->type == 2 && k % 20 == 3) /* the f32 scale's top byte: a plausible d */
                    v = 0x3c;
                bb_u8(b, v);
            }
        (void)full_row;
    }
}

static void save_as(const bb *b, const char *path) {
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b->p, 1, b->n, f) == b->n, "write %s", path);
    if (f)
        fclose(f);
}

static void write_parts(const char *base, uint32_t magic, int n, int bad_part) {
    for (int p = 0; p < n; p++) {
        bb b = {0};
        char path[400];
        if (p)
            snprintf(path, sizeof path, "%s.%d", base, p);
        else
            snprintf(path, sizeof path, "%s", base);
        build(&b, magic, p, n, p == bad_part ? 5 : -1);
        save_as(&b, path);
        bb_free(&b);
    }
}

static void remove_parts(const char *base, int n) {
    char path[400];
    unlink(base);
    for (int p = 1; p < n; p++)
        snprintf(path, sizeof path, "%s.%d", base, p), unlink(path);
}

static void test_merge(uint32_t magic, const char *what, int n) {
    char whole[256], base[300];
    bb b = {0};
    build(&b, magic, 0, 1, -1);
    bb_save(&b, whole);
    bb_free(&b);
    snprintf(base, sizeof base, "%s.split", whole);
    write_parts(base, magic, n, -1);
    tport_model_file *a = NULL, *m = NULL;
    CHECK(tport_model_file_open(whole, &a) == TPORT_STATUS_OK, "%s whole: %s", what, tport_last_error());
    CHECK(tport_model_file_open(base, &m) == TPORT_STATUS_OK, "%s %d parts: %s", what, n, tport_last_error());
    if (a && m) {
        CHECK(m->n_parts == (uint32_t)n && a->n_parts == 0, "%s: n_parts %u", what, m->n_parts);
        CHECK(strstr(m->notes, "part") != NULL, "%s: note '%s'", what, m->notes);
        CHECK(!memcmp(&a->hp, &m->hp, sizeof a->hp), "%s: hparams (n_ff %u vs %u)", what, a->hp.n_ff, m->hp.n_ff);
        CHECK(a->n_tensors == m->n_tensors, "%s: tensor count", what);
        for (int i = 0; i < a->n_tensors && i < m->n_tensors; i++) {
            const tport_mf_tensor *x = &a->tensors[i], *y = &m->tensors[i];
            CHECK(!strcmp(x->name, y->name) && x->type == y->type && !memcmp(x->ne, y->ne, sizeof x->ne) &&
                      x->nbytes == y->nbytes && !memcmp(x->data, y->data, (size_t)x->nbytes),
                  "%s: tensor '%s' [%lld, %lld] equal", what, x->name, (long long)y->ne[0], (long long)y->ne[1]);
        }
    }
    /* `tport convert` of the parts and of the whole file give the same
     * GGUF tensors (q4_0_qnt0 is re-encoded, so compare the two outputs) */
    char cmd[1200], gguf[2][320];
    tport_model_file *g[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        snprintf(gguf[k], sizeof gguf[k], "%s.%d.gguf", whole, k);
        snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s >/dev/null 2>&1", k ? base : whole, gguf[k]);
        CHECK(system(cmd) == 0, "%s: %s", what, cmd);
        CHECK(tport_model_file_open(gguf[k], &g[k]) == TPORT_STATUS_OK, "%s: converted opens: %s", what,
              tport_last_error());
    }
    for (int i = 0; g[0] && g[1] && i < g[0]->n_tensors; i++) {
        const tport_mf_tensor *x = &g[0]->tensors[i], *y = tport_model_file_find(g[1], x->name);
        CHECK(y && x->type == y->type && !memcmp(x->ne, y->ne, sizeof x->ne) && x->nbytes == y->nbytes &&
                  !memcmp(x->data, y->data, (size_t)x->nbytes),
              "%s: converted tensor '%s' equals the whole model's", what, x->name);
    }
    CHECK(g[0] && g[1] && g[0]->n_tensors == g[1]->n_tensors, "%s: converted tensor counts", what);
    for (int k = 0; k < 2; k++)
        tport_model_file_close(g[k]), unlink(gguf[k]);
    tport_model_file_close(a), tport_model_file_close(m);

    /* part 0 alone, from memory: the other parts cannot be found */
    bb p0 = {0};
    build(&p0, magic, 0, n, -1);
    tport_status s = tport_model_file_open_memory(p0.p, p0.n, "part0", &m);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "part"), "%s: part 0 from memory: %s", what,
          s ? tport_last_error() : "opened");
    tport_model_file_close(m), bb_free(&p0);

    /* the last part missing */
    char last[400];
    snprintf(last, sizeof last, "%s.%d", base, n - 1);
    unlink(last);
    s = tport_model_file_open(base, &m);
    CHECK(s != TPORT_STATUS_OK && strstr(tport_last_error(), "part"), "%s: missing part: %s", what,
          s ? tport_last_error() : "opened");
    tport_model_file_close(m);

    /* a part that lacks a tensor */
    write_parts(base, magic, n, n - 1);
    s = tport_model_file_open(base, &m);
    CHECK(s == TPORT_STATUS_BAD_FORMAT, "%s: mismatched part: %s", what, s ? tport_last_error() : "opened");
    tport_model_file_close(m);

    /* a truncated part */
    bb t = {0};
    build(&t, magic, n - 1, n, -1);
    t.n -= 7;
    save_as(&t, last);
    bb_free(&t);
    s = tport_model_file_open(base, &m);
    CHECK(s == TPORT_STATUS_BAD_FORMAT, "%s: truncated part: %s", what, s ? tport_last_error() : "opened");
    tport_model_file_close(m);
    remove_parts(base, n);
    unlink(whole);
}

int main(void) {
    test_merge(0x67676d66u, "ggmf", 2);
    test_merge(0x67676d66u, "ggmf", 4);
    test_merge(0x67676d6cu, "ggml", 2);
    return test_finish("test_formats_multipart");
}
