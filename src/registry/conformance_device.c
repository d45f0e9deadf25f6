/* Conformance through a device's own memory (ABI 1.1).
 *
 * check_device_bind/compute/unbind run a numerics case the way the host
 * runs a split on such a device: every tensor in a buffer of the device,
 * views with (buffer, offset) and no host address, the result downloaded.
 * The device tier checks the memory slots themselves: exact round trips of
 * every type the backend takes, fills, copies within the device, waits
 * that return, and that a graph key recorded once replays right when only
 * the operands' placement (bind key) changes. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_internal.h"
#include "core/view_srcs.h"
#include "core/error.h"
#include "core/view_keys.h"
#include "quant/type_table.h"

#define TIMEOUT_NS 30000000000ull /* a conformant device answers in time */

/* The graph key of the last case bound, for the replay check's forget. */
static uint64_t last_graph_key;

static tport_status wait_for(const tport_backend_mem *m, void *state, tport_ticket t) {
    if (!t)
        return TPORT_STATUS_OK;
    if (!m->wait)
        return tport_error(TPORT_STATUS_ERROR, "returned ticket %llu but has no wait slot", (unsigned long long)t);
    return m->wait(state, 0, t, TIMEOUT_NS);
}

static bool on_device(const tport_backend_mem *m) {
    return m && m->device_memory;
}

bool check_device_bind(const tport_backend_mem *mem, void *state, case_graph *g, device_case *d, char *why,
                       size_t cap) {
    memset(d, 0, sizeof *d);
    d->mem = mem;
    d->state = state;
    if (!on_device(mem)) {
        tport_view_keys(&g->view, g->view.nodes, g->view.n_nodes);
        last_graph_key = g->view.graph_key;
        return true;
    }
    int n = g->view.n_tensors;
    for (int i = 0; i < n; i++) {
        made_tensor *t = i == g->node ? &g->dst : &g->src[i];
        void *host = NULL;
        tport_buffer b = 0;
        tport_ticket tk = 0;
        tport_clear_error();
        tport_status st = mem->buffer_alloc(state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_COMPUTE, t->bytes, &b, &host);
        if (st == TPORT_STATUS_OK && !b)
            st = tport_error(TPORT_STATUS_ERROR, "handle 0");
        if (st == TPORT_STATUS_OK)
            d->bufs[d->n_bufs++] = b;
        if (st == TPORT_STATUS_OK)
            st = mem->tensor_write(state, b, 0, &t->view, t->mem, t->bytes, &tk);
        if (st == TPORT_STATUS_OK)
            st = wait_for(mem, state, tk);
        if (st != TPORT_STATUS_OK) {
            snprintf(why, cap, "device memory for %s (%zu bytes): %s: %.80s", t->view.name, t->bytes,
                     tport_status_name(st), tport_last_error());
            check_device_unbind(d);
            return false;
        }
        t->view.buffer = b;
        t->view.offset = 0;
        t->view.data = NULL;
    }
    /* keyed as the scheduler keys a split: a plug-in that records once per
     * graph key must be given a new key for every new structure, and a
     * new bind key whenever the buffers change */
    tport_view_keys(&g->view, g->view.nodes, g->view.n_nodes);
    last_graph_key = g->view.graph_key;
    return true;
}

tport_status check_device_compute(const tport_backend_api *api, void *state, const device_case *d, case_graph *g) {
    const tport_backend_mem *m = d->mem;
    if (!on_device(m))
        return api->compute(state, 0, &g->view);
    tport_ticket t = 0;
    tport_status st = m->compute_async ? m->compute_async(state, 0, &g->view, &t) : api->compute(state, 0, &g->view);
    if (st == TPORT_STATUS_OK)
        st = wait_for(m, state, t);
    t = 0;
    if (st == TPORT_STATUS_OK)
        st = m->tensor_read(state, g->dst.view.buffer, 0, &g->dst.view, g->dst.mem, g->dst.bytes, &t);
    if (st == TPORT_STATUS_OK)
        st = wait_for(m, state, t);
    return st;
}

void check_device_unbind(device_case *d) {
    for (int i = 0; i < d->n_bufs; i++)
        d->mem->buffer_free(d->state, d->bufs[i]);
    d->n_bufs = 0;
}

/* ---- the device tier ---------------------------------------------------- */
typedef struct tier {
    const tport_backend_api *api;
    void *state;
    const tport_backend_mem *m;
    tport_check_sink sink;
    void *user;
    tport_check_counts counts;
} tier;

static void report(tier *t, const char *op, const char *types, bool ok, const char *fmt, ...) {
    tport_check_result r = {.tier = "device", .max_err = -1, .outcome = ok ? TPORT_CHECK_PASS : TPORT_CHECK_FAIL};
    snprintf(r.op, sizeof r.op, "%s", op);
    snprintf(r.types, sizeof r.types, "%s", types);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.note, sizeof r.note, fmt, ap);
    va_end(ap);
    if (ok)
        t->counts.passed++;
    else
        t->counts.failed++;
    t->sink(&r, t->user);
}

static uint64_t lcg(uint64_t *s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static void dense_view(tport_tensor_view *v, tport_type_id type, int64_t ne0, int64_t ne1) {
    const tport_type_traits *ti = tport_traits(type);
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    tport_view_clear_srcs(v);
    v->name = "";
    v->type = type;
    v->ne[0] = ne0;
    v->ne[1] = ne1;
    v->ne[2] = v->ne[3] = 1;
    v->nb[0] = ti->info.block_bytes;
    v->nb[1] = v->nb[0] * (uint64_t)(ne0 / ti->info.block_size);
    v->nb[2] = v->nb[3] = v->nb[1] * (uint64_t)ne1;
}

/* Asks about node 2 of a three-tensor graph, sources 0 and 1. */
static bool asks(const tier *t, tport_tensor_view v[3], tport_op_id op) {
    v[2].op = op;
    v[2].src[0] = 0;
    v[2].src[1] = op == TPORT_OP_CPY ? -1 : 1; /* cpy's destination is the node itself */
    const tport_tensor_view *ptrs[3] = {&v[0], &v[1], &v[2]};
    int32_t node = 2;
    tport_graph_view g = {.struct_size = sizeof g, .n_tensors = 3, .tensors = ptrs, .n_nodes = 1, .nodes = &node,
                          .n_threads = 1, .graph_key = 1, .bind_key = 1};
    return t->api->supports_op(t->state, 0, &g, node);
}

/* Does the backend take this type anywhere: as a mul_mat weight, a table
 * get_rows gathers from, or the destination of a cpy (a KV cache)?  Every
 * such type must then survive a round trip through its memory. */
static bool takes_type(const tier *t, tport_type_id type) {
    const tport_type_traits *tr = tport_traits(type);
    if (!tr || tr->info.block_size <= 0 || 256 % tr->info.block_size)
        return false;
    if (type == TPORT_TYPE_F32)
        return true;
    tport_tensor_view v[3];
    /* [256 x 4] weight times [256 x 1] is [4 x 1] */
    dense_view(&v[0], type, 256, 4);
    v[0].flags = TPORT_TENSOR_WEIGHT;
    dense_view(&v[1], TPORT_TYPE_F32, 256, 1);
    dense_view(&v[2], TPORT_TYPE_F32, 4, 1);
    if (asks(t, v, TPORT_OP_MUL_MAT))
        return true;
    /* rows 0 of a [256 x 4] table */
    dense_view(&v[1], TPORT_TYPE_I32, 1, 1);
    dense_view(&v[2], TPORT_TYPE_F32, 256, 1);
    if (asks(t, v, TPORT_OP_GET_ROWS))
        return true;
    /* f32 [256 x 1] converted into type */
    dense_view(&v[0], TPORT_TYPE_F32, 256, 1);
    dense_view(&v[2], type, 256, 1);
    return asks(t, v, TPORT_OP_CPY);
}

/* Upload then download n rows of random bytes of `type`: exact for memory
 * of usage COMPUTE (weights may be refused: they may be re-encoded). */
static void round_trip(tier *t, tport_type_id type, uint32_t usage) {
    const tport_type_traits *tr = tport_traits(type);
    size_t bytes = (size_t)(256 / tr->info.block_size) * tr->info.block_bytes * 4;
    unsigned char *src = malloc(bytes), *back = malloc(bytes);
    tport_buffer b = 0;
    void *host = NULL;
    tport_ticket tk = 0;
    uint64_t seed = type * 7919u + usage;
    for (size_t i = 0; src && i < bytes; i++)
        src[i] = (unsigned char)lcg(&seed);
    tport_tensor_view v = {.struct_size = sizeof v, .type = type, .src = {-1, -1, -1, -1}, .src_more = {-1, -1},
                           .ne = {256, 4, 1, 1}, .flags = usage == TPORT_USAGE_WEIGHTS ? TPORT_TENSOR_WEIGHT : 0,
                           .name = "round-trip"};
    v.nb[0] = tr->info.block_bytes;
    v.nb[1] = bytes / 4;
    v.nb[2] = v.nb[3] = bytes;
    tport_status st = src && back ? TPORT_STATUS_OK : tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st)
        st = t->m->buffer_alloc(t->state, 0, TPORT_MEM_DEVICE, usage, bytes, &b, &host);
    if (!st)
        st = t->m->tensor_write(t->state, b, 0, &v, src, bytes, &tk);
    if (!st)
        st = wait_for(t->m, t->state, tk);
    tk = 0;
    if (!st) {
        memset(back, 0xa5, bytes);
        st = t->m->tensor_read(t->state, b, 0, &v, back, bytes, &tk);
        if (!st)
            st = wait_for(t->m, t->state, tk);
    }
    const char *what = usage == TPORT_USAGE_WEIGHTS ? "weights" : "compute";
    if (usage == TPORT_USAGE_WEIGHTS && st == TPORT_STATUS_UNSUPPORTED)
        report(t, "round-trip", tr->info.name, true, "weights not readable back (allowed: re-encoded at upload)");
    else if (st)
        report(t, "round-trip", tr->info.name, false, "%s memory: %s: %.100s", what, tport_status_name(st),
               tport_last_error());
    else
        report(t, "round-trip", tr->info.name, !memcmp(src, back, bytes), "%s memory, %zu bytes %s", what, bytes,
               memcmp(src, back, bytes) ? "differ after upload and download" : "identical");
    if (b)
        t->m->buffer_free(t->state, b);
    free(src);
    free(back);
}

/* fill, and copy within the device when it offers buffer_copy */
static void fill_and_copy(tier *t) {
    const size_t n = 4096;
    unsigned char *back = malloc(n), *pattern = malloc(n);
    tport_buffer a = 0, b = 0;
    void *host = NULL;
    tport_ticket tk = 0;
    tport_tensor_view v = {.struct_size = sizeof v, .type = TPORT_TYPE_I8, .src = {-1, -1, -1, -1}, .src_more = {-1, -1},
                           .ne = {(int64_t)n, 1, 1, 1}, .nb = {1, n, n, n}, .name = "bytes"};
    tport_status st = back && pattern ? TPORT_STATUS_OK : TPORT_STATUS_OUT_OF_MEMORY;
    if (!st)
        st = t->m->buffer_alloc(t->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_COMPUTE, n, &a, &host);
    if (!st)
        st = t->m->buffer_alloc(t->state, 0, TPORT_MEM_DEVICE, TPORT_USAGE_COMPUTE, n, &b, &host);
    if (!st && t->m->buffer_fill) {
        st = t->m->buffer_fill(t->state, a, 0, n, 0x5a, &tk);
        if (!st)
            st = wait_for(t->m, t->state, tk);
        tk = 0;
        if (!st)
            st = t->m->tensor_read(t->state, a, 0, &v, back, n, &tk);
        if (!st)
            st = wait_for(t->m, t->state, tk);
        bool ok = !st;
        for (size_t i = 0; ok && i < n; i++)
            ok = back[i] == 0x5a;
        report(t, "fill", "bytes", ok, ok ? "4096 bytes of 0x5a read back" : "fill: %s", tport_status_name(st));
    }
    if (!st && t->m->buffer_copy) {
        uint64_t seed = 42;
        for (size_t i = 0; i < n; i++)
            pattern[i] = (unsigned char)lcg(&seed);
        tk = 0;
        st = t->m->tensor_write(t->state, a, 0, &v, pattern, n, &tk);
        if (!st)
            st = wait_for(t->m, t->state, tk);
        tk = 0;
        if (!st)
            st = t->m->buffer_copy(t->state, b, 0, a, 0, n, &tk);
        /* an isolated plug-in's proxy offers the slot whether or not the
         * plug-in has it; the host then stages the copy itself */
        bool offered = st != TPORT_STATUS_UNSUPPORTED;
        if (!offered)
            st = TPORT_STATUS_OK;
        if (!st)
            st = wait_for(t->m, t->state, tk);
        tk = 0;
        if (!st)
            st = t->m->tensor_read(t->state, b, 0, &v, back, n, &tk);
        if (!st)
            st = wait_for(t->m, t->state, tk);
        bool ok = !st && (!offered || !memcmp(back, pattern, n));
        report(t, "copy", "bytes", ok, !ok ? "copy: %s" : offered ? "4096 bytes copied within the device"
                                                           : "not offered by the plug-in (unsupported)",
               tport_status_name(st));
    }
    if (st)
        report(t, "fill/copy", "bytes", false, "%s: %.100s", tport_status_name(st), tport_last_error());
    if (a)
        t->m->buffer_free(t->state, a);
    if (b)
        t->m->buffer_free(t->state, b);
    free(back);
    free(pattern);
}

/* The first add case it claims, run with one graph key twice: once in
 * fresh buffers (a new bind key) with other data.  A backend that replays
 * what it recorded for the key must still read the new operands. */
static void replay(tier *t) {
    int n = check_cases(NULL, 0);
    check_case *cases = calloc((size_t)n, sizeof *cases);
    if (!cases)
        return;
    check_cases(cases, n);
    const tport_backend_api *ref = tport_cpu_embedded_entry(tport_host_services());
    void *ref_state = NULL;
    if (!ref || ref->init(&ref_state) != TPORT_STATUS_OK) {
        free(cases);
        return;
    }
    int done = 0;
    for (int i = 0; i < n && done < 2; i++) {
        if (cases[i].op != TPORT_OP_ADD && cases[i].op != TPORT_OP_MUL_MAT)
            continue;
        tport_check_result r;
        check_run_case(&cases[i], t->api, t->state, t->m, ref, ref_state, &r);
        if (r.outcome == TPORT_CHECK_NOT_CLAIMED || r.outcome == TPORT_CHECK_NO_REFERENCE)
            continue;
        /* the same structure again (same key), new buffers and inputs */
        tport_check_result r2;
        check_seed_salt = 0x1234567;
        check_run_case(&cases[i], t->api, t->state, t->m, ref, ref_state, &r2);
        check_seed_salt = 0;
        bool ok = r.outcome == TPORT_CHECK_PASS && r2.outcome == TPORT_CHECK_PASS;
        report(t, "replay", r.types, ok, ok ? "%s %s: same graph key, new bind key, right twice" : "%s: %s",
               r.op, ok ? r.shape : (r.outcome != TPORT_CHECK_PASS ? r.note : r2.note));
        if (t->m->forget_graph)
            t->m->forget_graph(t->state, 0, last_graph_key);
        done++;
    }
    ref->shutdown(ref_state);
    free(cases);
}

static void wait_returns(tier *t) {
    if (!t->m->wait)
        return;
    /* a ticket never issued must come back as an error or a timeout: not
     * hang, and not OK, which would tell the host that work it never
     * submitted is done */
    tport_status st = t->m->wait(t->state, 0, UINT64_MAX / 2, 1000000ull);
    report(t, "wait", "ticket", st == TPORT_STATUS_TIMEOUT || st == TPORT_STATUS_INVALID_ARGUMENT,
           "wait for a ticket never issued, 1 ms: %s", tport_status_name(st));
}

tport_check_counts tport_conformance_device(const tport_backend_api *api, void *state, const tport_backend_mem *mem,
                                            tport_check_sink sink, void *user) {
    tier t = {.api = api, .state = state, .m = mem, .sink = sink, .user = user};
    if (!on_device(mem))
        return t.counts;
    for (int id = 0; id < 256; id++) {
        const tport_type_traits *tr = tport_traits((tport_type_id)id);
        if (!tr || !takes_type(&t, (tport_type_id)id))
            continue;
        round_trip(&t, (tport_type_id)id, TPORT_USAGE_COMPUTE);
        if (id != TPORT_TYPE_F32)
            round_trip(&t, (tport_type_id)id, TPORT_USAGE_WEIGHTS);
    }
    fill_and_copy(&t);
    wait_returns(&t);
    replay(&t);
    return t.counts;
}
