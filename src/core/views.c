/* View ops: view, reshape, permute, transpose.  They cost nothing: the
 * result shares the data of the tensor that owns it (view_src) at an offset
 * and never reaches a backend. */
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "tensor.h"

static tport_tensor *view_bad(const char *op, const char *why) {
    tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: %s", op, why);
    return NULL;
}

/* Bytes spanned by a shape with strides: offset of the last element plus
 * one element (or block); SIZE_MAX if that overflows. */
static size_t span_bytes(tport_type_id type, const int64_t ne[4], const size_t nb[4]) {
    int64_t bs = tport_type_block_size(type);
    size_t bytes = tport_type_block_bytes(type);
    for (int i = 0; i < TPORT_MAX_DIMS; i++) {
        size_t n = (size_t)(i == 0 ? ne[0] / bs : ne[i]) - 1;
        if (n && nb[i] > (SIZE_MAX - bytes) / n)
            return SIZE_MAX;
        bytes += n * nb[i];
    }
    return bytes;
}

/* A record sharing a's data, with the given shape and strides. */
static tport_tensor *make_view(tport_tensor *a, const int64_t ne[4], const size_t nb[4], size_t offset) {
    tport_tensor *t = tport_tensor_record(a->ctx, a->type, 4, ne);
    if (!t)
        return NULL;
    memcpy(t->nb, nb, sizeof t->nb);
    t->flags |= TPORT_TENSOR_IS_VIEW | (a->flags & TPORT_TENSOR_WEIGHT);
    t->view_src = a->view_src ? a->view_src : a;
    t->view_offs = (a->view_src ? a->view_offs : 0) + offset;
    t->src[0] = a; /* dependency: a must exist (and be computed) first */
    if (t->view_src->data)
        t->data = (uint8_t *)t->view_src->data + t->view_offs;
    /* "<at most 50 bytes of a's name> (view)", without snprintf: a token's
     * graph makes a hundred views (snprintf was 0.4 % of generation) */
    static const char suffix[] = " (view)";
    _Static_assert(50 + sizeof suffix <= TPORT_MAX_NAME, "view names fit");
    size_t n = strnlen(a->name, 50);
    memcpy(t->name, a->name, n);
    memcpy(t->name + n, suffix, sizeof suffix);
    return t;
}

tport_tensor *tport_view(tport_ctx *ctx, tport_tensor *a, int n_dims, const int64_t *ne, const size_t *nb,
                         size_t offset) {
    if (!ctx || !a || !ne) {
        if (!tport_last_error()[0])
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "view: NULL argument");
        return NULL;
    }
    if (n_dims < 1 || n_dims > TPORT_MAX_DIMS)
        return view_bad("view", "n_dims must be 1..4");
    int64_t full[4] = {1, 1, 1, 1};
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 1)
            return view_bad("view", "dimensions must be >= 1");
        full[i] = ne[i];
    }
    int64_t bs = tport_type_block_size(a->type);
    if (full[0] % bs)
        return view_bad("view", "row is not a multiple of the block size");
    size_t strides[4];
    strides[0] = nb ? nb[0] : tport_type_block_bytes(a->type);
    if (nb && bs != 1 && strides[0] != tport_type_block_bytes(a->type))
        return view_bad("view", "quantized views need contiguous blocks");
    for (int i = 1; i < TPORT_MAX_DIMS; i++) {
        if (nb && i < n_dims)
            strides[i] = nb[i];
        else if (i == 1)
            strides[i] = strides[0] * (size_t)(full[0] / bs);
        else
            strides[i] = strides[i - 1] * (size_t)full[i - 1];
    }
    /* bounds: the view must lie inside a's own span */
    size_t need = span_bytes(a->type, full, strides);
    size_t have = tport_tensor_nbytes(a);
    if (offset > have || need > have - offset) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "view: %zu bytes at offset %zu exceed the %zu bytes of '%s'",
                    need, offset, have, a->name);
        return NULL;
    }
    return make_view(a, full, strides, offset);
}

tport_status tport_view_move(tport_tensor *t, size_t offset) {
    if (!t || !t->view_src || t->op != TPORT_OP_NONE)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "view_move: not a view");
    size_t need = span_bytes(t->type, t->ne, t->nb), have = tport_tensor_nbytes(t->view_src);
    if (offset > have || need > have - offset)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "view_move: %zu bytes at offset %zu exceed the %zu bytes of '%s'",
                           need, offset, have, t->view_src->name);
    t->view_offs = offset;
    return TPORT_STATUS_OK;
}

tport_tensor *tport_reshape(tport_ctx *ctx, tport_tensor *a, int n_dims, const int64_t *ne) {
    if (!ctx || !a || !ne) {
        if (!tport_last_error()[0])
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "reshape: NULL argument");
        return NULL;
    }
    if (!tport_tensor_is_contiguous(a))
        return view_bad("reshape", "input must be contiguous (use cont first)");
    if (n_dims < 1 || n_dims > TPORT_MAX_DIMS)
        return view_bad("reshape", "n_dims must be 1..4");
    int64_t n = 1;
    for (int i = 0; i < n_dims; i++) {
        if (ne[i] < 1 || ne[i] > INT64_MAX / n)
            return view_bad("reshape", "bad dimension");
        n *= ne[i];
    }
    if (n != tport_tensor_nelements(a))
        return view_bad("reshape", "element count differs");
    return tport_view(ctx, a, n_dims, ne, NULL, 0);
}

tport_tensor *tport_permute(tport_ctx *ctx, tport_tensor *a, int ax0, int ax1, int ax2, int ax3) {
    if (!ctx || !a) {
        if (!tport_last_error()[0])
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "permute: NULL argument");
        return NULL;
    }
    int ax[4] = {ax0, ax1, ax2, ax3};
    int seen = 0;
    for (int i = 0; i < 4; i++) {
        if (ax[i] < 0 || ax[i] > 3 || (seen & (1 << ax[i])))
            return view_bad("permute", "axes must be a permutation of 0..3");
        seen |= 1 << ax[i];
    }
    if (tport_type_block_size(a->type) != 1 && ax[0] != 0)
        return view_bad("permute", "quantized tensors cannot move dimension 0");
    /* source dimension i becomes dimension ax[i] (ggml's convention) */
    int64_t ne[4];
    size_t nb[4];
    for (int i = 0; i < 4; i++) {
        ne[ax[i]] = a->ne[i];
        nb[ax[i]] = a->nb[i];
    }
    return make_view(a, ne, nb, 0);
}

tport_tensor *tport_transpose(tport_ctx *ctx, tport_tensor *a) {
    return tport_permute(ctx, a, 1, 0, 2, 3);
}
