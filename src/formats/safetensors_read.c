/* safetensors (u64 header length, JSON header, raw data), with the
 * Hugging Face config.json beside the file for llama hyperparameters.
 * Hugging Face stores the q/k projections permuted for its rotate-half
 * (NEOX-style) RoPE; they are un-permuted at load into Meta/GGUF order, so
 * every llama file runs with TPORT_ROPE_NORMAL and converts to GGUF as is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

#ifndef TPORT_HAVE_CJSON

tport_status mf_read_safetensors(tport_model_file *mf, mf_cursor *c) {
    mf->container = TPORT_CONTAINER_SAFETENSORS;
    return mf_fail(c, 0, "safetensors file, but tensorport was built without cJSON (libcjson-dev)");
}

#else

#include <cjson/cJSON.h>

#define MAX_HEADER_BYTES (100u << 20) /* the safetensors spec's limit */
#define MAX_CONFIG_BYTES (4u << 20)

static bool dtype_of(const char *s, tport_type_id *t) {
    static const struct {
        const char *name;
        tport_type_id type;
    } map[] = {{"F32", TPORT_TYPE_F32}, {"F16", TPORT_TYPE_F16}, {"BF16", TPORT_TYPE_BF16},
               {"I8", TPORT_TYPE_I8},   {"I16", TPORT_TYPE_I16}, {"I32", TPORT_TYPE_I32}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(s, map[i].name)) {
            *t = map[i].type;
            return true;
        }
    return false;
}

/* A JSON number that is a non-negative integer below 2^53. */
static bool json_uint(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j))
        return false;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || d != (double)(uint64_t)d)
        return false;
    *out = (uint64_t)d;
    return true;
}

static tport_status read_entry(tport_model_file *mf, const mf_cursor *c, const cJSON *e, uint64_t data_start) {
    const char *name = e->string;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    tport_type_id type;
    if (!cJSON_IsObject(e) || !cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs) ||
        cJSON_GetArraySize(offs) != 2)
        return mf_fail(c, 8, "tensor '%.64s': needs dtype, shape and data_offsets", name);
    if (!dtype_of(dtype->valuestring, &type))
        return mf_fail(c, 8, "tensor '%.64s': dtype %.16s is not supported", name, dtype->valuestring);
    int n_dims = cJSON_GetArraySize(shape);
    if (n_dims > 4)
        return mf_fail(c, 8, "tensor '%.64s': %d dimensions (at most 4)", name, n_dims);
    int64_t ne[4] = {1, 1, 1, 1};
    for (int d = 0; d < n_dims; d++) {
        uint64_t v;
        if (!json_uint(cJSON_GetArrayItem(shape, d), &v))
            return mf_fail(c, 8, "tensor '%.64s': bad shape entry", name);
        ne[n_dims - 1 - d] = (int64_t)v; /* row-major outermost first -> ggml ne[0] innermost */
    }
    uint64_t begin, end, abs_begin, nbytes;
    if (!json_uint(cJSON_GetArrayItem(offs, 0), &begin) || !json_uint(cJSON_GetArrayItem(offs, 1), &end) ||
        end < begin)
        return mf_fail(c, 8, "tensor '%.64s': bad data_offsets", name);
    MF_TRY(mf_tensor_bytes(c, 8, type, n_dims ? n_dims : 1, ne, &nbytes));
    if (end - begin != nbytes)
        return mf_fail(c, 8, "tensor '%.64s': data_offsets span %llu bytes, dtype and shape need %llu", name,
                       (unsigned long long)(end - begin), (unsigned long long)nbytes);
    if (!mf_add_u64(data_start, begin, &abs_begin))
        return mf_fail(c, 8, "tensor '%.64s': offset overflows", name);
    char norm[256];
    mf_normalize_llama_name(name, norm, sizeof norm);
    return mf_add_tensor(mf, c, data_start + begin < c->size ? data_start + begin : 8, norm, strlen(norm), type,
                         n_dims ? n_dims : 1, ne, abs_begin);
}

static cJSON *read_config(const char *model_path) {
    const char *slash = strrchr(model_path, '/');
    size_t dir_len = slash ? (size_t)(slash - model_path) + 1 : 0;
    char *path = malloc(dir_len + sizeof "config.json");
    if (!path)
        return NULL;
    memcpy(path, model_path, dir_len);
    memcpy(path + dir_len, "config.json", sizeof "config.json");
    FILE *f = fopen(path, "rb");
    free(path);
    if (!f)
        return NULL;
    char *buf = malloc(MAX_CONFIG_BYTES);
    size_t n = buf ? fread(buf, 1, MAX_CONFIG_BYTES, f) : 0;
    fclose(f);
    cJSON *j = n ? cJSON_ParseWithLength(buf, n) : NULL;
    free(buf);
    return j;
}

static uint32_t cfg_u32(const cJSON *cfg, const char *key) {
    uint64_t v;
    return json_uint(cJSON_GetObjectItemCaseSensitive(cfg, key), &v) && v <= UINT32_MAX ? (uint32_t)v : 0;
}

static bool cfg_f32(const cJSON *cfg, const char *key, float *out) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!cJSON_IsNumber(j))
        return false;
    *out = (float)j->valuedouble;
    return true;
}

static void apply_config(tport_model_file *mf, const cJSON *cfg) {
    tport_llama_hparams *hp = &mf->hp;
    const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
    snprintf(mf->arch, sizeof mf->arch, "%s", cJSON_IsString(mt) ? mt->valuestring : "llama");
    hp->n_embd = cfg_u32(cfg, "hidden_size");
    hp->n_ff = cfg_u32(cfg, "intermediate_size");
    hp->n_layer = cfg_u32(cfg, "num_hidden_layers");
    hp->n_head = cfg_u32(cfg, "num_attention_heads");
    hp->n_head_kv = cfg_u32(cfg, "num_key_value_heads");
    hp->n_vocab = cfg_u32(cfg, "vocab_size");
    hp->n_ctx = cfg_u32(cfg, "max_position_embeddings");
    if (!cfg_f32(cfg, "rms_norm_eps", &hp->norm_eps))
        hp->norm_eps = 1e-6f; /* transformers' LlamaConfig default */
    if (!cfg_f32(cfg, "rope_theta", &hp->rope_freq_base))
        hp->rope_freq_base = 10000.0f;
    hp->rope_freq_scale = 1.0f;
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(cfg, "rope_scaling");
    const cJSON *rt = rs ? cJSON_GetObjectItemCaseSensitive(rs, "type") : NULL;
    float factor;
    if (cJSON_IsString(rt) && !strcmp(rt->valuestring, "linear") && cfg_f32(rs, "factor", &factor) && factor > 0)
        hp->rope_freq_scale = 1.0f / factor;
    hp->rope_mode = TPORT_ROPE_NORMAL;
}

/* Hugging Face q/k rows of each head are [first halves of the pairs,
 * second halves]; Meta/GGUF order interleaves them.  Row r of the result
 * (head h, pair i, member j) comes from HF row h*hd + j*hd/2 + i. */
static tport_status unpermute(tport_model_file *mf, const mf_cursor *c, const char *name, uint32_t n_head) {
    tport_mf_tensor *t = (tport_mf_tensor *)tport_model_file_find(mf, name);
    if (!t)
        return TPORT_STATUS_OK;
    if (t->n_dims != 2 || n_head == 0 || t->ne[1] % n_head || (t->ne[1] / n_head) % 2)
        return mf_fail(c, t->offset, "tensor %s: shape does not split into %u heads", name, n_head);
    int64_t rows = t->ne[1], hd = rows / n_head;
    uint64_t row_bytes = t->nbytes / (uint64_t)rows;
    uint8_t *dst = mf_alloc(mf, (size_t)t->nbytes);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (int64_t r = 0; r < rows; r++) {
        int64_t h = r / hd, rem = r % hd, i = rem / 2, j = rem % 2;
        int64_t src = h * hd + j * (hd / 2) + i;
        memcpy(dst + (uint64_t)r * row_bytes, (const uint8_t *)t->data + (uint64_t)src * row_bytes, (size_t)row_bytes);
    }
    t->data = dst;
    return TPORT_STATUS_OK;
}

static tport_status read_header(tport_model_file *mf, const mf_cursor *c, const cJSON *root, uint64_t data_start) {
    if (!cJSON_IsObject(root))
        return mf_fail(c, 8, "the header is not a JSON object");
    int n = cJSON_GetArraySize(root);
    MF_TRY(mf_reserve_tensors(mf, (uint64_t)n));
    for (const cJSON *e = root->child; e; e = e->next) {
        if (!e->string)
            return mf_fail(c, 8, "header entry without a name");
        if (!strcmp(e->string, "__metadata__"))
            continue;
        MF_TRY(read_entry(mf, c, e, data_start));
    }
    return mf_check_unique_names(mf, c);
}

tport_status mf_read_safetensors(tport_model_file *mf, mf_cursor *c) {
    mf->container = TPORT_CONTAINER_SAFETENSORS;
    uint64_t n;
    MF_TRY(mf_read_u64(c, &n, "header length"));
    if (n > mf_left(c) || n > MAX_HEADER_BYTES)
        return mf_fail(c, 0, "header length %llu exceeds the file or the 100 MiB limit", (unsigned long long)n);
    cJSON *root = cJSON_ParseWithLength((const char *)c->data + 8, (size_t)n);
    if (!root)
        return mf_fail(c, 8, "the header is not valid JSON");
    tport_status s = read_header(mf, c, root, 8 + n);
    cJSON_Delete(root);
    if (s)
        return s;
    mf->alignment = 0;
    mf->data_offset = 8 + n;
    cJSON *cfg = mf->borrowed ? NULL : read_config(mf->path);
    if (!cfg) {
        snprintf(mf->notes, sizeof mf->notes, "no config.json beside the file: hyperparameters unknown");
        const tport_mf_tensor *e = tport_model_file_find(mf, "token_embd.weight");
        if (e && e->n_dims == 2 && e->ne[1] <= UINT32_MAX) {
            mf->hp.n_embd = (uint32_t)e->ne[0];
            mf->hp.n_vocab = (uint32_t)e->ne[1];
        }
        return TPORT_STATUS_OK;
    }
    apply_config(mf, cfg);
    cJSON_Delete(cfg);
    if (!strcmp(mf->arch, "llama") || !strcmp(mf->arch, "mistral")) {
        uint32_t nh = mf->hp.n_head, nkv = mf->hp.n_head_kv ? mf->hp.n_head_kv : nh;
        for (uint32_t l = 0; l < mf->hp.n_layer && l < (uint32_t)mf->n_tensors; l++) {
            char q[64], k[64];
            snprintf(q, sizeof q, "blk.%u.attn_q.weight", l);
            snprintf(k, sizeof k, "blk.%u.attn_k.weight", l);
            MF_TRY(unpermute(mf, c, q, nh));
            MF_TRY(unpermute(mf, c, k, nkv));
        }
        snprintf(mf->notes, sizeof mf->notes, "Hugging Face q/k weights un-permuted to Meta/GGUF order at load");
        snprintf(mf->arch, sizeof mf->arch, "llama");
    }
    return TPORT_STATUS_OK;
}

#endif
