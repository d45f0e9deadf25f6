/* safetensors (u64 header length, JSON header, raw data), with the
 * Hugging Face config.json beside the file for llama hyperparameters and
 * the q/k un-permutation (llama_config.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

#if !defined(TPORT_HAVE_CJSON) || defined(TPORT_NO_SAFETENSORS)

tport_status mf_read_safetensors(tport_model_file *mf, mf_cursor *c) {
    mf->container = TPORT_CONTAINER_SAFETENSORS;
    return mf_fail(c, 0, "safetensors file, but tensorport was built without safetensors support "
                   "(-DTPORT_SAFETENSORS=OFF, or without cJSON: libcjson-dev)");
}

#else

#include <cjson/cJSON.h>

#define MAX_HEADER_BYTES (100u << 20) /* the safetensors spec's limit */

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

static bool json_uint(const cJSON *j, uint64_t *out) { return mf_json_uint(j, out); }

static tport_status read_entry(tport_model_file *mf, const mf_cursor *c, const cJSON *e, uint64_t data_start) {
    const char *name = e->string;
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
    tport_type_id type;
    if (!cJSON_IsObject(e) || !cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs) ||
        cJSON_GetArraySize(offs) != 2)
        return mf_fail(c, 8, "tensor '%.64s': needs dtype, shape and data_offsets", name);
    /* U8 holds MXFP4 blocks and scales (gpt-oss): read with I8's geometry,
     * marked MF_TYPE_U8 until the architecture's mapping (hf_arch.c) takes
     * it as such a part; any other U8 tensor is refused there */
    bool u8 = !strcmp(dtype->valuestring, "U8");
    if (u8)
        type = TPORT_TYPE_I8;
    else if (!dtype_of(dtype->valuestring, &type))
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
    MF_TRY(mf_add_tensor(mf, c, data_start + begin < c->size ? data_start + begin : 8, norm, strlen(norm), type,
                         n_dims ? n_dims : 1, ne, abs_begin));
    if (u8)
        mf->tensors[mf->n_tensors - 1].type = MF_TYPE_U8;
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
    /* a shard of a sharded model: the index's reader applies config.json
     * once, over every shard's tensors */
    return mf->part_only ? TPORT_STATUS_OK : mf_apply_hf_config(mf, c);
}

#endif
