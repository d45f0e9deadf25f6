/* Sharded safetensors, as Hugging Face writes checkpoints over ~5 GB:
 * model-00001-of-0000N.safetensors ... with model.safetensors.index.json,
 * whose "weight_map" maps each tensor name to the shard file holding it.
 * Every shard is read on its own (safetensors_read.c), stays mapped, and
 * its tensors join the model zero copy (model_parts.c).  The index is
 * hostile input like any file: a shard name is a plain file name in the
 * index's folder (no '/', no '..', nothing absolute), every tensor the
 * index lists must be in the shard it names and every tensor of a shard
 * must be listed for that shard. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "formats/mf_internal.h"

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"
#define SHARD_EXT ".safetensors"
#define MAX_INDEX_BYTES (64u << 20)

bool mf_st_index_sniff(const mf_cursor *c) {
    uint64_t i = 0;
    while (i < c->size && (c->data[i] == ' ' || c->data[i] == '\n' || c->data[i] == '\t' || c->data[i] == '\r'))
        i++;
    if (i >= c->size || c->data[i] != '{')
        return false;
    static const char key[] = "\"weight_map\"";
    uint64_t k = sizeof key - 1, end = c->size < MAX_INDEX_BYTES ? c->size : MAX_INDEX_BYTES;
    for (; i + k <= end; i++)
        if (c->data[i] == '"' && !memcmp(c->data + i, key, k))
            return true;
    return false;
}

static bool is_regular(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static char *join(const char *dir, size_t dir_len, const char *name, size_t name_len) {
    char *p = malloc(dir_len + name_len + 2);
    if (p)
        snprintf(p, dir_len + name_len + 2, "%.*s%s%.*s", (int)dir_len, dir,
                 dir_len && dir[dir_len - 1] != '/' ? "/" : "", (int)name_len, name);
    return p;
}

/* Length of NAME when base is "NAME-DDDDD-of-DDDDD.safetensors", else 0. */
static size_t shard_prefix(const char *base) {
    static const char pattern[] = "-DDDDD-of-DDDDD" SHARD_EXT;
    size_t n = strlen(base), k = sizeof pattern - 1;
    if (n <= k)
        return 0;
    const char *s = base + n - k;
    for (size_t i = 0; i < k; i++)
        if (pattern[i] == 'D' ? s[i] < '0' || s[i] > '9' : s[i] != pattern[i])
            return 0;
    return n - k;
}

tport_status mf_st_resolve_path(const char *path, char **out, bool *shard) {
    *out = NULL;
    *shard = false;
    struct stat st;
    if (stat(path, &st) != 0)
        return TPORT_STATUS_OK; /* opening it says why */
    size_t len = strlen(path);
    if (S_ISDIR(st.st_mode)) {
        const char *names[] = {INDEX_NAME, SINGLE_NAME};
        for (size_t i = 0; i < 2; i++) {
            char *p = join(path, len, names[i], strlen(names[i]));
            if (!p)
                return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
            if (is_regular(p)) {
                *out = p;
                return TPORT_STATUS_OK;
            }
            free(p);
        }
        return tport_error(TPORT_STATUS_IO, "%s: a folder without " INDEX_NAME " or " SINGLE_NAME, path);
    }
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dir_len = (size_t)(base - path), prefix = shard_prefix(base);
    if (!S_ISREG(st.st_mode) || prefix == 0)
        return TPORT_STATUS_OK;
    /* Hugging Face names the index after the shards' prefix */
    char name[512];
    int n = snprintf(name, sizeof name, "%.*s" SHARD_EXT ".index.json", (int)prefix, base);
    if (n < 0 || (size_t)n >= sizeof name)
        return TPORT_STATUS_OK;
    char *idx = join(path, dir_len, name, (size_t)n);
    if (!idx)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!is_regular(idx)) {
        free(idx);
        return TPORT_STATUS_OK; /* a lone shard reads as itself */
    }
    *out = idx;
    *shard = true;
    return TPORT_STATUS_OK;
}

#if !defined(TPORT_HAVE_CJSON) || defined(TPORT_NO_SAFETENSORS)

tport_status mf_read_st_index(tport_model_file *mf, mf_cursor *c) {
    mf->container = TPORT_CONTAINER_SAFETENSORS;
    return mf_fail(c, 0, "a sharded safetensors index, but tensorport was built without safetensors support "
                   "(-DTPORT_SAFETENSORS=OFF, or without cJSON: libcjson-dev)");
}

#else

#include <cjson/cJSON.h>

#define MAX_SHARDS 4096
#define MAX_NAME 255

typedef struct entry {
    char *name;     /* normalized as the shard reader normalizes its names */
    uint32_t shard; /* index into the sorted shard names */
    bool found;
} entry;

typedef struct index {
    entry *entries;
    uint64_t n_entries;
    const char **shards; /* sorted, distinct; point into the JSON */
    uint32_t n_shards;
} st_index;

/* A shard is named by a plain file name in the index's folder. */
static bool plain_shard_name(const char *s) {
    size_t n = strlen(s), ext = sizeof SHARD_EXT - 1;
    if (n <= ext || n > MAX_NAME || s[0] == '.' || strstr(s, "..") || strcmp(s + n - ext, SHARD_EXT))
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == '\\' || (unsigned char)s[i] < 0x20)
            return false;
    return true;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }
static int cmp_entry(const void *a, const void *b) { return strcmp(((const entry *)a)->name, ((const entry *)b)->name); }

static tport_status read_shard_names(tport_model_file *mf, const mf_cursor *c, const cJSON *map, st_index *ix) {
    uint64_t n = 0;
    for (const cJSON *e = map->child; e; e = e->next) {
        if (!e->string || !e->string[0] || strlen(e->string) > MAX_NAME)
            return mf_fail(c, 0, "weight_map: a tensor name is empty or longer than %d bytes", MAX_NAME);
        if (!cJSON_IsString(e) || !plain_shard_name(e->valuestring))
            return mf_fail(c, 0, "weight_map: tensor '%.64s': the shard must be a plain file name ending in "
                           SHARD_EXT " in the index's folder (no '/', no '..'), not %s%.64s%s", e->string,
                           cJSON_IsString(e) ? "'" : "a JSON ", cJSON_IsString(e) ? e->valuestring : "non-string",
                           cJSON_IsString(e) ? "'" : "");
        n++;
    }
    if (n == 0)
        return mf_fail(c, 0, "weight_map lists no tensors");
    const char **names = mf_alloc_array(mf, n, sizeof *names);
    ix->entries = mf_alloc_array(mf, n, sizeof *ix->entries);
    if (!names || !ix->entries)
        return TPORT_STATUS_OUT_OF_MEMORY;
    uint64_t i = 0;
    for (const cJSON *e = map->child; e; e = e->next)
        names[i++] = e->valuestring;
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    uint64_t k = 0;
    for (i = 0; i < n; i++)
        if (k == 0 || strcmp(names[k - 1], names[i]))
            names[k++] = names[i];
    if (k > MAX_SHARDS)
        return mf_fail(c, 0, "weight_map names %llu shards (at most %d)", (unsigned long long)k, MAX_SHARDS);
    ix->shards = names;
    ix->n_shards = (uint32_t)k;
    i = 0;
    for (const cJSON *e = map->child; e; e = e->next, i++) {
        char norm[MAX_NAME + 1];
        mf_normalize_llama_name(e->string, norm, sizeof norm);
        const char **hit = bsearch(&e->valuestring, names, (size_t)k, sizeof *names, cmp_str);
        ix->entries[i] = (entry){mf_strndup(mf, norm, strlen(norm)), (uint32_t)(hit - names), false};
        if (!ix->entries[i].name)
            return TPORT_STATUS_OUT_OF_MEMORY;
    }
    ix->n_entries = n;
    qsort(ix->entries, (size_t)n, sizeof *ix->entries, cmp_entry);
    for (i = 1; i < n; i++)
        if (!strcmp(ix->entries[i - 1].name, ix->entries[i].name))
            return mf_fail(c, 0, "weight_map lists tensor '%.64s' twice", ix->entries[i].name);
    return TPORT_STATUS_OK;
}

/* Every tensor of shard k is listed for shard k. */
static tport_status check_shard(const st_index *ix, const tport_model_file *shard, uint32_t k, const char *index_path) {
    if (shard->container != TPORT_CONTAINER_SAFETENSORS)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: a shard of %s, but a %s file, not safetensors", shard->path,
                           index_path, tport_container_name(shard->container));
    for (int i = 0; i < shard->n_tensors; i++) {
        entry key = {.name = shard->tensors[i].name};
        entry *e = bsearch(&key, ix->entries, (size_t)ix->n_entries, sizeof *e, cmp_entry);
        if (!e || e->shard != k)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: holds tensor '%.64s', which %s %s%s", shard->path,
                               key.name, index_path, e ? "puts in " : "does not list", e ? ix->shards[e->shard] : "");
        e->found = true;
    }
    return TPORT_STATUS_OK;
}

static tport_status open_shards(tport_model_file *mf, const st_index *ix, tport_model_file **shards) {
    const char *slash = strrchr(mf->path, '/');
    size_t dir_len = slash ? (size_t)(slash - mf->path) + 1 : 0;
    tport_status s = TPORT_STATUS_OK;
    for (uint32_t k = 0; k < ix->n_shards && !s; k++) {
        char *path = join(mf->path, dir_len, ix->shards[k], strlen(ix->shards[k]));
        s = path ? mf_parts_open(mf->path, path, k, ix->n_shards, "sharded safetensors model", &shards[k])
                 : TPORT_STATUS_OUT_OF_MEMORY;
        free(path);
        if (!s)
            s = check_shard(ix, shards[k], k, mf->path);
    }
    for (uint64_t i = 0; i < ix->n_entries && !s; i++)
        if (!ix->entries[i].found)
            s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: lists tensor '%.64s' in %s, which does not hold it", mf->path,
                            ix->entries[i].name, ix->shards[ix->entries[i].shard]);
    uint64_t total;
    if (!s)
        s = mf_parts_check_unique(shards, ix->n_shards, &total);
    return s;
}

static tport_status read_index(tport_model_file *mf, const mf_cursor *c, const cJSON *root) {
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(root) || !cJSON_IsObject(map))
        return mf_fail(c, 0, "a safetensors index needs a \"weight_map\" object");
    st_index ix = {0};
    MF_TRY(read_shard_names(mf, c, map, &ix));
    if (mf->borrowed)
        return mf_fail(c, 0, "a sharded safetensors index (%u shards): the shards cannot be read from memory",
                       ix.n_shards);
    tport_model_file **shards = calloc(ix.n_shards, sizeof *shards);
    if (!shards)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", mf->path);
    tport_status s = open_shards(mf, &ix, shards);
    if (!s)
        s = mf_parts_adopt(mf, shards, ix.n_shards);
    if (s)
        for (uint32_t k = 0; k < ix.n_shards; k++)
            tport_model_file_close(shards[k]);
    free(shards);
    if (!s) {
        mf->n_parts = ix.n_shards;
        char note[96];
        snprintf(note, sizeof note, "%u safetensors shards read as one (zero copy from each)", ix.n_shards);
        mf_add_note(mf, note);
    }
    return s;
}

tport_status mf_read_st_index(tport_model_file *mf, mf_cursor *c) {
    mf->container = TPORT_CONTAINER_SAFETENSORS;
    if (mf->part_only) /* an index named as a shard: never read recursively */
        return mf_fail(c, 0, "a safetensors index where a shard was expected");
    if (c->size > MAX_INDEX_BYTES)
        return mf_fail(c, 0, "a safetensors index of %llu bytes (at most %u)", (unsigned long long)c->size,
                       MAX_INDEX_BYTES);
    cJSON *root = cJSON_ParseWithLength((const char *)c->data, (size_t)c->size);
    if (!root)
        return mf_fail(c, 0, "a safetensors index that is not valid JSON");
    tport_status s = read_index(mf, c, root);
    cJSON_Delete(root);
    /* hyperparameters from config.json beside the index; q/k un-permuted
     * over the whole model's tensors */
    return s ? s : mf_apply_hf_config(mf, c);
}

#endif
