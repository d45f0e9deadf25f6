/* compute / compute_async: a graph view becomes a list of dispatches (one
 * or more per node), recorded into one command buffer with a barrier after
 * each.  A graph whose tensors all live in our buffers is kept by its
 * graph_key and replayed while its bind_key is unchanged; a graph with
 * host-memory tensors (an ABI 1.0 host) is staged through a host-visible
 * bounce buffer, recorded, run and read back on each call. */
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

typedef struct loc {
    vk_buf *buf;   /* NULL: not resolved */
    uint64_t base; /* byte offset of element 0 in buf */
} loc;

typedef struct dispatch {
    int shader;
    uint32_t scratch_mask; /* bindings in the graph's scratch buffer */
    VkDescriptorBufferInfo bind[4];
    uint32_t w[VK_PARAM_WORDS];
    uint32_t gx, gy, gz;
} dispatch;

typedef struct plan {
    vk_dev *dev;
    vk_buf scratch; /* stands for the scratch buffer until it is made */
    uint64_t scratch_bytes;
    dispatch *d;
    int n, cap;
} plan;

/* One host-memory range copied into the bounce buffer. */
typedef struct region {
    uint8_t *start, *end;
    uint64_t at; /* offset in the bounce buffer */
    bool written;
} region;

static tport_status fail(const char *what, const tport_tensor_view *t) {
    return vk_host->error(TPORT_STATUS_UNSUPPORTED, "vulkan: %s (tensor '%s')", what, t->name ? t->name : "");
}

static dispatch *add(plan *p, int shader) {
    if (p->n == p->cap) {
        int cap = p->cap ? p->cap * 2 : 64;
        dispatch *nd = realloc(p->d, (size_t)cap * sizeof *nd);
        if (!nd)
            return NULL;
        p->d = nd;
        p->cap = cap;
    }
    dispatch *x = &p->d[p->n++];
    memset(x, 0, sizeof *x);
    x->shader = shader;
    return x;
}

/* Binds operand k to `bytes` bytes starting at byte `at` of the tensor's
 * buffer, and writes its shape and strides (ne may be overridden). */
static tport_status bind(plan *p, dispatch *x, int k, const tport_tensor_view *t, const loc *l, uint64_t at,
                         uint64_t bytes, const int64_t *ne) {
    vk_dev *d = p->dev;
    uint64_t start = l->base + at;
    uint64_t aligned = start & ~(d->align - 1);
    uint64_t delta = start - aligned;
    uint64_t range = (delta + bytes + 3) & ~(uint64_t)3;
    if (aligned + range > l->buf->size)
        return fail("operand runs past its buffer", t);
    if (range > d->max_range)
        return fail("operand larger than one binding range", t);
    uint64_t elem_align = t->type == TPORT_TYPE_F32 || t->type == TPORT_TYPE_I32 ? 4 : 2;
    if (start % elem_align)
        return fail("operand not aligned to its element size", t);
    x->bind[k == 3 ? 3 : k] = (VkDescriptorBufferInfo){.buffer = l->buf->buf, .offset = aligned, .range = range};
    uint32_t *w = x->w + 16 * k;
    for (int i = 0; i < 4; i++) {
        w[i] = (uint32_t)(ne ? ne[i] : t->ne[i]);
        w[4 + i] = (uint32_t)t->nb[i];
    }
    w[8] = (uint32_t)delta;
    return TPORT_STATUS_OK;
}

static tport_status bind_whole(plan *p, dispatch *x, int k, const tport_tensor_view *t, const loc *l) {
    return bind(p, x, k, t, l, 0, vk_span(t), NULL);
}

static void groups_1d(dispatch *x, uint64_t invocations, uint32_t wg) {
    uint64_t g = (invocations + wg - 1) / wg;
    if (g == 0)
        g = 1;
    x->gx = (uint32_t)(g < 65535 ? g : 65535);
    x->gy = (uint32_t)((g + x->gx - 1) / x->gx);
    x->gz = 1;
}

static uint32_t fbits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static int64_t nelem(const tport_tensor_view *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

/* Rows of a 2-D weight per chunk so that each chunk fits one range. */
static int64_t rows_per_chunk(vk_dev *d, const tport_tensor_view *w) {
    uint64_t span = vk_span(w);
    if (span + d->align <= d->max_range)
        return w->ne[1];
    uint64_t row = span - (uint64_t)(w->ne[1] - 1) * w->nb[1];
    uint64_t room = d->max_range - d->align - 4;
    int64_t n = (int64_t)((room - row) / w->nb[1]) + 1;
    return n < 1 ? 1 : n;
}

static tport_status plan_mul_mat(plan *p, const tport_tensor_view *t, const loc *lt, const tport_tensor_view *a,
                                 const loc *la, const tport_tensor_view *b, const loc *lb) {
    int slot = vk_weight_slot(a->type);
    bool vec = t->ne[1] < 8;
    int64_t rows = rows_per_chunk(p->dev, a);
    tport_type_id round_to = vk_act_rounding(a);
    tport_tensor_view rounded;
    loc lr;
    if (round_to) {
        /* b rounded as the CPU quantizes it, into a dense F32 scratch copy */
        rounded = *b;
        rounded.nb[0] = 4;
        for (int i = 1; i < 4; i++)
            rounded.nb[i] = rounded.nb[i - 1] * (uint64_t)b->ne[i - 1];
        lr = (loc){.buf = &p->scratch, .base = p->scratch_bytes};
        p->scratch_bytes += (vk_span(&rounded) + p->dev->align - 1) & ~(p->dev->align - 1);
        dispatch *x = add(p, VK_SH_QUANT_ACT);
        if (!x)
            return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
        tport_status st = bind_whole(p, x, 1, b, lb);
        if (st == TPORT_STATUS_OK)
            st = bind_whole(p, x, 3, &rounded, &lr);
        if (st != TPORT_STATUS_OK)
            return st;
        x->scratch_mask = 1u << 3;
        uint64_t blocks = (uint64_t)nelem(b) / (round_to == TPORT_TYPE_Q8_K ? 256 : 32);
        x->w[64] = round_to == TPORT_TYPE_Q8_K;
        x->w[65] = (uint32_t)blocks;
        groups_1d(x, blocks, 64);
        b = &rounded;
        lb = &lr;
    }
    for (int64_t r0 = 0; r0 < a->ne[1]; r0 += rows) {
        int64_t n = a->ne[1] - r0 < rows ? a->ne[1] - r0 : rows;
        dispatch *x = add(p, (vec ? VK_SH_MMV : VK_SH_MMT) + slot);
        if (!x)
            return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
        int64_t ne[4] = {a->ne[0], n, a->ne[2], a->ne[3]};
        tport_tensor_view chunk = *a;
        chunk.ne[1] = n;
        tport_status st = bind(p, x, 0, a, la, (uint64_t)r0 * a->nb[1], vk_span(&chunk), ne);
        if (st == TPORT_STATUS_OK)
            st = bind_whole(p, x, 1, b, lb);
        if (st == TPORT_STATUS_OK)
            st = bind_whole(p, x, 3, t, lt);
        if (st != TPORT_STATUS_OK)
            return st;
        if (round_to)
            x->scratch_mask = 1u << 1;
        x->w[64] = (uint32_t)r0;
        x->w[65] = (uint32_t)n;
        x->w[66] = (uint32_t)(b->ne[2] / a->ne[2]);
        x->w[67] = (uint32_t)(b->ne[3] / a->ne[3]);
        if (vec) {
            x->gx = (uint32_t)(n < 65535 ? n : 65535);
            x->gy = (uint32_t)((n + 65534) / 65535);
            x->gz = (uint32_t)(t->ne[1] * t->ne[2] * t->ne[3]);
        } else {
            x->gx = (uint32_t)((n + 31) / 32);
            x->gy = (uint32_t)((t->ne[1] + 31) / 32);
            x->gz = (uint32_t)(t->ne[2] * t->ne[3]);
        }
    }
    return TPORT_STATUS_OK;
}

static tport_status plan_get_rows(plan *p, const tport_tensor_view *t, const loc *lt, const tport_tensor_view *a,
                                  const loc *la, const tport_tensor_view *ids, const loc *li) {
    int slot = vk_weight_slot(a->type);
    int64_t rows = rows_per_chunk(p->dev, a);
    for (int64_t r0 = 0; r0 < a->ne[1]; r0 += rows) {
        int64_t n = a->ne[1] - r0 < rows ? a->ne[1] - r0 : rows;
        dispatch *x = add(p, VK_SH_GET_ROWS + slot);
        if (!x)
            return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
        int64_t ne[4] = {a->ne[0], n, a->ne[2], a->ne[3]};
        tport_tensor_view chunk = *a;
        chunk.ne[1] = n;
        tport_status st = bind(p, x, 0, a, la, (uint64_t)r0 * a->nb[1], vk_span(&chunk), ne);
        if (st == TPORT_STATUS_OK)
            st = bind_whole(p, x, 1, ids, li);
        if (st == TPORT_STATUS_OK)
            st = bind_whole(p, x, 3, t, lt);
        if (st != TPORT_STATUS_OK)
            return st;
        x->w[64] = (uint32_t)r0;
        x->w[65] = (uint32_t)n;
        x->w[66] = r0 == 0;
        x->w[67] = (uint32_t)nelem(t);
        x->w[69] = (uint32_t)a->ne[1];
        groups_1d(x, (uint64_t)nelem(t), 256);
    }
    return TPORT_STATUS_OK;
}

static float param_f(const tport_tensor_view *t, size_t at) {
    float f = 0;
    if (t->params && t->params_size >= at + sizeof f)
        memcpy(&f, (const uint8_t *)t->params + at, sizeof f);
    return f;
}

static tport_status plan_node(plan *p, const tport_graph_view *g, int32_t node, const loc *locs) {
    const tport_tensor_view *t = g->tensors[node];
    const tport_tensor_view *a = g->tensors[t->src[0]];
    const tport_tensor_view *b = t->src[1] >= 0 ? g->tensors[t->src[1]] : NULL;
    const loc *lt = &locs[node], *la = &locs[t->src[0]], *lb = b ? &locs[t->src[1]] : NULL;
    if (t->op == TPORT_OP_MUL_MAT)
        return plan_mul_mat(p, t, lt, a, la, b, lb);
    if (t->op == TPORT_OP_GET_ROWS)
        return plan_get_rows(p, t, lt, a, la, b, lb);
    int shader = VK_SH_ELEMENTWISE;
    if (t->op == TPORT_OP_RMS_NORM || t->op == TPORT_OP_NORM || t->op == TPORT_OP_SOFT_MAX)
        shader = VK_SH_ROWNORM;
    else if (t->op == TPORT_OP_ROPE)
        shader = VK_SH_ROPE;
    else if (t->op == TPORT_OP_CONCAT)
        shader = VK_SH_CONCAT;
    dispatch *x = add(p, shader);
    if (!x)
        return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
    tport_status st = bind_whole(p, x, 0, a, la);
    if (st == TPORT_STATUS_OK && b)
        st = bind_whole(p, x, 1, b, lb);
    if (st == TPORT_STATUS_OK)
        st = bind_whole(p, x, 3, t, lt);
    if (st != TPORT_STATUS_OK)
        return st;
    uint32_t *w = x->w;
    uint64_t n = (uint64_t)nelem(t);
    switch (t->op) {
    case TPORT_OP_ADD:
    case TPORT_OP_MUL:
    case TPORT_OP_SWIGLU:
    case TPORT_OP_SCALE:
    case TPORT_OP_SILU:
    case TPORT_OP_GELU:
    case TPORT_OP_CPY:
    case TPORT_OP_CONT:
        w[64] = t->op == TPORT_OP_ADD      ? 0
                : t->op == TPORT_OP_MUL    ? 1
                : t->op == TPORT_OP_SWIGLU ? 2
                : t->op == TPORT_OP_SCALE  ? 3
                : t->op == TPORT_OP_SILU   ? 4
                : t->op == TPORT_OP_GELU   ? 5
                                           : 6;
        w[65] = fbits(t->op == TPORT_OP_SCALE ? param_f(t, 0) : 0.0f);
        w[66] = a->type == TPORT_TYPE_F16;
        w[67] = t->type == TPORT_TYPE_F16;
        w[68] = (uint32_t)n;
        groups_1d(x, n, 256);
        return TPORT_STATUS_OK;
    case TPORT_OP_RMS_NORM:
    case TPORT_OP_NORM:
    case TPORT_OP_SOFT_MAX:
        w[64] = t->op == TPORT_OP_RMS_NORM ? 0 : t->op == TPORT_OP_NORM ? 1 : 2;
        w[65] = fbits(param_f(t, 0));
        w[66] = b != NULL;
        groups_1d(x, (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]), 1);
        return TPORT_STATUS_OK;
    case TPORT_OP_ROPE: {
        tport_params_rope r;
        memcpy(&r, t->params, sizeof r);
        w[64] = (uint32_t)r.n_dims;
        w[65] = (uint32_t)r.mode;
        w[66] = fbits(r.freq_base);
        w[67] = fbits(r.freq_scale);
        w[68] = (uint32_t)(r.n_dims / 2 + (t->ne[0] - r.n_dims));
        groups_1d(x, (uint64_t)w[68] * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]), 256);
        return TPORT_STATUS_OK;
    }
    case TPORT_OP_CONCAT: {
        tport_params_concat c;
        memcpy(&c, t->params, sizeof c);
        w[64] = (uint32_t)c.dim;
        w[65] = (uint32_t)n;
        groups_1d(x, n, 256);
        return TPORT_STATUS_OK;
    }
    default:
        return fail("op not supported", t);
    }
}

/* ---- recording ---------------------------------------------------------- */

static void graph_free(vk_dev *d, vk_graph *gr) {
    if (gr->cmd)
        vkFreeCommandBuffers(d->dev, d->cmd_pool, 1, &gr->cmd);
    if (gr->pool)
        vkDestroyDescriptorPool(d->dev, gr->pool, NULL);
    vk_buf_destroy(gr->params);
    vk_buf_destroy(gr->scratch);
    memset(gr, 0, sizeof *gr);
}

static tport_status record(vk_dev *d, plan *p, vk_graph *gr) {
    memset(gr, 0, sizeof *gr);
    int n = p->n ? p->n : 1;
    tport_status st = vk_buf_make(d, (uint64_t)n * VK_PARAM_WORDS * 4, true, &gr->params);
    if (st != TPORT_STATUS_OK)
        return st;
    if (p->scratch_bytes) {
        st = vk_buf_make(d, p->scratch_bytes, false, &gr->scratch);
        if (st != TPORT_STATUS_OK) {
            graph_free(d, gr);
            return st;
        }
    }
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = (uint32_t)n * 5};
    VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = (uint32_t)n,
                                     .poolSizeCount = 1, .pPoolSizes = &ps};
    VkResult r = vkCreateDescriptorPool(d->dev, &pi, NULL, &gr->pool);
    if (r != VK_SUCCESS) {
        graph_free(d, gr);
        return vk_status(r, "vkCreateDescriptorPool");
    }
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = d->cmd_pool, .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    r = vkAllocateCommandBuffers(d->dev, &ai, &gr->cmd);
    if (r != VK_SUCCESS) {
        gr->cmd = VK_NULL_HANDLE;
        graph_free(d, gr);
        return vk_status(r, "vkAllocateCommandBuffers");
    }
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    vkBeginCommandBuffer(gr->cmd, &bi);
    vk_cmd_barrier(gr->cmd);
    uint32_t *words = gr->params->map;
    VkDescriptorBufferInfo pinfo = {.buffer = gr->params->buf, .offset = 0, .range = VK_WHOLE_SIZE};
    for (int i = 0; i < p->n && st == TPORT_STATUS_OK; i++) {
        dispatch *x = &p->d[i];
        VkPipeline pipe;
        st = vk_pipeline_get(d, x->shader, &pipe);
        if (st != TPORT_STATUS_OK)
            break;
        memcpy(words + (size_t)i * VK_PARAM_WORDS, x->w, sizeof x->w);
        VkDescriptorSetAllocateInfo si = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                          .descriptorPool = gr->pool, .descriptorSetCount = 1,
                                          .pSetLayouts = &d->dsl};
        VkDescriptorSet set;
        r = vkAllocateDescriptorSets(d->dev, &si, &set);
        if (r != VK_SUCCESS) {
            st = vk_status(r, "vkAllocateDescriptorSets");
            break;
        }
        VkDescriptorBufferInfo info[5];
        for (int k = 0; k < 4; k++) {
            info[k] = x->bind[k].buffer ? x->bind[k] : pinfo; /* unused bindings: any valid buffer */
            if (x->scratch_mask & (1u << k)) {
                info[k] = x->bind[k];
                info[k].buffer = gr->scratch->buf;
            }
        }
        info[4] = pinfo;
        VkWriteDescriptorSet wr[5];
        for (uint32_t k = 0; k < 5; k++)
            wr[k] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = set,
                                           .dstBinding = k, .descriptorCount = 1,
                                           .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                           .pBufferInfo = &info[k]};
        vkUpdateDescriptorSets(d->dev, 5, wr, 0, NULL);
        uint32_t base = (uint32_t)i * VK_PARAM_WORDS;
        vkCmdBindPipeline(gr->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        vkCmdBindDescriptorSets(gr->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, d->layout, 0, 1, &set, 0, NULL);
        vkCmdPushConstants(gr->cmd, d->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &base);
        vkCmdDispatch(gr->cmd, x->gx, x->gy, x->gz);
        vk_cmd_barrier(gr->cmd);
    }
    vkEndCommandBuffer(gr->cmd);
    if (st != TPORT_STATUS_OK)
        graph_free(d, gr);
    gr->n_dispatch = p->n;
    return st;
}

/* ---- compute ------------------------------------------------------------ */

static tport_status check_graph(const tport_graph_view *g) {
    if (!g || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_0 || g->n_tensors < 0 || g->n_nodes < 0 ||
        (g->n_nodes && (!g->tensors || !g->nodes)))
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: malformed graph view");
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t n = g->nodes[i];
        if (n < 0 || n >= g->n_tensors || !g->tensors[n])
            return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: node %d out of range", (int)n);
        const tport_tensor_view *t = g->tensors[n];
        for (int k = 0; k < TPORT_MAX_SRC; k++)
            if (t->src[k] >= g->n_tensors || (t->src[k] >= 0 && !g->tensors[t->src[k]]))
                return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: bad source of node %d", (int)n);
    }
    return TPORT_STATUS_OK;
}

static int cmp_region(const void *pa, const void *pb) {
    const region *a = pa, *b = pb;
    return a->start < b->start ? -1 : a->start > b->start;
}

tport_status vk_graph_compute(vk_backend *be, vk_dev *d, const tport_graph_view *g, tport_ticket *ticket) {
    if (ticket)
        *ticket = 0;
    tport_status st = check_graph(g);
    if (st != TPORT_STATUS_OK)
        return st;
    if (d->lost)
        return vk_host->error(TPORT_STATUS_DEVICE_LOST, "vulkan: %s was lost", d->props.deviceName);
    if (g->n_nodes == 0)
        return TPORT_STATUS_OK;
    int32_t nt = g->n_tensors;
    loc *locs = calloc((size_t)nt, sizeof *locs);
    bool *touched = calloc((size_t)nt, sizeof *touched); /* a node or a source of one */
    bool *written = calloc((size_t)nt, sizeof *written);
    region *regs = calloc((size_t)nt, sizeof *regs);
    plan p = {.dev = d, .scratch = {.size = UINT64_MAX / 4}};
    vk_buf *bounce = NULL;
    vk_graph local = {0};
    int nreg = 0;
    if (!locs || !touched || !written || !regs) {
        st = vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
        goto done;
    }
    for (int32_t i = 0; i < g->n_nodes; i++) {
        const tport_tensor_view *t = g->tensors[g->nodes[i]];
        touched[g->nodes[i]] = written[g->nodes[i]] = true;
        for (int k = 0; k < TPORT_MAX_SRC; k++)
            if (t->src[k] >= 0)
                touched[t->src[k]] = true;
    }
    /* where each tensor lives: our buffer, or host memory (bounced) */
    for (int32_t i = 0; i < nt; i++) {
        if (!touched[i])
            continue;
        const tport_tensor_view *t = g->tensors[i];
        uint64_t span = vk_span(t);
        if (!span) {
            st = fail("tensor type or shape not understood", t);
            goto done;
        }
        tport_buffer h = t->struct_size >= TPORT_TENSOR_VIEW_SIZE_1_1 ? t->buffer : 0;
        if (h) {
            vk_buf *b = vk_handle_get(be, h);
            if (!b || b->dev != d) {
                st = fail("unknown or freed buffer handle, or one of another device", t);
                goto done;
            }
            if (t->offset > b->size || span > b->size - t->offset) {
                st = fail("tensor runs past its buffer", t);
                goto done;
            }
            locs[i] = (loc){.buf = b, .base = t->offset};
        } else if (t->data) {
            uint8_t *s = (uint8_t *)((uintptr_t)t->data & ~(uintptr_t)(d->align - 1));
            regs[nreg++] = (region){.start = s, .end = (uint8_t *)t->data + span, .written = written[i]};
        } else {
            st = fail("tensor has neither a buffer nor host memory", t);
            goto done;
        }
    }
    if (nreg) {
        /* merge overlapping host ranges, so views of one tensor stay one
         * memory in the bounce buffer */
        qsort(regs, (size_t)nreg, sizeof *regs, cmp_region);
        int m = 0;
        for (int i = 0; i < nreg; i++) {
            if (m && regs[i].start < regs[m - 1].end) {
                if (regs[i].end > regs[m - 1].end)
                    regs[m - 1].end = regs[i].end;
                regs[m - 1].written |= regs[i].written;
            } else {
                regs[m++] = regs[i];
            }
        }
        nreg = m;
        uint64_t total = 0;
        for (int i = 0; i < nreg; i++) {
            regs[i].at = total;
            total += ((uint64_t)(regs[i].end - regs[i].start) + d->align - 1 + 4) & ~(d->align - 1);
        }
        st = vk_wait(d, d->submitted, UINT64_MAX);
        if (st == TPORT_STATUS_OK)
            st = vk_buf_make(d, total, true, &bounce);
        if (st != TPORT_STATUS_OK)
            goto done;
        for (int i = 0; i < nreg; i++)
            memcpy((uint8_t *)bounce->map + regs[i].at, regs[i].start, (size_t)(regs[i].end - regs[i].start));
        for (int32_t i = 0; i < nt; i++) {
            const tport_tensor_view *t = g->tensors[i];
            bool host = touched[i] && !(t->struct_size >= TPORT_TENSOR_VIEW_SIZE_1_1 && t->buffer);
            if (!host)
                continue;
            for (int r = 0; r < nreg; r++)
                if ((uint8_t *)t->data >= regs[r].start && (uint8_t *)t->data < regs[r].end)
                    locs[i] = (loc){.buf = bounce, .base = regs[r].at + (uint64_t)((uint8_t *)t->data - regs[r].start)};
        }
    }

    bool keyed = !nreg && g->struct_size >= TPORT_GRAPH_VIEW_SIZE_1_1 && g->graph_key;
    vk_graph *gr = NULL;
    if (keyed) {
        for (int i = 0; i < VK_GRAPH_CACHE && !gr; i++)
            if (d->graphs[i].graph_key == g->graph_key)
                gr = &d->graphs[i];
        if (gr && gr->bind_key != g->bind_key) {
            st = vk_wait(d, gr->last_ticket, UINT64_MAX);
            if (st != TPORT_STATUS_OK)
                goto done;
            graph_free(d, gr);
            gr = NULL;
        }
    }
    if (!gr) {
        for (int32_t i = 0; i < g->n_nodes && st == TPORT_STATUS_OK; i++) {
            int32_t n = g->nodes[i];
            if (g->tensors[n]->op == TPORT_OP_NONE)
                continue;
            if (!vk_supports(d, g, n)) {
                st = fail("node not supported (supports_op says no)", g->tensors[n]);
                break;
            }
            st = plan_node(&p, g, n, locs);
        }
        if (st != TPORT_STATUS_OK)
            goto done;
        if (keyed) {
            /* a free slot, else the least recently used one */
            int victim = 0;
            for (int i = 0; i < VK_GRAPH_CACHE; i++) {
                if (!d->graphs[i].graph_key) {
                    victim = i;
                    break;
                }
                if (d->graphs[i].last_use < d->graphs[victim].last_use)
                    victim = i;
            }
            gr = &d->graphs[victim];
            if (gr->graph_key) {
                st = vk_wait(d, gr->last_ticket, UINT64_MAX);
                if (st != TPORT_STATUS_OK)
                    goto done;
                graph_free(d, gr);
            }
        } else {
            gr = &local;
        }
        st = record(d, &p, gr);
        if (st != TPORT_STATUS_OK)
            goto done;
        if (keyed) {
            gr->graph_key = g->graph_key;
            gr->bind_key = g->bind_key;
        }
        vk_host->log(TPORT_LOG_DEBUG, "vulkan: recorded %d dispatches for %d nodes (graph key %016llx%s)", p.n,
                     (int)g->n_nodes, (unsigned long long)(keyed ? g->graph_key : 0),
                     keyed ? "" : ", host-memory operands: not kept");
    } else {
        /* a command buffer is not resubmitted while it is pending */
        st = vk_wait(d, gr->last_ticket, UINT64_MAX);
        if (st != TPORT_STATUS_OK)
            goto done;
    }
    gr->last_use = ++d->use_clock;
    uint64_t t = 0;
    st = vk_submit(d, gr->cmd, &t);
    if (st != TPORT_STATUS_OK)
        goto done;
    gr->last_ticket = t;
    if (!keyed || nreg) {
        st = vk_wait(d, t, UINT64_MAX);
        if (st == TPORT_STATUS_OK)
            for (int i = 0; i < nreg; i++)
                if (regs[i].written)
                    memcpy(regs[i].start, (uint8_t *)bounce->map + regs[i].at, (size_t)(regs[i].end - regs[i].start));
    } else if (ticket) {
        *ticket = t;
    }
done:
    if (local.cmd || local.params) {
        if (local.last_ticket)
            vk_wait(d, local.last_ticket, UINT64_MAX);
        graph_free(d, &local);
    }
    vk_buf_destroy(bounce);
    free(p.d);
    free(regs);
    free(written);
    free(touched);
    free(locs);
    return st;
}

void vk_graph_forget(vk_dev *d, uint64_t key) {
    for (int i = 0; i < VK_GRAPH_CACHE; i++) {
        vk_graph *gr = &d->graphs[i];
        if (!gr->graph_key || (key && gr->graph_key != key))
            continue;
        vk_wait(d, gr->last_ticket, UINT64_MAX);
        graph_free(d, gr);
    }
}
