/* Writing a split GGUF as llama.cpp's gguf-split does (split_strategy in
 * tools/gguf-split/gguf-split.cpp): the tensors go to the parts in order;
 * with a size limit, a part is closed when the next tensor, padded to 32
 * bytes, would take its tensor data past the limit; with a tensor limit,
 * every max_tensors tensors.  gguf-split refuses a tensor larger than the
 * size limit (it would leave a part empty); here it gets a part of its
 * own.  Each part is written by gguf_write.c (temporary name, renamed at
 * the end), so llama.cpp's loader and this project's reader both take it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/gguf_write.h"
#include "formats/mf_internal.h"

#define MAX_SPLIT 65535 /* split.count is a u16 */

char *tport_gguf_split_path(const char *prefix, uint32_t k, uint32_t n) {
    size_t cap = strlen(prefix) + 32;
    char *p = malloc(cap);
    if (!p) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        return NULL;
    }
    snprintf(p, cap, "%s-%05u-of-%05u.gguf", prefix, k + 1, n);
    return p;
}

/* Where each part starts (first[k]); returns the part count. */
static uint32_t plan(const tport_gguf_writer *w, const tport_gguf_split_limits *lim, int *first) {
    int n_t = tport_gguf_n_tensors(w);
    uint32_t n = 0;
    uint64_t bytes = 0;
    int in_part = 0;
    first[n++] = 0;
    for (int i = 0; i < n_t; i++) {
        uint64_t nb = tport_gguf_tensor_nbytes(w, i);
        nb += (32 - nb % 32) % 32;
        bool by_size = lim->max_bytes && bytes + nb > lim->max_bytes;
        bool by_count = lim->max_tensors && (uint32_t)in_part >= lim->max_tensors;
        if (in_part > 0 && (by_size || by_count) && n < MAX_SPLIT + 1) {
            first[n++] = i;
            bytes = 0;
            in_part = 0;
        }
        bytes += nb;
        in_part++;
    }
    return n;
}

static void remove_parts(const char *prefix, uint32_t upto, uint32_t n) {
    for (uint32_t k = 0; k < upto; k++) {
        char *p = tport_gguf_split_path(prefix, k, n);
        if (p)
            unlink(p);
        free(p);
    }
}

tport_status tport_gguf_write_split(tport_gguf_writer *w, const char *prefix, const tport_gguf_split_limits *lim,
                                    uint32_t *n_parts) {
    if (!w || !prefix || !prefix[0] || !lim || (!lim->max_bytes && !lim->max_tensors))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: a split needs a prefix and a limit");
    int n_t = tport_gguf_n_tensors(w);
    if (n_t > INT32_MAX - 1)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "gguf writer: too many tensors to split");
    int *first = malloc((size_t)(n_t + 2) * sizeof *first);
    if (!first)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    uint32_t n = plan(w, lim, first);
    if (n > MAX_SPLIT) {
        free(first);
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "%s: the limits make more than %d parts (split.count is a u16)", prefix, MAX_SPLIT);
    }
    first[n] = n_t;
    uint64_t total = 0, done = 0;
    for (int i = 0; i < n_t; i++)
        total += tport_gguf_tensor_nbytes(w, i);
    tport_status s = TPORT_STATUS_OK;
    uint32_t k = 0;
    for (; k < n && !s; k++) {
        char *path = tport_gguf_split_path(prefix, k, n);
        tport_gguf_part part = {.first = first[k], .count = first[k + 1] - first[k], .split_no = (uint16_t)k,
                                .split_count = (uint16_t)n, .tensors_total = (int32_t)n_t};
        s = path ? tport_gguf_write_part(w, path, &part, done, total) : TPORT_STATUS_OUT_OF_MEMORY;
        free(path);
        for (int i = part.first; i < part.first + part.count; i++)
            done += tport_gguf_tensor_nbytes(w, i);
    }
    if (s)
        remove_parts(prefix, k - 1, n); /* the failed part removed its own temporary file */
    else if (n_parts)
        *n_parts = n;
    free(first);
    return s;
}
