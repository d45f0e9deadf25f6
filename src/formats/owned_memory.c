/* Allocations owned by a model file: a singly linked list of blocks hung
 * off mf->owned, all freed at once by tport_model_file_close. */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

typedef struct owned_block {
    struct owned_block *next;
    alignas(max_align_t) unsigned char data[];
} owned_block;

void *mf_owned_alloc(void **head, size_t size) {
    if (size > SIZE_MAX - sizeof(owned_block))
        return NULL;
    owned_block *b = calloc(1, sizeof(owned_block) + size);
    if (!b)
        return NULL;
    b->next = *head;
    *head = b;
    return b->data;
}

void mf_owned_free(void **head) {
    owned_block *b = *head;
    while (b) {
        owned_block *next = b->next;
        free(b);
        b = next;
    }
    *head = NULL;
}

void *mf_alloc(tport_model_file *mf, size_t size) {
    void *p = mf_owned_alloc(&mf->owned, size);
    if (!p)
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", mf->path, size);
    return p;
}

void *mf_alloc_array(tport_model_file *mf, uint64_t n, size_t elem) {
    uint64_t bytes;
    if (!mf_mul_u64(n, elem, &bytes) || bytes > SIZE_MAX) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: array of %llu elements too large", mf->path,
                    (unsigned long long)n);
        return NULL;
    }
    return mf_alloc(mf, (size_t)bytes);
}

char *mf_strndup(tport_model_file *mf, const void *s, size_t n) {
    if (n == SIZE_MAX)
        return NULL;
    char *p = mf_alloc(mf, n + 1);
    if (p && n)
        memcpy(p, s, n);
    return p;
}

void mf_free_owned(tport_model_file *mf) {
    mf_owned_free(&mf->owned);
}
