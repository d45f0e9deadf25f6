/* Writing importance matrices (imatrix_file.h) in llama-imatrix's two
 * forms, from the sums and counts tport imatrix collects.  Entries go in
 * name order (strcmp, as std::sort of std::string), as llama-imatrix
 * sorts them for a deterministic file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imatrix_file.h"
#include "tport/gguf.h"

static int by_name(const void *a, const void *b) {
    const tport_imatrix_entry *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* Pointers to the n entries in name order (malloc'd), or NULL. */
static const tport_imatrix_entry **sorted(const tport_imatrix_entry *e, int n) {
    const tport_imatrix_entry **o = malloc(sizeof *o * (size_t)(n ? n : 1));
    if (!o)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "imatrix: out of memory"), NULL;
    for (int i = 0; i < n; i++)
        o[i] = &e[i];
    qsort(o, (size_t)n, sizeof *o, by_name);
    return o;
}

/* ggml_n_dims: dimensions up to the last one above 1 (at least 1), which
 * gguf stores for a 2-D tensor of one row. */
static int n_dims(const int64_t *ne) { return ne[1] > 1 ? 2 : 1; }

tport_status tport_imatrix_write_gguf(const char *path, const tport_imatrix_entry *e, int n,
                                      const tport_imatrix_about *about) {
    const tport_imatrix_entry **o = sorted(e, n);
    tport_gguf_writer *w = o ? tport_gguf_writer_new() : NULL;
    float **counts = o ? calloc((size_t)(n ? n : 1), sizeof *counts) : NULL;
    char **names = o ? calloc((size_t)(n ? n : 1) * 2, sizeof *names) : NULL;
    tport_status st = w && counts && names ? TPORT_STATUS_OK
                                           : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "imatrix: out of memory");
    const char *datasets[1] = {about->dataset};
    if (!st)
        st = tport_gguf_set_str(w, "general.type", TPORT_IMATRIX_GENERAL_TYPE);
    if (!st)
        st = tport_gguf_set_array(w, TPORT_IMATRIX_KEY_DATASETS, TPORT_KV_STRING, datasets, 1);
    if (!st)
        st = tport_gguf_set_u32(w, TPORT_IMATRIX_KEY_CHUNK_COUNT, (uint32_t)about->chunk_count);
    if (!st)
        st = tport_gguf_set_u32(w, TPORT_IMATRIX_KEY_CHUNK_SIZE, (uint32_t)about->chunk_size);
    for (int i = 0; i < n && !st; i++) {
        const tport_imatrix_entry *x = o[i];
        const size_t len = strlen(x->name) + sizeof TPORT_IMATRIX_SUMS_SUFFIX;
        names[2 * i] = malloc(len);
        names[2 * i + 1] = malloc(len);
        counts[i] = malloc(sizeof(float) * (size_t)x->n_counts);
        if (!names[2 * i] || !names[2 * i + 1] || !counts[i]) {
            st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "imatrix: out of memory");
            break;
        }
        snprintf(names[2 * i], len, "%s%s", x->name, TPORT_IMATRIX_SUMS_SUFFIX);
        snprintf(names[2 * i + 1], len, "%s%s", x->name, TPORT_IMATRIX_COUNTS_SUFFIX);
        for (int32_t k = 0; k < x->n_counts; k++)
            counts[i][k] = (float)x->counts[k];
        const int64_t ne_s[2] = {x->n_cols, x->n_mat}, ne_c[2] = {1, x->n_counts};
        st = tport_gguf_add_tensor(w, names[2 * i], TPORT_TYPE_F32, n_dims(ne_s), ne_s, x->sums,
                                   sizeof(float) * (uint64_t)x->n_cols * (uint64_t)x->n_mat);
        if (!st)
            st = tport_gguf_add_tensor(w, names[2 * i + 1], TPORT_TYPE_F32, n_dims(ne_c), ne_c, counts[i],
                                       sizeof(float) * (uint64_t)x->n_counts);
    }
    if (!st)
        st = tport_gguf_write(w, path);
    for (int i = 0; names && counts && i < n; i++) {
        free(names[2 * i]);
        free(names[2 * i + 1]);
        free(counts[i]);
    }
    free(names);
    free(counts);
    tport_gguf_writer_free(w);
    free(o);
    return st;
}

static bool put(FILE *f, const void *p, size_t n) { return fwrite(p, 1, n, f) == n; }
static bool put_i32(FILE *f, int32_t v) { return put(f, &v, sizeof v); }

tport_status tport_imatrix_write_dat(const char *path, const tport_imatrix_entry *e, int n,
                                     const tport_imatrix_about *about) {
    const tport_imatrix_entry **o = sorted(e, n);
    if (!o)
        return TPORT_STATUS_OUT_OF_MEMORY;
    /* an entry no chunk reached has nothing to say in this form */
    int kept = 0;
    for (int i = 0; i < n; i++) {
        bool any = false;
        for (int32_t k = 0; k < o[i]->n_counts; k++)
            any |= o[i]->counts[k] != 0;
        if (any)
            o[kept++] = o[i];
    }
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(o);
        return tport_error(TPORT_STATUS_IO, "imatrix: cannot create %s", path);
    }
    bool ok = put_i32(f, kept);
    const int64_t chunk = about->chunk_size;
    for (int i = 0; i < kept && ok; i++) {
        const tport_imatrix_entry *x = o[i];
        int64_t most = 0;
        for (int32_t k = 0; k < x->n_counts; k++)
            most = x->counts[k] > most ? x->counts[k] : most;
        const int32_t ncall = (int32_t)((most + chunk - 1) / chunk);
        const int64_t nval = x->n_cols * x->n_mat;
        ok = put_i32(f, (int32_t)strlen(x->name)) && put(f, x->name, strlen(x->name)) && put_i32(f, ncall) &&
             put_i32(f, (int32_t)nval);
        /* the mean of each column times ncall; a matrix no row reached
         * stores 1s, as llama-imatrix does for partial data */
        for (int64_t v = 0; v < nval && ok; v++) {
            const int64_t per = nval / x->n_counts;
            float count = (float)x->counts[v / per], value = x->sums[v];
            if (count == 0.0f)
                value = count = 1.0f;
            const float out = (value / count) * (float)ncall;
            ok = put(f, &out, sizeof out);
        }
    }
    const size_t dlen = strlen(about->dataset);
    ok = ok && put_i32(f, about->chunk_count) && put_i32(f, (int32_t)dlen) && put(f, about->dataset, dlen);
    ok = fclose(f) == 0 && ok;
    free(o);
    return ok ? TPORT_STATUS_OK : tport_error(TPORT_STATUS_IO, "imatrix: cannot write %s", path);
}
