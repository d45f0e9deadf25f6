/* Metadata built by a reader that is not GGUF (Hugging Face folders): kv
 * entries appended under GGUF's key names, so everything downstream (the
 * hyperparameters, the tokenizer, tport convert) reads them as it reads a
 * GGUF file's.  The list lives in memory owned by the model file. */
#include <string.h>

#include "formats/mf_internal.h"

tport_kv *mf_kv_add(tport_model_file *mf, const char *key, tport_kv_type type) {
    for (int i = 0; i < mf->n_kv; i++) /* a key set again replaces its value */
        if (!strcmp(mf->kv[i].key, key)) {
            memset(&mf->kv[i].v, 0, sizeof mf->kv[i].v);
            mf->kv[i].type = type;
            return &mf->kv[i];
        }
    /* grown by copying into a new owned block; a few dozen keys at most */
    tport_kv *kv = mf_alloc_array(mf, (uint64_t)mf->n_kv + 1, sizeof *kv);
    char *k = mf_strndup(mf, key, strlen(key));
    if (!kv || !k)
        return NULL;
    if (mf->n_kv)
        memcpy(kv, mf->kv, (size_t)mf->n_kv * sizeof *kv);
    mf->kv = kv;
    tport_kv *e = &kv[mf->n_kv++];
    e->key = k;
    e->type = type;
    return e;
}

tport_status mf_kv_add_u32(tport_model_file *mf, const char *key, uint32_t v) {
    tport_kv *e = mf_kv_add(mf, key, TPORT_KV_U32);
    if (!e)
        return TPORT_STATUS_OUT_OF_MEMORY;
    e->v.u = v;
    return TPORT_STATUS_OK;
}

tport_status mf_kv_add_f32(tport_model_file *mf, const char *key, float v) {
    tport_kv *e = mf_kv_add(mf, key, TPORT_KV_F32);
    if (!e)
        return TPORT_STATUS_OUT_OF_MEMORY;
    e->v.f = v;
    return TPORT_STATUS_OK;
}

tport_status mf_kv_add_bool(tport_model_file *mf, const char *key, bool v) {
    tport_kv *e = mf_kv_add(mf, key, TPORT_KV_BOOL);
    if (!e)
        return TPORT_STATUS_OUT_OF_MEMORY;
    e->v.b = v;
    return TPORT_STATUS_OK;
}

tport_status mf_kv_add_str(tport_model_file *mf, const char *key, const char *s) {
    char *copy = mf_strndup(mf, s, strlen(s));
    tport_kv *e = copy ? mf_kv_add(mf, key, TPORT_KV_STRING) : NULL;
    if (!e)
        return TPORT_STATUS_OUT_OF_MEMORY;
    e->v.s = copy;
    return TPORT_STATUS_OK;
}

tport_status mf_kv_add_array(tport_model_file *mf, const char *key, tport_kv_type elem, uint64_t n, void *arr) {
    tport_kv *e = mf_kv_add(mf, key, TPORT_KV_ARRAY);
    if (!e)
        return TPORT_STATUS_OUT_OF_MEMORY;
    e->elem_type = elem;
    e->n_elems = n;
    e->v.arr = arr;
    return TPORT_STATUS_OK;
}
