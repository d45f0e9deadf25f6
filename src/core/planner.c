/* Memory planner: op results that are neither views nor outputs share one
 * arena; a block is reused once the last node reading it (directly or
 * through any view of it) has run.  Outputs are placed in the same arena
 * but never released, so they stay valid after compute. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "tensor.h"

typedef struct {
    size_t offset, size;
} block;

/* Free blocks sorted by offset, plus the current end of the arena. */
typedef struct {
    block *free_blocks;
    int n_free, cap_free;
    size_t end, peak;
} allocator;

static size_t align_up(size_t n) {
    return (n + TPORT_DATA_ALIGN - 1) / TPORT_DATA_ALIGN * TPORT_DATA_ALIGN;
}

/* Best fit among free blocks, else grow the arena. */
static size_t alloc_block(allocator *a, size_t size) {
    int best = -1;
    for (int i = 0; i < a->n_free; i++)
        if (a->free_blocks[i].size >= size && (best < 0 || a->free_blocks[i].size < a->free_blocks[best].size))
            best = i;
    if (best >= 0) {
        size_t off = a->free_blocks[best].offset;
        a->free_blocks[best].offset += size;
        a->free_blocks[best].size -= size;
        if (!a->free_blocks[best].size) {
            memmove(&a->free_blocks[best], &a->free_blocks[best + 1],
                    (size_t)(a->n_free - best - 1) * sizeof(block));
            a->n_free--;
        }
        return off;
    }
    /* a free block touching the end grows instead of leaving a hole */
    if (a->n_free && a->free_blocks[a->n_free - 1].offset + a->free_blocks[a->n_free - 1].size == a->end) {
        size_t off = a->free_blocks[--a->n_free].offset;
        a->end = off + size;
    } else {
        size_t off = a->end;
        a->end += size;
        if (a->end > a->peak)
            a->peak = a->end;
        return off;
    }
    if (a->end > a->peak)
        a->peak = a->end;
    return a->end - size;
}

static tport_status free_block(allocator *a, size_t offset, size_t size) {
    int i = 0;
    while (i < a->n_free && a->free_blocks[i].offset < offset)
        i++;
    if (a->n_free == a->cap_free) {
        int cap = a->cap_free ? a->cap_free * 2 : 16;
        block *p = realloc(a->free_blocks, (size_t)cap * sizeof *p);
        if (!p)
            return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory planning a graph");
        a->free_blocks = p;
        a->cap_free = cap;
    }
    memmove(&a->free_blocks[i + 1], &a->free_blocks[i], (size_t)(a->n_free - i) * sizeof(block));
    a->free_blocks[i] = (block){offset, size};
    a->n_free++;
    /* merge with the following, then the preceding neighbour */
    if (i + 1 < a->n_free && offset + size == a->free_blocks[i + 1].offset) {
        a->free_blocks[i].size += a->free_blocks[i + 1].size;
        memmove(&a->free_blocks[i + 1], &a->free_blocks[i + 2], (size_t)(a->n_free - i - 2) * sizeof(block));
        a->n_free--;
    }
    if (i > 0 && a->free_blocks[i - 1].offset + a->free_blocks[i - 1].size == a->free_blocks[i].offset) {
        a->free_blocks[i - 1].size += a->free_blocks[i].size;
        memmove(&a->free_blocks[i], &a->free_blocks[i + 1], (size_t)(a->n_free - i - 1) * sizeof(block));
        a->n_free--;
    }
    return TPORT_STATUS_OK;
}

/* Op results that own their memory; views (including cpy) borrow it. */
static bool planner_owned(const tport_tensor *t) {
    return t->op != TPORT_OP_NONE && !(t->flags & TPORT_TENSOR_IS_VIEW);
}

/* Index of the tensor that owns t's memory. */
static int owner_index(const tport_graph *g, const tport_tensor *t) {
    return tport_graph_find(g, t->view_src ? t->view_src : t);
}

static tport_status plan(tport_graph *g) {
    int n = g->n_tensors;
    int *last_use = malloc((size_t)(n ? n : 1) * sizeof *last_use);
    size_t *offsets = malloc((size_t)(n ? n : 1) * sizeof *offsets);
    uint8_t *output = malloc((size_t)(n ? n : 1));
    allocator a = {0};
    tport_status st = TPORT_STATUS_OK;
    if (!last_use || !offsets || !output) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory planning a graph");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        last_use[i] = -1;
        offsets[i] = SIZE_MAX;
        output[i] = 0;
    }
    /* a result's memory is kept, and so is the memory a view result uses */
    for (int i = 0; i < n; i++) {
        if (!g->is_output[i])
            continue;
        int o = owner_index(g, g->tensors[i]);
        if (o >= 0)
            output[o] = 1;
    }
    for (int p = 0; p < g->n_nodes; p++) {
        const tport_tensor *t = g->tensors[g->node_index[p]];
        for (int s = 0; s < TPORT_CORE_MAX_SRC; s++) {
            if (!t->src[s])
                continue;
            int o = owner_index(g, t->src[s]);
            if (o >= 0)
                last_use[o] = p;
        }
    }
    for (int p = 0; p < g->n_nodes && !st; p++) {
        int ti = g->node_index[p];
        tport_tensor *t = g->tensors[ti];
        if (planner_owned(t))
            offsets[ti] = alloc_block(&a, align_up(tport_tensor_nbytes(t)));
        /* release sources whose last reader this was (and a result nobody reads) */
        for (int s = -1; s < TPORT_CORE_MAX_SRC && !st; s++) {
            const tport_tensor *src = s < 0 ? t : t->src[s];
            if (!src)
                continue;
            int o = owner_index(g, src);
            if (o < 0 || offsets[o] == SIZE_MAX)
                continue;
                    if (output[o] || last_use[o] > p || (s < 0 && last_use[o] >= 0))
                continue;
            st = free_block(&a, offsets[o], align_up(tport_tensor_nbytes(g->tensors[o])));
            last_use[o] = g->n_nodes; /* released once */
        }
    }
    if (st)
        goto done;
    tport_graph_release_arena(g);
    if (a.peak) {
        g->arena = g->workspace ? tport_workspace_reserve(g->workspace, a.peak)
                                : aligned_alloc(TPORT_DATA_ALIGN, a.peak);
        g->arena_lent = g->workspace != NULL;
        if (!g->arena) {
            st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory: graph needs %zu bytes", a.peak);
            goto done;
        }
        g->arena_size = a.peak;
    }
    g->peak = a.peak;
    free(g->offsets);
    g->offsets = offsets;
    offsets = NULL;
    g->planned = true;
done:
    free(a.free_blocks);
    free(last_use);
    free(output);
    free(offsets);
    return st;
}

tport_status tport_graph_plan(tport_graph *g) {
    if (!g)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "plan: NULL graph");
    if (!g->planned) {
        tport_status st = plan(g);
        if (st)
            return st;
    }
    /* resolve data pointers every time: leaves may have been given new data,
     * views moved (tport_view_move), and a cpy sits where its destination is */
    for (int i = 0; i < g->n_tensors; i++) {
        tport_tensor *t = g->tensors[i];
        if (t->op == TPORT_OP_CPY && t->src[1])
            t->view_offs = t->src[1]->view_src ? t->src[1]->view_offs : 0;
        if (g->offsets[i] != SIZE_MAX) {
            t->data = (uint8_t *)g->arena + g->offsets[i];
        } else if (t->view_src) {
            t->data = t->view_src->data ? (uint8_t *)t->view_src->data + t->view_offs : NULL;
        }
        const tport_tensor *own = t->view_src ? t->view_src : t;
        if (!t->data && !planner_owned(t) && !own->res.backend)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                               "tensor '%s' has no data (give it a context arena or tport_tensor_set_data)",
                               t->name);
    }
    return TPORT_STATUS_OK;
}
