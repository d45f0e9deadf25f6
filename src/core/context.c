/* Contexts: an arena of tensor records (stable addresses, freed together)
 * and an optional bump arena for leaf data. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tensor.h"

#define RECORDS_PER_BLOCK 256

typedef struct record_block {
    struct record_block *next;
    int used;
    tport_tensor records[RECORDS_PER_BLOCK];
} record_block;

struct tport_ctx {
    record_block *blocks;
    uint8_t *data;
    size_t data_size, data_used;
};

tport_ctx *tport_ctx_new(size_t data_bytes) {
    tport_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory creating a context");
        return NULL;
    }
    if (data_bytes > 0) {
        if (data_bytes > SIZE_MAX - TPORT_DATA_ALIGN) {
            free(ctx);
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "context data size %zu is too large", data_bytes);
            return NULL;
        }
        size_t rounded = (data_bytes + TPORT_DATA_ALIGN - 1) / TPORT_DATA_ALIGN * TPORT_DATA_ALIGN;
        ctx->data = aligned_alloc(TPORT_DATA_ALIGN, rounded);
        if (!ctx->data) {
            free(ctx);
            tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory allocating %zu bytes of tensor data",
                        data_bytes);
            return NULL;
        }
        ctx->data_size = rounded;
    }
    return ctx;
}

void tport_ctx_free(tport_ctx *ctx) {
    if (!ctx)
        return;
    record_block *b = ctx->blocks;
    while (b) {
        record_block *next = b->next;
        free(b);
        b = next;
    }
    free(ctx->data);
    free(ctx);
}

static tport_tensor *new_record(tport_ctx *ctx) {
    if (!ctx->blocks || ctx->blocks->used == RECORDS_PER_BLOCK) {
        record_block *b = calloc(1, sizeof *b);
        if (!b) {
            tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory for tensor records");
            return NULL;
        }
        b->next = ctx->blocks;
        ctx->blocks = b;
    }
    tport_tensor *t = &ctx->blocks->records[ctx->blocks->used++];
    memset(t, 0, sizeof *t);
    t->ctx = ctx;
    return t;
}

tport_tensor *tport_tensor_record(tport_ctx *ctx, tport_type_id type, int n_dims, const int64_t *ne) {
    if (!ctx || !ne) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tensor: NULL context or shape");
        return NULL;
    }
    if (n_dims < 1 || n_dims > TPORT_MAX_DIMS) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tensor: %d dimensions (1..%d allowed)", n_dims,
                    TPORT_MAX_DIMS);
        return NULL;
    }
    size_t block_bytes = tport_type_block_bytes(type);
    int64_t block_size = tport_type_block_size(type);
    if (!block_bytes || block_size <= 0) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tensor: unknown type %u", type);
        return NULL;
    }
    int64_t full[TPORT_MAX_DIMS] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 1) {
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tensor: dimension %d is %lld (must be >= 1)", i,
                        (long long)ne[i]);
            return NULL;
        }
        full[i] = ne[i];
    }
    if (full[0] % block_size) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tensor: row of %lld is not a multiple of %s's block size %lld",
                    (long long)full[0], tport_type_name(type), (long long)block_size);
        return NULL;
    }
    /* strides, checking that the total byte size fits comfortably */
    size_t nb[TPORT_MAX_DIMS];
    nb[0] = block_bytes;
    size_t row = (size_t)(full[0] / block_size);
    if (row > (SIZE_MAX >> 2) / block_bytes)
        goto too_large;
    nb[1] = row * block_bytes;
    for (int i = 2; i < TPORT_MAX_DIMS; i++) {
        if ((size_t)full[i - 1] > (SIZE_MAX >> 2) / nb[i - 1])
            goto too_large;
        nb[i] = nb[i - 1] * (size_t)full[i - 1];
    }
    if ((size_t)full[3] > (SIZE_MAX >> 2) / nb[3])
        goto too_large;

    tport_tensor *t = new_record(ctx);
    if (!t)
        return NULL;
    t->type = type;
    memcpy(t->ne, full, sizeof full);
    memcpy(t->nb, nb, sizeof nb);
    return t;
too_large:
    tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tensor: shape is too large");
    return NULL;
}

tport_tensor *tport_new_tensor(tport_ctx *ctx, tport_type_id type, int n_dims, const int64_t *ne) {
    tport_tensor *t = tport_tensor_record(ctx, type, n_dims, ne);
    if (!t)
        return NULL;
    if (ctx->data_size) {
        size_t bytes = tport_tensor_nbytes(t);
        size_t start = (ctx->data_used + TPORT_DATA_ALIGN - 1) / TPORT_DATA_ALIGN * TPORT_DATA_ALIGN;
        if (start > ctx->data_size || bytes > ctx->data_size - start) {
            tport_error(TPORT_STATUS_OUT_OF_MEMORY,
                        "context data arena full: %zu bytes needed, %zu of %zu left", bytes,
                        start <= ctx->data_size ? ctx->data_size - start : 0, ctx->data_size);
            ctx->blocks->used--; /* give the record back */
            return NULL;
        }
        t->data = ctx->data + start;
        ctx->data_used = start + bytes;
    }
    return t;
}

tport_tensor *tport_new_tensor_1d(tport_ctx *ctx, tport_type_id type, int64_t ne0) {
    return tport_new_tensor(ctx, type, 1, (int64_t[]){ne0});
}

tport_tensor *tport_new_tensor_2d(tport_ctx *ctx, tport_type_id type, int64_t ne0, int64_t ne1) {
    return tport_new_tensor(ctx, type, 2, (int64_t[]){ne0, ne1});
}

tport_tensor *tport_new_tensor_3d(tport_ctx *ctx, tport_type_id type, int64_t ne0, int64_t ne1, int64_t ne2) {
    return tport_new_tensor(ctx, type, 3, (int64_t[]){ne0, ne1, ne2});
}

tport_tensor *tport_new_tensor_4d(tport_ctx *ctx, tport_type_id type, int64_t ne0, int64_t ne1, int64_t ne2,
                                  int64_t ne3) {
    return tport_new_tensor(ctx, type, 4, (int64_t[]){ne0, ne1, ne2, ne3});
}
