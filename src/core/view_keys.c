/* The keys of a graph view (backend.h): graph_key for its structure, so a
 * device records once and replays, and bind_key for where its operands
 * live.  The scheduler sets them on every split; check-backend on every
 * case it runs, since a plug-in may record per key. */
#include "core/view_keys.h"
#include "core/view_srcs.h"

#include <string.h>

/* A word at a time: a token's graph hashes a few thousand records, and a
 * byte-wise hash (FNV-1a) was 1 % of generation time.  Each step is a
 * bijection of (h ^ w), so keys differ for different input but by chance
 * (a device replays a recorded graph on an equal key); they need not be
 * stable across processes. */
static uint64_t mix_word(uint64_t h, uint64_t w) {
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 32);
}

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (; n >= 8; b += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, b, 8);
        h = mix_word(h, w);
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, b, n);
        h = mix_word(h, w ^ ((uint64_t)n << 56));
    }
    return h;
}

static uint64_t shape_hash(uint64_t h, const tport_tensor_view *t) {
    h = mix(h, &t->op, sizeof t->op);
    h = mix(h, &t->type, sizeof t->type);
    h = mix(h, t->ne, sizeof t->ne);
    h = mix(h, t->nb, sizeof t->nb);
    h = mix(h, &t->flags, sizeof t->flags);
    if (t->params && t->params_size)
        h = mix(h, t->params, t->params_size);
    return h;
}

static uint64_t place_hash(uint64_t h, const tport_tensor_view *t) {
    uintptr_t data = (uintptr_t)t->data;
    h = mix(h, &data, sizeof data);
    h = mix(h, &t->buffer, sizeof t->buffer);
    return mix(h, &t->offset, sizeof t->offset);
}

void tport_view_keys(tport_graph_view *part, const int32_t *nodes, int n) {
    uint64_t gk = 0xcbf29ce484222325ull, bk = gk;
    for (int i = 0; i < n; i++) {
        const tport_tensor_view *t = part->tensors[nodes[i]];
        gk = shape_hash(gk, t);
        bk = place_hash(bk, t);
        for (int s = 0; s < TPORT_CORE_MAX_SRC; s++) {
            int32_t src = tport_view_src(t, s);
            gk = mix(gk, &src, sizeof src);
            if (src < 0 || src >= part->n_tensors)
                continue;
            const tport_tensor_view *st = part->tensors[src];
            gk = shape_hash(gk, st);
            if (st->flags & TPORT_TENSOR_WEIGHT)
                gk = place_hash(gk, st);
            else
                bk = place_hash(bk, st);
        }
    }
    part->graph_key = gk ? gk : 1;
    part->bind_key = bk ? bk : 1;
}
