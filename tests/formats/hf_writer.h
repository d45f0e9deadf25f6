/* Writing Hugging Face folders in tests (test_formats_hf_folder.c,
 * test_formats_onnx.c): config and tokenizer JSON with cJSON, safetensors,
 * and the layouts Hugging Face stores (rotate-half q/k, Conv1D). */
#ifndef TPORT_TESTS_HF_WRITER_H
#define TPORT_TESTS_HF_WRITER_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/model_file.h"
#include "tport/tport.h"
#include "../test_util.h"

static char dir[256];

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL, "open %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void write_json(const char *folder, const char *name, cJSON *j) {
    char path[512], *text = cJSON_PrintUnformatted(j);
    snprintf(path, sizeof path, "%s/%s", folder, name);
    write_text(path, text);
    free(text);
    cJSON_Delete(j);
}

/* ---- safetensors --------------------------------------------------------------- */
typedef struct st_tensor {
    char name[96];
    const char *dtype;
    int n_dims;
    int64_t shape[4]; /* outermost first */
    const void *data;
    size_t nbytes;
} st_tensor;

static void write_safetensors(const char *path, const st_tensor *t, int n) {
    cJSON *h = cJSON_CreateObject();
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_AddObjectToObject(h, t[i].name);
        cJSON_AddStringToObject(e, "dtype", t[i].dtype);
        cJSON *s = cJSON_AddArrayToObject(e, "shape");
        for (int d = 0; d < t[i].n_dims; d++)
            cJSON_AddItemToArray(s, cJSON_CreateNumber((double)t[i].shape[d]));
        cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
        cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + t[i].nbytes)));
        off += t[i].nbytes;
    }
    char *text = cJSON_PrintUnformatted(h);
    size_t len = strlen(text), padded = (len + 7) & ~(size_t)7;
    FILE *f = fopen(path, "wb");
    uint64_t hl = padded;
    fwrite(&hl, 8, 1, f);
    fwrite(text, 1, len, f);
    for (size_t i = len; i < padded; i++)
        fputc(' ', f);
    for (int i = 0; i < n; i++)
        fwrite(t[i].data, 1, t[i].nbytes, f);
    fclose(f);
    free(text);
    cJSON_Delete(h);
}

static const char *dtype_of(tport_type_id t) {
    return t == TPORT_TYPE_F32 ? "F32" : t == TPORT_TYPE_F16 ? "F16" : t == TPORT_TYPE_BF16 ? "BF16" : NULL;
}

/* GGUF q/k rows back into Hugging Face's rotate-half order (the inverse
 * of the reader's un-permutation). */
static void *permute_rows(const tport_mf_tensor *t, int n_head) {
    int64_t rows = t->ne[1], hd = rows / n_head;
    size_t row_bytes = t->nbytes / (size_t)rows;
    uint8_t *dst = malloc(t->nbytes);
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, rem = r % hd, i = rem / 2, j = rem % 2;
        memcpy(dst + (size_t)(h * hd + j * (hd / 2) + i) * row_bytes, (const uint8_t *)t->data + (size_t)r * row_bytes,
               row_bytes);
    }
    return dst;
}

static void *transpose(const tport_mf_tensor *t) {
    size_t es = t->nbytes / (size_t)(t->ne[0] * t->ne[1]);
    uint8_t *dst = malloc(t->nbytes);
    for (int64_t i = 0; i < t->ne[1]; i++)
        for (int64_t j = 0; j < t->ne[0]; j++)
            memcpy(dst + (size_t)(j * t->ne[1] + i) * es, (const uint8_t *)t->data + (size_t)(i * t->ne[0] + j) * es, es);
    return dst;
}

/* ---- tokenizer.json ------------------------------------------------------------ */
static const char *LLAMA3_RE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
                               "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char *QWEN2_RE = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+"
                              "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

typedef struct merge {
    int32_t l, r, piece;
} merge;
static const tport_vocab *sort_vocab;
static int cmp_str_id(const void *a, const void *b) {
    return strcmp(sort_vocab->tokens[*(const int32_t *)a], sort_vocab->tokens[*(const int32_t *)b]);
}
static int32_t *sorted_ids;
static int32_t find_tok(const tport_vocab *v, const char *s) {
    int32_t lo = 0, hi = v->n_tokens - 1;
    while (lo <= hi) {
        int32_t mid = (lo + hi) / 2, c = strcmp(v->tokens[sorted_ids[mid]], s);
        if (!c)
            return sorted_ids[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}
static int cmp_merge(const void *a, const void *b) {
    const merge *x = a, *y = b;
    float sx = sort_vocab->scores[x->piece], sy = sort_vocab->scores[y->piece];
    if (sx != sy)
        return sx > sy ? -1 : 1;
    if (x->piece != y->piece)
        return x->piece < y->piece ? -1 : 1;
    return x->l != y->l ? (x->l < y->l ? -1 : 1) : (x->r < y->r ? -1 : x->r > y->r);
}

/* SentencePiece merges as transformers' SentencePieceExtractor derives
 * them: every split of a piece into two pieces, ordered by the piece's
 * score (then ids). */
static void spm_merges(const tport_vocab *v, cJSON *out) {
    sort_vocab = v;
    sorted_ids = malloc((size_t)v->n_tokens * sizeof *sorted_ids);
    for (int32_t i = 0; i < v->n_tokens; i++)
        sorted_ids[i] = i;
    qsort(sorted_ids, (size_t)v->n_tokens, sizeof *sorted_ids, cmp_str_id);
    size_t n = 0, cap = 1 << 16;
    merge *m = malloc(cap * sizeof *m);
    char buf[512];
    for (int32_t id = 0; id < v->n_tokens; id++) {
        const char *s = v->tokens[id];
        size_t len = strlen(s);
        if (v->token_type[id] != 1 || len >= sizeof buf)
            continue;
        for (size_t k = 1; k < len; k++) {
            if (((unsigned char)s[k] & 0xC0) == 0x80)
                continue;
            memcpy(buf, s, k);
            buf[k] = '\0';
            int32_t l = find_tok(v, buf), r = find_tok(v, s + k);
            if (l < 0 || r < 0)
                continue;
            if (n == cap)
                m = realloc(m, (cap *= 2) * sizeof *m);
            m[n++] = (merge){l, r, id};
        }
    }
    qsort(m, n, sizeof *m, cmp_merge);
    for (size_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, "%s %s", v->tokens[m[i].l], v->tokens[m[i].r]);
        cJSON_AddItemToArray(out, cJSON_CreateString(buf));
    }
    free(m);
    free(sorted_ids);
}

/* tokenizer.json + tokenizer_config.json for the vocabulary of `gguf`:
 * `pre` is "gpt-2", "llama-bpe", "qwen2" or "spm". */
static void write_tokenizer(const char *folder, const tport_model_file *g, const char *pre) {
    const tport_vocab *v = &g->vocab;
    bool spm = !strcmp(pre, "spm");
    cJSON *root = cJSON_CreateObject(), *added = cJSON_AddArrayToObject(root, "added_tokens");
    cJSON *model = cJSON_AddObjectToObject(root, "model"), *vocab;
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddBoolToObject(model, "byte_fallback", spm);
    cJSON_AddBoolToObject(model, "ignore_merges", !strcmp(pre, "llama-bpe"));
    vocab = cJSON_AddObjectToObject(model, "vocab");
    for (int32_t i = 0; i < v->n_tokens; i++) {
        int32_t tt = v->token_type ? v->token_type[i] : 1;
        if (tt == 3 || tt == 4 || (spm && tt == 2)) {
            cJSON *a = cJSON_CreateObject();
            cJSON_AddNumberToObject(a, "id", i);
            cJSON_AddStringToObject(a, "content", v->tokens[i]);
            cJSON_AddBoolToObject(a, "special", tt != 4);
            cJSON_AddBoolToObject(a, "normalized", false);
            cJSON_AddItemToArray(added, a);
            if (!spm)
                continue; /* SentencePiece's specials are pieces too */
        }
        cJSON_AddNumberToObject(vocab, v->tokens[i], i);
    }
    cJSON *merges = cJSON_AddArrayToObject(model, "merges");
    if (spm) {
        spm_merges(v, merges);
        cJSON *norm = cJSON_AddObjectToObject(root, "normalizer"), *seq;
        cJSON_AddStringToObject(norm, "type", "Sequence");
        seq = cJSON_AddArrayToObject(norm, "normalizers");
        cJSON *p = cJSON_CreateObject(), *r = cJSON_CreateObject();
        cJSON_AddStringToObject(p, "type", "Prepend");
        cJSON_AddStringToObject(p, "prepend", "\xe2\x96\x81");
        cJSON_AddStringToObject(r, "type", "Replace");
        cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "pattern"), "String", " ");
        cJSON_AddStringToObject(r, "content", "\xe2\x96\x81");
        cJSON_AddItemToArray(seq, p);
        cJSON_AddItemToArray(seq, r);
        cJSON_AddNullToObject(root, "pre_tokenizer");
    } else {
        const tport_kv *mk = tport_model_file_kv(g, "tokenizer.ggml.merges");
        for (uint64_t i = 0; mk && i < mk->n_elems; i++)
            cJSON_AddItemToArray(merges, cJSON_CreateString(((char **)mk->v.arr)[i]));
        cJSON *pt = cJSON_AddObjectToObject(root, "pre_tokenizer");
        if (!strcmp(pre, "gpt-2")) {
            cJSON_AddStringToObject(pt, "type", "ByteLevel");
            cJSON_AddBoolToObject(pt, "add_prefix_space", false);
            cJSON_AddBoolToObject(pt, "use_regex", true);
        } else {
            cJSON_AddStringToObject(pt, "type", "Sequence");
            cJSON *seq = cJSON_AddArrayToObject(pt, "pretokenizers"), *split = cJSON_CreateObject(),
                  *bl = cJSON_CreateObject();
            cJSON_AddStringToObject(split, "type", "Split");
            cJSON_AddStringToObject(cJSON_AddObjectToObject(split, "pattern"), "Regex",
                                    !strcmp(pre, "qwen2") ? QWEN2_RE : LLAMA3_RE);
            cJSON_AddStringToObject(split, "behavior", "Isolated");
            cJSON_AddStringToObject(bl, "type", "ByteLevel");
            cJSON_AddBoolToObject(bl, "use_regex", false);
            cJSON_AddItemToArray(seq, split);
            cJSON_AddItemToArray(seq, bl);
        }
    }
    write_json(folder, "tokenizer.json", root);
    cJSON *tc = cJSON_CreateObject();
    if (v->bos >= 0)
        cJSON_AddStringToObject(tc, "bos_token", v->tokens[v->bos]);
    if (v->eos >= 0)
        cJSON_AddStringToObject(tc, "eos_token", v->tokens[v->eos]);
    if (v->unk >= 0)
        cJSON_AddStringToObject(tc, "unk_token", v->tokens[v->unk]);
    const tport_kv *ab = tport_model_file_kv(g, "tokenizer.ggml.add_bos_token");
    cJSON_AddBoolToObject(tc, "add_bos_token", ab ? ab->v.b : spm);
    cJSON_AddStringToObject(tc, "chat_template", "{% for m in messages %}{{ m['content'] }}{% endfor %}");
    write_json(folder, "tokenizer_config.json", tc);
}

static char *make_folder(const char *name) {
    static char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0755);
    return path;
}


/* ---- whole models ---------------------------------------------------------------- */
enum { T_PERMUTE = 1, T_TRANSPOSE = 2, T_QKV = 4, T_MINUS_ONE = 8, T_FUSED_EXPERTS = 16, T_MLA = 32, T_OSS = 64 };
typedef const char *const name_pair[2];
typedef struct arch_spec {
    const char *arch, *cls, *model_type, *layer_fmt;
    name_pair *globals, *layer; /* {GGUF name, Hugging Face name}, NULL-terminated */
    unsigned flags;
    const char *synth; /* tport synth options */
    bool llama_cpp;    /* llama.cpp runs the architecture */
} arch_spec;

static name_pair LLAMA_G[] = {{"token_embd.weight", "model.embed_tokens.weight"}, {"output_norm.weight", "model.norm.weight"},
                              {"output.weight", "lm_head.weight"}, {NULL, NULL}};
static name_pair LLAMA_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},     {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},      {"ffn_down.weight", "mlp.down_proj.weight"}, {NULL, NULL}};
static name_pair GPT2_G[] = {{"token_embd.weight", "transformer.wte.weight"}, {"position_embd.weight", "transformer.wpe.weight"},
                             {"output_norm.weight", "transformer.ln_f.weight"}, {"output_norm.bias", "transformer.ln_f.bias"},
                             {"output.weight", "lm_head.weight"}, {NULL, NULL}};
static name_pair GPT2_L[] = {
    {"attn_norm.weight", "ln_1.weight"},  {"attn_norm.bias", "ln_1.bias"},
    {"attn_qkv.weight", "attn.c_attn.weight"}, {"attn_qkv.bias", "attn.c_attn.bias"},
    {"attn_output.weight", "attn.c_proj.weight"}, {"attn_output.bias", "attn.c_proj.bias"},
    {"ffn_norm.weight", "ln_2.weight"},   {"ffn_norm.bias", "ln_2.bias"},
    {"ffn_up.weight", "mlp.c_fc.weight"}, {"ffn_up.bias", "mlp.c_fc.bias"},
    {"ffn_down.weight", "mlp.c_proj.weight"}, {"ffn_down.bias", "mlp.c_proj.bias"}, {NULL, NULL}};
static name_pair PHI2_G[] = {{"token_embd.weight", "model.embed_tokens.weight"},
                             {"output_norm.weight", "model.final_layernorm.weight"},
                             {"output_norm.bias", "model.final_layernorm.bias"},
                             {"output.weight", "lm_head.weight"}, {"output.bias", "lm_head.bias"}, {NULL, NULL}};
static name_pair PHI2_L[] = {
    {"attn_norm.weight", "input_layernorm.weight"}, {"attn_norm.bias", "input_layernorm.bias"},
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},     {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.dense.weight"}, {"attn_output.bias", "self_attn.dense.bias"},
    {"ffn_up.weight", "mlp.fc1.weight"}, {"ffn_up.bias", "mlp.fc1.bias"},
    {"ffn_down.weight", "mlp.fc2.weight"}, {"ffn_down.bias", "mlp.fc2.bias"}, {NULL, NULL}};
static name_pair NEOX_G[] = {{"token_embd.weight", "gpt_neox.embed_in.weight"},
                             {"output_norm.weight", "gpt_neox.final_layer_norm.weight"},
                             {"output_norm.bias", "gpt_neox.final_layer_norm.bias"},
                             {"output.weight", "embed_out.weight"}, {NULL, NULL}};
static name_pair NEOX_L[] = {
    {"attn_norm.weight", "input_layernorm.weight"}, {"attn_norm.bias", "input_layernorm.bias"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_norm.bias", "post_attention_layernorm.bias"},
    {"attn_qkv.weight", "attention.query_key_value.weight"}, {"attn_qkv.bias", "attention.query_key_value.bias"},
    {"attn_output.weight", "attention.dense.weight"}, {"attn_output.bias", "attention.dense.bias"},
    {"ffn_up.weight", "mlp.dense_h_to_4h.weight"}, {"ffn_up.bias", "mlp.dense_h_to_4h.bias"},
    {"ffn_down.weight", "mlp.dense_4h_to_h.weight"}, {"ffn_down.bias", "mlp.dense_4h_to_h.bias"}, {NULL, NULL}};
static name_pair BLOOM_G[] = {{"token_embd.weight", "word_embeddings.weight"},
                              {"token_embd_norm.weight", "word_embeddings_layernorm.weight"},
                              {"token_embd_norm.bias", "word_embeddings_layernorm.bias"},
                              {"output_norm.weight", "ln_f.weight"}, {"output_norm.bias", "ln_f.bias"},
                              {"output.weight", "lm_head.weight"}, {NULL, NULL}};
static name_pair BLOOM_L[] = {
    {"attn_norm.weight", "input_layernorm.weight"}, {"attn_norm.bias", "input_layernorm.bias"},
    {"attn_qkv.weight", "self_attention.query_key_value.weight"},
    {"attn_qkv.bias", "self_attention.query_key_value.bias"},
    {"attn_output.weight", "self_attention.dense.weight"}, {"attn_output.bias", "self_attention.dense.bias"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_norm.bias", "post_attention_layernorm.bias"},
    {"ffn_up.weight", "mlp.dense_h_to_4h.weight"}, {"ffn_up.bias", "mlp.dense_h_to_4h.bias"},
    {"ffn_down.weight", "mlp.dense_4h_to_h.weight"}, {"ffn_down.bias", "mlp.dense_4h_to_h.bias"}, {NULL, NULL}};
static name_pair FALCON_G[] = {{"token_embd.weight", "transformer.word_embeddings.weight"},
                               {"output_norm.weight", "transformer.ln_f.weight"},
                               {"output_norm.bias", "transformer.ln_f.bias"},
                               {"output.weight", "lm_head.weight"}, {NULL, NULL}};
static name_pair FALCON_L[] = {
    {"attn_norm.weight", "ln_mlp.weight"}, {"attn_norm.bias", "ln_mlp.bias"},
    {"attn_norm_2.weight", "ln_attn.weight"}, {"attn_norm_2.bias", "ln_attn.bias"},
    {"attn_qkv.weight", "self_attention.query_key_value.weight"},
    {"attn_output.weight", "self_attention.dense.weight"},
    {"ffn_up.weight", "mlp.dense_h_to_4h.weight"}, {"ffn_down.weight", "mlp.dense_4h_to_h.weight"}, {NULL, NULL}};
static name_pair MPT_G[] = {{"token_embd.weight", "transformer.wte.weight"}, {"position_embd.weight", "transformer.wpe.weight"},
                            {"output_norm.weight", "transformer.norm_f.weight"},
                            {"output_norm.bias", "transformer.norm_f.bias"},
                            {"output.weight", "lm_head.weight"}, {NULL, NULL}};
static name_pair MPT_L[] = {
    {"attn_norm.weight", "norm_1.weight"}, {"attn_norm.bias", "norm_1.bias"},
    {"attn_qkv.weight", "attn.Wqkv.weight"}, {"attn_qkv.bias", "attn.Wqkv.bias"},
    {"attn_output.weight", "attn.out_proj.weight"}, {"attn_output.bias", "attn.out_proj.bias"},
    {"ffn_norm.weight", "norm_2.weight"}, {"ffn_norm.bias", "norm_2.bias"},
    {"ffn_up.weight", "ffn.up_proj.weight"}, {"ffn_up.bias", "ffn.up_proj.bias"},
    {"ffn_down.weight", "ffn.down_proj.weight"}, {"ffn_down.bias", "ffn.down_proj.bias"}, {NULL, NULL}};
static name_pair GPTJ_G[] = {{"token_embd.weight", "transformer.wte.weight"},
                             {"output_norm.weight", "transformer.ln_f.weight"},
                             {"output_norm.bias", "transformer.ln_f.bias"},
                             {"output.weight", "lm_head.weight"}, {"output.bias", "lm_head.bias"}, {NULL, NULL}};
static name_pair GPTJ_L[] = {
    {"attn_norm.weight", "ln_1.weight"}, {"attn_norm.bias", "ln_1.bias"},
    {"attn_q.weight", "attn.q_proj.weight"}, {"attn_k.weight", "attn.k_proj.weight"},
    {"attn_v.weight", "attn.v_proj.weight"}, {"attn_output.weight", "attn.out_proj.weight"},
    {"ffn_up.weight", "mlp.fc_in.weight"}, {"ffn_up.bias", "mlp.fc_in.bias"},
    {"ffn_down.weight", "mlp.fc_out.weight"}, {"ffn_down.bias", "mlp.fc_out.bias"}, {NULL, NULL}};

/* issue 40's dense families */
static name_pair QWEN3_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_norm.weight", "input_layernorm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},  {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},  {NULL, NULL}};
static name_pair OLMO2_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},      {"ffn_down.weight", "mlp.down_proj.weight"}, {NULL, NULL}};
static name_pair GEMMA2_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_q_norm.weight", "self_attn.q_norm.weight"},
    {"attn_k_norm.weight", "self_attn.k_norm.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_norm.weight", "input_layernorm.weight"}, {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_norm.weight", "pre_feedforward_layernorm.weight"},
    {"post_ffw_norm.weight", "post_feedforward_layernorm.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},      {"ffn_down.weight", "mlp.down_proj.weight"}, {NULL, NULL}};

static name_pair PHI3_L[] = {
    {"attn_qkv.weight", "self_attn.qkv_proj.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_norm.weight", "input_layernorm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_up.weight", "mlp.gate_up_proj.weight"},   {"ffn_down.weight", "mlp.down_proj.weight"}, {NULL, NULL}};

/* mixtures of experts: "%d" is the expert (each expert's matrix a tensor) */
static name_pair MIXTRAL_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_norm.weight", "input_layernorm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate_inp.weight", "block_sparse_moe.gate.weight"},
    {"ffn_gate_exps.weight", "block_sparse_moe.experts.%d.w1.weight"},
    {"ffn_down_exps.weight", "block_sparse_moe.experts.%d.w2.weight"},
    {"ffn_up_exps.weight", "block_sparse_moe.experts.%d.w3.weight"}, {NULL, NULL}};
static name_pair MOE_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_q_norm.weight", "self_attn.q_norm.weight"}, {"attn_k_norm.weight", "self_attn.k_norm.weight"},
    {"attn_norm.weight", "input_layernorm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate_inp.weight", "mlp.gate.weight"},   {"ffn_gate_exps.weight", "mlp.experts.%d.gate_proj.weight"},
    {"ffn_down_exps.weight", "mlp.experts.%d.down_proj.weight"},
    {"ffn_up_exps.weight", "mlp.experts.%d.up_proj.weight"}, {NULL, NULL}};

static name_pair QWEN2MOE_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},     {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_norm.weight", "input_layernorm.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"}, {"ffn_gate_inp.weight", "mlp.gate.weight"},
    {"ffn_gate_exps.weight", "mlp.experts.%d.gate_proj.weight"},
    {"ffn_down_exps.weight", "mlp.experts.%d.down_proj.weight"},
    {"ffn_up_exps.weight", "mlp.experts.%d.up_proj.weight"},
    {"ffn_gate_shexp.weight", "mlp.shared_expert.gate_proj.weight"},
    {"ffn_down_shexp.weight", "mlp.shared_expert.down_proj.weight"},
    {"ffn_up_shexp.weight", "mlp.shared_expert.up_proj.weight"},
    {"ffn_gate_inp_shexp.weight", "mlp.shared_expert_gate.weight"}, {NULL, NULL}};
/* GraniteMoe (JetMoE's experts): each layer's experts as 3-D tensors, the
 * gate and up projections fused into input_linear [n_expert, 2 ff, n_embd] */
static name_pair GRANITEMOE_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_output.weight", "self_attn.o_proj.weight"},
    {"attn_norm.weight", "input_layernorm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate_inp.weight", "block_sparse_moe.router.layer.weight"},
    {"ffn_gate_exps.weight", "block_sparse_moe.input_linear.weight"},
    {"ffn_down_exps.weight", "block_sparse_moe.output_linear.weight"}, {NULL, NULL}};
/* DeepSeek-V2/V3: MLA (attn_k_b and attn_v_b fused back into kv_b_proj) */
static name_pair DEEPSEEK2_L[] = {
    {"attn_norm.weight", "input_layernorm.weight"}, {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},   {"attn_q_a.weight", "self_attn.q_a_proj.weight"},
    {"attn_q_a_norm.weight", "self_attn.q_a_layernorm.weight"}, {"attn_q_b.weight", "self_attn.q_b_proj.weight"},
    {"attn_kv_a_mqa.weight", "self_attn.kv_a_proj_with_mqa.weight"},
    {"attn_kv_a_norm.weight", "self_attn.kv_a_layernorm.weight"}, {"attn_k_b.weight", "self_attn.kv_b_proj.weight"},
    {"attn_output.weight", "self_attn.o_proj.weight"}, {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},        {"ffn_down.weight", "mlp.down_proj.weight"},
    {"ffn_gate_inp.weight", "mlp.gate.weight"},     {"exp_probs_b.bias", "mlp.gate.e_score_correction_bias"},
    {"ffn_gate_exps.weight", "mlp.experts.%d.gate_proj.weight"},
    {"ffn_down_exps.weight", "mlp.experts.%d.down_proj.weight"},
    {"ffn_up_exps.weight", "mlp.experts.%d.up_proj.weight"},
    {"ffn_gate_shexp.weight", "mlp.shared_experts.gate_proj.weight"},
    {"ffn_down_shexp.weight", "mlp.shared_experts.down_proj.weight"},
    {"ffn_up_shexp.weight", "mlp.shared_experts.up_proj.weight"}, {NULL, NULL}};
/* gpt-oss with dense experts: [n_expert, in, out] stacks, gate and up
 * interleaved in gate_up_proj (rows) and gate_up_proj_bias (values) */
static name_pair GPTOSS_L[] = {
    {"attn_q.weight", "self_attn.q_proj.weight"}, {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_v.weight", "self_attn.v_proj.weight"}, {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.bias", "self_attn.k_proj.bias"},     {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"}, {"attn_output.bias", "self_attn.o_proj.bias"},
    {"attn_sinks.weight", "self_attn.sinks"},     {"attn_norm.weight", "input_layernorm.weight"},
    {"post_attention_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate_inp.weight", "mlp.router.weight"}, {"ffn_gate_inp.bias", "mlp.router.bias"},
    {"ffn_gate_exps.weight", "mlp.experts.gate_up_proj"}, {"ffn_gate_exps.bias", "mlp.experts.gate_up_proj_bias"},
    {"ffn_down_exps.weight", "mlp.experts.down_proj"}, {"ffn_down_exps.bias", "mlp.experts.down_proj_bias"},
    {NULL, NULL}};
/* Mistral3ForConditionalGeneration: the text model under "language_model."
 * (layers as transformers < 4.52 saved them, the rest as later ones) */
static name_pair MISTRAL3_G[] = {{"token_embd.weight", "model.language_model.embed_tokens.weight"},
                                 {"output_norm.weight", "model.language_model.norm.weight"},
                                 {"output.weight", "language_model.lm_head.weight"}, {NULL, NULL}};

#define SYNTH_COMMON "--dim 64 --layers 2 --heads 4 --ff 256 --norm-noise 0.2 --out-gain 3 "
static const arch_spec SPECS[] = {
    {"llama", "LlamaForCausalLM", "llama", "model.layers.%d.", LLAMA_G, LLAMA_L, T_PERMUTE,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --type f16", true},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", "model.layers.%d.", LLAMA_G, LLAMA_L, 0, SYNTH_COMMON "--ctx 128 --kv-heads 2",
     true},
    {"gemma", "GemmaForCausalLM", "gemma", "model.layers.%d.", LLAMA_G, LLAMA_L, T_MINUS_ONE,
     SYNTH_COMMON "--ctx 128 --kv-heads 1 --type bf16", true},
    {"gpt2", "GPT2LMHeadModel", "gpt2", "transformer.h.%d.", GPT2_G, GPT2_L, T_TRANSPOSE, SYNTH_COMMON "--ctx 128", true},
    {"phi2", "PhiForCausalLM", "phi", "model.layers.%d.", PHI2_G, PHI2_L, 0, SYNTH_COMMON "--ctx 128 --rot 8", true},
    {"gptneox", "GPTNeoXForCausalLM", "gpt_neox", "gpt_neox.layers.%d.", NEOX_G, NEOX_L, T_QKV,
     SYNTH_COMMON "--ctx 128 --rot 8", true},
    {"bloom", "BloomForCausalLM", "bloom", "h.%d.", BLOOM_G, BLOOM_L, T_QKV, SYNTH_COMMON "--ctx 128", true},
    {"falcon", "FalconForCausalLM", "falcon", "transformer.h.%d.", FALCON_G, FALCON_L, T_QKV,
     SYNTH_COMMON "--ctx 2048 --kv-heads 2", true},
    {"mpt", "MPTForCausalLM", "mpt", "transformer.blocks.%d.", MPT_G, MPT_L, 0, SYNTH_COMMON "--ctx 128", true},
    {"starcoder", "GPTBigCodeForCausalLM", "gpt_bigcode", "transformer.h.%d.", GPT2_G, GPT2_L, 0,
     SYNTH_COMMON "--ctx 128 --kv-heads 1", true},
    {"gptj", "GPTJForCausalLM", "gptj", "transformer.h.%d.", GPTJ_G, GPTJ_L, 0, SYNTH_COMMON "--ctx 128 --rot 8", false},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", "model.layers.%d.", LLAMA_G, QWEN3_L, 0,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --head-size 32 --type bf16", true},
    {"olmo2", "Olmo2ForCausalLM", "olmo2", "model.layers.%d.", LLAMA_G, OLMO2_L, 0, SYNTH_COMMON "--ctx 128", true},
    {"granite", "GraniteForCausalLM", "granite", "model.layers.%d.", LLAMA_G, LLAMA_L, T_PERMUTE,
     SYNTH_COMMON "--ctx 128 --kv-heads 2", true},
    {"smollm3", "SmolLM3ForCausalLM", "smollm3", "model.layers.%d.", LLAMA_G, LLAMA_L, T_PERMUTE,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --layers 4 --type f16", true},
    {"gemma2", "Gemma2ForCausalLM", "gemma2", "model.layers.%d.", LLAMA_G, GEMMA2_L, T_MINUS_ONE,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --head-size 32 --window 4 --attn-softcap 5 --logit-softcap 5", true},
    {"gemma3", "Gemma3ForCausalLM", "gemma3_text", "model.layers.%d.", LLAMA_G, GEMMA2_L, T_MINUS_ONE,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --head-size 32 --layers 7 --window 4 --rope-base 1000000 "
                  "--rope-base-swa 20000 --rope-linear 4",
     true},
    {"cohere2", "Cohere2ForCausalLM", "cohere2", "model.layers.%d.", LLAMA_G, LLAMA_L, 0,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --layers 4 --window 4", true},
    /* LongRoPE: context 128 over 64 trained, so the converter's attention
     * factor is sqrt(1 + ln 2 / ln 64) */
    {"phi3", "Phi3ForCausalLM", "phi3", "model.layers.%d.", LLAMA_G, PHI3_L, 0,
     SYNTH_COMMON "--ctx 128 --rot 8 --with rope_factors_long.weight --with rope_factors_short.weight "
                  "--rope-orig-ctx 64 --rope-attn-factor 1.0801234497346435",
     true},
    {"llama", "MixtralForCausalLM", "mixtral", "model.layers.%d.", LLAMA_G, MIXTRAL_L, T_PERMUTE,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --ff 64 --experts 4 --experts-used 2", true},
    {"qwen3moe", "Qwen3MoeForCausalLM", "qwen3_moe", "model.layers.%d.", LLAMA_G, MOE_L, 0,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --head-size 32 --experts 4 --experts-used 2 --expert-ff 64", true},
    {"olmoe", "OlmoeForCausalLM", "olmoe", "model.layers.%d.", LLAMA_G, MOE_L, 0,
     SYNTH_COMMON "--ctx 128 --ff 64 --experts 4 --experts-used 2", true},
    {"qwen2moe", "Qwen2MoeForCausalLM", "qwen2_moe", "model.layers.%d.", LLAMA_G, QWEN2MOE_L, 0,
     SYNTH_COMMON "--ctx 128 --kv-heads 2 --ff 128 --experts 4 --experts-used 2 --expert-ff 64 --shared-ff 128",
     true},
    {"granitemoe", "GraniteMoeForCausalLM", "granitemoe", "model.layers.%d.", LLAMA_G, GRANITEMOE_L,
     T_PERMUTE | T_FUSED_EXPERTS, SYNTH_COMMON "--ctx 128 --kv-heads 2 --ff 64 --experts 4 --experts-used 2", true},
    /* YaRN (DeepSeek's mscale_all_dim), q compressed (q_lora 24), sigmoid scoring biased by
     * e_score_correction_bias, 4 groups of which 2 are used, renormalised
     * and scaled by 2.5, a leading dense layer and a shared expert */
    {"deepseek2", "DeepseekV3ForCausalLM", "deepseek_v3", "model.layers.%d.", LLAMA_G, DEEPSEEK2_L, T_MLA,
     "--dim 64 --layers 3 --heads 4 --head-size 48 --rot 16 --ff 128 --ctx 128 --experts 8 --experts-used 2 "
     "--expert-ff 32 --key attention.q_lora_rank=24 --key attention.kv_lora_rank=32 --key attention.key_length_mla=40 "
     "--key attention.value_length_mla=32 --key leading_dense_block_count=1 --key expert_shared_count=1 "
     "--key expert_gating_func=2 --key expert_weights_norm=1 --key expert_weights_scale=2.5 "
     "--key expert_group_count=4 --key expert_group_used_count=2 --with exp_probs_b.bias --norm-noise 0.2 "
     "--out-gain 3 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32 "
     "--f32-key rope.scaling.yarn_log_multiplier=0.0707",
     true},
    {"gpt-oss", "GptOssForCausalLM", "gpt_oss", "model.layers.%d.", LLAMA_G, GPTOSS_L, T_OSS,
     "--dim 64 --layers 2 --heads 4 --kv-heads 2 --head-size 32 --ff 64 --ctx 256 --experts 4 --experts-used 2 "
     "--expert-ff 64 --window 8 --rope-scaling yarn --rope-factor 4 --rope-orig-ctx 32 --norm-noise 0.2 --out-gain 3",
     true},
    {"mistral3", "Mistral3ForConditionalGeneration", "mistral3", "language_model.model.layers.%d.", MISTRAL3_G,
     LLAMA_L, T_PERMUTE, SYNTH_COMMON "--ctx 128 --kv-heads 2 --head-size 32", true},
};

/* encoders (embeddings only): BertModel and NomicBertModel */
static name_pair BERT_GN[] = {{"token_embd.weight", "embeddings.word_embeddings.weight"},
                              {"token_types.weight", "embeddings.token_type_embeddings.weight"},
                              {"position_embd.weight", "embeddings.position_embeddings.weight"},
                              {"token_embd_norm.weight", "embeddings.LayerNorm.weight"},
                              {"token_embd_norm.bias", "embeddings.LayerNorm.bias"}, {NULL, NULL}};
static name_pair BERT_LN[] = {
    {"attn_q.weight", "attention.self.query.weight"},   {"attn_q.bias", "attention.self.query.bias"},
    {"attn_k.weight", "attention.self.key.weight"},     {"attn_k.bias", "attention.self.key.bias"},
    {"attn_v.weight", "attention.self.value.weight"},   {"attn_v.bias", "attention.self.value.bias"},
    {"attn_output.weight", "attention.output.dense.weight"}, {"attn_output.bias", "attention.output.dense.bias"},
    {"attn_output_norm.weight", "attention.output.LayerNorm.weight"},
    {"attn_output_norm.bias", "attention.output.LayerNorm.bias"},
    {"ffn_up.weight", "intermediate.dense.weight"},     {"ffn_up.bias", "intermediate.dense.bias"},
    {"ffn_down.weight", "output.dense.weight"},         {"ffn_down.bias", "output.dense.bias"},
    {"layer_output_norm.weight", "output.LayerNorm.weight"}, {"layer_output_norm.bias", "output.LayerNorm.bias"},
    {NULL, NULL}};
static name_pair NOMIC_GN[] = {{"token_embd.weight", "embeddings.word_embeddings.weight"},
                               {"token_types.weight", "embeddings.token_type_embeddings.weight"},
                               {"token_embd_norm.weight", "emb_ln.weight"}, {"token_embd_norm.bias", "emb_ln.bias"},
                               {NULL, NULL}};
static name_pair NOMIC_LN[] = {
    {"attn_qkv.weight", "attn.Wqkv.weight"},  {"attn_output.weight", "attn.out_proj.weight"},
    {"attn_output_norm.weight", "norm1.weight"}, {"attn_output_norm.bias", "norm1.bias"},
    {"ffn_up.weight", "mlp.fc11.weight"},     {"ffn_gate.weight", "mlp.fc12.weight"},
    {"ffn_down.weight", "mlp.fc2.weight"},    {"layer_output_norm.weight", "norm2.weight"},
    {"layer_output_norm.bias", "norm2.bias"}, {NULL, NULL}};
#define SYNTH_ENCODER "--dim 64 --layers 2 --heads 4 --ff 128 --out-gain 0.5 --norm-noise 0.5 --pooling mean "
static const arch_spec ENCODER_SPECS[] = {
    {"bert", "BertModel", "bert", "encoder.layer.%d.", BERT_GN, BERT_LN, 0, SYNTH_ENCODER "--ctx 128 --seed 7201", false},
    {"nomic-bert", "NomicBertModel", "nomic_bert", "encoder.layers.%d.", NOMIC_GN, NOMIC_LN, 0,
     SYNTH_ENCODER "--ctx 2048 --seed 7301", false},
};

/* [Q|K|V] rows back into kv groups [q.. k v] (the reader's regrouping
 * undone). */
static void *group_qkv(const tport_mf_tensor *t, int n_head, int n_kv) {
    int64_t rows = t->n_dims == 1 ? t->ne[0] : t->ne[1], hd = rows / (n_head + 2 * n_kv), q_per = n_head / n_kv;
    size_t block = (size_t)hd * (t->nbytes / (size_t)rows);
    uint8_t *dst = malloc(t->nbytes);
    const uint8_t *src = t->data;
    for (int64_t g = 0; g < n_kv; g++) {
        uint8_t *grp = dst + (size_t)(g * (q_per + 2)) * block;
        memcpy(grp, src + (size_t)(g * q_per) * block, (size_t)q_per * block);
        memcpy(grp + (size_t)q_per * block, src + (size_t)(n_head + g) * block, block);
        memcpy(grp + (size_t)(q_per + 1) * block, src + (size_t)(n_head + n_kv + g) * block, block);
    }
    return dst;
}

static void *minus_one(const tport_mf_tensor *t) {
    float *dst = malloc(t->nbytes);
    memcpy(dst, t->data, t->nbytes);
    for (int64_t i = 0; i < t->ne[0]; i++)
        dst[i] -= 1.0f;
    return dst;
}

/* The HF folder of GGUF model `g` as `sp`'s Hugging Face class stores it. */
static void write_model(const char *folder, const tport_model_file *g, const arch_spec *sp) {
    size_t cap = (size_t)g->n_tensors + 1; /* + a vision tensor for a multimodal wrapper */
    for (int i = 0; i < g->n_tensors; i++)
        cap += g->tensors[i].n_dims == 3 ? (size_t)g->tensors[i].ne[2] : 0;
    st_tensor *t = calloc(cap, sizeof *t);
    void **owned = calloc(cap, sizeof *owned);
    int n = 0;
    int nh = (int)g->hp.n_head, nkv = (int)(g->hp.n_head_kv ? g->hp.n_head_kv : g->hp.n_head);
    for (int i = 0; i < g->n_tensors; i++) {
        const tport_mf_tensor *s = &g->tensors[i];
        st_tensor *d = &t[n];
        if (!strncmp(s->name, "rope_factors_", 13))
            continue; /* phi3: in config.json's rope_scaling */
        d->dtype = dtype_of(s->type);
        CHECK(d->dtype != NULL, "tensor %s: type %u has no safetensors dtype", s->name, (unsigned)s->type);
        d->n_dims = s->n_dims;
        for (int k = 0; k < s->n_dims; k++)
            d->shape[k] = s->ne[s->n_dims - 1 - k];
        d->data = s->data;
        d->nbytes = s->nbytes;
        int il = -1;
        char rest[64] = "", layer[64];
        sscanf(s->name, "blk.%d.%63s", &il, rest);
        if ((sp->flags & T_FUSED_EXPERTS) && !strcmp(rest, "ffn_up_exps.weight"))
            continue; /* written with the gate, in input_linear */
        if ((sp->flags & T_MLA) && !strcmp(rest, "attn_v_b.weight"))
            continue; /* written with attn_k_b, in kv_b_proj */
        if ((sp->flags & T_OSS) && !strncmp(rest, "ffn_up_exps.", 12))
            continue; /* interleaved with the gate */
        for (int k = 0; il < 0 && sp->globals[k][0]; k++)
            if (!strcmp(s->name, sp->globals[k][0]))
                snprintf(d->name, sizeof d->name, "%s", sp->globals[k][1]);
        for (int k = 0; il >= 0 && sp->layer[k][0]; k++)
            if (!strcmp(rest, sp->layer[k][0])) {
                snprintf(layer, sizeof layer, sp->layer_fmt, il);
                snprintf(d->name, sizeof d->name, "%s%s", layer, sp->layer[k][1]);
            }
        CHECK(d->name[0], "%s: tensor %s has a Hugging Face name", sp->arch, s->name);
        if ((sp->flags & T_OSS) && (!strncmp(rest, "ffn_gate_exps.", 14) || !strcmp(rest, "ffn_down_exps.weight"))) {
            bool w = s->n_dims == 3, down = !strcmp(rest, "ffn_down_exps.weight");
            size_t es = 4, total = down ? s->nbytes : 2 * s->nbytes;
            CHECK(s->type == TPORT_TYPE_F32, "%s: %s in f32", sp->arch, s->name);
            int64_t k = s->ne[0], r = w ? s->ne[1] : 1, outer = w ? s->ne[2] : s->ne[1];
            uint8_t *mix = malloc(total), *out = malloc(total);
            if (down)
                memcpy(mix, s->data, total);
            else { /* gate and up alternating: rows of a weight, values of a bias */
                char up_name[96];
                snprintf(up_name, sizeof up_name, "blk.%d.ffn_up_exps.%s", il, w ? "weight" : "bias");
                const tport_mf_tensor *u = tport_model_file_find(g, up_name);
                CHECK(u && u->nbytes == s->nbytes, "%s: %s", sp->arch, up_name);
                size_t unit = w ? (size_t)k * es : es;
                int64_t n_pairs = w ? r : k;
                for (int64_t o = 0; u && o < outer; o++)
                    for (int64_t p = 0; p < n_pairs; p++) {
                        memcpy(mix + (size_t)(o * 2 * n_pairs + 2 * p) * unit,
                               (const uint8_t *)s->data + (size_t)(o * n_pairs + p) * unit, unit);
                        memcpy(mix + (size_t)(o * 2 * n_pairs + 2 * p + 1) * unit,
                               (const uint8_t *)u->data + (size_t)(o * n_pairs + p) * unit, unit);
                    }
                r = w ? 2 * r : r;
                k = w ? k : 2 * k;
            }
            if (w) { /* each expert [r rows of k] -> [k rows of r]: HF's [n_expert, in, out] */
                size_t one = (size_t)(k * r) * es;
                for (int64_t e = 0; e < outer; e++)
                    for (int64_t i = 0; i < r; i++)
                        for (int64_t j = 0; j < k; j++)
                            memcpy(out + (size_t)e * one + (size_t)(j * r + i) * es, mix + (size_t)e * one + (size_t)(i * k + j) * es, es);
                d->shape[0] = outer;
                d->shape[1] = k;
                d->shape[2] = r;
            } else {
                memcpy(out, mix, total);
                d->shape[0] = outer;
                d->shape[1] = k;
            }
            free(mix);
            d->data = owned[n] = out;
            d->nbytes = total;
            n++;
            continue;
        }
        if ((sp->flags & T_MLA) && !strcmp(rest, "attn_k_b.weight")) {
            /* kv_b_proj [n_head (nope + v), kv_lora]: per head its nope rows
             * (attn_k_b [n_head, kv_lora, nope] transposed) then its v rows */
            char vb_name[96];
            snprintf(vb_name, sizeof vb_name, "blk.%d.attn_v_b.weight", il);
            const tport_mf_tensor *vb = tport_model_file_find(g, vb_name);
            int64_t nope = s->ne[0], rank = s->ne[1], heads = s->ne[2], v = vb ? vb->ne[1] : 0;
            size_t es = s->nbytes / (size_t)(nope * rank * heads);
            CHECK(vb && vb->type == s->type && vb->ne[0] == rank && vb->ne[2] == heads, "%s: %s", sp->arch, vb_name);
            uint8_t *kv = malloc((size_t)(heads * (nope + v) * rank) * es);
            for (int64_t h = 0; vb && h < heads; h++) {
                uint8_t *dst = kv + (size_t)(h * (nope + v) * rank) * es;
                for (int64_t j = 0; j < nope; j++)
                    for (int64_t r = 0; r < rank; r++)
                        memcpy(dst + (size_t)(j * rank + r) * es, (const uint8_t *)s->data + (size_t)((h * rank + r) * nope + j) * es, es);
                memcpy(dst + (size_t)(nope * rank) * es, (const uint8_t *)vb->data + (size_t)(h * v * rank) * es,
                       (size_t)(v * rank) * es);
            }
            d->data = owned[n] = kv;
            d->n_dims = 2;
            d->shape[0] = heads * (nope + v);
            d->shape[1] = rank;
            d->nbytes = (size_t)(heads * (nope + v) * rank) * es;
            n++;
            continue;
        }
        if (s->n_dims == 3 && (sp->flags & T_FUSED_EXPERTS) && !strcmp(rest, "ffn_gate_exps.weight")) {
            char up_name[96];
            snprintf(up_name, sizeof up_name, "blk.%d.ffn_up_exps.weight", il);
            const tport_mf_tensor *u = tport_model_file_find(g, up_name);
            CHECK(u && u->nbytes == s->nbytes && u->type == s->type, "%s: %s beside the gate", sp->arch, up_name);
            size_t part = s->nbytes / (size_t)s->ne[2];
            uint8_t *fused = malloc(2 * s->nbytes);
            for (int64_t e = 0; u && e < s->ne[2]; e++) { /* expert e: its gate rows, then its up rows */
                memcpy(fused + (size_t)e * 2 * part, (const uint8_t *)s->data + (size_t)e * part, part);
                memcpy(fused + (size_t)e * 2 * part + part, (const uint8_t *)u->data + (size_t)e * part, part);
            }
            d->data = owned[n] = fused;
            d->nbytes = 2 * s->nbytes;
            d->shape[1] *= 2;
            n++;
            continue;
        }
        if (s->n_dims == 3 && !(sp->flags & (T_FUSED_EXPERTS | T_OSS))) { /* a stack of experts: one [out, in] tensor each */
            char fmt[96];
            snprintf(fmt, sizeof fmt, "%s", d->name);
            size_t one = s->nbytes / (size_t)s->ne[2];
            for (int64_t e = 0; e < s->ne[2]; e++) {
                st_tensor *x = &t[n++];
                *x = (st_tensor){.dtype = d->dtype, .n_dims = 2, .shape = {s->ne[1], s->ne[0]},
                                 .data = (const uint8_t *)s->data + (size_t)e * one, .nbytes = one};
                snprintf(x->name, sizeof x->name, fmt, (int)e);
            }
            continue;
        }
        if ((sp->flags & T_PERMUTE) && (!strcmp(rest, "attn_q.weight") || !strcmp(rest, "attn_k.weight")))
            d->data = owned[n] = permute_rows(s, !strcmp(rest, "attn_q.weight") ? nh : nkv);
        if ((sp->flags & T_TRANSPOSE) && il >= 0 && s->n_dims == 2) { /* Conv1D: [in, out] */
            d->data = owned[n] = transpose(s);
            d->shape[0] = s->ne[0];
            d->shape[1] = s->ne[1];
        }
        if ((sp->flags & T_QKV) && !strncmp(rest, "attn_qkv.", 9))
            d->data = owned[n] = group_qkv(s, nh, nkv);
        if ((sp->flags & T_MINUS_ONE) && strstr(s->name, "norm.weight")) {
            CHECK(s->type == TPORT_TYPE_F32, "%s: norms in f32", s->name);
            d->data = owned[n] = minus_one(s);
        }
        n++;
    }
    const char *extra = !strcmp(sp->model_type, "mistral3") ? "multi_modal_projector.linear_1.weight"
                        : !strcmp(sp->model_type, "bert")     ? "pooler.dense.weight"
                                                              : NULL;
    if (extra) { /* a tensor the reader drops: the vision projector, BERT's pooler */
        t[n] = t[0];
        snprintf(t[n].name, sizeof t[n].name, "%s", extra);
        n++;
    }
    char path[512];
    snprintf(path, sizeof path, "%s/model.safetensors", folder);
    write_safetensors(path, t, n);
    for (int i = 0; i < n; i++)
        free(owned[i]);
    free(owned);
    free(t);
}

/* The GGUF's "<arch>.<suffix>", or NULL. */
static const tport_kv *gguf_key(const tport_model_file *g, const char *suffix) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", g->arch, suffix);
    return tport_model_file_kv(g, key);
}

/* config[name] = the GGUF's "<arch>.<suffix>" where the file has it. */
static void config_from_key(cJSON *cfg, const tport_model_file *g, const char *suffix, const char *name) {
    const tport_kv *kv = gguf_key(g, suffix);
    if (kv && (kv->type == TPORT_KV_F32 || kv->type == TPORT_KV_F64))
        cJSON_AddNumberToObject(cfg, name, kv->v.f);
    else if (kv && (kv->type == TPORT_KV_U32 || kv->type == TPORT_KV_I32))
        cJSON_AddNumberToObject(cfg, name, kv->type == TPORT_KV_U32 ? (double)kv->v.u : (double)kv->v.i);
}

/* config.json as each class's transformers config names the values. */
static void write_config(const char *folder, const tport_model_file *g, const arch_spec *sp) {
    const tport_mf_hparams *hp = &g->hp;
    const char *a = sp->arch;
    cJSON *cfg = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cfg, "architectures"), cJSON_CreateString(sp->cls));
    cJSON_AddStringToObject(cfg, "model_type", sp->model_type);
    cJSON_AddNumberToObject(cfg, "vocab_size", hp->n_vocab);
    uint32_t hd = hp->n_embd / hp->n_head, nkv = hp->n_head_kv ? hp->n_head_kv : hp->n_head;
    bool gpt2_names = !strcmp(a, "gpt2") || !strcmp(a, "starcoder") || !strcmp(a, "gptj");
    if (!strcmp(a, "deepseek2")) { /* DeepseekV3Config's names */
        const tport_kv *kv;
        cJSON_AddNumberToObject(cfg, "hidden_size", hp->n_embd);
        cJSON_AddNumberToObject(cfg, "num_hidden_layers", hp->n_layer);
        cJSON_AddNumberToObject(cfg, "num_attention_heads", hp->n_head);
        cJSON_AddNumberToObject(cfg, "num_key_value_heads", hp->n_head);
        cJSON_AddNumberToObject(cfg, "intermediate_size", hp->n_ff);
        cJSON_AddNumberToObject(cfg, "max_position_embeddings", hp->n_ctx);
        cJSON_AddNumberToObject(cfg, "rms_norm_eps", hp->norm_eps);
        cJSON_AddNumberToObject(cfg, "rope_theta", hp->rope_freq_base);
        kv = gguf_key(g, "attention.q_lora_rank");
        if (kv && kv->v.u)
            cJSON_AddNumberToObject(cfg, "q_lora_rank", (double)kv->v.u);
        else
            cJSON_AddNullToObject(cfg, "q_lora_rank");
        config_from_key(cfg, g, "attention.kv_lora_rank", "kv_lora_rank");
        cJSON_AddNumberToObject(cfg, "qk_rope_head_dim", hp->n_rot);
        kv = gguf_key(g, "attention.key_length_mla");
        cJSON_AddNumberToObject(cfg, "qk_nope_head_dim", kv ? (double)kv->v.u - hp->n_rot : 0);
        config_from_key(cfg, g, "attention.value_length_mla", "v_head_dim");
        config_from_key(cfg, g, "expert_count", "n_routed_experts");
        config_from_key(cfg, g, "expert_shared_count", "n_shared_experts");
        config_from_key(cfg, g, "leading_dense_block_count", "first_k_dense_replace");
        config_from_key(cfg, g, "expert_weights_scale", "routed_scaling_factor");
        config_from_key(cfg, g, "expert_group_count", "n_group");
        config_from_key(cfg, g, "expert_group_used_count", "topk_group");
        kv = gguf_key(g, "expert_weights_norm");
        cJSON_AddBoolToObject(cfg, "norm_topk_prob", kv && (kv->type == TPORT_KV_BOOL ? kv->v.b : kv->v.u != 0));
        kv = gguf_key(g, "expert_gating_func");
        cJSON_AddStringToObject(cfg, "scoring_func", kv && kv->v.u == 2 ? "sigmoid" : "softmax");
        cJSON_AddStringToObject(cfg, "topk_method", "noaux_tc");
    } else if (!strcmp(a, "bert")) {
        cJSON_AddNumberToObject(cfg, "hidden_size", hp->n_embd);
        cJSON_AddNumberToObject(cfg, "num_hidden_layers", hp->n_layer);
        cJSON_AddNumberToObject(cfg, "num_attention_heads", hp->n_head);
        cJSON_AddNumberToObject(cfg, "intermediate_size", hp->n_ff);
        cJSON_AddNumberToObject(cfg, "max_position_embeddings", hp->n_ctx);
        cJSON_AddNumberToObject(cfg, "layer_norm_eps", hp->norm_eps);
        cJSON_AddNumberToObject(cfg, "type_vocab_size", 2);
        cJSON_AddStringToObject(cfg, "position_embedding_type", "absolute");
    } else if (!strcmp(a, "nomic-bert")) { /* nomic-embed-text-v1.5's shape of config */
        cJSON_AddNumberToObject(cfg, "n_embd", hp->n_embd);
        cJSON_AddNumberToObject(cfg, "n_layer", hp->n_layer);
        cJSON_AddNumberToObject(cfg, "n_head", hp->n_head);
        cJSON_AddNumberToObject(cfg, "n_inner", hp->n_ff);
        cJSON_AddNumberToObject(cfg, "n_positions", 8192);
        cJSON_AddNumberToObject(cfg, "max_trained_positions", 2048);
        cJSON_AddNumberToObject(cfg, "layer_norm_epsilon", hp->norm_eps);
        cJSON_AddNumberToObject(cfg, "rotary_emb_base", hp->rope_freq_base);
        cJSON_AddNumberToObject(cfg, "rotary_emb_fraction", 1.0);
        cJSON_AddBoolToObject(cfg, "rotary_emb_interleaved", false);
        cJSON_AddNullToObject(cfg, "rotary_emb_scale_base");
        cJSON_AddStringToObject(cfg, "activation_function", "swiglu");
        cJSON_AddBoolToObject(cfg, "causal", false);
        cJSON_AddBoolToObject(cfg, "prenorm", false);
        cJSON_AddBoolToObject(cfg, "qkv_proj_bias", false);
        cJSON_AddBoolToObject(cfg, "mlp_fc1_bias", false);
        cJSON_AddBoolToObject(cfg, "mlp_fc2_bias", false);
        cJSON_AddNumberToObject(cfg, "type_vocab_size", 2);
    } else if (!strcmp(a, "mpt")) {
        cJSON_AddNumberToObject(cfg, "d_model", hp->n_embd);
        cJSON_AddNumberToObject(cfg, "n_layers", hp->n_layer);
        cJSON_AddNumberToObject(cfg, "n_heads", hp->n_head);
        cJSON_AddNumberToObject(cfg, "max_seq_len", hp->n_ctx);
        cJSON *ac = cJSON_AddObjectToObject(cfg, "attn_config");
        cJSON_AddBoolToObject(ac, "alibi", true);
        cJSON_AddNumberToObject(ac, "alibi_bias_max", 8);
        cJSON_AddNullToObject(ac, "clip_qkv");
    } else if (gpt2_names) {
        cJSON_AddNumberToObject(cfg, "n_embd", hp->n_embd);
        cJSON_AddNumberToObject(cfg, "n_layer", hp->n_layer);
        cJSON_AddNumberToObject(cfg, "n_head", hp->n_head);
        cJSON_AddNumberToObject(cfg, "n_positions", hp->n_ctx);
        cJSON_AddNullToObject(cfg, "n_inner");
        cJSON_AddNumberToObject(cfg, "layer_norm_epsilon", hp->norm_eps);
        if (!strcmp(a, "starcoder"))
            cJSON_AddBoolToObject(cfg, "multi_query", nkv == 1);
        if (!strcmp(a, "gptj"))
            cJSON_AddNumberToObject(cfg, "rotary_dim", hp->n_rot);
    } else if (!strcmp(a, "bloom")) {
        cJSON_AddNumberToObject(cfg, "hidden_size", hp->n_embd);
        cJSON_AddNumberToObject(cfg, "n_layer", hp->n_layer);
        cJSON_AddNumberToObject(cfg, "n_head", hp->n_head);
        cJSON_AddNumberToObject(cfg, "seq_length", hp->n_ctx);
        cJSON_AddNumberToObject(cfg, "layer_norm_epsilon", hp->norm_eps);
    } else {
        cJSON_AddNumberToObject(cfg, "hidden_size", hp->n_embd);
        cJSON_AddNumberToObject(cfg, "num_hidden_layers", hp->n_layer);
        cJSON_AddNumberToObject(cfg, "num_attention_heads", hp->n_head);
        cJSON_AddNumberToObject(cfg, !strcmp(a, "falcon") ? "num_kv_heads" : "num_key_value_heads", nkv);
        cJSON_AddNumberToObject(cfg, "intermediate_size", hp->n_ff);
        cJSON_AddNumberToObject(cfg, "max_position_embeddings", hp->n_ctx);
        cJSON_AddNumberToObject(cfg, !strcmp(a, "phi2") || !strcmp(a, "gptneox") || !strcmp(a, "cohere2") ? "layer_norm_eps"
                                     : !strcmp(a, "falcon")                     ? "layer_norm_epsilon"
                                                                                : "rms_norm_eps",
                                hp->norm_eps);
        cJSON_AddNumberToObject(cfg, "rope_theta", hp->rope_freq_base);
        if (!strcmp(a, "falcon"))
            cJSON_AddBoolToObject(cfg, "new_decoder_architecture", true);
        if (!strcmp(a, "gemma"))
            cJSON_AddNumberToObject(cfg, "head_dim", hd);
        if (!strcmp(a, "phi2"))
            cJSON_AddNumberToObject(cfg, "partial_rotary_factor", (double)hp->n_rot / hd);
        if (!strcmp(a, "gptneox")) {
            cJSON_AddNumberToObject(cfg, "rotary_pct", (double)hp->n_rot / hd);
            const tport_kv *par = tport_model_file_kv(g, "gptneox.use_parallel_residual");
            cJSON_AddBoolToObject(cfg, "use_parallel_residual", !par || par->v.b);
        }
    }
    if (!strcmp(a, "qwen3") || !strcmp(a, "qwen3moe") || !strcmp(a, "gemma2") || !strcmp(a, "gemma3") ||
        !strcmp(a, "mistral3") || !strcmp(a, "gpt-oss"))
        config_from_key(cfg, g, "attention.key_length", "head_dim");
    static const char *const extras[][2] = {
        {"attn_logit_softcapping", "attn_logit_softcapping"}, {"final_logit_softcapping", "final_logit_softcapping"},
        {"attention.sliding_window", "sliding_window"},       {"rope.freq_base_swa", "rope_local_base_freq"},
        {"attention.scale", "attention_multiplier"},          {"embedding_scale", "embedding_multiplier"},
        {"residual_scale", "residual_multiplier"},            {"logit_scale", "logits_scaling"}};
    for (size_t i = 0; i < sizeof extras / sizeof extras[0]; i++)
        config_from_key(cfg, g, extras[i][0], extras[i][1]);
    if (!strcmp(a, "phi3")) { /* Phi3Config: LongRoPE's factors and trained context */
        config_from_key(cfg, g, "rope.scaling.original_context_length", "original_max_position_embeddings");
        cJSON_AddNumberToObject(cfg, "partial_rotary_factor", (double)hp->n_rot / hd);
        cJSON *rs = cJSON_AddObjectToObject(cfg, "rope_scaling");
        cJSON_AddStringToObject(rs, "type", "longrope");
        const char *which[2][2] = {{"rope_factors_long.weight", "long_factor"}, {"rope_factors_short.weight", "short_factor"}};
        for (int k = 0; k < 2; k++) {
            const tport_mf_tensor *f = tport_model_file_find(g, which[k][0]);
            cJSON *arr = cJSON_AddArrayToObject(rs, which[k][1]);
            for (int64_t i = 0; f && f->type == TPORT_TYPE_F32 && i < f->ne[0]; i++) {
                float v;
                memcpy(&v, (const uint8_t *)f->data + 4 * i, 4);
                cJSON_AddItemToArray(arr, cJSON_CreateNumber(v));
            }
        }
    }
    config_from_key(cfg, g, "expert_count",
                    !strcmp(sp->model_type, "mixtral") || !strcmp(sp->model_type, "granitemoe") ||
                            !strcmp(sp->model_type, "gpt_oss") ? "num_local_experts"
                                                                                                : "num_experts");
    config_from_key(cfg, g, "expert_used_count", "num_experts_per_tok");
    config_from_key(cfg, g, "expert_feed_forward_length", "moe_intermediate_size");
    config_from_key(cfg, g, "expert_shared_feed_forward_length", "shared_expert_intermediate_size");
    if (!strcmp(a, "gpt-oss")) { /* GptOssConfig: alternating layers, the SwiGLU clamp */
        cJSON *lt = cJSON_AddArrayToObject(cfg, "layer_types");
        for (uint32_t il = 0; il < hp->n_layer; il++)
            cJSON_AddItemToArray(lt, cJSON_CreateString(il % 2 ? "full_attention" : "sliding_attention"));
        cJSON_AddNumberToObject(cfg, "swiglu_limit", 7.0);
    }
    if (!strcmp(a, "cohere2")) { /* Cohere2Config's names */
        config_from_key(cfg, g, "logit_scale", "logit_scale");
        cJSON_AddNumberToObject(cfg, "rotary_pct", 1.0);
    }
    const tport_kv *lin = gguf_key(g, "rope.scaling.factor"), *rtype = gguf_key(g, "rope.scaling.type");
    if (lin) { /* gemma3's linear scaling, deepseek2's YaRN, as transformers writes them */
        bool yarn = rtype && rtype->type == TPORT_KV_STRING && !strcmp(rtype->v.s, "yarn");
        cJSON *rs = cJSON_AddObjectToObject(cfg, "rope_scaling");
        cJSON_AddStringToObject(rs, yarn ? "type" : "rope_type", yarn ? "yarn" : "linear");
        cJSON_AddNumberToObject(rs, "factor", lin->v.f);
        config_from_key(rs, g, "rope.scaling.original_context_length", "original_max_position_embeddings");
        const tport_kv *lm = gguf_key(g, "rope.scaling.yarn_log_multiplier");
        if (yarn && lm) { /* DeepSeek's mscale_all_dim: the converter writes 0.1 x */
            cJSON_AddNumberToObject(rs, "mscale", lm->v.f / 0.1);
            cJSON_AddNumberToObject(rs, "mscale_all_dim", lm->v.f / 0.1);
        }
    }
    if (!strcmp(sp->model_type, "mistral3")) { /* the text model's config in text_config */
        cJSON *root = cJSON_CreateObject();
        cJSON_AddItemToObject(root, "architectures", cJSON_DetachItemFromObject(cfg, "architectures"));
        cJSON_ReplaceItemInObject(cfg, "model_type", cJSON_CreateString("mistral"));
        cJSON_AddStringToObject(root, "model_type", "mistral3");
        cJSON_AddItemToObject(root, "text_config", cfg);
        cJSON *vc = cJSON_AddObjectToObject(root, "vision_config");
        cJSON_AddNumberToObject(vc, "hidden_size", 1024);
        cJSON_AddNumberToObject(vc, "num_hidden_layers", 24);
        cfg = root;
    }
    write_json(folder, "config.json", cfg);
}

#ifdef TPORT_CLI
/* The folder's tensors are the GGUF's, byte for byte, under the same names. */
static void check_same_tensors(const char *what, const tport_model_file *g, const tport_model_file *f) {
    CHECK(f->n_tensors == g->n_tensors, "%s: %d tensors, GGUF %d", what, f->n_tensors, g->n_tensors);
    int same = 0;
    for (int i = 0; i < g->n_tensors; i++) {
        const tport_mf_tensor *a = &g->tensors[i], *b = tport_model_file_find(f, a->name);
        CHECK(b != NULL, "%s: no %s in the folder", what, a->name);
        if (!b)
            continue;
        bool eq = b->type == a->type && b->nbytes == a->nbytes && !memcmp(a->ne, b->ne, sizeof a->ne) &&
                  !memcmp(a->data, b->data, a->nbytes);
        CHECK(eq, "%s: %s differs from the GGUF's", what, a->name);
        same += eq;
    }
    printf("%s: %d tensors equal the GGUF's (names, shapes, bytes)\n", what, same);
}

static bool run_cmd(const char *cmd, char *out, size_t cap) {
    FILE *p = popen(cmd, "r");
    if (!p)
        return false;
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    return pclose(p) == 0;
}

/* tport's greedy ids from the folder and from the GGUF. */
static void check_same_run(const char *what, const char *gguf, const char *folder, const char *prompt) {
    char cmd[1400], a[4096], b[4096];
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m '%s' -p '%s' -n 8 --temp 0 --ids 2>/dev/null", gguf, prompt);
    bool ok_a = run_cmd(cmd, a, sizeof a);
    snprintf(cmd, sizeof cmd, TPORT_CLI " run -m '%s' -p '%s' -n 8 --temp 0 --ids 2>/dev/null", folder, prompt);
    bool ok_b = run_cmd(cmd, b, sizeof b);
    CHECK(ok_a && ok_b && a[0] && !strcmp(a, b), "%s: tport run ids\n  GGUF:   %s\n  folder: %s", what, a, b);
    printf("%s: tport run on the folder and the GGUF: %s", what, b);
}

/* llama.cpp (node-llama-cpp) on pairs of models (an original GGUF and the
 * GGUF converted from its folder), all in one node process at the end
 * (loading llama.cpp once): every suite string tokenized, and 8 greedy
 * ids after "Once upon a time"; each pair must give the same line. */
static const char *script =
    "import {readFileSync} from 'fs';\n"
    "const [lib, list] = process.argv.slice(2);\n"
    "const {getLlama, LlamaLogLevel} = await import(lib);\n"
    "const llama = await getLlama({gpu: false, build: 'never', logLevel: LlamaLogLevel.error});\n"
    "for (const line of readFileSync(list, 'utf8').split('\\n').filter(l => l)) {\n"
    "  const [strings, path] = line.split('\\t');\n"
    "  const texts = readFileSync(strings, 'utf8').split('\\n__ggml_vocab_test__\\n'); texts.pop();\n"
    "  const model = await llama.loadModel({modelPath: path});\n"
    "  const toks = texts.map(t => Array.from(model.tokenize(t, false)));\n"
    "  const ctx = await model.createContext({contextSize: 64, threads: 1});\n"
    "  const out = [];\n"
    "  for await (const t of ctx.getSequence().evaluate(Array.from(model.tokenize('Once upon a time', false)), {temperature: 0})) {\n"
    "    out.push(t); if (out.length >= 8) break; }\n"
    "  console.log(JSON.stringify({tokens: toks, generated: out}));\n"
    "  await ctx.dispose(); await model.dispose();\n"
    "}\n"
    "await llama.dispose();\n";

enum { MAX_PAIRS = 32 };
static struct {
    char what[64], orig[512], converted[600], inp[512];
} pairs[MAX_PAIRS];
static int n_pairs;

static void check_llama_cpp(const char *what, const char *orig, const char *converted, const char *suite) {
    char rel[128];
    snprintf(rel, sizeof rel, "models/vocab/ggml-vocab-%s.gguf.inp", suite);
    if (n_pairs == MAX_PAIRS || !test_shared_path(rel, pairs[n_pairs].inp, sizeof pairs[n_pairs].inp)) {
        CHECK(0, "%s: %s absent or too many pairs", what, rel);
        return;
    }
    snprintf(pairs[n_pairs].what, sizeof pairs[n_pairs].what, "%s", what);
    snprintf(pairs[n_pairs].orig, sizeof pairs[n_pairs].orig, "%s", orig);
    snprintf(pairs[n_pairs].converted, sizeof pairs[n_pairs].converted, "%s", converted);
    n_pairs++;
}

static void run_llama_cpp(void) {
    char lib[600], js[400], list[400], cmd[2048];
    const char *root = getenv("TPORT_NODE_LLAMA_CPP");
    snprintf(lib, sizeof lib, "%s/node_modules/node-llama-cpp/dist/index.js", root && *root ? root : "/work");
    if (access(lib, R_OK) != 0) {
        CHECK(!(root && *root), "TPORT_NODE_LLAMA_CPP=%s, but %s is not there", root, lib);
        printf("llama.cpp checks skipped (node-llama-cpp not installed; set TPORT_NODE_LLAMA_CPP)\n");
        return;
    }
    snprintf(js, sizeof js, "%s/check.mjs", dir);
    write_text(js, script);
    snprintf(list, sizeof list, "%s/models.tsv", dir);
    FILE *f = fopen(list, "w");
    for (int i = 0; f && i < n_pairs; i++)
        fprintf(f, "%s\t%s\n%s\t%s\n", pairs[i].inp, pairs[i].orig, pairs[i].inp, pairs[i].converted);
    if (f)
        fclose(f);
    snprintf(cmd, sizeof cmd, "node '%s' '%s' '%s' 2>/dev/null", js, lib, list);
    static char out[1 << 22];
    bool ok = run_cmd(cmd, out, sizeof out);
    char *line = out;
    int got = 0;
    for (int i = 0; ok && i < n_pairs; i++) {
        char *a = line, *nl = strchr(a, '\n'), *b = nl ? nl + 1 : NULL, *nl2 = b ? strchr(b, '\n') : NULL;
        if (!nl2)
            break;
        *nl = *nl2 = '\0';
        line = nl2 + 1;
        got++;
        CHECK(!strcmp(a, b), "%s: llama.cpp gives other ids on the converted file\n  original:  %.400s\n  converted: %.400s",
              pairs[i].what, a, b);
        char *gen = strstr(b, "\"generated\"");
        printf("%s: llama.cpp on the converted GGUF: every suite string tokenized as on the original; %s\n",
               pairs[i].what, gen ? gen : "?");
    }
    CHECK(ok && got == n_pairs, "llama.cpp loads every original and converted GGUF (%d of %d pairs): %.300s", got,
          n_pairs, out);
}
#endif

#endif
