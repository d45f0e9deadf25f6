/* Op constructors: validate operands and record a result tensor.  Nothing
 * is computed here.  Every constructor returns NULL with tport_error() set
 * when an operand is NULL or the shapes do not fit. */
#include <math.h>
#include <string.h>

#include "error.h"
#include "quant/type_table.h"
#include "tensor.h"

/* Keeps the message of the op that produced a NULL operand, if any. */
static tport_tensor *null_input(const char *op) {
    if (!tport_last_error()[0])
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: an input is NULL", op);
    return NULL;
}

static tport_tensor *bad(const char *op, const char *why) {
    tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: %s", op, why);
    return NULL;
}

static tport_tensor *new_op(tport_ctx *ctx, tport_op_id op, tport_type_id type, const int64_t ne[4],
                            tport_tensor *s0, tport_tensor *s1, const void *params, uint32_t params_size) {
    tport_tensor *t = tport_tensor_record(ctx, type, 4, ne);
    if (!t)
        return NULL;
    t->op = op;
    t->src[0] = s0;
    t->src[1] = s1;
    if (params_size) {
        memcpy(t->params, params, params_size);
        t->params_size = params_size;
    }
    return t;
}

static bool same_shape(const tport_tensor *a, const tport_tensor *b) {
    for (int i = 0; i < TPORT_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i])
            return false;
    return true;
}

static tport_tensor *unary_f32(tport_ctx *ctx, tport_op_id op, tport_tensor *a, const void *p, uint32_t ps) {
    const char *name = tport_op_name(op);
    if (!ctx || !a)
        return null_input(name);
    if (a->type != TPORT_TYPE_F32)
        return bad(name, "input must be f32");
    return new_op(ctx, op, TPORT_TYPE_F32, a->ne, a, NULL, p, ps);
}

tport_tensor *tport_get_rows(tport_ctx *ctx, tport_tensor *a, tport_tensor *ids) {
    if (!ctx || !a || !ids)
        return null_input("get_rows");
    if (ids->type != TPORT_TYPE_I32)
        return bad("get_rows", "ids must be i32");
    if (ids->ne[3] != 1 || a->ne[2] != ids->ne[1] || a->ne[3] != ids->ne[2])
        return bad("get_rows", "ids [n, b2, b3] need a of shape [k, rows, b2, b3]");
    const tport_type_traits *tr = tport_traits(a->type);
    if (!tr || !tr->to_float)
        return bad("get_rows", "source type cannot be converted to f32");
    int64_t ne[4] = {a->ne[0], ids->ne[0], ids->ne[1], ids->ne[2]};
    return new_op(ctx, TPORT_OP_GET_ROWS, TPORT_TYPE_F32, ne, a, ids, NULL, 0);
}

static tport_tensor *binary_bcast(tport_ctx *ctx, tport_op_id op, tport_tensor *a, tport_tensor *b) {
    const char *name = tport_op_name(op);
    if (!ctx || !a || !b)
        return null_input(name);
    if (a->type != TPORT_TYPE_F32 || b->type != TPORT_TYPE_F32)
        return bad(name, "inputs must be f32");
    for (int i = 0; i < TPORT_MAX_DIMS; i++)
        if (a->ne[i] % b->ne[i]) {
            tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                        "%s: b's dimension %d (%lld) does not divide a's (%lld)", name, i,
                        (long long)b->ne[i], (long long)a->ne[i]);
            return NULL;
        }
    return new_op(ctx, op, TPORT_TYPE_F32, a->ne, a, b, NULL, 0);
}

tport_tensor *tport_add(tport_ctx *ctx, tport_tensor *a, tport_tensor *b) {
    return binary_bcast(ctx, TPORT_OP_ADD, a, b);
}

tport_tensor *tport_mul(tport_ctx *ctx, tport_tensor *a, tport_tensor *b) {
    return binary_bcast(ctx, TPORT_OP_MUL, a, b);
}

tport_tensor *tport_scale(tport_ctx *ctx, tport_tensor *a, float s) {
    tport_params_scale p = {s};
    return unary_f32(ctx, TPORT_OP_SCALE, a, &p, sizeof p);
}

tport_tensor *tport_mul_mat(tport_ctx *ctx, tport_tensor *a, tport_tensor *b) {
    if (!ctx || !a || !b)
        return null_input("mul_mat");
    if (b->type != TPORT_TYPE_F32)
        return bad("mul_mat", "b must be f32");
    const tport_type_traits *tr = tport_traits(a->type);
    if (!tr || !tr->to_float)
        return bad("mul_mat", "a's type cannot be converted to f32");
    if (a->ne[0] != b->ne[0]) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "mul_mat: inner dimensions differ (%lld vs %lld)",
                    (long long)a->ne[0], (long long)b->ne[0]);
        return NULL;
    }
    if (b->ne[2] % a->ne[2] || b->ne[3] % a->ne[3])
        return bad("mul_mat", "a's dimensions 2 and 3 must divide b's (broadcast)");
    int64_t ne[4] = {a->ne[1], b->ne[1], b->ne[2], b->ne[3]};
    return new_op(ctx, TPORT_OP_MUL_MAT, TPORT_TYPE_F32, ne, a, b, NULL, 0);
}

tport_tensor *tport_rms_norm(tport_ctx *ctx, tport_tensor *a, float eps) {
    if (!(eps >= 0.0f))
        return bad("rms_norm", "eps must be >= 0");
    tport_params_norm p = {eps};
    return unary_f32(ctx, TPORT_OP_RMS_NORM, a, &p, sizeof p);
}

tport_tensor *tport_norm(tport_ctx *ctx, tport_tensor *a, float eps) {
    if (!(eps >= 0.0f))
        return bad("norm", "eps must be >= 0");
    tport_params_norm p = {eps};
    return unary_f32(ctx, TPORT_OP_NORM, a, &p, sizeof p);
}

tport_tensor *tport_rope(tport_ctx *ctx, tport_tensor *a, tport_tensor *pos, int n_dims, int mode,
                         float freq_base, float freq_scale) {
    if (!ctx || !a || !pos)
        return null_input("rope");
    if (a->type != TPORT_TYPE_F32)
        return bad("rope", "input must be f32");
    if (pos->type != TPORT_TYPE_I32 || pos->ne[0] != a->ne[2] || pos->ne[1] * pos->ne[2] * pos->ne[3] != 1)
        return bad("rope", "positions must be i32 of length ne[2] of the input");
    if (n_dims <= 0 || n_dims % 2 || n_dims > a->ne[0])
        return bad("rope", "n_dims must be even and in 1..ne[0]");
    if (mode != TPORT_ROPE_NORMAL && mode != TPORT_ROPE_NEOX)
        return bad("rope", "unknown mode");
    if (!(freq_base > 0.0f) || !(freq_scale > 0.0f))
        return bad("rope", "freq_base and freq_scale must be > 0");
    tport_params_rope p = {n_dims, mode, freq_base, freq_scale};
    return new_op(ctx, TPORT_OP_ROPE, TPORT_TYPE_F32, a->ne, a, pos, &p, sizeof p);
}

tport_tensor *tport_rope_ext(tport_ctx *ctx, tport_tensor *a, tport_tensor *pos, tport_tensor *ff,
                             const tport_params_rope_ext *p) {
    if (!p)
        return bad("rope_ext", "no parameters");
    tport_tensor *t = tport_rope(ctx, a, pos, p->n_dims, p->mode, p->freq_base, p->freq_scale);
    if (!t)
        return NULL;
    if (ff && (ff->type != TPORT_TYPE_F32 || ff->ne[0] < p->n_dims / 2 || ff->ne[1] != 1 || ff->ne[2] != 1 ||
               ff->ne[3] != 1))
        return bad("rope_ext", "frequency factors must be f32 [>= n_dims/2]");
    if (!(p->attn_factor == p->attn_factor) || !(p->ext_factor == p->ext_factor) ||
        (p->ext_factor != 0.0f && (p->n_ctx_orig <= 0 || !(p->beta_fast > 0.0f) || !(p->beta_slow > 0.0f))))
        return bad("rope_ext", "YaRN needs n_ctx_orig > 0 and beta_fast, beta_slow > 0");
    t->op = TPORT_OP_ROPE_EXT;
    memcpy(t->params, p, sizeof *p);
    t->params_size = sizeof *p;
    t->src[2] = ff;
    return t;
}

tport_tensor *tport_soft_max(tport_ctx *ctx, tport_tensor *a, tport_tensor *mask, float scale) {
    if (!ctx || !a)
        return null_input("soft_max");
    if (a->type != TPORT_TYPE_F32)
        return bad("soft_max", "input must be f32");
    if (mask) {
        if (mask->type != TPORT_TYPE_F32)
            return bad("soft_max", "mask must be f32");
        if (mask->ne[0] != a->ne[0] || mask->ne[1] < a->ne[1] || a->ne[2] % mask->ne[2] ||
            a->ne[3] % mask->ne[3])
            return bad("soft_max", "mask must be [ne0, >= ne1] and broadcast over dims 2, 3");
    }
    tport_params_soft_max p = {scale};
    return new_op(ctx, TPORT_OP_SOFT_MAX, TPORT_TYPE_F32, a->ne, a, mask, &p, sizeof p);
}

tport_tensor *tport_flash_attn(tport_ctx *ctx, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                               tport_tensor *mask, float scale) {
    if (!ctx || !q || !k || !v)
        return null_input("flash_attn");
    if (q->type != TPORT_TYPE_F32)
        return bad("flash_attn", "q must be f32");
    if ((k->type != TPORT_TYPE_F32 && k->type != TPORT_TYPE_F16) || v->type != k->type)
        return bad("flash_attn", "k and v must both be f32 or both f16");
    if (!same_shape(k, v) || k->ne[0] != q->ne[0] || k->ne[3] != 1 || q->ne[3] != 1)
        return bad("flash_attn", "k and v must be [hd, n_kv, n_head_kv] with q's hd");
    if (q->ne[1] % k->ne[2])
        return bad("flash_attn", "n_head_kv (k's dimension 2) must divide n_head (q's dimension 1)");
    if (mask && (mask->type != TPORT_TYPE_F32 || mask->ne[0] != k->ne[1] || mask->ne[1] < q->ne[2] ||
                 mask->ne[2] != 1 || mask->ne[3] != 1))
        return bad("flash_attn", "mask must be f32 [n_kv, >= n]");
    if (!(scale == scale))
        return bad("flash_attn", "scale is NaN");
    tport_params_flash_attn p = {scale};
    tport_tensor *t = new_op(ctx, TPORT_OP_FLASH_ATTN, TPORT_TYPE_F32, q->ne, q, k, &p, sizeof p);
    if (t) {
        t->src[2] = v;
        t->src[3] = mask;
    }
    return t;
}

tport_tensor *tport_flash_attn_ext(tport_ctx *ctx, tport_tensor *q, tport_tensor *k, tport_tensor *v,
                                   tport_tensor *mask, tport_tensor *sinks, float scale, float softcap) {
    if (!(softcap == softcap) || softcap < 0.0f)
        return bad("flash_attn_ext", "softcap must be >= 0 (0: none)");
    tport_tensor *t = tport_flash_attn(ctx, q, k, v, mask, scale);
    if (!t)
        return NULL;
    if (sinks && (sinks->type != TPORT_TYPE_F32 || sinks->ne[0] != q->ne[1] || sinks->ne[1] != 1 ||
                  sinks->ne[2] != 1 || sinks->ne[3] != 1))
        return bad("flash_attn_ext", "sinks must be f32 [n_head]");
    tport_params_flash_attn_ext p = {scale, softcap};
    t->op = TPORT_OP_FLASH_ATTN_EXT;
    memcpy(t->params, &p, sizeof p);
    t->params_size = sizeof p;
    t->src[4] = sinks;
    return t;
}

tport_tensor *tport_silu(tport_ctx *ctx, tport_tensor *a) {
    return unary_f32(ctx, TPORT_OP_SILU, a, NULL, 0);
}

tport_tensor *tport_gelu(tport_ctx *ctx, tport_tensor *a) {
    return unary_f32(ctx, TPORT_OP_GELU, a, NULL, 0);
}

tport_tensor *tport_gelu_f16(tport_ctx *ctx, tport_tensor *a) {
    return unary_f32(ctx, TPORT_OP_GELU_F16, a, NULL, 0);
}

tport_tensor *tport_gelu_erf(tport_ctx *ctx, tport_tensor *a) {
    return unary_f32(ctx, TPORT_OP_GELU_ERF, a, NULL, 0);
}

tport_tensor *tport_tanh(tport_ctx *ctx, tport_tensor *a) {
    return unary_f32(ctx, TPORT_OP_TANH, a, NULL, 0);
}

tport_tensor *tport_clamp(tport_ctx *ctx, tport_tensor *a, float min, float max) {
    if (!(min <= max))
        return bad("clamp", "min must be <= max");
    tport_params_clamp p = {min, max};
    return unary_f32(ctx, TPORT_OP_CLAMP, a, &p, sizeof p);
}

tport_tensor *tport_soft_max_ext(tport_ctx *ctx, tport_tensor *a, tport_tensor *mask, float scale,
                                 float max_bias) {
    if (!(max_bias >= 0.0f))
        return bad("soft_max_ext", "max_bias must be >= 0");
    tport_tensor *t = tport_soft_max(ctx, a, mask, scale);
    if (!t)
        return NULL;
    tport_params_soft_max_ext p = {scale, max_bias};
    t->op = TPORT_OP_SOFT_MAX_EXT;
    memcpy(t->params, &p, sizeof p);
    t->params_size = sizeof p;
    return t;
}

tport_tensor *tport_swiglu(tport_ctx *ctx, tport_tensor *a, tport_tensor *b) {
    if (!ctx || !a || !b)
        return null_input("swiglu");
    if (a->type != TPORT_TYPE_F32 || b->type != TPORT_TYPE_F32)
        return bad("swiglu", "inputs must be f32");
    if (!same_shape(a, b))
        return bad("swiglu", "inputs must have the same shape");
    return new_op(ctx, TPORT_OP_SWIGLU, TPORT_TYPE_F32, a->ne, a, b, NULL, 0);
}

tport_tensor *tport_swiglu_oai(tport_ctx *ctx, tport_tensor *gate, tport_tensor *up, float alpha, float limit) {
    if (!ctx || !gate || !up)
        return null_input("swiglu_oai");
    if (gate->type != TPORT_TYPE_F32 || up->type != TPORT_TYPE_F32)
        return bad("swiglu_oai", "inputs must be f32");
    if (!same_shape(gate, up))
        return bad("swiglu_oai", "inputs must have the same shape");
    if (!(limit >= 0.0f) || !isfinite(alpha))
        return bad("swiglu_oai", "limit must be >= 0 and alpha finite");
    tport_params_swiglu_oai p = {alpha, limit};
    return new_op(ctx, TPORT_OP_SWIGLU_OAI, TPORT_TYPE_F32, gate->ne, gate, up, &p, sizeof p);
}

/* The result is a view of b written by the copy: b's data, b's layout. */
tport_tensor *tport_cpy(tport_ctx *ctx, tport_tensor *a, tport_tensor *b) {
    if (!ctx || !a || !b)
        return null_input("cpy");
    if (tport_tensor_nelements(a) != tport_tensor_nelements(b))
        return bad("cpy", "a and b must have the same number of elements");
    tport_tensor *t = new_op(ctx, TPORT_OP_CPY, b->type, b->ne, a, b, NULL, 0);
    if (!t)
        return NULL;
    memcpy(t->nb, b->nb, sizeof t->nb);
    t->flags |= TPORT_TENSOR_IS_VIEW;
    t->view_src = b->view_src ? b->view_src : b;
    t->view_offs = b->view_src ? b->view_offs : 0;
    if (t->view_src->data)
        t->data = (uint8_t *)t->view_src->data + t->view_offs;
    return t;
}

tport_tensor *tport_cont(tport_ctx *ctx, tport_tensor *a) {
    if (!ctx || !a)
        return null_input("cont");
    return new_op(ctx, TPORT_OP_CONT, a->type, a->ne, a, NULL, NULL, 0);
}

tport_tensor *tport_concat(tport_ctx *ctx, tport_tensor *a, tport_tensor *b, int dim) {
    if (!ctx || !a || !b)
        return null_input("concat");
    if (dim < 0 || dim >= TPORT_MAX_DIMS)
        return bad("concat", "dim must be 0..3");
    if (a->type != b->type)
        return bad("concat", "a and b must have the same type");
    if (tport_type_block_size(a->type) != 1)
        return bad("concat", "quantized types cannot be concatenated");
    int64_t ne[4];
    for (int i = 0; i < TPORT_MAX_DIMS; i++) {
        if (i != dim && a->ne[i] != b->ne[i])
            return bad("concat", "shapes differ outside the concatenated dimension");
        ne[i] = i == dim ? a->ne[i] + b->ne[i] : a->ne[i];
    }
    tport_params_concat p = {dim};
    return new_op(ctx, TPORT_OP_CONCAT, a->type, ne, a, b, &p, sizeof p);
}

/* ---- mixture of experts (ABI 1.3) ----------------------------------------- */

tport_tensor *tport_mul_mat_id(tport_ctx *ctx, tport_tensor *as, tport_tensor *b, tport_tensor *ids) {
    if (!ctx || !as || !b || !ids)
        return null_input("mul_mat_id");
    if (b->type != TPORT_TYPE_F32 || ids->type != TPORT_TYPE_I32)
        return bad("mul_mat_id", "b must be f32 and ids i32");
    const tport_type_traits *tr = tport_traits(as->type);
    if (!tr || !tr->to_float)
        return bad("mul_mat_id", "the experts' type cannot be converted to f32");
    if (as->ne[3] != 1 || b->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1)
        return bad("mul_mat_id", "dimension 3 of every operand must be 1");
    if (as->ne[0] != b->ne[0] || b->ne[2] != ids->ne[1] || (b->ne[1] != 1 && b->ne[1] != ids->ne[0]))
        return bad("mul_mat_id", "need as [K, N, E], b [K, 1 or n_used, T], ids [n_used, T]");
    int64_t ne[4] = {as->ne[1], ids->ne[0], ids->ne[1], 1};
    tport_tensor *t = new_op(ctx, TPORT_OP_MUL_MAT_ID, TPORT_TYPE_F32, ne, as, b, NULL, 0);
    if (t)
        t->src[2] = ids;
    return t;
}

tport_tensor *tport_argsort_top_k(tport_ctx *ctx, tport_tensor *a, int k) {
    if (!ctx || !a)
        return null_input("argsort_top_k");
    if (a->type != TPORT_TYPE_F32)
        return bad("argsort_top_k", "input must be f32");
    if (k < 1 || k > a->ne[0])
        return bad("argsort_top_k", "k must be in 1..ne[0]");
    int64_t ne[4] = {k, a->ne[1], a->ne[2], a->ne[3]};
    tport_params_top_k p = {k};
    return new_op(ctx, TPORT_OP_ARGSORT_TOP_K, TPORT_TYPE_I32, ne, a, NULL, &p, sizeof p);
}

tport_tensor *tport_expert_groups(tport_ctx *ctx, tport_tensor *a, int n_group, int n_group_used) {
    if (!ctx || !a)
        return null_input("expert_groups");
    if (a->type != TPORT_TYPE_F32)
        return bad("expert_groups", "input must be f32");
    if (n_group < 1 || a->ne[0] % n_group || a->ne[0] / n_group < 2 || n_group_used < 1 || n_group_used > n_group)
        return bad("expert_groups", "need n_group dividing ne[0] into groups of >= 2, 1 <= n_group_used <= n_group");
    tport_params_expert_groups p = {n_group, n_group_used};
    return new_op(ctx, TPORT_OP_EXPERT_GROUPS, TPORT_TYPE_F32, a->ne, a, NULL, &p, sizeof p);
}

tport_tensor *tport_sigmoid(tport_ctx *ctx, tport_tensor *a) {
    return unary_f32(ctx, TPORT_OP_SIGMOID, a, NULL, 0);
}

tport_tensor *tport_sum_rows(tport_ctx *ctx, tport_tensor *a) {
    if (!ctx || !a)
        return null_input("sum_rows");
    if (a->type != TPORT_TYPE_F32)
        return bad("sum_rows", "input must be f32");
    int64_t ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    return new_op(ctx, TPORT_OP_SUM_ROWS, TPORT_TYPE_F32, ne, a, NULL, NULL, 0);
}

tport_tensor *tport_div(tport_ctx *ctx, tport_tensor *a, tport_tensor *b) {
    return binary_bcast(ctx, TPORT_OP_DIV, a, b);
}

tport_tensor *tport_add_id(tport_ctx *ctx, tport_tensor *a, tport_tensor *bias, tport_tensor *ids) {
    if (!ctx || !a || !bias || !ids)
        return null_input("add_id");
    if (a->type != TPORT_TYPE_F32 || bias->type != TPORT_TYPE_F32 || ids->type != TPORT_TYPE_I32)
        return bad("add_id", "a and bias must be f32, ids i32");
    if (bias->ne[0] != a->ne[0] || bias->ne[2] != 1 || bias->ne[3] != 1 || ids->ne[0] != a->ne[1] ||
        ids->ne[1] != a->ne[2] || a->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1)
        return bad("add_id", "need a [n, n_used, T], bias [n, E], ids [n_used, T]");
    tport_tensor *t = new_op(ctx, TPORT_OP_ADD_ID, TPORT_TYPE_F32, a->ne, a, bias, NULL, 0);
    if (t)
        t->src[2] = ids;
    return t;
}
