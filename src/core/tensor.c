/* Tensor accessors. */
#include <string.h>

#include "error.h"
#include "tensor.h"

tport_type_id tport_tensor_type(const tport_tensor *t) {
    return t ? t->type : TPORT_TYPE_F32;
}

tport_op_id tport_tensor_op(const tport_tensor *t) {
    return t ? t->op : TPORT_OP_NONE;
}

int64_t tport_tensor_ne(const tport_tensor *t, int dim) {
    return t && dim >= 0 && dim < TPORT_MAX_DIMS ? t->ne[dim] : 0;
}

size_t tport_tensor_nb(const tport_tensor *t, int dim) {
    return t && dim >= 0 && dim < TPORT_MAX_DIMS ? t->nb[dim] : 0;
}

int64_t tport_tensor_nelements(const tport_tensor *t) {
    return t ? t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] : 0;
}

/* Bytes spanned from element 0 to one past the last element. */
size_t tport_tensor_nbytes(const tport_tensor *t) {
    if (!t)
        return 0;
    int64_t bs = tport_type_block_size(t->type);
    if (bs <= 0)
        return 0;
    size_t bytes = (size_t)(t->ne[0] / bs) * t->nb[0];
    for (int i = 1; i < TPORT_MAX_DIMS; i++)
        bytes += (size_t)(t->ne[i] - 1) * t->nb[i];
    return bytes;
}

bool tport_tensor_is_contiguous(const tport_tensor *t) {
    if (!t)
        return false;
    int64_t bs = tport_type_block_size(t->type);
    size_t expect = tport_type_block_bytes(t->type);
    if (bs <= 0 || t->nb[0] != expect)
        return false;
    expect *= (size_t)(t->ne[0] / bs);
    for (int i = 1; i < TPORT_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect)
            return false;
        expect *= (size_t)t->ne[i];
    }
    return true;
}

void *tport_tensor_data(const tport_tensor *t) {
    return t ? t->data : NULL;
}

void tport_tensor_set_data(tport_tensor *t, void *data) {
    if (!t)
        return;
    if (t->op != TPORT_OP_NONE || (t->flags & TPORT_TENSOR_IS_VIEW)) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "set_data: '%s' is not a leaf", t->name);
        return;
    }
    t->data = data;
}

tport_tensor *tport_tensor_set_name(tport_tensor *t, const char *name) {
    if (t) {
        size_t n = name ? strlen(name) : 0;
        if (n >= sizeof t->name)
            n = sizeof t->name - 1;
        if (n)
            memcpy(t->name, name, n);
        t->name[n] = '\0';
    }
    return t;
}

const char *tport_tensor_name(const tport_tensor *t) {
    return t ? t->name : "";
}

void tport_tensor_set_weight(tport_tensor *t) {
    if (t && t->op == TPORT_OP_NONE)
        t->flags |= TPORT_TENSOR_WEIGHT;
}

bool tport_tensor_is_view(const tport_tensor *t) {
    return t && (t->flags & TPORT_TENSOR_IS_VIEW);
}

bool tport_tensor_is_op(const tport_tensor *t) {
    return t && t->op != TPORT_OP_NONE;
}
