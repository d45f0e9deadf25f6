/* One tensorport node into ggml: the leaf tensors over (buffer, offset),
 * the op over its sources.  ggml's constructors abort on shapes they do
 * not take (GGML_ASSERT), so every condition they assert is checked here
 * first and the node is declined instead. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tg_internal.h"

int tg_type(tport_type_id type) {
    /* ids below 200 are ggml's own numbers; the host's block facts must
     * agree with ggml's (the removed interleaved types do not: ggml has
     * no blocks for them any more) */
    if (type >= GGML_TYPE_COUNT)
        return -1;
    /* ggml's CPU backend says it supports mul_mat of I64 and F64 weights
     * but has no kernel for them (a crash in compute): never offered */
    if (type == GGML_TYPE_I64 || type == GGML_TYPE_F64)
        return -1;
    const tport_type_info *ti = tg_host->type_info ? tg_host->type_info(type) : NULL;
    int64_t bs = gf.ggml_blck_size((enum ggml_type)type);
    if (!ti || bs <= 0 || ti->block_size != bs || ti->block_bytes != gf.ggml_type_size((enum ggml_type)type))
        return -1;
    return (int)type;
}

const tport_tensor_view *tg_view(const tport_graph_view *g, int32_t i) {
    if (!g || i < 0 || i >= g->n_tensors || !g->tensors || !g->tensors[i])
        return NULL;
    const tport_tensor_view *t = g->tensors[i];
    if (t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_1)
        return NULL;
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (t->ne[d] < 1 || t->ne[d] > ((int64_t)1 << 40) || t->nb[d] > ((uint64_t)1 << 48))
            return NULL;
    return t;
}

static const void *params(const tport_tensor_view *v, uint32_t size) {
    return v->params && v->params_size >= size ? v->params : NULL;
}

static bool is_node(const tport_graph_view *g, int32_t i) {
    for (int32_t k = 0; k < g->n_nodes; k++)
        if (g->nodes[k] == i)
            return true;
    return false;
}

/* Puts t at (buffer, offset) of the tport view i, inside the buffer, and
 * notes it in b->placed (a kept graph is re-bound through it). */
static bool place(tg_build *b, struct ggml_tensor *t, const tport_tensor_view *v, int32_t i) {
    if (!b->be)
        return true;
    if (v->buffer == 0 && v->data && b->be->devs[b->device].kind == TPORT_DEVICE_CPU &&
        b->be->devs[b->device].host_memory) {
        t->data = v->data; /* ABI 1.0: ggml's CPU reads host memory as it is */
        return true;
    }
    tg_buf *buf = tg_buf_get(b->be, v->buffer);
    if (!buf || buf->device != b->device) {
        tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: tensor '%s' is not in this device's memory",
                       v->name ? v->name : "");
        return false;
    }
    size_t need = gf.ggml_nbytes(t);
    if (v->offset > buf->size || need > buf->size - v->offset) {
        tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: tensor '%s' (%zu bytes at %llu) passes its buffer's end",
                       v->name ? v->name : "", need, (unsigned long long)v->offset);
        return false;
    }
    if (gf.ggml_backend_tensor_alloc(buf->buf, t, buf->base + v->offset) != GGML_STATUS_SUCCESS)
        return false;
    if (b->placed)
        b->placed[i] = t;
    return true;
}

/* A ggml tensor with the view's type, shape and strides (no op). */
static struct ggml_tensor *leaf(tg_build *b, const tport_tensor_view *v, int32_t i) {
    int type = tg_type(v->type);
    if (type < 0) {
        tg_host->error(TPORT_STATUS_UNSUPPORTED, "ggml: type %u has no ggml equivalent", v->type);
        return NULL;
    }
    /* a permuted view may step dim 0 by more than an element; blocks of
     * a quantized type are always whole and consecutive */
    int64_t bs = gf.ggml_blck_size((enum ggml_type)type);
    if (v->ne[0] % bs || (bs > 1 && v->nb[0] != gf.ggml_type_size((enum ggml_type)type)))
        return NULL;
    struct ggml_tensor *t = gf.ggml_new_tensor(b->ctx, (enum ggml_type)type, 4, v->ne);
    if (!t)
        return NULL;
    for (int d = 0; d < 4; d++)
        t->nb[d] = (size_t)v->nb[d];
    return place(b, t, v, i) ? t : NULL;
}

static bool same_ne(const struct ggml_tensor *t, const tport_tensor_view *v) {
    for (int d = 0; d < 4; d++)
        if (t->ne[d] != v->ne[d])
            return false;
    return true;
}

static bool rows_contiguous(const struct ggml_tensor *t) {
    return t->nb[0] == gf.ggml_type_size(t->type) && gf.ggml_blck_size(t->type) == 1;
}

static bool can_repeat(const struct ggml_tensor *b, const struct ggml_tensor *a) {
    for (int d = 0; d < 4; d++)
        if (a->ne[d] % b->ne[d])
            return false;
    return true;
}

static bool same_shape(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    for (int d = 0; d < 4; d++)
        if (a->ne[d] != b->ne[d])
            return false;
    return true;
}

static int64_t nelements(const struct ggml_tensor *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

static struct ggml_tensor *extra(tg_build *b, struct ggml_tensor *t) {
    if (b->be || !t)
        return t;
    if (b->n_extra >= TG_MAX_EXTRA)
        return NULL;
    return b->extra[b->n_extra++] = t;
}

/* The op of node v over ggml sources s[]; NULL if ggml cannot take it. */
static struct ggml_tensor *op(tg_build *b, const tport_tensor_view *v, struct ggml_tensor **s, int32_t self) {
    struct ggml_context *c = b->ctx;
    struct ggml_tensor *a = s[0], *x = s[1];
    if (!a)
        return NULL;
    switch (v->op) {
    case TPORT_OP_GET_ROWS:
        if (!x || x->type != GGML_TYPE_I32 || a->ne[2] != x->ne[1] || a->ne[3] != x->ne[2] || x->ne[3] != 1)
            return NULL;
        return gf.ggml_get_rows(c, a, x);
    case TPORT_OP_ADD:
    case TPORT_OP_MUL:
        if (!x || !can_repeat(x, a))
            return NULL;
        return v->op == TPORT_OP_ADD ? gf.ggml_add(c, a, x) : gf.ggml_mul(c, a, x);
    case TPORT_OP_SCALE: {
        const tport_params_scale *p = params(v, sizeof *p);
        if (!p || !rows_contiguous(a) || a->nb[2] != a->nb[1] * (size_t)a->ne[1] ||
            a->nb[3] != a->nb[2] * (size_t)a->ne[2])
            return NULL;
        return gf.ggml_scale(c, a, p->scale);
    }
    case TPORT_OP_MUL_MAT: {
        if (!x || a->ne[0] != x->ne[0] || x->ne[2] % a->ne[2] || x->ne[3] % a->ne[3] || a->nb[0] > a->nb[1])
            return NULL;
        struct ggml_tensor *r = gf.ggml_mul_mat(c, a, x);
        gf.ggml_mul_mat_set_prec(r, GGML_PREC_F32);
        return r;
    }
    case TPORT_OP_RMS_NORM:
    case TPORT_OP_NORM: {
        const tport_params_norm *p = params(v, sizeof *p);
        if (!p || !rows_contiguous(a))
            return NULL;
        return v->op == TPORT_OP_NORM ? gf.ggml_norm(c, a, p->eps) : gf.ggml_rms_norm(c, a, p->eps);
    }
    case TPORT_OP_ROPE: {
        const tport_params_rope *p = params(v, sizeof *p);
        if (!p || !x || x->type != GGML_TYPE_I32 || x->ne[1] != 1 || x->ne[2] != 1 || x->ne[3] != 1 ||
            a->ne[2] != x->ne[0] || (p->mode != TPORT_ROPE_NORMAL && p->mode != TPORT_ROPE_NEOX) || p->n_dims <= 0 ||
            p->n_dims > a->ne[0] || p->n_dims % 2)
            return NULL;
        return gf.ggml_rope_ext(c, a, x, NULL, p->n_dims, p->mode, 0, p->freq_base, p->freq_scale, 0.0f, 1.0f, 0.0f,
                                0.0f);
    }
    case TPORT_OP_SOFT_MAX:
    case TPORT_OP_SOFT_MAX_EXT: {
        float scale, max_bias = 0.0f;
        if (v->op == TPORT_OP_SOFT_MAX) {
            const tport_params_soft_max *p = params(v, sizeof *p);
            if (!p)
                return NULL;
            scale = p->scale;
        } else {
            const tport_params_soft_max_ext *p = params(v, sizeof *p);
            if (!p)
                return NULL;
            scale = p->scale, max_bias = p->max_bias;
        }
        if (!gf.ggml_is_contiguous(a) || (max_bias > 0 && !x))
            return NULL;
        if (x && (!gf.ggml_is_contiguous(x) || (x->type != GGML_TYPE_F32 && x->type != GGML_TYPE_F16) ||
                  x->ne[0] != a->ne[0] || x->ne[1] < a->ne[1] || a->ne[2] % x->ne[2] || a->ne[3] % x->ne[3]))
            return NULL;
        return gf.ggml_soft_max_ext(c, a, x, scale, max_bias);
    }
    case TPORT_OP_SILU:
    case TPORT_OP_GELU:
    case TPORT_OP_GELU_F16:
    case TPORT_OP_GELU_ERF:
    case TPORT_OP_TANH:
        if (!rows_contiguous(a))
            return NULL;
        /* GELU and GELU_F16 differ in the f16 rounding of the argument:
         * ggml's CPU computes the latter, its other backends the former */
        if ((v->op == TPORT_OP_GELU && b->ggml_cpu) || (v->op == TPORT_OP_GELU_F16 && !b->ggml_cpu))
            return NULL;
        return v->op == TPORT_OP_SILU       ? gf.ggml_silu(c, a)
               : v->op == TPORT_OP_GELU_ERF ? gf.ggml_gelu_erf(c, a)
               : v->op == TPORT_OP_TANH     ? gf.ggml_tanh(c, a)
                                            : gf.ggml_gelu(c, a);
    case TPORT_OP_CLAMP: {
        const tport_params_clamp *p = params(v, sizeof *p);
        return p ? gf.ggml_clamp(c, a, p->min, p->max) : NULL;
    }
    case TPORT_OP_SWIGLU:
        if (!x || !gf.ggml_is_contiguous(a) || !gf.ggml_is_contiguous(x) || !same_shape(a, x) || a->type != x->type)
            return NULL;
        return gf.ggml_swiglu_split(c, a, x);
    case TPORT_OP_CPY: {
        /* the destination is the node's own memory: ggml_cpy writes into
         * a tensor over it and returns a view of that */
        struct ggml_tensor *d = leaf(b, tg_view(b->g, self), self);
        if (!d || nelements(a) != nelements(d))
            return NULL;
        return gf.ggml_cpy(c, a, d);
    }
    case TPORT_OP_CONT:
        if (nelements(a) != v->ne[0] * v->ne[1] * v->ne[2] * v->ne[3])
            return NULL;
        return gf.ggml_cont_4d(c, a, v->ne[0], v->ne[1], v->ne[2], v->ne[3]);
    case TPORT_OP_CONCAT: {
        const tport_params_concat *p = params(v, sizeof *p);
        if (!p || !x || p->dim < 0 || p->dim >= 4 || a->type != x->type)
            return NULL;
        for (int d = 0; d < 4; d++)
            if (d != p->dim && a->ne[d] != x->ne[d])
                return NULL;
        return gf.ggml_concat(c, a, x, p->dim);
    }
    case TPORT_OP_FLASH_ATTN: {
        const tport_params_flash_attn *p = params(v, sizeof *p);
        struct ggml_tensor *k = s[1], *vv = s[2], *mask = s[3];
        if (!p || !k || !vv || a->type != GGML_TYPE_F32 || a->ne[3] != 1 || k->ne[3] != 1 || vv->ne[3] != 1 ||
            k->ne[0] != a->ne[0] || !same_shape(k, vv) || a->ne[1] % k->ne[2])
            return NULL;
        /* tport's q is [hd, n_head, n]; ggml's [hd, n, n_head] */
        struct ggml_tensor *q = gf.ggml_permute(c, a, 0, 2, 1, 3);
        if (mask) {
            if (mask->type != GGML_TYPE_F32 || mask->ne[0] != k->ne[1] || mask->ne[1] < a->ne[2] ||
                mask->ne[2] != 1 || mask->ne[3] != 1)
                return NULL;
            /* ggml takes an f16 mask (-inf and 0 are exact in f16) */
            mask = extra(b, gf.ggml_cast(c, mask, GGML_TYPE_F16));
            if (!mask)
                return NULL;
        }
        struct ggml_tensor *r = gf.ggml_flash_attn_ext(c, q, k, vv, mask, p->scale, 0.0f, 0.0f);
        gf.ggml_flash_attn_ext_set_prec(r, GGML_PREC_F32);
        return r;
    }
    default:
        return NULL;
    }
}

/* The ops the bridge translates, by the names `tport run --plan` prints:
 * TPORT_GGML_SKIP_OPS lists those a user keeps off ggml (a kernel of the
 * ggml backend that is wrong or slow on their device), each as OP (every
 * node of the op) or OP:TYPE (only where the first operand, the weight of
 * a product, has that type, as `tport types` names it). */
static const struct {
    tport_op_id op;
    const char *name;
} op_names[] = {
    {TPORT_OP_GET_ROWS, "get_rows"}, {TPORT_OP_ADD, "add"},         {TPORT_OP_MUL, "mul"},
    {TPORT_OP_SCALE, "scale"},       {TPORT_OP_MUL_MAT, "mul_mat"}, {TPORT_OP_RMS_NORM, "rms_norm"},
    {TPORT_OP_NORM, "norm"},         {TPORT_OP_ROPE, "rope"},       {TPORT_OP_SOFT_MAX, "soft_max"},
    {TPORT_OP_SILU, "silu"},         {TPORT_OP_GELU, "gelu"},       {TPORT_OP_SWIGLU, "swiglu"},
    {TPORT_OP_CPY, "cpy"},           {TPORT_OP_CONT, "cont"},       {TPORT_OP_CONCAT, "concat"},
    {TPORT_OP_GELU_F16, "gelu_f16"}, {TPORT_OP_GELU_ERF, "gelu_erf"}, {TPORT_OP_TANH, "tanh"},
    {TPORT_OP_CLAMP, "clamp"},       {TPORT_OP_SOFT_MAX_EXT, "soft_max_ext"}, {TPORT_OP_FLASH_ATTN, "flash_attn"},
};

/* Whether the list entry at p (up to ',' or the end) is `name` or
 * `name:type_name`. */
static bool entry_matches(const char *p, const char *name, const char *type_name) {
    size_t n = strlen(name);
    if (strncmp(p, name, n))
        return false;
    if (p[n] == ',' || p[n] == 0)
        return true;
    if (p[n] != ':' || !type_name)
        return false;
    size_t t = strlen(type_name), e = strcspn(p + n + 1, ",");
    return e == t && !strncasecmp(p + n + 1, type_name, t);
}

bool tg_op_skipped(tport_op_id op, tport_type_id src0_type) {
    const char *list = secure_getenv("TPORT_GGML_SKIP_OPS");
    if (!list || !*list)
        return false;
    const tport_type_info *ti = tg_host->type_info ? tg_host->type_info(src0_type) : NULL;
    const char *type_name = ti ? ti->name : NULL;
    for (size_t i = 0; i < sizeof op_names / sizeof op_names[0]; i++) {
        if (op_names[i].op != op)
            continue;
        for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',')
            if (entry_matches(p, op_names[i].name, type_name))
                return true;
    }
    return false;
}

struct ggml_tensor *tg_tensor(tg_build *b, int32_t i) {
    const tport_tensor_view *v = tg_view(b->g, i);
    if (!v)
        return NULL;
    if (b->t[i])
        return b->t[i];
    /* a tensor this graph does not compute is an operand already in memory */
    if (v->op == TPORT_OP_NONE || !is_node(b->g, i))
        return b->t[i] = leaf(b, v, i);
    struct ggml_tensor *s[TPORT_MAX_SRC] = {0};
    for (int k = 0; k < TPORT_MAX_SRC; k++) {
        if (v->src[k] < 0)
            continue;
        if (v->src[k] == i || !(s[k] = tg_tensor(b, v->src[k])))
            return NULL;
    }
    /* ggml's kernels step along rows element by element (its CPU asserts
     * it); only the copies take any strides */
    for (int k = 0; k < TPORT_MAX_SRC; k++)
        if (s[k] && v->op != TPORT_OP_CPY && v->op != TPORT_OP_CONT && gf.ggml_blck_size(s[k]->type) == 1 &&
            s[k]->nb[0] != gf.ggml_type_size(s[k]->type))
            return NULL;
    struct ggml_tensor *r = op(b, v, s, i);
    if (!r || !same_ne(r, v) || tg_type(v->type) != (int)r->type) {
        tg_host->error(TPORT_STATUS_UNSUPPORTED, "ggml: op %u ('%s') has no ggml form for these shapes", v->op,
                       v->name ? v->name : "");
        return NULL;
    }
    if (!r->view_src) {
        for (int d = 0; d < 4; d++)
            if (r->nb[d] != v->nb[d])
                return NULL; /* a strided destination: ggml writes contiguously */
        if (!place(b, r, v, i))
            return NULL;
    }
    return b->t[i] = r;
}
