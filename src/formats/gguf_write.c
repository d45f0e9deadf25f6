/* GGUF v3 writer (layout: formats.md 2.1).  Little-endian, 64-bit counts,
 * strings without NUL, tensor data aligned from the start of the data
 * section, which itself starts at an aligned file offset. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "formats/gguf_meta.h"
#include "formats/gguf_write.h"
#include "formats/mf_internal.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the GGUF writer writes host-order values; port it for big-endian hosts"
#endif

#define GGUF_WRITE_MAX_NESTING 8

typedef struct w_tensor {
    char *name;
    tport_type_id type;
    int n_dims;
    int64_t ne[4];
    const void *data;
    uint64_t nbytes;
    uint64_t offset;
    tport_gguf_fill_fn fill;
    void *user;
} w_tensor;

struct tport_gguf_writer {
    void *owned;
    tport_kv *kv;
    int n_kv, cap_kv;
    w_tensor *t;
    int n_t, cap_t;
    uint32_t alignment;
    tport_gguf_progress_fn progress;
    void *progress_user;
    uint64_t progress_base, progress_total; /* a split's earlier parts; all of it (0: this file) */
};

tport_gguf_writer *tport_gguf_writer_new(void) {
    tport_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    w->alignment = 32;
    return w;
}

void tport_gguf_writer_free(tport_gguf_writer *w) {
    if (!w)
        return;
    mf_owned_free(&w->owned);
    free(w->kv);
    free(w->t);
    free(w);
}

static void *w_alloc(tport_gguf_writer *w, uint64_t size) {
    void *p = size <= SIZE_MAX ? mf_owned_alloc(&w->owned, (size_t)size) : NULL;
    if (!p)
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "gguf writer: out of memory (%llu bytes)", (unsigned long long)size);
    return p;
}

static char *w_strdup(tport_gguf_writer *w, const char *s) {
    size_t n = strlen(s);
    char *p = w_alloc(w, n + 1);
    if (p)
        memcpy(p, s, n + 1);
    return p;
}

static tport_status copy_value(tport_gguf_writer *w, tport_kv *dst, const tport_kv *src, int depth) {
    dst->type = src->type;
    switch (src->type) {
    case TPORT_KV_STRING:
        if (!src->v.s)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: NULL string value");
        dst->v.s = w_strdup(w, src->v.s);
        return dst->v.s ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    case TPORT_KV_ARRAY: {
        size_t es = mf_kv_elem_size(src->elem_type);
        if (es == 0 || depth >= GGUF_WRITE_MAX_NESTING)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: bad array element type %d",
                               (int)src->elem_type);
        if (src->n_elems > 0 && !src->v.arr)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: NULL array data");
        uint64_t bytes;
        if (!mf_mul_u64(src->n_elems ? src->n_elems : 1, es, &bytes))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: array too large");
        void *arr = w_alloc(w, bytes);
        if (!arr)
            return TPORT_STATUS_OUT_OF_MEMORY;
        dst->elem_type = src->elem_type;
        dst->n_elems = src->n_elems;
        dst->v.arr = arr;
        if (src->elem_type == TPORT_KV_STRING) {
            char **d = arr;
            char *const *s = src->v.arr;
            for (uint64_t i = 0; i < src->n_elems; i++) {
                if (!s[i])
                    return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: NULL string in array");
                if (!(d[i] = w_strdup(w, s[i])))
                    return TPORT_STATUS_OUT_OF_MEMORY;
            }
        } else if (src->elem_type == TPORT_KV_ARRAY) {
            tport_kv *d = arr;
            const tport_kv *s = src->v.arr;
            for (uint64_t i = 0; i < src->n_elems; i++) {
                if (s[i].type != TPORT_KV_ARRAY)
                    return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: nested element is not an array");
                MF_TRY(copy_value(w, &d[i], &s[i], depth + 1));
            }
        } else if (src->n_elems) {
            memcpy(arr, src->v.arr, (size_t)bytes);
        }
        return TPORT_STATUS_OK;
    }
    default:
        if (mf_kv_elem_size(src->type) == 0)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: unknown value type %d", (int)src->type);
        dst->v = src->v;
        return TPORT_STATUS_OK;
    }
}

static int find_kv(const tport_gguf_writer *w, const char *key) {
    for (int i = 0; i < w->n_kv; i++)
        if (!strcmp(w->kv[i].key, key))
            return i;
    return -1;
}

int tport_gguf_n_kv(const tport_gguf_writer *w) {
    return w ? w->n_kv : 0;
}

tport_status tport_gguf_set_kv(tport_gguf_writer *w, const char *key, const tport_kv *kv) {
    if (!w || !key || !kv || !key[0])
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: missing key or value");
    tport_kv copy = {0};
    MF_TRY(copy_value(w, &copy, kv, 0));
    int i = find_kv(w, key);
    if (i < 0) {
        if (w->n_kv == w->cap_kv) {
            int cap = w->cap_kv ? w->cap_kv * 2 : 32;
            tport_kv *p = realloc(w->kv, (size_t)cap * sizeof *p);
            if (!p)
                return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "gguf writer: out of memory");
            w->kv = p;
            w->cap_kv = cap;
        }
        copy.key = w_strdup(w, key);
        if (!copy.key)
            return TPORT_STATUS_OUT_OF_MEMORY;
        i = w->n_kv++;
    } else {
        copy.key = w->kv[i].key;
    }
    w->kv[i] = copy;
    return TPORT_STATUS_OK;
}

void tport_gguf_remove_kv(tport_gguf_writer *w, const char *key) {
    int i = w && key ? find_kv(w, key) : -1;
    if (i < 0)
        return;
    memmove(&w->kv[i], &w->kv[i + 1], (size_t)(w->n_kv - i - 1) * sizeof *w->kv);
    w->n_kv--;
}

tport_status tport_gguf_set_u32(tport_gguf_writer *w, const char *key, uint32_t v) {
    tport_kv kv = {.type = TPORT_KV_U32, .v.u = v};
    return tport_gguf_set_kv(w, key, &kv);
}
tport_status tport_gguf_set_i32(tport_gguf_writer *w, const char *key, int32_t v) {
    tport_kv kv = {.type = TPORT_KV_I32, .v.i = v};
    return tport_gguf_set_kv(w, key, &kv);
}
tport_status tport_gguf_set_u64(tport_gguf_writer *w, const char *key, uint64_t v) {
    tport_kv kv = {.type = TPORT_KV_U64, .v.u = v};
    return tport_gguf_set_kv(w, key, &kv);
}
tport_status tport_gguf_set_f32(tport_gguf_writer *w, const char *key, float v) {
    tport_kv kv = {.type = TPORT_KV_F32, .v.f = v};
    return tport_gguf_set_kv(w, key, &kv);
}
tport_status tport_gguf_set_bool(tport_gguf_writer *w, const char *key, bool v) {
    tport_kv kv = {.type = TPORT_KV_BOOL, .v.b = v};
    return tport_gguf_set_kv(w, key, &kv);
}
tport_status tport_gguf_set_str(tport_gguf_writer *w, const char *key, const char *v) {
    tport_kv kv = {.type = TPORT_KV_STRING, .v.s = (char *)v};
    return tport_gguf_set_kv(w, key, &kv);
}
tport_status tport_gguf_set_array(tport_gguf_writer *w, const char *key, tport_kv_type elem_type,
                                  const void *values, uint64_t n) {
    tport_kv kv = {.type = TPORT_KV_ARRAY, .elem_type = elem_type, .n_elems = n, .v.arr = (void *)values};
    return tport_gguf_set_kv(w, key, &kv);
}

tport_status tport_gguf_set_alignment(tport_gguf_writer *w, uint32_t alignment) {
    if (!w || alignment == 0 || (alignment & (alignment - 1)) || alignment > (1u << 30))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: alignment %u is not a power of two",
                           alignment);
    w->alignment = alignment;
    if (alignment == 32) {
        tport_gguf_remove_kv(w, "general.alignment");
        return TPORT_STATUS_OK;
    }
    return tport_gguf_set_u32(w, "general.alignment", alignment);
}

void tport_gguf_set_progress(tport_gguf_writer *w, tport_gguf_progress_fn fn, void *user) {
    if (w) {
        w->progress = fn;
        w->progress_user = user;
    }
}

static tport_status add_tensor(tport_gguf_writer *w, const char *name, tport_type_id type, int n_dims,
                               const int64_t *ne, w_tensor **out) {
    if (!w || !name || !name[0] || !ne)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: tensor without a name or shape");
    if (type >= TPORT_TYPE_Q4_0_QNT0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "gguf writer: tensor '%s': type %u is a historical layout that GGUF cannot hold; "
                           "convert it to a current type first", name, type);
    int64_t block;
    uint64_t block_bytes, n = 1, nbytes;
    if (!mf_type_size(type, &block, &block_bytes))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: tensor '%s': unknown type %u", name, type);
    if (n_dims < 1 || n_dims > 4)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: tensor '%s': %d dimensions", name, n_dims);
    for (int d = 0; d < n_dims; d++)
        if (ne[d] < 0 || !mf_mul_u64(n, (uint64_t)ne[d], &n) || n > (uint64_t)INT64_MAX)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: tensor '%s': bad shape", name);
    if (ne[0] % block || !mf_mul_u64(n / (uint64_t)block, block_bytes, &nbytes))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "gguf writer: tensor '%s': row length %lld is not a multiple of the block size %lld", name,
                           (long long)ne[0], (long long)block);
    for (int i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: two tensors named '%s'", name);
    if (w->n_t == w->cap_t) {
        int cap = w->cap_t ? w->cap_t * 2 : 64;
        w_tensor *p = realloc(w->t, (size_t)cap * sizeof *p);
        if (!p)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "gguf writer: out of memory");
        w->t = p;
        w->cap_t = cap;
    }
    w_tensor *t = &w->t[w->n_t];
    memset(t, 0, sizeof *t);
    if (!(t->name = w_strdup(w, name)))
        return TPORT_STATUS_OUT_OF_MEMORY;
    t->type = type;
    t->n_dims = n_dims;
    for (int d = 0; d < 4; d++)
        t->ne[d] = d < n_dims ? ne[d] : 1;
    t->nbytes = nbytes;
    w->n_t++;
    *out = t;
    return TPORT_STATUS_OK;
}

tport_status tport_gguf_add_tensor(tport_gguf_writer *w, const char *name, tport_type_id type, int n_dims,
                                   const int64_t *ne, const void *data, uint64_t nbytes) {
    w_tensor *t = NULL;
    MF_TRY(add_tensor(w, name, type, n_dims, ne, &t));
    if (t->nbytes != nbytes || (!data && nbytes)) {
        w->n_t--;
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "gguf writer: tensor '%s': %llu bytes given, type and shape need %llu", name,
                           (unsigned long long)nbytes, (unsigned long long)t->nbytes);
    }
    t->data = data;
    return TPORT_STATUS_OK;
}

tport_status tport_gguf_add_tensor_fill(tport_gguf_writer *w, const char *name, tport_type_id type, int n_dims,
                                        const int64_t *ne, tport_gguf_fill_fn fill, void *user) {
    if (!fill)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: NULL fill function");
    w_tensor *t = NULL;
    MF_TRY(add_tensor(w, name, type, n_dims, ne, &t));
    t->fill = fill;
    t->user = user;
    return TPORT_STATUS_OK;
}

/* ---- serialisation ---------------------------------------------------- */

static void put(FILE *f, const void *p, size_t n) {
    if (n)
        fwrite(p, 1, n, f);
}
static void put_u32(FILE *f, uint32_t v) { put(f, &v, 4); }
static void put_u64(FILE *f, uint64_t v) { put(f, &v, 8); }
static void put_str(FILE *f, const char *s) {
    size_t n = strlen(s);
    put_u64(f, n);
    put(f, s, n);
}

static void put_value(FILE *f, const tport_kv *kv);

static void put_array(FILE *f, const tport_kv *kv) {
    put_u32(f, (uint32_t)kv->elem_type);
    put_u64(f, kv->n_elems);
    switch (kv->elem_type) {
    case TPORT_KV_STRING:
        for (uint64_t i = 0; i < kv->n_elems; i++)
            put_str(f, ((char *const *)kv->v.arr)[i]);
        break;
    case TPORT_KV_ARRAY:
        for (uint64_t i = 0; i < kv->n_elems; i++)
            put_array(f, &((const tport_kv *)kv->v.arr)[i]);
        break;
    case TPORT_KV_BOOL:
        for (uint64_t i = 0; i < kv->n_elems; i++)
            fputc(((const bool *)kv->v.arr)[i] ? 1 : 0, f);
        break;
    default:
        put(f, kv->v.arr, (size_t)(kv->n_elems * mf_kv_elem_size(kv->elem_type)));
    }
}

static void put_value(FILE *f, const tport_kv *kv) {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    float f32;
    switch (kv->type) {
    case TPORT_KV_U8: case TPORT_KV_I8: u8 = (uint8_t)kv->v.u; put(f, &u8, 1); break;
    case TPORT_KV_BOOL: u8 = kv->v.b ? 1 : 0; put(f, &u8, 1); break;
    case TPORT_KV_U16: case TPORT_KV_I16: u16 = (uint16_t)kv->v.u; put(f, &u16, 2); break;
    case TPORT_KV_U32: case TPORT_KV_I32: u32 = (uint32_t)kv->v.u; put(f, &u32, 4); break;
    case TPORT_KV_F32: f32 = (float)kv->v.f; put(f, &f32, 4); break;
    case TPORT_KV_U64: case TPORT_KV_I64: put_u64(f, kv->v.u); break;
    case TPORT_KV_F64: put(f, &kv->v.f, 8); break;
    case TPORT_KV_STRING: put_str(f, kv->v.s); break;
    case TPORT_KV_ARRAY: put_array(f, kv); break;
    }
}

static void put_zeros(FILE *f, uint64_t n) {
    static const uint8_t zeros[64];
    while (n > 0) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        put(f, zeros, k);
        n -= k;
    }
}

static uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) & ~(a - 1);
}

static bool is_split_key(const char *key) {
    return !strcmp(key, "split.no") || !strcmp(key, "split.count") || !strcmp(key, "split.tensors.count");
}

/* The keys of one file: all of them for a whole file; in a split, the
 * first part's (without any split.* key set on the writer) and then the
 * part's split keys, in the order gguf-split's files have them: it sets
 * split.no, a placeholder split.count and split.tensors.count, then the
 * real split.count, and ggml's gguf_set_val_* removes a key before
 * appending it, so split.count comes last. */
static void put_kvs(const tport_gguf_writer *w, FILE *f, const tport_gguf_part *part) {
    uint64_t n = 0;
    bool all = !part || part->split_no == 0;
    for (int i = 0; all && i < w->n_kv; i++)
        n += !(part && is_split_key(w->kv[i].key));
    put_u64(f, n + (part ? 3 : 0));
    for (int i = 0; all && i < w->n_kv; i++) {
        if (part && is_split_key(w->kv[i].key))
            continue;
        put_str(f, w->kv[i].key);
        put_u32(f, (uint32_t)w->kv[i].type);
        put_value(f, &w->kv[i]);
    }
    if (!part)
        return;
    const tport_kv keys[3] = {{.type = TPORT_KV_U16, .v.u = part->split_no},
                              {.type = TPORT_KV_I32, .v.i = part->tensors_total},
                              {.type = TPORT_KV_U16, .v.u = part->split_count}};
    const char *names[3] = {"split.no", "split.tensors.count", "split.count"};
    for (int i = 0; i < 3; i++) {
        put_str(f, names[i]);
        put_u32(f, (uint32_t)keys[i].type);
        put_value(f, &keys[i]);
    }
}

static tport_status write_body(tport_gguf_writer *w, FILE *f, const char *path, const tport_gguf_part *part) {
    uint64_t total = 0, done = 0, off = 0;
    int first = part ? part->first : 0, end = part ? part->first + part->count : w->n_t;
    /* gguf-split's later parts carry no general.alignment: GGUF's 32 */
    uint64_t align = part && part->split_no ? 32 : w->alignment;
    for (int i = first; i < end; i++) {
        off = align_up(off, align);
        w->t[i].offset = off;
        off += w->t[i].nbytes;
        total += w->t[i].nbytes;
    }
    if (w->progress_total) {
        done = w->progress_base;
        total = w->progress_total;
    }
    put(f, "GGUF", 4);
    put_u32(f, 3);
    put_u64(f, (uint64_t)(end - first));
    put_kvs(w, f, part);
    for (int i = first; i < end; i++) {
        const w_tensor *t = &w->t[i];
        put_str(f, t->name);
        put_u32(f, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++)
            put_u64(f, (uint64_t)t->ne[d]);
        put_u32(f, t->type);
        put_u64(f, t->offset);
    }
    long pos = ftell(f);
    if (pos < 0)
        return tport_error(TPORT_STATUS_IO, "%s: cannot tell the write position: %s", path, strerror(errno));
    put_zeros(f, align_up((uint64_t)pos, align) - (uint64_t)pos);
    uint64_t at = 0;
    for (int i = first; i < end; i++) {
        const w_tensor *t = &w->t[i];
        put_zeros(f, t->offset - at);
        if (t->fill) {
            void *buf = malloc(t->nbytes ? (size_t)t->nbytes : 1);
            if (!buf)
                return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory for tensor '%s'", path, t->name);
            tport_status s = t->fill(t->user, i, buf, t->nbytes);
            if (s == TPORT_STATUS_OK)
                put(f, buf, (size_t)t->nbytes);
            free(buf);
            if (s != TPORT_STATUS_OK)
                return s;
        } else {
            put(f, t->data, (size_t)t->nbytes);
        }
        at = t->offset + t->nbytes;
        done += t->nbytes;
        if (ferror(f))
            return tport_error(TPORT_STATUS_IO, "%s: write failed: %s", path, strerror(errno));
        if (w->progress)
            w->progress(w->progress_user, done, total);
    }
    /* the last tensor is padded too: ggml's reader takes the data section
     * as the sum of the padded sizes and refuses a file that ends short
     * (llama.cpp's imatrix loader reads it whole) */
    put_zeros(f, align_up(at, align) - at);
    if (ferror(f))
        return tport_error(TPORT_STATUS_IO, "%s: write failed: %s", path, strerror(errno));
    return TPORT_STATUS_OK;
}

static tport_status write_file(tport_gguf_writer *w, const char *path, const tport_gguf_part *part) {
    if (!w || !path)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: no writer or path");
    if (part && (part->first < 0 || part->count < 0 || part->first > w->n_t || part->count > w->n_t - part->first))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: part %u has no such tensors", part->split_no);
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    snprintf(tmp, n + 16, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        tport_status s = tport_error(TPORT_STATUS_IO, "%s: cannot create a temporary file: %s", path, strerror(errno));
        free(tmp);
        return s;
    }
    (void)fchmod(fd, 0644);
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        tport_status s = tport_error(TPORT_STATUS_IO, "%s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        free(tmp);
        return s;
    }
    tport_status s = write_body(w, f, path, part);
    if (s == TPORT_STATUS_OK && (fflush(f) != 0 || ferror(f)))
        s = tport_error(TPORT_STATUS_IO, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && s == TPORT_STATUS_OK)
        s = tport_error(TPORT_STATUS_IO, "%s: write failed: %s", path, strerror(errno));
    if (s == TPORT_STATUS_OK && rename(tmp, path) != 0)
        s = tport_error(TPORT_STATUS_IO, "%s: cannot rename the temporary file: %s", path, strerror(errno));
    if (s != TPORT_STATUS_OK)
        unlink(tmp);
    free(tmp);
    return s;
}

tport_status tport_gguf_write(tport_gguf_writer *w, const char *path) { return write_file(w, path, NULL); }

tport_status tport_gguf_write_part(tport_gguf_writer *w, const char *path, const tport_gguf_part *part,
                                   uint64_t done, uint64_t total) {
    if (!w || !part)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: no writer or part");
    w->progress_base = done;
    w->progress_total = total;
    tport_status s = write_file(w, path, part);
    w->progress_base = w->progress_total = 0;
    return s;
}

int tport_gguf_n_tensors(const tport_gguf_writer *w) { return w ? w->n_t : 0; }

uint64_t tport_gguf_tensor_nbytes(const tport_gguf_writer *w, int i) {
    return w && i >= 0 && i < w->n_t ? w->t[i].nbytes : 0;
}
