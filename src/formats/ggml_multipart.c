/* Multi-part GGML/GGMF llama files (formats.md 1.7): llama.cpp from
 * 2023-03-11 to 03-29 split 13B/30B/65B models into FNAME, FNAME.1, ...
 * Every part repeats the header and vocabulary; 1-D tensors are repeated;
 * token_embd, attn_output and ffn_down are split by columns (ne[0]), every
 * other 2-D tensor by rows (ne[1]).  Like llama.cpp's loader, the number
 * of parts is n_embd / ne[0] of token_embd; the parts are read as one
 * model by concatenating each tensor's slices into owned memory. */
#include <stdio.h>
#include <string.h>

#include "formats/mf_internal.h"

#define MAX_PARTS 64

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

static bool split_by_columns(const char *name) {
    return !strcmp(name, "token_embd.weight") || ends_with(name, ".attn_output.weight") ||
           ends_with(name, ".ffn_down.weight");
}

/* Tensor i of every part -> one tensor in owned memory (or part 0's data
 * for tensors every part repeats). */
static tport_status merge_tensor(tport_model_file *mf, const mf_cursor *c, tport_model_file **parts, uint32_t n,
                                 int i) {
    tport_mf_tensor *t = &mf->tensors[i];
    for (uint32_t p = 1; p < n; p++) {
        const tport_mf_tensor *q = &parts[p]->tensors[i];
        if (strcmp(q->name, t->name) || q->type != t->type || q->n_dims != t->n_dims ||
            memcmp(q->ne, t->ne, sizeof t->ne) || q->nbytes != t->nbytes)
            return mf_fail(c, t->offset, "part %u of %u: tensor %d is '%.64s' with another type or shape than "
                           "'%.64s' in part 0", p, n, i, q->name, t->name);
    }
    if (t->n_dims != 2)
        return TPORT_STATUS_OK; /* repeated in every part */
    bool by_cols = split_by_columns(t->name);
    int64_t ne[4] = {t->ne[0], t->ne[1], 1, 1};
    uint64_t merged, total;
    if (by_cols)
        ne[0] *= (int64_t)n;
    else
        ne[1] *= (int64_t)n;
    MF_TRY(mf_tensor_bytes(c, t->offset, t->type, 2, ne, &merged));
    if (!mf_mul_u64(t->nbytes, n, &total) || total != merged || merged > SIZE_MAX)
        return mf_fail(c, t->offset, "tensor '%.64s': %u parts of %llu bytes do not make a [%lld, %lld] tensor",
                       t->name, n, (unsigned long long)t->nbytes, (long long)ne[0], (long long)ne[1]);
    uint8_t *dst = mf_alloc(mf, (size_t)merged);
    if (!dst)
        return TPORT_STATUS_OUT_OF_MEMORY;
    if (by_cols) {
        uint64_t rows = (uint64_t)t->ne[1], slice = t->nbytes / rows;
        for (uint64_t r = 0; r < rows; r++)
            for (uint32_t p = 0; p < n; p++)
                memcpy(dst + (r * n + p) * slice, (const uint8_t *)parts[p]->tensors[i].data + r * slice,
                       (size_t)slice);
    } else {
        for (uint32_t p = 0; p < n; p++)
            memcpy(dst + p * t->nbytes, parts[p]->tensors[i].data, (size_t)t->nbytes);
    }
    memcpy(t->ne, ne, sizeof ne);
    t->nbytes = merged;
    t->data = dst;
    return TPORT_STATUS_OK;
}

static tport_status check_part(const tport_model_file *mf, const mf_cursor *c, const tport_model_file *part,
                               uint32_t p, uint32_t n) {
    if (part->container != mf->container || part->version != mf->version || part->file_type != mf->file_type ||
        part->vocab.n_tokens != mf->vocab.n_tokens || part->n_tensors != mf->n_tensors)
        return mf_fail(c, 0, "part %u of %u (%s) has another header or tensor count than part 0", p, n, part->path);
    return TPORT_STATUS_OK;
}

tport_status mf_merge_parts(tport_model_file *mf, const mf_cursor *c, uint32_t n_embd) {
    const tport_mf_tensor *tok = tport_model_file_find(mf, "token_embd.weight");
    if (mf->part_only || !tok || tok->n_dims != 2 || tok->ne[0] == (int64_t)n_embd)
        return TPORT_STATUS_OK;
    if (tok->ne[0] <= 0 || n_embd % (uint64_t)tok->ne[0] || n_embd / (uint64_t)tok->ne[0] > MAX_PARTS)
        return mf_fail(c, 0, "token_embd has %lld columns, which does not divide n_embd %u into parts",
                       (long long)tok->ne[0], n_embd);
    uint32_t n = (uint32_t)(n_embd / (uint64_t)tok->ne[0]);
    if (mf->container == TPORT_CONTAINER_GGJT)
        return mf_fail(c, 0, "token_embd has %lld columns but n_embd is %u: GGJT files are never split into parts",
                       (long long)tok->ne[0], n_embd);
    if (mf->borrowed)
        return mf_fail(c, 0, "part 0 of a %u-part model: the other parts cannot be read from memory", n);
    tport_model_file *parts[MAX_PARTS] = {mf};
    tport_status s = TPORT_STATUS_OK;
    for (uint32_t p = 1; p < n && !s; p++) {
        char path[4096];
        snprintf(path, sizeof path, "%s.%u", mf->path, p);
        s = mf_open_part(path, &parts[p]);
        if (s)
            s = tport_error(s, "%s: part 0 of a %u-part model; part %u: %s", mf->path, n, p, tport_last_error());
        else
            s = check_part(mf, c, parts[p], p, n);
    }
    for (int i = 0; i < mf->n_tensors && !s; i++)
        s = merge_tensor(mf, c, parts, n, i);
    for (uint32_t p = 1; p < n; p++)
        tport_model_file_close(parts[p]);
    if (s)
        return s;
    mf->n_parts = n;
    size_t len = strlen(mf->notes);
    snprintf(mf->notes + len, sizeof mf->notes - len, "%sa %u-part model (%s, %s.1, ...) read as one", len ? "; " : "",
             n, mf->path, mf->path);
    return TPORT_STATUS_OK;
}
