/* Whether a device may hold a layer's KV cache: only if it runs the nodes
 * that read the cache, as tport_blk_attention builds them (blocks.c; keep
 * the two in step), and it or a host backend runs the copy into it (the
 * host's new rows are uploaded, stage.c).  A cache in the memory of a
 * device that cannot run its attention would come to host memory whole
 * every token; in host memory the host backends run those nodes in place
 * (DESIGN.md, "Scheduling": each tensor lives where its writer and its
 * readers can run, or one staged copy bridges them). */
#include <string.h>

#include "model/blocks.h"
#include "core/view_srcs.h"
#include "sched/sched.h"

/* supports_op receives a data address it must not read; a real one keeps
 * a careless backend from faulting (a device is asked without it). */
static _Alignas(64) unsigned char probe_bytes[64];

enum { Q_NEW, K_NEW, CACHE_DST, KEYS, VALUES, MASK, ATTN, QP, KQ, VALUES_T, VALUES_T_CONT, N_PROBE };

static void record(tport_tensor_view *t, tport_op_id op, tport_type_id type, const int64_t ne[3],
                   const size_t nb[3]) {
    memset(t, 0, sizeof *t);
    t->struct_size = sizeof *t;
    t->op = op;
    t->type = type;
    tport_view_clear_srcs(t);
    for (int d = 0; d < 3; d++) {
        t->ne[d] = ne[d];
        t->nb[d] = nb[d];
    }
    t->ne[3] = 1;
    t->nb[3] = nb[2] * (size_t)ne[2];
    t->data = probe_bytes;
    t->name = "";
}

static void contiguous(tport_tensor_view *t, tport_op_id op, tport_type_id type, int64_t n0, int64_t n1,
                       int64_t n2) {
    size_t f = tport_type_block_bytes(type);
    const int64_t ne[3] = {n0, n1, n2};
    const size_t nb[3] = {f, f * (size_t)n0, f * (size_t)n0 * (size_t)n1};
    record(t, op, type, ne, nb);
}

/* Whether a host-memory backend runs the copy into the cache: it writes
 * the new rows apart and the host uploads them to the device (stage.c),
 * so a device that attends but does not copy still keeps the cache. */
static bool host_writes(const tport_graph_view *v, int32_t node) {
    for (int i = 0; i < tport_registry_active_count(); i++) {
        const tport_active_backend *h = tport_registry_active(i);
        if (h && !h->mem.device_memory && tport_sched_backend_supports(h, v, node))
            return true;
    }
    return false;
}

/* For n new tokens at n_kv cached positions. */
static bool cache_nodes_run_on(const tport_active_backend *b, const tport_model_shape *sh, tport_type_id kv_type,
                               int64_t n, int64_t n_kv, bool fused) {
    const int64_t hd = sh->head_dim, nkv = sh->n_head_kv, nh = sh->n_head;
    const size_t f = tport_type_block_bytes(kv_type), row = (size_t)(hd * nkv) * f;
    tport_tensor_view t[N_PROBE];
    static const tport_params_flash_attn attn_params = {.scale = 1.0f};
    contiguous(&t[Q_NEW], TPORT_OP_NONE, TPORT_TYPE_F32, hd, nh, n);
    contiguous(&t[K_NEW], TPORT_OP_NONE, TPORT_TYPE_F32, hd, nkv, n);
    /* the copy into the cache: a record writing into a view of it */
    record(&t[CACHE_DST], TPORT_OP_CPY, kv_type, (const int64_t[3]){hd, nkv, n}, (const size_t[3]){f, hd * f, row});
    t[CACHE_DST].src[0] = K_NEW;
    record(&t[KEYS], TPORT_OP_NONE, kv_type, (const int64_t[3]){hd, n_kv, nkv}, (const size_t[3]){f, row, hd * f});
    t[VALUES] = t[KEYS];
    contiguous(&t[MASK], TPORT_OP_NONE, TPORT_TYPE_F32, n_kv, n, 1);
    contiguous(&t[ATTN], TPORT_OP_FLASH_ATTN, TPORT_TYPE_F32, hd, nh, n);
    t[ATTN].src[0] = Q_NEW;
    t[ATTN].src[1] = KEYS;
    t[ATTN].src[2] = VALUES;
    t[ATTN].src[3] = MASK;
    t[ATTN].params = &attn_params;
    t[ATTN].params_size = sizeof attn_params;
    /* the unfused path: K^T q, and V transposed made contiguous */
    record(&t[QP], TPORT_OP_NONE, TPORT_TYPE_F32, (const int64_t[3]){hd, n, nh},
           (const size_t[3]){4, 4 * (size_t)(hd * nh), 4 * (size_t)hd});
    contiguous(&t[KQ], TPORT_OP_MUL_MAT, TPORT_TYPE_F32, n_kv, n, nh);
    t[KQ].src[0] = KEYS;
    t[KQ].src[1] = QP;
    record(&t[VALUES_T], TPORT_OP_NONE, kv_type, (const int64_t[3]){n_kv, hd, nkv},
           (const size_t[3]){row, f, hd * f});
    contiguous(&t[VALUES_T_CONT], TPORT_OP_CONT, kv_type, n_kv, hd, nkv);
    t[VALUES_T_CONT].src[0] = VALUES_T;

    const tport_tensor_view *ptrs[N_PROBE];
    for (int i = 0; i < N_PROBE; i++)
        ptrs[i] = &t[i];
    int32_t nodes[] = {CACHE_DST, ATTN, KQ, VALUES_T_CONT};
    tport_graph_view v = {.struct_size = sizeof v, .n_tensors = N_PROBE, .tensors = ptrs,
                          .n_nodes = (int32_t)(sizeof nodes / sizeof nodes[0]), .nodes = nodes, .n_threads = 1};
    if (!tport_sched_backend_supports(b, &v, CACHE_DST) && !host_writes(&v, CACHE_DST))
        return false;
    if (fused)
        return tport_sched_backend_supports(b, &v, ATTN);
    return tport_sched_backend_supports(b, &v, KQ) && tport_sched_backend_supports(b, &v, VALUES_T_CONT);
}

bool tport_blk_fused_attn(const char *forced_backend) {
    return !forced_backend || !strcmp(forced_backend, "cpu");
}

bool tport_blk_cache_runs_on(const tport_active_backend *b, const tport_model *m, tport_type_id kv_type,
                             int32_t n_ctx, int32_t n_batch) {
    const tport_model_shape *sh = &m->sh;
    bool fused = sh->max_alibi_bias <= 0 && sh->attn_softcap <= 0 && tport_blk_fused_attn(m->backend);
    /* one generated token over the whole context, and a prompt batch */
    return cache_nodes_run_on(b, sh, kv_type, 1, n_ctx, fused) &&
           cache_nodes_run_on(b, sh, kv_type, n_batch < n_ctx ? n_batch : n_ctx, n_ctx, fused);
}
