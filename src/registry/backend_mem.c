/* Resolves a backend's ABI 1.1 device-memory slots once, at activation, so
 * the rest of the host never reads a table slot the plug-in did not write:
 * a 1.0 plug-in (or one that negotiated 1.0) gets all NULL and keeps the
 * host-memory contract exactly. */
#include <stddef.h>
#include <string.h>

#include "core/error.h"
#include "registry.h"

/* A slot is usable if the table is large enough to hold it. */
#define SLOT(api, field) \
    ((api)->struct_size >= TPORT_SIZE_THROUGH(tport_backend_api, field) ? (api)->field : NULL)

void tport_backend_mem_resolve(tport_active_backend *a, const tport_device_info *dev0) {
    tport_backend_mem *m = &a->mem;
    memset(m, 0, sizeof *m);
    const tport_backend_api *api = a->api;
    if (!api || a->abi_minor < 1)
        return;
    m->buffer_alloc = SLOT(api, buffer_alloc);
    m->buffer_free = SLOT(api, buffer_free);
    m->tensor_alloc_size = SLOT(api, tensor_alloc_size);
    m->tensor_write = SLOT(api, tensor_write);
    m->tensor_read = SLOT(api, tensor_read);
    m->buffer_fill = SLOT(api, buffer_fill);
    m->buffer_copy = SLOT(api, buffer_copy);
    m->import_host = SLOT(api, import_host);
    m->compute_async = SLOT(api, compute_async);
    m->wait = SLOT(api, wait);
    m->forget_graph = SLOT(api, forget_graph);
    if (dev0 && dev0->struct_size >= TPORT_DEVICE_INFO_SIZE_1_1) {
        m->caps = dev0->caps;
        m->alignment = dev0->mem_alignment;
        m->max_buffer = dev0->max_buffer_size;
    }
    if (a->abi_minor < 5) /* a bit that minor does not define */
        m->caps &= ~(uint64_t)TPORT_DEVICE_CAP_F16_PRODUCTS;
    if (m->alignment < 64 || (m->alignment & (m->alignment - 1)))
        m->alignment = 64; /* not a power of two: use the host's own */
    bool buffers = m->buffer_alloc && m->buffer_free && m->tensor_write;
    /* an asynchronous device needs a way to wait */
    if (!m->wait) {
        m->compute_async = NULL;
        m->caps &= ~(uint64_t)TPORT_DEVICE_CAP_ASYNC;
    }
    if ((m->caps & TPORT_DEVICE_CAP_DEVICE_MEMORY) && (!buffers || !m->tensor_read)) {
        tport_log(TPORT_LOG_WARN, "backends: '%s' says its device has its own memory but lacks %s; "
                  "using it as a host-memory backend", a->name,
                  !m->buffer_alloc ? "buffer_alloc" : !m->buffer_free ? "buffer_free"
                  : !m->tensor_write ? "tensor_write" : "tensor_read");
        m->caps &= ~(uint64_t)TPORT_DEVICE_CAP_DEVICE_MEMORY;
    }
    m->device_memory = (m->caps & TPORT_DEVICE_CAP_DEVICE_MEMORY) != 0;
    m->own_layout = !m->device_memory && buffers && m->tensor_alloc_size;
    if (!m->device_memory && !m->own_layout)
        m->compute_async = NULL; /* host memory: results must be there on return */
}
