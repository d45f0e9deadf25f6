/* Sessions on disk: tport_session_save writes the tokens and their KV
 * cache (format: session_file.h), tport_session_load puts them back, for
 * the same model only (tport_model_identity).  The caches are read and
 * written through small graphs (get_rows out, cpy in), so a cache in a
 * device's memory is saved and loaded the same way as one in host memory.
 * Reading an f16 cache through get_rows gives f32 values that convert back
 * to the same f16 bits: the file holds the cache exactly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/fp16.h"
#include "core/tensor.h"
#include "model/arch/arch.h"
#include "model/session.h"
#include "model/session_file.h"

static bool little_endian(void) {
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static tport_status check_session(const tport_session *s, const char *what, const char *path) {
    if (!s || !path)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_%s: no session or path", what);
    const tport_model *m = s->m;
    if (m->layer_begin != 0 || m->layer_end != m->sh.n_layer || !m->has_embedding || !m->has_head)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "session_%s: not for a pipeline stage", what);
    if (m->sh.n_swa > 0)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "session_%s: %s's sliding-window layers keep their caches "
                           "as rings; session files do not hold them yet", what, m->arch->name);
    if (!little_endian())
        return tport_error(TPORT_STATUS_UNSUPPORTED, "session_%s: session files are little-endian; this host "
                           "is not", what);
    return TPORT_STATUS_OK;
}

/* The n positions of layer il's K (V with value) as f32 rows, read by a
 * graph into out ([head_dim * n_head_kv * n] floats). */
static tport_status read_rows(const tport_session *s, int32_t il, bool value, int32_t n, int32_t *ids,
                              float *out) {
    const tport_model_shape *sh = &s->m->sh;
    int64_t hd = sh->head_dim, nkv = sh->n_head_kv;
    size_t n_ids = (size_t)n * (size_t)nkv;
    for (size_t i = 0; i < n_ids; i++)
        ids[i] = (int32_t)i;
    tport_ctx *ctx = tport_ctx_new(0);
    tport_graph *g = ctx ? tport_graph_new(ctx) : NULL;
    tport_tensor *c = g ? tport_session_cache_leaf(ctx, s, il, value) : NULL;
    tport_tensor *t_ids = c ? tport_new_tensor_1d(ctx, TPORT_TYPE_I32, (int64_t)n_ids) : NULL;
    tport_tensor *rows = NULL;
    if (t_ids) {
        tport_tensor_set_data(t_ids, ids);
        const int64_t ne[2] = {hd, nkv * (int64_t)s->n_ctx};
        rows = tport_get_rows(ctx, tport_view(ctx, c, 2, ne, NULL, 0), t_ids);
    }
    tport_status st = rows ? tport_graph_add(g, rows) : TPORT_STATUS_ERROR;
    if (!st)
        st = tport_session_compute(s, g);
    const float *data = st ? NULL : tport_tensor_data(rows);
    if (data)
        memcpy(out, data, n_ids * (size_t)hd * sizeof *out);
    else if (!st)
        st = tport_error(TPORT_STATUS_ERROR, "session_save: reading the cache gave no data");
    tport_graph_free(g);
    tport_ctx_free(ctx);
    return st;
}

static tport_status write_all(FILE *f, uint64_t *h, const void *p, size_t n, const char *path) {
    *h = tport_fnv64(*h, p, n);
    if (n && fwrite(p, 1, n, f) != n)
        return tport_error(TPORT_STATUS_IO, "session_save: writing %s failed", path);
    return TPORT_STATUS_OK;
}

tport_status tport_session_save(const tport_session *s, const char *path) {
    tport_status st = check_session(s, "save", path);
    if (st)
        return st;
    const tport_model_shape *sh = &s->m->sh;
    int32_t n = s->pos;
    size_t n_elems = (size_t)n * (size_t)sh->n_head_kv * (size_t)sh->head_dim;
    bool f16 = s->kv_type == TPORT_TYPE_F16;
    uint8_t head[TPORT_SESSION_FILE_HEADER] = {0};
    memcpy(head, "TPSESSN", 8);
    tport_put_u32(head + 8, TPORT_SESSION_FILE_VERSION);
    tport_put_u32(head + 12, TPORT_SESSION_FILE_HEADER);
    tport_put_u64(head + 16, tport_model_identity(s->m));
    tport_put_u32(head + 24, (uint32_t)sh->n_layer);
    tport_put_u32(head + 28, (uint32_t)sh->n_head_kv);
    tport_put_u32(head + 32, (uint32_t)sh->head_dim);
    tport_put_u32(head + 36, (uint32_t)s->kv_type);
    tport_put_u32(head + 40, (uint32_t)n);
    tport_put_u32(head + 44, (uint32_t)s->n_ctx);

    size_t tmp_len = strlen(path) + 16;
    char *tmp = malloc(tmp_len);
    float *rows = malloc((n_elems ? n_elems : 1) * sizeof *rows);
    uint16_t *half = f16 ? malloc((n_elems ? n_elems : 1) * sizeof *half) : NULL;
    int32_t *ids = malloc(((size_t)n * (size_t)sh->n_head_kv + 1) * sizeof *ids);
    uint8_t *toks = malloc(4 * (size_t)n + 1);
    if (!tmp || !rows || (f16 && !half) || !ids || !toks) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_save: out of memory");
        goto out;
    }
    snprintf(tmp, tmp_len, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        st = tport_error(TPORT_STATUS_IO, "session_save: cannot create %s", tmp);
        goto out;
    }
    uint64_t h = TPORT_FNV64_INIT;
    for (int32_t i = 0; i < n; i++)
        tport_put_u32(toks + 4 * (size_t)i, (uint32_t)s->history[i]);
    st = write_all(f, &h, head, sizeof head, path);
    if (!st)
        st = write_all(f, &h, toks, 4 * (size_t)n, path);
    for (int32_t il = 0; il < sh->n_layer && !st && n; il++)
        for (int value = 0; value < 2 && !st; value++) {
            st = read_rows(s, il, value, n, ids, rows);
            if (st)
                break;
            if (f16)
                for (size_t i = 0; i < n_elems; i++)
                    half[i] = tport_fp32_to_fp16(rows[i]);
            st = write_all(f, &h, f16 ? (const void *)half : (const void *)rows,
                           n_elems * (f16 ? sizeof *half : sizeof *rows), path);
        }
    uint8_t sum[8];
    tport_put_u64(sum, h);
    if (!st)
        st = write_all(f, &h, sum, sizeof sum, path);
    if (fclose(f) && !st)
        st = tport_error(TPORT_STATUS_IO, "session_save: writing %s failed", tmp);
    if (!st && rename(tmp, path))
        st = tport_error(TPORT_STATUS_IO, "session_save: cannot rename %s to %s", tmp, path);
    if (st)
        remove(tmp);
out:
    free(tmp);
    free(rows);
    free(half);
    free(ids);
    free(toks);
    return st;
}

/* The file into memory, refusing one larger than max bytes unread. */
static tport_status read_file(const char *path, size_t max, uint8_t **buf, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return tport_error(TPORT_STATUS_IO, "session_load: cannot open %s", path);
    tport_status st = TPORT_STATUS_OK;
    long size = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET))
        st = tport_error(TPORT_STATUS_IO, "session_load: cannot read %s", path);
    else if ((unsigned long)size > max)
        st = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: %ld bytes: larger than a session of this model and "
                         "context can be (%zu bytes)", path, size, max);
    else if (!(*buf = malloc((size_t)size ? (size_t)size : 1)))
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_load: out of memory");
    else if (fread(*buf, 1, (size_t)size, f) != (size_t)size)
        st = tport_error(TPORT_STATUS_IO, "session_load: cannot read %s", path);
    *len = (size_t)(size > 0 ? size : 0);
    fclose(f);
    if (st) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

/* Copies the file's caches (in its type) into the session's (in its own)
 * with one graph of cpy nodes. */
static tport_status write_caches(tport_session *s, const tport_session_file *sf) {
    const tport_model_shape *sh = &s->m->sh;
    int64_t hd = sh->head_dim, nkv = sh->n_head_kv, n = sf->n_tokens;
    tport_ctx *ctx = tport_ctx_new(0);
    tport_graph *g = ctx ? tport_graph_new(ctx) : NULL;
    tport_status st = g ? TPORT_STATUS_OK : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "session_load: out of memory");
    for (int32_t il = 0; il < sh->n_layer && !st; il++)
        for (int value = 0; value < 2 && !st; value++) {
            tport_tensor *c = tport_session_cache_leaf(ctx, s, il, value);
            tport_tensor *src = tport_new_tensor_3d(ctx, sf->kv_type, hd, nkv, n);
            if (!c || !src) {
                st = TPORT_STATUS_ERROR;
                break;
            }
            /* the file's bytes are read-only here: cpy only reads its source */
            tport_tensor_set_data(src, (void *)(sf->kv + ((size_t)il * 2 + (size_t)value) * sf->row_bytes * (size_t)n));
            size_t f = tport_type_block_bytes(c->type);
            const int64_t ne[3] = {hd, nkv, n};
            const size_t nb[3] = {f, (size_t)hd * f, (size_t)(hd * nkv) * f};
            st = tport_graph_add(g, tport_cpy(ctx, src, tport_view(ctx, c, 3, ne, nb, 0)));
        }
    if (!st)
        st = tport_session_compute(s, g);
    tport_graph_free(g);
    tport_ctx_free(ctx);
    return st;
}

tport_status tport_session_load(tport_session *s, const char *path) {
    tport_status st = check_session(s, "load", path);
    if (st)
        return st;
    const tport_model_shape *sh = &s->m->sh;
    size_t row = (size_t)sh->n_head_kv * (size_t)sh->head_dim * sizeof(float);
    size_t max = TPORT_SESSION_FILE_HEADER + 8 + (size_t)s->n_ctx * (4 + 2 * row * (size_t)sh->n_layer);
    uint8_t *buf = NULL;
    size_t len = 0;
    tport_session_file sf;
    /* a file too large for this context is refused before it is read,
     * saying so when its header says why */
    uint8_t head[TPORT_SESSION_FILE_HEADER];
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    uint32_t n_saved = got == sizeof head && !memcmp(head, "TPSESSN", 8)
                           ? (uint32_t)head[40] | (uint32_t)head[41] << 8 | (uint32_t)head[42] << 16 |
                                 (uint32_t)head[43] << 24
                           : 0;
    if (n_saved > (uint32_t)s->n_ctx)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_load: %s holds %u tokens; the session's "
                           "context is %d", path, (unsigned)n_saved, (int)s->n_ctx);
    st = read_file(path, max, &buf, &len);
    if (!st)
        st = tport_session_file_parse(buf, len, path, &sf);
    uint64_t id = tport_model_identity(s->m);
    if (!st && sf.model_id != id) {
        const char *name = tport_model_meta_str(s->m, "general.name");
        st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_load: %s was saved with another model "
                         "(identity %016llx; this model, %s%s%s, is %016llx)", path,
                         (unsigned long long)sf.model_id, s->m->file->path, name ? " " : "", name ? name : "",
                         (unsigned long long)id);
    }
    if (!st && (sf.n_layer != (uint32_t)sh->n_layer || sf.n_head_kv != (uint32_t)sh->n_head_kv ||
                sf.head_dim != (uint32_t)sh->head_dim))
        st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_load: %s: the cache's shape is not this model's",
                         path);
    if (!st && sf.n_tokens > (uint32_t)s->n_ctx)
        st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_load: %s holds %u tokens; the session's context "
                         "is %d", path, (unsigned)sf.n_tokens, (int)s->n_ctx);
    for (uint32_t i = 0; !st && i < sf.n_tokens; i++) {
        const uint8_t *p = sf.tokens + 4 * (size_t)i;
        int32_t t = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
        if (t < 0 || t >= sh->n_vocab)
            st = tport_error(TPORT_STATUS_BAD_FORMAT, "%s: offset %zu: token id %d outside [0, %d)", path,
                             (size_t)(TPORT_SESSION_FILE_HEADER + 4 * i), (int)t, (int)sh->n_vocab);
    }
    bool wrote = !st && sf.n_tokens;
    if (wrote)
        st = write_caches(s, &sf);
    if (st == TPORT_STATUS_OK) {
        for (uint32_t i = 0; i < sf.n_tokens; i++) {
            const uint8_t *p = sf.tokens + 4 * (size_t)i;
            s->history[i] = (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                                      (uint32_t)p[3] << 24);
        }
        s->pos = (int32_t)sf.n_tokens;
        s->have_logits = false;
    } else if (wrote) {
        s->pos = 0; /* the caches may be half written: what they held is lost */
        s->have_logits = false;
    }
    free(buf);
    return st;
}
