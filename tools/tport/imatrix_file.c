/* Importance-matrix files (imatrix_file.h).  Parsed from memory with every
 * read bounds-checked, so the fuzz target can feed it anything. */
#include "imatrix_file.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "tport/tport.h"

#define MAX_FILE_BYTES ((size_t)1 << 34)
#define MAX_NAME 1024

typedef struct entry {
    char *name;
    float *w;
    int64_t n;
} entry;

struct tport_imatrix {
    entry *e;
    int n;
    char dataset[128]; /* the first dataset's name, "" if none */
    uint32_t chunks;   /* chunks it was computed on, 0 if not said */
};

/* Up to 127 bytes of a string, as llama-quantize keeps them. */
static void keep_name(char *dst, const uint8_t *src, uint64_t len) {
    const size_t n = len < 127 ? (size_t)len : 127;
    memcpy(dst, src, n);
    dst[n] = '\0';
    dst[strnlen(dst, n)] = '\0';
}

typedef struct rd {
    const uint8_t *p;
    size_t n, at;
    bool bad;
} rd;

static const uint8_t *take(rd *r, size_t k) {
    if (r->bad || k > r->n - r->at) {
        r->bad = true;
        return NULL;
    }
    const uint8_t *q = r->p + r->at;
    r->at += k;
    return q;
}
static uint32_t u32(rd *r) {
    const uint8_t *q = take(r, 4);
    return q ? (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24 : 0;
}
static uint64_t u64(rd *r) {
    const uint64_t lo = u32(r);
    return lo | (uint64_t)u32(r) << 32;
}

void tport_imatrix_free(tport_imatrix *im) {
    if (!im)
        return;
    for (int i = 0; i < im->n; i++) {
        free(im->e[i].name);
        free(im->e[i].w);
    }
    free(im->e);
    free(im);
}

const float *tport_imatrix_find(const tport_imatrix *im, const char *name, int64_t *n) {
    for (int i = 0; im && i < im->n; i++)
        if (!strcmp(im->e[i].name, name)) {
            *n = im->e[i].n;
            return im->e[i].w;
        }
    return NULL;
}

int tport_imatrix_count(const tport_imatrix *im) { return im ? im->n : 0; }
const char *tport_imatrix_dataset(const tport_imatrix *im) { return im ? im->dataset : ""; }
uint32_t tport_imatrix_chunks(const tport_imatrix *im) { return im ? im->chunks : 0; }

static entry *add(tport_imatrix *im, const char *name, size_t len, int64_t n) {
    for (int i = 0; i < im->n; i++)
        if (strlen(im->e[i].name) == len && !memcmp(im->e[i].name, name, len))
            return NULL; /* twice: refused by the caller */
    entry *e = realloc(im->e, sizeof *e * (size_t)(im->n + 1));
    if (!e)
        return NULL;
    im->e = e;
    e = &im->e[im->n];
    e->name = malloc(len + 1);
    e->w = malloc(sizeof(float) * (size_t)(n ? n : 1));
    e->n = n;
    if (!e->name || !e->w) {
        free(e->name);
        free(e->w);
        return NULL;
    }
    memcpy(e->name, name, len);
    e->name[len] = '\0';
    im->n++;
    return e;
}

/* ---- legacy .dat ----------------------------------------------------------- */
static tport_imatrix *parse_legacy(const uint8_t *buf, size_t n, const char *what) {
    rd r = {buf, n, 0, false};
    const int32_t n_entries = (int32_t)u32(&r);
    if (r.bad || n_entries < 1 || (size_t)n_entries > n / 12)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: not an imatrix file (neither GGUF nor a legacy .dat "
                           "with entries)", what), NULL;
    tport_imatrix *im = calloc(1, sizeof *im);
    if (!im)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", what), NULL;
    for (int32_t i = 0; i < n_entries; i++) {
        const int32_t len = (int32_t)u32(&r);
        const uint8_t *name = len > 0 && len <= MAX_NAME ? take(&r, (size_t)len) : NULL;
        const int32_t ncall = (int32_t)u32(&r);
        const int32_t nval = (int32_t)u32(&r);
        const uint8_t *vals = nval > 0 ? take(&r, 4 * (size_t)nval) : NULL;
        if (!name || !vals || r.bad) {
            tport_imatrix_free(im);
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: legacy imatrix entry %d is truncated or has a bad "
                               "name length or value count", what, i + 1), NULL;
        }
        if (memchr(name, 0, (size_t)len)) {
            tport_imatrix_free(im);
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: legacy imatrix entry %d: a NUL in its name", what,
                               i + 1), NULL;
        }
        entry *e = add(im, (const char *)name, (size_t)len, nval);
        if (!e) {
            tport_imatrix_free(im);
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: legacy imatrix entry %d: its name comes twice (or "
                               "out of memory)", what, i + 1), NULL;
        }
        for (int32_t k = 0; k < nval; k++) {
            float v;
            memcpy(&v, vals + 4 * (size_t)k, 4);
            /* quantize.cpp: sums / ncall with ncall an int64 made float */
            e->w[k] = ncall > 0 ? v / (float)(int64_t)ncall : v;
        }
    }
    /* optional: the chunk count and the dataset's name */
    if (r.at + 4 <= n) {
        const int32_t chunks = (int32_t)u32(&r);
        im->chunks = chunks > 0 ? (uint32_t)chunks : 0;
        const int32_t len = r.at + 4 <= n ? (int32_t)u32(&r) : 0;
        const uint8_t *name = len > 0 ? take(&r, (size_t)len) : NULL;
        if (name)
            keep_name(im->dataset, name, (uint64_t)len);
    }
    return im;
}

/* ---- GGUF ---------------------------------------------------------------- */
static bool skip_value(rd *r, uint32_t type, int depth) {
    static const uint8_t size[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (type > 12 || depth > 2)
        return false;
    if (type == 8) {
        const uint64_t len = u64(r);
        return len <= r->n && take(r, (size_t)len) != NULL;
    }
    if (type == 9) {
        const uint32_t et = u32(r);
        const uint64_t cnt = u64(r);
        if (r->bad || et > 12 || cnt > r->n)
            return false;
        for (uint64_t i = 0; i < cnt; i++)
            if (!skip_value(r, et, depth + 1))
                return false;
        return true;
    }
    return take(r, size[type]) != NULL;
}

typedef struct tinfo {
    const uint8_t *name;
    uint64_t len, nel, off;
    uint32_t type;
} tinfo;

static tport_imatrix *parse_gguf(const uint8_t *buf, size_t n, const char *what) {
    rd r = {buf, n, 4, false};
    const uint32_t version = u32(&r);
    const uint64_t n_tensors = u64(&r), n_kv = u64(&r);
    if (r.bad || version < 2 || version > 3 || n_tensors > n / 8 || n_kv > n / 8)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: GGUF header: version %u, %llu tensors, %llu keys",
                           what, version, (unsigned long long)n_tensors, (unsigned long long)n_kv), NULL;
    bool has_datasets = false, has_count = false, has_size = false;
    uint64_t alignment = 32;
    char dataset[128] = "";
    uint32_t chunks = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        const uint64_t klen = u64(&r);
        const uint8_t *key = klen <= n ? take(&r, (size_t)klen) : NULL;
        const uint32_t type = u32(&r);
        if (!key || r.bad)
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: GGUF key %llu is truncated", what,
                               (unsigned long long)i), NULL;
#define KEY_IS(s) (klen == strlen(s) && !memcmp(key, s, klen))
        has_datasets |= KEY_IS(TPORT_IMATRIX_KEY_DATASETS);
        has_count |= KEY_IS(TPORT_IMATRIX_KEY_CHUNK_COUNT);
        has_size |= KEY_IS(TPORT_IMATRIX_KEY_CHUNK_SIZE);
        if (KEY_IS(TPORT_IMATRIX_KEY_CHUNK_COUNT) && type == 4) {
            const size_t at = r.at;
            chunks = u32(&r);
            r.at = at;
        }
        if (KEY_IS(TPORT_IMATRIX_KEY_DATASETS) && type == 9) { /* the first string of the array */
            const size_t at = r.at;
            const uint32_t et = u32(&r);
            const uint64_t cnt = u64(&r), len = u64(&r);
            const uint8_t *name = et == 8 && cnt > 0 && len <= n ? take(&r, (size_t)len) : NULL;
            if (name)
                keep_name(dataset, name, len);
            r.at = at;
            r.bad = false; /* skip_value below judges the value */
        }
        if (KEY_IS("general.alignment") && type == 4) {
            const size_t at = r.at;
            alignment = u32(&r);
            r.at = at;
            if (alignment == 0 || (alignment & (alignment - 1)))
                return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: GGUF alignment %llu", what,
                                   (unsigned long long)alignment), NULL;
        }
#undef KEY_IS
        if (!skip_value(&r, type, 0))
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: GGUF key %llu has a bad or truncated value", what,
                               (unsigned long long)i), NULL;
    }
    if (!has_datasets || !has_count || !has_size)
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: missing imatrix metadata (imatrix.datasets, "
                           "imatrix.chunk_count, imatrix.chunk_size), which llama-quantize requires", what), NULL;
    tinfo *ti = calloc((size_t)(n_tensors ? n_tensors : 1), sizeof *ti);
    if (!ti)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", what), NULL;
    tport_imatrix *im = NULL;
    for (uint64_t i = 0; i < n_tensors; i++) {
        ti[i].len = u64(&r);
        ti[i].name = ti[i].len > 0 && ti[i].len <= MAX_NAME ? take(&r, (size_t)ti[i].len) : NULL;
        const uint32_t nd = u32(&r);
        ti[i].nel = 1;
        for (uint32_t d = 0; !r.bad && nd <= 4 && d < nd; d++) {
            const uint64_t ne = u64(&r);
            if (ne > ((uint64_t)1 << 40) / (ti[i].nel ? ti[i].nel : 1))
                r.bad = true;
            ti[i].nel *= ne;
        }
        ti[i].type = u32(&r);
        ti[i].off = u64(&r);
        if (!ti[i].name || nd < 1 || nd > 4 || r.bad) {
            free(ti);
            return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: GGUF tensor %llu: bad name, dimensions or shape",
                               what, (unsigned long long)i), NULL;
        }
    }
    const size_t data = (r.at + (size_t)alignment - 1) / (size_t)alignment * (size_t)alignment;
    im = calloc(1, sizeof *im);
    if (!im) {
        free(ti);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", what), NULL;
    }
    memcpy(im->dataset, dataset, sizeof dataset);
    im->chunks = chunks;
    static const char sums_sfx[] = TPORT_IMATRIX_SUMS_SUFFIX, counts_sfx[] = TPORT_IMATRIX_COUNTS_SUFFIX;
    const size_t ls = sizeof sums_sfx - 1, lc = sizeof counts_sfx - 1;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (ti[i].len <= ls || memcmp(ti[i].name + ti[i].len - ls, sums_sfx, ls))
            continue;
        const uint64_t base = ti[i].len - ls;
        const tinfo *c = NULL;
        for (uint64_t k = 0; k < n_tensors && !c; k++)
            if (ti[k].len == base + lc && !memcmp(ti[k].name, ti[i].name, base) &&
                !memcmp(ti[k].name + base, counts_sfx, lc))
                c = &ti[k];
        const char *why = NULL;
        if (!c)
            why = "has no .counts tensor";
        else if (ti[i].type != 0 || c->type != 0)
            why = "sums and counts must be F32";
        else if (c->nel == 0 || ti[i].nel % c->nel)
            why = "sums are not a whole number of rows per count";
        else if (ti[i].off > n - data || 4 * ti[i].nel > n - data - ti[i].off || c->off > n - data ||
                 4 * c->nel > n - data - c->off)
            why = "data lies outside the file";
        else if (memchr(ti[i].name, 0, (size_t)base))
            why = "a NUL in its name";
        entry *e = why ? NULL : add(im, (const char *)ti[i].name, (size_t)base, (int64_t)ti[i].nel);
        if (!why && !e)
            why = "comes twice (or out of memory)";
        if (why) {
            tport_error(TPORT_STATUS_BAD_FORMAT, "%s: imatrix entry %.*s: %s", what, (int)base,
                        (const char *)ti[i].name, why);
            tport_imatrix_free(im);
            free(ti);
            return NULL;
        }
        const uint8_t *sums = buf + data + ti[i].off, *counts = buf + data + c->off;
        const uint64_t ne0 = ti[i].nel / c->nel;
        for (uint64_t j = 0; j < c->nel; j++) {
            float cf;
            memcpy(&cf, counts + 4 * j, 4);
            /* std::lround of the stored count, made float again */
            const double rc = isfinite(cf) && fabsf(cf) < 9e18f ? round((double)cf) : 0.0;
            const float count = (float)(int64_t)rc;
            for (uint64_t k = 0; k < ne0; k++) {
                float v;
                memcpy(&v, sums + 4 * (j * ne0 + k), 4);
                e->w[j * ne0 + k] = count > 0.0f ? v / count : 1.0f;
            }
        }
    }
    free(ti);
    if (im->n == 0) {
        tport_imatrix_free(im);
        return tport_error(TPORT_STATUS_BAD_FORMAT, "%s: no imatrix entries (*.in_sum2 / *.counts)", what), NULL;
    }
    return im;
}

tport_imatrix *tport_imatrix_parse(const uint8_t *buf, size_t n, const char *what) {
    tport_imatrix *im = n >= 4 && !memcmp(buf, "GGUF", 4) ? parse_gguf(buf, n, what) : parse_legacy(buf, n, what);
    /* llama-quantize refuses non-finite weights */
    for (int i = 0; im && i < im->n; i++)
        for (int64_t k = 0; k < im->e[i].n; k++)
            if (!isfinite(im->e[i].w[k])) {
                tport_error(TPORT_STATUS_BAD_FORMAT, "%s: imatrix entry %s has a non-finite value", what,
                            im->e[i].name);
                tport_imatrix_free(im);
                return NULL;
            }
    return im;
}

tport_imatrix *tport_imatrix_load(const char *path) {
    size_t n = 0;
    uint8_t *buf = tool_read_all(path, MAX_FILE_BYTES, &n);
    if (!buf)
        return tport_error(TPORT_STATUS_IO, "imatrix %s: cannot read it", path), NULL;
    tport_imatrix *im = tport_imatrix_parse(buf, n, path);
    free(buf);
    return im;
}
