/* The restricted unpickler and the PyTorch zip reader on pickles built
 * here byte by byte (from the pickle opcode table; no Python needed):
 * a minimal state dict reads, strides are honoured, and hostile input is
 * refused with a message: globals that would run code, opcodes a state
 * dict never uses, deep nesting, opcode bombs, huge lengths, bad memo
 * indices, storages past the end of their record, views past the end of
 * their storage, missing and compressed records, every prefix of a valid
 * pickle. */
#include <time.h>
#include <zip.h>

#include "sample_files.h"
#include "formats/model_file.h"
#include "formats/pytorch_pickle.h"
#include "../test_util.h"

static char dir[256];

/* A zip archive like torch.save's: archive/data.pkl and archive/data/KEY. */
static void write_zip(const char *path, const bb *pickle, const char *key, const void *data, size_t n, bool deflate) {
    int err = 0;
    zip_t *z = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &err);
    CHECK(z != NULL, "zip_open %s: %d", path, err);
    if (!z)
        return;
    zip_source_t *s = zip_source_buffer(z, pickle->p, pickle->n, 0);
    zip_int64_t i = zip_file_add(z, "archive/data.pkl", s, ZIP_FL_OVERWRITE);
    zip_set_file_compression(z, (zip_uint64_t)i, deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    char name[64];
    snprintf(name, sizeof name, "archive/data/%s", key);
    s = zip_source_buffer(z, data, n, 0);
    i = zip_file_add(z, name, s, ZIP_FL_OVERWRITE);
    zip_set_file_compression(z, (zip_uint64_t)i, ZIP_CM_STORE, 0);
    CHECK(zip_close(z) == 0, "zip_close: %s", zip_strerror(z));
}

static tport_status open_zip(const bb *pickle, const char *key, const void *data, size_t n, bool deflate,
                             tport_model_file **mf) {
    char path[300];
    snprintf(path, sizeof path, "%s/t.pt", dir);
    write_zip(path, pickle, key, data, n, deflate);
    *mf = NULL;
    return tport_model_file_open(path, mf);
}

static void expect_refused(const char *what, tport_status s, tport_model_file *mf, const char *needle) {
    CHECK(s == TPORT_STATUS_BAD_FORMAT && !mf && strstr(tport_last_error(), needle), "%s: status %d, '%s'", what,
          s, tport_last_error());
    tport_model_file_close(mf);
}

static const float values[6] = {0, 1, 2, 3, 4, 5};

static void test_zip(void) {
    bb p = {0};
    tport_model_file *mf;
    const int size[2] = {3, 2}, stride[2] = {2, 1};
    sample_pickle_state_dict(&p, "w", "0", 6, 0, size, stride);
    tport_status s = open_zip(&p, "0", values, sizeof values, false, &mf);
    CHECK(s == TPORT_STATUS_OK && mf && mf->n_tensors == 1, "minimal state dict: %s", tport_last_error());
    if (mf) {
        const tport_mf_tensor *t = tport_model_file_find(mf, "w");
        CHECK(t && t->type == TPORT_TYPE_F32 && t->ne[0] == 2 && t->ne[1] == 3 && !memcmp(t->data, values, 24),
              "w: [3, 2] f32 with the storage's values");
    }
    tport_model_file_close(mf);
    bb_free(&p);

    /* a transposed view: size (2, 3), stride (1, 2) -> w[r][c] = storage[r + 2c] */
    const int tsize[2] = {2, 3}, tstride[2] = {1, 2};
    sample_pickle_state_dict(&p, "w", "0", 6, 0, tsize, tstride);
    s = open_zip(&p, "0", values, sizeof values, false, &mf);
    const tport_mf_tensor *t = mf ? tport_model_file_find(mf, "w") : NULL;
    CHECK(s == TPORT_STATUS_OK && t, "transposed view: %s", tport_last_error());
    if (t) {
        const float *v = t->data, want[6] = {0, 2, 4, 1, 3, 5};
        CHECK(t->ne[0] == 3 && t->ne[1] == 2 && !memcmp(v, want, sizeof want), "strides honoured");
    }
    tport_model_file_close(mf);
    bb_free(&p);

    /* a storage whose id claims more elements than its record holds */
    sample_pickle_state_dict(&p, "w", "0", 200, 0, size, stride);
    s = open_zip(&p, "0", values, sizeof values, false, &mf);
    expect_refused("storage past the end of its record", s, mf, "holds 24 bytes");
    bb_free(&p);
    /* a view past the end of its storage */
    sample_pickle_state_dict(&p, "w", "0", 6, 2, size, stride);
    s = open_zip(&p, "0", values, sizeof values, false, &mf);
    expect_refused("view past the storage", s, mf, "reaches element");
    bb_free(&p);
    /* an expanded view: 6 elements from a storage of 1 (stride 0) */
    {
        const int esize[2] = {3, 2}, estride[2] = {0, 0};
        sample_pickle_state_dict(&p, "w", "0", 1, 0, esize, estride);
        s = open_zip(&p, "0", values, 4, false, &mf);
        expect_refused("expanded view", s, mf, "more than its storage");
        bb_free(&p);
    }
    /* a storage that is not in the archive */
    sample_pickle_state_dict(&p, "w", "7", 6, 0, size, stride);
    s = open_zip(&p, "0", values, sizeof values, false, &mf);
    expect_refused("missing storage record", s, mf, "not in the archive");
    bb_free(&p);
    /* a compressed data.pkl (torch never writes one; a zip bomb could) */
    sample_pickle_state_dict(&p, "w", "0", 6, 0, size, stride);
    s = open_zip(&p, "0", values, sizeof values, true, &mf);
    expect_refused("compressed entry", s, mf, "compressed");
    bb_free(&p);
}

static bool unpickle(const bb *b, char *err, size_t cap) {
    pk_arena *a = NULL;
    pk_obj *o;
    size_t used;
    bool ok = pk_unpickle(b->p, b->n, &a, &o, &used, err, cap);
    pk_arena_free(a);
    return ok;
}

static void expect_pickle_error(const char *what, const bb *b, const char *needle) {
    char err[256] = "";
    clock_t t0 = clock();
    bool ok = unpickle(b, err, sizeof err);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    CHECK(!ok && strstr(err, "offset ") == err && strstr(err, needle), "%s: %s", what, ok ? "accepted" : err);
    CHECK(secs < 5, "%s: %.1f s", what, secs);
}

static void test_pickles(void) {
    bb b = {0};
    /* what Python's pickle would run */
    sp_op(&b, 0x80), sp_op(&b, 2), sp_global(&b, "os", "system"), sp_str(&b, "touch /tmp/x"), sp_op(&b, 0x85), sp_op(&b, 'R'),
        sp_op(&b, '.');
    expect_pickle_error("os.system", &b, "global 'os.system' is not allowed");
    bb_free(&b);
    sp_op(&b, 0x80), sp_op(&b, 4), sp_str(&b, "builtins"), sp_str(&b, "eval"), sp_op(&b, 0x93), sp_op(&b, '.');
    expect_pickle_error("STACK_GLOBAL builtins.eval", &b, "global 'builtins.eval' is not allowed");
    bb_free(&b);
    sp_op(&b, 0x80), sp_op(&b, 2), sp_op(&b, '('), bb_raw(&b, "i__main__\nEvil\n", 15), sp_op(&b, '.');
    expect_pickle_error("INST", &b, "opcode 0x69");
    bb_free(&b);
    /* a storage type called as a function */
    sp_op(&b, 0x80), sp_op(&b, 2), sp_global(&b, "torch", "FloatStorage"), sp_op(&b, ')'), sp_op(&b, 'R'), sp_op(&b, '.');
    expect_pickle_error("storage type called", &b, "storage type");
    bb_free(&b);
    /* deep nesting */
    for (int i = 0; i < 5000; i++)
        sp_op(&b, '(');
    sp_op(&b, '.');
    expect_pickle_error("5000 marks", &b, "nesting deeper");
    bb_free(&b);
    /* huge lengths */
    sp_op(&b, 'X'), bb_u32(&b, 0xffffffffu), bb_raw(&b, "abc", 3);
    expect_pickle_error("BINUNICODE of 4 GiB", &b, "4294967295 bytes");
    bb_free(&b);
    sp_op(&b, 0x8d), bb_u64(&b, 1ull << 62);
    expect_pickle_error("BINUNICODE8 of 2^62", &b, "bytes");
    bb_free(&b);
    sp_op(&b, 0x8a), sp_op(&b, 200);
    expect_pickle_error("LONG1 of 200 bytes", &b, "integer of 200 bytes");
    bb_free(&b);
    /* memo */
    sp_op(&b, 'h'), sp_op(&b, 3), sp_op(&b, '.');
    expect_pickle_error("BINGET of nothing", &b, "never stored");
    bb_free(&b);
    sp_op(&b, ']'), sp_op(&b, 'r'), bb_u32(&b, 0xfffffff0u), sp_op(&b, '.');
    expect_pickle_error("LONG_BINPUT 4e9", &b, "out of range");
    bb_free(&b);
    /* opcode bombs: a million empty lists, and a list appended to itself */
    for (int i = 0; i < 1000000; i++)
        sp_op(&b, ']');
    sp_op(&b, '.');
    expect_pickle_error("a million values", &b, "instead of one value");
    bb_free(&b);
    sp_op(&b, ']'), sp_op(&b, 'q'), sp_op(&b, 0);
    for (int i = 0; i < 300000; i++)
        sp_op(&b, 'h'), sp_op(&b, 0), sp_op(&b, 'a');
    sp_op(&b, '.');
    char err[256];
    clock_t t0 = clock();
    CHECK(unpickle(&b, err, sizeof err), "a self-referencing list is data: %s", err);
    CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 5, "self-referencing list in bounded time");
    bb_free(&b);
    /* stack underflow, no STOP */
    sp_op(&b, 'R'), sp_op(&b, '.');
    expect_pickle_error("REDUCE on nothing", &b, "empty stack");
    bb_free(&b);
    sp_op(&b, 0x80), sp_op(&b, 2), sp_op(&b, '}');
    expect_pickle_error("no STOP", &b, "without STOP");
    bb_free(&b);
    /* every prefix of a valid state dict pickle, and bit flips: errors, never a crash */
    const int size[2] = {3, 2}, stride[2] = {2, 1};
    sample_pickle_state_dict(&b, "w", "0", 6, 0, size, stride);
    CHECK(unpickle(&b, err, sizeof err), "the valid pickle: %s", err);
    int bad = 0;
    for (size_t n = 0; n < b.n; n++) {
        bb cut = {0};
        bb_raw(&cut, b.p, n);
        err[0] = '\0';
        if (unpickle(&cut, err, sizeof err) || strstr(err, "offset ") != err)
            bad++;
        bb_free(&cut);
    }
    CHECK(bad == 0, "%d prefixes of the valid pickle accepted or without an offset", bad);
    unsigned long long rng = 42;
    for (int t = 0; t < 3000; t++) {
        bb flip = {0};
        bb_raw(&flip, b.p, b.n);
        flip.p[test_rng_next(&rng) % flip.n] ^= (uint8_t)(1u << (test_rng_next(&rng) % 8));
        unpickle(&flip, err, sizeof err); /* either way; ASan/UBSan watch */
        bb_free(&flip);
    }
    bb_free(&b);
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/tport-pk-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    test_pickles();
    test_zip();
    char path[300];
    snprintf(path, sizeof path, "%s/t.pt", dir);
    unlink(path);
    rmdir(dir);
    return test_finish("test_formats_pickle_hostile");
}
