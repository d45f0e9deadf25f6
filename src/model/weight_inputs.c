/* The inputs of a graph's weight products, for tport_session_watch_weights
 * (importance matrices).  Marking each product's input (and a routed
 * product's expert ids) a result of the graph is all a backend needs to
 * know: results are handed back to host memory after compute, by whichever
 * backend ran them, and the memory planner keeps them alive.  Reading them
 * afterwards is plain host code.
 *
 * A weight product is a mul_mat or mul_mat_id whose first source is a
 * weight (a leaf marked with tport_tensor_set_weight, or a view of one) --
 * the same set llama-imatrix's callback sees, whose src0 is a model
 * tensor. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tensor.h"
#include "model/model.h"

static bool weight_product(const tport_tensor *t) {
    return (t->op == TPORT_OP_MUL_MAT || t->op == TPORT_OP_MUL_MAT_ID) && t->src[0] && t->src[1] &&
           (t->src[0]->flags & TPORT_TENSOR_WEIGHT) && (t->op == TPORT_OP_MUL_MAT || t->src[2]);
}

tport_status tport_weight_inputs_mark(tport_graph *g) {
    /* tport_graph_add appends nothing here (the inputs are in the graph
     * already), so the node list does not move under the loop */
    const int n = tport_graph_n_nodes(g);
    for (int i = 0; i < n; i++) {
        const tport_tensor *t = tport_graph_node(g, i);
        if (!weight_product(t) || t->src[1]->type != TPORT_TYPE_F32)
            continue;
        tport_status st = tport_graph_add(g, t->src[1]);
        if (!st && t->op == TPORT_OP_MUL_MAT_ID)
            st = tport_graph_add(g, t->src[2]);
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}

void tport_weight_stage_free(tport_weight_stage *s) {
    free(s->x);
    free(s->mat);
    *s = (tport_weight_stage){0};
}

/* Room for n matrix ids and (k > 0) n rows of k floats in s. */
static tport_status reserve(tport_weight_stage *s, int64_t n, int64_t k) {
    if (n <= 0 || k < 0 || (k && n > INT64_MAX / k) || (uint64_t)(n * k) > SIZE_MAX / sizeof(float))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "weight inputs: %lld rows of %lld", (long long)n,
                           (long long)k);
    if (n * k > s->cap_x) {
        float *x = realloc(s->x, (size_t)(n * k) * sizeof *x);
        if (!x)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "weight inputs: out of memory");
        s->x = x;
        s->cap_x = n * k;
    }
    if (n > s->cap_mat) {
        int32_t *m = realloc(s->mat, (size_t)n * sizeof *m);
        if (!m)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "weight inputs: out of memory");
        s->mat = m;
        s->cap_mat = n;
    }
    return TPORT_STATUS_OK;
}

static const float *row_at(const tport_tensor *x, int64_t i1, int64_t i2, int64_t i3) {
    return (const float *)((const uint8_t *)x->data + (size_t)i1 * x->nb[1] + (size_t)i2 * x->nb[2] +
                           (size_t)i3 * x->nb[3]);
}

static bool rows_contiguous(const tport_tensor *x) {
    return x->nb[0] == sizeof(float) && x->nb[1] == (size_t)x->ne[0] * sizeof(float) &&
           x->nb[2] == x->nb[1] * (size_t)x->ne[1] && x->nb[3] == x->nb[2] * (size_t)x->ne[2];
}

/* A plain product: every row of the input, the weight's matrix (i2, i3)
 * broadcast over the input's dimensions 2 and 3 as mul_mat does. */
static tport_status plain(const tport_tensor *t, tport_weight_stage *s, tport_weight_input *in) {
    const tport_tensor *w = t->src[0], *x = t->src[1];
    const int64_t k = x->ne[0], n = x->ne[1] * x->ne[2] * x->ne[3], w2 = w->ne[2], w3 = w->ne[3];
    const bool copy = !rows_contiguous(x);
    tport_status st = reserve(s, n, copy ? k : 0);
    if (st)
        return st;
    int64_t r = 0;
    for (int64_t i3 = 0; i3 < x->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < x->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < x->ne[1]; i1++, r++) {
                if (copy)
                    memcpy(s->x + r * k, row_at(x, i1, i2, i3), (size_t)k * sizeof(float));
                s->mat[r] = (int32_t)((i3 % w3) * w2 + i2 % w2);
            }
    in->n_rows = n;
    in->x = copy ? s->x : (const float *)x->data;
    in->n_mat = (int32_t)(w2 * w3);
    in->mat = in->n_mat > 1 ? s->mat : NULL;
    return TPORT_STATUS_OK;
}

/* An expert-indexed product: input [k, 1 or n_used, T], ids [n_used, T];
 * the row of token t and slot u is the input's (u % ne1, t), through
 * expert ids[u, t]. */
static tport_status routed(const tport_tensor *t, tport_weight_stage *s, tport_weight_input *in) {
    const tport_tensor *w = t->src[0], *x = t->src[1], *ids = t->src[2];
    const int64_t k = x->ne[0], n_used = ids->ne[0], n_tok = ids->ne[1], n_exp = w->ne[2];
    if (ids->type != TPORT_TYPE_I32 || x->ne[2] != n_tok || x->ne[3] != 1 || (x->ne[1] != 1 && x->ne[1] != n_used))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "weight inputs: %s: an expert product of an input [%lld, %lld, "
                           "%lld, %lld] for ids [%lld, %lld]", w->name, (long long)x->ne[0], (long long)x->ne[1],
                           (long long)x->ne[2], (long long)x->ne[3], (long long)n_used, (long long)n_tok);
    const bool copy = x->ne[1] != n_used || !rows_contiguous(x);
    tport_status st = reserve(s, n_used * n_tok, copy ? k : 0);
    if (st)
        return st;
    for (int64_t tok = 0, r = 0; tok < n_tok; tok++)
        for (int64_t u = 0; u < n_used; u++, r++) {
            int32_t e;
            memcpy(&e, (const uint8_t *)ids->data + (size_t)u * ids->nb[0] + (size_t)tok * ids->nb[1], sizeof e);
            if (e < 0 || e >= n_exp)
                return tport_error(TPORT_STATUS_ERROR, "weight inputs: %s: expert id %d outside [0, %lld)", w->name,
                                   (int)e, (long long)n_exp);
            s->mat[r] = e;
            if (copy)
                memcpy(s->x + r * k, row_at(x, u % x->ne[1], tok, 0), (size_t)k * sizeof(float));
        }
    in->n_rows = n_used * n_tok;
    in->x = copy ? s->x : (const float *)x->data;
    in->n_mat = (int32_t)n_exp;
    in->mat = s->mat;
    in->routed = true;
    return TPORT_STATUS_OK;
}

tport_status tport_weight_inputs_report(const tport_graph *g, tport_weight_stage *s, tport_weight_input_fn fn,
                                        void *user) {
    for (int i = 0; i < tport_graph_n_nodes(g); i++) {
        const tport_tensor *t = tport_graph_node(g, i);
        if (!weight_product(t) || t->src[1]->type != TPORT_TYPE_F32)
            continue;
        const tport_tensor *w = t->src[0];
        /* a view of a weight is named after the weight it shows */
        const char *name = w->name[0] || !w->view_src ? w->name : w->view_src->name;
        if (!t->src[1]->data || (t->op == TPORT_OP_MUL_MAT_ID && !t->src[2]->data))
            return tport_error(TPORT_STATUS_ERROR, "weight inputs: the input of %s was not kept", name);
        tport_weight_input in = {.weight = name, .n_cols = t->src[1]->ne[0]};
        tport_status st = t->op == TPORT_OP_MUL_MAT_ID ? routed(t, s, &in) : plain(t, s, &in);
        if (!st)
            st = fn(user, &in);
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}
