/* Computing a graph: one run of the thread pool for the whole graph.
 *
 * A pass on the calling thread first prepares every node (its cpu_op:
 * sources, threads, scratch sizes) and reports unsupported nodes there,
 * since only the calling thread may use the host's thread-local error.
 * Then every thread of one pool run walks the nodes; each node's phases
 * (cpu_parallel) run on the threads it wants, with a barrier between
 * dependent phases.  Posting a job per op instead cost a wake-up of the
 * workers per op, a few hundred per generated token.
 *
 * The preparing pass also plans:
 * - fusions: a norm does the mul by its weight row in the same pass;
 * - tables: rope's cos and sin, once for all rope nodes alike;
 * - joins: a node that touches nothing the nodes since the last barrier
 *   write, and writes nothing they touch, joins them: its first phase
 *   starts without a barrier.  A layer's three projections of the same
 *   activations run one after the other that way, the second and third
 *   finding them packed by the first.
 *
 * A kernel's failure is recorded in its cpu_op; the threads learn of it at
 * the next barrier, all at the same one, and stop; the calling thread then
 * reports the first failed node.  Nodes share one scratch allocation,
 * sized for the largest: phases of different nodes that may run at once
 * (joined nodes) lay it out alike, and each thread touches only its own
 * part. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

/* Consecutive phases that run on thread 0 alone go without a barrier
 * between them: the other threads have nothing to wait for, and thread 0
 * need not wait for a preempted one. */
#define SKIP_SINGLE_BARRIERS 1

struct cpu_graph {
    cpu_op *ops; /* the nodes in order, kept between calls */
    int32_t n_ops, cap_ops;
    uint8_t *scratch;
    size_t scratch_size;
    float *tables; /* rope nodes' cos and sin (prepare_tables) */
    size_t tables_size;
    cpu_barrier *barrier;
};

cpu_graph *cpu_graph_new(void) {
    cpu_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->barrier = cpu_barrier_new();
    if (!g->barrier) {
        free(g);
        return NULL;
    }
    return g;
}

void cpu_graph_free(cpu_graph *g) {
    if (!g)
        return;
    cpu_barrier_free(g->barrier);
    free(g->ops);
    free(g->scratch);
    free(g->tables);
    free(g);
}

void cpu_parallel(cpu_ctx *c, cpu_task_fn fn, void *arg, int nth) {
    if (c->stopped)
        return;
    if (nth > c->nth)
        nth = c->nth;
    if (nth < 1)
        nth = 1;
    bool barrier = c->last_nth > 1 || (c->last_nth == 1 && (nth > 1 || !SKIP_SINGLE_BARRIERS));
    if (c->first_phase && c->op->joins_previous)
        barrier = false;
    c->first_phase = false;
    c->last_nth = nth;
    if (barrier && cpu_barrier_wait(c->barrier, c->ith, c->nth, c->failed)) {
        c->stopped = true;
        return;
    }
    if (c->failed || c->ith >= nth)
        return;
    fn(arg, c->ith, nth);
    if (atomic_load_explicit(&c->op->status, memory_order_relaxed))
        c->failed = true;
}

static int64_t nelements(const tport_tensor_view *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

/* Threads worth using: small ops run on thread 0 alone (a barrier costs
 * about as much as some thousands of multiply-adds). */
static int threads_for(const cpu_op *op, int budget) {
    const tport_tensor_view *d = op->dst;
    int64_t work = nelements(d);
    if (d->op == TPORT_OP_MUL_MAT || d->op == TPORT_OP_MUL_MAT_ID)
        work *= op->src[0]->ne[0];
    if (d->op == TPORT_OP_FLASH_ATTN || d->op == TPORT_OP_FLASH_ATTN_EXT) /* every query meets every key twice */
        work *= 2 * op->src[1]->ne[1];
    if (work < 65536)
        return 1;
    return budget;
}

/* Fills op for node idx: its sources, threads and scratch sizes. */
static void prepare_op(cpu_op *op, const tport_graph_view *v, int32_t idx, int budget) {
    memset(op, 0, sizeof *op);
    op->dst = v->tensors[idx];
    for (int i = 0; i < TPORT_MAX_SRC; i++)
        op->src[i] = op->dst->src[i] >= 0 ? v->tensors[op->dst->src[i]] : NULL;
    if (op->dst->struct_size >= TPORT_TENSOR_VIEW_SIZE_1_3)
        for (int i = 0; i < 2; i++)
            op->src[TPORT_MAX_SRC + i] = op->dst->src_more[i] >= 0 ? v->tensors[op->dst->src_more[i]] : NULL;
    /* a weight not yet in our layout is read in the file's, where the host keeps it (cpu_repack.c) */
    const void *plain = op->src[0] ? cpu_weight_deferred(op->src[0]) : NULL;
    if (plain) {
        op->plain_src0 = *op->src[0];
        op->plain_src0.data = (void *)(uintptr_t)plain;
        op->plain_src0.buffer = 0;
        op->plain_src0.offset = 0;
        op->src[0] = &op->plain_src0;
    }
    atomic_init(&op->status, 0);
    atomic_init(&op->next_chunk, 0);
    op->nth = threads_for(op, budget);

    /* scratch: rows of floats per thread, plus packed activations for mul_mat */
    int64_t widest = op->dst->ne[0];
    for (int i = 0; i < CPU_MAX_SRC; i++)
        if (op->src[i] && op->src[i]->ne[0] > widest)
            widest = op->src[i]->ne[0];
    op->per_thread = (size_t)(widest < 1024 ? 1024 : widest) * 4 * sizeof(float);
    if (op->dst->op == TPORT_OP_MUL_MAT && cpu_mul_mat_thread_scratch(op) > op->per_thread)
        op->per_thread = cpu_mul_mat_thread_scratch(op);
    if ((op->dst->op == TPORT_OP_FLASH_ATTN || op->dst->op == TPORT_OP_FLASH_ATTN_EXT) && cpu_flash_attn_thread_scratch(op) > op->per_thread)
        op->per_thread = cpu_flash_attn_thread_scratch(op);
    if (op->dst->op == TPORT_OP_MUL_MAT_ID && cpu_mul_mat_id_thread_scratch(op) > op->per_thread)
        op->per_thread = cpu_mul_mat_id_thread_scratch(op);
    op->per_thread = (op->per_thread + 63) / 64 * 64;
    op->shared = op->dst->op == TPORT_OP_MUL_MAT      ? (cpu_mul_mat_shared_scratch(op) + 63) / 64 * 64
                 : op->dst->op == TPORT_OP_MUL_MAT_ID ? (cpu_mul_mat_id_shared_scratch(op) + 63) / 64 * 64
                                                      : 0;
}

/* Floats of rope node i's own table: 0 when it has none (positions the
 * graph computes) or shares an earlier node's. */
static size_t own_table_floats(const cpu_graph *g, int32_t i) {
    const cpu_op *op = &g->ops[i];
    size_t n = cpu_is_rope(op->dst->op) ? cpu_rope_table_floats(op) : 0;
    for (int32_t j = 0; j < i && n; j++)
        if (cpu_is_rope(g->ops[j].dst->op) && cpu_rope_table_floats(&g->ops[j]) &&
            cpu_rope_same_table(&g->ops[j], op))
            return 0;
    return n;
}

/* Fills the rope nodes' tables, one for each set of positions and
 * parameters, on the calling thread before the run. */
static tport_status prepare_tables(cpu_graph *g) {
    size_t need = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        need += own_table_floats(g, i);
    if (need > g->tables_size) {
        free(g->tables);
        g->tables = malloc(need * sizeof *g->tables);
        g->tables_size = g->tables ? need : 0;
        if (!g->tables)
            return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: out of memory for rope tables");
    }
    size_t used = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        cpu_op *op = &g->ops[i];
        size_t n = cpu_is_rope(op->dst->op) ? cpu_rope_table_floats(op) : 0;
        if (n == 0)
            continue;
        /* the first alike node's table (own_table_floats counted none for
         * this one then), else one of its own */
        for (int32_t j = 0; j < i && !op->table; j++)
            if (g->ops[j].table && cpu_rope_same_table(&g->ops[j], op))
                op->table = g->ops[j].table;
        if (op->table)
            continue;
        if (!cpu_rope_fill_table(op, g->tables + used))
            return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: out of memory for rope tables");
        op->table = g->tables + used;
        used += n;
    }
    return TPORT_STATUS_OK;
}

/* ---- which nodes join the ones before them ---------------------------- */

/* What the nodes since the last certain barrier read and write. */
#define MAX_PENDING 48
typedef struct pending {
    cpu_byte_range reads[MAX_PENDING], writes[MAX_PENDING];
    int n_reads, n_writes;
    bool full; /* more than fits: everything may conflict */
} pending;

static bool conflicts(const pending *p, const cpu_op *op) {
    if (p->full)
        return true;
    cpu_byte_range w = cpu_view_range(op->dst), r[CPU_MAX_SRC];
    int n_r = 0;
    for (int s = 0; s < CPU_MAX_SRC; s++)
        if (op->src[s])
            r[n_r++] = cpu_view_range(op->src[s]);
    for (int i = 0; i < p->n_reads; i++)
        if (cpu_ranges_overlap(w, p->reads[i]))
            return true;
    for (int i = 0; i < p->n_writes; i++) {
        if (cpu_ranges_overlap(w, p->writes[i]))
            return true;
        for (int s = 0; s < n_r; s++)
            if (cpu_ranges_overlap(r[s], p->writes[i]))
                return true;
    }
    return false;
}

static void add_pending(pending *p, const cpu_op *op) {
    if (p->n_writes == MAX_PENDING) {
        p->full = true;
        return;
    }
    p->writes[p->n_writes++] = cpu_view_range(op->dst);
    for (int s = 0; s < CPU_MAX_SRC; s++) {
        /* weights are never written during a compute */
        if (!op->src[s] || (op->src[s]->flags & TPORT_TENSOR_WEIGHT))
            continue;
        if (p->n_reads == MAX_PENDING) {
            p->full = true;
            return;
        }
        p->reads[p->n_reads++] = cpu_view_range(op->src[s]);
    }
}

/* A norm and the mul by its weight row after it become one pass. */
static void plan_fusions(cpu_graph *g) {
    for (int32_t i = 1; i < g->n_ops; i++) {
        cpu_op *norm = &g->ops[i - 1], *mul = &g->ops[i];
        if (!norm->fused && cpu_norm_fuses_mul(norm, mul)) {
            norm->fused_mul = mul;
            mul->fused = true;
        }
    }
}

/* Whether op's own phases put a barrier before its last one: a mul_mat
 * or mul_mat_id that packs b first (its compute phase then runs on
 * several threads after the packing).  Every node before op has finished
 * by then, so only op itself can conflict with a node that joins it: a
 * layer's projections run after a norm on one thread, which the
 * projection that packs would otherwise keep "pending" for the next. */
static bool barrier_inside(const cpu_op *op) {
    if (op->nth <= 1 || op->reuses_packing)
        return false;
    if (op->dst->op == TPORT_OP_MUL_MAT_ID)
        return true;
    return op->dst->op == TPORT_OP_MUL_MAT && cpu_mul_mat_packs(op);
}

/* Sets joins_previous and reuses_packing.  A node joins only when both it
 * and the one before it run on several threads (a barrier then surely
 * separates the nodes that do not join), its first phase does not write
 * the shared scratch, and both lay out the scratch alike, so that each
 * thread's part is its own in both. */
static void plan_joins(cpu_graph *g) {
    pending p = {0};
    cpu_op *prev = NULL; /* the last node that runs phases of its own */
    for (int32_t i = 0; i < g->n_ops; i++) {
        cpu_op *op = &g->ops[i];
        if (op->fused) { /* written by prev's phase */
            add_pending(&p, op);
            continue;
        }
        op->reuses_packing =
            prev && (cpu_mul_mat_shares_packing(prev, op) || cpu_mul_mat_id_shares_packing(prev, op));
        op->joins_previous = prev && prev->nth > 1 && op->nth > 1 && (op->shared == 0 || op->reuses_packing) &&
                             op->shared == prev->shared && op->per_thread == prev->per_thread && !conflicts(&p, op);
        if (!op->joins_previous && prev && prev->nth > 1)
            p = (pending){0}; /* prev's last phase ran on several threads: a barrier follows */
        if (barrier_inside(op))
            p = (pending){0};
        add_pending(&p, op);
        prev = op;
    }
}

/* ---- one-token attention of several sequences, a node per thread ------
 * tport serve's step attends for each sequence in a node of its own, the
 * nodes one after another and joined.  Split by heads, each thread reads
 * its part of every cache row of every node; whole, a thread streams one
 * sequence's rows from end to end while the others take the next nodes,
 * which was faster (RESULTS, run 53).  The run's last nodes, fewer than
 * the threads, are still split so that no thread waits for one alone. */

static bool one_token_attention(const cpu_op *op) {
    return (op->dst->op == TPORT_OP_FLASH_ATTN || op->dst->op == TPORT_OP_FLASH_ATTN_EXT) && op->nth > 1 &&
           cpu_flash_attn_one_token(op);
}

/* One past the run of one-token attention nodes from node i, all of
 * node i's threads (joined: each after the first joins the one before);
 * i when node i is none. */
static int32_t attention_run_end(const cpu_graph *g, int32_t i, bool joined) {
    int32_t end = i;
    while (end < g->n_ops && one_token_attention(&g->ops[end]) && g->ops[end].nth == g->ops[i].nth &&
           (end == i || !joined || g->ops[end].joins_previous))
        end++;
    return end;
}

/* One-token attention nodes side by side lay out their scratch alike (the
 * largest), so that their sequences' different lengths do not keep them
 * from joining (plan_joins). */
static void plan_alike_scratch(cpu_graph *g) {
    for (int32_t i = 0, end; i < g->n_ops; i = end > i ? end : i + 1) {
        end = attention_run_end(g, i, false);
        size_t widest = 0;
        for (int32_t j = i; j < end; j++)
            widest = g->ops[j].per_thread > widest ? g->ops[j].per_thread : widest;
        for (int32_t j = i; j < end; j++)
            g->ops[j].per_thread = widest;
    }
}

/* Sets whole on the nodes of each joined run but its last run length %
 * nth. */
static void plan_whole_nodes(cpu_graph *g) {
    for (int32_t i = 0, end; i < g->n_ops; i = end > i ? end : i + 1) {
        end = attention_run_end(g, i, true);
        int32_t whole = end > i ? end - i - (end - i) % g->ops[i].nth : 0;
        for (int32_t j = i; j < end; j++)
            g->ops[j].whole = j - i < whole;
    }
}

static void run_op(cpu_ctx *c, cpu_op *op) {
    if (op->fused)
        return;
    c->op = op;
    c->first_phase = true;
    switch (op->dst->op) {
    case TPORT_OP_ADD:
    case TPORT_OP_MUL:
    case TPORT_OP_DIV:
    case TPORT_OP_SCALE:
    case TPORT_OP_SILU:
    case TPORT_OP_GELU:
    case TPORT_OP_SWIGLU:
        cpu_run_elementwise(c, op);
        break;
    case TPORT_OP_GELU_F16:
    case TPORT_OP_GELU_ERF:
    case TPORT_OP_TANH:
    case TPORT_OP_CLAMP:
        cpu_run_activation(c, op);
        break;
    case TPORT_OP_RMS_NORM:
    case TPORT_OP_NORM:
    case TPORT_OP_SOFT_MAX:
    case TPORT_OP_SOFT_MAX_EXT:
        cpu_run_norm(c, op);
        break;
    case TPORT_OP_ROPE:
    case TPORT_OP_ROPE_EXT:
        cpu_run_rope(c, op);
        break;
    case TPORT_OP_MUL_MAT:
        cpu_run_mul_mat(c, op);
        break;
    case TPORT_OP_MUL_MAT_ID:
        cpu_run_mul_mat_id(c, op);
        break;
    case TPORT_OP_SIGMOID:
    case TPORT_OP_SUM_ROWS:
    case TPORT_OP_ARGSORT_TOP_K:
    case TPORT_OP_ADD_ID:
    case TPORT_OP_SWIGLU_OAI:
    case TPORT_OP_EXPERT_GROUPS:
        cpu_run_moe(c, op);
        break;
    case TPORT_OP_FLASH_ATTN:
    case TPORT_OP_FLASH_ATTN_EXT:
        cpu_run_flash_attn(c, op);
        break;
    default: /* get_rows, cpy, cont, concat */
        cpu_run_copy(c, op);
        break;
    }
}

/* The pool's task: every thread walks every node. */
static void graph_task(void *arg, int ith, int nth) {
    cpu_graph *g = arg;
    cpu_ctx c = {.ith = ith, .nth = nth, .barrier = g->barrier};
    for (int32_t i = 0; i < g->n_ops && !c.stopped; i++)
        run_op(&c, &g->ops[i]);
}

tport_status cpu_graph_compute(cpu_graph *g, cpu_pool *pool, const tport_graph_view *v) {
    int budget = v->n_threads < 1 ? 1 : v->n_threads > CPU_MAX_THREADS ? CPU_MAX_THREADS : v->n_threads;
    if (v->n_nodes > g->cap_ops) {
        cpu_op *ops = realloc(g->ops, (size_t)v->n_nodes * sizeof *ops);
        if (!ops)
            return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: out of memory for %d nodes", (int)v->n_nodes);
        g->ops = ops;
        g->cap_ops = v->n_nodes;
    }
    g->n_ops = 0;
    int nth = 1;
    for (int32_t i = 0; i < v->n_nodes; i++) {
        int32_t idx = v->nodes[i];
        if (!cpu_supports(v, idx))
            return cpu_host->error(TPORT_STATUS_UNSUPPORTED, "cpu: node %d is not supported", (int)idx);
        prepare_op(&g->ops[i], v, idx, budget);
        nth = g->ops[i].nth > nth ? g->ops[i].nth : nth;
        g->n_ops = i + 1;
    }
    plan_alike_scratch(g);
    size_t need = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        size_t n = g->ops[i].shared + g->ops[i].per_thread * (size_t)g->ops[i].nth;
        need = n > need ? n : need;
    }
    if (need > g->scratch_size) {
        free(g->scratch);
        g->scratch = malloc(need);
        g->scratch_size = g->scratch ? need : 0;
        if (!g->scratch)
            return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: out of memory for %zu bytes of scratch", need);
    }
    for (int32_t i = 0; i < g->n_ops; i++)
        g->ops[i].scratch = g->scratch;
    tport_status st = prepare_tables(g);
    if (st)
        return st;
    plan_fusions(g);
    plan_joins(g);
    plan_whole_nodes(g);

    cpu_pool_run(pool, graph_task, g, nth);

    for (int32_t i = 0; i < g->n_ops; i++) {
        cpu_op *op = &g->ops[i];
        int st = atomic_load(&op->status);
        if (st)
            return cpu_host->error(st, "cpu: node '%s': %s", op->dst->name ? op->dst->name : "", op->message);
    }
    return TPORT_STATUS_OK;
}
