/* Graph splits as ggml graphs: translated once per graph key and kept,
 * with their ggml context and the allocation of their helper tensors.
 * A graph of the same structure (every tensor's op, type, shape, strides
 * and parameters) is replayed; when only the placement of its tensors
 * changed (a new bind key, or a buffer it used was freed) the kept graph
 * is re-bound to the new (buffer, offset)s instead of being rebuilt. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tg_internal.h"

#define CACHE_SLOTS 48

typedef struct sig { /* what a built graph depends on, per tensor */
    uint64_t params;
    uint32_t op, type;
    int64_t ne[4];
    uint64_t nb[4];
    /* placement: may change without a rebuild (rebind) */
    uint64_t buffer, offset;
} sig;
#define STRUCTURE_BYTES offsetof(sig, buffer)

typedef struct entry {
    uint64_t key, used;
    struct ggml_context *ctx;
    struct ggml_cgraph *graph;
    ggml_gallocr_t alloc;
    sig *sigs;
    int32_t n_tensors, n_nodes;
    int32_t *nodes;
    /* per tport tensor: the ggml tensor placed at its (buffer, offset), or
     * NULL (computed into the graph's own allocation, or a view) */
    struct ggml_tensor **placed;
    bool stale; /* a buffer it was placed in is gone: rebind before use */
} entry;

typedef struct tg_cache {
    entry e[CACHE_SLOTS];
    uint64_t clock;
    uint64_t builds, rebinds; /* logged (TPORT_LOG=debug) for the tests */
} tg_cache;

static uint64_t fnv(const void *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
    return h;
}

static sig *signature(const tport_graph_view *g) {
    sig *s = calloc((size_t)g->n_tensors, sizeof *s);
    for (int32_t i = 0; s && i < g->n_tensors; i++) {
        const tport_tensor_view *v = tg_view(g, i);
        if (!v)
            continue;
        s[i].buffer = v->buffer, s[i].offset = v->offset, s[i].op = v->op, s[i].type = v->type;
        memcpy(s[i].ne, v->ne, sizeof s[i].ne);
        memcpy(s[i].nb, v->nb, sizeof s[i].nb);
        s[i].params = v->params ? fnv(v->params, v->params_size) : 0;
    }
    return s;
}

static void drop(entry *e) {
    if (e->alloc)
        gf.ggml_gallocr_free(e->alloc);
    if (e->ctx)
        gf.ggml_free(e->ctx);
    free(e->sigs);
    free(e->nodes);
    free(e->placed);
    memset(e, 0, sizeof *e);
}

void tg_forget(tg_dev *d, uint64_t key) {
    if (!d->cache)
        return;
    tg_settle(d);
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (d->cache->e[i].ctx && (key == 0 || d->cache->e[i].key == key))
            drop(&d->cache->e[i]);
    if (key == 0) {
        free(d->cache);
        d->cache = NULL;
    }
}

void tg_unbind(tg_dev *d, tport_buffer h) {
    for (int i = 0; d->cache && i < CACHE_SLOTS; i++) {
        entry *e = &d->cache->e[i];
        for (int32_t k = 0; e->ctx && !e->stale && k < e->n_tensors; k++)
            if (e->placed[k] && e->sigs[k].buffer == h)
                e->stale = true;
    }
}

static struct ggml_context *new_ctx(int32_t n_tensors, size_t graph_size) {
    struct ggml_init_params ip = {
        .mem_size = gf.ggml_tensor_overhead() * ((size_t)n_tensors * 4 + 16) +
                    gf.ggml_graph_overhead_custom(graph_size, false),
        .mem_buffer = NULL,
        .no_alloc = true,
    };
    return gf.ggml_init(ip);
}

static bool cpu_dev(tg_backend *be, int32_t device) {
    return gf.ggml_backend_dev_type(be->devs[device].dev) == GGML_BACKEND_DEVICE_TYPE_CPU;
}

bool tg_supports(tg_backend *be, int32_t device, const tport_graph_view *g, int32_t node) {
    const tport_tensor_view *v = tg_view(g, node);
    const tport_tensor_view *w = v && v->src[0] >= 0 ? tg_view(g, v->src[0]) : NULL;
    if (!v || v->op == TPORT_OP_NONE || tg_op_skipped(v->op, w ? w->type : v->type))
        return false;
    /* the node alone: its sources are leaves of this small graph */
    int32_t one[1] = {node};
    tport_graph_view single = *g;
    single.struct_size = sizeof single < g->struct_size ? (uint32_t)sizeof single : g->struct_size;
    single.nodes = one, single.n_nodes = 1;
    struct ggml_tensor **t = calloc((size_t)g->n_tensors, sizeof *t);
    struct ggml_context *ctx = t ? new_ctx(8, 16) : NULL;
    bool ok = false;
    if (ctx) {
        tg_build b = {.ctx = ctx, .g = &single, .t = t, .be = NULL, .device = device, .ggml_cpu = cpu_dev(be, device)};
        struct ggml_tensor *r = tg_tensor(&b, node);
        ggml_backend_dev_t dev = be->devs[device].dev;
        ok = r && gf.ggml_backend_dev_supports_op(dev, r);
        for (int i = 0; ok && i < b.n_extra; i++)
            ok = gf.ggml_backend_dev_supports_op(dev, b.extra[i]);
        gf.ggml_free(ctx);
    }
    free(t);
    return ok;
}

static bool same_structure(const sig *a, const sig *b, int32_t n) {
    for (int32_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], STRUCTURE_BYTES))
            return false;
    return true;
}

/* The cached graph for g (same key and structure), or NULL. */
static entry *lookup(tg_dev *d, const tport_graph_view *g, const sig *s) {
    if (!d->cache || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_1)
        return NULL;
    for (int i = 0; i < CACHE_SLOTS; i++) {
        entry *e = &d->cache->e[i];
        if (e->ctx && e->key == g->graph_key && e->n_tensors == g->n_tensors && e->n_nodes == g->n_nodes &&
            !memcmp(e->nodes, g->nodes, (size_t)g->n_nodes * sizeof *g->nodes) &&
            same_structure(e->sigs, s, g->n_tensors))
            return e;
    }
    return NULL;
}

/* Moves the placed tensors of a kept graph to g's (buffer, offset)s, and
 * every view of them with them.  ggml_backend_tensor_alloc lets the
 * buffer prepare the tensor as it did at build (init_tensor). */
static tport_status rebind(tg_backend *be, int32_t device, const tport_graph_view *g, entry *e) {
    for (int32_t i = 0; i < e->n_tensors; i++) {
        struct ggml_tensor *t = e->placed[i];
        if (!t)
            continue;
        const tport_tensor_view *v = tg_view(g, i);
        tg_buf *buf = v ? tg_buf_get(be, v->buffer) : NULL;
        size_t need = gf.ggml_nbytes(t);
        if (!buf || buf->device != device || v->offset > buf->size || need > buf->size - v->offset)
            return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT,
                                  "ggml: tensor '%s' is not inside a buffer of this device's memory",
                                  v && v->name ? v->name : "");
        t->buffer = NULL, t->data = NULL;
        if (gf.ggml_backend_tensor_alloc(buf->buf, t, buf->base + v->offset) != GGML_STATUS_SUCCESS)
            return tg_host->error(TPORT_STATUS_ERROR, "ggml: tensor '%s' could not be re-bound", v->name ? v->name : "");
    }
    /* a view keeps its offset into its source (ggml's views always name
     * the root tensor as view_src) */
    for (struct ggml_tensor *t = gf.ggml_get_first_tensor(e->ctx); t; t = gf.ggml_get_next_tensor(e->ctx, t))
        if (t->view_src && t->view_src->data) {
            t->data = (char *)t->view_src->data + t->view_offs;
            t->buffer = t->view_src->buffer;
        }
    return TPORT_STATUS_OK;
}

static entry *slot(tg_dev *d) {
    if (!d->cache && !(d->cache = calloc(1, sizeof *d->cache)))
        return NULL;
    entry *best = &d->cache->e[0];
    for (int i = 0; i < CACHE_SLOTS; i++) {
        entry *e = &d->cache->e[i];
        if (!e->ctx)
            return e;
        if (e->used < best->used)
            best = e;
    }
    drop(best); /* the least recently used */
    return best;
}

static tport_status build(tg_backend *be, int32_t device, const tport_graph_view *g, entry *e) {
    tg_dev *d = &be->devs[device];
    size_t graph_size = (size_t)g->n_nodes * 4 + 16;
    e->ctx = new_ctx(g->n_tensors, graph_size);
    struct ggml_tensor **t = calloc((size_t)g->n_tensors, sizeof *t);
    e->placed = calloc((size_t)g->n_tensors, sizeof *e->placed);
    if (!e->ctx || !t || !e->placed) {
        free(t);
        return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: out of host memory");
    }
    e->graph = gf.ggml_new_graph_custom(e->ctx, graph_size, false);
    tg_build b = {.ctx = e->ctx, .g = g, .t = t, .be = be, .placed = e->placed, .device = device,
                  .ggml_cpu = cpu_dev(be, device)};
    tport_status st = TPORT_STATUS_OK;
    for (int32_t k = 0; k < g->n_nodes; k++) {
        /* in the host's order: a write into the KV cache comes before the
         * attention that reads the cache through another view */
        struct ggml_tensor *r = tg_tensor(&b, g->nodes[k]);
        if (!r) {
            const tport_tensor_view *v = tg_view(g, g->nodes[k]);
            st = tg_host->error(TPORT_STATUS_UNSUPPORTED, "ggml: %s: node %d (op %u) cannot be translated",
                                d->name, (int)g->nodes[k], v ? v->op : 0u);
            break;
        }
        /* every result the host computes may be read later (a staged copy,
         * the logits): a backend must not fuse it away */
        r->flags |= GGML_TENSOR_FLAG_OUTPUT;
        gf.ggml_build_forward_expand(e->graph, r);
    }
    free(t);
    if (st != TPORT_STATUS_OK)
        return st;
    /* the helper tensors (an f16 mask) get memory of the device */
    e->alloc = gf.ggml_gallocr_new(d->buft);
    if (!e->alloc || !gf.ggml_gallocr_alloc_graph(e->alloc, e->graph))
        return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: %s: no memory for the graph's helper tensors",
                              d->name);
    return TPORT_STATUS_OK;
}

tport_status tg_compute(tg_backend *be, int32_t device, const tport_graph_view *g, bool async) {
    tg_dev *d = &be->devs[device];
    if (!g || g->n_tensors < 0 || g->n_nodes < 0 || (g->n_nodes && !g->nodes))
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: bad graph");
    if (g->n_nodes == 0)
        return TPORT_STATUS_OK;
    sig *s = signature(g);
    if (!s)
        return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: out of host memory");
    entry *e = lookup(d, g, s);
    entry scratch = {0};
    /* a graph is built or re-bound only when none of it is in flight */
    if (!e || e->stale || memcmp(e->sigs, s, (size_t)g->n_tensors * sizeof *s))
        tg_settle(d);
    if (!e) {
        bool keep = g->struct_size >= TPORT_GRAPH_VIEW_SIZE_1_1;
        e = keep ? slot(d) : NULL;
        if (!e)
            e = &scratch;
        tport_status st = build(be, device, g, e);
        if (st != TPORT_STATUS_OK) {
            drop(e);
            free(s);
            return st;
        }
        e->key = keep ? g->graph_key : 0;
        e->sigs = s, s = NULL;
        e->n_tensors = g->n_tensors, e->n_nodes = g->n_nodes;
        e->nodes = malloc((size_t)g->n_nodes * sizeof *e->nodes);
        if (!e->nodes) {
            drop(e);
            return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: out of host memory");
        }
        memcpy(e->nodes, g->nodes, (size_t)g->n_nodes * sizeof *e->nodes);
        if (d->cache && e != &scratch)
            tg_host->log(TPORT_LOG_DEBUG, "ggml: %s: graph %016llx built (%d nodes; %llu built, %llu re-bound)",
                         d->name, (unsigned long long)e->key, (int)e->n_nodes,
                         (unsigned long long)++d->cache->builds, (unsigned long long)d->cache->rebinds);
    } else if (e->stale || memcmp(e->sigs, s, (size_t)g->n_tensors * sizeof *s)) {
        tport_status st = rebind(be, device, g, e);
        if (st != TPORT_STATUS_OK) {
            drop(e); /* half re-bound: never replayed */
            free(s);
            return st;
        }
        memcpy(e->sigs, s, (size_t)g->n_tensors * sizeof *s);
        e->stale = false;
        tg_host->log(TPORT_LOG_DEBUG, "ggml: %s: graph %016llx re-bound to new buffers (%llu built, %llu re-bound)",
                     d->name, (unsigned long long)e->key, (unsigned long long)d->cache->builds,
                     (unsigned long long)++d->cache->rebinds);
    }
    free(s);
    if (d->cache)
        e->used = ++d->cache->clock;
    if (d->set_n_threads && g->n_threads > 0 && g->n_threads != d->n_threads) {
        d->set_n_threads(d->backend, g->n_threads);
        d->n_threads = g->n_threads;
    }
    /* a test of isolation (TPORT_BACKEND_ISOLATE=ggml): ggml's own abort */
    const char *fail = secure_getenv("TPORT_GGML_FAIL");
    if (fail && !strcmp(fail, "abort-compute"))
        gf.ggml_abort(__FILE__, __LINE__, "TPORT_GGML_FAIL=abort-compute");
    /* a scratch graph is freed right after: never left in flight */
    enum ggml_status gs = async && e != &scratch ? gf.ggml_backend_graph_compute_async(d->backend, e->graph)
                                                 : gf.ggml_backend_graph_compute(d->backend, e->graph);
    if (e == &scratch)
        drop(e);
    if (gs != GGML_STATUS_SUCCESS)
        return tg_host->error(gs == GGML_STATUS_ALLOC_FAILED ? TPORT_STATUS_OUT_OF_MEMORY : TPORT_STATUS_ERROR,
                              "ggml: %s: graph compute failed (ggml status %d)", d->name, (int)gs);
    return TPORT_STATUS_OK;
}
