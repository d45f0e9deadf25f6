/* tport_model_identity: a 64-bit FNV-1a hash of what makes a model file
 * this model, its metadata (every key, type and value) and its tensor
 * table (names, types, shapes, sizes), plus the container's
 * hyperparameters for files without metadata (llama2.c).  Session files
 * record it, so a session is only ever loaded into the model that made
 * it.  The tensor data is not read: hashing gigabytes at every load would
 * cost more than the identity is worth, and a file whose weights changed
 * under the same table is not a case a session file guards against. */
#include <string.h>

#include "model/model.h"
#include "model/session_file.h"

static uint64_t hash_u64(uint64_t h, uint64_t v) {
    uint8_t b[8];
    tport_put_u64(b, v);
    return tport_fnv64(h, b, sizeof b);
}

static uint64_t hash_str(uint64_t h, const char *s) {
    size_t n = s ? strlen(s) : 0;
    return tport_fnv64(hash_u64(h, n), s, n);
}

static size_t elem_size(tport_kv_type t) {
    switch (t) {
    case TPORT_KV_U8: case TPORT_KV_I8: case TPORT_KV_BOOL: return 1;
    case TPORT_KV_U16: case TPORT_KV_I16: return 2;
    case TPORT_KV_U32: case TPORT_KV_I32: case TPORT_KV_F32: return 4;
    case TPORT_KV_U64: case TPORT_KV_I64: case TPORT_KV_F64: return 8;
    default: return 0;
    }
}

static uint64_t hash_kv(uint64_t h, const tport_kv *kv) {
    h = hash_str(h, kv->key);
    h = hash_u64(h, (uint64_t)kv->type);
    switch (kv->type) {
    case TPORT_KV_STRING:
        return hash_str(h, kv->v.s);
    case TPORT_KV_F32: case TPORT_KV_F64: {
        double d = kv->v.f;
        return tport_fnv64(h, &d, sizeof d);
    }
    case TPORT_KV_BOOL:
        return hash_u64(h, kv->v.b);
    case TPORT_KV_ARRAY:
        h = hash_u64(hash_u64(h, (uint64_t)kv->elem_type), kv->n_elems);
        if (kv->elem_type == TPORT_KV_STRING) {
            char **s = kv->v.arr;
            for (uint64_t i = 0; s && i < kv->n_elems; i++)
                h = hash_str(h, s[i]);
        } else if (elem_size(kv->elem_type) && kv->v.arr) {
            h = tport_fnv64(h, kv->v.arr, (size_t)kv->n_elems * elem_size(kv->elem_type));
        } /* nested arrays: their count only */
        return h;
    default: /* the integers */
        return hash_u64(h, kv->v.u);
    }
}

uint64_t tport_model_identity(const tport_model *m) {
    if (!m)
        return 0;
    const tport_model_file *mf = m->file;
    uint64_t h = hash_str(TPORT_FNV64_INIT, mf->arch);
    /* files without metadata (llama2.c) are told apart by their shapes */
    const tport_mf_hparams *hp = &mf->hp;
    const uint32_t dims[] = {hp->n_vocab, hp->n_ctx, hp->n_embd, hp->n_ff, hp->n_layer, hp->n_head, hp->n_head_kv,
                             hp->n_rot};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++)
        h = hash_u64(h, dims[i]);
    for (int i = 0; i < mf->n_kv; i++)
        h = hash_kv(h, &mf->kv[i]);
    for (int i = 0; i < mf->n_tensors; i++) {
        const tport_mf_tensor *t = &mf->tensors[i];
        h = hash_u64(hash_u64(hash_str(h, t->name), t->type), (uint64_t)t->n_dims);
        for (int d = 0; d < 4; d++)
            h = hash_u64(h, (uint64_t)t->ne[d]);
        h = hash_u64(h, t->nbytes);
    }
    return h;
}
