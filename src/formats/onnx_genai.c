/* onnxruntime-genai's genai_config.json beside an ONNX model, read after
 * config.json has set the architecture (genai_config.json alone gives no
 * norm epsilon, RoPE base or feed-forward width: those are baked into the
 * graph, so without config.json the model is refused, naming them).
 *  - model.type must be config.json's model_type; model.vocab_size and
 *    decoder.hidden_size / num_attention_heads / num_key_value_heads /
 *    num_hidden_layers / head_size must agree with the weights;
 *    decoder.filename must name the model opened;
 *  - model.context_length, bos_token_id, eos_token_id, pad_token_id are
 *    used (an eos list: its first id; the others are named in the note,
 *    as tensorport stops at one eos);
 *  - search: do_sample / top_k / top_p / temperature / repetition_penalty
 *    become llama.cpp's general.sampling.* keys (kept by tport convert);
 *    what cannot be honoured is refused, naming it: beam search
 *    (num_beams > 1), no_repeat_ngram_size, diversity_penalty,
 *    min_length, and pipelines of several models (vision, speech,
 *    embedding sessions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/mf_internal.h"
#include "formats/onnx_genai.h"

#ifndef TPORT_HAVE_CJSON

tport_status mf_onnx_genai_config(tport_model_file *mf, const mf_cursor *c, bool *present) {
    (void)mf, (void)c;
    *present = false;
    return TPORT_STATUS_OK;
}

#else

#include <cjson/cJSON.h>

#define MAX_GENAI_BYTES (1u << 20)

static cJSON *read_genai(const char *model_path, bool *present) {
    const char *slash = strrchr(model_path, '/');
    char path[4096];
    snprintf(path, sizeof path, "%.*sgenai_config.json", slash ? (int)(slash - model_path + 1) : 0, model_path);
    FILE *f = fopen(path, "rb");
    *present = f != NULL;
    if (!f)
        return NULL;
    char *buf = malloc(MAX_GENAI_BYTES);
    size_t n = buf ? fread(buf, 1, MAX_GENAI_BYTES, f) : 0;
    fclose(f);
    cJSON *j = n && n < MAX_GENAI_BYTES ? cJSON_ParseWithLength(buf, n) : NULL;
    free(buf);
    return j;
}

static const cJSON *item(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

/* A field that must be a non-negative integer when present. */
static tport_status get_uint(const tport_model_file *mf, const cJSON *o, const char *k, uint64_t *v, bool *has) {
    const cJSON *j = item(o, k);
    *has = j != NULL;
    if (j && !mf_json_uint(j, v))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json: %s is not a non-negative integer",
                           mf->path, k);
    return TPORT_STATUS_OK;
}

static tport_status must_equal(const tport_model_file *mf, const cJSON *o, const char *k, uint64_t want,
                               const char *what) {
    uint64_t v;
    bool has;
    MF_TRY(get_uint(mf, o, k, &v, &has));
    if (has && want && v != want)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json says %s %llu, the model has %llu (%s)",
                           mf->path, k, (unsigned long long)v, (unsigned long long)want, what);
    return TPORT_STATUS_OK;
}

static tport_status token(tport_model_file *mf, const cJSON *o, const char *k, const char *key, int32_t *dst) {
    uint64_t v;
    bool has;
    const cJSON *j = item(o, k);
    if (cJSON_IsArray(j) && cJSON_GetArraySize(j) > 0) { /* eos lists: the first (apply notes the others) */
        for (int i = 1; i < cJSON_GetArraySize(j); i++)
            if (!mf_json_uint(cJSON_GetArrayItem(j, i), &v))
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json: %s[%d] is not a token id",
                                   mf->path, k, i);
        j = cJSON_GetArrayItem(j, 0);
    }
    has = j != NULL;
    if (j && !mf_json_uint(j, &v))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json: %s is not a token id", mf->path, k);
    if (!has)
        return TPORT_STATUS_OK;
    if (mf->hp.n_vocab && v >= mf->hp.n_vocab)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json: %s %llu is past the vocabulary (%u)",
                           mf->path, k, (unsigned long long)v, mf->hp.n_vocab);
    *dst = (int32_t)v;
    return mf_kv_add_u32(mf, key, (uint32_t)v);
}

static tport_status refuse_search(const tport_model_file *mf, const cJSON *s, const char *k, double neutral) {
    const cJSON *j = item(s, k);
    if (j && (!cJSON_IsNumber(j) || j->valuedouble != neutral))
        return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: genai_config.json: search.%s %g is not supported (only %g)",
                           mf->path, k, cJSON_IsNumber(j) ? j->valuedouble : -1.0, neutral);
    return TPORT_STATUS_OK;
}

static tport_status sampling(tport_model_file *mf, const cJSON *s) {
    MF_TRY(refuse_search(mf, s, "num_beams", 1));
    MF_TRY(refuse_search(mf, s, "num_return_sequences", 1));
    MF_TRY(refuse_search(mf, s, "no_repeat_ngram_size", 0));
    MF_TRY(refuse_search(mf, s, "diversity_penalty", 0));
    MF_TRY(refuse_search(mf, s, "min_length", 0));
    const cJSON *ds = item(s, "do_sample");
    uint64_t top_k;
    bool has_k;
    MF_TRY(get_uint(mf, s, "top_k", &top_k, &has_k));
    if (cJSON_IsFalse(ds)) /* greedy */
        top_k = 1, has_k = true;
    if (has_k && top_k <= INT32_MAX)
        MF_TRY(mf_kv_add_u32(mf, "general.sampling.top_k", (uint32_t)top_k));
    static const char *const F[][2] = {{"top_p", "general.sampling.top_p"},
                                       {"temperature", "general.sampling.temp"},
                                       {"repetition_penalty", "general.sampling.penalty_repeat"}};
    for (size_t i = 0; i < 3; i++) {
        const cJSON *j = item(s, F[i][0]);
        if (j && (!cJSON_IsNumber(j) || !(j->valuedouble >= 0) || j->valuedouble > 1e6))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json: search.%s is not a number >= 0",
                               mf->path, F[i][0]);
        if (j)
            MF_TRY(mf_kv_add_f32(mf, F[i][1], (float)j->valuedouble));
    }
    return TPORT_STATUS_OK;
}

static uint32_t kv_u32(const tport_model_file *mf, const char *suffix) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", mf->arch, suffix);
    for (int i = 0; i < mf->n_kv; i++)
        if (!strcmp(mf->kv[i].key, key) && mf->kv[i].type == TPORT_KV_U32)
            return (uint32_t)mf->kv[i].v.u;
    return 0;
}

static tport_status apply(tport_model_file *mf, const cJSON *g, const cJSON *cfg) {
    const cJSON *m = item(g, "model");
    if (!cJSON_IsObject(m))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json has no \"model\" object", mf->path);
    /* one note (notes are short): the eos ids past the first are no stop */
    char note[120];
    int n = snprintf(note, sizeof note, "genai_config.json");
    const cJSON *eos = item(m, "eos_token_id");
    for (int i = 1; cJSON_IsArray(eos) && i < cJSON_GetArraySize(eos) && n > 0 && (size_t)n < sizeof note; i++) {
        const cJSON *e = cJSON_GetArrayItem(eos, i);
        n += snprintf(note + n, sizeof note - (size_t)n, "%s%.0f%s", i == 1 ? ", eos " : " ",
                      cJSON_IsNumber(e) ? e->valuedouble : -1.0, i + 1 == cJSON_GetArraySize(eos) ? " no stop" : "");
    }
    mf_add_note(mf, note);
    static const char *const PIPES[] = {"vision", "speech", "embedding", "encoder", "pipeline", NULL};
    for (const char *const *p = PIPES; *p; p++)
        if (item(m, *p))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: genai_config.json: model.%s (a pipeline of several "
                               "ONNX models) is not supported", mf->path, *p);
    const cJSON *type = item(m, "type"), *mt = cfg ? item(cfg, "model_type") : NULL;
    if (cJSON_IsString(type) && cJSON_IsString(mt) && strcmp(type->valuestring, mt->valuestring))
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json's model.type '%.40s' is not "
                           "config.json's model_type '%.40s'", mf->path, type->valuestring, mt->valuestring);
    MF_TRY(must_equal(mf, m, "vocab_size", mf->hp.n_vocab, "token_embd rows"));
    const cJSON *d = item(m, "decoder");
    if (d) {
        const cJSON *fn = item(d, "filename");
        const char *slash = strrchr(mf->path, '/'), *base = slash ? slash + 1 : mf->path;
        if (cJSON_IsString(fn) && strcmp(fn->valuestring, base))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json describes decoder '%.80s', not this "
                               "file", mf->path, fn->valuestring);
        uint32_t hd = kv_u32(mf, "attention.key_length");
        MF_TRY(must_equal(mf, d, "hidden_size", mf->hp.n_embd, "n_embd"));
        MF_TRY(must_equal(mf, d, "num_attention_heads", mf->hp.n_head, "n_head"));
        MF_TRY(must_equal(mf, d, "num_key_value_heads", mf->hp.n_head_kv, "n_head_kv"));
        MF_TRY(must_equal(mf, d, "num_hidden_layers", mf->hp.n_layer, "n_layer"));
        MF_TRY(must_equal(mf, d, "head_size", hd ? hd : mf->hp.n_head ? mf->hp.n_embd / mf->hp.n_head : 0,
                          "head size"));
    }
    uint64_t ctx;
    bool has;
    MF_TRY(get_uint(mf, m, "context_length", &ctx, &has));
    if (has) {
        if (!ctx || ctx > UINT32_MAX)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json: context_length %llu", mf->path,
                               (unsigned long long)ctx);
        char key[128];
        snprintf(key, sizeof key, "%s.context_length", mf->arch);
        MF_TRY(mf_kv_add_u32(mf, key, (uint32_t)ctx));
        mf->hp.n_ctx = (uint32_t)ctx;
    }
    MF_TRY(token(mf, m, "bos_token_id", "tokenizer.ggml.bos_token_id", &mf->vocab.bos));
    MF_TRY(token(mf, m, "eos_token_id", "tokenizer.ggml.eos_token_id", &mf->vocab.eos));
    MF_TRY(token(mf, m, "pad_token_id", "tokenizer.ggml.padding_token_id", &mf->vocab.pad));
    const cJSON *s = item(g, "search");
    if (s)
        MF_TRY(sampling(mf, s));
    return TPORT_STATUS_OK;
}

tport_status mf_onnx_genai_config(tport_model_file *mf, const mf_cursor *c, bool *present) {
    (void)c;
    *present = false;
    if (mf->borrowed)
        return TPORT_STATUS_OK;
    cJSON *g = read_genai(mf->path, present);
    if (!*present)
        return TPORT_STATUS_OK;
    if (!cJSON_IsObject(g)) {
        cJSON_Delete(g);
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: genai_config.json beside it is not a JSON object", mf->path);
    }
    const char *slash = strrchr(mf->path, '/');
    char path[4096];
    snprintf(path, sizeof path, "%.*sconfig.json", slash ? (int)(slash - mf->path + 1) : 0, mf->path);
    cJSON *cfg = NULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        char *buf = malloc(MAX_GENAI_BYTES);
        size_t n = buf ? fread(buf, 1, MAX_GENAI_BYTES, f) : 0;
        cfg = n ? cJSON_ParseWithLength(buf, n) : NULL;
        free(buf);
        fclose(f);
    }
    tport_status st = apply(mf, g, cfg);
    cJSON_Delete(cfg);
    cJSON_Delete(g);
    return st;
}

#endif
