/* The plug-in's table and entry point: instances, devices and their
 * descriptions, and the ABI 1.1 memory slots (vk_memory.c does the work). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vk_internal.h"

const tport_host_api *vk_host;

static vk_dev *device(void *backend, int32_t device) {
    vk_backend *be = backend;
    if (!be || device < 0 || device >= be->n_dev)
        return NULL;
    return &be->devs[device];
}

static int32_t vk_score(void) {
    /* Below the CPU variants (10..30): among backends of CPU devices (a
     * software rasteriser such as lavapipe reports itself as one) the CPU
     * backend comes first; a real GPU device is ordered before every
     * CPU-only backend by the registry whatever the score. */
    return 5;
}

static tport_status vk_init(void **out) {
    vk_backend *be = calloc(1, sizeof *be);
    if (!be)
        return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
    tport_status st = vk_instance_open(be);
    if (st != TPORT_STATUS_OK) {
        vk_instance_close(be);
        free(be);
        return st;
    }
    *out = be;
    return TPORT_STATUS_OK;
}

static void vk_shutdown(void *backend) {
    vk_backend *be = backend;
    if (!be)
        return;
    for (int i = 0; i < be->n_dev; i++)
        if (be->devs[i].dev)
            vkDeviceWaitIdle(be->devs[i].dev);
    for (uint32_t i = 0; i < be->n_bufs; i++)
        vk_buf_destroy(be->bufs[i]);
    free(be->bufs);
    free(be->gens);
    vk_instance_close(be);
    free(be);
}

static int32_t vk_device_count(void *backend) {
    vk_backend *be = backend;
    return be ? be->n_dev : 0;
}

static tport_status vk_device_info(void *backend, int32_t dev, tport_device_info *out) {
    vk_dev *d = device(backend, dev);
    if (!d || !out || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: bad device_info call");
    tport_device_info info;
    memset(&info, 0, sizeof info);
    bool software = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
    info.kind = software ? TPORT_DEVICE_CPU : TPORT_DEVICE_GPU;
    snprintf(info.name, sizeof info.name, "%s", d->props.deviceName);
    const char *kind = d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU     ? "discrete GPU"
                       : d->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? "integrated GPU"
                       : software ? "software rasteriser: for testing, not speed"
                                  : "GPU";
    snprintf(info.description, sizeof info.description, "Vulkan %u.%u, %s; %s; %s storage",
             VK_API_VERSION_MAJOR(d->props.apiVersion), VK_API_VERSION_MINOR(d->props.apiVersion), d->driver, kind,
             d->use16 ? "16/8-bit" : "32-bit");
    info.memory_total = d->memory_total;
    info.memory_free = 0; /* unknown without VK_EXT_memory_budget */
    info.caps = TPORT_DEVICE_CAP_DEVICE_MEMORY | TPORT_DEVICE_CAP_ASYNC;
    info.mem_alignment = d->align;
    info.max_buffer_size = d->max_alloc;
    uint32_t size = out->struct_size < sizeof info ? out->struct_size : (uint32_t)sizeof info;
    info.struct_size = out->struct_size;
    memcpy(out, &info, size);
    return TPORT_STATUS_OK;
}

static bool vk_supports_op(void *backend, int32_t dev, const tport_graph_view *g, int32_t node) {
    vk_dev *d = device(backend, dev);
    if (!d || !g || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_0 || node < 0 || node >= g->n_tensors || !g->tensors)
        return false;
    return vk_supports(d, g, node);
}

static tport_status vk_compute(void *backend, int32_t dev, const tport_graph_view *g) {
    vk_dev *d = device(backend, dev);
    if (!d)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: no device %d", (int)dev);
    tport_ticket t = 0;
    tport_status st = vk_graph_compute(backend, d, g, &t);
    if (st == TPORT_STATUS_OK && t)
        st = vk_wait(d, t, UINT64_MAX);
    return st;
}

static tport_status vk_compute_async(void *backend, int32_t dev, const tport_graph_view *g, tport_ticket *ticket) {
    vk_dev *d = device(backend, dev);
    if (!d)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: no device %d", (int)dev);
    tport_ticket t = 0;
    tport_status st = vk_graph_compute(backend, d, g, &t);
    if (st == TPORT_STATUS_OK && t && !ticket)
        st = vk_wait(d, t, UINT64_MAX);
    if (ticket)
        *ticket = st == TPORT_STATUS_OK ? t : 0;
    return st;
}

static tport_status vk_wait_slot(void *backend, int32_t dev, tport_ticket ticket, uint64_t timeout_ns) {
    vk_dev *d = device(backend, dev);
    if (!d)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: no device %d", (int)dev);
    return vk_wait(d, ticket, timeout_ns);
}

static void vk_forget_graph(void *backend, int32_t dev, uint64_t key) {
    vk_dev *d = device(backend, dev);
    if (d)
        vk_graph_forget(d, key);
}

/* ---- memory slots -------------------------------------------------------- */

static tport_status vk_buffer_alloc(void *backend, int32_t dev, uint32_t kind, uint32_t usage, uint64_t size,
                                    tport_buffer *out, void **host_ptr) {
    (void)usage;
    vk_dev *d = device(backend, dev);
    if (!d || !out || (kind != TPORT_MEM_DEVICE && kind != TPORT_MEM_HOST_STAGING))
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: bad buffer_alloc call (kind %u)", kind);
    *out = 0;
    if (host_ptr)
        *host_ptr = NULL;
    if (kind == TPORT_MEM_HOST_STAGING && !host_ptr)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: a staging buffer needs host_ptr");
    if (d->lost)
        return vk_host->error(TPORT_STATUS_DEVICE_LOST, "vulkan: %s was lost", d->props.deviceName);
    vk_buf *b;
    tport_status st = vk_buf_make(d, size, kind == TPORT_MEM_HOST_STAGING, &b);
    if (st != TPORT_STATUS_OK)
        return st;
    b->host_kind = kind == TPORT_MEM_HOST_STAGING;
    tport_buffer h = vk_handle_add(backend, b);
    if (!h) {
        vk_buf_destroy(b);
        return vk_host->error(TPORT_STATUS_OUT_OF_MEMORY, "vulkan: out of host memory");
    }
    *out = h;
    if (host_ptr && b->host_kind)
        *host_ptr = b->map;
    return TPORT_STATUS_OK;
}

static void vk_buffer_free(void *backend, tport_buffer h) {
    vk_backend *be = backend;
    vk_buf *b = be ? vk_handle_get(be, h) : NULL;
    if (!b)
        return;
    vk_dev *d = b->dev;
    /* recorded graphs may name it: finish the work, drop them */
    vk_wait(d, d->submitted, UINT64_MAX);
    vk_graph_forget(d, 0);
    vk_handle_drop(be, h);
    vk_buf_destroy(b);
}

static vk_buf *range_of(void *backend, tport_buffer h, uint64_t offset, uint64_t size, const char *what) {
    vk_buf *b = backend ? vk_handle_get(backend, h) : NULL;
    if (!b) {
        vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: %s: unknown buffer", what);
        return NULL;
    }
    if (offset > b->size || size > b->size - offset) {
        vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: %s: %llu bytes at %llu pass the buffer's end (%llu)",
                       what, (unsigned long long)size, (unsigned long long)offset, (unsigned long long)b->size);
        return NULL;
    }
    return b;
}

static tport_status vk_tensor_write(void *backend, tport_buffer h, uint64_t offset, const tport_tensor_view *t,
                                    const void *src, uint64_t size, tport_ticket *ticket) {
    (void)t; /* stored in the plain layout */
    if (ticket)
        *ticket = 0;
    vk_buf *b = range_of(backend, h, offset, size, "tensor_write");
    if (!b)
        return TPORT_STATUS_INVALID_ARGUMENT;
    if (size && !src)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: tensor_write without data");
    /* src is copied before return; the ticket covers the copy on the device */
    uint64_t done_at = 0;
    tport_status st = vk_upload_async(b->dev, b, offset, src, size, &done_at);
    if (st == TPORT_STATUS_OK && done_at && !ticket)
        st = vk_wait(b->dev, done_at, UINT64_MAX);
    else if (st == TPORT_STATUS_OK && ticket)
        *ticket = done_at;
    return st;
}

static tport_status vk_tensor_read(void *backend, tport_buffer h, uint64_t offset, const tport_tensor_view *t,
                                   void *dst, uint64_t size, tport_ticket *ticket) {
    (void)t;
    if (ticket)
        *ticket = 0;
    vk_buf *b = range_of(backend, h, offset, size, "tensor_read");
    if (!b)
        return TPORT_STATUS_INVALID_ARGUMENT;
    if (size && !dst)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: tensor_read without a destination");
    return vk_download(b->dev, b, offset, dst, size);
}

static tport_status vk_buffer_fill(void *backend, tport_buffer h, uint64_t offset, uint64_t size, uint8_t value,
                                   tport_ticket *ticket) {
    if (ticket)
        *ticket = 0;
    vk_buf *b = range_of(backend, h, offset, size, "buffer_fill");
    if (!b)
        return TPORT_STATUS_INVALID_ARGUMENT;
    if (!size)
        return TPORT_STATUS_OK;
    vk_dev *d = b->dev;
    VkCommandBuffer cmd;
    uint64_t head = (4 - offset % 4) % 4;
    if (head > size)
        head = size;
    uint64_t body = (size - head) & ~(uint64_t)3, tail = size - head - body;
    if (head || tail) {
        /* the unaligned edges (at most 3 bytes each) go through staging */
        uint8_t bytes[3];
        memset(bytes, value, sizeof bytes);
        tport_status st = head ? vk_upload(d, b, offset, bytes, head) : TPORT_STATUS_OK;
        if (st == TPORT_STATUS_OK && tail)
            st = vk_upload(d, b, offset + head + body, bytes, tail);
        if (st != TPORT_STATUS_OK)
            return st;
    }
    if (!body)
        return TPORT_STATUS_OK;
    tport_status st = vk_one_shot_begin(d, &cmd);
    if (st != TPORT_STATUS_OK)
        return st;
    vkCmdFillBuffer(cmd, b->buf, offset + head, body, 0x01010101u * value);
    return vk_one_shot_end(d, cmd, ticket == NULL, ticket);
}

static tport_status vk_buffer_copy(void *backend, tport_buffer dst, uint64_t dst_off, tport_buffer src,
                                   uint64_t src_off, uint64_t size, tport_ticket *ticket) {
    if (ticket)
        *ticket = 0;
    vk_buf *bd = range_of(backend, dst, dst_off, size, "buffer_copy");
    vk_buf *bs = bd ? range_of(backend, src, src_off, size, "buffer_copy") : NULL;
    if (!bs)
        return TPORT_STATUS_INVALID_ARGUMENT;
    if (bd->dev != bs->dev)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: buffer_copy between devices");
    if (!size)
        return TPORT_STATUS_OK;
    if (bd == bs && dst_off < src_off + size && src_off < dst_off + size)
        return vk_host->error(TPORT_STATUS_INVALID_ARGUMENT, "vulkan: buffer_copy of overlapping ranges");
    VkCommandBuffer cmd;
    tport_status st = vk_one_shot_begin(bd->dev, &cmd);
    if (st != TPORT_STATUS_OK)
        return st;
    VkBufferCopy c = {.srcOffset = src_off, .dstOffset = dst_off, .size = size};
    vkCmdCopyBuffer(cmd, bs->buf, bd->buf, 1, &c);
    return vk_one_shot_end(bd->dev, cmd, ticket == NULL, ticket);
}

static tport_backend_api table = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "vulkan",
    .version = VK_BACKEND_VERSION,
    .required_isa = 0,
    .score = vk_score,
    .init = vk_init,
    .shutdown = vk_shutdown,
    .device_count = vk_device_count,
    .device_info = vk_device_info,
    .supports_op = vk_supports_op,
    .compute = vk_compute,
    .buffer_alloc = vk_buffer_alloc,
    .buffer_free = vk_buffer_free,
    .tensor_write = vk_tensor_write,
    .tensor_read = vk_tensor_read,
    .buffer_fill = vk_buffer_fill,
    .buffer_copy = vk_buffer_copy,
    .compute_async = vk_compute_async,
    .wait = vk_wait_slot,
    .forget_graph = vk_forget_graph,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *host) {
    if (!host || host->abi_major != TPORT_ABI_MAJOR || host->struct_size < TPORT_HOST_API_SIZE_1_0)
        return NULL;
    vk_host = host;
    uint32_t mine = TPORT_ABI_MINOR;
    table.abi_minor = host->abi_minor < mine ? host->abi_minor : mine;
    /* a 1.0 host: offer the 1.0 table only (the slots past it are unknown) */
    table.struct_size = table.abi_minor >= 1 ? (uint32_t)sizeof table : (uint32_t)TPORT_BACKEND_API_SIZE_1_0;
    return &table;
}
