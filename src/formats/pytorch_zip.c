/* torch.save's zip archive (the default since PyTorch 1.6): PREFIX/data.pkl
 * holds the pickled state dict, PREFIX/data/KEY each storage's raw bytes
 * (little-endian; PREFIX/byteorder says so in newer versions).  libzip
 * reads the archive from the mapping; torch stores every entry
 * uncompressed, and compressed entries are refused (no zip bombs).  The
 * storages the tensors use are copied into owned memory (libzip does not
 * tell where an entry's bytes lie in the file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pytorch_internal.h"

#ifndef TPORT_HAVE_LIBZIP

tport_status pt_read_zip(tport_model_file *mf, mf_cursor *c, bool *hf) {
    (void)mf;
    (void)hf;
    return mf_fail(c, 0, "PyTorch zip checkpoint, but tensorport was built without libzip (libzip-dev)");
}

#else

#include <zip.h>

#define MAX_PICKLE_BYTES (64ull << 20) /* a 70B llama's data.pkl is under 1 MiB */

/* The one entry NAME at depth one ("PREFIX/NAME"); its prefix (with the
 * slash) goes to prefix. */
static tport_status find_pickle(zip_t *za, const mf_cursor *c, char *prefix, size_t cap, zip_uint64_t *index) {
    zip_int64_t n = zip_get_num_entries(za, 0);
    bool found = false;
    for (zip_int64_t i = 0; i < n; i++) {
        const char *name = zip_get_name(za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
        const char *slash = name ? strchr(name, '/') : NULL;
        if (!slash || strcmp(slash + 1, "data.pkl"))
            continue;
        if (found)
            return mf_fail(c, 0, "zip archive with two data.pkl entries");
        if ((size_t)(slash - name) + 2 > cap)
            return mf_fail(c, 0, "zip archive prefix too long");
        memcpy(prefix, name, (size_t)(slash - name) + 1);
        prefix[slash - name + 1] = '\0';
        *index = (zip_uint64_t)i;
        found = true;
    }
    if (!found)
        return mf_fail(c, 0, "zip archive without PREFIX/data.pkl: not a PyTorch checkpoint");
    return TPORT_STATUS_OK;
}

/* Reads a whole stored (uncompressed) entry into buf (malloc'd, or owned
 * by mf when mf != NULL); at most `limit` bytes. */
static tport_status read_entry(zip_t *za, const mf_cursor *c, tport_model_file *mf, zip_uint64_t index,
                               uint64_t limit, uint8_t **buf, uint64_t *size) {
    zip_stat_t st;
    zip_stat_init(&st);
    const char *name = zip_get_name(za, index, ZIP_FL_ENC_RAW);
    if (zip_stat_index(za, index, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) || !(st.valid & ZIP_STAT_COMP_METHOD))
        return mf_fail(c, 0, "zip entry '%.64s': %s", name ? name : "?", zip_strerror(za));
    if (st.comp_method != ZIP_CM_STORE)
        return mf_fail(c, 0, "zip entry '%.64s' is compressed (method %d); torch.save stores entries as they are",
                       name, (int)st.comp_method);
    if (st.size > limit || st.size > c->size || st.size > SIZE_MAX - 1)
        return mf_fail(c, 0, "zip entry '%.64s' claims %llu bytes, more than the archive holds", name,
                       (unsigned long long)st.size);
    uint8_t *p = mf ? mf_alloc(mf, (size_t)st.size + 1) : malloc((size_t)st.size + 1);
    if (!p)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory for zip entry '%.64s'", c->path, name);
    zip_file_t *f = zip_fopen_index(za, index, 0);
    zip_int64_t got = f ? zip_fread(f, p, st.size) : -1;
    if (!f || got < 0 || (zip_uint64_t)got != st.size) {
        tport_status s = mf_fail(c, 0, "zip entry '%.64s' cannot be read: %s", name,
                                 f ? zip_file_strerror(f) : zip_strerror(za));
        if (f)
            zip_fclose(f);
        if (!mf)
            free(p);
        return s;
    }
    /* reading past the end makes libzip check the CRC of what was read */
    uint8_t extra;
    zip_int64_t more = zip_fread(f, &extra, 1);
    bool bad = more != 0;
    tport_status s = bad ? mf_fail(c, 0, "zip entry '%.64s' cannot be read: %s", name, zip_file_strerror(f))
                         : TPORT_STATUS_OK;
    zip_fclose(f);
    if (bad) {
        if (!mf)
            free(p);
        return s;
    }
    *buf = p;
    *size = st.size;
    return TPORT_STATUS_OK;
}

static tport_status read_storages(zip_t *za, tport_model_file *mf, const mf_cursor *c, const char *prefix,
                                  pt_storage *st, size_t n) {
    for (size_t i = 0; i < n; i++) {
        char name[512];
        const char *key = st[i].obj->key;
        if (snprintf(name, sizeof name, "%sdata/%s", prefix, key) >= (int)sizeof name)
            return mf_fail(c, 0, "storage key '%.32s' too long", key);
        zip_int64_t idx = zip_name_locate(za, name, ZIP_FL_ENC_RAW);
        if (idx < 0)
            return mf_fail(c, 0, "storage '%.64s' is not in the archive", name);
        uint64_t need;
        if (!mf_mul_u64((uint64_t)st[i].obj->numel, (uint64_t)st[i].obj->elem_size, &need))
            return mf_fail(c, 0, "storage '%.64s': %lld elements overflow", name, (long long)st[i].obj->numel);
        uint8_t *p;
        uint64_t size;
        MF_TRY(read_entry(za, c, mf, (zip_uint64_t)idx, c->size, &p, &size));
        if (size < need)
            return mf_fail(c, 0, "storage '%.64s' holds %llu bytes; its %lld elements need %llu", name,
                           (unsigned long long)size, (long long)st[i].obj->numel, (unsigned long long)need);
        st[i].data = p;
        st[i].nbytes = size;
    }
    return TPORT_STATUS_OK;
}

static tport_status check_byteorder(zip_t *za, const mf_cursor *c, const char *prefix) {
    char name[300];
    snprintf(name, sizeof name, "%sbyteorder", prefix);
    zip_int64_t idx = zip_name_locate(za, name, ZIP_FL_ENC_RAW);
    if (idx < 0)
        return TPORT_STATUS_OK; /* older versions: always little-endian */
    uint8_t *p;
    uint64_t n;
    MF_TRY(read_entry(za, c, NULL, (zip_uint64_t)idx, 16, &p, &n));
    bool little = n == 6 && !memcmp(p, "little", 6);
    free(p);
    if (!little)
        return mf_fail(c, 0, "a big-endian PyTorch checkpoint (byteorder is not 'little')");
    return TPORT_STATUS_OK;
}

static tport_status read_archive(tport_model_file *mf, const mf_cursor *c, zip_t *za, bool *hf) {
    char prefix[256];
    zip_uint64_t pkl = 0;
    MF_TRY(find_pickle(za, c, prefix, sizeof prefix, &pkl));
    MF_TRY(check_byteorder(za, c, prefix));
    uint8_t *pickle;
    uint64_t n;
    MF_TRY(read_entry(za, c, NULL, pkl, MAX_PICKLE_BYTES, &pickle, &n));
    pk_arena *arena = NULL;
    pk_obj *root;
    size_t used;
    char why[256];
    tport_status s = TPORT_STATUS_OK;
    if (!pk_unpickle(pickle, (size_t)n, &arena, &root, &used, why, sizeof why))
        s = mf_fail(c, 0, "%sdata.pkl: %s", prefix, why);
    const pk_obj *dict = s ? NULL : pt_state_dict(c, 0, root);
    if (!s && !dict)
        s = TPORT_STATUS_BAD_FORMAT;
    pt_storage *st = NULL;
    size_t n_st = 0;
    if (!s)
        s = pt_collect_storages(c, 0, dict, &st, &n_st);
    if (!s)
        s = read_storages(za, mf, c, prefix, st, n_st);
    if (!s)
        s = pt_build_tensors(mf, c, 0, dict, st, n_st, hf);
    free(st);
    pk_arena_free(arena);
    free(pickle);
    return s;
}

tport_status pt_read_zip(tport_model_file *mf, mf_cursor *c, bool *hf) {
    zip_error_t err;
    zip_error_init(&err);
    zip_source_t *src = zip_source_buffer_create(c->data, c->size, 0, &err);
    zip_t *za = src ? zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &err) : NULL;
    if (!za) {
        tport_status s = mf_fail(c, 0, "not a readable zip archive: %s", zip_error_strerror(&err));
        if (src)
            zip_source_free(src);
        zip_error_fini(&err);
        return s;
    }
    zip_error_fini(&err);
    tport_status s = read_archive(mf, c, za, hf);
    zip_discard(za); /* also frees the source */
    return s;
}

#endif
