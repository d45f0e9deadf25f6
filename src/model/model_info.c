/* What an application (tport serve) asks a loaded model besides running
 * it: metadata strings, special tokens by text, detokenizing a sequence,
 * and how much memory the weights and a KV cache take. */
#include <string.h>

#include "core/error.h"
#include "model/model.h"

const char *tport_token_text(const tport_model *m, tport_token id, size_t *len) {
    if (!m || !m->tok || id < 0 || id >= tport_tokenizer_n_tokens(m->tok))
        return NULL;
    uint32_t n = 0;
    const char *t = tport_tokenizer_token_text(m->tok, id, &n);
    if (len)
        *len = n;
    return t;
}

const char *tport_model_meta_str(const tport_model *m, const char *key) {
    if (!m || !key)
        return NULL;
    const tport_kv *kv = tport_model_file_kv(m->file, key);
    return kv && kv->type == TPORT_KV_STRING ? kv->v.s : NULL;
}

tport_token tport_token_lookup(const tport_model *m, const char *text, size_t len) {
    if (!m || !m->tok || !text)
        return -1;
    return tport_tokenizer_find(m->tok, text, len);
}

int32_t tport_detokenize(const tport_model *m, const tport_token *ids, int32_t n, char *buf, int32_t cap) {
    if (!m || (!ids && n > 0) || n < 0 || cap < 0) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "detokenize: bad argument");
        return -1;
    }
    if (!m->tok) {
        tport_error(TPORT_STATUS_UNSUPPORTED, "%s: the model has no vocabulary", m->file->path);
        return -1;
    }
    int64_t need = 0;
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= tport_tokenizer_n_tokens(m->tok)) {
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "detokenize: token id %d outside [0, %d)", (int)ids[i],
                        (int)tport_tokenizer_n_tokens(m->tok));
            return -1;
        }
        int64_t room = need < cap ? cap - need : 0;
        /* pieces past cap are only counted */
        int32_t k = tport_tokenizer_decode(m->tok, i ? ids[i - 1] : -1, ids[i], room ? buf + need : NULL,
                                           (int32_t)room);
        if (k < 0)
            return -1;
        need += k;
        if (need > INT32_MAX) {
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "detokenize: the text exceeds 2 GiB");
            return -1;
        }
    }
    return (int32_t)need;
}

static size_t bytes_of(const tport_tensor *t) { return t ? tport_tensor_nbytes(t) : 0; }

size_t tport_model_weight_bytes(const tport_model *m) {
    if (!m)
        return 0;
    const tport_globals *g = &m->w;
    const tport_tensor *globals[] = {g->tok_embd, g->pos_embd, g->tok_norm, g->tok_norm_b, g->output_norm,
                                     g->output_norm_b, g->output != g->tok_embd ? g->output : NULL, g->output_b};
    size_t total = 0;
    for (size_t k = 0; k < sizeof globals / sizeof globals[0]; k++)
        total += bytes_of(globals[k]);
    for (int32_t i = m->layer_begin; i < m->layer_end; i++) {
        tport_tensor **slots[64];
        int n = tport_model_layer_weights((tport_model *)m, i, TPORT_LAYER_ALL, slots, 64);
        for (int k = 0; k < n; k++)
            total += bytes_of(*slots[k]);
    }
    return total;
}

size_t tport_model_kv_bytes(const tport_model *m, int32_t n_ctx) {
    if (!m || n_ctx < 0)
        return 0;
    const tport_model_shape *sh = &m->sh;
    size_t ctx = (size_t)(n_ctx ? n_ctx : sh->n_ctx), cells = 0;
    /* a sliding-window layer keeps a ring of the window and one batch (a
     * session's default of 64; session.c) */
    for (int32_t il = 0; il < sh->n_layer; il++) {
        size_t ring = (size_t)sh->n_swa + 63;
        cells += tport_shape_layer_swa(sh, il) && ring < ctx ? ring : ctx;
    }
    return (tport_shape_v_in_k(sh) ? 1 : 2) * cells * (size_t)sh->head_dim * (size_t)sh->n_head_kv * sizeof(float);
}
