/* Allocations owned by a model file: a singly linked list of blocks hung
 * off mf->owned, all freed at once by tport_model_file_close. */
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"

/* Small allocations are carved from 64 KiB chunks (a hostile file with
 * millions of tiny strings must not cost a malloc each); large ones get a
 * block of their own.  The first block in the list is the chunk being
 * carved; large blocks are linked in behind it. */
typedef struct owned_block {
    struct owned_block *next;
    size_t used, cap; /* cap == 0: a single large allocation */
    alignas(max_align_t) unsigned char data[];
} owned_block;

#define CHUNK_BYTES ((size_t)64 << 10)
#define SMALL_BYTES ((size_t)1 << 10)
#define ALIGN_BYTES (sizeof(max_align_t))

static owned_block *new_block(size_t cap) {
    owned_block *b = calloc(1, sizeof(owned_block) + cap);
    if (b)
        b->cap = cap;
    return b;
}

void *mf_owned_alloc(void **head, size_t size) {
    owned_block *h = *head;
    if (size > SMALL_BYTES) {
        if (size > SIZE_MAX - sizeof(owned_block))
            return NULL;
        owned_block *b = new_block(size);
        if (!b)
            return NULL;
        b->cap = 0;
        if (h) { /* keep the chunk being carved at the head */
            b->next = h->next;
            h->next = b;
        } else {
            *head = b;
        }
        return b->data;
    }
    size_t need = (size + ALIGN_BYTES - 1) / ALIGN_BYTES * ALIGN_BYTES;
    if (need == 0)
        need = ALIGN_BYTES;
    if (!h || h->cap == 0 || h->cap - h->used < need) {
        owned_block *b = new_block(CHUNK_BYTES);
        if (!b)
            return NULL;
        b->next = h;
        *head = h = b;
    }
    void *p = h->data + h->used;
    h->used += need;
    return p; /* zeroed: chunks come from calloc and are never reused */
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
