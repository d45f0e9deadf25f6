/* Big-endian GGUF v3 (formats.md 2.4): files byte-swapped by the test from
 * little-endian ones read back with the same metadata, tensors and values;
 * `tport info`, `tport convert` and `tport run` on a big-endian copy of the
 * real tiny llama; truncated and corrupted big-endian files give errors. */
#include <sys/wait.h>

#include "formats/model_file.h"
#include "gguf_big_endian.h"
#include "sample_files.h"
#include "../test_util.h"

#ifndef TPORT_CLI
#error "TPORT_CLI must name the tport executable"
#endif

static size_t kv_elem_size(tport_kv_type t) {
    switch (t) {
    case TPORT_KV_U8: case TPORT_KV_I8: return 1;
    case TPORT_KV_U16: case TPORT_KV_I16: return 2;
    case TPORT_KV_U32: case TPORT_KV_I32: case TPORT_KV_F32: return 4;
    case TPORT_KV_U64: case TPORT_KV_I64: case TPORT_KV_F64: return 8;
    default: return 0;
    }
}

static bool arrays_equal(const tport_kv *a, const tport_kv *b) {
    if (a->elem_type != b->elem_type || a->n_elems != b->n_elems)
        return false;
    for (uint64_t i = 0; i < a->n_elems; i++) {
        if (a->elem_type == TPORT_KV_STRING) {
            if (strcmp(((char **)a->v.arr)[i], ((char **)b->v.arr)[i]))
                return false;
        } else if (a->elem_type == TPORT_KV_ARRAY) {
            if (!arrays_equal(&((tport_kv *)a->v.arr)[i], &((tport_kv *)b->v.arr)[i]))
                return false;
        } else if (a->elem_type == TPORT_KV_BOOL) {
            if (((bool *)a->v.arr)[i] != ((bool *)b->v.arr)[i])
                return false;
        }
    }
    size_t es = kv_elem_size(a->elem_type);
    return !es || !a->n_elems || !memcmp(a->v.arr, b->v.arr, (size_t)a->n_elems * es);
}

static bool kv_equal(const tport_kv *a, const tport_kv *b) {
    if (strcmp(a->key, b->key) || a->type != b->type)
        return false;
    switch (a->type) {
    case TPORT_KV_STRING: return !strcmp(a->v.s, b->v.s);
    case TPORT_KV_ARRAY: return arrays_equal(a, b);
    case TPORT_KV_BOOL: return a->v.b == b->v.b;
    case TPORT_KV_F32: case TPORT_KV_F64: return a->v.f == b->v.f;
    default: return a->v.u == b->v.u;
    }
}

/* Everything a reader fills must match the little-endian original. */
static void compare(const char *what, const tport_model_file *le, const tport_model_file *be) {
    CHECK(be->big_endian && !le->big_endian, "%s: big_endian flag", what);
    CHECK(strstr(be->notes, "big-endian") != NULL, "%s: notes say big-endian: '%s'", what, be->notes);
    CHECK(be->container == TPORT_CONTAINER_GGUF && be->version == 3, "%s: gguf v3", what);
    CHECK(!strcmp(le->arch, be->arch) && !memcmp(&le->hp, &be->hp, sizeof le->hp), "%s: arch and hparams", what);
    CHECK(le->vocab.n_tokens == be->vocab.n_tokens, "%s: vocabulary size", what);
    for (int i = 0; i < le->vocab.n_tokens && i < be->vocab.n_tokens; i++)
        if (strcmp(le->vocab.tokens[i], be->vocab.tokens[i]) ||
            (le->vocab.scores && le->vocab.scores[i] != be->vocab.scores[i])) {
            CHECK(0, "%s: token %d differs", what, i);
            break;
        }
    CHECK(le->n_kv == be->n_kv, "%s: %d vs %d kvs", what, le->n_kv, be->n_kv);
    for (int i = 0; i < le->n_kv && i < be->n_kv; i++)
        CHECK(kv_equal(&le->kv[i], &be->kv[i]), "%s: kv '%s' equal", what, le->kv[i].key);
    CHECK(le->n_tensors == be->n_tensors, "%s: tensor count", what);
    for (int i = 0; i < le->n_tensors && i < be->n_tensors; i++) {
        const tport_mf_tensor *a = &le->tensors[i], *b = &be->tensors[i];
        CHECK(!strcmp(a->name, b->name) && a->type == b->type && a->n_dims == b->n_dims &&
                  !memcmp(a->ne, b->ne, sizeof a->ne) && a->nbytes == b->nbytes && a->offset == b->offset,
              "%s: tensor '%s' header", what, a->name);
        CHECK(a->nbytes == b->nbytes && !memcmp(a->data, b->data, (size_t)a->nbytes), "%s: tensor '%s' data",
              what, a->name);
    }
}

static tport_model_file *open_mem(const bb *b, const char *name) {
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open_memory(b->p, b->n, name, &mf);
    CHECK(s == TPORT_STATUS_OK, "%s opens: %s", name, s ? tport_last_error() : "");
    return s ? NULL : mf;
}

static bb copy_of(const bb *b) {
    bb c = {0};
    bb_raw(&c, b->p, b->n);
    return c;
}

static void test_sample(void) {
    bb le = {0};
    sample_gguf(&le, 3);
    bb be = copy_of(&le);
    CHECK(gguf_to_big_endian(be.p, be.n), "sample swaps");
    CHECK(be.p[4] == 0 && be.p[7] == 3, "version stored big-endian");
    tport_model_file *a = open_mem(&le, "sample-le"), *b = open_mem(&be, "sample-be");
    if (a && b) {
        compare("sample", a, b);
        const tport_mf_tensor *t = tport_model_file_find(b, "token_embd.weight");
        float f[16];
        if (t && t->nbytes == sizeof f) {
            memcpy(f, t->data, sizeof f);
            CHECK(f[0] == 0.0f && f[5] == 5.0f && f[15] == 15.0f, "f32 values read back: %g %g %g", f[0], f[5], f[15]);
        } else {
            CHECK(0, "token_embd.weight present");
        }
    }
    /* Newer gguf-py marks big-endian files with the magic "FUGG". */
    memcpy(be.p, "FUGG", 4);
    tport_model_file *c = open_mem(&be, "sample-fugg");
    if (a && c)
        compare("sample FUGG", a, c);
    tport_model_file_close(a), tport_model_file_close(b), tport_model_file_close(c);
    bb_free(&le), bb_free(&be);
}

/* One tensor of each type whose big-endian layout is known, with bytes
 * that differ everywhere (so a swapped or unswapped byte shows). */
static void build_typed(bb *b, const uint32_t *types, const uint64_t *ne0, const uint64_t *bytes, int n) {
    bb_raw(b, "GGUF", 4), bb_u32(b, 3), bb_u64(b, (uint64_t)n), bb_u64(b, 2);
    sg_str(b, 3, "general.architecture"), bb_u32(b, 8), sg_str(b, 3, "test");
    sg_str(b, 3, "test.u64s"), bb_u32(b, 9), bb_u32(b, 10), bb_u64(b, 2), bb_u64(b, 0x0102030405060708ull),
        bb_u64(b, 42);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        sg_str(b, 3, name), bb_u32(b, 1), bb_u64(b, ne0[i]), bb_u32(b, types[i]), bb_u64(b, off);
        off += (bytes[i] + 31) / 32 * 32;
    }
    bb_pad_to(b, 32);
    for (int i = 0; i < n; i++) {
        for (uint64_t k = 0; k < bytes[i]; k++)
            bb_u8(b, (uint8_t)(k * 37 + 11 + (uint64_t)i));
        bb_pad_to(b, 32);
    }
}

static void test_types(void) {
    /* f32, f16, bf16, i8, i16, i32, q4_0, q8_0, q4_K, q6_K */
    const uint32_t types[] = {0, 1, 30, 24, 25, 26, 2, 8, 12, 14};
    const uint64_t ne0[] = {8, 8, 8, 8, 8, 8, 64, 64, 256, 512};
    const uint64_t bytes[] = {32, 16, 16, 8, 16, 32, 36, 68, 144, 420};
    bb le = {0};
    build_typed(&le, types, ne0, bytes, 10);
    bb be = copy_of(&le);
    CHECK(gguf_to_big_endian(be.p, be.n), "typed file swaps");
    CHECK(memcmp(le.p, be.p, le.n) != 0, "swapping changed bytes");
    tport_model_file *a = open_mem(&le, "types-le"), *b = open_mem(&be, "types-be");
    if (a && b)
        compare("types", a, b);
    tport_model_file_close(a), tport_model_file_close(b);
    bb_free(&le), bb_free(&be);

    /* q5_0: no known big-endian layout -> refused, naming the type. */
    const uint32_t t5[] = {6};
    const uint64_t n5[] = {32}, b5[] = {22};
    build_typed(&le, t5, n5, b5, 1);
    CHECK(gguf_to_big_endian(le.p, le.n), "q5_0 file swaps");
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open_memory(le.p, le.n, "q5_0-be", &mf);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && strstr(tport_last_error(), "not known") &&
              strstr(tport_last_error(), "q5_0"),
          "q5_0 refused: %s", s ? tport_last_error() : "opened");
    tport_model_file_close(mf);
    bb_free(&le);
}

/* Every truncation and every single-byte corruption: an error or a valid
 * read, never a crash (the sanitizer build checks the "never"). */
static void test_hostile(void) {
    bb le = {0};
    sample_gguf(&le, 3);
    CHECK(gguf_to_big_endian(le.p, le.n), "sample swaps");
    int bad_ok = 0;
    for (size_t n = 0; n < le.n; n++) {
        tport_model_file *mf = NULL;
        if (tport_model_file_open_memory(le.p, n, "cut-be", &mf) == TPORT_STATUS_OK)
            bad_ok++;
        tport_model_file_close(mf);
    }
    CHECK(bad_ok == 0, "%d truncations opened", bad_ok);
    int errors = 0;
    for (size_t i = 0; i < le.n; i++) {
        bb c = copy_of(&le);
        c.p[i] ^= 0xA5;
        tport_model_file *mf = NULL;
        tport_status s = tport_model_file_open_memory(c.p, c.n, "flip-be", &mf);
        errors += s != TPORT_STATUS_OK;
        CHECK(s == TPORT_STATUS_OK || s == TPORT_STATUS_BAD_FORMAT, "flip at %zu: status %d", i, (int)s);
        tport_model_file_close(mf);
        bb_free(&c);
    }
    CHECK(errors > 0, "corruptions detected (%d of %zu)", errors, le.n);
    bb_free(&le);
}

/* Runs a shell command; stdout (and stderr unless quiet) into out. */
static int run_q(const char *cmd, char *out, size_t cap, bool quiet) {
    char full[2048];
    snprintf(full, sizeof full, "%s %s", cmd, quiet ? "2>/dev/null" : "2>&1");
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static int run(const char *cmd, char *out, size_t cap) { return run_q(cmd, out, cap, false); }

static bool read_all(const char *path, bb *b) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    char buf[65536];
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        bb_raw(b, buf, k);
    fclose(f);
    return true;
}

static void test_real_file(void) {
    char buf[512];
    const char *path = test_shared_path("models/llama-2-tiny-random.gguf", buf, sizeof buf);
    if (!path) {
        printf("big-endian copy of the real model: skipped (llama-2-tiny-random.gguf absent)\n");
        return;
    }
    bb le = {0};
    CHECK(read_all(path, &le), "read %s", path);
    bb be = copy_of(&le);
    CHECK(gguf_to_big_endian(be.p, be.n), "real file swaps");
    tport_model_file *a = open_mem(&le, "real-le"), *b = open_mem(&be, "real-be");
    if (a && b)
        compare("real", a, b);

    char be_path[256] = "", out_path[300], cmd[1200];
    static char out[1 << 16], ids_le[4096], ids_be[4096];
    bb_save(&be, be_path);
    snprintf(out_path, sizeof out_path, "%s.le.gguf", be_path);
    snprintf(cmd, sizeof cmd, TPORT_CLI " info %s", be_path);
    CHECK(run(cmd, out, sizeof out) == 0 && strstr(out, "big-endian"), "tport info on the big-endian copy:\n%s", out);
    snprintf(cmd, sizeof cmd, TPORT_CLI " convert %s %s", be_path, out_path);
    CHECK(run(cmd, out, sizeof out) == 0, "tport convert: %s", out);
    tport_model_file *c = NULL;
    CHECK(tport_model_file_open(out_path, &c) == TPORT_STATUS_OK, "converted opens: %s", tport_last_error());
    if (a && c) {
        CHECK(!c->big_endian && c->n_tensors == a->n_tensors, "converted: little-endian, same tensor count");
        for (int i = 0; i < a->n_tensors && i < c->n_tensors; i++) {
            const tport_mf_tensor *t = tport_model_file_find(c, a->tensors[i].name);
            CHECK(t && t->type == a->tensors[i].type && t->nbytes == a->tensors[i].nbytes &&
                      !memcmp(t->data, a->tensors[i].data, (size_t)t->nbytes),
                  "converted tensor '%s' equals the original", a->tensors[i].name);
        }
    }
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s --prompt-ids 1,2,3 -n 8 --ids --temp 0", path);
    int r1 = run_q(cmd, ids_le, sizeof ids_le, true);
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m %s --prompt-ids 1,2,3 -n 8 --ids --temp 0", be_path);
    int r2 = run_q(cmd, ids_be, sizeof ids_be, true);
    CHECK(r1 == 0 && r2 == 0 && strchr(ids_le, ',') && !strcmp(ids_le, ids_be), "greedy ids equal:\n%s\nvs\n%s", ids_le, ids_be);
    tport_model_file_close(a), tport_model_file_close(b), tport_model_file_close(c);
    unlink(be_path), unlink(out_path);
    bb_free(&le), bb_free(&be);
}

int main(void) {
    test_sample();
    test_types();
    test_hostile();
    test_real_file();
    return test_finish("test_formats_big_endian");
}
