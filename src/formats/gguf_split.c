/* Split GGUF, as llama.cpp's gguf-split writes it: NAME-00001-of-0000N.gguf
 * ... NAME-0000N-of-0000N.gguf, each a complete GGUF file with its own
 * tensor infos and data section; the first carries every metadata key,
 * and each part carries split.no (u16, 0-based), split.count (u16) and
 * split.tensors.count (i32, the tensors of all parts).  llama.cpp's loader
 * builds the sibling names from the first part's name (llama_split_prefix
 * and llama_split_path, "%s-%05d-of-%05d.gguf"); so does this reader, from
 * whichever part it was given: the names come from that path's prefix and
 * two numbers, so a part is never looked for outside its folder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/gguf_meta.h"
#include "formats/mf_internal.h"

#define SPLIT_SUFFIX "-%05u-of-%05u.gguf"

typedef struct split_keys {
    bool split;         /* split.count present */
    uint32_t no, count; /* split.no (0-based), split.count */
    bool has_total;
    int64_t total;      /* split.tensors.count */
} split_keys;

static tport_status fail(const tport_model_file *mf, const char *fmt, const char *key, const tport_kv *kv) {
    static const char *const types[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array",
                                        "u64", "i64", "f64"};
    mf_cursor c = {.data = mf->map, .size = mf->file_size, .path = mf->path};
    return mf_fail(&c, 0, fmt, key, (unsigned)kv->type < 13 ? types[kv->type] : "?");
}

/* The split keys with the types llama.cpp writes and checks. */
static tport_status read_keys(const tport_model_file *mf, split_keys *k) {
    memset(k, 0, sizeof *k);
    const tport_kv *no = mf_kv_find(mf, "split.no"), *count = mf_kv_find(mf, "split.count"),
                   *total = mf_kv_find(mf, "split.tensors.count");
    if (count && count->type != TPORT_KV_U16)
        return fail(mf, "%s must be a u16, not a %s", "split.count", count);
    if (no && no->type != TPORT_KV_U16)
        return fail(mf, "%s must be a u16, not a %s", "split.no", no);
    if (total && (total->type != TPORT_KV_I32 || total->v.i < 0))
        return fail(mf, "%s must be a non-negative i32, not a %s", "split.tensors.count", total);
    k->split = count != NULL;
    k->count = count ? (uint32_t)count->v.u : 0;
    k->no = no ? (uint32_t)no->v.u : 0;
    k->has_total = total != NULL;
    k->total = total ? total->v.i : 0;
    return TPORT_STATUS_OK;
}

/* Checks that `part` (opened as part k of n) says so. */
static tport_status check_part(const tport_model_file *part, const char *first, uint32_t k, uint32_t n,
                               const split_keys *want) {
    if (part->container != TPORT_CONTAINER_GGUF)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: part %u of the %u-part split GGUF %s is a %s file, not GGUF",
                           part->path, k + 1, n, first, tport_container_name(part->container));
    split_keys got;
    MF_TRY(read_keys(part, &got));
    if (!got.split || got.count != n || got.no != k)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: does not belong to the %u-part split GGUF %s: it says split.no %u, split.count %u "
                           "(expected %u and %u)", part->path, n, first, got.no, got.split ? got.count : 0, k, n);
    if (want && got.has_total && got.total != want->total)
        return tport_error(TPORT_STATUS_BAD_FORMAT,
                           "%s: does not belong to the split GGUF %s: split.tensors.count %lld, the first part says %lld",
                           part->path, first, (long long)got.total, (long long)want->total);
    return TPORT_STATUS_OK;
}

/* The path of part k of n: the prefix (prefix_len bytes of `path`) and the
 * suffix.  malloc'ed; NULL when out of memory. */
static char *part_path(const char *path, size_t prefix_len, uint32_t k, uint32_t n) {
    size_t cap = prefix_len + 32;
    char *p = malloc(cap);
    if (p)
        snprintf(p, cap, "%.*s" SPLIT_SUFFIX, (int)prefix_len, path, k + 1, n);
    return p;
}

static void close_parts(tport_model_file **parts, uint32_t n, const tport_model_file *keep) {
    for (uint32_t p = 0; p < n; p++)
        if (parts[p] != keep)
            tport_model_file_close(parts[p]);
}

/* Opens every part but the given one (part `given` of n) and checks them. */
static tport_status open_parts(tport_model_file **parts, const char *path, size_t prefix_len, uint32_t given,
                               uint32_t n) {
    tport_status s = TPORT_STATUS_OK;
    split_keys first = {0};
    for (uint32_t k = 0; k < n && !s; k++) {
        if (k != given) {
            char *p = part_path(path, prefix_len, k, n);
            s = p ? mf_parts_open(path, p, k, n, "split GGUF", &parts[k]) : TPORT_STATUS_OUT_OF_MEMORY;
            free(p);
        }
        if (!s)
            s = check_part(parts[k], parts[0]->path, k, n, k ? &first : NULL);
        if (!s && k == 0) {
            s = read_keys(parts[0], &first);
            if (!s && !first.has_total)
                s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: the first part of a split GGUF has no split.tensors.count",
                                parts[0]->path);
        }
    }
    uint64_t total = 0;
    if (!s)
        s = mf_parts_check_unique(parts, n, &total);
    if (!s && total != (uint64_t)first.total)
        s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: split.tensors.count is %lld but its %u parts hold %llu tensors",
                        parts[0]->path, (long long)first.total, n, (unsigned long long)total);
    return s;
}

tport_status mf_gguf_join_split(tport_model_file **mfp) {
    tport_model_file *mf = *mfp;
    split_keys k;
    MF_TRY(read_keys(mf, &k));
    mf_cursor c = {.data = mf->map, .size = mf->file_size, .path = mf->path};
    if (!k.split || k.count <= 1) {
        /* one file, as llama.cpp reads a split.count of 0 or 1 */
        if (k.split && k.no >= (k.count ? k.count : 1))
            return mf_fail(&c, 0, "split.no %u but split.count %u", k.no, k.count);
        return TPORT_STATUS_OK;
    }
    if (k.no >= k.count)
        return mf_fail(&c, 0, "split.no %u is not below split.count %u", k.no, k.count);
    if (mf->borrowed)
        return mf_fail(&c, 0, "part %u of a %u-part split GGUF: the other parts cannot be read from memory",
                       k.no + 1, k.count);
    char suffix[32];
    snprintf(suffix, sizeof suffix, SPLIT_SUFFIX, k.no + 1, k.count);
    size_t len = strlen(mf->path), slen = strlen(suffix);
    if (len <= slen || strcmp(mf->path + len - slen, suffix))
        return mf_fail(&c, 0, "part %u of a %u-part split GGUF, but the file name does not end in '%s', so the "
                       "other parts cannot be found (llama.cpp names them NAME%s)", k.no + 1, k.count, suffix, suffix);
    tport_model_file **parts = calloc(k.count, sizeof *parts);
    if (!parts)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", mf->path);
    parts[k.no] = mf;
    tport_status s = open_parts(parts, mf->path, len - slen, k.no, k.count);
    tport_model_file *top = parts[0];
    if (!s)
        s = mf_parts_adopt(top, parts + 1, k.count - 1);
    if (s) {
        close_parts(parts, k.count, mf);
        free(parts);
        return s;
    }
    free(parts);
    top->part_only = false; /* opened as a part when another part was given */
    top->n_parts = k.count;
    if (top->hp.n_vocab == 0 && top->vocab.n_tokens == 0) {
        const tport_mf_tensor *e = tport_model_file_find(top, "token_embd.weight");
        if (e && e->ne[1] <= UINT32_MAX)
            top->hp.n_vocab = (uint32_t)e->ne[1];
    }
    char note[160];
    snprintf(note, sizeof note, "a %u-part split GGUF read as one (zero copy from each part)", k.count);
    mf_add_note(top, note);
    *mfp = top;
    return TPORT_STATUS_OK;
}
