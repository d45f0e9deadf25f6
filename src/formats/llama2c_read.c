/* llama2.c checkpoints: the legacy headerless layout (7 int32, then f32
 * weights grouped by kind, then the RoPE tables) and the versioned exports
 * of export.py (magic "ak42", 256-byte header; version 1 = f32, version 2 =
 * int8 groups with f32 scales).  No vocabulary is stored. */
#include <stdio.h>
#include <string.h>

#include "formats/mf_internal.h"

#define LLAMA2C_MAGIC 0x616b3432u
#define LLAMA2C_HEADER_BYTES 256

typedef struct l2c_header {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
} l2c_header;

/* Element counts of each weight kind (per layer where it applies). */
typedef struct l2c_sizes {
    uint64_t vocab, dim, hidden, layers, kv_dim, head_size, seq;
} l2c_sizes;

static bool header_ok(const l2c_header *h, l2c_sizes *z) {
    if (h->dim <= 0 || h->hidden_dim <= 0 || h->n_layers <= 0 || h->n_heads <= 0 || h->n_kv_heads <= 0 ||
        h->seq_len <= 0 || h->vocab_size == 0 || h->vocab_size == INT32_MIN)
        return false;
    if (h->dim % h->n_heads || h->n_heads % h->n_kv_heads || (h->dim / h->n_heads) % 2)
        return false;
    if (h->n_layers > 100000 || h->n_heads > 100000)
        return false;
    z->vocab = (uint64_t)(h->vocab_size < 0 ? -(int64_t)h->vocab_size : h->vocab_size);
    z->dim = (uint64_t)h->dim;
    z->hidden = (uint64_t)h->hidden_dim;
    z->layers = (uint64_t)h->n_layers;
    z->head_size = z->dim / (uint64_t)h->n_heads;
    z->kv_dim = z->head_size * (uint64_t)h->n_kv_heads;
    z->seq = (uint64_t)h->seq_len;
    return true;
}

/* Total f32 elements of the weights (legacy: with the two RoPE tables). */
static bool weight_elems(const l2c_sizes *z, bool shared, bool with_rope, uint64_t *out) {
    /* Each term is a product of at most three int32-sized values: compute
     * with overflow checks anyway, as the sums can still wrap. */
    uint64_t terms[12], t, total = 0;
    int n = 0;
    bool ok = mf_mul_u64(z->vocab, z->dim, &terms[n++]);                                    /* embd  */
    ok = ok && mf_mul_u64(z->layers, z->dim, &t) && (terms[n++] = t, true);                 /* rms_att */
    ok = ok && mf_mul_u64(z->layers, z->dim * z->dim, &t) && (terms[n++] = t, true);        /* wq */
    ok = ok && mf_mul_u64(z->layers, z->dim * z->kv_dim, &t) && (terms[n++] = t, true);     /* wk */
    ok = ok && mf_mul_u64(z->layers, z->dim * z->kv_dim, &t) && (terms[n++] = t, true);     /* wv */
    ok = ok && mf_mul_u64(z->layers, z->dim * z->dim, &t) && (terms[n++] = t, true);        /* wo */
    ok = ok && mf_mul_u64(z->layers, z->dim, &t) && (terms[n++] = t, true);                 /* rms_ffn */
    ok = ok && mf_mul_u64(z->layers, z->dim * z->hidden, &t) && mf_mul_u64(t, 3, &t) &&
         (terms[n++] = t, true);                                                             /* w1,w2,w3 */
    terms[n++] = z->dim;                                                                   /* rms_final */
    terms[n++] = with_rope ? z->seq * z->head_size : 0;                                    /* cos+sin */
    terms[n++] = shared ? 0 : terms[0];                                                    /* wcls */
    for (int i = 0; ok && i < n; i++)
        ok = mf_add_u64(total, terms[i], &total);
    *out = total;
    return ok;
}

static void read_header(const uint8_t *p, l2c_header *h) {
    int32_t v[7];
    for (int i = 0; i < 7; i++) {
        uint32_t u = mf_le32(p + 4 * i);
        memcpy(&v[i], &u, 4);
    }
    h->dim = v[0], h->hidden_dim = v[1], h->n_layers = v[2], h->n_heads = v[3];
    h->n_kv_heads = v[4], h->vocab_size = v[5], h->seq_len = v[6];
}

bool mf_llama2c_sniff(const mf_cursor *c) {
    if (c->size < 28)
        return false;
    l2c_header h;
    l2c_sizes z;
    uint64_t elems, bytes;
    read_header(c->data, &h);
    if (!header_ok(&h, &z) || !weight_elems(&z, h.vocab_size > 0, true, &elems))
        return false;
    return mf_mul_u64(elems, 4, &bytes) && bytes <= UINT64_MAX - 28 && bytes + 28 == c->size;
}

typedef struct l2c_reader {
    tport_model_file *mf;
    mf_cursor *c;
    const l2c_sizes *z;
} l2c_reader;

/* One f32 weight kind stored for every layer back to back: one tensor per
 * layer, zero copy.  ne = {n_in, n_out} as ggml wants; 1-D if n_out == 1. */
static tport_status add_f32_per_layer(l2c_reader *r, uint64_t *pos, const char *name, uint64_t n_in,
                                      uint64_t n_out) {
    char full[64];
    int64_t ne[2] = {(int64_t)n_in, (int64_t)n_out};
    for (uint64_t l = 0; l < r->z->layers; l++) {
        snprintf(full, sizeof full, "blk.%llu.%s", (unsigned long long)l, name);
        MF_TRY(mf_add_tensor(r->mf, r->c, *pos, full, strlen(full), TPORT_TYPE_F32, n_out == 1 ? 1 : 2, ne, *pos));
        *pos += n_in * n_out * 4;
    }
    return TPORT_STATUS_OK;
}

static tport_status add_f32(l2c_reader *r, uint64_t *pos, const char *name, uint64_t n_in, uint64_t n_out) {
    int64_t ne[2] = {(int64_t)n_in, (int64_t)n_out};
    MF_TRY(mf_add_tensor(r->mf, r->c, *pos, name, strlen(name), TPORT_TYPE_F32, n_out == 1 ? 1 : 2, ne, *pos));
    *pos += n_in * n_out * 4;
    return TPORT_STATUS_OK;
}

/* Legacy and version 1: the same weights, in different orders. */
static tport_status read_f32_weights(l2c_reader *r, uint64_t pos, bool shared, int version) {
    const l2c_sizes *z = r->z;
    if (version == 0) {
        MF_TRY(add_f32(r, &pos, "token_embd.weight", z->dim, z->vocab));
        MF_TRY(add_f32_per_layer(r, &pos, "attn_norm.weight", z->dim, 1));
    } else {
        MF_TRY(add_f32_per_layer(r, &pos, "attn_norm.weight", z->dim, 1));
        MF_TRY(add_f32_per_layer(r, &pos, "ffn_norm.weight", z->dim, 1));
        MF_TRY(add_f32(r, &pos, "output_norm.weight", z->dim, 1));
        MF_TRY(add_f32(r, &pos, "token_embd.weight", z->dim, z->vocab));
    }
    MF_TRY(add_f32_per_layer(r, &pos, "attn_q.weight", z->dim, z->dim));
    MF_TRY(add_f32_per_layer(r, &pos, "attn_k.weight", z->dim, z->kv_dim));
    MF_TRY(add_f32_per_layer(r, &pos, "attn_v.weight", z->dim, z->kv_dim));
    MF_TRY(add_f32_per_layer(r, &pos, "attn_output.weight", z->dim, z->dim));
    if (version == 0)
        MF_TRY(add_f32_per_layer(r, &pos, "ffn_norm.weight", z->dim, 1));
    MF_TRY(add_f32_per_layer(r, &pos, "ffn_gate.weight", z->dim, z->hidden));
    MF_TRY(add_f32_per_layer(r, &pos, "ffn_down.weight", z->hidden, z->dim));
    MF_TRY(add_f32_per_layer(r, &pos, "ffn_up.weight", z->dim, z->hidden));
    if (version == 0) {
        MF_TRY(add_f32(r, &pos, "output_norm.weight", z->dim, 1));
        pos += 2 * z->seq * (z->head_size / 2) * 4; /* freq_cis_real/imag: RoPE is recomputed */
    }
    if (!shared)
        MF_TRY(add_f32(r, &pos, "output.weight", z->dim, z->vocab));
    if (pos != r->c->size)
        tport_log(TPORT_LOG_WARN, "%s: %llu bytes after the last weight ignored", r->mf->path,
                  (unsigned long long)(r->c->size - pos));
    return TPORT_STATUS_OK;
}

/* Version 2: int8 values of every quantized weight, then all their f32
 * scales, one per group of gs values.  With gs == 32 the pair is exactly
 * Q8_0 with an f32 scale (Q8_0_QNT1) and is repacked losslessly; any
 * other group size is dequantized to F32 (also exact). */
typedef struct q8_weight {
    const char *name;
    uint64_t n_in, n_out;
} q8_weight;

static tport_status read_q8_weights(l2c_reader *r, uint64_t pos, bool shared, int32_t gs) {
    const l2c_sizes *z = r->z;
    mf_cursor *c = r->c;
    MF_TRY(add_f32_per_layer(r, &pos, "attn_norm.weight", z->dim, 1));
    MF_TRY(add_f32_per_layer(r, &pos, "ffn_norm.weight", z->dim, 1));
    MF_TRY(add_f32(r, &pos, "output_norm.weight", z->dim, 1));

    const q8_weight kinds[] = {
        {"token_embd.weight", z->dim, z->vocab}, {"attn_q.weight", z->dim, z->dim},
        {"attn_k.weight", z->dim, z->kv_dim},    {"attn_v.weight", z->dim, z->kv_dim},
        {"attn_output.weight", z->dim, z->dim},  {"ffn_gate.weight", z->dim, z->hidden},
        {"ffn_down.weight", z->hidden, z->dim},  {"ffn_up.weight", z->dim, z->hidden},
        {"output.weight", z->dim, z->vocab},
    };
    size_t n_kinds = shared ? 8 : 9;
    /* First pass: total int8 bytes, to find where the scales start. */
    uint64_t q_bytes = 0;
    for (size_t k = 0; k < n_kinds; k++) {
        uint64_t per = kinds[k].n_in * kinds[k].n_out, reps = (k == 0 || k == 8) ? 1 : z->layers, t;
        if (per % (uint64_t)gs)
            return mf_fail(c, pos, "weight %s has %llu values, not a multiple of the group size %d", kinds[k].name,
                           (unsigned long long)per, gs);
        if (!mf_mul_u64(per, reps, &t) || !mf_add_u64(q_bytes, t, &q_bytes))
            return mf_fail(c, 8, "weight sizes overflow");
    }
    uint64_t scale_pos = 0, scale_bytes = 0, end = 0;
    if (!mf_add_u64(pos, q_bytes, &scale_pos) || !mf_mul_u64(q_bytes / (uint64_t)gs, 4, &scale_bytes) ||
        !mf_add_u64(scale_pos, scale_bytes, &end) || end > c->size)
        return mf_fail(c, pos, "int8 weights and scales (%llu + %llu bytes) run past the end of the file",
                       (unsigned long long)q_bytes, (unsigned long long)scale_bytes);
    for (size_t k = 0; k < n_kinds; k++) {
        uint64_t reps = (k == 0 || k == 8) ? 1 : z->layers;
        for (uint64_t l = 0; l < reps; l++) {
            char name[64];
            if (reps == 1)
                snprintf(name, sizeof name, "%s", kinds[k].name);
            else
                snprintf(name, sizeof name, "blk.%llu.%s", (unsigned long long)l, kinds[k].name);
            uint64_t n = kinds[k].n_in * kinds[k].n_out, n_groups = n / (uint64_t)gs;
            const int8_t *q = (const int8_t *)(c->data + pos);
            const uint8_t *s = c->data + scale_pos;
            int64_t ne[2] = {(int64_t)kinds[k].n_in, (int64_t)kinds[k].n_out};
            if (gs == 32) {
                uint8_t *blocks = mf_alloc_array(r->mf, n_groups, 36);
                if (!blocks)
                    return TPORT_STATUS_OUT_OF_MEMORY;
                for (uint64_t g = 0; g < n_groups; g++) {
                    memcpy(blocks + g * 36, s + g * 4, 4); /* f32 d, little-endian both sides */
                    memcpy(blocks + g * 36 + 4, q + g * 32, 32);
                }
                MF_TRY(mf_add_owned_tensor(r->mf, name, TPORT_TYPE_Q8_0_QNT1, 2, ne, blocks, n_groups * 36));
            } else {
                float *f = mf_alloc_array(r->mf, n, sizeof(float));
                if (!f)
                    return TPORT_STATUS_OUT_OF_MEMORY;
                for (uint64_t i = 0; i < n; i++) {
                    float d;
                    uint32_t u = mf_le32(s + (i / (uint64_t)gs) * 4);
                    memcpy(&d, &u, 4);
                    f[i] = (float)q[i] * d;
                }
                MF_TRY(mf_add_owned_tensor(r->mf, name, TPORT_TYPE_F32, 2, ne, f, n * 4));
            }
            pos += n;
            scale_pos += n_groups * 4;
        }
    }
    if (gs != 32)
        snprintf(r->mf->notes, sizeof r->mf->notes,
                 "int8 weights with group size %d dequantized to f32 at load (exact)", gs);
    else
        snprintf(r->mf->notes, sizeof r->mf->notes,
                 "int8 weights with f32 group scales repacked as q8_0_qnt1 at load (exact)");
    return TPORT_STATUS_OK;
}

tport_status mf_read_llama2c(tport_model_file *mf, mf_cursor *c) {
    l2c_header h;
    l2c_sizes z;
    int version = 0;
    bool shared;
    uint64_t pos;
    int32_t gs = 0;
    mf->container = TPORT_CONTAINER_LLAMA2C;
    if (mf_le32(c->data) == LLAMA2C_MAGIC) {
        const uint8_t *p;
        MF_TRY(mf_need(c, LLAMA2C_HEADER_BYTES, "llama2.c header"));
        p = c->data;
        memcpy(&version, p + 4, 4);
        if (version != 1 && version != 2)
            return mf_fail(c, 4, "unsupported llama2.c export version %d (1 and 2 are known)", version);
        read_header(p + 8, &h);
        shared = p[36] != 0;
        if (version == 2) {
            uint32_t u = mf_le32(p + 37);
            memcpy(&gs, &u, 4);
            if (gs <= 0 || gs > (1 << 20))
                return mf_fail(c, 37, "invalid quantization group size %d", gs);
        }
        if (h.vocab_size < 0)
            return mf_fail(c, 28, "negative vocab_size %d in a versioned export", h.vocab_size);
        pos = LLAMA2C_HEADER_BYTES;
    } else {
        read_header(c->data, &h);
        shared = h.vocab_size > 0;
        pos = 28;
    }
    if (!header_ok(&h, &z))
        return mf_fail(c, version ? 8 : 0,
                       "implausible llama2.c header (dim %d, hidden %d, layers %d, heads %d, kv heads %d, vocab %d, "
                       "seq %d)",
                       h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads, h.vocab_size, h.seq_len);
    mf->version = (uint32_t)version;
    if (version != 2) {
        uint64_t elems, bytes, end;
        if (!weight_elems(&z, shared, version == 0, &elems) || !mf_mul_u64(elems, 4, &bytes) ||
            !mf_add_u64(pos, bytes, &end) || end > c->size)
            return mf_fail(c, pos, "weights for this header need %llu bytes, the file has %llu after the header",
                           (unsigned long long)(elems * 4), (unsigned long long)(c->size - pos));
    }
    snprintf(mf->arch, sizeof mf->arch, "llama");
    tport_mf_hparams *hp = &mf->hp;
    hp->n_vocab = (uint32_t)z.vocab;
    hp->n_ctx = (uint32_t)z.seq;
    hp->n_embd = (uint32_t)z.dim;
    hp->n_ff = (uint32_t)z.hidden;
    hp->n_layer = (uint32_t)z.layers;
    hp->n_head = (uint32_t)h.n_heads;
    hp->n_head_kv = (uint32_t)h.n_kv_heads;
    hp->n_rot = (uint32_t)z.head_size;
    hp->norm_eps = 1e-5f;
    hp->rope_freq_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    hp->rope_mode = TPORT_ROPE_NORMAL; /* run.c rotates adjacent pairs */
    mf->file_type = version == 2 ? 7 : 0;
    mf->quant_version = version == 2 ? 1 : -1;
    l2c_reader r = {.mf = mf, .c = c, .z = &z};
    if (version == 2)
        return read_q8_weights(&r, pos, shared, gs);
    return read_f32_weights(&r, pos, shared, version);
}
