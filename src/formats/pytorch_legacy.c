/* PyTorch's legacy (pre-1.6, or _use_new_zipfile_serialization=False)
 * checkpoint: five pickles in a row (magic number, protocol version 1001,
 * sys_info, the state dict, the sorted storage keys), then for each key
 * an i64 element count and the storage's raw bytes.  Storages are read in
 * place from the mapping. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pytorch_internal.h"

static const uint8_t magic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

bool mf_pytorch_legacy_sniff(const mf_cursor *c) {
    /* PROTO 2..5, LONG1 of 10 bytes: 0x1950a86a20f9469cfc6c */
    return c->size >= 14 && c->data[0] == 0x80 && c->data[1] >= 2 && c->data[1] <= 5 && c->data[2] == 0x8a &&
           c->data[3] == 10 && !memcmp(c->data + 4, magic, 10);
}

/* One pickle at c->pos; the arena is added to *arenas (freed by the caller). */
static tport_status next_pickle(mf_cursor *c, pk_arena **arena, pk_obj **out, const char *what) {
    char why[256];
    size_t used;
    uint64_t at = c->pos;
    if (!pk_unpickle(c->data + at, (size_t)(c->size - at), arena, out, &used, why, sizeof why))
        return mf_fail(c, at, "%s pickle: %s", what, why);
    c->pos += used;
    return TPORT_STATUS_OK;
}

tport_status pt_read_legacy(tport_model_file *mf, mf_cursor *c, bool *hf) {
    pk_arena *arenas[5] = {0};
    pk_obj *obj[5];
    static const char *const what[5] = {"magic", "protocol", "sys_info", "state dict", "storage keys"};
    tport_status s = TPORT_STATUS_OK;
    uint64_t starts[5] = {0};
    for (int i = 0; i < 5 && !s; i++) {
        starts[i] = c->pos;
        s = next_pickle(c, &arenas[i], &obj[i], what[i]);
    }
    if (!s && (obj[1]->kind != PK_INT || obj[1]->i != 1001))
        s = mf_fail(c, starts[1], "legacy PyTorch protocol version is not 1001");
    const pk_obj *le = s ? NULL : pk_dict_get(obj[2], "little_endian");
    if (!s && (!le || le->kind != PK_BOOL || !le->i))
        s = mf_fail(c, starts[2], "a big-endian (or unknown byte order) legacy PyTorch checkpoint");
    const pk_obj *dict = s ? NULL : pt_state_dict(c, starts[3], obj[3]);
    if (!s && !dict)
        s = TPORT_STATUS_BAD_FORMAT;
    pt_storage *st = NULL;
    size_t n_st = 0;
    if (!s)
        s = pt_collect_storages(c, starts[3], dict, &st, &n_st);
    const pk_obj *keys = s ? NULL : obj[4];
    if (!s && keys->kind != PK_LIST)
        s = mf_fail(c, starts[4], "the storage keys are not a list");
    /* the storages follow in the order of the key list */
    for (size_t k = 0; !s && k < keys->n; k++) {
        const pk_obj *key = keys->items[k];
        uint64_t at = c->pos;
        if (key->kind != PK_STR) {
            s = mf_fail(c, starts[4], "storage key %zu is not a string", k);
            break;
        }
        pt_storage *sp = NULL;
        for (size_t i = 0; i < n_st && !sp; i++)
            if (!strcmp(st[i].obj->key, key->s))
                sp = &st[i];
        uint64_t numel, nbytes;
        if ((s = mf_read_u64(c, &numel, "storage element count")))
            break;
        /* a storage no tensor uses (possible in general pickles) still has
         * to be skipped; its element size is unknown, so it must be last */
        if (!sp) {
            if (k + 1 != keys->n)
                s = mf_fail(c, at, "storage '%.32s' is used by no tensor", key->s);
            break;
        }
        if (numel != (uint64_t)sp->obj->numel)
            s = mf_fail(c, at, "storage '%.32s' has %llu elements, its id says %lld", key->s,
                        (unsigned long long)numel, (long long)sp->obj->numel);
        else if (!mf_mul_u64(numel, (uint64_t)sp->obj->elem_size, &nbytes) || nbytes > mf_left(c))
            s = mf_fail(c, c->pos, "storage '%.32s': %llu elements run past the end of the file", key->s,
                        (unsigned long long)numel);
        else {
            sp->data = c->data + c->pos;
            sp->nbytes = nbytes;
            sp->file_offset = c->pos;
            sp->in_map = true;
            c->pos += nbytes;
        }
    }
    if (!s)
        s = pt_build_tensors(mf, c, starts[3], dict, st, n_st, hf);
    free(st);
    for (int i = 0; i < 5; i++)
        pk_arena_free(arenas[i]);
    return s;
}
