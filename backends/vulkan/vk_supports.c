/* supports_op: true only for nodes the shaders compute completely, with
 * every operand inside one binding range — except the weight (src0) of
 * mul_mat and get_rows, which is bound in chunks of rows when it is larger. */
#include <string.h>

#include "vk_internal.h"

static bool block_of(tport_type_id type, int64_t *bs, uint64_t *bytes) {
    switch (type) {
    case TPORT_TYPE_F32:
    case TPORT_TYPE_I32:
        *bs = 1, *bytes = 4;
        return true;
    case TPORT_TYPE_F16:
        *bs = 1, *bytes = 2;
        return true;
    default: {
        const tport_type_info *ti = vk_host->type_info ? vk_host->type_info(type) : NULL;
        if (!ti || ti->block_size <= 0 || ti->block_bytes == 0)
            return false;
        *bs = ti->block_size, *bytes = ti->block_bytes;
        return true;
    }
    }
}

/* Bytes from element 0 to one past the last element (0 if unknown). */
uint64_t vk_span(const tport_tensor_view *t) {
    int64_t bs;
    uint64_t bytes;
    if (!block_of(t->type, &bs, &bytes) || t->ne[0] % bs)
        return 0;
    uint64_t s = (uint64_t)(t->ne[0] / bs - 1) * t->nb[0] + bytes;
    for (int i = 1; i < TPORT_MAX_DIMS; i++)
        s += (uint64_t)(t->ne[i] - 1) * t->nb[i];
    return s;
}

static const tport_tensor_view *tensor(const tport_graph_view *g, int32_t i) {
    if (i < 0 || i >= g->n_tensors || !g->tensors[i])
        return NULL;
    const tport_tensor_view *t = g->tensors[i];
    if (t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0)
        return NULL;
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (t->ne[d] < 1 || t->ne[d] > UINT32_MAX || t->nb[d] > UINT32_MAX)
            return NULL;
    return t;
}

static bool same_shape(const tport_tensor_view *a, const tport_tensor_view *b) {
    for (int i = 0; i < TPORT_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i])
            return false;
    return true;
}

static int64_t nelements(const tport_tensor_view *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

/* Strides are whole elements of the type's alignment; quantized rows are
 * adjacent blocks (nb[0] = block bytes). */
static bool strides_ok(const tport_tensor_view *t) {
    int64_t bs;
    uint64_t bytes;
    if (!block_of(t->type, &bs, &bytes) || t->ne[0] % bs)
        return false;
    uint64_t a = t->type == TPORT_TYPE_F32 || t->type == TPORT_TYPE_I32 ? 4 : 2;
    if (bs > 1 && t->nb[0] != bytes)
        return false;
    for (int i = 0; i < TPORT_MAX_DIMS; i++)
        if (t->nb[i] % a)
            return false;
    return true;
}

static bool fits(vk_dev *d, const tport_tensor_view *t) {
    uint64_t s = vk_span(t);
    return s && strides_ok(t) && s + d->align <= d->max_range;
}

/* A weight bound in chunks of rows: 2-D, each row inside one range. */
static bool fits_chunked(vk_dev *d, const tport_tensor_view *t) {
    if (fits(d, t))
        return true;
    if (!strides_ok(t) || t->ne[2] != 1 || t->ne[3] != 1)
        return false;
    uint64_t row = vk_span(t) - (uint64_t)(t->ne[1] - 1) * t->nb[1];
    return t->nb[1] >= row && row + t->nb[1] + d->align <= d->max_range;
}

tport_type_id vk_act_rounding(const tport_tensor_view *w) {
    if (vk_env_on("TPORT_VULKAN_EXACT_ACTIVATIONS")) /* products in plain f32 (tests) */
        return 0;
    const tport_type_info *ti = vk_host->type_info ? vk_host->type_info(w->type) : NULL;
    if (!ti || !ti->is_quantized || ti->struct_size < TPORT_TYPE_INFO_SIZE_1_0)
        return 0;
    if (ti->vec_dot_type == TPORT_TYPE_Q8_0 && w->ne[0] % 32 == 0)
        return TPORT_TYPE_Q8_0;
    if (ti->vec_dot_type == TPORT_TYPE_Q8_K && w->ne[0] % 256 == 0)
        return TPORT_TYPE_Q8_K;
    return 0;
}

static bool f32(const tport_tensor_view *t) {
    return t->type == TPORT_TYPE_F32;
}

bool vk_supports(vk_dev *d, const tport_graph_view *g, int32_t node) {
    const tport_tensor_view *t = tensor(g, node);
    if (!t || !fits(d, t))
        return false;
    const tport_tensor_view *s0 = tensor(g, t->src[0]);
    const tport_tensor_view *s1 = t->src[1] >= 0 ? tensor(g, t->src[1]) : NULL;
    if (!s0 || (t->src[1] >= 0 && !s1) || (s1 && !fits(d, s1)))
        return false;
    if (t->op != TPORT_OP_MUL_MAT && t->op != TPORT_OP_GET_ROWS && !fits(d, s0))
        return false;
    const uint32_t *lim = d->props.limits.maxComputeWorkGroupCount;
    switch (t->op) {
    case TPORT_OP_ADD:
    case TPORT_OP_MUL:
        if (!s1 || !f32(t) || !f32(s0) || !f32(s1) || !same_shape(t, s0))
            return false;
        for (int i = 0; i < TPORT_MAX_DIMS; i++)
            if (t->ne[i] % s1->ne[i])
                return false;
        return true;
    case TPORT_OP_SWIGLU:
        return s1 && f32(t) && f32(s0) && f32(s1) && same_shape(t, s0) && same_shape(t, s1);
    case TPORT_OP_SCALE:
    case TPORT_OP_RMS_NORM:
    case TPORT_OP_NORM:
        if (!t->params || t->params_size < sizeof(float))
            return false;
        /* fall through */
    case TPORT_OP_SILU:
    case TPORT_OP_GELU:
        return !s1 && f32(t) && f32(s0) && same_shape(t, s0);
    case TPORT_OP_SOFT_MAX:
        if (!t->params || t->params_size < sizeof(tport_params_soft_max) || !f32(t) || !f32(s0) ||
            !same_shape(t, s0))
            return false;
        return !s1 || (f32(s1) && s1->ne[0] == t->ne[0] && s1->ne[1] >= t->ne[1] && t->ne[2] % s1->ne[2] == 0 &&
                       t->ne[3] % s1->ne[3] == 0);
    case TPORT_OP_ROPE: {
        if (!s1 || !t->params || t->params_size < sizeof(tport_params_rope) || !f32(t) || !f32(s0) ||
            !same_shape(t, s0) || s1->type != TPORT_TYPE_I32 || s1->ne[0] != t->ne[2])
            return false;
        tport_params_rope p;
        memcpy(&p, t->params, sizeof p);
        return p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_dims <= t->ne[0] &&
               (p.mode == TPORT_ROPE_NORMAL || p.mode == TPORT_ROPE_NEOX);
    }
    case TPORT_OP_GET_ROWS:
        return s1 && f32(t) && s1->type == TPORT_TYPE_I32 && vk_weight_slot(s0->type) >= 0 && fits_chunked(d, s0) &&
               t->ne[0] == s0->ne[0] && t->ne[1] == s1->ne[0] && t->ne[2] == s1->ne[1] && t->ne[3] == s1->ne[2] &&
               s1->ne[3] == 1 && s0->ne[2] == t->ne[2] && s0->ne[3] == t->ne[3];
    case TPORT_OP_MUL_MAT:
        return s1 && f32(t) && f32(s1) && vk_weight_slot(s0->type) >= 0 && fits_chunked(d, s0) &&
               s0->ne[0] == s1->ne[0] && t->ne[0] == s0->ne[1] && t->ne[1] == s1->ne[1] && t->ne[2] == s1->ne[2] &&
               t->ne[3] == s1->ne[3] && s1->ne[2] % s0->ne[2] == 0 && s1->ne[3] % s0->ne[3] == 0 &&
               (uint64_t)t->ne[1] * t->ne[2] * t->ne[3] <= lim[2] &&
               (!vk_act_rounding(s0) || (uint64_t)nelements(s1) * 4 + d->align <= d->max_range);
    case TPORT_OP_CPY:
    case TPORT_OP_CONT:
        return (t->type == TPORT_TYPE_F32 || t->type == TPORT_TYPE_F16) &&
               (s0->type == TPORT_TYPE_F32 || s0->type == TPORT_TYPE_F16) && nelements(t) == nelements(s0);
    case TPORT_OP_CONCAT: {
        if (!s1 || !t->params || t->params_size < sizeof(tport_params_concat) || !f32(t) || !f32(s0) || !f32(s1))
            return false;
        tport_params_concat p;
        memcpy(&p, t->params, sizeof p);
        if (p.dim < 0 || p.dim >= TPORT_MAX_DIMS)
            return false;
        for (int i = 0; i < TPORT_MAX_DIMS; i++)
            if (t->ne[i] != (i == p.dim ? s0->ne[i] + s1->ne[i] : s0->ne[i]) ||
                (i != p.dim && s1->ne[i] != s0->ne[i]))
                return false;
        return true;
    }
    default:
        return false;
    }
}
