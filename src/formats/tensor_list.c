/* Building a model file's tensor list: sizes from the type table, shapes
 * and data ranges checked against overflow and the file size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"
#include "quant/row_groups.h"
#include "quant/type_table.h"

bool mf_qk64_type(tport_type_id type, tport_type_id *qk64) {
    /* the row of the same family that GGML_QKK_64 builds wrote */
    const tport_type_traits *t = tport_type_revision(tport_traits(type), "qk64");
    if (!t || type != tport_traits(type)->successor)
        return false;
    *qk64 = t->info.id;
    return true;
}

bool mf_type_size(tport_type_id type, int64_t *block, uint64_t *block_bytes) {
    const tport_type_info *ti = tport_type_get(type);
    if (!ti || ti->block_size <= 0 || ti->block_bytes <= 0)
        return false;
    *block = ti->block_size;
    *block_bytes = ti->block_bytes;
    return true;
}

tport_status mf_tensor_bytes(const mf_cursor *c, uint64_t at, tport_type_id type, int n_dims,
                             const int64_t *ne, uint64_t *nbytes) {
    int64_t block;
    uint64_t block_bytes;
    if (!mf_type_size(type, &block, &block_bytes))
        return mf_fail(c, at, "unknown tensor type %u", type);
    if (n_dims < 1 || n_dims > 4)
        return mf_fail(c, at, "%d dimensions (1 to 4 allowed)", n_dims);
    uint64_t n = 1;
    for (int i = 0; i < 4; i++) {
        if (ne[i] < 0)
            return mf_fail(c, at, "negative dimension ne[%d] = %lld", i, (long long)ne[i]);
        if (!mf_mul_u64(n, (uint64_t)ne[i], &n) || n > (uint64_t)INT64_MAX)
            return mf_fail(c, at, "element count overflows");
    }
    if (ne[0] % block != 0)
        return mf_fail(c, at, "row length %lld is not a multiple of the block size %lld",
                       (long long)ne[0], (long long)block);
    /* a removed row-grouped type (Q4_0_4_4 ..) holds whole groups of rows:
     * any other count would leave the last group's blocks undefined */
    const tport_row_group *g = tport_row_group_of(type);
    if (g && ne[1] % g->rows != 0)
        return mf_fail(c, at, "%s interleaves rows in groups of %d; ne[1] = %lld is not a multiple of %d",
                       tport_type_get(type)->name, g->rows, (long long)ne[1], g->rows);
    if (!mf_mul_u64(n / (uint64_t)block, block_bytes, nbytes))
        return mf_fail(c, at, "tensor size overflows");
    return TPORT_STATUS_OK;
}

tport_status mf_reserve_tensors(tport_model_file *mf, uint64_t n) {
    uint64_t want = (uint64_t)mf->n_tensors + n;
    if (want <= (uint64_t)mf->tensors_cap)
        return TPORT_STATUS_OK;
    if (want > INT32_MAX / 2)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: too many tensors (%llu)", mf->path,
                           (unsigned long long)want);
    uint64_t cap = mf->tensors_cap ? (uint64_t)mf->tensors_cap * 2 : 16;
    if (cap < want)
        cap = want;
    tport_mf_tensor *t = realloc(mf->tensors, (size_t)cap * sizeof *t);
    if (!t)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory for %llu tensors", mf->path,
                           (unsigned long long)cap);
    mf->tensors = t;
    mf->tensors_cap = (int)cap;
    return TPORT_STATUS_OK;
}

static tport_status push_tensor(tport_model_file *mf, const char *name, size_t name_len,
                                tport_type_id type, int n_dims, const int64_t *ne) {
    MF_TRY(mf_reserve_tensors(mf, 1));
    tport_mf_tensor *t = &mf->tensors[mf->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = mf_strndup(mf, name, name_len);
    if (!t->name)
        return TPORT_STATUS_OUT_OF_MEMORY;
    t->type = type;
    t->n_dims = n_dims;
    for (int i = 0; i < 4; i++)
        t->ne[i] = i < n_dims ? ne[i] : 1;
    mf->n_tensors++;
    return TPORT_STATUS_OK;
}

static tport_status check_dims(const mf_cursor *c, uint64_t at, const char *name, size_t name_len, int n_dims) {
    if (n_dims < 1 || n_dims > 4)
        return mf_fail(c, at, "tensor '%.*s': %d dimensions (1 to 4 allowed)", (int)(name_len > 64 ? 64 : name_len),
                       name, n_dims);
    return TPORT_STATUS_OK;
}

tport_status mf_add_tensor(tport_model_file *mf, const mf_cursor *c, uint64_t at, const char *name,
                           size_t name_len, tport_type_id type, int n_dims, const int64_t *ne,
                           uint64_t offset) {
    int64_t full[4] = {1, 1, 1, 1};
    MF_TRY(check_dims(c, at, name, name_len, n_dims));
    memcpy(full, ne, (size_t)n_dims * sizeof *ne);
    uint64_t nbytes, end;
    MF_TRY(mf_tensor_bytes(c, at, type, n_dims, full, &nbytes));
    if (!mf_add_u64(offset, nbytes, &end) || end > c->size)
        return mf_fail(c, at, "tensor '%.*s': data [%llu, +%llu) lies past the end of the file (%llu bytes)",
                       (int)(name_len > 64 ? 64 : name_len), name, (unsigned long long)offset,
                       (unsigned long long)nbytes, (unsigned long long)c->size);
    MF_TRY(push_tensor(mf, name, name_len, type, n_dims, full));
    tport_mf_tensor *t = &mf->tensors[mf->n_tensors - 1];
    t->offset = offset;
    t->nbytes = nbytes;
    t->data = c->data + offset;
    return TPORT_STATUS_OK;
}

tport_status mf_add_unknown_tensor(tport_model_file *mf, const mf_cursor *c, uint64_t at, const char *name,
                                   size_t name_len, uint32_t raw_type, int n_dims, const int64_t *ne,
                                   uint64_t offset) {
    MF_TRY(check_dims(c, at, name, name_len, n_dims));
    for (int i = 0; i < n_dims; i++)
        if (ne[i] < 0)
            return mf_fail(c, at, "negative dimension ne[%d] = %lld", i, (long long)ne[i]);
    if (offset > c->size)
        return mf_fail(c, at, "tensor '%.*s': data at %llu lies past the end of the file (%llu bytes)",
                       (int)(name_len > 64 ? 64 : name_len), name, (unsigned long long)offset,
                       (unsigned long long)c->size);
    MF_TRY(push_tensor(mf, name, name_len, TPORT_MF_TYPE_UNKNOWN, n_dims, ne));
    tport_mf_tensor *t = &mf->tensors[mf->n_tensors - 1];
    t->unknown_type = raw_type;
    t->offset = offset;
    t->data = c->data + offset;
    return TPORT_STATUS_OK;
}

const tport_mf_tensor *tport_model_file_unknown_tensor(const tport_model_file *mf) {
    for (int i = 0; mf && i < mf->n_tensors; i++)
        if (mf->tensors[i].unknown_type)
            return &mf->tensors[i];
    return NULL;
}

tport_status mf_add_owned_tensor(tport_model_file *mf, const char *name, tport_type_id type,
                                 int n_dims, const int64_t *ne, void *data, uint64_t nbytes) {
    MF_TRY(push_tensor(mf, name, strlen(name), type, n_dims, ne));
    tport_mf_tensor *t = &mf->tensors[mf->n_tensors - 1];
    t->offset = 0;
    t->nbytes = nbytes;
    t->data = data;
    return TPORT_STATUS_OK;
}

static int cmp_name(const void *a, const void *b) {
    const tport_mf_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

tport_status mf_check_unique_names(const tport_model_file *mf, const mf_cursor *c) {
    if (mf->n_tensors < 2)
        return TPORT_STATUS_OK;
    const tport_mf_tensor **v = malloc((size_t)mf->n_tensors * sizeof *v);
    if (!v)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", mf->path);
    for (int i = 0; i < mf->n_tensors; i++)
        v[i] = &mf->tensors[i];
    qsort(v, (size_t)mf->n_tensors, sizeof *v, cmp_name);
    tport_status s = TPORT_STATUS_OK;
    for (int i = 1; i < mf->n_tensors && !s; i++)
        if (!strcmp(v[i - 1]->name, v[i]->name))
            s = mf_fail(c, v[i]->offset, "two tensors named '%.64s'", v[i]->name);
    free(v);
    return s;
}

static int cmp_str_ptr(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Appends one missing name to the list; false once it is full (", ..."). */
static bool note_missing(char *list, size_t *len, const char *name) {
    /* room is kept for the sentence around the list and a closing ", ..." */
    size_t cap = sizeof ((tport_model_file *)0)->missing - 112, need = strlen(name) + 2;
    if (*len + need + 6 > cap) {
        *len += (size_t)snprintf(list + *len, cap - *len, ", ...");
        return false;
    }
    *len += (size_t)snprintf(list + *len, cap - *len, "%s%s", *len ? ", " : "", name);
    return true;
}

/* Whether name is pattern (one %d) with a layer number below n_layer. */
static bool matches_layer(const char *name, const char *pattern, uint32_t n_layer) {
    const char *d = strstr(pattern, "%d");
    size_t pre = (size_t)(d - pattern);
    if (strncmp(name, pattern, pre) || name[pre] < '0' || name[pre] > '9')
        return false;
    char *end;
    unsigned long layer = strtoul(name + pre, &end, 10);
    return layer < n_layer && (end == name + pre + 1 || name[pre] != '0') && !strcmp(end, d + 2);
}

tport_status mf_list_missing(tport_model_file *mf, const char *label, const char *const *globals,
                             const char *const *per_layer, uint32_t n_layer) {
    mf->n_missing = 0;
    mf->missing[0] = '\0';
    /* The count without enumerating every required name (n_layer comes from
     * an untrusted header): names are unique, so missing = required - matched. */
    uint64_t n_globals = 0, n_patterns = 0, matched = 0;
    while (globals[n_globals])
        n_globals++;
    while (per_layer[n_patterns])
        n_patterns++;
    for (int i = 0; i < mf->n_tensors; i++) {
        const char *n = mf->tensors[i].name;
        bool hit = false;
        for (uint64_t g = 0; g < n_globals && !hit; g++)
            hit = !strcmp(n, globals[g]);
        for (uint64_t p = 0; p < n_patterns && !hit; p++)
            hit = matches_layer(n, per_layer[p], n_layer);
        matched += hit;
    }
    uint64_t required = n_globals + n_patterns * n_layer;
    if (matched >= required)
        return TPORT_STATUS_OK;
    mf->n_missing = required - matched > INT32_MAX ? INT32_MAX : (int)(required - matched);
    /* the first missing names: stops once the list is full, so at most
     * n_tensors + a few dozen names are looked at */
    const char **names = malloc((size_t)(mf->n_tensors ? mf->n_tensors : 1) * sizeof *names);
    if (!names)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", mf->path);
    for (int i = 0; i < mf->n_tensors; i++)
        names[i] = mf->tensors[i].name;
    qsort(names, (size_t)mf->n_tensors, sizeof *names, cmp_str_ptr);
    char list[sizeof mf->missing];
    size_t len = 0;
    bool room = true;
    list[0] = '\0';
    for (uint64_t g = 0; g < n_globals && room; g++)
        if (!bsearch(&globals[g], names, (size_t)mf->n_tensors, sizeof *names, cmp_str_ptr))
            room = note_missing(list, &len, globals[g]);
    char want[160];
    for (uint32_t b = 0; b < n_layer && room; b++)
        for (uint64_t p = 0; p < n_patterns && room; p++) {
            snprintf(want, sizeof want, per_layer[p], (int)b);
            const char *key = want;
            if (!bsearch(&key, names, (size_t)mf->n_tensors, sizeof *names, cmp_str_ptr))
                room = note_missing(list, &len, want);
        }
    free(names);
    snprintf(mf->missing, sizeof mf->missing, "a complete %.48s would also need %d tensor%s: %.400s", label,
             mf->n_missing, mf->n_missing == 1 ? "" : "s", list);
    return TPORT_STATUS_OK;
}
