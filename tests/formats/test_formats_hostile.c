/* Hostile input: every prefix of small valid files, random bit flips, and
 * hand-made corruptions (huge counts, lengths and dimensions, offsets past
 * the end, overflow).  Each must give an error naming file and offset —
 * never a crash, a hang, a huge allocation or a read outside the file
 * (run under ASan in CI). */
#include "core/error.h"
#include "formats/model_file.h"
#include "gguf_big_endian.h"
#include "sample_files.h"
#include "../test_util.h"

static char tmp_path[256];
/* What the last successful open_bytes read: tensors a complete model
 * would also need, and where the last tensor's data ends (0: none). */
static int last_missing;
static uint64_t last_end;

/* Opens bytes from an exactly-sized heap copy (so ASan sees any read past
 * the end).  Returns the status; on success checks that every tensor lies
 * inside the file and closes it. */
static tport_status open_bytes(const uint8_t *p, size_t n) {
    uint8_t *copy = malloc(n ? n : 1);
    if (n)
        memcpy(copy, p, n);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open_memory(copy, n, tmp_path, &mf);
    if (s == TPORT_STATUS_OK) {
        last_missing = mf->n_missing;
        last_end = 0;
        for (int i = 0; i < mf->n_tensors; i++)
            if (mf->tensors[i].offset + mf->tensors[i].nbytes > last_end)
                last_end = mf->tensors[i].offset + mf->tensors[i].nbytes;
        for (int i = 0; i < mf->n_tensors; i++) {
            const tport_mf_tensor *t = &mf->tensors[i];
            if (t->data >= mf->map && (const uint8_t *)t->data < (const uint8_t *)mf->map + mf->map_size)
                CHECK(t->offset + t->nbytes <= mf->file_size, "tensor %s inside the file", t->name);
        }
        tport_model_file_close(mf);
    } else {
        CHECK(mf == NULL, "no model file on error");
    }
    free(copy);
    return s;
}

/* The same through a real file (mmap path). */
static tport_status open_file_bytes(const uint8_t *p, size_t n) {
    FILE *f = fopen(tmp_path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n)) {
        perror(tmp_path);
        exit(1);
    }
    fclose(f);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open(tmp_path, &mf);
    tport_model_file_close(mf);
    return s;
}

static bool message_ok(void) {
    const char *e = tport_last_error();
    return strstr(e, tmp_path) == e && strstr(e, ": offset ") != NULL;
}

/* Every prefix is an error naming file and offset, except, in the
 * containers whose tensor records run to the end of the file uncounted
 * (GGML, GGMF, GGJT), a prefix that ends exactly at a record boundary:
 * that is a valid file with a partial tensor set, read with n_missing set.
 * n_records says how many such prefixes there are (0 for counted
 * containers). */
static void every_prefix(const char *what, const bb *b, int n_records) {
    CHECK(open_bytes(b->p, b->n) == TPORT_STATUS_OK, "%s: the full file reads: %s", what, tport_last_error());
    CHECK(open_file_bytes(b->p, b->n) == TPORT_STATUS_OK, "%s: as a file: %s", what, tport_last_error());
    CHECK(open_file_bytes(b->p, b->n - 1) == TPORT_STATUS_BAD_FORMAT && message_ok(), "%s: file minus a byte: %s",
          what, tport_last_error());
    int bad = 0, partial = 0;
    for (size_t n = 0; n < b->n; n++) {
        tport_status s = open_bytes(b->p, n);
        if (s == TPORT_STATUS_OK && n_records && last_missing > 0 && (last_end == n || last_end == 0)) {
            partial++;
            continue;
        }
        if (s != TPORT_STATUS_BAD_FORMAT || !message_ok()) {
            if (bad++ < 5)
                CHECK(0, "%s: prefix of %zu bytes: status %d, '%s'", what, n, s, tport_last_error());
        }
    }
    CHECK(bad == 0, "%s: %d prefixes misread", what, bad);
    CHECK(partial == n_records, "%s: %d prefixes read as partial tensor sets, %d record boundaries", what, partial,
          n_records);
}

static void bit_flips(const char *what, const bb *b, int trials) {
    unsigned long long rng = 0x9e3779b97f4a7c15ULL ^ b->n;
    uint8_t *copy = malloc(b->n);
    int errors = 0, ok = 0;
    for (int t = 0; t < trials; t++) {
        memcpy(copy, b->p, b->n);
        int flips = 1 + (int)(test_rng_next(&rng) % 3);
        for (int k = 0; k < flips; k++) {
            size_t pos = (size_t)(test_rng_next(&rng) % b->n);
            copy[pos] ^= (uint8_t)(1u << (test_rng_next(&rng) % 8));
        }
        tport_status s = open_bytes(copy, b->n);
        if (s == TPORT_STATUS_OK)
            ok++;
        else if (s == TPORT_STATUS_BAD_FORMAT && message_ok())
            errors++;
        else
            CHECK(0, "%s: flip trial %d: status %d '%s'", what, t, s, tport_last_error());
    }
    printf("%s: %d bit-flip variants: %d still valid, %d rejected\n", what, trials, ok, errors);
    free(copy);
}

/* A GGUF v3 file with custom content after the header. */
static void gguf_head(bb *b, uint64_t n_tensors, uint64_t n_kv) {
    memset(b, 0, sizeof *b);
    bb_raw(b, "GGUF", 4);
    bb_u32(b, 3);
    bb_u64(b, n_tensors);
    bb_u64(b, n_kv);
}

static void expect_bad(const char *what, const bb *b, const char *needle) {
    tport_status s = open_bytes(b->p, b->n);
    CHECK(s == TPORT_STATUS_BAD_FORMAT && message_ok() && (!needle || strstr(tport_last_error(), needle)),
          "%s: status %d, '%s'", what, s, tport_last_error());
}

/* A type id this build does not know (a newer ggml's; ids from 200 are
 * tensorport's private revisions, never a GGUF's): the file opens and
 * lists the tensor with its raw id, to be shown but not run. */
static void expect_unknown_type(const char *what, const bb *b, uint32_t raw) {
    uint8_t *copy = malloc(b->n);
    memcpy(copy, b->p, b->n);
    tport_model_file *mf = NULL;
    tport_status s = tport_model_file_open_memory(copy, b->n, tmp_path, &mf);
    CHECK(s == TPORT_STATUS_OK && mf->n_tensors == 1 && mf->tensors[0].unknown_type == raw &&
              mf->tensors[0].type == TPORT_MF_TYPE_UNKNOWN && tport_model_file_unknown_tensor(mf) == &mf->tensors[0],
          "%s: status %d, '%s'", what, s, tport_last_error());
    if (s == TPORT_STATUS_OK)
        tport_model_file_close(mf);
    free(copy);
}

static void tensor_info(bb *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type, uint64_t off) {
    sg_str(b, 3, name);
    bb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++)
        bb_u64(b, ne[i]);
    bb_u32(b, type);
    bb_u64(b, off);
}

static void gguf_corruptions(void) {
    bb b;
    uint64_t ne2[2] = {8, 2};
    gguf_head(&b, UINT64_MAX, 0), expect_bad("huge tensor count", &b, "tensor count"), bb_free(&b);
    gguf_head(&b, 0, 1ULL << 62), expect_bad("huge kv count", &b, "metadata count"), bb_free(&b);
    gguf_head(&b, 0, 1), bb_u64(&b, UINT64_MAX), bb_zeros(&b, 16), expect_bad("huge key length", &b, "length"),
        bb_free(&b);
    gguf_head(&b, 0, 1), sg_str(&b, 3, "k"), bb_u32(&b, 9), bb_u32(&b, 4), bb_u64(&b, 1ULL << 61), bb_zeros(&b, 64);
    expect_bad("huge array", &b, "array"), bb_free(&b);
    gguf_head(&b, 0, 1), sg_str(&b, 3, "k"), bb_u32(&b, 9), bb_u32(&b, 8), bb_u64(&b, 1ULL << 40), bb_zeros(&b, 64);
    expect_bad("huge string array", &b, "array"), bb_free(&b);
    gguf_head(&b, 0, 1), sg_str(&b, 3, "k"), bb_u32(&b, 13), bb_zeros(&b, 8);
    expect_bad("unknown value type", &b, "type"), bb_free(&b);
    gguf_head(&b, 0, 1), sg_str(&b, 3, "k"), bb_u32(&b, 9);
    for (int i = 0; i < 200; i++)
        bb_u32(&b, 9), bb_u64(&b, 1); /* arrays nested 200 deep */
    bb_zeros(&b, 64);
    expect_bad("deep nesting", &b, "nested"), bb_free(&b);
    gguf_head(&b, 0, 2), sg_str(&b, 3, "k"), bb_u32(&b, 4), bb_u32(&b, 1), sg_str(&b, 3, "k"), bb_u32(&b, 4),
        bb_u32(&b, 2);
    expect_bad("duplicate key", &b, "twice"), bb_free(&b);
    gguf_head(&b, 0, 1), sg_str(&b, 3, "general.alignment"), bb_u32(&b, 4), bb_u32(&b, 48);
    expect_bad("alignment not a power of two", &b, "alignment"), bb_free(&b);
    gguf_head(&b, 0, 1), sg_str(&b, 3, "general.alignment"), bb_u32(&b, 4), bb_u32(&b, 0);
    expect_bad("alignment zero", &b, "alignment"), bb_free(&b);
    uint64_t ne5[5] = {1, 1, 1, 1, 1};
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 5, ne5, 0, 0), bb_zeros(&b, 64);
    expect_bad("5 dimensions", &b, "dimensions"), bb_free(&b);
    uint64_t big[2] = {1ULL << 62, 1ULL << 62};
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 2, big, 0, 0), bb_zeros(&b, 64);
    expect_bad("element count overflow", &b, "overflow"), bb_free(&b);
    uint64_t neg[1] = {UINT64_MAX};
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 1, neg, 0, 0), bb_zeros(&b, 64);
    expect_bad("dimension > INT64_MAX", &b, "too large"), bb_free(&b);
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 2, ne2, 0, 1ULL << 40), bb_pad_to(&b, 32), bb_zeros(&b, 64);
    expect_bad("offset past the end", &b, "past the end"), bb_free(&b);
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 2, ne2, 0, UINT64_MAX - 31), bb_pad_to(&b, 32), bb_zeros(&b, 64);
    expect_bad("offset overflow", &b, NULL), bb_free(&b);
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 2, ne2, 0, 4), bb_pad_to(&b, 32), bb_zeros(&b, 96);
    expect_bad("unaligned offset", &b, "alignment"), bb_free(&b);
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 2, ne2, 77, 0), bb_pad_to(&b, 32), bb_zeros(&b, 96);
    expect_unknown_type("unknown type", &b, 77), bb_free(&b);
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 2, ne2, 200, 0), bb_pad_to(&b, 32), bb_zeros(&b, 96);
    expect_unknown_type("private historical type id", &b, 200), bb_free(&b);
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 2, ne2, 77, 1ULL << 40), bb_pad_to(&b, 32), bb_zeros(&b, 96);
    expect_bad("unknown type, offset past the end", &b, "past the end"), bb_free(&b);
    uint64_t ne_q[1] = {33};
    gguf_head(&b, 1, 0), tensor_info(&b, "t", 1, ne_q, 8, 0), bb_pad_to(&b, 32), bb_zeros(&b, 96);
    expect_bad("row not a multiple of the block", &b, "block"), bb_free(&b);
    gguf_head(&b, 2, 0), tensor_info(&b, "t", 2, ne2, 0, 0), tensor_info(&b, "t", 2, ne2, 0, 64), bb_pad_to(&b, 32),
        bb_zeros(&b, 128);
    expect_bad("duplicate tensor", &b, "two tensors"), bb_free(&b);
    gguf_head(&b, 0, 1), sg_str(&b, 3, "tokenizer.ggml.tokens"), bb_u32(&b, 4), bb_u32(&b, 1);
    expect_bad("tokens not an array", &b, "tokens"), bb_free(&b);
    gguf_head(&b, 0, 0);
    b.p[4] = 9;
    expect_bad("unknown version", &b, "version"), bb_free(&b);
}

static void llama2c_corruptions(void) {
    bb b = {0};
    bb_u32(&b, 0x616b3432), bb_i32(&b, 1);
    int32_t h[7] = {1 << 30, 1 << 30, 1 << 30, 1, 1, 1 << 30, 1};
    for (int i = 0; i < 7; i++)
        bb_i32(&b, h[i]);
    bb_pad_to(&b, 256);
    expect_bad("llama2.c huge dims", &b, NULL), bb_free(&b);
    bb_u32(&b, 0x616b3432), bb_i32(&b, 2);
    int32_t h2[7] = {8, 16, 1, 2, 1, 4, 4};
    for (int i = 0; i < 7; i++)
        bb_i32(&b, h2[i]);
    bb_u8(&b, 1), bb_i32(&b, 0), bb_pad_to(&b, 256);
    expect_bad("llama2.c group size 0", &b, "group"), bb_free(&b);
    bb_u32(&b, 0x616b3432), bb_i32(&b, 7), bb_pad_to(&b, 256);
    expect_bad("llama2.c unknown version", &b, "version"), bb_free(&b);
}

int main(void) {
    const char *dir = getenv("TMPDIR");
    snprintf(tmp_path, sizeof tmp_path, "%s/tport-hostile-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(tmp_path);
    if (fd < 0)
        return 1;
    close(fd);

    for (int v = 1; v <= 3; v++) {
        bb b = {0};
        char what[32];
        snprintf(what, sizeof what, "gguf v%d", v);
        sample_gguf(&b, v);
        every_prefix(what, &b, 0);
        bit_flips(what, &b, 2000);
        bb_free(&b);
    }
    { /* big-endian GGUF v3 (byte-swapped reads, tensor data swapped at load) */
        bb b = {0};
        sample_gguf(&b, 3);
        if (!gguf_to_big_endian(b.p, b.n))
            return 1;
        every_prefix("gguf v3 big-endian", &b, 0);
        bit_flips("gguf v3 big-endian", &b, 2000);
        bb_free(&b);
    }
    for (int v = 0; v <= 2; v++) {
        bb b = {0};
        char what[32];
        snprintf(what, sizeof what, "llama2.c v%d", v);
        sample_llama2c(&b, v);
        every_prefix(what, &b, 0);
        bit_flips(what, &b, 500);
        bb_free(&b);
    }
    const struct { const char *what; uint32_t magic, version; } legacy[] = {
        {"ggml", 0x67676d6cu, 0}, {"ggmf v1", 0x67676d66u, 1}, {"ggjt v1", 0x67676a74u, 1},
        {"ggjt v2", 0x67676a74u, 2}, {"ggjt v3", 0x67676a74u, 3}};
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++) {
        bb b = {0};
        sample_legacy(&b, legacy[i].magic, legacy[i].version);
        every_prefix(legacy[i].what, &b, SAMPLE_LEGACY_TENSORS);
        bit_flips(legacy[i].what, &b, 1000);
        bb_free(&b);
    }
    /* the ggml examples' files (gpt-2, gpt-j, gpt-neox, starcoder, mpt) and a
     * GGJT v3 file of a QK_K = 64 build */
    const struct { const char *what; int arch; int32_t ftype; int bytes; } examples[] = {
        {"ggml gpt-2 qnt0", SAMPLE_GPT2, 2, 20}, {"ggml gpt-j qnt1", SAMPLE_GPTJ, 1002, 20},
        {"ggml gpt-neox qnt2", SAMPLE_NEOX, 2002, 18}, {"ggml starcoder qnt1", SAMPLE_STARCODER, 1002, 20},
        {"ggml mpt qnt2", SAMPLE_MPT, 2002, 18}};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        bb b = {0};
        sample_ggml_example(&b, examples[i].arch, 32, examples[i].ftype, 2, 32, examples[i].bytes, NULL);
        int n_records;
        sample_example_tensors(examples[i].arch, &n_records);
        every_prefix(examples[i].what, &b, n_records);
        bit_flips(examples[i].what, &b, 1000);
        bb_free(&b);
    }
    {
        bb b = {0};
        uint8_t blk[38];
        float want[64];
        sample_qk64_q4k_block(blk, want);
        sample_ggjt3_kquant(&b, 64, 12, blk, 38, 2 * 38);
        every_prefix("ggjt v3 qk64", &b, 12);
        bit_flips("ggjt v3 qk64", &b, 1000);
        bb_free(&b);
    }
#ifdef TPORT_TEST_PYTORCH
    { /* a legacy torch.save stream (the restricted unpickler behind it) */
        bb b = {0};
        sample_pytorch_legacy(&b);
        every_prefix("pytorch legacy", &b, 0);
        bit_flips("pytorch legacy", &b, 2000);
        bb_free(&b);
    }
#endif
    gguf_corruptions();
    llama2c_corruptions();
    unlink(tmp_path);
    return test_finish("test_formats_hostile");
}
