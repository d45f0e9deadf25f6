/* The plan of a session in words (tport run --plan, TPORT_LOG=info): per
 * backend the layers whose weights live in its memory, the weight bytes
 * resident there and the nodes it ran; then what the last evaluation moved
 * between host and device memory. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "model/model.h"
#include "sched/sched.h"

typedef struct out {
    char *buf;
    size_t cap, used;
} out;

static void put(out *o, const char *fmt, ...) {
    if (o->used >= o->cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->cap - o->used, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->used = o->used + (size_t)n < o->cap ? o->used + (size_t)n : o->cap;
}

static void size_text(uint64_t b, char *buf, size_t cap) {
    if (b >= 10u << 20)
        snprintf(buf, cap, "%.1f MiB", (double)b / (1 << 20));
    else if (b >= 10u << 10)
        snprintf(buf, cap, "%.1f KiB", (double)b / 1024);
    else
        snprintf(buf, cap, "%llu B", (unsigned long long)b);
}

const char *tport_model_layer_backend(const tport_model *m, int32_t layer) {
    if (!m || layer < 0 || layer >= m->sh.n_layer)
        return NULL;
    /* a pipeline stage holds only some layers; fused-QKV models have no wq */
    const tport_tensor *w = tport_layer_attention_weight(&m->layers[layer]);
    const tport_active_backend *b = w ? w->res.backend : NULL;
    return b ? b->name : NULL;
}

/* Whether any matrix of layer il lives with `backend` (NULL: in host
 * memory, with no backend's copy): a plug-in may hold a layer's
 * feed-forward weights and not its attention's. */
static bool layer_has_weights_on(const tport_model *m, int32_t il, const char *backend) {
    tport_tensor **mats[64];
    int n = tport_model_layer_weights((tport_model *)m, il, TPORT_LAYER_ATTN_MATRICES | TPORT_LAYER_FFN_MATRICES,
                                      mats, 64);
    for (int k = 0; k < n; k++) {
        const tport_tensor *w = *mats[k];
        const tport_active_backend *b = w ? w->res.backend : NULL;
        if (w && (backend ? b && !strcmp(b->name, backend) : !b))
            return true;
    }
    return false;
}

/* "0-3,5" for the layers with weights that live with `backend` (NULL:
 * host). */
static void layer_list(const tport_model *m, const char *backend, out *o) {
    int first = -1, n = 0;
    for (int32_t i = 0; i <= m->sh.n_layer; i++) {
        bool mine = i >= m->layer_begin && i < m->layer_end && i < m->sh.n_layer &&
                    layer_has_weights_on(m, i, backend);
        if (mine && first < 0)
            first = i;
        if (!mine && first >= 0) {
            put(o, "%s%d", n++ ? "," : "", first);
            if (i - 1 > first)
                put(o, "-%d", i - 1);
            first = -1;
        }
    }
    if (!n)
        put(o, "none");
}

int32_t tport_session_plan(const tport_session *s, const tport_model *m, char *buf, size_t cap) {
    if (!s || !m || !buf || !cap)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "session_plan: no session or buffer"), -1;
    out o = {buf, cap, 0};
    buf[0] = '\0';
    const char *seen[TPORT_TALLY_ROWS];
    int n_seen = 0;
    const char *be;
    for (int32_t r = 0; tport_session_placement(s, r, &be, NULL) > 0; r++) {
        bool dup = false;
        for (int k = 0; k < n_seen; k++)
            dup = dup || !strcmp(seen[k], be);
        if (!dup && n_seen < TPORT_TALLY_ROWS)
            seen[n_seen++] = be;
    }
    for (int k = 0; k < n_seen; k++) {
        const tport_active_backend *b = tport_registry_find(seen[k]);
        bool device = b && b->mem.device_memory;
        char bytes[32];
        size_text(tport_model_resident_bytes(m, seen[k]), bytes, sizeof bytes);
        put(&o, "backend %s (%s): layers ", seen[k], device ? "device memory" : "host memory");
        layer_list(m, device || (b && b->mem.own_layout) ? seen[k] : NULL, &o);
        put(&o, " with weights %s; %s resident; ran", device ? "on it" : "in host memory", bytes);
        const char *op;
        int n;
        for (int32_t r = 0; (n = tport_session_placement(s, r, &be, &op)) > 0; r++)
            if (!strcmp(be, seen[k]))
                put(&o, " %s x%d", op, n);
        put(&o, "\n");
    }
    tport_sched_stats last;
    int32_t n_evals = 0;
    tport_session_stats(s, &last, NULL, &n_evals);
    char up[32], down[32];
    size_text(last.bytes_up, up, sizeof up);
    size_text(last.bytes_down, down, sizeof down);
    put(&o, "last evaluation: %d split%s, %d staged upload%s (%s), %d download%s (%s)\n", last.n_splits,
        last.n_splits == 1 ? "" : "s", last.n_uploads, last.n_uploads == 1 ? "" : "s", up, last.n_downloads,
        last.n_downloads == 1 ? "" : "s", down);
    return (int32_t)o.used;
}
