/* tport_model: loading a model of any architecture this build runs
 * (src/model/arch/) from any readable file, its vocabulary, and the
 * tokenize/detokenize entry points. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/arch/arch.h"
#include "model/model.h"

static char *dup_str(const char *s) {
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static tport_status load_tokenizer(tport_model *m, const tport_model_params *params) {
    const tport_model_file *mf = m->file;
    tport_status st = TPORT_STATUS_OK;
    if (params && params->tokenizer_path) {
        st = tport_tokenizer_load_llama2c(params->tokenizer_path, m->sh.n_vocab, &m->tok);
    } else if (mf->vocab.n_tokens > 0) {
        st = tport_tokenizer_from_file(mf, &m->tok);
        if (st == TPORT_STATUS_UNSUPPORTED) { /* the model still runs from token ids */
            tport_log(TPORT_LOG_WARN, "%s; token ids only", tport_last_error());
            return TPORT_STATUS_OK;
        }
    }
    if (st != TPORT_STATUS_OK)
        return st;
    if (m->tok && tport_tokenizer_n_tokens(m->tok) > m->sh.n_vocab)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: the vocabulary has %d tokens but the model %d",
                           mf->path, (int)tport_tokenizer_n_tokens(m->tok), (int)m->sh.n_vocab);
    return TPORT_STATUS_OK;
}

/* A forced backend must exist; say which ones do. */
static tport_status check_backend(const char *name) {
    int n = tport_backend_count();
    for (int i = 0; i < n; i++)
        if (tport_backend_name(i) && !strcmp(tport_backend_name(i), name))
            return TPORT_STATUS_OK;
    char have[256] = "";
    size_t k = 0;
    for (int i = 0; i < n && k < sizeof have; i++)
        k += (size_t)snprintf(have + k, sizeof have - k, "%s%s", i ? ", " : "",
                              tport_backend_name(i) ? tport_backend_name(i) : "?");
    return tport_error(TPORT_STATUS_UNSUPPORTED, "backend '%s' is not available (have: %s)", name,
                       n ? have : "none");
}

/* Files without an architecture name (llama2.c, early GGML) are llama. */
static tport_status find_arch(tport_model *m) {
    const char *name = m->file->arch[0] ? m->file->arch : "llama";
    m->arch = tport_arch_find(name);
    if (m->arch)
        return TPORT_STATUS_OK;
    char have[256] = "";
    size_t k = 0;
    for (int i = 0; i < tport_arch_count() && k < sizeof have; i++)
        k += (size_t)snprintf(have + k, sizeof have - k, "%s%s", i ? ", " : "", tport_arch_at(i)->name);
    return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: architecture '%s' is not supported by this build (it runs %s)",
                       m->file->path, name, have);
}

const char *tport_model_arch(const tport_model *m) { return m && m->arch ? m->arch->name : NULL; }

tport_model *tport_model_load(const char *path, const tport_model_params *params) {
    if (!path) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "model_load: no path");
        return NULL;
    }
    tport_model *m = calloc(1, sizeof *m);
    if (!m) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "model_load: out of memory");
        return NULL;
    }
    pthread_mutex_init(&m->lost_lock, NULL);
    m->quick_start = params && params->quick_start;
    tport_status st = params && params->backend ? check_backend(params->backend) : TPORT_STATUS_OK;
    if (st == TPORT_STATUS_OK)
        st = tport_model_file_open(path, &m->file);
    if (st == TPORT_STATUS_OK)
        st = find_arch(m);
    if (st == TPORT_STATUS_OK)
        st = tport_model_shape_from_file(m->file, m->arch, &m->sh);
    if (st == TPORT_STATUS_OK && !(m->wctx = tport_ctx_new(0)))
        st = TPORT_STATUS_OUT_OF_MEMORY;
    if (st == TPORT_STATUS_OK) {
        bool all = !params || (!params->layer_begin && !params->layer_end);
        m->layer_begin = all ? 0 : params->layer_begin;
        m->layer_end = all ? m->sh.n_layer : params->layer_end;
        m->has_embedding = !params || !params->no_embedding;
        m->has_head = !params || !params->no_head;
        st = tport_model_bind_weights(m);
    }
    if (st == TPORT_STATUS_OK)
        st = tport_model_place_weights(m, params ? params->backend : NULL, params ? params->weight_type : NULL,
                                       params ? params->place : NULL);
    if (st == TPORT_STATUS_OK)
        st = load_tokenizer(m, params);
    if (st == TPORT_STATUS_OK && params) {
        m->n_threads = params->n_threads;
        if (params->backend && !(m->backend = dup_str(params->backend)))
            st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "model_load: out of memory");
    }
    if (st != TPORT_STATUS_OK) {
        tport_model_free(m);
        return NULL;
    }
    if (m->layer_begin != 0 || m->layer_end != m->sh.n_layer || !m->has_embedding || !m->has_head)
        tport_log(TPORT_LOG_INFO, "%s: stage with layers [%d, %d)%s%s", path, (int)m->layer_begin,
                  (int)m->layer_end, m->has_embedding ? ", the embedding" : "", m->has_head ? ", the head" : "");
    tport_log(TPORT_LOG_INFO, "%s: %s, %d layers, n_embd %d, %d/%d heads, n_ff %d, vocab %d, ctx %d",
              path, m->arch->name, m->sh.n_layer, m->sh.n_embd, m->sh.n_head, m->sh.n_head_kv, m->sh.n_ff,
              m->sh.n_vocab, m->sh.n_ctx);
    return m;
}

tport_status tport_model_own(tport_model *m, void *buf) {
    if (m->n_converted == m->cap_converted) {
        int cap = m->cap_converted ? 2 * m->cap_converted : 16;
        void **grown = realloc(m->converted, (size_t)cap * sizeof *grown);
        if (!grown) {
            free(buf);
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory for weights");
        }
        m->converted = grown;
        m->cap_converted = cap;
    }
    m->converted[m->n_converted++] = buf;
    return TPORT_STATUS_OK;
}

tport_status tport_model_finish_load(tport_model *m) {
    return m ? tport_model_settle_uploads(m, INT32_MAX) : TPORT_STATUS_OK;
}

void tport_model_free(tport_model *m) {
    if (!m)
        return;
    tport_model_release_weights(m, false);
    free(m->resident);
    pthread_mutex_destroy(&m->lost_lock);
    tport_tokenizer_free(m->tok);
    tport_ctx_free(m->wctx);
    free(m->layers);
    free(m->norm_f32);
    for (int i = 0; i < m->n_converted; i++)
        free(m->converted[i]);
    free(m->converted);
    free(m->placement_report);
    free(m->backend);
    tport_model_file_close(m->file);
    free(m);
}

int32_t tport_model_n_vocab(const tport_model *m) { return m ? m->sh.n_vocab : 0; }
int32_t tport_model_n_ctx(const tport_model *m) { return m ? m->sh.n_ctx : 0; }
int32_t tport_model_n_embd(const tport_model *m) { return m ? m->sh.n_embd : 0; }
int32_t tport_model_n_layer(const tport_model *m) { return m ? m->sh.n_layer : 0; }

tport_token tport_model_bos(const tport_model *m) {
    if (!m)
        return -1;
    if (m->tok)
        return tport_tokenizer_bos(m->tok);
    /* llama2.c checkpoints have no vocabulary but use SentencePiece's ids */
    return m->file->container == TPORT_CONTAINER_LLAMA2C && m->sh.n_vocab > 2 ? 1 : -1;
}

tport_token tport_model_eos(const tport_model *m) {
    if (!m)
        return -1;
    if (m->tok)
        return tport_tokenizer_eos(m->tok);
    return m->file->container == TPORT_CONTAINER_LLAMA2C && m->sh.n_vocab > 2 ? 2 : -1;
}

int32_t tport_tokenize(const tport_model *m, const char *text, bool add_bos, tport_token *ids,
                       int32_t cap) {
    if (!m || !text) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tokenize: NULL argument");
        return -1;
    }
    if (!m->tok) {
        tport_error(TPORT_STATUS_UNSUPPORTED, "%s: the model has no vocabulary (give a tokenizer file)",
                    m->file->path);
        return -1;
    }
    int32_t n = tport_tokenizer_encode(m->tok, text, strlen(text), add_bos, ids, cap < 0 ? 0 : cap);
    if (n < 0)
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tokenize: out of memory");
    return n;
}

const tport_tokenizer *tport_model_tokenizer(const tport_model *m) { return m ? m->tok : NULL; }

int32_t tport_token_to_text(const tport_model *m, tport_token prev, tport_token id, char *buf,
                            int32_t cap) {
    if (!m || !m->tok)
        return 0;
    int32_t n = tport_tokenizer_decode(m->tok, prev, id, buf, cap < 0 ? 0 : cap);
    return n < cap ? n : cap;
}
