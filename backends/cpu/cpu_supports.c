/* supports_op: true only for nodes this backend computes completely. */
#include <string.h>

#include "cpu_internal.h"

static const tport_tensor_view *tensor(const tport_graph_view *g, int32_t i) {
    if (i < 0 || i >= g->n_tensors || !g->tensors[i])
        return NULL;
    const tport_tensor_view *t = g->tensors[i];
    if (t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0 || !t->data)
        return NULL;
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (t->ne[d] < 1)
            return NULL;
    return t;
}

static bool same_shape(const tport_tensor_view *a, const tport_tensor_view *b) {
    for (int i = 0; i < TPORT_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i])
            return false;
    return true;
}

static bool dense_f32(const tport_tensor_view *t) {
    return t->type == TPORT_TYPE_F32 && t->nb[0] == sizeof(float);
}

static int64_t nelements(const tport_tensor_view *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

static bool contiguous(const tport_tensor_view *t) {
    int64_t bs = cpu_block_size(t->type);
    size_t expect = cpu_type_size(t->type);
    if (bs <= 0 || t->nb[0] != expect || t->ne[0] % bs)
        return false;
    expect *= (size_t)(t->ne[0] / bs);
    for (int i = 1; i < TPORT_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect)
            return false;
        expect *= (size_t)t->ne[i];
    }
    return true;
}

/* Rows of quantized data must be whole, adjacent blocks. */
static bool rows_ok(const tport_tensor_view *t) {
    int64_t bs = cpu_block_size(t->type);
    return bs > 0 && t->ne[0] % bs == 0 && (bs == 1 || cpu_rows_dense(t));
}

static bool supports_cpy(const tport_tensor_view *d, const tport_tensor_view *s) {
    if (nelements(d) != nelements(s) || !rows_ok(d) || !rows_ok(s))
        return false;
    bool raw = d->type == s->type;
    bool convert = cpu_can_to_float(s->type) && cpu_can_from_float(d->type);
    if (same_shape(d, s))
        return raw ? (cpu_rows_dense(d) && cpu_rows_dense(s)) || convert : convert;
    if (contiguous(d) && contiguous(s))
        return convert;
    return cpu_block_size(d->type) == 1 && cpu_block_size(s->type) == 1 && (raw || convert);
}

/* q [hd, n_head, n] dense f32 rows, k and v [hd, n_kv, n_head_kv] f32 or
 * f16 with dense rows, mask f32 [n_kv, >= n] */
static bool supports_flash_attn(const tport_graph_view *g, const tport_tensor_view *d, const tport_tensor_view *q,
                                const tport_tensor_view *k) {
    const tport_tensor_view *v = tensor(g, d->src[2]);
    const tport_tensor_view *m = d->src[3] >= 0 ? tensor(g, d->src[3]) : NULL;
    size_t psize = d->op == TPORT_OP_FLASH_ATTN_EXT ? sizeof(tport_params_flash_attn_ext) : sizeof(tport_params_flash_attn);
    if (!k || !v || (d->src[3] >= 0 && !m) || !d->params || d->params_size < psize)
        return false;
    if (d->op == TPORT_OP_FLASH_ATTN_EXT) {
        tport_params_flash_attn_ext p;
        memcpy(&p, d->params, sizeof p);
        if (!(p.softcap >= 0.0f)) /* NaN or negative: not ours to guess */
            return false;
        /* sinks: f32 [n_head], dense */
        int32_t si = d->struct_size >= TPORT_TENSOR_VIEW_SIZE_1_3 ? d->src_more[0] : -1;
        const tport_tensor_view *sk = si >= 0 ? tensor(g, si) : NULL;
        if (si >= 0 && (!sk || !dense_f32(sk) || sk->ne[0] != q->ne[1] || sk->ne[1] * sk->ne[2] * sk->ne[3] != 1))
            return false;
    }
    if (!dense_f32(d) || !dense_f32(q) || !same_shape(d, q) || q->ne[3] != 1)
        return false;
    if ((k->type != TPORT_TYPE_F32 && k->type != TPORT_TYPE_F16) || v->type != k->type || !same_shape(k, v) ||
        k->nb[0] != cpu_type_size(k->type) || v->nb[0] != k->nb[0] || k->ne[0] != q->ne[0] || k->ne[3] != 1 ||
        q->ne[1] % k->ne[2])
        return false;
    return !m || (dense_f32(m) && m->ne[0] == k->ne[1] && m->ne[1] >= q->ne[2] && m->ne[2] == 1 && m->ne[3] == 1);
}

/* mul_mat_id: as [K, N, E] in its own type, b f32 [K, 1 or n_used, T],
 * ids i32 [n_used, T], dst f32 [N, n_used, T].  add_id: a f32 [n, n_used,
 * T], bias f32 [n, E], the same ids, dst like a. */
static bool supports_expert_indexed(const tport_graph_view *g, const tport_tensor_view *d,
                                    const tport_tensor_view *s0, const tport_tensor_view *s1) {
    const tport_tensor_view *ids = tensor(g, d->src[2]);
    if (!s1 || !ids || ids->type != TPORT_TYPE_I32 || ids->nb[0] != sizeof(int32_t) || ids->ne[2] != 1 ||
        ids->ne[3] != 1 || !dense_f32(d) || d->ne[1] != ids->ne[0] || d->ne[2] != ids->ne[1] || d->ne[3] != 1 ||
        s1->type != TPORT_TYPE_F32 || s0->ne[3] != 1 || s1->ne[3] != 1)
        return false;
    if (d->op == TPORT_OP_ADD_ID)
        return s0->type == TPORT_TYPE_F32 && same_shape(d, s0) && s1->ne[0] == d->ne[0] && s1->ne[2] == 1;
    return cpu_can_to_float(s0->type) && s0->ne[0] == s1->ne[0] && d->ne[0] == s0->ne[1] &&
           (s1->ne[1] == 1 || s1->ne[1] == ids->ne[0]) && s1->ne[2] == ids->ne[1];
}

/* ROPE_EXT's own parameters and frequency factors (f32 [>= n_dims/2]) */
static bool rope_ext_ok(const tport_graph_view *g, const tport_tensor_view *d) {
    if (!d->params || d->params_size < sizeof(tport_params_rope_ext))
        return false;
    const tport_tensor_view *ff = d->src[2] >= 0 ? tensor(g, d->src[2]) : NULL;
    tport_params_rope_ext p;
    memcpy(&p, d->params, sizeof p);
    if (d->src[2] >= 0 && (!ff || !dense_f32(ff) || ff->ne[0] < p.n_dims / 2))
        return false;
    return p.ext_factor == 0.0f ||
           (p.n_ctx_orig > 0 && p.beta_fast > 0.0f && p.beta_slow > 0.0f && p.freq_scale > 0.0f);
}

/* A weight kept in our own layout (cpu_repack.c) is read only by mul_mat,
 * as a 2-D first operand, and by get_rows, and a stack of experts only by
 * mul_mat_id, as its first operand; one whose copy is deferred only as a
 * first operand (where cpu_graph.c reads the host's bytes). */
static bool own_layout_ok(const tport_graph_view *g, const tport_tensor_view *d) {
    for (int i = 0; i < TPORT_MAX_SRC; i++) {
        const tport_tensor_view *s = d->src[i] >= 0 ? tensor(g, d->src[i]) : NULL;
        int layout = s ? cpu_weight_layout(s) : CPU_LAYOUT_PLAIN;
        if (i > 0 && s && cpu_weight_deferred(s))
            return false;
        if (layout == CPU_LAYOUT_PLAIN)
            continue;
        if (layout == CPU_LAYOUT_UNKNOWN || i != 0)
            return false;
        if (d->op == TPORT_OP_MUL_MAT_ID)
            continue;
        if ((d->op != TPORT_OP_MUL_MAT && d->op != TPORT_OP_GET_ROWS) || s->ne[2] != 1 || s->ne[3] != 1)
            return false;
        const tport_tensor_view *b = tensor(g, d->src[1]);
        if (d->op == TPORT_OP_MUL_MAT && (!b || b->ne[2] != 1 || b->ne[3] != 1 || d->nb[0] != sizeof(float)))
            return false;
    }
    return true;
}

bool cpu_supports(const tport_graph_view *g, int32_t node) {
    const tport_tensor_view *d = tensor(g, node);
    if (!d || !rows_ok(d))
        return false;
    const tport_tensor_view *s0 = tensor(g, d->src[0]);
    const tport_tensor_view *s1 = d->src[1] >= 0 ? tensor(g, d->src[1]) : NULL;
    if (!s0 || (d->src[1] >= 0 && !s1) || !rows_ok(s0) || (s1 && !rows_ok(s1)))
        return false;
    if (!own_layout_ok(g, d))
        return false;
    switch (d->op) {
    case TPORT_OP_ADD:
    case TPORT_OP_MUL:
    case TPORT_OP_DIV:
        if (!s1 || !dense_f32(d) || s0->type != TPORT_TYPE_F32 || s1->type != TPORT_TYPE_F32 || !same_shape(d, s0))
            return false;
        for (int i = 0; i < TPORT_MAX_DIMS; i++)
            if (d->ne[i] % s1->ne[i])
                return false;
        return true;
    case TPORT_OP_SWIGLU_OAI:
    case TPORT_OP_SWIGLU:
        if (d->op == TPORT_OP_SWIGLU_OAI && (!d->params || d->params_size < sizeof(tport_params_swiglu_oai)))
            return false;
        return s1 && dense_f32(d) && s0->type == TPORT_TYPE_F32 && s1->type == TPORT_TYPE_F32 &&
               same_shape(d, s0) && same_shape(d, s1);
    case TPORT_OP_SCALE:
    case TPORT_OP_RMS_NORM:
    case TPORT_OP_NORM:
        if (!d->params || d->params_size < sizeof(float))
            return false;
        /* fall through */
    case TPORT_OP_SILU:
    case TPORT_OP_GELU:
    case TPORT_OP_GELU_F16:
    case TPORT_OP_GELU_ERF:
    case TPORT_OP_TANH:
    case TPORT_OP_SIGMOID:
        return dense_f32(d) && s0->type == TPORT_TYPE_F32 && same_shape(d, s0);
    case TPORT_OP_CLAMP:
        return d->params && d->params_size >= sizeof(tport_params_clamp) && dense_f32(d) &&
               s0->type == TPORT_TYPE_F32 && same_shape(d, s0);
    case TPORT_OP_SOFT_MAX_EXT:
        if (!d->params || d->params_size < sizeof(tport_params_soft_max_ext))
            return false;
        /* fall through */
    case TPORT_OP_SOFT_MAX:
        if (!d->params || d->params_size < sizeof(tport_params_soft_max) || !dense_f32(d) ||
            s0->type != TPORT_TYPE_F32 || !same_shape(d, s0))
            return false;
        return !s1 || (s1->type == TPORT_TYPE_F32 && s1->ne[0] == d->ne[0] && s1->ne[1] >= d->ne[1] &&
                       d->ne[2] % s1->ne[2] == 0 && d->ne[3] % s1->ne[3] == 0);
    case TPORT_OP_ROPE_EXT:
        if (!rope_ext_ok(g, d))
            return false;
        /* the rest is ROPE's */
        /* fall through */
    case TPORT_OP_ROPE: {
        if (!s1 || !d->params || d->params_size < sizeof(tport_params_rope) || !dense_f32(d) ||
            s0->type != TPORT_TYPE_F32 || !same_shape(d, s0) || s1->type != TPORT_TYPE_I32 ||
            s1->ne[0] != d->ne[2])
            return false;
        tport_params_rope p;
        memcpy(&p, d->params, sizeof p);
        return p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_dims <= d->ne[0] &&
               (p.mode == TPORT_ROPE_NORMAL || p.mode == TPORT_ROPE_NEOX);
    }
    case TPORT_OP_GET_ROWS:
        return s1 && dense_f32(d) && s1->type == TPORT_TYPE_I32 && cpu_can_to_float(s0->type) &&
               d->ne[0] == s0->ne[0] && d->ne[1] == s1->ne[0] && d->ne[2] == s1->ne[1] &&
               d->ne[3] == s1->ne[2] && s1->ne[3] == 1 && s0->ne[2] == d->ne[2] && s0->ne[3] == d->ne[3];
    case TPORT_OP_MUL_MAT:
        return s1 && dense_f32(d) && s1->type == TPORT_TYPE_F32 && cpu_can_to_float(s0->type) &&
               s0->ne[0] == s1->ne[0] && d->ne[0] == s0->ne[1] && d->ne[1] == s1->ne[1] &&
               d->ne[2] == s1->ne[2] && d->ne[3] == s1->ne[3] && s1->ne[2] % s0->ne[2] == 0 &&
               s1->ne[3] % s0->ne[3] == 0;
    case TPORT_OP_CPY:
    case TPORT_OP_CONT:
        return supports_cpy(d, s0);
    case TPORT_OP_FLASH_ATTN:
    case TPORT_OP_FLASH_ATTN_EXT:
        return supports_flash_attn(g, d, s0, s1);
    case TPORT_OP_MUL_MAT_ID:
    case TPORT_OP_ADD_ID:
        return supports_expert_indexed(g, d, s0, s1);
    case TPORT_OP_SUM_ROWS:
        return dense_f32(d) && s0->type == TPORT_TYPE_F32 && d->ne[0] == 1 && d->ne[1] == s0->ne[1] &&
               d->ne[2] == s0->ne[2] && d->ne[3] == s0->ne[3];
    case TPORT_OP_EXPERT_GROUPS: {
        if (!d->params || d->params_size < sizeof(tport_params_expert_groups))
            return false;
        tport_params_expert_groups p;
        memcpy(&p, d->params, sizeof p);
        return dense_f32(d) && s0->type == TPORT_TYPE_F32 && same_shape(d, s0) && p.n_group >= 1 &&
               p.n_group <= 256 && d->ne[0] % p.n_group == 0 && d->ne[0] / p.n_group >= 2 && p.n_group_used >= 1 &&
               p.n_group_used <= p.n_group;
    }
    case TPORT_OP_ARGSORT_TOP_K: {
        if (!d->params || d->params_size < sizeof(tport_params_top_k))
            return false;
        tport_params_top_k p;
        memcpy(&p, d->params, sizeof p);
        return d->type == TPORT_TYPE_I32 && s0->type == TPORT_TYPE_F32 && p.k == d->ne[0] && p.k >= 1 &&
               p.k <= 256 && d->ne[0] <= s0->ne[0] && d->ne[1] == s0->ne[1] && d->ne[2] == s0->ne[2] &&
               d->ne[3] == s0->ne[3];
    }
    case TPORT_OP_CONCAT: {
        if (!s1 || !d->params || d->params_size < sizeof(tport_params_concat))
            return false;
        tport_params_concat p;
        memcpy(&p, d->params, sizeof p);
        if (p.dim < 0 || p.dim >= TPORT_MAX_DIMS || d->type != s0->type || d->type != s1->type ||
            cpu_block_size(d->type) != 1)
            return false;
        for (int i = 0; i < TPORT_MAX_DIMS; i++)
            if (d->ne[i] != (i == p.dim ? s0->ne[i] + s1->ne[i] : s0->ne[i]) || (i != p.dim && s1->ne[i] != s0->ne[i]))
                return false;
        return true;
    }
    default:
        return false;
    }
}
