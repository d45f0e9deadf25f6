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
 *  - a Gather's table (input 0) named from its node likewise.
 * The tensors then go through the Hugging Face path (config.json beside
 * the model: architecture, keys, q/k un-permutation, tokenizer.json), so
 * an ONNX export runs and converts like the folder it was exported from.
 * Refused, naming what: quantized graphs (MatMulNBits, DequantizeLinear,
 * ...: not read yet), a MatMul/Gemm/Gather weight that cannot be named,
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
#include "formats/onnx_proto.h"

bool mf_onnx_sniff(const mf_cursor *c) { return onnx_sniff(c->data, c->size); }

/* Ops whose presence means quantized weights this reader does not map. */
static const char *const QUANT_OPS[] = {"MatMulNBits", "DequantizeLinear", "QuantizeLinear", "DynamicQuantizeLinear",
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

static tport_status read_external(tport_model_file *mf, const mf_cursor *c, const onnx_tensor *t, uint64_t nbytes,
                                  void **out) {
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
    uint8_t *buf = s ? NULL : mf_alloc(mf, nbytes ? (size_t)nbytes : 1);
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
        MF_TRY(read_external(mf, c, t, nbytes, &data));
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
        if (!strcmp(op, "Gemm"))
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
        char cfg[4096];
        snprintf(cfg, sizeof cfg, "%.*sconfig.json", slash ? (int)(slash - mf->path + 1) : 0, mf->path);
        if (access(cfg, R_OK) != 0)
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: an ONNX model needs the config.json it was exported "
                               "with beside it (Optimum writes it; genai_config.json is not read)", mf->path);
    }
    return mf_apply_hf_config(mf, c);
}
