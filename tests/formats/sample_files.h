/* Small valid model files of every kind, built byte by byte from the
 * documented layouts: seeds for the hostile-input tests and the fuzzers. */
#ifndef TPORT_TEST_SAMPLE_FILES_H
#define TPORT_TEST_SAMPLE_FILES_H

#include "byte_builder.h"

/* ---- GGUF ------------------------------------------------------------- */
static inline void sg_len(bb *b, int version, uint64_t n) {
    if (version == 1)
        bb_u32(b, (uint32_t)n);
    else
        bb_u64(b, n);
}
static inline void sg_str(bb *b, int version, const char *s) {
    sg_len(b, version, strlen(s));
    bb_raw(b, s, strlen(s));
}

/* 6 kvs (string, u32, f32, string array, nested array, bool) and two
 * tensors (f32 [8, 2], f16 [16]). */
static inline void sample_gguf(bb *b, int version) {
    bb_raw(b, "GGUF", 4);
    bb_u32(b, (uint32_t)version);
    sg_len(b, version, 2);
    sg_len(b, version, 6);
    sg_str(b, version, "general.architecture"), bb_u32(b, 8), sg_str(b, version, "llama");
    sg_str(b, version, "llama.embedding_length"), bb_u32(b, 4), bb_u32(b, 8);
    sg_str(b, version, "llama.rope.freq_base"), bb_u32(b, 6), bb_f32(b, 10000.0f);
    sg_str(b, version, "tokenizer.ggml.tokens"), bb_u32(b, 9), bb_u32(b, 8), sg_len(b, version, 3);
    sg_str(b, version, "a"), sg_str(b, version, "bc"), sg_str(b, version, "def");
    sg_str(b, version, "test.nested"), bb_u32(b, 9), bb_u32(b, 9), sg_len(b, version, 2);
    bb_u32(b, 5), sg_len(b, version, 2), bb_i32(b, 1), bb_i32(b, 2);
    bb_u32(b, 8), sg_len(b, version, 1), sg_str(b, version, "x");
    sg_str(b, version, "test.bool"), bb_u32(b, 7), bb_u8(b, 1);
    sg_str(b, version, "token_embd.weight"), bb_u32(b, 2), sg_len(b, version, 8), sg_len(b, version, 2);
    bb_u32(b, 0), bb_u64(b, 0);
    sg_str(b, version, "output_norm.weight"), bb_u32(b, 1), sg_len(b, version, 16), bb_u32(b, 1), bb_u64(b, 64);
    bb_pad_to(b, 32);
    for (int i = 0; i < 16; i++)
        bb_f32(b, (float)i);
    for (int i = 0; i < 16; i++)
        bb_u16(b, 0x3c00);
}

/* ---- llama2.c ------------------------------------------------------------ */
/* dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 4, seq 4. */
static inline void sample_llama2c(bb *b, int version) {
    int32_t h[7] = {8, 16, 1, 2, 1, version == 0 ? -4 : 4, 4};
    int n_f32;
    if (version) {
        bb_u32(b, 0x616b3432);
        bb_i32(b, version);
    }
    for (int i = 0; i < 7; i++)
        bb_i32(b, h[i]);
    if (version) {
        bb_u8(b, 1);
        if (version == 2)
            bb_i32(b, 8);
        bb_pad_to(b, 256);
    }
    /* embd 32, attn_norm 8, q 64, k 32, v 32, o 64, ffn_norm 8, w1/w2/w3 3*128, norm 8 */
    n_f32 = 32 + 8 + 64 + 32 + 32 + 64 + 8 + 384 + 8;
    if (version == 0)
        n_f32 += 2 * 4 * 2 + 32; /* rope tables, unshared classifier */
    if (version == 2) {
        for (int i = 0; i < 8 + 8 + 8; i++)
            bb_f32(b, 1.0f);
        int nq = 32 + 64 + 32 + 32 + 64 + 384;
        for (int i = 0; i < nq; i++)
            bb_u8(b, (uint8_t)(i * 7));
        for (int i = 0; i < nq / 8; i++)
            bb_f32(b, 0.01f * (float)i);
        return;
    }
    for (int i = 0; i < n_f32; i++)
        bb_f32(b, 0.001f * (float)i);
}

/* ---- GGML / GGMF / GGJT llama files ------------------------------------ */
/* magic: 0x67676d6c ggml, 0x67676d66 ggmf, 0x67676a74 ggjt.  n_embd 32,
 * 2 heads, 1 layer, 3 vocab entries, tensors: f32 norm, q4_0 [32, 2], f16. */
static inline void sample_legacy(bb *b, uint32_t magic, uint32_t version) {
    bb_u32(b, magic);
    if (magic != 0x67676d6cu)
        bb_u32(b, version);
    uint32_t hp[7] = {3, 32, 8, 2, 1, 16, 2};
    for (int i = 0; i < 7; i++)
        bb_u32(b, hp[i]);
    for (int i = 0; i < 3; i++) {
        bb_u32(b, 2), bb_u8(b, 'a'), bb_u8(b, (uint8_t)('a' + i));
        if (magic != 0x67676d6cu)
            bb_f32(b, (float)i);
    }
    /* a complete 1-layer llama tensor set (small shapes) */
    struct { const char *name; uint32_t type; int32_t ne0, ne1; int bytes; } t[12] = {
        {"tok_embeddings.weight", 0, 32, 1, 128},
        {"norm.weight", 0, 32, 1, 128},
        {"layers.0.attention.wq.weight", 2, 32, 2, version == 3 ? 36 : 40},
        {"output.weight", 1, 32, 3, 192},
        {"layers.0.attention.wk.weight", 0, 32, 1, 128},
        {"layers.0.attention.wv.weight", 0, 32, 1, 128},
        {"layers.0.attention.wo.weight", 0, 32, 1, 128},
        {"layers.0.attention_norm.weight", 0, 32, 1, 128},
        {"layers.0.ffn_norm.weight", 0, 32, 1, 128},
        {"layers.0.feed_forward.w1.weight", 0, 32, 1, 128},
        {"layers.0.feed_forward.w2.weight", 0, 32, 1, 128},
        {"layers.0.feed_forward.w3.weight", 0, 32, 1, 128},
    };
    for (int i = 0; i < 12; i++) {
        int n_dims = t[i].ne1 > 1 ? 2 : 1;
        bb_i32(b, n_dims), bb_i32(b, (int32_t)strlen(t[i].name)), bb_u32(b, t[i].type), bb_i32(b, t[i].ne0);
        if (n_dims == 2)
            bb_i32(b, t[i].ne1);
        bb_raw(b, t[i].name, strlen(t[i].name));
        if (magic == 0x67676a74u)
            bb_pad_to(b, 32);
        for (int k = 0; k < t[i].bytes; k++)
            bb_u8(b, (uint8_t)(k * 3));
    }
}

#endif
