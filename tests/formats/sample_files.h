/* Small valid model files of every kind, built byte by byte from the
 * documented layouts: seeds for the hostile-input tests and the fuzzers. */
#ifndef TPORT_TEST_SAMPLE_FILES_H
#define TPORT_TEST_SAMPLE_FILES_H

#include <stdbool.h>

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
 * 2 heads, 1 layer, 3 vocab entries, tensors: f32 norm, q4_0 [32, 2], f16.
 * Only the first n_keep of the 12 records are written (a valid file with
 * a partial tensor set: nothing in these containers counts the records);
 * SAMPLE_LEGACY_TENSORS for all. */
#define SAMPLE_LEGACY_TENSORS 12
static inline void sample_legacy_first(bb *b, uint32_t magic, uint32_t version, int n_keep) {
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
    for (int i = 0; i < 12 && i < n_keep; i++) {
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
static inline void sample_legacy(bb *b, uint32_t magic, uint32_t version) {
    sample_legacy_first(b, magic, version, SAMPLE_LEGACY_TENSORS);
}

/* ---- the ggml examples' unversioned files (gpt-2, gpt-j, gpt-neox) ------ */
/* formats.md 1.3-1.5 and ggml's examples/<name>/main.cpp: 'ggml', the
 * arch's i32 hparams, i32 n_vocab then n_vocab x (u32 len, bytes), then
 * tensor records {i32 n_dims, i32 name_len, i32 type, i32 ne[], name,
 * data} with no alignment.  Vocabulary "a", "b", "<|endoftext|>"; n_ctx 8;
 * 2 heads; 1 layer; n_embd E.  The 2-D weights the examples quantize are
 * of on-disk type qtype (qblock elements in qbytes bytes per block; the
 * test's own belief, not the library's); one 2-D weight is f16, 1-D ones
 * f32 (zeros).  Every block of the quantized tensors is first_block
 * (qbytes bytes) or, if that is NULL, a byte pattern. */
enum { SAMPLE_GPT2, SAMPLE_GPTJ, SAMPLE_NEOX, SAMPLE_STARCODER, SAMPLE_MPT };

typedef struct sample_tensor {
    const char *name;
    int ne0m, ne1m; /* multiples of E (ne1m 0: 1-D; negative: -V or -C) */
    char kind;      /* 'q' quantized, 'h' f16, 'f' f32 */
} sample_tensor;

static inline const sample_tensor *sample_example_tensors(int arch, int *n) {
    static const sample_tensor gpt2[] = {
        {"model/wte", 1, -3, 'q'},           {"model/wpe", 1, -8, 'f'},           {"model/ln_f/g", 1, 0, 'f'},
        {"model/ln_f/b", 1, 0, 'f'},         {"model/h0/ln_1/g", 1, 0, 'f'},      {"model/h0/ln_1/b", 1, 0, 'f'},
        {"model/h0/attn/c_attn/w", 1, 3, 'q'}, {"model/h0/attn/c_attn/b", 3, 0, 'f'},
        {"model/h0/attn/c_proj/w", 1, 1, 'h'}, {"model/h0/attn/c_proj/b", 1, 0, 'f'},
        {"model/h0/ln_2/g", 1, 0, 'f'},      {"model/h0/ln_2/b", 1, 0, 'f'},      {"model/h0/mlp/c_fc/w", 1, 4, 'q'},
        {"model/h0/mlp/c_fc/b", 4, 0, 'f'},  {"model/h0/mlp/c_proj/w", 4, 1, 'q'}, {"model/h0/mlp/c_proj/b", 1, 0, 'f'},
    };
    /* starcoder: gpt-2's names; multi-query c_attn of n_embd + 2 heads (= 2E with 2 heads) */
    /* (the optional lm_head is not last: a file cut just before an
     * optional last tensor cannot be told from a complete one) */
    static const sample_tensor starcoder[] = {
        {"model/wte", 1, -3, 'q'},           {"model/lm_head", 1, -3, 'q'},       {"model/wpe", 1, -8, 'f'},           {"model/ln_f/g", 1, 0, 'f'},
        {"model/ln_f/b", 1, 0, 'f'},         {"model/h0/ln_1/g", 1, 0, 'f'},      {"model/h0/ln_1/b", 1, 0, 'f'},
        {"model/h0/attn/c_attn/w", 1, 2, 'q'}, {"model/h0/attn/c_attn/b", 2, 0, 'f'},
        {"model/h0/attn/c_proj/w", 1, 1, 'h'}, {"model/h0/attn/c_proj/b", 1, 0, 'f'},
        {"model/h0/ln_2/g", 1, 0, 'f'},      {"model/h0/ln_2/b", 1, 0, 'f'},      {"model/h0/mlp/c_fc/w", 1, 4, 'q'},
        {"model/h0/mlp/c_fc/b", 4, 0, 'f'},  {"model/h0/mlp/c_proj/w", 4, 1, 'q'}, {"model/h0/mlp/c_proj/b", 1, 0, 'f'},
    };
    static const sample_tensor mpt[] = {
        {"transformer.wte.weight", 1, -3, 'q'},
        {"transformer.blocks.0.norm_1.weight", 1, 0, 'f'},
        {"transformer.blocks.0.attn.Wqkv.weight", 1, 3, 'q'},
        {"transformer.blocks.0.attn.out_proj.weight", 1, 1, 'h'},
        {"transformer.blocks.0.norm_2.weight", 1, 0, 'f'},
        {"transformer.blocks.0.ffn.up_proj.weight", 1, 4, 'q'},
        {"transformer.blocks.0.ffn.down_proj.weight", 4, 1, 'q'},
        {"transformer.norm_f.weight", 1, 0, 'f'},
    };
    static const sample_tensor gptj[] = {
        {"transformer.wte.weight", 1, -3, 'q'},           {"transformer.h.0.ln_1.weight", 1, 0, 'f'},
        {"transformer.h.0.ln_1.bias", 1, 0, 'f'},         {"transformer.h.0.attn.q_proj.weight", 1, 1, 'q'},
        {"transformer.h.0.attn.k_proj.weight", 1, 1, 'q'}, {"transformer.h.0.attn.v_proj.weight", 1, 1, 'q'},
        {"transformer.h.0.attn.out_proj.weight", 1, 1, 'h'}, {"transformer.h.0.mlp.fc_in.weight", 1, 4, 'q'},
        {"transformer.h.0.mlp.fc_in.bias", 4, 0, 'f'},    {"transformer.h.0.mlp.fc_out.weight", 4, 1, 'q'},
        {"transformer.h.0.mlp.fc_out.bias", 1, 0, 'f'},   {"transformer.ln_f.weight", 1, 0, 'f'},
        {"transformer.ln_f.bias", 1, 0, 'f'},             {"lm_head.weight", 1, -3, 'q'},
        {"lm_head.bias", -3, 0, 'f'},
    };
    static const sample_tensor neox[] = {
        {"gpt_neox.embed_in.weight", 1, -3, 'q'},
        {"gpt_neox.layers.0.input_layernorm.weight", 1, 0, 'f'},
        {"gpt_neox.layers.0.input_layernorm.bias", 1, 0, 'f'},
        {"gpt_neox.layers.0.attention.query_key_value.weight", 1, 3, 'q'},
        {"gpt_neox.layers.0.attention.query_key_value.bias", 3, 0, 'f'},
        {"gpt_neox.layers.0.attention.dense.weight", 1, 1, 'h'},
        {"gpt_neox.layers.0.attention.dense.bias", 1, 0, 'f'},
        {"gpt_neox.layers.0.post_attention_layernorm.weight", 1, 0, 'f'},
        {"gpt_neox.layers.0.post_attention_layernorm.bias", 1, 0, 'f'},
        {"gpt_neox.layers.0.mlp.dense_h_to_4h.weight", 1, 4, 'q'},
        {"gpt_neox.layers.0.mlp.dense_h_to_4h.bias", 4, 0, 'f'},
        {"gpt_neox.layers.0.mlp.dense_4h_to_h.weight", 4, 1, 'q'},
        {"gpt_neox.layers.0.mlp.dense_4h_to_h.bias", 1, 0, 'f'},
        {"gpt_neox.final_layer_norm.weight", 1, 0, 'f'},
        {"gpt_neox.final_layer_norm.bias", 1, 0, 'f'},
        {"embed_out.weight", 1, -3, 'q'},
    };
    switch (arch) {
    case SAMPLE_GPT2: *n = (int)(sizeof gpt2 / sizeof gpt2[0]); return gpt2;
    case SAMPLE_GPTJ: *n = (int)(sizeof gptj / sizeof gptj[0]); return gptj;
    case SAMPLE_MPT: *n = (int)(sizeof mpt / sizeof mpt[0]); return mpt;
    case SAMPLE_STARCODER: *n = (int)(sizeof starcoder / sizeof starcoder[0]); return starcoder;
    default: *n = (int)(sizeof neox / sizeof neox[0]); return neox;
    }
}

static inline int64_t sample_dim(int m, int E) { return m > 0 ? (int64_t)m * E : (int64_t)-m; }

/* Only the first n_keep tensor records (-1: all) are written. */
static inline void sample_ggml_example_first(bb *b, int arch, int E, int32_t ftype, uint32_t qtype, int qblock,
                                             int qbytes, const uint8_t *first_block, int n_keep) {
    bb_u32(b, 0x67676d6cu);
    if (arch == SAMPLE_MPT) {
        /* d_model, max_seq_len, n_heads, n_layers, n_vocab, f32 alibi_bias_max, f32 clip_qkv */
        bb_i32(b, E), bb_i32(b, 8), bb_i32(b, 2), bb_i32(b, 1), bb_i32(b, 3), bb_f32(b, 8.0f), bb_f32(b, 0.0f);
    } else {
        bb_i32(b, 3), bb_i32(b, 8), bb_i32(b, E), bb_i32(b, 2), bb_i32(b, 1); /* n_vocab n_ctx n_embd n_head n_layer */
    }
    if (arch == SAMPLE_GPTJ || arch == SAMPLE_NEOX)
        bb_i32(b, E / 2 / 4);                                             /* n_rot: a quarter of the head */
    if (arch == SAMPLE_NEOX)
        bb_i32(b, 1);                                                     /* par_res */
    bb_i32(b, ftype);
    const char *tok[3] = {"a", "b", "<|endoftext|>"};
    if (arch != SAMPLE_MPT && arch != SAMPLE_NEOX) /* mpt's and gpt-neox's vocabularies have no count prefix */
        bb_i32(b, 3);
    for (int i = 0; i < 3; i++)
        bb_u32(b, (uint32_t)strlen(tok[i])), bb_raw(b, tok[i], strlen(tok[i]));
    int n;
    const sample_tensor *t = sample_example_tensors(arch, &n);
    if (n_keep >= 0 && n_keep < n)
        n = n_keep;
    for (int i = 0; i < n; i++) {
        int64_t ne0 = sample_dim(t[i].ne0m, E), ne1 = t[i].ne1m ? sample_dim(t[i].ne1m, E) : 1;
        int n_dims = t[i].ne1m ? 2 : 1;
        uint32_t type = t[i].kind == 'q' ? qtype : t[i].kind == 'h' ? 1 : 0;
        int64_t bytes = t[i].kind == 'q' ? ne0 * ne1 / qblock * qbytes : ne0 * ne1 * (t[i].kind == 'h' ? 2 : 4);
        bb_i32(b, n_dims), bb_i32(b, (int32_t)strlen(t[i].name)), bb_u32(b, type), bb_i32(b, (int32_t)ne0);
        if (n_dims == 2)
            bb_i32(b, (int32_t)ne1);
        bb_raw(b, t[i].name, strlen(t[i].name));
        for (int64_t k = 0; k < bytes; k++)
            bb_u8(b, t[i].kind != 'q' ? 0 : first_block ? first_block[k % qbytes] : (uint8_t)(k * 7));
    }
}
static inline void sample_ggml_example(bb *b, int arch, int E, int32_t ftype, uint32_t qtype, int qblock,
                                       int qbytes, const uint8_t *first_block) {
    sample_ggml_example_first(b, arch, E, ftype, qtype, qblock, qbytes, first_block, -1);
}

/* ---- k-quant files of a QK_K = 64 build ------------------------------- */
static inline uint16_t sample_f16_of(float f) { /* exact for the few values used here */
    return f == 0.5f ? 0x3800 : f == 0.25f ? 0x3400 : f == 1.0f ? 0x3c00 : f == 2.0f ? 0x4000 : 0;
}

/* Q4_K of a GGML_QKK_64 build, formats.md 3.7: {f16 d[2]; u8 scales[2];
 * u8 qs[32]}, 64 values: scale/min nibbles of scales[0] for the low
 * nibbles (first 32 values), of scales[1] for the high ones. */
static inline void sample_qk64_q4k_block(uint8_t *blk, float *want) {
    uint16_t d = sample_f16_of(0.5f), m = sample_f16_of(0.25f);
    memcpy(blk, &d, 2), memcpy(blk + 2, &m, 2);
    blk[4] = 3 | 2 << 4, blk[5] = 5 | 1 << 4;
    for (int l = 0; l < 32; l++) {
        blk[6 + l] = (uint8_t)((l & 15) | ((15 - (l & 15)) << 4));
        want[l] = 0.5f * 3.0f * (float)(l & 15) - 0.25f * 2.0f;
        want[l + 32] = 0.5f * 5.0f * (float)(15 - (l & 15)) - 0.25f * 1.0f;
    }
}

/* A one-layer GGJT v3 llama of width E whose wq [E, 2] is a k-quant of
 * on-disk type code with `bytes` of data: blk (blk_bytes long) repeated. */
static inline void sample_ggjt3_kquant(bb *b, int E, uint32_t code, const uint8_t *blk, int blk_bytes, int bytes) {
    bb_u32(b, 0x67676a74u), bb_u32(b, 3);
    uint32_t hp[7] = {3, (uint32_t)E, 8, 2, 1, (uint32_t)E / 2, 15};
    for (int i = 0; i < 7; i++)
        bb_u32(b, hp[i]);
    for (int i = 0; i < 3; i++)
        bb_u32(b, 1), bb_u8(b, (uint8_t)('a' + i)), bb_f32(b, 0.0f);
    const char *names[12] = {"tok_embeddings.weight", "norm.weight", "output.weight",
                             "layers.0.attention.wq.weight", "layers.0.attention.wk.weight",
                             "layers.0.attention.wv.weight", "layers.0.attention.wo.weight",
                             "layers.0.attention_norm.weight", "layers.0.ffn_norm.weight",
                             "layers.0.feed_forward.w1.weight", "layers.0.feed_forward.w2.weight",
                             "layers.0.feed_forward.w3.weight"};
    for (int i = 0; i < 12; i++) {
        bool q = i == 3;
        bb_i32(b, q ? 2 : 1), bb_i32(b, (int32_t)strlen(names[i])), bb_u32(b, q ? code : 0), bb_i32(b, E);
        if (q)
            bb_i32(b, 2);
        bb_raw(b, names[i], strlen(names[i]));
        bb_pad_to(b, 32);
        if (q)
            for (int k = 0; k < bytes; k++)
                bb_u8(b, blk[k % blk_bytes]);
        else
            bb_zeros(b, (size_t)E * 4);
    }
}

/* ---- pickles (PyTorch) ------------------------------------------------ */
/* Pickle protocol 2 as torch.save writes a state dict, from the pickle
 * opcode table: OrderedDict, _rebuild_tensor_v2 and a FloatStorage
 * persistent id ('storage', type, key, 'cpu', numel). */
static inline void sp_op(bb *b, uint8_t o) { bb_u8(b, o); }
static inline void sp_str(bb *b, const char *s) { /* BINUNICODE */
    sp_op(b, 'X'), bb_u32(b, (uint32_t)strlen(s)), bb_raw(b, s, strlen(s));
}
static inline void sp_global(bb *b, const char *module, const char *name) {
    sp_op(b, 'c'), bb_raw(b, module, strlen(module)), sp_op(b, '\n'), bb_raw(b, name, strlen(name)), sp_op(b, '\n');
}
static inline void sp_int1(bb *b, int v) { sp_op(b, 'K'), sp_op(b, (uint8_t)v); }

/* A state dict {name: tensor(storage key, numel, offset, size[2], stride[2])}. */
static inline void sample_pickle_state_dict(bb *b, const char *name, const char *key, int numel, int offset, const int size[2],
                       const int stride[2]) {
    sp_op(b, 0x80), sp_op(b, 2);
    sp_global(b, "collections", "OrderedDict"), sp_op(b, ')'), sp_op(b, 'R');
    sp_op(b, 'q'), sp_op(b, 0);
    sp_op(b, '(');
    sp_str(b, name);
    sp_global(b, "torch._utils", "_rebuild_tensor_v2");
    sp_op(b, '(');
    sp_op(b, '('), sp_str(b, "storage"), sp_global(b, "torch", "FloatStorage"), sp_str(b, key), sp_str(b, "cpu"), sp_int1(b, numel),
        sp_op(b, 't');
    sp_op(b, 'Q');
    sp_int1(b, offset);
    sp_int1(b, size[0]), sp_int1(b, size[1]), sp_op(b, 0x86);
    sp_int1(b, stride[0]), sp_int1(b, stride[1]), sp_op(b, 0x86);
    sp_op(b, 0x89);
    sp_global(b, "collections", "OrderedDict"), sp_op(b, ')'), sp_op(b, 'R');
    sp_op(b, 't');
    sp_op(b, 'R');
    sp_op(b, 'u');
    sp_op(b, '.');
}


/* The legacy (non-zip) torch.save stream of that state dict: magic,
 * protocol 1001, sys_info, the state dict, the key list ['0'], then the
 * storage: i64 element count and the 6 floats 0..5. */
static inline void sample_pytorch_legacy(bb *b) {
    static const uint8_t magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    sp_op(b, 0x80), sp_op(b, 2), sp_op(b, 0x8a), sp_op(b, 10), bb_raw(b, magic, 10), sp_op(b, '.');
    sp_op(b, 0x80), sp_op(b, 2), sp_op(b, 'M'), bb_u16(b, 1001), sp_op(b, '.');
    sp_op(b, 0x80), sp_op(b, 2), sp_op(b, '}'), sp_str(b, "little_endian"), sp_op(b, 0x88), sp_op(b, 's'), sp_op(b, '.');
    const int size[2] = {3, 2}, stride[2] = {2, 1};
    sample_pickle_state_dict(b, "w", "0", 6, 0, size, stride);
    sp_op(b, 0x80), sp_op(b, 2), sp_op(b, ']'), sp_str(b, "0"), sp_op(b, 'a'), sp_op(b, '.');
    bb_u64(b, 6);
    for (int i = 0; i < 6; i++)
        bb_f32(b, (float)i);
}

#endif
