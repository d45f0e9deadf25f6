/* Graph views in messages.  A tensor record names its memory as (region,
 * offset) in memory shared with the helper:
 *  - a tensor in one of the proxy's buffers (the 1.1 path) is named as is;
 *  - a weight in host memory (a 1.0 host) is copied once into a weight
 *    region and found again by address (with a sampled check, so a new
 *    model mapped at a freed model's address is noticed);
 *  - any other host-memory tensor is staged: the ranges a compute touches
 *    are merged (views alias: a node writing a KV-cache row and the view
 *    reading the cache must see one copy), copied into the scratch region,
 *    and the nodes' results copied back after a successful compute. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/view_srcs.h"
#include "isolate/internal.h"
#include "quant/type_table.h"

#define ALIGN 64u
#define ARENA_CHUNK ((uint64_t)64 << 20)
#define SUP_SLOTS 8192u /* supports_op answers kept (power of two) */

bool iso_extent(uint32_t type, const int64_t ne[4], const uint64_t nb[4], uint64_t *bytes) {
    const tport_type_traits *traits = tport_traits(type);
    const tport_type_info *ti = traits ? &traits->info : NULL;
    *bytes = 0;
    if (!ti || ti->block_size <= 0 || ti->block_bytes == 0)
        return false;
    for (int d = 0; d < 4; d++) {
        if (ne[d] < 0)
            return false;
        if (ne[d] == 0)
            return true;
    }
    if (ne[0] % ti->block_size)
        return false;
    uint64_t last = 0, term;
    uint64_t blocks = (uint64_t)(ne[0] / ti->block_size);
    if (__builtin_mul_overflow(blocks - 1, nb[0], &term) || __builtin_add_overflow(last, term, &last))
        return false;
    for (int d = 1; d < 4; d++)
        if (__builtin_mul_overflow((uint64_t)(ne[d] - 1), nb[d], &term) || __builtin_add_overflow(last, term, &last))
            return false;
    return !__builtin_add_overflow(last, ti->block_bytes, bytes);
}

/* ---- small helpers ------------------------------------------------------- */
static bool grow(void **p, uint32_t *cap, uint32_t need, size_t elem) {
    if (need <= *cap)
        return true;
    uint32_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, (size_t)c * elem);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static bool bytes_reserve(iso_bytes *b, size_t n) {
    if (n <= b->cap)
        return true;
    size_t c = b->cap ? b->cap : 4096;
    while (c < n)
        c *= 2;
    unsigned char *q = realloc(b->p, c);
    if (!q)
        return false;
    b->p = q;
    b->cap = c;
    return true;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *s = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}
#define FNV0 0xcbf29ce484222325ull

static bool view_has_buffer(const tport_tensor_view *t) {
    return t->struct_size >= TPORT_TENSOR_VIEW_SIZE_1_1 && t->buffer != 0;
}

/* ---- collecting the tensors a call needs ---------------------------------- */
/* Makes remap/order/is_node hold n_tensors entries and forgets the marks
 * of the previous call (only those: supports_op is asked node by node, so
 * a pass over every tensor per call would be quadratic per graph). */
static tport_status prepare(iso_proxy *p, int32_t n_tensors) {
    if (n_tensors < 0 || n_tensors > ISO_MAX_TENSORS)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: a graph of %d tensors", p->name,
                           (int)n_tensors);
    for (int32_t i = 0; i < p->n_marked; i++) {
        p->remap[p->order[i]] = -1;
        p->is_node[p->order[i]] = 0;
    }
    p->n_marked = 0;
    if ((uint32_t)n_tensors > p->remap_cap) {
        uint32_t cap = p->remap_cap ? p->remap_cap : 256;
        while (cap < (uint32_t)n_tensors)
            cap *= 2;
        int32_t *a = realloc(p->remap, cap * sizeof *a);
        if (a)
            p->remap = a;
        int32_t *b = realloc(p->order, cap * sizeof *b);
        if (b)
            p->order = b;
        uint8_t *c = realloc(p->is_node, cap);
        if (c)
            p->is_node = c;
        if (!a || !b || !c)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (uint32_t i = p->remap_cap; i < cap; i++) {
            p->remap[i] = -1;
            p->is_node[i] = 0;
        }
        p->remap_cap = cap;
    }
    return TPORT_STATUS_OK;
}

/* The status to return after iso_region_new failed. */
static tport_status region_failed(const iso_proxy *p) {
    return p->lost ? TPORT_STATUS_DEVICE_LOST : TPORT_STATUS_OUT_OF_MEMORY;
}

static int32_t mark(iso_proxy *p, int32_t idx, int32_t *count) {
    if (p->remap[idx] < 0) {
        p->order[*count] = idx;
        p->remap[idx] = (*count)++;
        p->n_marked = *count;
    }
    return p->remap[idx];
}

/* Marks node idx and its sources; false if an index is out of range. */
static bool mark_node(iso_proxy *p, const tport_graph_view *g, int32_t idx, int32_t *count) {
    if (idx < 0 || idx >= g->n_tensors || !g->tensors[idx])
        return false;
    mark(p, idx, count);
    p->is_node[idx] = 1;
    const tport_tensor_view *t = g->tensors[idx];
    for (int s = 0; s < TPORT_CORE_MAX_SRC; s++) {
        int32_t src = tport_view_src(t, s);
        if (src < 0)
            continue;
        if (src >= g->n_tensors || !g->tensors[src])
            return false;
        mark(p, src, count);
    }
    return true;
}

/* ---- writing records ------------------------------------------------------ */
typedef struct iso_loc {
    uint32_t region;
    uint64_t offset;
} iso_loc;

static tport_status begin(iso_proxy *p, int32_t n_tensors, int32_t n_nodes) {
    size_t need = sizeof(iso_graph) + (size_t)n_tensors * sizeof(iso_tensor) + (size_t)n_nodes * sizeof(int32_t);
    if (!bytes_reserve(&p->enc, need))
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    p->enc.len = need;
    p->blob.len = 0;
    return TPORT_STATUS_OK;
}

static tport_status put_tensor(iso_proxy *p, int32_t at, const tport_tensor_view *t, iso_loc loc) {
    iso_tensor r = {.op = t->op, .type = t->type, .region = loc.region, .offset = loc.offset, .flags = t->flags};
    for (int s = 0; s < TPORT_CORE_MAX_SRC; s++)
        r.src[s] = tport_view_src(t, s) >= 0 ? p->remap[tport_view_src(t, s)] : -1;
    memcpy(r.ne, t->ne, sizeof r.ne);
    memcpy(r.nb, t->nb, sizeof r.nb);
    uint32_t psize = t->params ? t->params_size : 0;
    if (psize > ISO_PARAMS_MAX)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "isolated %s: a parameter block of %u bytes (limit %u)", p->name,
                           psize, ISO_PARAMS_MAX);
    size_t nlen = t->name ? strnlen(t->name, ISO_NAME_MAX - 1) : 0;
    if (!bytes_reserve(&p->blob, p->blob.len + psize + nlen))
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    r.params_off = (uint32_t)p->blob.len;
    r.params_size = psize;
    if (psize)
        memcpy(p->blob.p + p->blob.len, t->params, psize);
    p->blob.len += psize;
    r.name_off = (uint32_t)p->blob.len;
    r.name_len = (uint32_t)nlen;
    if (nlen)
        memcpy(p->blob.p + p->blob.len, t->name, nlen);
    p->blob.len += nlen;
    memcpy(p->enc.p + sizeof(iso_graph) + (size_t)at * sizeof(iso_tensor), &r, sizeof r);
    return TPORT_STATUS_OK;
}

static tport_status finish(iso_proxy *p, int32_t n_tensors, const int32_t *nodes, int32_t n_nodes, int32_t threads) {
    iso_graph h = {.n_tensors = n_tensors, .n_nodes = n_nodes, .n_threads = threads, .blob_size = (uint32_t)p->blob.len};
    memcpy(p->enc.p, &h, sizeof h);
    unsigned char *np = p->enc.p + sizeof h + (size_t)n_tensors * sizeof(iso_tensor);
    for (int32_t i = 0; i < n_nodes; i++) {
        int32_t v = p->remap[nodes[i]];
        memcpy(np + (size_t)i * sizeof v, &v, sizeof v);
    }
    if (!bytes_reserve(&p->enc, p->enc.len + p->blob.len))
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (p->blob.len)
        memcpy(p->enc.p + p->enc.len, p->blob.p, p->blob.len);
    p->enc.len += p->blob.len;
    return TPORT_STATUS_OK;
}

/* (region, offset) of a tensor in one of our buffers; checks the range. */
static tport_status buffer_loc(iso_proxy *p, const tport_tensor_view *t, iso_loc *loc) {
    iso_region *r = iso_region_get(p, t->buffer);
    uint64_t ext;
    if (!r)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: tensor '%.40s' names buffer %llu, not one of ours",
                           p->name, t->name ? t->name : "", (unsigned long long)t->buffer);
    if (!iso_extent(t->type, t->ne, t->nb, &ext) || t->offset > r->size || ext > r->size - t->offset)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: tensor '%.40s' lies outside its buffer",
                           p->name, t->name ? t->name : "");
    if (r->deferred && !iso_region_make_writable(p, (uint32_t)t->buffer)) /* read before written: zeros */
        return p->lost ? TPORT_STATUS_DEVICE_LOST : TPORT_STATUS_OUT_OF_MEMORY;
    loc->region = (uint32_t)t->buffer;
    loc->offset = t->offset;
    return TPORT_STATUS_OK;
}

/* ---- supports_op ---------------------------------------------------------- */
static uint64_t structure_hash(uint64_t h, const tport_tensor_view *t) {
    h = fnv(h, &t->op, sizeof t->op);
    h = fnv(h, &t->type, sizeof t->type);
    h = fnv(h, t->ne, sizeof t->ne);
    h = fnv(h, t->nb, sizeof t->nb);
    h = fnv(h, &t->flags, sizeof t->flags);
    uint64_t where = view_has_buffer(t) ? (t->offset & 63) | 0x100 : ((uintptr_t)t->data & 63) | (t->data ? 0x200 : 0);
    h = fnv(h, &where, sizeof where);
    if (t->params && t->params_size)
        h = fnv(h, t->params, t->params_size < ISO_PARAMS_MAX ? t->params_size : ISO_PARAMS_MAX);
    return h;
}

tport_status iso_supports_key(iso_proxy *p, const tport_graph_view *g, int32_t node, uint64_t *key) {
    tport_status st = prepare(p, g->n_tensors);
    if (st)
        return st;
    int32_t n = 0;
    if (!mark_node(p, g, node, &n))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "supports_op: node %d out of range", (int)node);
    uint64_t h = FNV0;
    for (int32_t i = 0; i < n; i++)
        h = structure_hash(h, g->tensors[p->order[i]]);
    const tport_tensor_view *t = g->tensors[node];
    for (int s = 0; s < TPORT_CORE_MAX_SRC; s++)
        h = fnv(h, &(int32_t){tport_view_src(t, s) >= 0 ? p->remap[tport_view_src(t, s)] : -1}, sizeof(int32_t));
    *key = h ? h : 1;
    return TPORT_STATUS_OK;
}

tport_status iso_encode_supports(iso_proxy *p, const tport_graph_view *g, int32_t node) {
    const int32_t n = p->n_marked; /* marked by iso_supports_key */
    tport_status st = begin(p, n, 1);
    if (st)
        return st;
    for (int32_t i = 0; i < n; i++) {
        const tport_tensor_view *v = g->tensors[p->order[i]];
        iso_loc loc = {0, (uintptr_t)v->data & 63};
        if (view_has_buffer(v) && buffer_loc(p, v, &loc) != TPORT_STATUS_OK)
            loc = (iso_loc){0, v->offset & 63};
        if ((st = put_tensor(p, i, v, loc)))
            return st;
    }
    return finish(p, n, &node, 1, g->n_threads > 0 ? g->n_threads : 1);
}

/* ---- weights of a 1.0 host ------------------------------------------------ */
static uint64_t sample(const unsigned char *s, uint64_t n) {
    uint64_t h = fnv(FNV0, &n, sizeof n);
    const uint64_t piece = n < 32 ? n : 32;
    for (int k = 0; k < 8; k++) {
        uint64_t at = n > piece ? (n - piece) / 7 * (uint64_t)k : 0;
        h = fnv(h, s + at, (size_t)piece);
    }
    return h;
}

static tport_status weight_loc(iso_proxy *p, const tport_tensor_view *t, uint64_t ext, iso_loc *loc) {
    if (p->weights_n * 2 + 2 > p->weights_cap) { /* rehash at half load */
        uint32_t cap = p->weights_cap ? p->weights_cap * 2 : 1024;
        iso_weight *w = calloc(cap, sizeof *w);
        if (!w)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        for (uint32_t i = 0; i < p->weights_cap; i++) {
            if (!p->weights[i].ptr)
                continue;
            uint32_t j = (uint32_t)(fnv(FNV0, &p->weights[i].ptr, sizeof(uintptr_t)) & (cap - 1));
            while (w[j].ptr)
                j = (j + 1) & (cap - 1);
            w[j] = p->weights[i];
        }
        free(p->weights);
        p->weights = w;
        p->weights_cap = cap;
    }
    const uintptr_t ptr = (uintptr_t)t->data;
    const uint64_t smp = sample(t->data, ext);
    uint32_t j = (uint32_t)(fnv(FNV0, &ptr, sizeof ptr) & (p->weights_cap - 1));
    while (p->weights[j].ptr && !(p->weights[j].ptr == ptr && p->weights[j].extent == ext))
        j = (j + 1) & (p->weights_cap - 1);
    iso_weight *w = &p->weights[j];
    if (w->ptr && w->sample == smp) {
        *loc = (iso_loc){w->region, w->offset};
        return TPORT_STATUS_OK;
    }
    if (!w->ptr) { /* a new weight: a place in the current chunk, or a new chunk */
        iso_region *a = iso_region_get(p, p->arena);
        uint64_t off = ((p->arena_used + ALIGN - 1) & ~(uint64_t)(ALIGN - 1)) + (ptr & (ALIGN - 1));
        if (!a || !a->base || off + ext > a->size) {
            uint64_t size = ext + ALIGN > ARENA_CHUNK ? ext + ALIGN : ARENA_CHUNK;
            uint32_t id = iso_region_new(p, size, true);
            if (!id)
                return region_failed(p);
            p->arena = id;
            off = ptr & (ALIGN - 1);
        }
        *w = (iso_weight){.ptr = ptr, .extent = ext, .region = p->arena, .offset = off};
        p->arena_used = off + ext;
        p->weights_n++;
    }
    iso_region *r = iso_region_get(p, w->region);
    if (!r || !r->base)
        return tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s was lost", p->name);
    memcpy(r->base + w->offset, t->data, (size_t)ext); /* once per weight (again if it changed) */
    w->sample = smp;
    *loc = (iso_loc){w->region, w->offset};
    return TPORT_STATUS_OK;
}

/* ---- staging of other host memory ------------------------------------------ */
static int by_start(const void *a, const void *b) {
    const iso_span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static const iso_span *find_span(const iso_proxy *p, uintptr_t at) {
    uint32_t lo = 0, hi = p->spans_n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (p->spans[mid].end <= at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->spans_n && p->spans[lo].start <= at ? &p->spans[lo] : NULL;
}

/* Merges the collected ranges and copies them into the scratch region. */
static tport_status stage_in(iso_proxy *p) {
    if (!p->spans_n)
        return TPORT_STATUS_OK;
    qsort(p->spans, p->spans_n, sizeof *p->spans, by_start);
    uint32_t k = 0;
    for (uint32_t i = 1; i < p->spans_n; i++) {
        if (p->spans[i].start < p->spans[k].end) {
            if (p->spans[i].end > p->spans[k].end)
                p->spans[k].end = p->spans[i].end;
        } else {
            p->spans[++k] = p->spans[i];
        }
    }
    p->spans_n = k + 1;
    uint64_t total = 0;
    for (uint32_t i = 0; i < p->spans_n; i++) {
        /* keep each address's alignment modulo 64, which a kernel may rely on */
        total = ((total + ALIGN - 1) & ~(uint64_t)(ALIGN - 1)) + (p->spans[i].start & (ALIGN - 1));
        p->spans[i].offset = total;
        total += p->spans[i].end - p->spans[i].start;
    }
    iso_region *s = iso_region_get(p, p->scratch);
    if (!s || !s->base || s->size < total) {
        if (p->scratch)
            iso_region_free(p, p->scratch);
        p->scratch = 0;
        uint64_t want = total + total / 4 > ((uint64_t)1 << 20) ? total + total / 4 : (uint64_t)1 << 20;
        uint32_t id = iso_region_new(p, want, false);
        if (!id)
            return region_failed(p);
        p->scratch = id;
        s = iso_region_get(p, id);
    }
    for (uint32_t i = 0; i < p->spans_n; i++)
        memcpy(s->base + p->spans[i].offset, (const void *)p->spans[i].start,
               (size_t)(p->spans[i].end - p->spans[i].start));
    return TPORT_STATUS_OK;
}

tport_status iso_encode_compute(iso_proxy *p, const tport_graph_view *g) {
    tport_status st = prepare(p, g->n_tensors);
    if (st)
        return st;
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_nodes; i++)
        if (!mark_node(p, g, g->nodes[i], &n))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: node %d out of range", p->name,
                               (int)g->nodes[i]);
    /* where each tensor lives; host ranges collected first, placed after */
    p->spans_n = p->backs_n = 0;
    for (int32_t i = 0; i < n; i++) {
        const tport_tensor_view *t = g->tensors[p->order[i]];
        uint64_t ext;
        if (view_has_buffer(t) || !t->data)
            continue;
        if (!iso_extent(t->type, t->ne, t->nb, &ext))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "isolated %s: tensor '%.40s' of type %u has no size",
                               p->name, t->name ? t->name : "", t->type);
        if (!ext || (t->flags & TPORT_TENSOR_WEIGHT))
            continue;
        if (!grow((void **)&p->spans, &p->spans_cap, p->spans_n + 1, sizeof *p->spans))
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
        p->spans[p->spans_n++] = (iso_span){.start = (uintptr_t)t->data, .end = (uintptr_t)t->data + ext};
    }
    if ((st = stage_in(p)) || (st = begin(p, n, g->n_nodes)))
        return st;
    for (int32_t i = 0; i < n; i++) {
        const tport_tensor_view *t = g->tensors[p->order[i]];
        iso_loc loc = {0, 0};
        uint64_t ext = 0;
        if (view_has_buffer(t)) {
            st = buffer_loc(p, t, &loc);
        } else if (!t->data) {
            if (p->is_node[p->order[i]])
                st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: node '%.40s' has no memory", p->name,
                                 t->name ? t->name : "");
        } else if (iso_extent(t->type, t->ne, t->nb, &ext) && ext) {
            if (t->flags & TPORT_TENSOR_WEIGHT) {
                st = weight_loc(p, t, ext, &loc);
            } else {
                const iso_span *sp = find_span(p, (uintptr_t)t->data);
                loc = (iso_loc){p->scratch, sp->offset + ((uintptr_t)t->data - sp->start)};
                if (p->is_node[p->order[i]]) {
                    if (!grow((void **)&p->backs, &p->backs_cap, p->backs_n + 1, sizeof *p->backs))
                        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
                    p->backs[p->backs_n++] =
                        (iso_span){.start = (uintptr_t)t->data, .end = (uintptr_t)t->data + ext, .offset = loc.offset};
                }
            }
        }
        if (st || (st = put_tensor(p, i, t, loc)))
            return st;
    }
    return finish(p, n, g->nodes, g->n_nodes, g->n_threads > 0 ? g->n_threads : 1);
}

void iso_stage_copy_back(iso_proxy *p) {
    iso_region *s = iso_region_get(p, p->scratch);
    if (!s || !s->base)
        return;
    for (uint32_t i = 0; i < p->backs_n; i++)
        memcpy((void *)p->backs[i].start, s->base + p->backs[i].offset,
               (size_t)(p->backs[i].end - p->backs[i].start));
}

/* ---- the supports_op answer cache ----------------------------------------- */
int iso_supports_cached(iso_proxy *p, uint64_t key) {
    if (!p->sup_keys)
        return -1;
    uint32_t j = (uint32_t)(key & (SUP_SLOTS - 1));
    for (uint32_t k = 0; k < 16; k++, j = (j + 1) & (SUP_SLOTS - 1)) {
        if (p->sup_keys[j] == key)
            return p->sup_vals[j];
        if (!p->sup_keys[j])
            return -1;
    }
    return -1;
}

void iso_supports_store(iso_proxy *p, uint64_t key, bool yes) {
    if (!p->sup_keys) {
        p->sup_keys = calloc(SUP_SLOTS, sizeof *p->sup_keys);
        p->sup_vals = calloc(SUP_SLOTS, sizeof *p->sup_vals);
        if (!p->sup_keys || !p->sup_vals) {
            free(p->sup_keys);
            free(p->sup_vals);
            p->sup_keys = NULL;
            p->sup_vals = NULL;
            return;
        }
    }
    if (p->sup_n * 2 >= SUP_SLOTS) { /* full enough: start over */
        memset(p->sup_keys, 0, SUP_SLOTS * sizeof *p->sup_keys);
        p->sup_n = 0;
    }
    uint32_t j = (uint32_t)(key & (SUP_SLOTS - 1));
    for (uint32_t k = 0; k < 16; k++, j = (j + 1) & (SUP_SLOTS - 1)) {
        if (!p->sup_keys[j] || p->sup_keys[j] == key) {
            p->sup_n += !p->sup_keys[j];
            p->sup_keys[j] = key;
            p->sup_vals[j] = yes;
            return;
        }
    }
}
