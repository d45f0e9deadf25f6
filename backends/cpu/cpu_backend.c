/* The CPU backend's entry point and tables (ops land in their own files). */
#include <stdlib.h>

#include "tport/backend.h"

static const tport_host_api *host;

static tport_status cpu_init(void **backend) {
    *backend = NULL;
    return TPORT_STATUS_OK;
}

static void cpu_shutdown(void *backend) {
    (void)backend;
}

static int32_t cpu_device_count(void *backend) {
    (void)backend;
    return 1;
}

static tport_status cpu_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
    (void)device;
    (void)out;
    return host->error(TPORT_STATUS_UNSUPPORTED, "not yet");
}

static bool cpu_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)backend;
    (void)device;
    (void)g;
    (void)node;
    return false;
}

static tport_status cpu_compute(void *backend, int32_t device, const tport_graph_view *g) {
    (void)backend;
    (void)device;
    (void)g;
    return host->error(TPORT_STATUS_UNSUPPORTED, "not yet");
}

static tport_backend_api cpu_api = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "cpu",
    .version = "0.1.0",
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .supports_op = cpu_supports_op,
    .compute = cpu_compute,
};

#ifdef TPORT_CPU_EMBEDDED
const tport_backend_api *tport_cpu_embedded_entry(const tport_host_api *h);
const tport_backend_api *tport_cpu_embedded_entry(const tport_host_api *h)
#else
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h)
#endif
{
    if (!h || h->abi_major != TPORT_ABI_MAJOR)
        return NULL;
    host = h;
    uint32_t mine = TPORT_ABI_MINOR;
    cpu_api.abi_minor = h->abi_minor < mine ? h->abi_minor : mine;
    return &cpu_api;
}
