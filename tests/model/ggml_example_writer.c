/* See ggml_example_writer.h.  Layouts follow ggml's
 * examples/{gpt-2,gpt-j,mpt,gpt-neox,starcoder}/main.cpp and their converters. */
#include "ggml_example_writer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/model_file.h"
#include "tport/tport.h"

static void put_i32(FILE *f, int32_t v) { fwrite(&v, 4, 1, f); }
static void put_f32(FILE *f, float v) { fwrite(&v, 4, 1, f); }

static int32_t kv_u32(const tport_model_file *mf, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    const tport_kv *kv = tport_model_file_kv(mf, key);
    return kv ? (int32_t)kv->v.u : 0;
}

static float kv_f32(const tport_model_file *mf, const char *suffix) {
    char key[96];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    const tport_kv *kv = tport_model_file_kv(mf, key);
    return kv ? (float)kv->v.f : 0.0f;
}

/* GPT-2's bytes_to_unicode: the bytes that stand for themselves. */
static bool printable_byte(unsigned b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174; }

/* The byte a code point of GPT-2's byte-to-unicode form stands for, -1 if none. */
static int unicode_to_byte(unsigned cp) {
    if (cp < 256)
        return printable_byte(cp) ? (int)cp : -1;
    unsigned n = 0;
    for (unsigned b = 0; b < 256; b++)
        if (!printable_byte(b) && n++ == cp - 256)
            return (int)b;
    return -1;
}

/* Decodes the token's byte-to-unicode text into raw bytes; false if it is
 * not in that form. */
static bool token_bytes(const char *s, uint32_t len, unsigned char *out, uint32_t *n_out) {
    const unsigned char *p = (const unsigned char *)s;
    uint32_t n = 0;
    for (uint32_t i = 0; i < len;) {
        unsigned cp;
        if (p[i] < 0x80)
            cp = p[i++];
        else if ((p[i] & 0xE0) == 0xC0 && i + 1 < len)
            cp = (unsigned)(p[i] & 0x1F) << 6 | (p[i + 1] & 0x3F), i += 2;
        else
            return false;
        int b = unicode_to_byte(cp);
        if (b < 0)
            return false;
        out[n++] = (unsigned char)b;
    }
    *n_out = n;
    return true;
}

static bool put_token(FILE *f, const char *s, uint32_t len, example_vocab_form form) {
    if (form == EXAMPLE_VOCAB_AS_GGUF) {
        put_i32(f, (int32_t)len);
        fwrite(s, 1, len, f);
        return true;
    }
    unsigned char *raw = malloc(len + 1), *out = malloc(2 * (size_t)len + 1);
    uint32_t n = 0, m = 0;
    if (!raw || !out) {
        free(raw), free(out);
        return false;
    }
    if (!token_bytes(s, len, raw, &n)) { /* an added token (gpt-neox's runs of spaces): its text as it is */
        memcpy(raw, s, len);
        n = len;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (form == EXAMPLE_VOCAB_LATIN1 && raw[i] >= 0x80) {
            out[m++] = (unsigned char)(0xC0 | raw[i] >> 6);
            out[m++] = (unsigned char)(0x80 | (raw[i] & 0x3F));
        } else {
            out[m++] = raw[i];
        }
    }
    put_i32(f, (int32_t)m);
    fwrite(out, 1, m, f);
    free(raw), free(out);
    return true;
}

static bool listed(const example_write_opts *o, const char *name) {
    for (int i = 0; i < o->n_quantized; i++)
        if (!strcmp(o->quantized[i], name))
            return true;
    return false;
}

enum { QKV_AS_IS, QKV_INTERLEAVE, QKV_EXPAND_MQA };

/* One tensor record; rows reordered from [Q|K|V] to per-head [q,k,v]
 * (QKV_INTERLEAVE, nh heads of hd rows) or [Q|K|V] with one K,V head
 * repeated nh times (QKV_EXPAND_MQA). */
static bool put_tensor(FILE *f, const char *name, const tport_mf_tensor *t, int qkv, int64_t nh, int64_t hd,
                       const example_write_opts *o) {
    int n_dims = t->ne[1] > 1 ? 2 : 1;
    /* a bias is reordered element by element: rows of one */
    size_t row = (size_t)(n_dims == 2 ? t->ne[0] : 1), rows = (size_t)(n_dims == 2 ? t->ne[1] : t->ne[0]);
    size_t in_rows = rows;
    if (qkv == QKV_EXPAND_MQA) {
        if (rows != (size_t)((nh + 2) * hd))
            return false;
        rows = (size_t)(3 * nh * hd);
    }
    const float *src = t->data;
    float *buf = malloc(row * rows * sizeof(float));
    if (!buf)
        return false;
    int64_t ne1 = n_dims == 2 ? (int64_t)rows : 1, ne0 = n_dims == 2 ? (int64_t)row : (int64_t)rows;
    if (qkv == QKV_AS_IS) {
        memcpy(buf, src, row * in_rows * sizeof(float));
    } else if (qkv == QKV_EXPAND_MQA) {
        size_t q = (size_t)(nh * hd) * row, kv = (size_t)hd * row;
        memcpy(buf, src, q * sizeof(float));
        for (int part = 0; part < 2; part++)
            for (int64_t h = 0; h < nh; h++)
                memcpy(buf + q + (size_t)part * q + (size_t)h * kv, src + q + (size_t)part * kv, kv * sizeof(float));
    } else {
        float *d = buf;
        for (int64_t h = 0; h < nh; h++)
            for (int64_t part = 0; part < 3; part++, d += (size_t)hd * row)
                memcpy(d, src + (size_t)(part * nh * hd + h * hd) * row, (size_t)hd * row * sizeof(float));
    }
    bool quant = n_dims == 2 && o->qtype >= 0 && listed(o, name);
    put_i32(f, n_dims);
    put_i32(f, (int32_t)strlen(name));
    put_i32(f, quant ? o->qcode : 0);
    put_i32(f, (int32_t)ne0);
    if (n_dims == 2)
        put_i32(f, (int32_t)ne1);
    fwrite(name, 1, strlen(name), f);
    bool ok = true;
    if (!quant) {
        fwrite(buf, sizeof(float), row * rows, f);
    } else {
        size_t bytes = tport_row_size((tport_type_id)o->qtype, (int64_t)row) * rows;
        void *q = malloc(bytes);
        ok = q && tport_quantize((tport_type_id)o->qtype, o->rule, buf, q, (int64_t)(row * rows)) == TPORT_STATUS_OK;
        if (ok)
            fwrite(q, 1, bytes, f);
        else
            fprintf(stderr, "  %s: cannot quantize: %s\n", name, tport_last_error());
        free(q);
    }
    free(buf);
    return ok;
}

bool ggml_example_write(const tport_model_file *mf, const tport_arch *arch, const char *path,
                        const example_write_opts *o) {
    FILE *f = fopen(path, "wb");
    if (!f)
        return false;
    int32_t n_vocab = mf->vocab.n_tokens, n_ctx = kv_u32(mf, "context_length"), n_embd = kv_u32(mf, "embedding_length");
    int32_t n_head = kv_u32(mf, "attention.head_count"), n_layer = kv_u32(mf, "block_count");
    bool neox = !strcmp(arch->name, "gptneox"), mpt = !strcmp(arch->name, "mpt"), gptj = !strcmp(arch->name, "gptj");
    put_i32(f, 0x67676d6c);
    if (mpt) {
        put_i32(f, n_embd), put_i32(f, n_ctx), put_i32(f, n_head), put_i32(f, n_layer), put_i32(f, n_vocab);
        put_f32(f, kv_f32(mf, "attention.max_alibi_bias")), put_f32(f, kv_f32(mf, "attention.clamp_kqv"));
        put_i32(f, o->ftype);
    } else {
        put_i32(f, n_vocab), put_i32(f, n_ctx), put_i32(f, n_embd), put_i32(f, n_head), put_i32(f, n_layer);
        if (neox) {
            const tport_kv *par = tport_model_file_kv(mf, "gptneox.use_parallel_residual");
            put_i32(f, kv_u32(mf, "rope.dimension_count"));
            put_i32(f, par && par->v.b);
        } else if (gptj) { /* gpt-j: n_rot after n_layer */
            put_i32(f, kv_u32(mf, "rope.dimension_count"));
        }
        put_i32(f, o->ftype);
        if (!neox) /* gpt-neox's vocabulary has no count prefix */
            put_i32(f, n_vocab);
    }
    bool ok = true;
    for (int32_t i = 0; i < n_vocab && ok; i++)
        ok = put_token(f, mf->vocab.tokens[i], mf->vocab.token_len[i], o->vocab);
    int64_t hd = n_embd / n_head;
    for (int k = 0; k < arch->n_tensors && ok; k++) {
        const tport_arch_tensor *t = &arch->tensors[k];
        int copies = t->flags & TENSOR_LAYER ? n_layer : 1;
        for (int il = 0; il < copies && ok; il++) {
            char gguf_name[96], legacy[96];
            const tport_mf_tensor *src = tport_arch_file_tensor(mf, arch, t->name, il, gguf_name, sizeof gguf_name);
            if (!src)
                continue;
            const char *pattern = NULL;
            const char *gguf, *file;
            for (int i = 0; mf_example_name_at(arch->name, i, &gguf, &file); i++)
                if (!strcmp(gguf, t->name))
                    pattern = file;
            if (!pattern || src->type != TPORT_TYPE_F32) {
                fprintf(stderr, "  %s: no example name or not f32\n", gguf_name);
                ok = false;
                break;
            }
            snprintf(legacy, sizeof legacy, pattern, il);
            int qkv = !strstr(t->name, "attn_qkv") ? QKV_AS_IS
                      : neox                       ? QKV_INTERLEAVE
                      : o->expand_mqa              ? QKV_EXPAND_MQA
                                                   : QKV_AS_IS;
            ok = put_tensor(f, legacy, src, qkv, n_head, hd, o);
        }
    }
    return fclose(f) == 0 && ok;
}
