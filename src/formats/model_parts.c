/* Models spread over several files (split GGUF, sharded safetensors).  Each
 * file is read on its own as a model file (mf_open_part: all the checks of
 * its reader), stays open and mapped, and its tensors join the model's list
 * pointing into its mapping: zero copy, as for one file.  Unlike the
 * multi-part GGML files (ggml_multipart.c), whose parts hold slices of the
 * same tensors and are concatenated into owned memory, these parts hold
 * whole, distinct tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

const char *tport_model_file_part_path(const tport_model_file *mf, uint32_t part) {
    if (!mf)
        return NULL;
    if (part == 0)
        return mf->path;
    return part <= mf->n_part_files ? mf->part_files[part - 1]->path : NULL;
}

tport_status mf_parts_open(const char *model, const char *path, uint32_t k, uint32_t n, const char *what,
                           tport_model_file **out) {
    tport_status s = mf_open_part(path, out);
    if (s != TPORT_STATUS_OK)
        return tport_error(s, "%s: part %u of a %u-part %s: %s", model, k + 1, n, what, tport_last_error());
    return TPORT_STATUS_OK;
}

typedef struct named {
    const char *name;
    uint32_t part;
} named;

static int cmp_named(const void *a, const void *b) {
    return strcmp(((const named *)a)->name, ((const named *)b)->name);
}

tport_status mf_parts_check_unique(tport_model_file *const *parts, uint32_t n, uint64_t *total) {
    uint64_t count = 0;
    for (uint32_t p = 0; p < n; p++)
        count += (uint64_t)parts[p]->n_tensors;
    *total = count;
    if (count > INT32_MAX / 2)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: too many tensors in its %u parts (%llu)", parts[0]->path, n,
                           (unsigned long long)count);
    named *v = malloc((size_t)(count ? count : 1) * sizeof *v);
    if (!v)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", parts[0]->path);
    size_t k = 0;
    for (uint32_t p = 0; p < n; p++)
        for (int i = 0; i < parts[p]->n_tensors; i++)
            v[k++] = (named){parts[p]->tensors[i].name, p};
    qsort(v, k, sizeof *v, cmp_named);
    tport_status s = TPORT_STATUS_OK;
    for (size_t i = 1; i < k && !s; i++)
        if (!strcmp(v[i - 1].name, v[i].name)) {
            /* each part's reader already refused duplicates inside one file */
            const char *a = parts[v[i - 1].part]->path, *b = parts[v[i].part]->path;
            s = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: tensor '%.64s' is in two parts: %s and %s", parts[0]->path,
                            v[i].name, a, b);
        }
    free(v);
    return s;
}

tport_status mf_parts_adopt(tport_model_file *top, tport_model_file **parts, uint32_t n) {
    if (n == 0)
        return TPORT_STATUS_OK;
    uint64_t extra = 0;
    for (uint32_t p = 0; p < n; p++)
        extra += (uint64_t)parts[p]->n_tensors;
    /* everything that can fail happens before top takes the parts over */
    tport_model_file **files = mf_alloc_array(top, n, sizeof *files);
    if (!files)
        return TPORT_STATUS_OUT_OF_MEMORY;
    MF_TRY(mf_reserve_tensors(top, extra));
    for (uint32_t p = 0; p < n; p++) {
        files[p] = parts[p];
        for (int i = 0; i < parts[p]->n_tensors; i++) {
            tport_mf_tensor *t = &top->tensors[top->n_tensors++];
            *t = parts[p]->tensors[i]; /* name and data stay the part's: it lives as long as top */
            t->part = p + 1;
        }
    }
    top->part_files = files;
    top->n_part_files = n;
    return TPORT_STATUS_OK;
}

void mf_parts_close(tport_model_file *mf) {
    for (uint32_t p = 0; p < mf->n_part_files; p++)
        tport_model_file_close(mf->part_files[p]);
    mf->n_part_files = 0;
    mf->part_files = NULL;
}

void mf_add_note(tport_model_file *mf, const char *note) {
    size_t len = strlen(mf->notes);
    snprintf(mf->notes + len, sizeof mf->notes - len, "%s%s", len ? "; " : "", note);
}
