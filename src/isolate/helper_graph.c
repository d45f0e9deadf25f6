/* Graph messages to graph views, bounds-checked (helper_graph.h). */
#include "helper_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isolate/internal.h"

/* supports_op sees this for tensors whose memory stays on the host side. */
static _Alignas(64) unsigned char dummy[128];

static bool reserve(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap)
        return true;
    size_t c = *cap ? *cap : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return false;
    *p = q;
    *cap = c;
    return true;
}

static uint64_t fnv(uint64_t h, const void *data, size_t n) {
    const unsigned char *s = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

#define FAIL(...) (snprintf(why, cap, __VA_ARGS__), false)

bool helper_graph_decode(helper_graph *g, const unsigned char *msg, size_t size, const helper_region *regions,
                         uint32_t n_regions, bool for_supports, char *why, size_t cap) {
    iso_graph h;
    if (size < sizeof h)
        return FAIL("graph message of %zu bytes", size);
    memcpy(&h, msg, sizeof h);
    if (h.n_tensors < 0 || h.n_tensors > ISO_MAX_TENSORS || h.n_nodes < 0 || h.n_nodes > h.n_tensors ||
        h.n_threads < 1 || h.n_threads > ISO_MAX_THREADS)
        return FAIL("graph header out of range (%d tensors, %d nodes, %d threads)", h.n_tensors, h.n_nodes,
                    h.n_threads);
    const size_t recs_at = sizeof h, nodes_at = recs_at + (size_t)h.n_tensors * sizeof(iso_tensor);
    const size_t blob_at = nodes_at + (size_t)h.n_nodes * sizeof(int32_t);
    if (blob_at > size || size - blob_at != h.blob_size)
        return FAIL("graph message of %zu bytes does not match its counts", size);
    const unsigned char *blob = msg + blob_at;
    size_t n = (size_t)h.n_tensors;
    if (!reserve((void **)&g->recs, &g->cap_tensors, n ? n : 1, sizeof *g->recs))
        return FAIL("out of memory");
    /* ptrs and names follow recs' capacity */
    tport_tensor_view **ptrs = realloc(g->ptrs, g->cap_tensors * sizeof *ptrs);
    if (ptrs)
        g->ptrs = (const tport_tensor_view **)ptrs;
    char(*names)[ISO_NAME_MAX] = realloc(g->names, g->cap_tensors * sizeof *names);
    if (names)
        g->names = names;
    if (!ptrs || !names || !reserve((void **)&g->nodes, &g->cap_nodes, (size_t)h.n_nodes + 1, sizeof *g->nodes))
        return FAIL("out of memory");
    /* parameter blocks, each copied to a 16-byte aligned place */
    size_t params_total = 0;
    for (size_t i = 0; i < n; i++) {
        iso_tensor r;
        memcpy(&r, msg + recs_at + i * sizeof r, sizeof r);
        if (r.params_size > ISO_PARAMS_MAX)
            return FAIL("tensor %zu: parameter block of %u bytes", i, r.params_size);
        params_total += (r.params_size + 15u) & ~15u;
    }
    if (!reserve((void **)&g->params, &g->cap_params, params_total + 16, 1))
        return FAIL("out of memory");
    size_t params_used = 0;
    uint64_t gkey = 0xcbf29ce484222325ull, bkey = gkey;
    for (size_t i = 0; i < n; i++) {
        iso_tensor r;
        memcpy(&r, msg + recs_at + i * sizeof r, sizeof r);
        tport_tensor_view *t = &g->recs[i];
        memset(t, 0, sizeof *t);
        t->struct_size = sizeof *t;
        t->op = r.op;
        t->type = r.type;
        t->flags = r.flags;
        for (int s = 0; s < 6; s++) {
            if (r.src[s] < -1 || r.src[s] >= h.n_tensors)
                return FAIL("tensor %zu: source %d out of range", i, r.src[s]);
            if (s < 4)
                t->src[s] = r.src[s];
            else
                t->src_more[s - 4] = r.src[s];
        }
        for (int d = 0; d < 4; d++) {
            if (r.ne[d] < 0)
                return FAIL("tensor %zu: negative dimension", i);
            t->ne[d] = r.ne[d];
            t->nb[d] = r.nb[d];
        }
        if ((uint64_t)r.params_off + r.params_size > h.blob_size ||
            (uint64_t)r.name_off + r.name_len > h.blob_size || r.name_len >= ISO_NAME_MAX)
            return FAIL("tensor %zu: parameters or name outside the message", i);
        if (r.params_size) {
            memcpy(g->params + params_used, blob + r.params_off, r.params_size);
            t->params = g->params + params_used;
            t->params_size = r.params_size;
            params_used += (r.params_size + 15u) & ~15u;
        }
        memcpy(g->names[i], blob + r.name_off, r.name_len);
        g->names[i][r.name_len] = '\0';
        t->name = g->names[i];
        if (r.region) {
            uint64_t ext;
            if (r.region >= n_regions || (!regions[r.region].base && !regions[r.region].device))
                return FAIL("tensor %zu: region %u is not mapped", i, r.region);
            if (!iso_extent(r.type, r.ne, r.nb, &ext) || r.offset > regions[r.region].size ||
                ext > regions[r.region].size - r.offset)
                return FAIL("tensor %zu ('%s'): outside region %u", i, t->name, r.region);
            const helper_region *reg = &regions[r.region];
            t->data = reg->base ? reg->base + r.offset : NULL;
            if (reg->device) { /* in the plug-in's own memory */
                t->buffer = reg->handle;
                t->offset = r.offset;
            }
        } else if (for_supports) {
            t->data = dummy + (r.offset & 63);
        }
        g->ptrs[i] = t;
        gkey = fnv(gkey, &r, offsetof(iso_tensor, region));
        if (r.params_size)
            gkey = fnv(gkey, t->params, r.params_size);
        /* what the plug-in sees: a region id the host reuses may now name
         * another buffer of the plug-in's, so its handle is hashed too */
        if (t->flags & TPORT_TENSOR_WEIGHT) { /* where weights live is structure */
            gkey = fnv(gkey, &t->data, sizeof t->data);
            gkey = fnv(gkey, &t->buffer, sizeof t->buffer);
            gkey = fnv(gkey, &r.region, sizeof r.region);
            gkey = fnv(gkey, &r.offset, sizeof r.offset);
        }
        bkey = fnv(bkey, &t->data, sizeof t->data);
        bkey = fnv(bkey, &t->buffer, sizeof t->buffer);
        bkey = fnv(bkey, &r.region, sizeof r.region);
        bkey = fnv(bkey, &r.offset, sizeof r.offset);
    }
    for (int32_t i = 0; i < h.n_nodes; i++) {
        int32_t v;
        memcpy(&v, msg + nodes_at + (size_t)i * sizeof v, sizeof v);
        if (v < 0 || v >= h.n_tensors)
            return FAIL("node %d: tensor index %d out of range", i, v);
        g->nodes[i] = v;
    }
    g->view = (tport_graph_view){
        .struct_size = sizeof g->view, .n_tensors = h.n_tensors, .tensors = g->ptrs, .n_nodes = h.n_nodes,
        .nodes = g->nodes, .n_threads = h.n_threads, .graph_key = gkey ? gkey : 1, .bind_key = bkey ? bkey : 1,
    };
    return true;
}

void helper_graph_free(helper_graph *g) {
    free(g->recs);
    free(g->ptrs);
    free(g->nodes);
    free(g->names);
    free(g->params);
    memset(g, 0, sizeof *g);
}
