/* The plug-in's table and entry point: instances over the loaded ggml, its
 * devices as tensorport devices with memory of their own (ABI 1.1), and
 * the memory slots over ggml buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tg_internal.h"

const tport_host_api *tg_host;
uint32_t tg_minor;

static tg_dev *device(void *backend, int32_t dev) {
    tg_backend *be = backend;
    return be && dev >= 0 && dev < be->n_dev ? &be->devs[dev] : NULL;
}

/* Below every backend of tensorport's own (the CPU variants score 10..30,
 * vulkan 5): ggml is used where it is preferred (TPORT_BACKEND=ggml) or
 * forced, or for what nothing else takes. */
static int32_t tg_score(void) {
    return 2;
}

void tg_settle(tg_dev *d) {
    if (d->done >= d->issued)
        return;
    /* ggml_backend_synchronize, not a ggml event: ggml-vulkan's
     * event_synchronize crashed (SIGSEGV) in the first try on lavapipe,
     * and an event recorded without being synchronized keeps a VkEvent
     * per record; the backend's own synchronize also ends its graph */
    gf.ggml_backend_synchronize(d->backend);
    if (!d->async_waits++)
        tg_host->log(TPORT_LOG_DEBUG, "ggml: %s: waited for async ticket %llu", d->name,
                     (unsigned long long)d->issued);
    d->done = d->issued;
}

/* The device of buffer h, settled: ggml's tensor get/set/memset/copy are
 * not ordered after the backend's queue (Vulkan maps host-visible memory
 * directly), so what an async compute may still touch waits for it. */
static void settle_buffer(tg_backend *be, tport_buffer h) {
    tg_buf *b = tg_buf_get(be, h);
    if (b)
        tg_settle(&be->devs[b->device]);
}

/* Frees b's ggml buffer, or retires it where the driver may still point
 * at it (tg_retire). */
static void release(tg_backend *be, tg_buf *b) {
    tg_dev *d = &be->devs[b->device];
    if (d->retire_buffers)
        tg_retire(d->buft, b->buf);
    else
        gf.ggml_backend_buffer_free(b->buf);
}

static void tg_shutdown(void *backend) {
    tg_backend *be = backend;
    if (!be)
        return;
    for (int i = 0; i < be->n_dev; i++) {
        tg_settle(&be->devs[i]);
        tg_forget(&be->devs[i], 0);
        if (be->devs[i].backend)
            gf.ggml_backend_free(be->devs[i].backend);
    }
    for (uint32_t i = 0; i < be->n_bufs; i++)
        if (be->bufs[i].buf)
            release(be, &be->bufs[i]);
    free(be->bufs);
    free(be);
    tg_unload();
}

/* ggml backends whose f32 matrix products round their operands to f16,
 * declared as TPORT_DEVICE_CAP_F16_PRODUCTS (ABI 1.5) so check-backend
 * judges them as such: ggml-vulkan's matrix-matrix shader (mul_mm.comp)
 * keeps both operand tiles in f16 shared memory on a device with f16
 * arithmetic, and its flash attention takes f16 Q/K/V; GGML_VK_DISABLE_F16
 * turns that off.  The bridge cannot ask ggml whether a device has f16,
 * so a Vulkan device is declared unless it is turned off: a declaration
 * only widens check-backend's tolerance for those products. */
static const struct {
    const char *reg;     /* ggml_backend_reg_name */
    const char *off_env; /* set: f32 operands stay f32 */
} f16_products[] = {
    {"Vulkan", "GGML_VK_DISABLE_F16"},
};

static bool rounds_to_f16(ggml_backend_dev_t dev) {
    ggml_backend_reg_t reg = gf.ggml_backend_dev_backend_reg(dev);
    const char *name = reg ? gf.ggml_backend_reg_name(reg) : "";
    for (size_t i = 0; i < sizeof f16_products / sizeof f16_products[0]; i++)
        if (!strcmp(name, f16_products[i].reg))
            return !getenv(f16_products[i].off_env);
    return false;
}

static bool software(const char *description) {
    /* Mesa's lavapipe (llvmpipe) is a Vulkan device that runs on the CPU */
    return strstr(description, "llvmpipe") || strstr(description, "lavapipe") || strstr(description, "SwiftShader");
}

static tport_status tg_init(void **out) {
    tport_status st = tg_load();
    if (st != TPORT_STATUS_OK)
        return st;
    tg_backend *be = calloc(1, sizeof *be);
    if (!be) {
        tg_unload();
        return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: out of host memory");
    }
    ggml_backend_dev_t list[TG_MAX_DEVS];
    int n = tg_device_list(list, TG_MAX_DEVS, tg_minor < 1);
    for (int i = 0; i < n; i++) {
        /* a 1.0 host knows only host memory: ggml's CPU devices compute
         * on it directly, the others cannot */
        bool cpu = gf.ggml_backend_dev_type(list[i]) == GGML_BACKEND_DEVICE_TYPE_CPU;
        if (tg_minor < 1 && !cpu)
            continue;
        tg_dev *d = &be->devs[be->n_dev];
        d->host_memory = tg_minor < 1;
        d->dev = list[i];
        d->backend = gf.ggml_backend_dev_init(list[i], NULL);
        d->buft = d->backend ? gf.ggml_backend_dev_buffer_type(list[i]) : NULL;
        if (!d->backend || !d->buft) {
            tg_host->log(TPORT_LOG_WARN, "ggml: device %s would not start", gf.ggml_backend_dev_name(list[i]));
            if (d->backend)
                gf.ggml_backend_free(d->backend);
            memset(d, 0, sizeof *d);
            continue;
        }
        snprintf(d->name, sizeof d->name, "%s", gf.ggml_backend_dev_name(list[i]));
        snprintf(d->description, sizeof d->description, "%.80s; ggml %s",
                 gf.ggml_backend_dev_description(list[i]), tg_loaded_version());
        enum ggml_backend_dev_type type = gf.ggml_backend_dev_type(list[i]);
        d->kind = type == GGML_BACKEND_DEVICE_TYPE_CPU ? TPORT_DEVICE_CPU
                  : type == GGML_BACKEND_DEVICE_TYPE_ACCEL ? TPORT_DEVICE_ACCEL
                  : software(gf.ggml_backend_dev_description(list[i])) ? TPORT_DEVICE_CPU
                                                                       : TPORT_DEVICE_GPU;
        /* async compute where ggml's device computes asynchronously */
        struct ggml_backend_dev_props props;
        memset(&props, 0, sizeof props);
        gf.ggml_backend_dev_get_props(list[i], &props);
        d->async = !d->host_memory && props.caps.async;
        d->f16_products = rounds_to_f16(list[i]);
        d->retire_buffers = type != GGML_BACKEND_DEVICE_TYPE_CPU && d->kind == TPORT_DEVICE_CPU;
        ggml_backend_reg_t reg = gf.ggml_backend_dev_backend_reg(list[i]);
        d->set_n_threads = reg ? (void (*)(ggml_backend_t, int))gf.ggml_backend_reg_get_proc_address(
                                     reg, "ggml_backend_set_n_threads")
                               : NULL;
        be->n_dev++;
    }
    if (be->n_dev == 0) {
        tg_shutdown(be);
        return tg_host->error(TPORT_STATUS_UNSUPPORTED,
                              "ggml: ggml %s offers no device (a software Vulkan device such as lavapipe needs "
                              "GGML_VK_VISIBLE_DEVICES=0)",
                              tg_loaded_version());
    }
    *out = be;
    return TPORT_STATUS_OK;
}

static int32_t tg_device_count(void *backend) {
    tg_backend *be = backend;
    return be ? be->n_dev : 0;
}

static tport_status tg_device_info(void *backend, int32_t dev, tport_device_info *out) {
    tg_dev *d = device(backend, dev);
    if (!d || !out || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: bad device_info call");
    tport_device_info info;
    memset(&info, 0, sizeof info);
    info.kind = d->kind;
    snprintf(info.name, sizeof info.name, "%s", d->name);
    snprintf(info.description, sizeof info.description, "%s", d->description);
    size_t free_b = 0, total = 0;
    gf.ggml_backend_dev_memory(d->dev, &free_b, &total);
    info.memory_total = total, info.memory_free = free_b;
    info.caps = (d->host_memory ? 0 : TPORT_DEVICE_CAP_DEVICE_MEMORY) | (d->async ? TPORT_DEVICE_CAP_ASYNC : 0) |
                (d->f16_products && tg_minor >= 5 ? TPORT_DEVICE_CAP_F16_PRODUCTS : 0);
    info.mem_alignment = gf.ggml_backend_buft_get_alignment(d->buft);
    size_t max = gf.ggml_backend_buft_get_max_size(d->buft);
    info.max_buffer_size = max == SIZE_MAX ? 0 : max;
    uint32_t size = out->struct_size < sizeof info ? out->struct_size : (uint32_t)sizeof info;
    info.struct_size = out->struct_size;
    memcpy(out, &info, size);
    return TPORT_STATUS_OK;
}

static bool tg_supports_op(void *backend, int32_t dev, const tport_graph_view *g, int32_t node) {
    if (!device(backend, dev) || !g || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_0 || node < 0 ||
        node >= g->n_tensors || !g->tensors)
        return false;
    return tg_supports(backend, dev, g, node);
}

static tport_status tg_compute_slot(void *backend, int32_t dev, const tport_graph_view *g) {
    tg_dev *d = device(backend, dev);
    if (!d)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: no device %d", (int)dev);
    tg_settle(d);
    return tg_compute(backend, dev, g, false);
}

/* Through ggml's async graph compute where the device has it (Vulkan,
 * CUDA ...); synchronous (ticket 0) where not (ggml's CPU). */
static tport_status tg_compute_async(void *backend, int32_t dev, const tport_graph_view *g, tport_ticket *ticket) {
    tg_dev *d = device(backend, dev);
    if (ticket)
        *ticket = 0;
    if (!d)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: no device %d", (int)dev);
    if (!d->async || !ticket) {
        tg_settle(d);
        return tg_compute(backend, dev, g, false);
    }
    tport_status st = tg_compute(backend, dev, g, true);
    if (st != TPORT_STATUS_OK) {
        tg_settle(d);
        return st;
    }
    *ticket = ++d->issued;
    return TPORT_STATUS_OK;
}

/* ggml has no timed wait: this blocks until the work is done
 * (a device that never finishes is the isolation's timeout to catch,
 * TPORT_BACKEND_ISOLATE=ggml). */
static tport_status tg_wait(void *backend, int32_t dev, tport_ticket ticket, uint64_t timeout_ns) {
    (void)timeout_ns;
    tg_dev *d = device(backend, dev);
    if (!d)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: no device %d", (int)dev);
    if (ticket > d->issued)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: %s: ticket %llu was never issued", d->name,
                              (unsigned long long)ticket);
    if (ticket > d->done)
        tg_settle(d);
    return TPORT_STATUS_OK;
}

static void tg_forget_graph(void *backend, int32_t dev, uint64_t key) {
    tg_dev *d = device(backend, dev);
    if (d)
        tg_forget(d, key); /* settles first */
}

/* ---- memory: one ggml buffer per tport buffer --------------------------- */

tg_buf *tg_buf_get(tg_backend *be, tport_buffer h) {
    if (!be || h == 0 || h > be->n_bufs || !be->bufs[h - 1].buf)
        return NULL;
    return &be->bufs[h - 1];
}

static tport_status tg_buffer_alloc(void *backend, int32_t dev, uint32_t kind, uint32_t usage, uint64_t size,
                                    tport_buffer *out, void **host_ptr) {
    tg_backend *be = backend;
    tg_dev *d = device(backend, dev);
    if (host_ptr)
        *host_ptr = NULL;
    if (!d || !out)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: bad buffer_alloc call");
    *out = 0;
    if (kind != TPORT_MEM_DEVICE)
        return tg_host->error(TPORT_STATUS_UNSUPPORTED, "ggml: memory kind %u (only device memory)", kind);
    uint32_t h = 0;
    while (h < be->n_bufs && be->bufs[h].buf)
        h++;
    if (h == be->n_bufs) {
        if (be->n_bufs == be->cap_bufs) {
            uint32_t cap = be->cap_bufs ? be->cap_bufs * 2 : 16;
            tg_buf *nb = realloc(be->bufs, cap * sizeof *nb);
            if (!nb)
                return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: out of host memory");
            be->bufs = nb, be->cap_bufs = cap;
        }
        memset(&be->bufs[be->n_bufs++], 0, sizeof *be->bufs);
    }
    ggml_backend_buffer_t buf = d->retire_buffers ? tg_reuse(d->buft, size ? (size_t)size : 1) : NULL;
    if (!buf)
        buf = gf.ggml_backend_buft_alloc_buffer(d->buft, size ? (size_t)size : 1);
    if (!buf)
        return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: %s: cannot allocate %llu bytes", d->name,
                              (unsigned long long)size);
    gf.ggml_backend_buffer_set_usage(buf, usage == TPORT_USAGE_WEIGHTS ? GGML_BACKEND_BUFFER_USAGE_WEIGHTS
                                                                      : GGML_BACKEND_BUFFER_USAGE_COMPUTE);
    be->bufs[h] = (tg_buf){.buf = buf, .device = dev, .size = size, .base = gf.ggml_backend_buffer_get_base(buf)};
    *out = (tport_buffer)h + 1;
    return TPORT_STATUS_OK;
}

static void tg_buffer_free(void *backend, tport_buffer h) {
    tg_buf *b = tg_buf_get(backend, h);
    if (!b)
        return;
    tg_settle(&((tg_backend *)backend)->devs[b->device]);
    tg_unbind(&((tg_backend *)backend)->devs[b->device], h); /* kept graphs may point into it */
    release(backend, b);
    memset(b, 0, sizeof *b);
}

/* A byte tensor over [offset, offset + size) of b, for ggml's tensor
 * get/set, which work on tensors rather than buffers. */
static bool bytes_at(void *backend, tport_buffer h, uint64_t offset, uint64_t size, struct ggml_tensor *t,
                     const char *what) {
    tg_buf *b = tg_buf_get(backend, h);
    if (!b) {
        tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: %s: unknown buffer", what);
        return false;
    }
    settle_buffer(backend, h);
    if (offset > b->size || size > b->size - offset) {
        tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: %s: %llu bytes at %llu pass the buffer's end (%llu)",
                       what, (unsigned long long)size, (unsigned long long)offset, (unsigned long long)b->size);
        return false;
    }
    memset(t, 0, sizeof *t);
    t->type = GGML_TYPE_I8;
    t->ne[0] = (int64_t)size, t->ne[1] = t->ne[2] = t->ne[3] = 1;
    t->nb[0] = 1, t->nb[1] = t->nb[2] = t->nb[3] = (size_t)size;
    t->buffer = b->buf;
    t->data = b->base + offset;
    return true;
}

static tport_status tg_tensor_write(void *backend, tport_buffer h, uint64_t offset, const tport_tensor_view *tv,
                                    const void *src, uint64_t size, tport_ticket *ticket) {
    (void)tv; /* kept in the plain layout, which ggml's kernels read */
    if (ticket)
        *ticket = 0;
    struct ggml_tensor t;
    if (!bytes_at(backend, h, offset, size, &t, "tensor_write"))
        return TPORT_STATUS_INVALID_ARGUMENT;
    if (size && !src)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: tensor_write without data");
    if (size)
        gf.ggml_backend_tensor_set(&t, src, 0, (size_t)size);
    return TPORT_STATUS_OK;
}

static tport_status tg_tensor_read(void *backend, tport_buffer h, uint64_t offset, const tport_tensor_view *tv,
                                   void *dst, uint64_t size, tport_ticket *ticket) {
    (void)tv;
    if (ticket)
        *ticket = 0;
    struct ggml_tensor t;
    if (!bytes_at(backend, h, offset, size, &t, "tensor_read"))
        return TPORT_STATUS_INVALID_ARGUMENT;
    if (size && !dst)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: tensor_read without a destination");
    if (size)
        gf.ggml_backend_tensor_get(&t, dst, 0, (size_t)size);
    return TPORT_STATUS_OK;
}

static tport_status tg_buffer_fill(void *backend, tport_buffer h, uint64_t offset, uint64_t size, uint8_t value,
                                   tport_ticket *ticket) {
    if (ticket)
        *ticket = 0;
    struct ggml_tensor t;
    if (!bytes_at(backend, h, offset, size, &t, "buffer_fill"))
        return TPORT_STATUS_INVALID_ARGUMENT;
    if (size)
        gf.ggml_backend_tensor_memset(&t, value, 0, (size_t)size);
    return TPORT_STATUS_OK;
}

static tport_status tg_buffer_copy(void *backend, tport_buffer dst, uint64_t dst_offset, tport_buffer src,
                                   uint64_t src_offset, uint64_t size, tport_ticket *ticket) {
    if (ticket)
        *ticket = 0;
    struct ggml_tensor d, s;
    if (!bytes_at(backend, dst, dst_offset, size, &d, "buffer_copy") ||
        !bytes_at(backend, src, src_offset, size, &s, "buffer_copy"))
        return TPORT_STATUS_INVALID_ARGUMENT;
    tg_buf *bd = tg_buf_get(backend, dst), *bs = tg_buf_get(backend, src);
    if (bd->device != bs->device)
        return tg_host->error(TPORT_STATUS_INVALID_ARGUMENT, "ggml: buffer_copy between devices");
    if (size)
        gf.ggml_backend_tensor_copy(&s, &d);
    return TPORT_STATUS_OK;
}

/* ggml may need more than the plain size (row padding of quantized
 * matrices on CUDA): say so, so the host leaves the room. */
static uint64_t tg_tensor_alloc_size(void *backend, int32_t dev, const tport_tensor_view *tv) {
    tg_dev *d = device(backend, dev);
    int type = d && tv && tv->struct_size >= TPORT_TENSOR_VIEW_SIZE_1_0 ? tg_type(tv->type) : -1;
    if (type < 0)
        return 0;
    struct ggml_tensor t;
    memset(&t, 0, sizeof t);
    t.type = (enum ggml_type)type;
    for (int i = 0; i < 4; i++) {
        if (tv->ne[i] < 1)
            return 0;
        t.ne[i] = tv->ne[i];
        t.nb[i] = (size_t)tv->nb[i];
    }
    if (t.ne[0] % gf.ggml_blck_size(t.type))
        return 0;
    size_t need = gf.ggml_backend_buft_get_alloc_size(d->buft, &t), plain = gf.ggml_nbytes(&t);
    return need > plain ? need : 0;
}

static tport_backend_api table = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .abi_minor = TPORT_ABI_MINOR,
    .name = "ggml",
    .version = "0.1 (bridge to ggml " TPORT_GGML_VERSION ", backend API " TPORT_GGML_BACKEND_API_STR ")",
    .required_isa = 0,
    .score = tg_score,
    .init = tg_init,
    .shutdown = tg_shutdown,
    .device_count = tg_device_count,
    .device_info = tg_device_info,
    .supports_op = tg_supports_op,
    .compute = tg_compute_slot,
    .buffer_alloc = tg_buffer_alloc,
    .buffer_free = tg_buffer_free,
    .tensor_alloc_size = tg_tensor_alloc_size,
    .tensor_write = tg_tensor_write,
    .tensor_read = tg_tensor_read,
    .buffer_fill = tg_buffer_fill,
    .buffer_copy = tg_buffer_copy,
    .compute_async = tg_compute_async,
    .wait = tg_wait,
    .forget_graph = tg_forget_graph,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *host) {
    if (!host || host->struct_size < TPORT_HOST_API_SIZE_1_0)
        return NULL;
    tg_host = host;
    if (host->abi_major != TPORT_ABI_MAJOR) {
        table.abi_major = TPORT_ABI_MAJOR; /* the host refuses it, naming both */
        return &table;
    }
    table.abi_major = TPORT_ABI_MAJOR;
    table.abi_minor = host->abi_minor < TPORT_ABI_MINOR ? host->abi_minor : TPORT_ABI_MINOR;
    tg_minor = table.abi_minor;
    /* a 1.0 host reads the table only up to compute: the memory slots
     * behind it stay, unread */
    table.struct_size = tg_minor < 1 ? (uint32_t)TPORT_BACKEND_API_SIZE_1_0 : (uint32_t)sizeof(tport_backend_api);
    return &table;
}
