/* ONNX models as weights (not interpreted): a decoder exported from a
 * Hugging Face model (torch.onnx / Optimum) keeps its parameters as
 * initializers.  Each float initializer is named from the graph:
 *  - an initializer with a Hugging Face name ("model.layers.0.
 *    input_layernorm.weight", "model.embed_tokens.weight") keeps it;
 *  - a MatMul's weight (input B, stored [in, out]: torch.onnx folds
 *    nn.Linear's transpose into the constant, often named "onnx::MatMul_N")
 *    takes the module path of its node ("/model/layers.0/self_attn/q_proj/
 *    MatMul" -> model.layers.0.self_attn.q_proj.weight) and is transposed
 *    back to [out, in]; onnxruntime-genai's "NAME.MatMul.weight" names
 *    give NAME.weight the same way;
 *  - a Gather's table (input 0) named from its node likewise;
 *  - block-quantized weights: com.microsoft.MatMulNBits' B (named from
 *    onnxruntime's "NAME.MatMul.weight_Q4" or its node) and a
 *    DequantizeLinear's x feeding a MatMul's B or a Gather's table, each
 *    re-encoded into a tensorport type that holds it exactly
 *    (onnx_quant.c), f32 where none does; the notes say which.
 * The tensors then go through the Hugging Face path (config.json beside
 * the model: architecture, keys, q/k un-permutation, tokenizer.json), so
 * an ONNX export runs and converts like the folder it was exported from;
 * onnxruntime-genai's genai_config.json, when there, is checked against
 * it and applied (onnx_genai.c).
 * Refused, naming what: other quantized ops (QuantizeLinear, MatMulInteger,
 * GatherBlockQuantized, ...), quantized activations, MatMulNBits' g_idx,
 * a MatMul/Gemm/Gather weight that cannot be named,
 * weights of other data types, external data whose location leaves the
 * model's folder or whose bytes are not in the file.  Float constants not
 * used as weights (RoPE caches, masks) are left out. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/mf_internal.h"
#include "formats/onnx_genai.h"
#include "formats/onnx_proto.h"
#include "formats/onnx_quant.h"
#include "core/tensor.h"

bool mf_onnx_sniff(const mf_cursor *c) { return onnx_sniff(c->data, c->size); }

/* Ops whose presence means quantized weights this reader does not map. */
static const char *const QUANT_OPS[] = {"QuantizeLinear", "DynamicQuantizeLinear",
                                        "MatMulInteger", "QLinearMatMul", "GatherBlockQuantized", "MatMulFpQ4",
                                        "QMoE", NULL};

typedef struct consumer {
    int32_t node; /* -1: none */
    uint32_t input;
} consumer;

static const onnx_model *sort_model;
static int cmp_init(const void *a, const void *b) {
    const char *x = sort_model->inits[*(const uint32_t *)a].name, *y = sort_model->inits[*(const uint32_t *)b].name;
    return strcmp(x ? x : "", y ? y : "");
}

static int32_t find_init(const onnx_model *o, const uint32_t *order, const char *name) {
    int64_t lo = 0, hi = (int64_t)o->n_inits - 1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        const char *n = o->inits[order[mid]].name;
        int c = strcmp(n ? n : "", name);
        if (!c)
            return (int32_t)order[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return -1;
}

static bool starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }
static bool ends(const char *s, const char *p) {
    size_t n = strlen(s), k = strlen(p);
    return n >= k && !strcmp(s + n - k, p);
}

static bool hf_like(const char *name) {
    return (starts(name, "model.") || starts(name, "lm_head.") || starts(name, "transformer.")) &&
           (ends(name, ".weight") || ends(name, ".bias"));
}

/* "/model/layers.0/self_attn/q_proj/MatMul" -> "model.layers.0.self_attn.q_proj.weight" */
static bool name_from_node(const char *node, char *out, size_t cap) {
    if (!node || node[0] != '/')
        return false;
    const char *last = strrchr(node, '/');
    size_t n = (size_t)(last - node - 1);
    if (last == node || n + 8 > cap)
        return false;
    memcpy(out, node + 1, n);
    out[n] = '\0';
    for (char *p = out; *p; p++)
        if (*p == '/')
            *p = '.';
    strcat(out, ".weight");
    return hf_like(out);
}

/* onnxruntime-genai: "model.layers.0.attn.q_proj.MatMul.weight" ->
 * "model.layers.0.self_attn.q_proj.weight" */
static bool name_from_genai(const char *name, char *out, size_t cap) {
    static const char suffix[] = ".MatMul.weight";
    if (!ends(name, suffix) || strlen(name) + 8 > cap)
        return false;
    size_t n = strlen(name) - (sizeof suffix - 1);
    const char *attn = strstr(name, ".attn.");
    if (attn && (size_t)(attn - name) < n)
        snprintf(out, cap, "%.*s.self_attn.%.*s.weight", (int)(attn - name), name, (int)(n - (size_t)(attn - name) - 6),
                 attn + 6);
    else
        snprintf(out, cap, "%.*s.weight", (int)n, name);
    return hf_like(out);
}

static bool dtype_of(int32_t dt, tport_type_id *t, uint64_t *es) {
    switch (dt) {
    case ONNX_FLOAT: *t = TPORT_TYPE_F32, *es = 4; return true;
    case ONNX_FLOAT16: *t = TPORT_TYPE_F16, *es = 2; return true;
    case ONNX_BFLOAT16: *t = TPORT_TYPE_BF16, *es = 2; return true;
    default: return false;
    }
}

/* External data's file: a relative path inside the model's folder. */
static bool safe_location(const char *loc) {
    if (!loc || !loc[0] || loc[0] == '/' || strchr(loc, '\\') || strlen(loc) > 1024)
        return false;
    for (const char *p = loc; *p; p++)
        if ((unsigned char)*p < 0x20)
            return false;
    for (const char *seg = loc; seg;) { /* no ".." component, no empty one */
        const char *slash = strchr(seg, '/');
        size_t n = slash ? (size_t)(slash - seg) : strlen(seg);
        if (n == 0 || (n == 2 && !strncmp(seg, "..", 2)))
            return false;
        seg = slash ? slash + 1 : NULL;
    }
    return true;
}

/* The bytes into memory owned by mf, or (temporary) malloc'ed for the
 * caller to free: quantized sources, re-encoded and then not needed. */
static tport_status read_external(tport_model_file *mf, const mf_cursor *c, const onnx_tensor *t, uint64_t nbytes,
                                  bool temporary, void **out) {
    *out = NULL;
    if (mf->borrowed)
        return mf_fail(c, 0, "initializer '%.80s': external data cannot be read from memory", t->name);
    if (!safe_location(t->location))
        return mf_fail(c, 0, "initializer '%.80s': external data location '%.80s' is not a file inside the model's "
                       "folder", t->name, t->location ? t->location : "");
    if (t->has_ext_length && t->ext_length != nbytes)
        return mf_fail(c, 0, "initializer '%.80s': external data of %llu bytes, its type and shape need %llu", t->name,
                       (unsigned long long)t->ext_length, (unsigned long long)nbytes);
    const char *slash = strrchr(mf->path, '/');
    size_t dir = slash ? (size_t)(slash - mf->path) + 1 : 0;
    char *path = malloc(dir + strlen(t->location) + 1);
    if (!path)
        return TPORT_STATUS_OUT_OF_MEMORY;
    memcpy(path, mf->path, dir);
    strcpy(path + dir, t->location);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    tport_status s = TPORT_STATUS_OK;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        s = tport_error(TPORT_STATUS_IO, "%s: initializer '%.80s': cannot open external data %s", mf->path, t->name,
                        path);
    else if (t->ext_offset > (uint64_t)st.st_size || nbytes > (uint64_t)st.st_size - t->ext_offset)
        s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: initializer '%.80s': bytes %llu..%llu are past the end of %s "
                        "(%lld bytes)", mf->path, t->name, (unsigned long long)t->ext_offset,
                        (unsigned long long)(t->ext_offset + nbytes), path, (long long)st.st_size);
    size_t alloc = nbytes ? (size_t)nbytes : 1;
    uint8_t *buf = s ? NULL : temporary ? malloc(alloc) : mf_alloc(mf, alloc);
    if (!s && !buf)
        s = TPORT_STATUS_OUT_OF_MEMORY;
    for (uint64_t done = 0; !s && done < nbytes;) {
        ssize_t got = pread(fd, buf + done, (size_t)(nbytes - done), (off_t)(t->ext_offset + done));
        if (got <= 0)
            s = tport_error(TPORT_STATUS_IO, "%s: reading external data %s failed", mf->path, path);
        else
            done += (uint64_t)got;
    }
    if (fd >= 0)
        close(fd);
    free(path);
    if (s && temporary)
        free(buf), buf = NULL;
    *out = buf;
    return s;
}

/* One weight: its Hugging Face name, layout and bytes, into the list. */
static tport_status add_weight(tport_model_file *mf, const mf_cursor *c, const onnx_tensor *t, const char *hf,
                               bool transposed) {
    tport_type_id type;
    uint64_t es, numel = 1;
    if (!dtype_of(t->data_type, &type, &es))
        return mf_fail(c, t->data_offset, "initializer '%.80s' (%.80s): data type %d is not float, float16 or "
                       "bfloat16", t->name, hf, (int)t->data_type);
    if (t->n_dims < 1 || t->n_dims > 4 || (transposed && t->n_dims != 2))
        return mf_fail(c, t->data_offset, "initializer '%.80s' (%.80s): %d dimensions", t->name, hf, t->n_dims);
    int64_t ne[4] = {1, 1, 1, 1};
    for (int d = 0; d < t->n_dims; d++) {
        ne[t->n_dims - 1 - d] = t->dims[d];
        if (!mf_mul_u64(numel, (uint64_t)t->dims[d], &numel))
            return mf_fail(c, t->data_offset, "initializer '%.80s': shape overflows", t->name);
    }
    uint64_t nbytes;
    if (!mf_mul_u64(numel, es, &nbytes))
        return mf_fail(c, t->data_offset, "initializer '%.80s': shape overflows", t->name);
    if (t->from_float_data && type != TPORT_TYPE_F32)
        return mf_fail(c, t->data_offset, "initializer '%.80s': float_data for a non-float type", t->name);
    char norm[256];
    mf_normalize_llama_name(hf, norm, sizeof norm);
    if (t->external) {
        void *data = NULL;
        MF_TRY(read_external(mf, c, t, nbytes, false, &data));
        MF_TRY(mf_add_owned_tensor(mf, norm, type, t->n_dims, ne, data, nbytes));
    } else {
        if (t->data_len != nbytes)
            return mf_fail(c, t->data_offset, "initializer '%.80s': %llu data bytes, its type and shape need %llu",
                           t->name, (unsigned long long)t->data_len, (unsigned long long)nbytes);
        MF_TRY(mf_add_tensor(mf, c, t->data_offset, norm, strlen(norm), type, t->n_dims, ne, t->data_offset));
    }
    if (transposed)
        MF_TRY(mf_transpose_2d(mf, c, &mf->tensors[mf->n_tensors - 1]));
    return TPORT_STATUS_OK;
}

/* ---- block-quantized weights ------------------------------------------ */

/* What each quantized weight became, for the model's notes. */
typedef struct qstat {
    const char *op;
    tport_type_id type;
    uint32_t count;
} qstat;
typedef struct qstats {
    qstat s[16];
    uint32_t n;
} qstats;

static void count_q(qstats *qs, const char *op, tport_type_id type) {
    for (uint32_t i = 0; i < qs->n; i++)
        if (qs->s[i].op == op && qs->s[i].type == type) {
            qs->s[i].count++;
            return;
        }
    if (qs->n < 16)
        qs->s[qs->n++] = (qstat){op, type, 1};
}

static bool qkind_of(int32_t dt, enum onnx_qkind *k, int *bits) {
    switch (dt) {
    case ONNX_UINT4: *k = QK_U4, *bits = 4; return true;
    case ONNX_INT4: *k = QK_I4, *bits = 4; return true;
    case ONNX_UINT8: *k = QK_U8, *bits = 8; return true;
    case ONNX_INT8: *k = QK_I8, *bits = 8; return true;
    case ONNX_FLOAT16: *k = QK_F16, *bits = 16; return true;
    case ONNX_BFLOAT16: *k = QK_BF16, *bits = 16; return true;
    case ONNX_FLOAT: *k = QK_F32, *bits = 32; return true;
    default: return false;
    }
}

static const onnx_tensor *init_named(const onnx_model *o, const uint32_t *order, const char *name) {
    int32_t k = name && name[0] ? find_init(o, order, name) : -1;
    return k >= 0 ? &o->inits[k] : NULL;
}

/* An initializer's elements (of `kinds`: 'q' codes, 'f' floats) as an
 * array of exactly n elements: inline bytes in place, external ones read. */
static tport_status qarray(tport_model_file *mf, const mf_cursor *c, const onnx_tensor *t, const char *role,
                           const char *kinds, uint64_t n, onnx_qarr *a) {
    int bits = 0;
    bool u8 = !strcmp(kinds, "u8");
    if (!qkind_of(t->data_type, &a->kind, &bits) || (u8 ? a->kind != QK_U8 : !strchr(kinds, bits <= 8 ? 'q' : 'f')))
        return mf_fail(c, t->data_offset, "%s '%.80s': data type %d is not one this reader maps (%s)", role, t->name,
                       (int)t->data_type, u8 ? "uint8" : kinds[0] == 'q' ?
                       "int4, uint4, int8, uint8" : "float, float16, bfloat16");
    uint64_t numel = 1, nbytes;
    for (int d = 0; d < t->n_dims; d++)
        if (!mf_mul_u64(numel, (uint64_t)t->dims[d], &numel))
            return mf_fail(c, t->data_offset, "%s '%.80s': shape overflows", role, t->name);
    if (numel != n)
        return mf_fail(c, t->data_offset, "%s '%.80s': %llu elements, the weight needs %llu", role, t->name,
                       (unsigned long long)numel, (unsigned long long)n);
    if (!mf_mul_u64(n, (uint64_t)bits, &nbytes))
        return mf_fail(c, t->data_offset, "%s '%.80s': shape overflows", role, t->name);
    nbytes = (nbytes + 7) / 8;
    a->n = n;
    if (t->external) {
        void *p = NULL;
        MF_TRY(read_external(mf, c, t, nbytes, true, &p));
        a->p = p;
        a->tmp = p;
        return TPORT_STATUS_OK;
    }
    if (t->from_float_data || t->data_len != nbytes)
        return mf_fail(c, t->data_offset, "%s '%.80s': %llu data bytes (raw_data), its type and shape need %llu",
                       role, t->name, (unsigned long long)t->data_len, (unsigned long long)nbytes);
    a->p = t->data;
    return TPORT_STATUS_OK;
}

/* The quantized weight, re-encoded, into the list as `hf`. */
static tport_status add_quant(tport_model_file *mf, const onnx_qsrc *q, const char *hf, const char *op,
                              qstats *qs) {
    tport_type_id type;
    void *data;
    uint64_t nbytes;
    MF_TRY(onnx_quant_encode(mf, q, &type, &data, &nbytes));
    char norm[256];
    mf_normalize_llama_name(hf, norm, sizeof norm);
    int64_t ne[4] = {q->K, q->N, 1, 1};
    MF_TRY(mf_add_owned_tensor(mf, norm, type, 2, ne, data, nbytes));
    count_q(qs, op, type);
    return TPORT_STATUS_OK;
}

/* "NAME_Q4" (onnxruntime's quantizer) -> NAME */
static void strip_q_suffix(const char *name, char *out, size_t cap) {
    snprintf(out, cap, "%s", name);
    char *u = strrchr(out, '_');
    if (u && u[1] == 'Q' && u[2] >= '0' && u[2] <= '9')
        *u = '\0';
}

/* From the weight's name ("...q_proj.MatMul.weight_Q4") or its node's
 * ("/model/layers.0/attn/q_proj/MatMulNBits": onnxruntime-genai's "attn"
 * is Hugging Face's "self_attn"). */
static bool quant_name(const onnx_tensor *w, const onnx_node *nd, char *hf, size_t cap) {
    char base[256];
    strip_q_suffix(w->name, base, sizeof base);
    if (name_from_genai(base, hf, cap))
        return true;
    if (!name_from_node(nd->name, hf, cap))
        return false;
    char *attn = strstr(hf, ".attn.");
    if (starts(hf, "model.layers.") && attn && strlen(hf) + 5 < cap) {
        memmove(attn + 10, attn + 5, strlen(attn + 5) + 1);
        memcpy(attn, ".self_attn", 10);
    }
    return true;
}

static tport_status int_attr(const mf_cursor *c, const onnx_node *nd, const char *name, int64_t lo, int64_t hi,
                             int64_t *v) {
    if (!onnx_attr_int(nd, name, v) || *v < lo || *v > hi)
        return mf_fail(c, 0, "%s node '%.80s': attribute %s %s (%lld..%lld)", nd->op_type, nd->name ? nd->name : "?",
                       name, onnx_attr_int(nd, name, v) ? "out of range" : "missing", (long long)lo, (long long)hi);
    return TPORT_STATUS_OK;
}

/* com.microsoft.MatMulNBits: B (input 1) [N, ceil(K/bs), bs*bits/8]
 * uint8, scales (2), zero points (3: packed uint8 or the scales' type),
 * g_idx (4, refused), bias (5). */
static tport_status nbits_source(tport_model_file *mf, const mf_cursor *c, const onnx_model *o, const uint32_t *order,
                                 const onnx_tensor *b, const onnx_node *nd, qstats *qs, onnx_qsrc *q) {
    const char *nn = nd->name ? nd->name : "?";
    if (!nd->domain || strcmp(nd->domain, "com.microsoft"))
        return mf_fail(c, 0, "node '%.80s': MatMulNBits of domain '%.40s' (com.microsoft's is read)", nn,
                       nd->domain ? nd->domain : "");
    int64_t K, N, bits, bs;
    MF_TRY(int_attr(c, nd, "K", 1, INT32_MAX, &K));
    MF_TRY(int_attr(c, nd, "N", 1, INT32_MAX, &N));
    MF_TRY(int_attr(c, nd, "bits", 1, 64, &bits));
    MF_TRY(int_attr(c, nd, "block_size", 16, 256, &bs));
    if (bits != 4 && bits != 8)
        return mf_fail(c, 0, "MatMulNBits node '%.80s': %lld-bit weights (4 and 8 are read)", nn, (long long)bits);
    if (bs & (bs - 1))
        return mf_fail(c, 0, "MatMulNBits node '%.80s': block_size %lld is not a power of 2", nn, (long long)bs);
    if (nd->n_inputs > 4 && nd->inputs[4][0])
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: MatMulNBits node '%.80s' has g_idx (act-order GPTQ): not "
                           "supported", mf->path, nn);
    char hf[256];
    if (!quant_name(b, nd, hf, sizeof hf))
        return mf_fail(c, b->data_offset, "initializer '%.80s' is the weight of MatMulNBits node '%.80s', which names "
                       "no module of a Hugging Face decoder", b->name, nn);
    int64_t nb = (K + bs - 1) / bs;
    uint64_t n_codes; /* N, K < 2^31: N * nb * bs < 2^63, checked all the same */
    if (!mf_mul_u64((uint64_t)N, (uint64_t)(nb * bs), &n_codes) || n_codes > (UINT64_MAX >> 4))
        return mf_fail(c, 0, "MatMulNBits node '%.80s': K x N overflows", nn);
    q->N = N, q->K = K, q->nbits = true, q->bits = (int)bits, q->bs = bs, q->nb = nb;
    MF_TRY(qarray(mf, c, b, "MatMulNBits B", "u8", n_codes * (uint64_t)bits / 8, &q->codes));
    q->codes.kind = bits == 4 ? QK_U4 : QK_U8;
    q->codes.n = n_codes;
    const onnx_tensor *sc = init_named(o, order, nd->n_inputs > 2 ? nd->inputs[2] : NULL);
    if (!sc)
        return mf_fail(c, 0, "MatMulNBits node '%.80s': its scales are not an initializer", nn);
    MF_TRY(qarray(mf, c, sc, "MatMulNBits scales", "f", (uint64_t)(N * nb), &q->scales));
    q->zp_default = (float)(1 << (bits - 1));
    q->zps.kind = QK_NONE;
    if (nd->n_inputs > 3 && nd->inputs[3][0]) {
        const onnx_tensor *zp = init_named(o, order, nd->inputs[3]);
        if (!zp)
            return mf_fail(c, 0, "MatMulNBits node '%.80s': its zero points are not an initializer", nn);
        if (zp->data_type == ONNX_UINT8) { /* packed: each row whole bytes */
            int64_t row_bytes = (nb * bits + 7) / 8;
            MF_TRY(qarray(mf, c, zp, "MatMulNBits zero points", "u8", (uint64_t)(N * row_bytes), &q->zps));
            q->zps.kind = bits == 4 ? QK_U4 : QK_U8;
            q->zp_row = row_bytes * 8 / bits;
            q->zps.n = (uint64_t)(N * q->zp_row);
        } else {
            if (zp->data_type != sc->data_type)
                return mf_fail(c, zp->data_offset, "MatMulNBits node '%.80s': zero points of type %d, neither uint8 "
                               "nor the scales' type", nn, (int)zp->data_type);
            MF_TRY(qarray(mf, c, zp, "MatMulNBits zero points", "f", (uint64_t)(N * nb), &q->zps));
            q->zp_row = nb;
        }
    }
    MF_TRY(add_quant(mf, q, hf, "MatMulNBits", qs));
    const onnx_tensor *bias = init_named(o, order, nd->n_inputs > 5 ? nd->inputs[5] : NULL);
    if (nd->n_inputs > 5 && nd->inputs[5][0] && !bias)
        return mf_fail(c, 0, "MatMulNBits node '%.80s': its bias is not an initializer", nn);
    if (bias) {
        size_t n = strlen(hf);
        if (n < 7 || n - 7 + 6 >= sizeof hf)
            return mf_fail(c, 0, "MatMulNBits node '%.80s': no name for its bias", nn);
        strcpy(hf + n - 7, ".bias"); /* "NAME.weight" -> "NAME.bias" */
        if (bias->n_dims != 1 || bias->dims[0] != N)
            return mf_fail(c, bias->data_offset, "MatMulNBits node '%.80s': bias of %d dimensions, not [N]", nn,
                           bias->n_dims);
        MF_TRY(add_weight(mf, c, bias, hf, false));
    }
    return TPORT_STATUS_OK;
}

/* DequantizeLinear (x: input 0, an initializer) feeding a MatMul's B
 * (the weight transposed, as float MatMul weights are) or a Gather's
 * table: per tensor, per axis, or blocks of block_size along axis. */
static tport_status dequant_source(tport_model_file *mf, const mf_cursor *c, const onnx_model *o, const uint32_t *order,
                                   const onnx_tensor *x, const onnx_node *nd, qstats *qs, onnx_qsrc *q) {
    const char *nn = nd->name ? nd->name : "?";
    const onnx_node *use = NULL;
    uint32_t use_in = 0;
    for (uint32_t i = 0; nd->n_outputs && !use && i < o->n_nodes; i++)
        for (uint32_t j = 0; !use && j < o->nodes[i].n_inputs; j++)
            if (!strcmp(o->nodes[i].inputs[j], nd->outputs[0]))
                use = &o->nodes[i], use_in = j;
    const char *uop = use && use->op_type ? use->op_type : "";
    bool matmul = !strcmp(uop, "MatMul") && use_in == 1, gather = !strcmp(uop, "Gather") && use_in == 0;
    if (!matmul && !gather)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: DequantizeLinear node '%.80s' feeds %s%s, not a MatMul's "
                           "weight or a Gather's table: not supported", mf->path, nn, use ? "node " : "no node",
                           use && use->name ? use->name : "");
    char hf[256], base[256];
    snprintf(base, sizeof base, "%s", x->name);
    if (ends(base, "_quantized"))
        base[strlen(base) - 10] = '\0';
    if (!(matmul && name_from_genai(base, hf, sizeof hf)) && !name_from_node(use->name, hf, sizeof hf))
        return mf_fail(c, x->data_offset, "initializer '%.80s' is dequantized for %s node '%.80s', which names no "
                       "module of a Hugging Face decoder", x->name, uop, use->name ? use->name : "?");
    if (x->n_dims != 2)
        return mf_fail(c, x->data_offset, "DequantizeLinear node '%.80s': a weight of %d dimensions (2 are read)", nn,
                       x->n_dims);
    int64_t axis = 1, bs = 0;
    onnx_attr_int(nd, "axis", &axis);
    onnx_attr_int(nd, "block_size", &bs);
    if (axis < 0)
        axis += 2;
    if (axis < 0 || axis > 1 || bs < 0 || bs > INT32_MAX)
        return mf_fail(c, 0, "DequantizeLinear node '%.80s': axis or block_size out of range", nn);
    q->R = x->dims[0], q->C = x->dims[1], q->transposed = matmul, q->axis = (int)axis, q->bs = bs;
    q->N = matmul ? q->C : q->R, q->K = matmul ? q->R : q->C;
    if (q->R <= 0 || q->C <= 0 || q->R > INT32_MAX || q->C > INT32_MAX)
        return mf_fail(c, x->data_offset, "DequantizeLinear node '%.80s': an empty or too large weight", nn);
    MF_TRY(qarray(mf, c, x, "DequantizeLinear x", "q", (uint64_t)(q->R * q->C), &q->codes));
    q->bits = q->codes.kind == QK_U4 || q->codes.kind == QK_I4 ? 4 : 8;
    const onnx_tensor *sc = init_named(o, order, nd->n_inputs > 1 ? nd->inputs[1] : NULL);
    if (!sc)
        return mf_fail(c, 0, "DequantizeLinear node '%.80s': its scale is not an initializer", nn);
    int64_t along = axis == 0 ? q->R : q->C, other = axis == 0 ? q->C : q->R;
    uint64_t n_scale;
    if (bs > 0) {
        int64_t nblk = (along + bs - 1) / bs;
        int64_t want0 = axis == 0 ? nblk : other, want1 = axis == 0 ? other : nblk;
        if (sc->n_dims != 2 || sc->dims[0] != want0 || sc->dims[1] != want1)
            return mf_fail(c, sc->data_offset, "DequantizeLinear node '%.80s': block_size %lld needs a scale of "
                           "[%lld, %lld]", nn, (long long)bs, (long long)want0, (long long)want1);
        q->scale_rank = 2, n_scale = (uint64_t)(nblk * other);
    } else if (sc->n_dims == 0 || (sc->n_dims == 1 && sc->dims[0] == 1 && along != 1)) {
        q->scale_rank = 0, n_scale = 1;
    } else if (sc->n_dims == 1 && sc->dims[0] == along) {
        q->scale_rank = 1, n_scale = (uint64_t)along;
    } else
        return mf_fail(c, sc->data_offset, "DequantizeLinear node '%.80s': a scale of %d dimensions fits neither "
                       "the tensor nor axis %lld", nn, sc->n_dims, (long long)axis);
    MF_TRY(qarray(mf, c, sc, "DequantizeLinear scale", "f", n_scale, &q->scales));
    q->zps.kind = QK_NONE, q->zp_default = 0.0f;
    const onnx_tensor *zp = init_named(o, order, nd->n_inputs > 2 ? nd->inputs[2] : NULL);
    if (nd->n_inputs > 2 && nd->inputs[2][0] && !zp)
        return mf_fail(c, 0, "DequantizeLinear node '%.80s': its zero point is not an initializer", nn);
    if (zp) {
        if (zp->data_type != x->data_type)
            return mf_fail(c, zp->data_offset, "DequantizeLinear node '%.80s': zero point of another type than x", nn);
        MF_TRY(qarray(mf, c, zp, "DequantizeLinear zero point", "q", n_scale, &q->zps));
    }
    return add_quant(mf, q, hf, "DequantizeLinear", qs);
}

/* A quantized weight (MatMulNBits or DequantizeLinear, read by `source`),
 * the source's temporary copies of external data freed after. */
typedef tport_status (*qsource_fn)(tport_model_file *mf, const mf_cursor *c, const onnx_model *o,
                                   const uint32_t *order, const onnx_tensor *w, const onnx_node *nd, qstats *qs,
                                   onnx_qsrc *q);
static tport_status map_quant(qsource_fn source, tport_model_file *mf, const mf_cursor *c, const onnx_model *o,
                              const uint32_t *order, const onnx_tensor *w, const onnx_node *nd, qstats *qs) {
    onnx_qsrc q = {0};
    tport_status st = source(mf, c, o, order, w, nd, qs, &q);
    free(q.codes.tmp);
    free(q.scales.tmp);
    free(q.zps.tmp);
    return st;
}

/* One short note (notes are 256 bytes): "ONNX re-encoded exactly:
 * MatMulNBits 13 q4_0, 2 f32" -- f32 where no block layout fits. */
static void note_quant(tport_model_file *mf, const qstats *qs) {
    char note[160];
    int k = snprintf(note, sizeof note, "ONNX quantized weights, exact:");
    for (uint32_t i = 0; i < qs->n && k > 0 && (size_t)k < sizeof note; i++)
        k += snprintf(note + k, sizeof note - (size_t)k, "%s%s%s %u %s", i ? "," : "",
                      i && qs->s[i].op == qs->s[i - 1].op ? "" : " ",
                      i && qs->s[i].op == qs->s[i - 1].op ? "" : qs->s[i].op, qs->s[i].count,
                      tport_type_name(qs->s[i].type));
    if (qs->n)
        mf_add_note(mf, note);
}

static tport_status map_weights(tport_model_file *mf, const mf_cursor *c, const onnx_model *o) {
    for (uint32_t i = 0; i < o->n_nodes; i++) {
        const onnx_node *nd = &o->nodes[i];
        for (const char *const *q = QUANT_OPS; nd->op_type && *q; q++)
            if (!strcmp(nd->op_type, *q))
                return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: node '%.80s' is %s%s%s: quantized ONNX weights are "
                                   "not supported yet (float initializers only)", mf->path, nd->name ? nd->name : "?",
                                   nd->domain && nd->domain[0] ? nd->domain : "", nd->domain && nd->domain[0] ? "." : "",
                                   nd->op_type);
    }
    qstats qs = {0};
    uint32_t *order = malloc((o->n_inits ? o->n_inits : 1) * sizeof *order);
    consumer *cons = malloc((o->n_inits ? o->n_inits : 1) * sizeof *cons);
    tport_status s = order && cons ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    for (uint32_t i = 0; !s && i < o->n_inits; i++) {
        order[i] = i;
        cons[i] = (consumer){-1, 0};
        if (!o->inits[i].name)
            s = mf_fail(c, o->inits[i].data_offset, "an initializer without a name");
    }
    if (!s) {
        sort_model = o;
        qsort(order, o->n_inits, sizeof *order, cmp_init);
        for (uint32_t i = 1; !s && i < o->n_inits; i++)
            if (!strcmp(o->inits[order[i]].name, o->inits[order[i - 1]].name))
                s = mf_fail(c, o->inits[order[i]].data_offset, "two initializers named '%.80s'",
                            o->inits[order[i]].name);
    }
    for (uint32_t i = 0; !s && i < o->n_nodes; i++) { /* DequantizeLinear of an activation: QDQ activations */
        const onnx_node *nd = &o->nodes[i];
        if (nd->op_type && !strcmp(nd->op_type, "DequantizeLinear") &&
            (!nd->n_inputs || find_init(o, order, nd->inputs[0]) < 0))
            s = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: DequantizeLinear node '%.80s' dequantizes an activation "
                            "(quantized activations are not supported; weights only)", mf->path,
                            nd->name ? nd->name : "?");
        if (nd->op_type && !strcmp(nd->op_type, "MatMulNBits") &&
            (nd->n_inputs < 3 || find_init(o, order, nd->inputs[1]) < 0))
            s = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: MatMulNBits node '%.80s': its weight B is not an "
                            "initializer, or it has no scales", mf->path, nd->name ? nd->name : "?");
    }
    for (uint32_t i = 0; !s && i < o->n_nodes; i++)
        for (uint32_t j = 0; j < o->nodes[i].n_inputs; j++) {
            int32_t k = find_init(o, order, o->nodes[i].inputs[j]);
            if (k >= 0 && cons[k].node < 0)
                cons[k] = (consumer){(int32_t)i, j};
        }
    for (uint32_t i = 0; !s && i < o->n_inits; i++) {
        const onnx_tensor *t = &o->inits[i];
        const onnx_node *nd = cons[i].node >= 0 ? &o->nodes[cons[i].node] : NULL;
        const char *op = nd && nd->op_type ? nd->op_type : "";
        bool matmul = !strcmp(op, "MatMul") && cons[i].input == 1;
        bool gather = !strcmp(op, "Gather") && cons[i].input == 0;
        bool weight_op = matmul || gather || !strcmp(op, "Gemm");
        char hf[256];
        tport_type_id type;
        uint64_t es;
        if (!strcmp(op, "MatMulNBits") || !strcmp(op, "DequantizeLinear")) {
            if (cons[i].input == 0 && op[0] == 'D')
                s = map_quant(dequant_source, mf, c, o, order, t, nd, &qs);
            else if (cons[i].input == 1 && op[0] == 'M')
                s = map_quant(nbits_source, mf, c, o, order, t, nd, &qs);
            /* else: scales, zero points, bias: read with their weight */
        } else if (!strcmp(op, "Gemm"))
            s = mf_fail(c, t->data_offset, "initializer '%.80s' is used by Gemm node '%.80s': Gemm weights are not "
                        "mapped (export with MatMul)", t->name, nd->name ? nd->name : "?");
        else if (matmul && (name_from_genai(t->name, hf, sizeof hf) || name_from_node(nd->name, hf, sizeof hf)))
            s = add_weight(mf, c, t, hf, true);
        else if (hf_like(t->name) && !matmul)
            s = add_weight(mf, c, t, t->name, false);
        else if (gather && name_from_node(nd->name, hf, sizeof hf))
            s = add_weight(mf, c, t, hf, false);
        else if (weight_op && dtype_of(t->data_type, &type, &es))
            s = mf_fail(c, t->data_offset, "initializer '%.80s' is the weight of %s node '%.80s', which names no "
                        "module of a Hugging Face decoder", t->name, op, nd && nd->name ? nd->name : "?");
        /* else: a constant, not a weight (shapes, RoPE caches, masks) */
    }
    if (!s)
        note_quant(mf, &qs);
    free(order);
    free(cons);
    return s;
}

tport_status mf_read_onnx(tport_model_file *mf, mf_cursor *c) {
    mf->container = TPORT_CONTAINER_ONNX;
    onnx_model o;
    if (!onnx_parse(c->data, c->size, &o)) {
        tport_status s = mf_fail(c, o.err_at, "ONNX: %s", o.err ? o.err : "malformed");
        onnx_free(&o);
        return s;
    }
    mf->version = (uint32_t)(o.ir_version > UINT32_MAX ? UINT32_MAX : o.ir_version);
    tport_status s = map_weights(mf, c, &o);
    if (!s) {
        char note[200];
        int k = snprintf(note, sizeof note, "ONNX ir %llu, opset %llu, producer %.40s %.20s; inputs:",
                         (unsigned long long)o.ir_version, (unsigned long long)o.opset,
                         o.producer ? o.producer : "?", o.producer_version ? o.producer_version : "");
        for (uint32_t i = 0; i < o.n_inputs && k > 0 && (size_t)k < sizeof note; i++)
            k += snprintf(note + k, sizeof note - (size_t)k, " %.40s", o.inputs[i]);
        mf_add_note(mf, note);
    }
    onnx_free(&o);
    if (s)
        return s;
    if (mf->n_tensors == 0)
        return mf_fail(c, 0, "ONNX: no initializer is a weight of a Hugging Face decoder");
    MF_TRY(mf_check_unique_names(mf, c));
    if (!mf->borrowed) {
        const char *slash = strrchr(mf->path, '/');
        char cfg[4096], genai[4096];
        snprintf(cfg, sizeof cfg, "%.*sconfig.json", slash ? (int)(slash - mf->path + 1) : 0, mf->path);
        snprintf(genai, sizeof genai, "%.*sgenai_config.json", slash ? (int)(slash - mf->path + 1) : 0, mf->path);
        if (access(cfg, R_OK) != 0)
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: an ONNX model needs the config.json it was exported "
                               "with beside it (Optimum writes it)%s", mf->path, access(genai, R_OK) != 0 ? "" :
                               "; genai_config.json gives no rms_norm_eps, rope_theta or intermediate_size (the "
                               "export bakes them into the graph)");
    }
    MF_TRY(mf_apply_hf_config(mf, c));
    bool genai;
    return mf_onnx_genai_config(mf, c, &genai);
}
