/* Writes the small sample files of every format into a folder: the seed
 * corpus of the fuzz targets (.ci/fuzz).  A third folder gets the sets of
 * files fuzz_split_set reads (its input layout is described there), a
 * fourth the Hugging Face folders fuzz_hf_folder reads, a fifth ONNX
 * models for fuzz_onnx (float, external data, MatMulNBits and QDQ). */
#include <stdio.h>

#include "gguf_big_endian.h"
#include "sample_files.h"
#include "split_files.h"

/* Appends one file of a fuzz_split_set input: u32 length, bytes. */
static void set_file(bb *set, bb *file) {
    bb_u32(set, (uint32_t)file->n);
    bb_raw(set, file->p, file->n);
    bb_free(file);
}

static void safetensors_file(bb *b, const char *name) {
    char st[256];
    snprintf(st, sizeof st, "{\"%s\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]}}", name);
    bb_u64(b, strlen(st));
    bb_raw(b, st, strlen(st));
    for (int i = 0; i < 4; i++)
        bb_f32(b, (float)i);
}

static int split_seeds(const char *dir, int (*save)(const char *, const char *, bb *)) {
    static const char *const names[5] = {"token_embd.weight", "output_norm.weight", "output.weight", "blk.0.attn_q.weight",
                                         "blk.0.attn_k.weight"};
    static const int first[4] = {0, 2, 3, 5};
    int rc = 0;
    for (unsigned open_k = 0; open_k < 3; open_k += 2) {
        bb set = {0}, f = {0};
        bb_u8(&set, (uint8_t)(2 | open_k << 2)); /* 3 files, open part open_k */
        for (int k = 0; k < 3; k++) {
            sample_split_part(&f, (uint16_t)k, 3, 5, names + first[k], first[k + 1] - first[k], k == 0, 2, (float)k);
            set_file(&set, &f);
        }
        rc |= save(dir, open_k ? "gguf-split-open-3" : "gguf-split-open-1", &set);
    }
    bb set = {0}, f = {0};
    bb_u8(&set, 0x80 | 2); /* safetensors, 3 files, open the folder */
    const char *idx = "{\"metadata\": {\"total_size\": 32}, \"weight_map\": {\"model.norm.weight\": \"s1.safetensors\", "
                      "\"lm_head.weight\": \"s2.safetensors\"}}";
    bb_raw(&f, idx, strlen(idx));
    set_file(&set, &f);
    safetensors_file(&f, "model.norm.weight");
    set_file(&set, &f);
    safetensors_file(&f, "lm_head.weight");
    set_file(&set, &f);
    rc |= save(dir, "safetensors-sharded", &set);
    return rc;
}

/* fuzz_hf_folder's inputs: config.json, tokenizer.json,
 * tokenizer_config.json, model.safetensors, tokenizer.model (each u32
 * length, bytes; length 0: absent). */
static void hf_file(bb *set, const char *text) {
    bb f = {0};
    bb_raw(&f, text, strlen(text));
    set_file(set, &f);
}

static int hf_seeds(const char *dir, int (*save)(const char *, const char *, bb *)) {
    static const char *const seeds[][4] = {
        {"{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4, \"num_hidden_layers\": 1, "
         "\"num_attention_heads\": 2, \"vocab_size\": 8}",
         "{\"added_tokens\": [{\"id\": 0, \"content\": \"<unk>\", \"special\": true}, {\"id\": 1, "
         "\"content\": \"<s>\", \"special\": true}], \"normalizer\": {\"type\": \"Sequence\", \"normalizers\": "
         "[{\"type\": \"Prepend\", \"prepend\": \"\u2581\"}]}, \"model\": {\"type\": \"BPE\", \"byte_fallback\": "
         "true, \"vocab\": {\"<unk>\": 0, \"<s>\": 1, \"<0x41>\": 2, \"\u2581\": 3, \"a\": 4, \"b\": 5, "
         "\"ab\": 6, \"\u2581ab\": 7}, \"merges\": [\"a b\", \"\u2581 ab\"]}}",
         "{\"bos_token\": \"<s>\", \"unk_token\": \"<unk>\", \"add_bos_token\": true, \"chat_template\": "
         "\"{{ messages }}\"}",
         NULL},
        {"{\"architectures\": [\"GPT2LMHeadModel\"], \"n_embd\": 4, \"n_layer\": 1, \"n_head\": 2, "
         "\"n_positions\": 8}",
         "{\"added_tokens\": [{\"id\": 5, \"content\": \"<|endoftext|>\", \"special\": true}], "
         "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"use_regex\": true}, \"model\": {\"type\": \"BPE\", "
         "\"vocab\": {\"H\": 0, \"e\": 1, \"He\": 2, \"\u0120\": 3, \"\u0120He\": 4}, \"merges\": [[\"H\", "
         "\"e\"], \"\u0120 He\"]}}",
         "{\"eos_token\": {\"content\": \"<|endoftext|>\"}}", NULL},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        bb set = {0}, st = {0};
        for (int k = 0; k < 3; k++)
            hf_file(&set, seeds[i][k]);
        const char *name = i == 0 ? "model.norm.weight" : "transformer.ln_f.weight";
        char hdr[160];
        snprintf(hdr, sizeof hdr, "{\"%s\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}", name);
        bb_u64(&st, strlen(hdr));
        bb_raw(&st, hdr, strlen(hdr));
        for (int k = 0; k < 4; k++)
            bb_f32(&st, 1.0f);
        set_file(&set, &st);
        rc |= save(dir, i == 0 ? "hf-llama-spm" : "hf-gpt2-bpe", &set);
    }
    /* SentencePiece's tokenizer.model instead of tokenizer.json: pieces
     * {1 text, 2 score, 3 type} <unk> (unknown), <s> </s> (control),
     * U+2581 "a", "b", then a normalizer spec */
    static const uint8_t spm[] = {
        0x0a, 0x0e, 0x0a, 0x05, '<', 'u', 'n', 'k', '>', 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x02,
        0x0a, 0x0c, 0x0a, 0x03, '<', 's', '>', 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03,
        0x0a, 0x0d, 0x0a, 0x04, '<', '/', 's', '>', 0x15, 0x00, 0x00, 0x00, 0x00, 0x18, 0x03,
        0x0a, 0x0d, 0x0a, 0x04, 0xe2, 0x96, 0x81, 'a', 0x15, 0x00, 0x00, 0x80, 0xbf, 0x18, 0x01,
        0x0a, 0x0a, 0x0a, 0x01, 'b', 0x15, 0x00, 0x00, 0x00, 0xc0, 0x18, 0x01,
        0x1a, 0x06, 0x0a, 0x04, 'n', 'm', 'f', 'c'};
    bb set = {0}, none = {0}, model = {0};
    hf_file(&set, "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4, \"num_hidden_layers\": 1, "
                  "\"num_attention_heads\": 2, \"vocab_size\": 6, \"bos_token_id\": 1, \"eos_token_id\": 2}");
    set_file(&set, &none);
    hf_file(&set, "{\"add_bos_token\": true, \"added_tokens_decoder\": {\"5\": {\"content\": \"<|x|>\", "
                  "\"special\": true}}}");
    bb st = {0};
    const char *hdr = "{\"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}";
    bb_u64(&st, strlen(hdr));
    bb_raw(&st, hdr, strlen(hdr));
    for (int k = 0; k < 4; k++)
        bb_f32(&st, 1.0f);
    set_file(&set, &st);
    bb_raw(&model, spm, sizeof spm);
    set_file(&set, &model);
    rc |= save(dir, "hf-llama-spm-model", &set);
    /* gpt-oss with MXFP4 experts: U8 *_blocks [1, rows, 1, 16] and
     * *_scales [1, rows, 1] (hf_mxfp4.c), no tokenizer */
    bb mx = {0}, nothing = {0};
    hf_file(&mx, "{\"architectures\": [\"GptOssForCausalLM\"], \"hidden_size\": 32, \"num_hidden_layers\": 1, "
                 "\"num_attention_heads\": 2, \"num_local_experts\": 1, \"num_experts_per_tok\": 1, "
                 "\"intermediate_size\": 32, \"sliding_window\": 8, \"quantization_config\": "
                 "{\"quant_method\": \"mxfp4\"}}");
    set_file(&mx, &nothing);
    set_file(&mx, &nothing);
    char mh[1024];
    snprintf(mh, sizeof mh,
             "{\"model.layers.0.mlp.experts.down_proj_blocks\": {\"dtype\": \"U8\", \"shape\": [1, 32, 1, 16], "
             "\"data_offsets\": [0, 512]}, \"model.layers.0.mlp.experts.down_proj_scales\": {\"dtype\": \"U8\", "
             "\"shape\": [1, 32, 1], \"data_offsets\": [512, 544]}, \"model.layers.0.mlp.experts.gate_up_proj_blocks\": "
             "{\"dtype\": \"U8\", \"shape\": [1, 64, 1, 16], \"data_offsets\": [544, 1568]}, "
             "\"model.layers.0.mlp.experts.gate_up_proj_scales\": {\"dtype\": \"U8\", \"shape\": [1, 64, 1], "
             "\"data_offsets\": [1568, 1632]}}");
    bb mst = {0};
    bb_u64(&mst, strlen(mh));
    bb_raw(&mst, mh, strlen(mh));
    for (int k = 0; k < 1632; k++)
        bb_u8(&mst, (uint8_t)(k < 512 || (k >= 544 && k < 1568) ? k * 37 : 120 + k % 8));
    set_file(&mx, &mst);
    rc |= save(dir, "hf-gptoss-mxfp4", &mx);
    return rc;
}

/* ---- protobuf, for the ONNX seeds ---- */
static void pb_varint(bb *b, uint64_t v) {
    while (v >= 0x80) {
        bb_u8(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    bb_u8(b, (uint8_t)v);
}
static void pb_bytes(bb *b, uint32_t field, const void *p, size_t n) {
    pb_varint(b, (uint64_t)field << 3 | 2);
    pb_varint(b, n);
    bb_raw(b, p, n);
}
static void pb_str(bb *b, uint32_t field, const char *s) { pb_bytes(b, field, s, strlen(s)); }
static void pb_int(bb *b, uint32_t field, uint64_t v) {
    pb_varint(b, (uint64_t)field << 3);
    pb_varint(b, v);
}
static void pb_msg(bb *b, uint32_t field, bb *m) {
    pb_bytes(b, field, m->p, m->n);
    bb_free(m);
}

/* A ModelProto with a Gather and a MatMul over raw, float_data and
 * external initializers (the last refused from memory). */
static void onnx_seed(bb *out, bool external) {
    bb g = {0}, n = {0}, t = {0}, e = {0}, o = {0};
    pb_str(&n, 1, "model.embed_tokens.weight");
    pb_str(&n, 1, "ids");
    pb_str(&n, 2, "h");
    pb_str(&n, 3, "/model/embed_tokens/Gather");
    pb_str(&n, 4, "Gather");
    pb_msg(&g, 1, &n);
    pb_str(&n, 1, "h");
    pb_str(&n, 1, "onnx::MatMul_1");
    pb_str(&n, 2, "y");
    pb_str(&n, 3, "/model/layers.0/self_attn/q_proj/MatMul");
    pb_str(&n, 4, "MatMul");
    pb_msg(&g, 1, &n);
    float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    pb_int(&t, 1, 4);
    pb_int(&t, 1, 2);
    pb_int(&t, 2, 1);
    pb_str(&t, 8, "model.embed_tokens.weight");
    pb_bytes(&t, 9, w, sizeof w);
    pb_msg(&g, 5, &t);
    pb_int(&t, 1, 2);
    pb_int(&t, 1, 2);
    pb_int(&t, 2, 1);
    pb_str(&t, 8, "onnx::MatMul_1");
    if (external) {
        pb_str(&e, 1, "location");
        pb_str(&e, 2, "model.onnx.data");
        pb_msg(&t, 13, &e);
        pb_str(&e, 1, "offset");
        pb_str(&e, 2, "0");
        pb_msg(&t, 13, &e);
        pb_str(&e, 1, "length");
        pb_str(&e, 2, "16");
        pb_msg(&t, 13, &e);
        pb_int(&t, 14, 1);
    } else
        pb_bytes(&t, 4, w, 16); /* packed float_data */
    pb_msg(&g, 5, &t);
    pb_int(&t, 1, 2);
    pb_int(&t, 2, 1);
    pb_str(&t, 8, "model.norm.weight");
    pb_bytes(&t, 9, w, 8);
    pb_msg(&g, 5, &t);
    pb_str(&e, 1, "ids");
    pb_msg(&g, 11, &e);
    pb_int(out, 1, 8);
    pb_str(out, 2, "seed");
    pb_msg(out, 7, &g);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 17);
    pb_msg(out, 8, &o);
}

static void pb_attr(bb *node, const char *name, uint64_t v) {
    bb a = {0};
    pb_str(&a, 1, name);
    pb_int(&a, 3, v);
    pb_int(&a, 20, 2); /* AttributeProto.INT */
    pb_msg(node, 5, &a);
}

static void pb_init(bb *g, const char *name, int32_t type, const int64_t *dims, int n_dims, const void *p, size_t n) {
    bb t = {0};
    for (int i = 0; i < n_dims; i++)
        pb_int(&t, 1, (uint64_t)dims[i]);
    pb_int(&t, 2, (uint64_t)type);
    pb_str(&t, 8, name);
    pb_bytes(&t, 9, p, n);
    pb_msg(g, 5, &t);
}

/* Block-quantized weights: a MatMulNBits (4-bit, block 32, f16 scales,
 * packed zero points, a bias) and an INT4 DequantizeLinear in blocks of
 * 32 feeding a MatMul, beside a float embedding. */
static void onnx_quant_seed(bb *out) {
    bb g = {0}, n = {0}, o = {0}, e = {0};
    float emb[64];
    uint8_t b[32], zp[2] = {0x07, 0x09}, x[32];
    uint16_t sc[2] = {0x3c00, 0x3800}; /* f16 1.0, 0.5 */
    float bias[2] = {0.25f, -1.0f}, dq_scale[2] = {0.125f, 2.0f};
    for (int i = 0; i < 64; i++)
        emb[i] = (float)i / 8.0f;
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(i * 37), x[i] = (uint8_t)(i * 11 + 3);
    pb_str(&n, 1, "model.embed_tokens.weight");
    pb_str(&n, 1, "ids");
    pb_str(&n, 2, "h");
    pb_str(&n, 3, "/model/embed_tokens/Gather");
    pb_str(&n, 4, "Gather");
    pb_msg(&g, 1, &n);
    static const char *const nb_in[] = {"h", "model.layers.0.attn.q_proj.MatMul.weight_Q4",
                                        "model.layers.0.attn.q_proj.MatMul.weight_scales",
                                        "model.layers.0.attn.q_proj.MatMul.weight_zero_points", "", "q_bias"};
    for (int i = 0; i < 6; i++)
        pb_str(&n, 1, nb_in[i]);
    pb_str(&n, 2, "q");
    pb_str(&n, 3, "/model/layers.0/attn/q_proj/MatMul_Q4");
    pb_str(&n, 4, "MatMulNBits");
    pb_attr(&n, "K", 32);
    pb_attr(&n, "N", 2);
    pb_attr(&n, "bits", 4);
    pb_attr(&n, "block_size", 32);
    pb_attr(&n, "accuracy_level", 4);
    pb_str(&n, 7, "com.microsoft");
    pb_msg(&g, 1, &n);
    pb_str(&n, 1, "k_q");
    pb_str(&n, 1, "k_scale");
    pb_str(&n, 2, "k_w");
    pb_str(&n, 3, "/model/layers.0/self_attn/k_proj/DequantizeLinear");
    pb_str(&n, 4, "DequantizeLinear");
    pb_attr(&n, "axis", 0);
    pb_attr(&n, "block_size", 32);
    pb_msg(&g, 1, &n);
    pb_str(&n, 1, "h");
    pb_str(&n, 1, "k_w");
    pb_str(&n, 2, "k");
    pb_str(&n, 3, "/model/layers.0/self_attn/k_proj/MatMul");
    pb_str(&n, 4, "MatMul");
    pb_msg(&g, 1, &n);
    const int64_t d_emb[2] = {2, 32}, d_b[3] = {2, 1, 16}, d_2[1] = {2}, d_x[2] = {32, 2}, d_s[2] = {1, 2};
    pb_init(&g, "model.embed_tokens.weight", 1, d_emb, 2, emb, sizeof emb);
    pb_init(&g, nb_in[1], 2, d_b, 3, b, sizeof b);
    pb_init(&g, nb_in[2], 10, d_2, 1, sc, sizeof sc);
    pb_init(&g, nb_in[3], 2, d_2, 1, zp, sizeof zp);
    pb_init(&g, "q_bias", 1, d_2, 1, bias, sizeof bias);
    pb_init(&g, "k_q", 22, d_x, 2, x, sizeof x);
    pb_init(&g, "k_scale", 1, d_s, 2, dq_scale, sizeof dq_scale);
    pb_str(&e, 1, "ids");
    pb_msg(&g, 11, &e);
    pb_int(out, 1, 10);
    pb_str(out, 2, "seed");
    pb_msg(out, 7, &g);
    pb_str(&o, 1, "");
    pb_int(&o, 2, 21);
    pb_msg(out, 8, &o);
    pb_str(&o, 1, "com.microsoft");
    pb_int(&o, 2, 1);
    pb_msg(out, 8, &o);
}

static int save(const char *dir, const char *name, bb *b) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, b->n, f) != b->n) {
        perror(path);
        return 1;
    }
    fclose(f);
    bb_free(b);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 6) {
        fprintf(stderr, "usage: fuzz_make_seeds DIR [PICKLE_DIR [SPLIT_SET_DIR [HF_FOLDER_DIR [ONNX_DIR]]]]\n");
        return 2;
    }
    int rc = 0;
    bb b = {0};
    char name[64];
    for (int v = 1; v <= 3; v++) {
        sample_gguf(&b, v);
        snprintf(name, sizeof name, "gguf-v%d", v);
        rc |= save(argv[1], name, &b);
    }
    sample_gguf(&b, 3);
    rc |= !gguf_to_big_endian(b.p, b.n);
    rc |= save(argv[1], "gguf-v3-big-endian", &b);
    for (int v = 0; v <= 2; v++) {
        sample_llama2c(&b, v);
        snprintf(name, sizeof name, "llama2c-v%d", v);
        rc |= save(argv[1], name, &b);
    }
    const struct { const char *name; uint32_t magic, version; } legacy[] = {
        {"ggml", 0x67676d6cu, 0}, {"ggmf-v1", 0x67676d66u, 1}, {"ggjt-v1", 0x67676a74u, 1},
        {"ggjt-v2", 0x67676a74u, 2}, {"ggjt-v3", 0x67676a74u, 3}};
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++) {
        sample_legacy(&b, legacy[i].magic, legacy[i].version);
        rc |= save(argv[1], legacy[i].name, &b);
    }
    const struct { const char *name; int arch; int32_t ftype; int bytes; } examples[] = {
        {"ggml-gpt2-qnt0", SAMPLE_GPT2, 2, 20},           {"ggml-gptj-qnt1", SAMPLE_GPTJ, 1002, 20},
        {"ggml-gptneox-qnt2", SAMPLE_NEOX, 2002, 18},     {"ggml-starcoder-qnt1", SAMPLE_STARCODER, 1002, 20},
        {"ggml-mpt-qnt2", SAMPLE_MPT, 2002, 18}};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        sample_ggml_example(&b, examples[i].arch, 32, examples[i].ftype, 2, 32, examples[i].bytes, NULL);
        rc |= save(argv[1], examples[i].name, &b);
    }
    uint8_t blk[38];
    float want[64];
    sample_qk64_q4k_block(blk, want);
    sample_ggjt3_kquant(&b, 64, 12, blk, 38, 2 * 38);
    rc |= save(argv[1], "ggjt-v3-qk64", &b);
    const char *st = "{\"__metadata__\": {}, \"model.norm.weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], "
                     "\"data_offsets\": [0, 16]}}";
    bb_u64(&b, strlen(st));
    bb_raw(&b, st, strlen(st));
    bb_zeros(&b, 16);
    rc |= save(argv[1], "safetensors", &b);
    /* a U8 tensor (MXFP4 blocks), refused without config.json */
    st = "{\"model.layers.0.mlp.experts.down_proj_blocks\": {\"dtype\": \"U8\", \"shape\": [1, 1, 1, 16], "
         "\"data_offsets\": [0, 16]}}";
    bb_u64(&b, strlen(st));
    bb_raw(&b, st, strlen(st));
    bb_zeros(&b, 16);
    rc |= save(argv[1], "safetensors-u8", &b);
    sample_pytorch_legacy(&b);
    rc |= save(argv[1], "pytorch-legacy", &b);
    /* one file of a split set and an index: their own checks run even
     * from memory (the siblings cannot be read there) */
    static const char *const two[2] = {"token_embd.weight", "output_norm.weight"};
    sample_split_part(&b, 0, 2, 3, two, 2, true, 2, 0.0f);
    rc |= save(argv[1], "gguf-split-part", &b);
    const char *index = "{\"metadata\": {}, \"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\", "
                        "\"lm_head.weight\": \"model-00002-of-00002.safetensors\"}}";
    bb_raw(&b, index, strlen(index));
    rc |= save(argv[1], "safetensors-index", &b);
    if (argc > 3)
        rc |= split_seeds(argv[3], save);
    if (argc > 4)
        rc |= hf_seeds(argv[4], save);
    onnx_seed(&b, false);
    rc |= save(argv[1], "onnx-model", &b);
    if (argc > 5) { /* fuzz_onnx's corpus */
        onnx_seed(&b, false);
        rc |= save(argv[5], "onnx-inline", &b);
        onnx_seed(&b, true);
        rc |= save(argv[5], "onnx-external", &b);
        onnx_quant_seed(&b);
        rc |= save(argv[5], "onnx-matmulnbits", &b);
    }
    if (argc > 2) { /* the pickle target's corpus: a state dict pickle */
        const int size[2] = {3, 2}, stride[2] = {1, 3};
        sample_pickle_state_dict(&b, "model.layers.0.self_attn.q_proj.weight", "0", 6, 0, size, stride);
        rc |= save(argv[2], "state-dict", &b);
        sample_pytorch_legacy(&b);
        rc |= save(argv[2], "legacy-stream", &b);
    }
    return rc;
}
