/* GGUF v1, v2 and v3 files built here byte by byte from the documented
 * layout (formats.md 2.1-2.4), read back through tport_model_file_open;
 * then the GGUF writer, round-tripped through the reader. */
#include <math.h>

#include "byte_builder.h"
#include "core/error.h"
#include "formats/gguf_write.h"
#include "formats/model_file.h"
#include "../test_util.h"

enum { T_U8, T_I8, T_U16, T_I16, T_U32, T_I32, T_F32, T_BOOL, T_STR, T_ARR, T_U64, T_I64, T_F64 };

typedef struct gguf_b {
    bb b;
    int version;
} gguf_b;

static void g_len(gguf_b *g, uint64_t n) {
    if (g->version == 1)
        bb_u32(&g->b, (uint32_t)n);
    else
        bb_u64(&g->b, n);
}

/* v1 writers stored strings with their NUL counted in the length. */
static void g_str(gguf_b *g, const char *s) {
    size_t n = strlen(s);
    g_len(g, g->version == 1 ? n + 1 : n);
    bb_raw(&g->b, s, g->version == 1 ? n + 1 : n);
}

static void g_key(gguf_b *g, const char *key, uint32_t type) {
    g_str(g, key);
    bb_u32(&g->b, type);
}

static const float t0_data[8] = {1.0f, -2.0f, 3.5f, 0.25f, 5.0f, -6.0f, 7.0f, 1e-3f};
static const uint16_t t1_data[4] = {0x3c00, 0xc000, 0x0000, 0x7bff}; /* f16: 1, -2, 0, 65504 */

/* A small llama-like file with every value type this version knows. */
static void build(gguf_b *g, int version, uint32_t alignment) {
    memset(g, 0, sizeof *g);
    g->version = version;
    bb *b = &g->b;
    int n_kv = 17 + (version >= 2 ? 3 : 0) + (alignment != 32 ? 1 : 0);
    bb_raw(b, "GGUF", 4);
    bb_u32(b, (uint32_t)version);
    g_len(g, 2);            /* tensors */
    g_len(g, (uint64_t)n_kv);
    g_key(g, "general.architecture", T_STR), g_str(g, "llama");
    g_key(g, "llama.context_length", T_U32), bb_u32(b, 256);
    g_key(g, "llama.embedding_length", T_U32), bb_u32(b, 4);
    g_key(g, "llama.block_count", T_U32), bb_u32(b, 1);
    g_key(g, "llama.attention.head_count", T_U32), bb_u32(b, 2);
    g_key(g, "llama.rope.freq_base", T_F32), bb_f32(b, 500000.0f);
    g_key(g, "test.u8", T_U8), bb_u8(b, 200);
    g_key(g, "test.i8", T_I8), bb_u8(b, 0x80);
    g_key(g, "test.u16", T_U16), bb_u16(b, 65000);
    g_key(g, "test.i16", T_I16), bb_u16(b, 0xfffe);
    g_key(g, "test.i32", T_I32), bb_i32(b, -123456);
    g_key(g, "test.bool", T_BOOL), bb_u8(b, 1);
    /* nested: array of 2 arrays of i32 */
    g_key(g, "test.nested", T_ARR), bb_u32(b, T_ARR), g_len(g, 2);
    bb_u32(b, T_I32), g_len(g, 2), bb_i32(b, 7), bb_i32(b, -8);
    bb_u32(b, T_I32), g_len(g, 1), bb_i32(b, 9);
    g_key(g, "tokenizer.ggml.model", T_STR), g_str(g, "llama");
    g_key(g, "tokenizer.ggml.tokens", T_ARR), bb_u32(b, T_STR), g_len(g, 3);
    g_str(g, "<unk>"), g_str(g, "<s>"), g_str(g, "hello");
    g_key(g, "tokenizer.ggml.scores", T_ARR), bb_u32(b, T_F32), g_len(g, 3);
    bb_f32(b, 0.0f), bb_f32(b, -1.0f), bb_f32(b, -2.5f);
    g_key(g, "tokenizer.ggml.bos_token_id", T_U32), bb_u32(b, 1);
    if (version >= 2) {
        g_key(g, "test.u64", T_U64), bb_u64(b, 0x123456789abcdefULL);
        g_key(g, "test.i64", T_I64), bb_u64(b, (uint64_t)-5);
        g_key(g, "test.f64", T_F64);
        double d = 3.25;
        uint64_t u;
        memcpy(&u, &d, 8);
        bb_u64(b, u);
    }
    if (alignment != 32)
        g_key(g, "general.alignment", T_U32), bb_u32(b, alignment);
    /* tensor infos: t0 F32 [4, 2] at 0, t1 F16 [4] at align(32 bytes) */
    g_str(g, "token_embd.weight"), bb_u32(b, 2), g_len(g, 4), g_len(g, 2), bb_u32(b, 0), bb_u64(b, 0);
    uint64_t off1 = (32 + alignment - 1) / alignment * alignment;
    g_str(g, "output_norm.weight"), bb_u32(b, 1), g_len(g, 4), bb_u32(b, 1), bb_u64(b, off1);
    bb_pad_to(b, alignment);
    size_t data_start = b->n;
    bb_raw(b, t0_data, sizeof t0_data);
    while (b->n < data_start + off1)
        bb_u8(b, 0xAA); /* readers must skip the pad, not check its value */
    bb_raw(b, t1_data, sizeof t1_data);
}

static const tport_kv *kv(const tport_model_file *mf, const char *key) {
    return tport_model_file_kv(mf, key);
}

static void check_file(const char *path, int version, uint32_t alignment) {
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "v%d open: %s", version, tport_last_error());
    if (s)
        return;
    CHECK(mf->container == TPORT_CONTAINER_GGUF && mf->version == (uint32_t)version, "v%d: container %d v%u",
          version, mf->container, mf->version);
    CHECK(!strcmp(mf->arch, "llama"), "v%d arch '%s'", version, mf->arch);
    CHECK(mf->alignment == alignment, "v%d alignment %u", version, mf->alignment);
    CHECK(mf->hp.n_ctx == 256 && mf->hp.n_embd == 4 && mf->hp.n_layer == 1 && mf->hp.n_head == 2,
          "v%d hparams %u %u %u %u", version, mf->hp.n_ctx, mf->hp.n_embd, mf->hp.n_layer, mf->hp.n_head);
    CHECK(mf->hp.n_head_kv == 2 && mf->hp.n_rot == 2, "v%d defaults n_head_kv %u n_rot %u", version,
          mf->hp.n_head_kv, mf->hp.n_rot);
    CHECK(mf->hp.rope_freq_base == 500000.0f && mf->hp.norm_eps == 1e-5f, "v%d rope base %g eps %g", version,
          (double)mf->hp.rope_freq_base, (double)mf->hp.norm_eps);
    const tport_kv *k;
    CHECK((k = kv(mf, "test.u8")) && k->type == TPORT_KV_U8 && k->v.u == 200, "u8");
    CHECK((k = kv(mf, "test.i8")) && k->type == TPORT_KV_I8 && k->v.i == -128, "i8");
    CHECK((k = kv(mf, "test.u16")) && k->v.u == 65000, "u16");
    CHECK((k = kv(mf, "test.i16")) && k->v.i == -2, "i16");
    CHECK((k = kv(mf, "test.i32")) && k->v.i == -123456, "i32");
    CHECK((k = kv(mf, "test.bool")) && k->type == TPORT_KV_BOOL && k->v.b, "bool");
    k = kv(mf, "test.nested");
    CHECK(k && k->type == TPORT_KV_ARRAY && k->elem_type == TPORT_KV_ARRAY && k->n_elems == 2, "nested array");
    if (k && k->elem_type == TPORT_KV_ARRAY && k->n_elems == 2) {
        const tport_kv *sub = k->v.arr;
        CHECK(sub[0].n_elems == 2 && ((int32_t *)sub[0].v.arr)[1] == -8, "nested[0]");
        CHECK(sub[1].n_elems == 1 && ((int32_t *)sub[1].v.arr)[0] == 9, "nested[1]");
    }
    CHECK((k = kv(mf, "general.architecture")) && !strcmp(k->v.s, "llama"), "v1 NUL stripped from strings");
    if (version >= 2) {
        CHECK((k = kv(mf, "test.u64")) && k->v.u == 0x123456789abcdefULL, "u64");
        CHECK((k = kv(mf, "test.i64")) && k->v.i == -5, "i64");
        CHECK((k = kv(mf, "test.f64")) && k->v.f == 3.25, "f64");
    }
    CHECK(mf->vocab.n_tokens == 3 && !strcmp(mf->vocab.tokens[2], "hello") && mf->vocab.token_len[2] == 5,
          "v%d vocab", version);
    CHECK(mf->vocab.scores && mf->vocab.scores[2] == -2.5f, "scores");
    CHECK(mf->vocab.bos == 1 && mf->vocab.eos == -1, "bos %d eos %d", mf->vocab.bos, mf->vocab.eos);
    CHECK(mf->hp.n_vocab == 3, "n_vocab from vocab: %u", mf->hp.n_vocab);
    CHECK(mf->n_tensors == 2, "tensors %d", mf->n_tensors);
    const tport_mf_tensor *t0 = tport_model_file_find(mf, "token_embd.weight");
    const tport_mf_tensor *t1 = tport_model_file_find(mf, "output_norm.weight");
    CHECK(t0 && t0->type == TPORT_TYPE_F32 && t0->n_dims == 2 && t0->ne[0] == 4 && t0->ne[1] == 2 &&
              t0->ne[2] == 1 && t0->nbytes == 32,
          "t0");
    CHECK(t0 && !memcmp(t0->data, t0_data, sizeof t0_data), "t0 data");
    CHECK(t0 && t0->offset % alignment == 0, "t0 offset %llu aligned", t0 ? (unsigned long long)t0->offset : 0);
    CHECK(t1 && t1->type == TPORT_TYPE_F16 && t1->nbytes == 8 && !memcmp(t1->data, t1_data, 8), "t1");
    CHECK(t1 && t1->offset % alignment == 0, "t1 aligned");
    tport_model_file_close(mf);
}

static void test_read_versions(void) {
    for (int version = 1; version <= 3; version++) {
        uint32_t aligns[2] = {32, 64};
        for (int a = 0; a < 2; a++) {
            gguf_b g;
            char path[256];
            build(&g, version, aligns[a]);
            bb_save(&g.b, path);
            check_file(path, version, aligns[a]);
            unlink(path);
            bb_free(&g.b);
        }
    }
}

/* Only the version byte-swapped, the rest little-endian: read as a
 * big-endian file, it fails, and the message says it was read so. */
static void test_big_endian_rejected(void) {
    gguf_b g;
    char path[256];
    build(&g, 3, 32);
    uint8_t be_version[4] = {0, 0, 0, 3};
    memcpy(g.b.p + 4, be_version, 4);
    bb_save(&g.b, path);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "big-endian"), "big-endian: %s",
          tport_last_error());
    CHECK(mf == NULL, "no model file on error");
    unlink(path);
    bb_free(&g.b);
}

static tport_status fill_ramp(void *user, int tensor, void *dst, uint64_t nbytes) {
    (void)user;
    (void)tensor;
    float *f = dst;
    for (uint64_t i = 0; i < nbytes / 4; i++)
        f[i] = (float)i * 0.5f;
    return TPORT_STATUS_OK;
}

static tport_status fill_fail(void *user, int tensor, void *dst, uint64_t nbytes) {
    (void)user, (void)tensor, (void)dst, (void)nbytes;
    return tport_error(TPORT_STATUS_ERROR, "fill failed on purpose");
}

static void test_writer_round_trip(uint32_t alignment) {
    tport_gguf_writer *w = tport_gguf_writer_new();
    CHECK(w != NULL, "writer");
    if (!w)
        return;
    unsigned long long rng = 42;
    float f32[64];
    uint16_t f16[32];
    uint8_t q8[2 * 34];
    for (int i = 0; i < 64; i++)
        f32[i] = test_rng_uniform(&rng);
    for (int i = 0; i < 32; i++)
        f16[i] = (uint16_t)test_rng_next(&rng);
    for (size_t i = 0; i < sizeof q8; i++)
        q8[i] = (uint8_t)test_rng_next(&rng);
    const char *strs[3] = {"a", "", "long string \xe2\x96\x81 with utf-8"};
    int32_t i32s[4] = {1, -2, 3, -4};
    bool bools[3] = {true, false, true};
    double f64s[2] = {1.5, -0.125};
    tport_kv inner[2] = {{.type = TPORT_KV_ARRAY, .elem_type = TPORT_KV_I32, .n_elems = 4, .v.arr = i32s},
                         {.type = TPORT_KV_ARRAY, .elem_type = TPORT_KV_STRING, .n_elems = 3, .v.arr = strs}};
    tport_kv nested = {.type = TPORT_KV_ARRAY, .elem_type = TPORT_KV_ARRAY, .n_elems = 2, .v.arr = inner};
    CHECK(!tport_gguf_set_str(w, "general.architecture", "llama"), "set str");
    CHECK(!tport_gguf_set_u32(w, "llama.block_count", 3), "set u32");
    CHECK(!tport_gguf_set_u32(w, "llama.block_count", 4), "replace u32");
    CHECK(!tport_gguf_set_i32(w, "t.i32", -7), "i32");
    CHECK(!tport_gguf_set_u64(w, "t.u64", 1ULL << 40), "u64");
    CHECK(!tport_gguf_set_f32(w, "t.f32", 0.1f), "f32");
    CHECK(!tport_gguf_set_bool(w, "t.bool", true), "bool");
    tport_kv k8 = {.type = TPORT_KV_I8, .v.i = -3}, k16 = {.type = TPORT_KV_U16, .v.u = 40000},
             kf64 = {.type = TPORT_KV_F64, .v.f = 2.0 / 3.0};
    CHECK(!tport_gguf_set_kv(w, "t.i8", &k8) && !tport_gguf_set_kv(w, "t.u16", &k16) &&
              !tport_gguf_set_kv(w, "t.f64", &kf64),
          "kv");
    CHECK(!tport_gguf_set_array(w, "t.strs", TPORT_KV_STRING, strs, 3), "str array");
    CHECK(!tport_gguf_set_array(w, "t.bools", TPORT_KV_BOOL, bools, 3), "bool array");
    CHECK(!tport_gguf_set_array(w, "t.f64s", TPORT_KV_F64, f64s, 2), "f64 array");
    CHECK(!tport_gguf_set_array(w, "t.empty", TPORT_KV_U8, NULL, 0), "empty array");
    CHECK(!tport_gguf_set_kv(w, "t.nested", &nested), "nested");
    CHECK(!tport_gguf_set_alignment(w, alignment), "alignment");
    tport_gguf_set_str(w, "t.removed", "x");
    tport_gguf_remove_kv(w, "t.removed");
    int64_t ne_a[2] = {32, 2}, ne_b[1] = {32}, ne_c[2] = {32, 2}, ne_d[3] = {4, 2, 2};
    CHECK(!tport_gguf_add_tensor(w, "a", TPORT_TYPE_F32, 2, ne_a, f32, sizeof f32), "add a");
    CHECK(!tport_gguf_add_tensor(w, "b", TPORT_TYPE_F16, 1, ne_b, f16, sizeof f16), "add b");
    CHECK(!tport_gguf_add_tensor(w, "c", TPORT_TYPE_Q8_0, 2, ne_c, q8, sizeof q8), "add c");
    CHECK(!tport_gguf_add_tensor_fill(w, "d", TPORT_TYPE_F32, 3, ne_d, fill_ramp, NULL), "add d");
    /* refused: wrong size, duplicate name, historical layout, bad row length */
    CHECK(tport_gguf_add_tensor(w, "e", TPORT_TYPE_F32, 2, ne_a, f32, 12) == TPORT_STATUS_INVALID_ARGUMENT,
          "size mismatch refused");
    CHECK(tport_gguf_add_tensor(w, "a", TPORT_TYPE_F32, 2, ne_a, f32, sizeof f32) != TPORT_STATUS_OK,
          "duplicate refused");
    CHECK(tport_gguf_add_tensor(w, "h", TPORT_TYPE_Q4_0_QNT0, 1, ne_b, q8, 20) != TPORT_STATUS_OK,
          "historical type refused");
    int64_t ne_bad[1] = {33};
    CHECK(tport_gguf_add_tensor(w, "r", TPORT_TYPE_Q8_0, 1, ne_bad, q8, 34) != TPORT_STATUS_OK,
          "row length refused");

    char dir[256], path[300];
    snprintf(dir, sizeof dir, "%s/tport-gguf-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/out.gguf", dir);
    tport_status s = tport_gguf_write(w, path);
    CHECK(s == TPORT_STATUS_OK, "write: %s", tport_last_error());

    tport_model_file *mf = NULL;
    s = tport_model_file_open(path, &mf);
    CHECK(s == TPORT_STATUS_OK, "read back: %s", tport_last_error());
    if (!s) {
        const tport_kv *k;
        CHECK(mf->version == 3 && mf->alignment == alignment, "v%u alignment %u", mf->version, mf->alignment);
        CHECK(mf->n_kv == tport_gguf_n_kv(w), "kv count %d vs %d", mf->n_kv, tport_gguf_n_kv(w));
        CHECK(mf->hp.n_layer == 4, "replaced value");
        CHECK(!tport_model_file_kv(mf, "t.removed"), "removed key");
        CHECK((k = tport_model_file_kv(mf, "t.i32")) && k->type == TPORT_KV_I32 && k->v.i == -7, "i32");
        CHECK((k = tport_model_file_kv(mf, "t.u64")) && k->type == TPORT_KV_U64 && k->v.u == 1ULL << 40, "u64");
        CHECK((k = tport_model_file_kv(mf, "t.f32")) && (float)k->v.f == 0.1f, "f32");
        CHECK((k = tport_model_file_kv(mf, "t.bool")) && k->v.b, "bool");
        CHECK((k = tport_model_file_kv(mf, "t.i8")) && k->type == TPORT_KV_I8 && k->v.i == -3, "i8");
        CHECK((k = tport_model_file_kv(mf, "t.u16")) && k->v.u == 40000, "u16");
        CHECK((k = tport_model_file_kv(mf, "t.f64")) && k->v.f == 2.0 / 3.0, "f64");
        k = tport_model_file_kv(mf, "t.strs");
        CHECK(k && k->n_elems == 3 && !strcmp(((char **)k->v.arr)[2], strs[2]) && !((char **)k->v.arr)[1][0],
              "string array");
        k = tport_model_file_kv(mf, "t.bools");
        CHECK(k && k->n_elems == 3 && ((bool *)k->v.arr)[0] && !((bool *)k->v.arr)[1], "bool array");
        k = tport_model_file_kv(mf, "t.f64s");
        CHECK(k && k->n_elems == 2 && ((double *)k->v.arr)[1] == -0.125, "f64 array");
        k = tport_model_file_kv(mf, "t.empty");
        CHECK(k && k->n_elems == 0 && k->elem_type == TPORT_KV_U8, "empty array");
        k = tport_model_file_kv(mf, "t.nested");
        CHECK(k && k->n_elems == 2 && ((tport_kv *)k->v.arr)[0].n_elems == 4 &&
                  ((int32_t *)((tport_kv *)k->v.arr)[0].v.arr)[3] == -4 &&
                  !strcmp(((char **)((tport_kv *)k->v.arr)[1].v.arr)[0], "a"),
              "nested array");
        const tport_mf_tensor *t;
        CHECK((t = tport_model_file_find(mf, "a")) && t->nbytes == sizeof f32 && !memcmp(t->data, f32, sizeof f32),
              "a");
        CHECK((t = tport_model_file_find(mf, "b")) && t->type == TPORT_TYPE_F16 && !memcmp(t->data, f16, sizeof f16),
              "b");
        CHECK((t = tport_model_file_find(mf, "c")) && t->type == TPORT_TYPE_Q8_0 && !memcmp(t->data, q8, sizeof q8),
              "c");
        t = tport_model_file_find(mf, "d");
        CHECK(t && t->n_dims == 3 && t->ne[2] == 2 && ((const float *)t->data)[15] == 7.5f, "d filled");
        for (int i = 0; i < mf->n_tensors; i++)
            CHECK((mf->tensors[i].offset - mf->data_offset) % alignment == 0 && mf->data_offset % alignment == 0,
                  "tensor %d aligned", i);
        tport_model_file_close(mf);
    }
    /* a failing fill leaves neither the output nor a temp file behind */
    char path2[300];
    snprintf(path2, sizeof path2, "%s/fail.gguf", dir);
    CHECK(!tport_gguf_add_tensor_fill(w, "z", TPORT_TYPE_F32, 1, ne_b, fill_fail, NULL), "add z");
    CHECK(tport_gguf_write(w, path2) == TPORT_STATUS_ERROR, "fill failure propagates");
    CHECK(access(path2, F_OK) != 0, "no output after failure");
    unlink(path);
    CHECK(rmdir(dir) == 0, "only the output was left in the folder (temp file removed)");
    CHECK(tport_gguf_write(w, "/nonexistent-dir/x.gguf") == TPORT_STATUS_IO, "unwritable path: IO error");
    tport_gguf_writer_free(w);
}

int main(void) {
    test_read_versions();
    test_big_endian_rejected();
    test_writer_round_trip(32);
    test_writer_round_trip(128);
    return test_finish("test_formats_gguf");
}
