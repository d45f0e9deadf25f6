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
 * A kernel's failure is recorded in its cpu_op; the threads learn of it at
 * the next barrier, all at the same one, and stop; the calling thread then
 * reports the first failed node.  Nodes share one scratch allocation,
 * sized for the largest: phases that may touch it at once never belong to
 * different nodes. */
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
    if (d->op == TPORT_OP_MUL_MAT)
        work *= op->src[0]->ne[0];
    if (d->op == TPORT_OP_FLASH_ATTN) /* every query meets every key twice */
        work *= 2 * op->src[1]->ne[1];
    if (work < 65536)
        return 1;
    return budget;
}

/* Fills op for node idx; returns the scratch bytes it needs. */
static size_t prepare_op(cpu_op *op, const tport_graph_view *v, int32_t idx, int budget) {
    memset(op, 0, sizeof *op);
    op->dst = v->tensors[idx];
    for (int i = 0; i < TPORT_MAX_SRC; i++)
        op->src[i] = op->dst->src[i] >= 0 ? v->tensors[op->dst->src[i]] : NULL;
    atomic_init(&op->status, 0);
    atomic_init(&op->next_chunk, 0);
    op->nth = threads_for(op, budget);

    /* scratch: rows of floats per thread, plus packed activations for mul_mat */
    int64_t widest = op->dst->ne[0];
    for (int i = 0; i < TPORT_MAX_SRC; i++)
        if (op->src[i] && op->src[i]->ne[0] > widest)
            widest = op->src[i]->ne[0];
    op->per_thread = (size_t)(widest < 1024 ? 1024 : widest) * 4 * sizeof(float);
    if (op->dst->op == TPORT_OP_MUL_MAT && cpu_mul_mat_thread_scratch(op) > op->per_thread)
        op->per_thread = cpu_mul_mat_thread_scratch(op);
    if (op->dst->op == TPORT_OP_FLASH_ATTN && cpu_flash_attn_thread_scratch(op) > op->per_thread)
        op->per_thread = cpu_flash_attn_thread_scratch(op);
    op->per_thread = (op->per_thread + 63) / 64 * 64;
    op->shared = op->dst->op == TPORT_OP_MUL_MAT ? (cpu_mul_mat_shared_scratch(op) + 63) / 64 * 64 : 0;
    return op->shared + op->per_thread * (size_t)op->nth;
}

static void run_op(cpu_ctx *c, cpu_op *op) {
    c->op = op;
    switch (op->dst->op) {
    case TPORT_OP_ADD:
    case TPORT_OP_MUL:
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
        cpu_run_rope(c, op);
        break;
    case TPORT_OP_MUL_MAT:
        cpu_run_mul_mat(c, op);
        break;
    case TPORT_OP_FLASH_ATTN:
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
    size_t need = 0;
    int nth = 1;
    for (int32_t i = 0; i < v->n_nodes; i++) {
        int32_t idx = v->nodes[i];
        if (!cpu_supports(v, idx))
            return cpu_host->error(TPORT_STATUS_UNSUPPORTED, "cpu: node %d is not supported", (int)idx);
        size_t n = prepare_op(&g->ops[i], v, idx, budget);
        need = n > need ? n : need;
        nth = g->ops[i].nth > nth ? g->ops[i].nth : nth;
        g->n_ops = i + 1;
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

    cpu_pool_run(pool, graph_task, g, nth);

    for (int32_t i = 0; i < g->n_ops; i++) {
        cpu_op *op = &g->ops[i];
        int st = atomic_load(&op->status);
        if (st)
            return cpu_host->error(st, "cpu: node '%s': %s", op->dst->name ? op->dst->name : "", op->message);
    }
    return TPORT_STATUS_OK;
}
