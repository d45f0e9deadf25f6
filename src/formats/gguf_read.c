/* GGUF reader, versions 1 to 3 (formats.md section 2).  Metadata is copied
 * into memory owned by the model file; tensor data stays in the read-only
 * mapping (zero copy). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf_meta.h"
#include "formats/mf_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF reader copies little-endian arrays directly; port it for big-endian hosts"
#endif
/* Big-endian files (GGUF v3 from s390x) are read through a swapping cursor;
 * their tensor data is swapped by gguf_byteswap.c. */

#define GGUF_MAX_NESTING 8

typedef struct gguf_reader {
    tport_model_file *mf;
    mf_cursor *c;
    uint32_t version;
} gguf_reader;

/* Bytes one element of a value type needs at least (for capping counts). */
static uint64_t min_value_bytes(const gguf_reader *g, uint32_t type) {
    switch (type) {
    case TPORT_KV_U8: case TPORT_KV_I8: case TPORT_KV_BOOL: return 1;
    case TPORT_KV_U16: case TPORT_KV_I16: return 2;
    case TPORT_KV_U32: case TPORT_KV_I32: case TPORT_KV_F32: return 4;
    case TPORT_KV_U64: case TPORT_KV_I64: case TPORT_KV_F64: return 8;
    case TPORT_KV_STRING: return g->version == 1 ? 4 : 8;
    case TPORT_KV_ARRAY: return g->version == 1 ? 8 : 12;
    default: return 0;
    }
}

static tport_status read_count(gguf_reader *g, uint64_t *n, const char *what) {
    if (g->version == 1) {
        uint32_t v;
        MF_TRY(mf_read_u32(g->c, &v, what));
        *n = v;
        return TPORT_STATUS_OK;
    }
    return mf_read_u64(g->c, n, what);
}

/* A GGUF string; v1 writers counted a trailing NUL, which is dropped. */
static tport_status read_string(gguf_reader *g, char **out, size_t *len_out, const char *what) {
    uint64_t at = g->c->pos, n;
    const uint8_t *p;
    MF_TRY(read_count(g, &n, what));
    if (n > mf_left(g->c))
        return mf_fail(g->c, at, "%s: string length %llu exceeds the %llu bytes left", what,
                       (unsigned long long)n, (unsigned long long)mf_left(g->c));
    MF_TRY(mf_read_bytes(g->c, n, &p, what));
    if (g->version == 1 && n > 0 && p[n - 1] == '\0')
        n--;
    *out = mf_strndup(g->mf, p, (size_t)n);
    if (!*out)
        return TPORT_STATUS_OUT_OF_MEMORY;
    if (len_out)
        *len_out = (size_t)n;
    return TPORT_STATUS_OK;
}

static tport_status read_value(gguf_reader *g, tport_kv *kv, uint32_t type, int depth);

static tport_status read_array(gguf_reader *g, tport_kv *kv, int depth) {
    uint64_t at = g->c->pos, n;
    uint32_t et;
    if (depth >= GGUF_MAX_NESTING)
        return mf_fail(g->c, at, "arrays nested more than %d deep", GGUF_MAX_NESTING);
    MF_TRY(mf_read_u32(g->c, &et, "array element type"));
    uint64_t min = min_value_bytes(g, et);
    if (min == 0 || (g->version == 1 && et > TPORT_KV_ARRAY))
        return mf_fail(g->c, at, "unknown array element type %u", et);
    MF_TRY(read_count(g, &n, "array length"));
    if (n > mf_left(g->c) / min)
        return mf_fail(g->c, at, "array of %llu elements cannot fit in the %llu bytes left",
                       (unsigned long long)n, (unsigned long long)mf_left(g->c));
    kv->elem_type = (tport_kv_type)et;
    kv->n_elems = n;
    void *arr = mf_alloc_array(g->mf, n ? n : 1, mf_kv_elem_size(et));
    if (!arr)
        return TPORT_STATUS_OUT_OF_MEMORY;
    kv->v.arr = arr;
    if (et == TPORT_KV_STRING) {
        char **s = arr;
        for (uint64_t i = 0; i < n; i++)
            MF_TRY(read_string(g, &s[i], NULL, "array string"));
    } else if (et == TPORT_KV_ARRAY) {
        tport_kv *sub = arr;
        for (uint64_t i = 0; i < n; i++) {
            sub[i].type = TPORT_KV_ARRAY;
            MF_TRY(read_array(g, &sub[i], depth + 1));
        }
    } else if (et == TPORT_KV_BOOL) {
        const uint8_t *p;
        MF_TRY(mf_read_bytes(g->c, n, &p, "bool array"));
        bool *b = arr;
        for (uint64_t i = 0; i < n; i++)
            b[i] = p[i] != 0;
    } else {
        const uint8_t *p;
        MF_TRY(mf_read_bytes(g->c, n * min, &p, "array data"));
        if (n)
            memcpy(arr, p, (size_t)(n * min)); /* little-endian host */
        if (g->c->swap && min > 1)
            mf_bswap_elems(arr, n, (size_t)min);
    }
    return TPORT_STATUS_OK;
}

static tport_status read_value(gguf_reader *g, tport_kv *kv, uint32_t type, int depth) {
    mf_cursor *c = g->c;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    kv->type = (tport_kv_type)type;
    switch (type) {
    case TPORT_KV_U8: MF_TRY(mf_read_u8(c, &u8, "u8 value")); kv->v.u = u8; break;
    case TPORT_KV_I8: MF_TRY(mf_read_u8(c, &u8, "i8 value")); kv->v.i = (int8_t)u8; break;
    case TPORT_KV_BOOL: MF_TRY(mf_read_u8(c, &u8, "bool value")); kv->v.b = u8 != 0; break;
    case TPORT_KV_U16: MF_TRY(mf_read_u16(c, &u16, "u16 value")); kv->v.u = u16; break;
    case TPORT_KV_I16: MF_TRY(mf_read_u16(c, &u16, "i16 value")); kv->v.i = (int16_t)u16; break;
    case TPORT_KV_U32: MF_TRY(mf_read_u32(c, &u32, "u32 value")); kv->v.u = u32; break;
    case TPORT_KV_I32: MF_TRY(mf_read_u32(c, &u32, "i32 value")); kv->v.i = (int32_t)u32; break;
    case TPORT_KV_F32: {
        float f;
        MF_TRY(mf_read_f32(c, &f, "f32 value"));
        kv->v.f = f;
        break;
    }
    case TPORT_KV_U64: MF_TRY(mf_read_u64(c, &u64, "u64 value")); kv->v.u = u64; break;
    case TPORT_KV_I64: MF_TRY(mf_read_u64(c, &u64, "i64 value")); kv->v.i = (int64_t)u64; break;
    case TPORT_KV_F64: {
        double d;
        MF_TRY(mf_read_u64(c, &u64, "f64 value"));
        memcpy(&d, &u64, sizeof d);
        kv->v.f = d;
        break;
    }
    case TPORT_KV_STRING: MF_TRY(read_string(g, &kv->v.s, NULL, "string value")); break;
    case TPORT_KV_ARRAY: MF_TRY(read_array(g, kv, depth)); break;
    default: return mf_fail(c, c->pos - 4, "unknown metadata value type %u", type);
    }
    return TPORT_STATUS_OK;
}

static int cmp_kv_key(const void *a, const void *b) {
    const tport_kv *const *x = a, *const *y = b;
    return strcmp((*x)->key, (*y)->key);
}

static tport_status check_unique_keys(gguf_reader *g) {
    tport_model_file *mf = g->mf;
    if (mf->n_kv < 2)
        return TPORT_STATUS_OK;
    const tport_kv **v = malloc((size_t)mf->n_kv * sizeof *v);
    if (!v)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", mf->path);
    for (int i = 0; i < mf->n_kv; i++)
        v[i] = &mf->kv[i];
    qsort(v, (size_t)mf->n_kv, sizeof *v, cmp_kv_key);
    tport_status s = TPORT_STATUS_OK;
    for (int i = 1; i < mf->n_kv && !s; i++)
        if (!strcmp(v[i - 1]->key, v[i]->key))
            s = mf_fail(g->c, 0, "metadata key '%.100s' appears twice", v[i]->key);
    free(v);
    return s;
}

static tport_status read_kvs(gguf_reader *g, uint64_t n_kv) {
    tport_model_file *mf = g->mf;
    mf->kv = mf_alloc_array(mf, n_kv ? n_kv : 1, sizeof(tport_kv));
    if (!mf->kv)
        return TPORT_STATUS_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n_kv; i++) {
        tport_kv *kv = &mf->kv[i];
        uint32_t type;
        size_t key_len;
        uint64_t key_at = g->c->pos;
        MF_TRY(read_string(g, &kv->key, &key_len, "metadata key"));
        if (key_len == 0 || strlen(kv->key) != key_len)
            return mf_fail(g->c, key_at, "metadata key is empty or contains a NUL byte");
        uint64_t at = g->c->pos;
        MF_TRY(mf_read_u32(g->c, &type, "metadata value type"));
        if (min_value_bytes(g, type) == 0 || (g->version == 1 && type > TPORT_KV_ARRAY))
            return mf_fail(g->c, at, "key '%.100s': unknown value type %u", kv->key, type);
        MF_TRY(read_value(g, kv, type, 0));
        mf->n_kv = (int)(i + 1);
    }
    return check_unique_keys(g);
}

typedef struct tensor_info {
    const char *name;
    size_t name_len;
    uint32_t n_dims, type;
    int64_t ne[4];
    uint64_t offset, at;
    bool unknown; /* a type id this build does not know (as read) */
} tensor_info;

/* A GGUF type id of a type this build reads. */
static bool gguf_type_known(uint32_t id) {
    int64_t block;
    uint64_t bytes;
    return id < TPORT_TYPE_Q4_0_QNT0 && mf_type_size((tport_type_id)id, &block, &bytes);
}

static tport_status read_tensor_info(gguf_reader *g, tensor_info *ti) {
    mf_cursor *c = g->c;
    ti->at = c->pos;
    uint64_t len;
    MF_TRY(read_count(g, &len, "tensor name length"));
    if (len == 0 || len > mf_left(c))
        return mf_fail(c, ti->at, "tensor name length %llu is invalid", (unsigned long long)len);
    const uint8_t *p;
    MF_TRY(mf_read_bytes(c, len, &p, "tensor name"));
    if (g->version == 1 && p[len - 1] == '\0')
        len--;
    if (memchr(p, '\0', (size_t)len))
        return mf_fail(c, ti->at, "tensor name contains a NUL byte");
    ti->name = (const char *)p;
    ti->name_len = (size_t)len;
    uint64_t at = c->pos;
    MF_TRY(mf_read_u32(c, &ti->n_dims, "tensor dimension count"));
    if (ti->n_dims < 1 || ti->n_dims > 4)
        return mf_fail(c, at, "tensor '%.*s': %u dimensions (1 to 4 allowed)", (int)(len > 64 ? 64 : len),
                       ti->name, ti->n_dims);
    for (uint32_t d = 0; d < 4; d++)
        ti->ne[d] = 1;
    for (uint32_t d = 0; d < ti->n_dims; d++) {
        uint64_t v;
        at = c->pos;
        MF_TRY(read_count(g, &v, "tensor dimension"));
        if (v > (uint64_t)INT64_MAX)
            return mf_fail(c, at, "tensor dimension %llu is too large", (unsigned long long)v);
        ti->ne[d] = (int64_t)v;
    }
    at = c->pos;
    MF_TRY(mf_read_u32(c, &ti->type, "tensor type"));
    /* an id this build does not know (a newer ggml's; ids from 200 are
     * tensorport's private revisions, never a GGUF's) is listed, not run;
     * its bytes cannot be swapped without knowing their layout */
    ti->unknown = !gguf_type_known(ti->type);
    if (c->swap && ti->unknown)
        return mf_fail(c, at, "unknown tensor type %u in a big-endian file", ti->type);
    MF_TRY(mf_read_u64(c, &ti->offset, "tensor offset"));
    return TPORT_STATUS_OK;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Bytes of n_el elements of type, or 0 if the row length ne0 does not fit
 * its blocks (or the size overflows). */
static uint64_t kquant_bytes(tport_type_id type, int64_t ne0, uint64_t n_el) {
    int64_t block;
    uint64_t bb, out;
    if (!mf_type_size(type, &block, &bb) || ne0 % block)
        return 0;
    return mf_mul_u64(n_el / (uint64_t)block, bb, &out) ? out : 0;
}

/* GGML_QKK_64 builds (2023-06-26 .. 2024-05-23) wrote k-quants with
 * 64-element super-blocks under the same type ids (formats.md 3.7); only
 * the data offsets tell: the room up to the next tensor (or the end of the
 * file) holds the 64-layout size but the 256-layout size, padded, leaves
 * bytes unexplained (or the row length is no multiple of 256).  A file
 * comes from one build, so one k-quant tensor that only fits the 256
 * layout keeps them all as they are. */
static bool detect_qk64(tensor_info *infos, uint64_t n, uint64_t data_size, uint64_t align) {
    uint64_t n_k = 0;
    for (uint64_t i = 0; i < n; i++)
        n_k += infos[i].type >= TPORT_TYPE_Q2_K && infos[i].type <= TPORT_TYPE_Q6_K;
    if (n_k == 0)
        return false;
    uint64_t *offs = malloc((size_t)n * sizeof *offs);
    if (!offs)
        return false; /* the sizes are checked later either way */
    for (uint64_t i = 0; i < n; i++)
        offs[i] = infos[i].offset;
    qsort(offs, (size_t)n, sizeof *offs, cmp_u64);
    uint64_t votes64 = 0, votes256 = 0;
    for (uint64_t i = 0; i < n; i++) {
        tensor_info *ti = &infos[i];
        tport_type_id t64;
        if (!mf_qk64_type((tport_type_id)ti->type, &t64) || ti->offset >= data_size)
            continue;
        uint64_t n_el = 1;
        bool ok = true;
        for (int d = 0; d < 4; d++)
            ok = ok && mf_mul_u64(n_el, (uint64_t)ti->ne[d], &n_el);
        if (!ok)
            continue;
        /* first offset above this one */
        size_t lo = 0, hi = (size_t)n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (offs[mid] <= ti->offset)
                lo = mid + 1;
            else
                hi = mid;
        }
        uint64_t next = lo < n && offs[lo] < data_size ? offs[lo] : data_size;
        uint64_t gap = next - ti->offset;
        uint64_t s256 = kquant_bytes((tport_type_id)ti->type, ti->ne[0], n_el);
        uint64_t s64 = kquant_bytes(t64, ti->ne[0], n_el);
        uint64_t s256_padded = s256 + (align - s256 % align) % align;
        if (s64 && s64 <= gap && (!s256 || s256_padded < gap))
            votes64++;
        else if (s256 && s256 <= gap && (!s64 || s64 > gap))
            votes256++;
    }
    free(offs);
    if (votes64 == 0 || votes256 > 0)
        return false;
    for (uint64_t i = 0; i < n; i++) {
        tport_type_id t64;
        if (mf_qk64_type((tport_type_id)infos[i].type, &t64))
            infos[i].type = t64;
    }
    return true;
}

static tport_status read_tensors(gguf_reader *g, uint64_t n_tensors) {
    tport_model_file *mf = g->mf;
    mf_cursor *c = g->c;
    tensor_info *infos = calloc(n_tensors ? (size_t)n_tensors : 1, sizeof *infos);
    if (!infos)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", mf->path);
    tport_status s = mf_reserve_tensors(mf, n_tensors);
    for (uint64_t i = 0; i < n_tensors && !s; i++)
        s = read_tensor_info(g, &infos[i]);
    if (!s) {
        uint64_t align = mf->alignment;
        uint64_t rem = c->pos & (align - 1);
        uint64_t start = c->pos + (rem ? align - rem : 0);
        if (n_tensors > 0 && start > c->size)
            s = mf_fail(c, c->pos, "tensor data would start past the end of the file");
        mf->data_offset = start;
        if (!s && detect_qk64(infos, n_tensors, c->size - start, align))
            snprintf(mf->notes, sizeof mf->notes, "k-quant tensors in the QK_K = 64 layout (a GGML_QKK_64 build)");
        for (uint64_t i = 0; i < n_tensors && !s; i++) {
            tensor_info *ti = &infos[i];
            uint64_t abs;
            if (ti->offset % align)
                s = mf_fail(c, ti->at, "tensor '%.*s': offset %llu is not a multiple of the alignment %llu",
                            (int)(ti->name_len > 64 ? 64 : ti->name_len), ti->name,
                            (unsigned long long)ti->offset, (unsigned long long)align);
            else if (!mf_add_u64(start, ti->offset, &abs))
                s = mf_fail(c, ti->at, "tensor offset overflows");
            else if (ti->unknown)
                s = mf_add_unknown_tensor(mf, c, ti->at, ti->name, ti->name_len, ti->type, (int)ti->n_dims,
                                          ti->ne, abs);
            else
                s = mf_add_tensor(mf, c, ti->at, ti->name, ti->name_len, ti->type, (int)ti->n_dims,
                                  ti->ne, abs);
        }
    }
    free(infos);
    if (!s)
        s = mf_check_unique_names(mf, c);
    return s;
}

tport_status mf_read_gguf(tport_model_file *mf, mf_cursor *c) {
    gguf_reader g = {.mf = mf, .c = c};
    uint32_t magic, version;
    MF_TRY(mf_read_u32(c, &magic, "magic"));
    /* No flag records the byte order (formats.md 2.4): a version whose low
     * 16 bits are zero is a byte-swapped one.  Newer gguf-py also writes
     * the magic reversed ("FUGG") in big-endian files. */
    bool fugg = !memcmp(c->data, "FUGG", 4);
    MF_TRY(mf_read_u32(c, &version, "version"));
    if (((version & 0xFFFFu) == 0 && version != 0) || fugg) {
        uint32_t swapped = version >> 24 | (version >> 8 & 0xff00u) | (version << 8 & 0xff0000u) | version << 24;
        if (swapped != 3)
            return mf_fail(c, 4, "big-endian GGUF file (version bytes %08x): only big-endian version 3 is known",
                           version);
        c->swap = true;
        mf->big_endian = true;
        version = swapped;
    }
    if (version < 1 || version > 3)
        return mf_fail(c, 4, "unsupported GGUF version %u (1 to 3 are known)", version);
    g.version = version;
    mf->container = TPORT_CONTAINER_GGUF;
    mf->version = version;

    uint64_t n_tensors, n_kv, at = c->pos;
    MF_TRY(read_count(&g, &n_tensors, "tensor count"));
    MF_TRY(read_count(&g, &n_kv, "metadata count"));
    /* Each tensor info and each key/value needs some bytes: cap the counts
     * by what the rest of the file could hold before allocating. */
    uint64_t min_info = version == 1 ? 4 + 1 + 4 + 4 + 4 + 8 : 8 + 1 + 4 + 8 + 4 + 8;
    uint64_t min_kv = version == 1 ? 4 + 4 + 1 : 8 + 4 + 1;
    if (n_tensors > mf_left(c) / min_info)
        return mf_fail(c, at, "tensor count %llu cannot fit in a file of %llu bytes",
                       (unsigned long long)n_tensors, (unsigned long long)c->size);
    if (n_kv > mf_left(c) / min_kv || n_kv > INT32_MAX)
        return mf_fail(c, at, "metadata count %llu cannot fit in a file of %llu bytes",
                       (unsigned long long)n_kv, (unsigned long long)c->size);
    MF_TRY(read_kvs(&g, n_kv));

    mf->alignment = 32;
    const tport_kv *al = mf_kv_find(mf, "general.alignment");
    if (al) {
        if (al->type != TPORT_KV_U32 || al->v.u == 0 || (al->v.u & (al->v.u - 1)) || al->v.u > (1u << 30))
            return mf_fail(c, 0, "general.alignment must be a u32 power of two, not %llu",
                           (unsigned long long)al->v.u);
        mf->alignment = (uint32_t)al->v.u;
    }
    MF_TRY(read_tensors(&g, n_tensors));
    if (c->swap)
        MF_TRY(mf_gguf_swap_tensor_data(mf, c));
    return mf_gguf_apply_metadata(mf, c);
}
