/* A state dict's tensors from the unpickled objects and the storages'
 * bytes: dtype from the storage type, shape reversed into ggml order,
 * storage offset and strides checked against the storage and honoured
 * (views that are not row-major contiguous are gathered into owned
 * memory; shared storages are read once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pytorch_internal.h"

static bool is_tensor_dict(const pk_obj *d) {
    if (!d || d->kind != PK_DICT)
        return false;
    for (size_t i = 0; i < d->n; i++)
        if (d->values[i]->kind == PK_TENSOR)
            return true;
    return false;
}

const pk_obj *pt_state_dict(const mf_cursor *c, uint64_t at, const pk_obj *root) {
    if (is_tensor_dict(root))
        return root;
    static const char *const wrappers[] = {"state_dict", "model", "module"};
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++) {
        const pk_obj *d = pk_dict_get(root, wrappers[i]);
        if (is_tensor_dict(d))
            return d;
    }
    mf_fail(c, at, "the pickle holds no state dict (a dict of tensors)");
    return NULL;
}

tport_status pt_collect_storages(const mf_cursor *c, uint64_t at, const pk_obj *dict, pt_storage **out, size_t *n) {
    *out = NULL;
    *n = 0;
    pt_storage *v = calloc(dict->n ? dict->n : 1, sizeof *v);
    if (!v)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", c->path);
    for (size_t i = 0; i < dict->n; i++) {
        const pk_obj *t = dict->values[i];
        if (t->kind != PK_TENSOR)
            continue;
        size_t k = 0;
        while (k < *n && strcmp(v[k].obj->key, t->storage->key))
            k++;
        if (k < *n && v[k].obj->dtype != t->storage->dtype) {
            free(v);
            return mf_fail(c, at, "storage '%.32s' is used with two element types", t->storage->key);
        }
        if (k == *n)
            v[(*n)++].obj = t->storage;
    }
    *out = v;
    return TPORT_STATUS_OK;
}

static const pt_storage *find_storage(const pt_storage *st, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(st[i].obj->key, key))
            return &st[i];
    return NULL;
}

/* Checks the view lies inside its storage; *contig says whether it is
 * row-major contiguous (dims of size 1 may have any stride). */
static tport_status check_view(const mf_cursor *c, uint64_t at, const char *name, const pk_obj *t,
                               const pt_storage *s, bool *contig) {
    if (t->offset < 0)
        return mf_fail(c, at, "tensor '%.64s': negative storage offset", name);
    uint64_t last = (uint64_t)t->offset, expect = 1;
    *contig = true;
    for (int d = t->n_dims - 1; d >= 0; d--) {
        if (t->size[d] <= 0 || t->size[d] > (1ll << 40) || t->stride[d] < 0)
            return mf_fail(c, at, "tensor '%.64s': size %lld / stride %lld of dimension %d", name,
                           (long long)t->size[d], (long long)t->stride[d], d);
        uint64_t step;
        if (!mf_mul_u64((uint64_t)(t->size[d] - 1), (uint64_t)t->stride[d], &step) || !mf_add_u64(last, step, &last))
            return mf_fail(c, at, "tensor '%.64s': view overflows", name);
        if (t->size[d] > 1 && (uint64_t)t->stride[d] != expect)
            *contig = false;
        if (!mf_mul_u64(expect, (uint64_t)t->size[d], &expect))
            return mf_fail(c, at, "tensor '%.64s': too many elements", name);
    }
    uint64_t have = s->nbytes / (uint64_t)s->obj->elem_size;
    if ((uint64_t)s->obj->numel < have)
        have = (uint64_t)s->obj->numel;
    /* an expanded view (stride 0) could name far more elements than are
     * stored, and gathering it would allocate that much: no saved weight is one */
    if (expect > have)
        return mf_fail(c, at, "tensor '%.64s': %llu elements, more than its storage's %llu", name,
                       (unsigned long long)expect, (unsigned long long)have);
    if (last >= have)
        return mf_fail(c, at, "tensor '%.64s': its view reaches element %llu of a storage of %llu", name,
                       (unsigned long long)last, (unsigned long long)have);
    return TPORT_STATUS_OK;
}

/* Copies a strided view into row-major order. */
static void gather(const pk_obj *t, const uint8_t *base, size_t es, uint8_t *dst) {
    int64_t idx[PK_MAX_DIMS] = {0};
    uint64_t total = 1;
    for (int d = 0; d < t->n_dims; d++)
        total *= (uint64_t)t->size[d];
    for (uint64_t e = 0; e < total; e++) {
        uint64_t off = (uint64_t)t->offset;
        for (int d = 0; d < t->n_dims; d++)
            off += (uint64_t)idx[d] * (uint64_t)t->stride[d];
        memcpy(dst + e * es, base + off * es, es);
        for (int d = t->n_dims - 1; d >= 0; d--) { /* next index, last dimension fastest */
            if (++idx[d] < t->size[d])
                break;
            idx[d] = 0;
        }
    }
}

/* Old Hugging Face checkpoints carry RoPE's inverse frequencies as a
 * buffer, Meta's LLaMA-1 ones "rope.freqs": not weights, recomputed from
 * the config (llama.cpp's converters skipped them too). */
static bool skipped_buffer(const char *name) {
    size_t n = strlen(name), k = strlen("rotary_emb.inv_freq");
    return (n >= k && !strcmp(name + n - k, "rotary_emb.inv_freq")) || !strcmp(name, "rope.freqs");
}

tport_status pt_build_tensors(tport_model_file *mf, const mf_cursor *c, uint64_t at, const pk_obj *dict,
                              const pt_storage *st, size_t n_st, bool *hf) {
    MF_TRY(mf_reserve_tensors(mf, dict->n));
    *hf = false;
    int skipped = 0;
    for (size_t i = 0; i < dict->n; i++) {
        const pk_obj *k = dict->items[i], *t = dict->values[i];
        if (k->kind != PK_STR)
            return mf_fail(c, at, "state dict key %zu is not a string", i);
        if (t->kind != PK_TENSOR || skipped_buffer(k->s)) {
            skipped++;
            continue;
        }
        const char *name = k->s;
        if (k->len == 0 || k->len > 200 || memchr(name, '\0', k->len))
            return mf_fail(c, at, "state dict key %zu is not a usable tensor name", i);
        const pt_storage *s = find_storage(st, n_st, t->storage->key);
        if (!s || !s->data)
            return mf_fail(c, at, "tensor '%.64s': storage '%.32s' is not in the file", name, t->storage->key);
        if (s->obj->dtype < 0)
            return mf_fail(c, at, "tensor '%.64s': %s tensors are not supported", name, s->obj->s);
        if (t->n_dims > 4)
            return mf_fail(c, at, "tensor '%.64s': %d dimensions (at most 4)", name, t->n_dims);
        bool contig = false;
        MF_TRY(check_view(c, at, name, t, s, &contig));
        int n_dims = t->n_dims ? t->n_dims : 1;
        int64_t ne[4] = {1, 1, 1, 1};
        for (int d = 0; d < t->n_dims; d++)
            ne[t->n_dims - 1 - d] = t->size[d]; /* outermost first -> ggml's ne[0] innermost */
        tport_type_id type = (tport_type_id)s->obj->dtype;
        uint64_t nbytes;
        MF_TRY(mf_tensor_bytes(c, at, type, n_dims, ne, &nbytes));
        char norm[256];
        mf_normalize_llama_name(name, norm, sizeof norm);
        if (!strncmp(name, "model.", 6) || !strncmp(name, "lm_head.", 8))
            *hf = true;
        size_t es = (size_t)s->obj->elem_size;
        if (contig && s->in_map) {
            MF_TRY(mf_add_tensor(mf, c, at, norm, strlen(norm), type, n_dims, ne,
                                 s->file_offset + (uint64_t)t->offset * es));
        } else {
            if (nbytes > SIZE_MAX)
                return mf_fail(c, at, "tensor '%.64s' is too large", name);
            uint8_t *dst = contig ? (uint8_t *)(uintptr_t)(s->data + (uint64_t)t->offset * es) : mf_alloc(mf, (size_t)nbytes);
            if (!dst)
                return TPORT_STATUS_OUT_OF_MEMORY;
            if (!contig)
                gather(t, s->data, es, dst);
            MF_TRY(mf_add_owned_tensor(mf, norm, type, n_dims, ne, dst, nbytes));
        }
    }
    if (mf->n_tensors == 0)
        return mf_fail(c, at, "the state dict holds no tensors");
    if (skipped)
        snprintf(mf->notes, sizeof mf->notes, "%d state dict entries that are not weights (RoPE buffers, ...) skipped",
                 skipped);
    return mf_check_unique_names(mf, c);
}
