/* Pre-GGUF llama files (formats.md section 1): unversioned 'ggml', GGMF v1
 * and GGJT v1-v3.  Hyperparameters and vocabulary come from the header;
 * tensor records run to the end of the file.  Each tensor gets the type id
 * of the quantization layout its container generation implies. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "formats/mf_internal.h"

#define MAGIC_GGML 0x67676d6cu
#define MAGIC_GGMF 0x67676d66u
#define MAGIC_GGJT 0x67676a74u

/* On-disk ggml type code at a given quantization version -> tensorport
 * type id (formats.md 1.6, 3.8); false if that code cannot occur. */
bool mf_legacy_map_type(uint32_t code, int qnt, tport_type_id *out) {
    if (code == 0 || code == 1) {
        *out = code == 0 ? TPORT_TYPE_F32 : TPORT_TYPE_F16;
        return true;
    }
    if (qnt == 0) {
        static const tport_type_id qnt0[] = {0, 0, TPORT_TYPE_Q4_0_QNT0, TPORT_TYPE_Q4_1_QNT0, TPORT_TYPE_Q4_2_QNT0,
                                             TPORT_TYPE_Q4_3_QNT0, TPORT_TYPE_Q5_0_QNT0, TPORT_TYPE_Q5_1_QNT0,
                                             TPORT_TYPE_Q8_0_QNT1};
        if (code > 8)
            return false;
        *out = qnt0[code];
        return true;
    }
    if (qnt == 1) {
        switch (code) {
        case 2: *out = TPORT_TYPE_Q4_0_QNT1; return true;
        case 3: *out = TPORT_TYPE_Q4_1_QNT1; return true;
        case 6: *out = TPORT_TYPE_Q5_0; return true; /* QNT1 -> QNT2 is the identity for Q5 */
        case 7: *out = TPORT_TYPE_Q5_1; return true;
        case 8: *out = TPORT_TYPE_Q8_0_QNT1; return true;
        default: return false;
        }
    }
    if ((code >= 2 && code <= 3) || (code >= 6 && code <= 8) || (code >= 10 && code <= 14)) {
        *out = code;
        return true;
    }
    return false;
}

static bool plausible_scale(const uint8_t *p) {
    float d;
    uint32_t u = mf_le32(p);
    memcpy(&d, &u, 4);
    return isfinite(d) && d >= 0.0f && (d == 0.0f || (d > 1e-12f && d < 1e4f));
}

/* The Q4_0 of 2023-03-10 stored each row as all its f32 scales, then all
 * its nibbles; from 03-11 blocks were {d, qs[16]}.  Nothing in the file
 * says which, so look at the first rows: in the older layout the first
 * 4*nb bytes are all plausible scales, in the newer one every 20th. */
static bool q4_0_looks_rowsplit(const uint8_t *data, int64_t nb, int64_t rows) {
    if (nb < 2)
        return false;
    bool split = true, interleaved = true;
    for (int64_t r = 0; r < rows && r < 4; r++) {
        const uint8_t *row = data + r * nb * 20;
        for (int64_t b = 0; b < nb; b++) {
            split = split && plausible_scale(row + 4 * b);
            interleaved = interleaved && plausible_scale(row + 20 * b);
        }
    }
    return split && !interleaved;
}

static void rowsplit_to_qnt0(const uint8_t *src, uint8_t *dst, int64_t nb, int64_t rows) {
    for (int64_t r = 0; r < rows; r++) {
        const uint8_t *d = src + r * nb * 20, *qs = d + 4 * nb;
        uint8_t *o = dst + r * nb * 20;
        for (int64_t b = 0; b < nb; b++) {
            memcpy(o + 20 * b, d + 4 * b, 4);
            memcpy(o + 20 * b + 4, qs + 16 * b, 16);
        }
    }
}

static tport_status read_vocab(tport_model_file *mf, mf_cursor *c, uint32_t n_vocab, bool with_scores) {
    tport_vocab *v = &mf->vocab;
    uint64_t min_entry = with_scores ? 8 : 4;
    if (n_vocab > mf_left(c) / min_entry)
        return mf_fail(c, c->pos, "vocabulary of %u entries cannot fit in the %llu bytes left", n_vocab,
                       (unsigned long long)mf_left(c));
    v->tokens = mf_alloc_array(mf, n_vocab ? n_vocab : 1, sizeof(char *));
    v->token_len = mf_alloc_array(mf, n_vocab ? n_vocab : 1, sizeof(uint32_t));
    if (with_scores)
        v->scores = mf_alloc_array(mf, n_vocab ? n_vocab : 1, sizeof(float));
    if (!v->tokens || !v->token_len || (with_scores && !v->scores))
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (uint32_t i = 0; i < n_vocab; i++) {
        uint32_t len;
        const uint8_t *p;
        uint64_t at = c->pos;
        MF_TRY(mf_read_u32(c, &len, "token length"));
        if (len > mf_left(c))
            return mf_fail(c, at, "token %u: length %u exceeds the %llu bytes left", i, len,
                           (unsigned long long)mf_left(c));
        MF_TRY(mf_read_bytes(c, len, &p, "token text"));
        if (!(v->tokens[i] = mf_strndup(mf, p, len)))
            return TPORT_STATUS_OUT_OF_MEMORY;
        v->token_len[i] = len;
        if (with_scores)
            MF_TRY(mf_read_f32(c, &v->scores[i], "token score"));
    }
    v->n_tokens = (int32_t)n_vocab;
    snprintf(v->model, sizeof v->model, "llama");
    /* llama.cpp of that time fixed these ids for the LLaMA SentencePiece vocabulary */
    if (n_vocab > 2) {
        v->unk = 0;
        v->bos = 1;
        v->eos = 2;
    }
    v->add_bos = true;
    return TPORT_STATUS_OK;
}

tport_status mf_read_legacy_record(mf_cursor *c, mf_legacy_record *r) {
    r->at = c->pos;
    for (int d = 0; d < 4; d++)
        r->ne[d] = 1;
    MF_TRY(mf_read_i32(c, &r->n_dims, "tensor dimension count"));
    MF_TRY(mf_read_i32(c, &r->name_len, "tensor name length"));
    MF_TRY(mf_read_u32(c, &r->code, "tensor type"));
    if (r->n_dims < 1 || r->n_dims > 4)
        return mf_fail(c, r->at, "tensor with %d dimensions (1 to 4 allowed)", r->n_dims);
    if (r->name_len <= 0 || r->name_len >= 256 || (uint64_t)r->name_len > mf_left(c))
        return mf_fail(c, r->at + 4, "tensor name length %d is invalid", r->name_len);
    for (int d = 0; d < r->n_dims; d++) {
        int32_t v;
        uint64_t dat = c->pos;
        MF_TRY(mf_read_i32(c, &v, "tensor dimension"));
        if (v <= 0)
            return mf_fail(c, dat, "tensor dimension %d is not positive", v);
        r->ne[d] = v;
    }
    MF_TRY(mf_read_bytes(c, (uint64_t)r->name_len, &r->name, "tensor name"));
    if (memchr(r->name, '\0', (size_t)r->name_len))
        return mf_fail(c, r->at, "tensor name contains a NUL byte");
    return TPORT_STATUS_OK;
}

static tport_status read_tensor(tport_model_file *mf, mf_cursor *c, int qnt, bool aligned, int *n_rowsplit,
                                bool qk64, bool *saw_kquant) {
    mf_legacy_record rec;
    MF_TRY(mf_read_legacy_record(c, &rec));
    const uint64_t at = rec.at;
    const int32_t n_dims = rec.n_dims, name_len = rec.name_len;
    const uint32_t code = rec.code;
    int64_t *ne = rec.ne;
    char raw[256], norm[256];
    memcpy(raw, rec.name, (size_t)name_len);
    raw[name_len] = '\0';
    mf_normalize_llama_name(raw, norm, sizeof norm);
    tport_type_id type;
    if (!mf_legacy_map_type(code, qnt, &type))
        return mf_fail(c, at + 8, "tensor '%s': type %u does not exist at quantization version %d", raw, code, qnt);
    if (type >= TPORT_TYPE_Q2_K && type <= TPORT_TYPE_Q6_K) {
        *saw_kquant = true;
        if (qk64)
            mf_qk64_type(type, &type);
    }
    if (aligned)
        MF_TRY(mf_align(c, 32, "tensor data alignment padding"));
    uint64_t nbytes;
    MF_TRY(mf_tensor_bytes(c, at, type, n_dims, ne, &nbytes));
    if (nbytes > mf_left(c))
        return mf_fail(c, c->pos, "tensor '%s': %llu bytes of data, only %llu left in the file", raw,
                       (unsigned long long)nbytes, (unsigned long long)mf_left(c));
    uint64_t data_at = c->pos;
    c->pos += nbytes;
    if (mf->container == TPORT_CONTAINER_GGML && type == TPORT_TYPE_Q4_0_QNT0) {
        int64_t nb = ne[0] / 32, rows = (int64_t)(nbytes / 20 / (uint64_t)nb);
        if (q4_0_looks_rowsplit(c->data + data_at, nb, rows)) {
            uint8_t *copy = mf_alloc(mf, (size_t)nbytes);
            if (!copy)
                return TPORT_STATUS_OUT_OF_MEMORY;
            rowsplit_to_qnt0(c->data + data_at, copy, nb, rows);
            (*n_rowsplit)++;
            MF_TRY(mf_add_owned_tensor(mf, norm, type, n_dims, ne, copy, nbytes));
            mf->tensors[mf->n_tensors - 1].offset = data_at; /* where the original bytes are */
            return TPORT_STATUS_OK;
        }
    }
    return mf_add_tensor(mf, c, at, norm, strlen(norm), type, n_dims, ne, data_at);
}

/* Tensor records to the end of the file.  A GGML_QKK_64 build wrote
 * k-quants with 64-element super-blocks and nothing in the file says so
 * (formats.md 3.7): if the records do not parse with QK_K = 256 sizes and
 * a k-quant tensor was among them, they are read again with QK_K = 64. */
static tport_status read_tensors(tport_model_file *mf, mf_cursor *c, int qnt, bool aligned, int *n_rowsplit) {
    uint64_t start = c->pos;
    bool saw_kquant = false;
    tport_status s = TPORT_STATUS_OK;
    while (!s && c->pos < c->size)
        s = read_tensor(mf, c, qnt, aligned, n_rowsplit, false, &saw_kquant);
    if (!s || !saw_kquant || s != TPORT_STATUS_BAD_FORMAT)
        return s;
    char first[512];
    snprintf(first, sizeof first, "%s", tport_last_error());
    mf->n_tensors = 0; /* names already copied stay owned until close */
    *n_rowsplit = 0;
    c->pos = start;
    s = TPORT_STATUS_OK;
    while (!s && c->pos < c->size)
        s = read_tensor(mf, c, qnt, aligned, n_rowsplit, true, &saw_kquant);
    if (s)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s", first);
    snprintf(mf->notes, sizeof mf->notes, "k-quant tensors in the QK_K = 64 layout (a GGML_QKK_64 build)");
    return TPORT_STATUS_OK;
}

static tport_status read_llama(tport_model_file *mf, mf_cursor *c);

tport_status mf_read_ggml_legacy(tport_model_file *mf, mf_cursor *c) {
    uint32_t magic;
    MF_TRY(mf_read_u32(c, &magic, "magic"));
    c->pos = 0;
    if (magic != MAGIC_GGML)
        return read_llama(mf, c);
    /* Unversioned: a ggml example (gpt-2, gpt-j, neox) or llama.cpp's llama. */
    mf->container = TPORT_CONTAINER_GGML;
    char why[384];
    int progress;
    tport_status s = mf_read_ggml_example(mf, c, why, sizeof why, &progress);
    if (s != TPORT_STATUS_UNSUPPORTED)
        return s;
    c->pos = 0;
    mf->container = TPORT_CONTAINER_UNKNOWN;
    s = read_llama(mf, c);
    if (s != TPORT_STATUS_BAD_FORMAT)
        return s;
    char llama_why[384];
    const char *e = tport_last_error();
    size_t n = strlen(c->path);
    if (!strncmp(e, c->path, n) && e[n] == ':' && e[n + 1] == ' ')
        e += n + 2;
    snprintf(llama_why, sizeof llama_why, "%s", e);
    if (progress >= 1) /* the vocabulary count of some layout matched: an example file */
        return mf_fail(c, 4, "unknown ggml-example architecture (tried %s); as llama: %s", why, llama_why);
    return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %s; nor a ggml-example file: unknown ggml-example architecture "
                       "(tried %s)", c->path, llama_why, why);
}

static tport_status read_llama(tport_model_file *mf, mf_cursor *c) {
    uint32_t magic, version = 0;
    MF_TRY(mf_read_u32(c, &magic, "magic"));
    if (magic == MAGIC_GGML) {
        mf->container = TPORT_CONTAINER_GGML;
    } else {
        mf->container = magic == MAGIC_GGMF ? TPORT_CONTAINER_GGMF : TPORT_CONTAINER_GGJT;
        MF_TRY(mf_read_u32(c, &version, "version"));
        if ((magic == MAGIC_GGMF && version != 1) || (magic == MAGIC_GGJT && (version < 1 || version > 3)))
            return mf_fail(c, 4, "unsupported %s version %u", tport_container_name(mf->container), version);
    }
    mf->version = version;
    uint32_t hp[7];
    static const char *const names[7] = {"n_vocab", "n_embd", "n_mult", "n_head", "n_layer", "n_rot", "ftype"};
    for (int i = 0; i < 7; i++)
        MF_TRY(mf_read_u32(c, &hp[i], names[i]));
    uint32_t n_vocab = hp[0], n_embd = hp[1], n_mult = hp[2], n_head = hp[3], n_layer = hp[4], n_rot = hp[5];
    uint32_t ftype = hp[6];
    for (int i = 0; i < 5; i++)
        if (hp[i] == 0 || hp[i] > (1u << 24))
            return mf_fail(c, c->pos - 28 + 4 * (uint64_t)i, "implausible %s = %u", names[i], hp[i]);
    if (n_embd % n_head)
        return mf_fail(c, c->pos - 16, "n_embd %u is not a multiple of n_head %u", n_embd, n_head);
    int qnt;
    if (mf->container == TPORT_CONTAINER_GGML) {
        qnt = (int)(ftype / 1000); /* ggml examples: qnt * 1000 + ftype */
        ftype %= 1000;
        if (qnt > 2)
            return mf_fail(c, c->pos - 4, "unknown quantization version %d in ftype", qnt);
    } else {
        qnt = mf->container == TPORT_CONTAINER_GGJT ? (int)version - 1 : 0;
    }
    mf->quant_version = qnt;
    mf->file_type = ftype;
    snprintf(mf->arch, sizeof mf->arch, "llama");
    MF_TRY(read_vocab(mf, c, n_vocab, mf->container != TPORT_CONTAINER_GGML));

    bool aligned = mf->container == TPORT_CONTAINER_GGJT;
    mf->alignment = aligned ? 32 : 0;
    int n_rowsplit = 0;
    MF_TRY(read_tensors(mf, c, qnt, aligned, &n_rowsplit));
    MF_TRY(mf_check_unique_names(mf, c));
    /* An unversioned file is also what the ggml examples wrote: one read as
     * llama must have at least one llama tensor name (if it has tensors). */
    if (mf->container == TPORT_CONTAINER_GGML && mf->n_tensors > 0) {
        bool any = false;
        for (int i = 0; i < mf->n_tensors && !any; i++) { /* names are GGUF's by now */
            const char *n = mf->tensors[i].name;
            any = !strncmp(n, "blk.", 4) || !strcmp(n, "token_embd.weight") || !strcmp(n, "output_norm.weight") ||
                  !strcmp(n, "output.weight");
        }
        if (!any)
            return mf_fail(c, mf->tensors[0].offset, "none of the %d tensors has a llama name (the first is '%.64s')",
                           mf->n_tensors, mf->tensors[0].name);
    }
    /* Records run to the end of the file and nothing counts them: a file
     * with some of a llama's tensors is a valid container (old tools wrote
     * such files).  Say what a complete model would also need (LLaMA-1
     * files always stored output). */
    static const char *const globals[] = {"token_embd.weight", "output_norm.weight", "output.weight", NULL};
    static const char *const per_layer[] = {
        "blk.%d.attn_norm.weight", "blk.%d.attn_q.weight",   "blk.%d.attn_k.weight",
        "blk.%d.attn_v.weight",    "blk.%d.attn_output.weight", "blk.%d.ffn_norm.weight",
        "blk.%d.ffn_gate.weight",  "blk.%d.ffn_down.weight", "blk.%d.ffn_up.weight", NULL};
    char label[48];
    snprintf(label, sizeof label, "%u-layer llama", n_layer);
    MF_TRY(mf_list_missing(mf, label, globals, per_layer, n_layer));
    if (n_rowsplit)
        snprintf(mf->notes, sizeof mf->notes,
                 "%d q4_0 tensors in the 2023-03-10 row-split layout re-interleaved to q4_0_qnt0 at load (lossless)",
                 n_rowsplit);
    MF_TRY(mf_merge_parts(mf, c, n_embd));

    tport_mf_hparams *h = &mf->hp;
    h->n_vocab = n_vocab;
    h->n_embd = n_embd;
    h->n_head = n_head;
    h->n_head_kv = n_head; /* no GQA field in these headers: see attn_k below */
    const tport_mf_tensor *wk = tport_model_file_find(mf, "blk.0.attn_k.weight");
    uint32_t head_dim = n_embd / n_head;
    if (wk && wk->n_dims == 2 && wk->ne[0] == (int64_t)n_embd && wk->ne[1] < (int64_t)n_embd &&
        wk->ne[1] % head_dim == 0 && wk->ne[1] > 0 && n_head % (uint32_t)(wk->ne[1] / head_dim) == 0)
        h->n_head_kv = (uint32_t)(wk->ne[1] / head_dim); /* LLaMA-2 70B style GQA */
    h->n_layer = n_layer;
    h->n_rot = n_rot;
    h->n_ctx = 2048;       /* not stored; LLaMA's training context */
    const tport_mf_tensor *gate = tport_model_file_find(mf, "blk.0.ffn_gate.weight");
    if (gate && gate->n_dims == 2 && gate->ne[1] <= UINT32_MAX)
        h->n_ff = (uint32_t)gate->ne[1];
    else
        h->n_ff = (uint32_t)(((2ull * (4ull * n_embd) / 3 + n_mult - 1) / n_mult) * n_mult);
    h->norm_eps = 1e-6f; /* what llama.cpp used in the GGML era */
    h->rope_freq_base = 10000.0f;
    h->rope_freq_scale = 1.0f;
    h->rope_mode = TPORT_ROPE_NORMAL;
    return TPORT_STATUS_OK;
}
