/* Context shift, as llama.cpp's: when a session's context is full, the
 * n_discard positions after the first n_keep are dropped and the later
 * ones move down by n_discard, so generation goes on.  A key in the cache
 * was rotated (RoPE) for its old position p; rotating it once more by
 * -n_discard gives the key of position p - n_discard, because rotations by
 * angles p * theta compose additively.  Values carry no position and only
 * move.  The result equals a fresh evaluation of the kept tokens up to
 * rounding (the f16 cache rounds the re-rotated keys once more).
 *
 * The moves run as one graph over the caches, wherever they live: per
 * layer, get_rows reads the kept positions' rows (as f32), rope rotates
 * the keys by the delta, and cpy writes both back at their new positions
 * (in the cache's type).  get_rows' result is a fresh tensor, so reading
 * and writing overlapping ranges of one cache is safe.
 *
 * Architectures whose positions are not rotations refuse: learned
 * position embeddings (a key's position is baked into the hidden state of
 * every layer) and ALiBi (refused too, although its relative bias would
 * survive a shift unchanged: not implemented nor tested here). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/tensor.h"
#include "model/arch/arch.h"
#include "model/session.h"

bool tport_model_can_shift(const tport_model *m) {
    if (!m)
        return false;
    const tport_model_shape *sh = &m->sh;
    return sh->rope_mode >= 0 && !m->w.pos_embd && !(sh->max_alibi_bias > 0) && sh->n_swa <= 0;
}

static tport_status refuse(const tport_model *m) {
    const tport_model_shape *sh = &m->sh;
    if (sh->n_swa > 0) /* the rings hold only the window: nothing to shift into the gap */
        return tport_error(TPORT_STATUS_UNSUPPORTED, "context shift: %s keeps sliding-window layers' caches as "
                           "rings of the window; they cannot be shifted (use a longer context: it does not "
                           "grow those layers' memory)", m->arch->name);
    const char *why = m->w.pos_embd ? "learned position embeddings"
                      : sh->max_alibi_bias > 0 ? "ALiBi position biases"
                                               : "no rotary position embedding";
    return tport_error(TPORT_STATUS_UNSUPPORTED, "context shift: %s uses %s, not RoPE; its cache cannot be "
                       "shifted (use a longer context, or stop when it is full)", m->arch->name, why);
}

/* The nodes moving layer il's rows [from, from + n) to `to` (keys rotated
 * by to - from) into g; ids are the rows' indices in the [hd, nkv * n_ctx]
 * view, positions n copies of the delta. */
static tport_status add_layer(tport_session *s, tport_ctx *ctx, tport_graph *g, int32_t il, int32_t to, int32_t n,
                              tport_tensor *ids, tport_tensor *delta) {
    const tport_model_shape *sh = &s->m->sh;
    int64_t hd = sh->head_dim, nkv = sh->n_head_kv;
    for (int value = 0; value < (tport_shape_v_in_k(sh) ? 1 : 2); value++) {
        tport_tensor *c = tport_session_cache_leaf(ctx, s, il, value);
        if (!c)
            return TPORT_STATUS_ERROR;
        size_t f = tport_type_block_bytes(c->type), row = (size_t)(hd * nkv) * f;
        const int64_t rows_ne[2] = {hd, nkv * (int64_t)s->n_ctx};
        const int64_t ne3[3] = {hd, nkv, n};
        const size_t nb3[3] = {f, (size_t)hd * f, row};
        tport_tensor *x = tport_get_rows(ctx, tport_view(ctx, c, 2, rows_ne, NULL, 0), ids);
        x = tport_reshape(ctx, x, 3, ne3);
        if (!value && sh->n_lora_kv > 0) {
            /* deepseek2's cache row is [latent | rotated part]: only the
             * n_rot values after the latent turn */
            const int64_t lat_ne[3] = {sh->n_lora_kv, nkv, n}, rot_ne[3] = {sh->n_rot, nkv, n};
            const size_t xnb[3] = {sizeof(float), (size_t)hd * sizeof(float), (size_t)(hd * nkv) * sizeof(float)};
            tport_tensor *lat = tport_cont(ctx, tport_view(ctx, x, 3, lat_ne, xnb, 0));
            tport_tensor *rot = tport_cont(ctx, tport_view(ctx, x, 3, rot_ne, xnb, (size_t)sh->n_lora_kv * sizeof(float)));
            x = tport_concat(ctx, lat, tport_rope(ctx, rot, delta, sh->n_rot, sh->rope_mode, sh->rope_base,
                                                  sh->rope_scale), 0);
        } else if (!value) {
            x = tport_rope(ctx, x, delta, sh->n_rot, sh->rope_mode, sh->rope_base, sh->rope_scale);
        }
        tport_tensor *dst = tport_view(ctx, c, 3, ne3, nb3, (size_t)to * row);
        tport_status st = tport_graph_add(g, tport_cpy(ctx, x, dst));
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}

tport_status tport_session_shift(tport_session *s, int32_t n_keep, int32_t n_discard) {
    if (!s)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "context shift: no session");
    const tport_model *m = s->m;
    if (!tport_model_can_shift(m))
        return refuse(m);
    if (n_keep < 0 || n_discard <= 0 || n_discard > s->pos - n_keep)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "context shift: keeping %d and dropping %d of %d "
                           "positions", (int)n_keep, (int)n_discard, (int)s->pos);
    if (m->layer_begin != 0 || m->layer_end != m->sh.n_layer)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "context shift: not for a pipeline stage");
    int32_t from = n_keep + n_discard, n = s->pos - from;
    if (n > 0) {
        int64_t nkv = m->sh.n_head_kv;
        size_t n_ids = (size_t)n * (size_t)nkv;
        int32_t *in = malloc((n_ids + (size_t)n) * sizeof *in);
        tport_ctx *ctx = tport_ctx_new(0);
        tport_graph *g = ctx ? tport_graph_new(ctx) : NULL;
        tport_status st = in && g ? TPORT_STATUS_OK : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "context shift: "
                                                                  "out of memory");
        tport_tensor *ids = st ? NULL : tport_new_tensor_1d(ctx, TPORT_TYPE_I32, (int64_t)n_ids);
        tport_tensor *delta = st ? NULL : tport_new_tensor_1d(ctx, TPORT_TYPE_I32, n);
        if (!st && (!ids || !delta))
            st = TPORT_STATUS_ERROR;
        if (!st) {
            for (size_t i = 0; i < n_ids; i++)
                in[i] = (int32_t)((size_t)from * (size_t)nkv + i); /* position-major, then head */
            for (int32_t i = 0; i < n; i++)
                in[n_ids + (size_t)i] = -n_discard;
            tport_tensor_set_data(ids, in);
            tport_tensor_set_data(delta, in + n_ids);
        }
        for (int32_t il = 0; il < m->sh.n_layer && !st; il++)
            st = add_layer(s, ctx, g, il, n_keep, n, ids, delta);
        if (!st)
            st = tport_session_compute(s, g);
        if (st && st != TPORT_STATUS_OUT_OF_MEMORY)
            st = tport_error(st, "context shift: %s", tport_last_error());
        tport_graph_free(g);
        tport_ctx_free(ctx);
        free(in);
        if (st) {
            /* the caches may be half moved: what they hold is lost */
            s->pos = 0;
            s->have_logits = false;
            return st;
        }
        memmove(s->history + n_keep, s->history + from, (size_t)n * sizeof *s->history);
    }
    s->pos -= n_discard;
    /* the last logits were computed before the shift: a caller evaluates
     * the next token anyway, and gets ones matching the new cache */
    s->have_logits = false;
    return TPORT_STATUS_OK;
}
