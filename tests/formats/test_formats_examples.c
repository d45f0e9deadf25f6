/* The ggml examples' unversioned files (gpt-2, gpt-j, gpt-neox) at every
 * quantization version, and k-quant files written by QK_K = 64 builds
 * (GGJT v3 and GGUF).  Every file is built here byte by byte from the
 * documented layouts (formats.md 1.3-1.6, 3.1, 3.6, 3.7); the expected
 * types and values come from those layouts, not from the reader. */
#include <math.h>

#include "core/error.h"
#include "formats/model_file.h"
#include "quant/convert.h"
#include "sample_files.h"
#include "../test_util.h"

static char path[256];

static tport_model_file *open_bb(const bb *b, tport_status *st) {
    bb_save(b, path);
    tport_model_file *mf = NULL;
    *st = tport_model_file_open(path, &mf);
    return mf;
}


/* One test case: ftype as stored, on-disk type code, block geometry, and
 * the layout revision formats.md 1.6 says it is. */
typedef struct qcase {
    int32_t ftype;
    uint32_t code;
    int block, bytes;
    tport_type_id want;
} qcase;

static const qcase cases[] = {
    {0, 0, 1, 4, TPORT_TYPE_F32},                 {1, 1, 1, 2, TPORT_TYPE_F16},
    {2, 2, 32, 20, TPORT_TYPE_Q4_0_QNT0},         {3, 3, 32, 24, TPORT_TYPE_Q4_1_QNT0},
    {5, 4, 16, 10, TPORT_TYPE_Q4_2_QNT0},         {7, 8, 32, 36, TPORT_TYPE_Q8_0_QNT1},
    {8, 6, 32, 22, TPORT_TYPE_Q5_0_QNT0},         {9, 7, 32, 24, TPORT_TYPE_Q5_1_QNT0},
    {1002, 2, 32, 20, TPORT_TYPE_Q4_0_QNT1},      {1003, 3, 32, 24, TPORT_TYPE_Q4_1_QNT1},
    {1007, 8, 32, 36, TPORT_TYPE_Q8_0_QNT1},      {1008, 6, 32, 22, TPORT_TYPE_Q5_0},
    {1009, 7, 32, 24, TPORT_TYPE_Q5_1},           {2002, 2, 32, 18, TPORT_TYPE_Q4_0},
    {2003, 3, 32, 20, TPORT_TYPE_Q4_1},           {2007, 8, 32, 34, TPORT_TYPE_Q8_0},
    {2008, 6, 32, 22, TPORT_TYPE_Q5_0},           {2009, 7, 32, 24, TPORT_TYPE_Q5_1},
};

static const char *const arch_names[] = {"gpt2", "gptj", "gptneox", "starcoder", "mpt"};
static const char *const wte_names[] = {"model/wte", "transformer.wte.weight", "gpt_neox.embed_in.weight", "model/wte",
                                        "transformer.wte.weight"};

static uint64_t kv_u(const tport_model_file *mf, const char *key, bool *found) {
    const tport_kv *kv = tport_model_file_kv(mf, key);
    *found = kv != NULL;
    return kv ? kv->v.u : 0;
}

static void test_arch_and_versions(void) {
    for (int arch = SAMPLE_GPT2; arch <= SAMPLE_MPT; arch++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const qcase *q = &cases[i];
            /* mpt came to ggml after QNT1: an unversioned quantized mpt file is QNT1 (test_mpt_unversioned) */
            bool qnt0_type = q->want == TPORT_TYPE_Q4_0_QNT0 || q->want == TPORT_TYPE_Q4_1_QNT0 ||
                             q->want == TPORT_TYPE_Q4_2_QNT0 || q->want == TPORT_TYPE_Q5_0_QNT0 ||
                             q->want == TPORT_TYPE_Q5_1_QNT0;
            if (arch == SAMPLE_MPT && qnt0_type)
                continue;
            int want_qnt = arch == SAMPLE_MPT && q->ftype < 1000 ? 1 : q->ftype / 1000;
            bb b = {0};
            sample_ggml_example(&b, arch, 32, q->ftype, q->code, q->block, q->bytes, NULL);
            tport_status st;
            tport_model_file *mf = open_bb(&b, &st);
            CHECK(st == TPORT_STATUS_OK, "%s ftype %d: %s", arch_names[arch], q->ftype, tport_last_error());
            bb_free(&b);
            if (!mf)
                continue;
            CHECK(mf->container == TPORT_CONTAINER_GGML && !strcmp(mf->arch, arch_names[arch]), "%s ftype %d: arch '%s'",
                  arch_names[arch], q->ftype, mf->arch);
            CHECK(mf->quant_version == want_qnt && mf->file_type == (uint32_t)(q->ftype % 1000),
                  "%s ftype %d: qnt %d file type %u", arch_names[arch], q->ftype, mf->quant_version, mf->file_type);
            int n;
            sample_example_tensors(arch, &n);
            CHECK(mf->n_tensors == n, "%s: %d tensors", arch_names[arch], mf->n_tensors);
            const tport_mf_tensor *wte = tport_model_file_find(mf, wte_names[arch]);
            CHECK(wte && wte->type == q->want && wte->ne[0] == 32 && wte->ne[1] == 3 &&
                      wte->nbytes == (uint64_t)(96 / q->block * q->bytes),
                  "%s ftype %d: %s type %u (want %u)", arch_names[arch], q->ftype, wte_names[arch],
                  wte ? wte->type : 999u, q->want);
            int n_f32 = 0, n_f16 = 0;
            for (int t = 0; t < mf->n_tensors; t++) {
                n_f32 += mf->tensors[t].n_dims == 1 && mf->tensors[t].type == TPORT_TYPE_F32;
                n_f16 += mf->tensors[t].type == TPORT_TYPE_F16;
            }
            CHECK(n_f32 >= 3 && (q->code == 1 || n_f16 == 1), "%s: 1-D f32 %d, f16 %d", arch_names[arch], n_f32, n_f16);
            char key[96];
            bool found;
            snprintf(key, sizeof key, "%s.context_length", arch_names[arch]);
            CHECK(kv_u(mf, key, &found) == 8 && found, "%s", key);
            snprintf(key, sizeof key, "%s.embedding_length", arch_names[arch]);
            CHECK(kv_u(mf, key, &found) == 32 && found, "%s", key);
            snprintf(key, sizeof key, "%s.block_count", arch_names[arch]);
            CHECK(kv_u(mf, key, &found) == 1 && found, "%s", key);
            snprintf(key, sizeof key, "%s.attention.head_count", arch_names[arch]);
            CHECK(kv_u(mf, key, &found) == 2 && found, "%s", key);
            snprintf(key, sizeof key, "%s.rope.dimension_count", arch_names[arch]);
            uint64_t rot = kv_u(mf, key, &found);
            bool has_rot = arch == SAMPLE_GPTJ || arch == SAMPLE_NEOX;
            CHECK(has_rot ? (found && rot == 4) : !found, "%s = %llu", key, (unsigned long long)rot);
            const tport_kv *alibi = tport_model_file_kv(mf, "mpt.attention.max_alibi_bias");
            CHECK(arch == SAMPLE_MPT ? (alibi && alibi->type == TPORT_KV_F32 && alibi->v.f == 8.0) : !alibi,
                  "%s: mpt.attention.max_alibi_bias", arch_names[arch]);
            CHECK(!tport_model_file_kv(mf, "mpt.attention.clamp_kqv"), "a clip of 0 is no clamp_kqv key");
            const tport_kv *pr = tport_model_file_kv(mf, "gptneox.use_parallel_residual");
            CHECK(arch == SAMPLE_NEOX ? (pr && pr->type == TPORT_KV_BOOL && pr->v.b) : !pr, "par_res");
            const tport_vocab *v = &mf->vocab;
            CHECK(v->n_tokens == 3 && !v->scores && !strcmp(v->model, "gpt2") && !strcmp(v->tokens[0], "a") &&
                      !strcmp(v->tokens[2], "<|endoftext|>") && v->eos == 2,
                  "%s: vocabulary", arch_names[arch]);
            tport_model_file_close(mf);
        }
}

/* starcoder files are gpt-2 files whose c_attn has n_embd + 2 head sizes of
 * outputs (multi-query attention) */
static void test_starcoder(void) {
    bb b = {0};
    sample_ggml_example(&b, SAMPLE_STARCODER, 32, 2002, 2, 32, 18, NULL);
    tport_status st;
    tport_model_file *mf = open_bb(&b, &st);
    bb_free(&b);
    CHECK(st == TPORT_STATUS_OK, "starcoder: %s", tport_last_error());
    if (!mf)
        return;
    bool found;
    CHECK(!strcmp(mf->arch, "starcoder"), "arch '%s'", mf->arch);
    CHECK(kv_u(mf, "starcoder.attention.head_count_kv", &found) == 1 && found, "head_count_kv 1");
    CHECK(kv_u(mf, "starcoder.context_length", &found) == 8 && found, "context_length");
    const tport_mf_tensor *t = tport_model_file_find(mf, "model/lm_head");
    CHECK(t && t->type == TPORT_TYPE_Q4_0, "optional lm_head read");
    tport_model_file_close(mf);
}

/* k-quants in the examples' files (QNT2, ggml_ftype 10..14), from a normal
 * and from a QK_K = 64 build */
static void test_example_kquants(void) {
    const struct { int E, block, bytes; tport_type_id want; } k[] = {
        {256, 256, 144, TPORT_TYPE_Q4_K}, {64, 64, 38, TPORT_TYPE_Q4_K_QK64}, {256, 64, 38, TPORT_TYPE_Q4_K_QK64}};
    for (int i = 0; i < 3; i++) {
        bb b = {0};
        sample_ggml_example(&b, SAMPLE_NEOX, k[i].E, 2012, 12, k[i].block, k[i].bytes, NULL);
        tport_status st;
        tport_model_file *mf = open_bb(&b, &st);
        bb_free(&b);
        const tport_mf_tensor *t = mf ? tport_model_file_find(mf, "gpt_neox.embed_in.weight") : NULL;
        CHECK(st == TPORT_STATUS_OK && t && t->type == k[i].want, "neox q4_K E=%d block %d: %s, type %u", k[i].E,
              k[i].block, st ? tport_last_error() : "read", t ? t->type : 999u);
        tport_model_file_close(mf);
    }
}

/* Q4_0 / Q8_0 blocks written from formats.md 3.1 / 3.6 at each revision;
 * the values the layout says they hold are computed here. */
static void test_known_blocks(void) {
    for (int qnt = 0; qnt <= 2; qnt++) {
        uint8_t blk[40];
        float want[32];
        int bytes;
        float d = 0.5f;
        uint8_t qs[16];
        for (int j = 0; j < 16; j++)
            qs[j] = (uint8_t)(j | (15 - j) << 4);
        if (qnt < 2) {
            memcpy(blk, &d, 4), memcpy(blk + 4, qs, 16), bytes = 20;
        } else {
            uint16_t h = sample_f16_of(d);
            memcpy(blk, &h, 2), memcpy(blk + 2, qs, 16), bytes = 18;
        }
        for (int j = 0; j < 16; j++) {
            float lo = (float)((qs[j] & 15) - 8) * d, hi = (float)((qs[j] >> 4) - 8) * d;
            if (qnt == 0) /* QNT0: nibbles interleaved */
                want[2 * j] = lo, want[2 * j + 1] = hi;
            else          /* QNT1 and later: low nibbles first half, high second */
                want[j] = lo, want[j + 16] = hi;
        }
        bb b = {0};
        sample_ggml_example(&b, SAMPLE_GPT2, 32, qnt * 1000 + 2, 2, 32, bytes, blk);
        tport_status st;
        tport_model_file *mf = open_bb(&b, &st);
        bb_free(&b);
        CHECK(st == TPORT_STATUS_OK, "q4_0 qnt%d: %s", qnt, tport_last_error());
        if (!mf)
            continue;
        const tport_mf_tensor *t = tport_model_file_find(mf, "model/wte");
        float y[96];
        CHECK(t && tport_convert(t->type, t->data, TPORT_TYPE_F32, y, 96, NULL) == TPORT_STATUS_OK, "dequantize");
        int bad = 0;
        for (int i = 0; i < 96; i++)
            bad += y[i] != want[i % 32];
        CHECK(bad == 0, "q4_0 qnt%d: %d of 96 values differ from the layout (y[1] %g want %g)", qnt, bad, (double)y[1],
              (double)want[1]);
        tport_model_file_close(mf);
    }
    /* Q8_0 of QNT0/1: {f32 d; i8 qs[32]} */
    uint8_t blk[36];
    float d = 0.25f;
    memcpy(blk, &d, 4);
    for (int j = 0; j < 32; j++)
        blk[4 + j] = (uint8_t)(int8_t)(j - 16);
    bb b = {0};
    sample_ggml_example(&b, SAMPLE_GPTJ, 32, 1007, 8, 32, 36, blk);
    tport_status st;
    tport_model_file *mf = open_bb(&b, &st);
    bb_free(&b);
    CHECK(st == TPORT_STATUS_OK, "q8_0 qnt1: %s", tport_last_error());
    if (mf) {
        const tport_mf_tensor *t = tport_model_file_find(mf, "transformer.wte.weight");
        float y[96];
        int bad = 0;
        CHECK(t && tport_convert(t->type, t->data, TPORT_TYPE_F32, y, 96, NULL) == TPORT_STATUS_OK, "dequantize");
        for (int i = 0; i < 96; i++)
            bad += y[i] != (float)((i % 32) - 16) * d;
        CHECK(bad == 0, "q8_0 qnt1: %d values differ", bad);
        tport_model_file_close(mf);
    }
}

static void expect_error(const bb *b, const char *what, const char *needle) {
    tport_status st;
    tport_model_file *mf = open_bb(b, &st);
    const char *e = tport_last_error();
    CHECK(st == TPORT_STATUS_BAD_FORMAT && !mf && strstr(e, path) == e && strstr(e, ": offset ") &&
              (!needle || strstr(e, needle)),
          "%s: status %d, '%s'", what, st, e);
    tport_model_file_close(mf);
}

/* ggml@2a75bd43's mpt-quantize wrote the plain ftype (GGML_QNT_VERSION was
 * 1; fixed in c2fab8a3): ftype 2 with QNT1 blocks reads as q4_0_qnt1. */
static void test_mpt_unversioned(void) {
    bb b = {0};
    sample_ggml_example(&b, SAMPLE_MPT, 32, 2, 2, 32, 20, NULL);
    tport_status st;
    tport_model_file *mf = open_bb(&b, &st);
    const tport_mf_tensor *wte = mf ? tport_model_file_find(mf, "transformer.wte.weight") : NULL;
    CHECK(st == TPORT_STATUS_OK && mf && mf->quant_version == 1 && wte && wte->type == TPORT_TYPE_Q4_0_QNT1,
          "unversioned q4_0 mpt: %s", mf ? "wrong version or type" : tport_last_error());
    tport_model_file_close(mf);
    bb_free(&b);
}

static void test_corrupted(void) {
    bb b = {0};
    /* the vocabulary count no longer equals n_vocab: no layout fits */
    sample_ggml_example(&b, SAMPLE_GPT2, 32, 2, 2, 32, 20, NULL);
    b.p[4 + 6 * 4] = 4;
    expect_error(&b, "vocab count", "unknown ggml-example architecture");
    CHECK(strstr(tport_last_error(), "gpt-2") && strstr(tport_last_error(), "gpt-neox") &&
              strstr(tport_last_error(), "llama"),
          "names what was tried: %s", tport_last_error());
    bb_free(&b);
    /* cut at a record boundary: the last tensor is missing */
    sample_ggml_example(&b, SAMPLE_NEOX, 32, 2002, 2, 32, 18, NULL);
    /* the last record is embed_out.weight [32, 3]: 3 header i32, 2 dims, name, data */
    size_t last = b.n - (12 + 8 + strlen("embed_out.weight") + 96 / 32 * 18);
    bb cut = {0};
    bb_raw(&cut, b.p, last);
    {   /* a valid container with a partial tensor set (test_formats_partial covers every layout) */
        tport_status st;
        tport_model_file *mf = open_bb(&cut, &st);
        CHECK(st == TPORT_STATUS_OK && mf && mf->n_missing == 1 && strstr(mf->missing, "embed_out.weight"),
              "record-boundary cut of neox: %s", mf ? mf->missing : tport_last_error());
        tport_model_file_close(mf);
    }
    bb_free(&cut);
    bb_free(&b);
    /* an unknown quantization version */
    sample_ggml_example(&b, SAMPLE_GPT2, 32, 3002, 2, 32, 18, NULL);
    expect_error(&b, "ftype 3002", NULL);
    bb_free(&b);
    /* Q4_2 did not survive into QNT1 */
    sample_ggml_example(&b, SAMPLE_GPT2, 32, 1005, 4, 16, 10, NULL);
    expect_error(&b, "q4_2 at qnt1", NULL);
    bb_free(&b);
    /* a gpt-j header with gpt-2 names, and a gpt-2 file with a foreign name */
    sample_ggml_example(&b, SAMPLE_GPT2, 32, 2, 2, 32, 20, NULL);
    uint8_t *m = NULL;
    for (size_t i = 0; !m && i + 15 <= b.n; i++)
        if (!memcmp(b.p + i, "model/h0/ln_2/g", 15))
            m = b.p + i;
    CHECK(m != NULL, "name in sample");
    if (m)
        memcpy(m, "xodel", 5);
    expect_error(&b, "foreign tensor name", "unknown ggml-example architecture");
    bb_free(&b);
}

/* ---- QK_K = 64 (builders in sample_files.h) ------------------------------- */
static void test_qk64_ggjt(void) {
    uint8_t blk[38];
    float want[64];
    sample_qk64_q4k_block(blk, want);
    for (int E = 64; E <= 256; E += 192) { /* 64: no 256-block fits; 256: both sizes would */
        bb b = {0};
        sample_ggjt3_kquant(&b, E, 12, blk, 38, 2 * E / 64 * 38);
        tport_status st;
        tport_model_file *mf = open_bb(&b, &st);
        bb_free(&b);
        CHECK(st == TPORT_STATUS_OK, "qk64 ggjt E=%d: %s", E, tport_last_error());
        if (!mf)
            continue;
        const tport_mf_tensor *t = tport_model_file_find(mf, "blk.0.attn_q.weight");
        CHECK(t && t->type == TPORT_TYPE_Q4_K_QK64 && t->nbytes == (uint64_t)(2 * E / 64 * 38),
              "E=%d: attn_q type %u", E, t ? t->type : 999u);
        CHECK(strstr(mf->notes, "QK_K = 64") != NULL, "note: %s", mf->notes);
        float y[512];
        int bad = 0;
        if (t && tport_convert(t->type, t->data, TPORT_TYPE_F32, y, 2 * E, NULL) == TPORT_STATUS_OK)
            for (int i = 0; i < 2 * E; i++)
                bad += y[i] != want[i % 64];
        else
            bad = -1;
        CHECK(bad == 0, "E=%d: q4_K_qk64 values: %d differ", E, bad);
        tport_model_file_close(mf);
    }
    /* every k-quant family: QK_K = 64 sizes {24, 28, 38, 46, 54} per 64 values */
    const struct { uint32_t code; int bytes; tport_type_id want; } fam[] = {
        {10, 24, TPORT_TYPE_Q2_K_QK64}, {11, 28, TPORT_TYPE_Q3_K_QK64}, {12, 38, TPORT_TYPE_Q4_K_QK64},
        {13, 46, TPORT_TYPE_Q5_K_QK64}, {14, 54, TPORT_TYPE_Q6_K_QK64}};
    for (int f = 0; f < 5; f++)
        for (int E = 64; E <= 256; E += 192) {
            uint8_t zero[64] = {0};
            bb b = {0};
            sample_ggjt3_kquant(&b, E, fam[f].code, zero, 64, 2 * E / 64 * fam[f].bytes);
            tport_status st;
            tport_model_file *mf = open_bb(&b, &st);
            bb_free(&b);
            const tport_mf_tensor *t = mf ? tport_model_file_find(mf, "blk.0.attn_q.weight") : NULL;
            CHECK(st == TPORT_STATUS_OK && t && t->type == fam[f].want, "code %u E=%d: %s, type %u", fam[f].code, E,
                  st ? tport_last_error() : "read", t ? t->type : 999u);
            tport_model_file_close(mf);
        }
    /* the same file from a normal build stays q4_K */
    uint8_t blk256[144] = {0};
    bb b = {0};
    sample_ggjt3_kquant(&b, 256, 12, blk256, 144, 2 * 144);
    tport_status st;
    tport_model_file *mf = open_bb(&b, &st);
    bb_free(&b);
    const tport_mf_tensor *t = mf ? tport_model_file_find(mf, "blk.0.attn_q.weight") : NULL;
    CHECK(st == TPORT_STATUS_OK && t && t->type == TPORT_TYPE_Q4_K && !strstr(mf->notes, "QK_K"),
          "qk256 ggjt: %s", st ? tport_last_error() : "wrong type");
    tport_model_file_close(mf);
    /* neither layout fits: an error, not a crash */
    sample_ggjt3_kquant(&b, 256, 12, blk, 38, 2 * 256 / 64 * 38 - 5);
    expect_error(&b, "qk64 ggjt, short", NULL);
    bb_free(&b);
}

/* GGUF v3 with a k-quant tensor `a` [256, 2] of `bytes` bytes, then f32
 * `b` [32] (or `b` first and `a` last). */
static void gguf_kquant(bb *b, uint32_t code, const uint8_t *blk, int blk_bytes, int bytes, bool a_last) {
    bb_raw(b, "GGUF", 4), bb_u32(b, 3), bb_u64(b, 2), bb_u64(b, 1);
    sg_str(b, 3, "general.architecture"), bb_u32(b, 8), sg_str(b, 3, "llama");
    uint64_t pad_a = (uint64_t)(bytes + 31) / 32 * 32;
    uint64_t off_a = a_last ? 128 : 0, off_b = a_last ? 0 : pad_a;
    sg_str(b, 3, "a"), bb_u32(b, 2), bb_u64(b, 256), bb_u64(b, 2), bb_u32(b, code), bb_u64(b, off_a);
    sg_str(b, 3, "b"), bb_u32(b, 1), bb_u64(b, 32), bb_u32(b, 0), bb_u64(b, off_b);
    bb_pad_to(b, 32);
    size_t start = b->n;
    for (int pass = 0; pass < 2; pass++) {
        bool write_a = (pass == 0) != a_last;
        if (write_a) {
            for (int k = 0; k < bytes; k++)
                bb_u8(b, blk[k % blk_bytes]);
        } else {
            bb_zeros(b, 128);
        }
        if (pass == 0)
            bb_pad_to(b, 32);
    }
    (void)start;
}

static void test_qk64_gguf(void) {
    uint8_t blk[38];
    float want[64];
    sample_qk64_q4k_block(blk, want);
    for (int a_last = 0; a_last <= 1; a_last++) {
        bb b = {0};
        gguf_kquant(&b, 12, blk, 38, 8 * 38, a_last);
        tport_status st;
        tport_model_file *mf = open_bb(&b, &st);
        bb_free(&b);
        CHECK(st == TPORT_STATUS_OK, "qk64 gguf: %s", tport_last_error());
        if (!mf)
            continue;
        const tport_mf_tensor *t = tport_model_file_find(mf, "a");
        CHECK(t && t->type == TPORT_TYPE_Q4_K_QK64 && t->nbytes == 8 * 38, "gguf a_last %d: type %u", a_last,
              t ? t->type : 999u);
        float y[512];
        int bad = 0;
        if (t && tport_convert(t->type, t->data, TPORT_TYPE_F32, y, 512, NULL) == TPORT_STATUS_OK)
            for (int i = 0; i < 512; i++)
                bad += y[i] != want[i % 64];
        else
            bad = -1;
        CHECK(bad == 0, "gguf q4_K_qk64 values: %d differ", bad);
        tport_model_file_close(mf);
    }
    uint8_t blk256[144] = {0};
    for (int a_last = 0; a_last <= 1; a_last++) {
        bb b = {0};
        gguf_kquant(&b, 12, blk256, 144, 2 * 144, a_last);
        tport_status st;
        tport_model_file *mf = open_bb(&b, &st);
        bb_free(&b);
        const tport_mf_tensor *t = mf ? tport_model_file_find(mf, "a") : NULL;
        CHECK(st == TPORT_STATUS_OK && t && t->type == TPORT_TYPE_Q4_K, "qk256 gguf a_last %d stays q4_K", a_last);
        tport_model_file_close(mf);
    }
}

int main(void) {
    snprintf(path, sizeof path, "/tmp/tport-examples-%d.bin", (int)getpid());
    test_arch_and_versions();
    test_starcoder();
    test_example_kquants();
    test_known_blocks();
    test_mpt_unversioned();
    test_corrupted();
    test_qk64_ggjt();
    test_qk64_gguf();
    unlink(path);
    return test_finish("test_formats_examples");
}
