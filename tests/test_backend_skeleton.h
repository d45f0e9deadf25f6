/* The common part of the one-device test plug-ins (tests/core's "partial",
 * tests/model's "picky"): init, shutdown, one ACCEL device, the API table
 * and the entry point.  Includes nothing of tensorport but tport/backend.h.
 *
 * Define before including:
 *   SKELETON_NAME    the backend name, e.g. "partial"
 *   SKELETON_DEVICE  the device name, e.g. "partial0"
 *   SKELETON_ABOUT   the device description
 * and define after including, in the same file:
 *   static bool skeleton_supports_op(void *backend, int32_t device,
 *                                    const tport_graph_view *g, int32_t node);
 *   static tport_status skeleton_compute(void *backend, int32_t device,
 *                                        const tport_graph_view *g);
 * `host` is the host's services table, set by the entry point. */
#ifndef TPORT_TEST_BACKEND_SKELETON_H
#define TPORT_TEST_BACKEND_SKELETON_H

#include <string.h>

#include "tport/backend.h"

static const tport_host_api *host;
static int skeleton_state;

static bool skeleton_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node);
static tport_status skeleton_compute(void *backend, int32_t device, const tport_graph_view *g);

static tport_status skeleton_init(void **backend) {
    *backend = &skeleton_state;
    return TPORT_STATUS_OK;
}

static void skeleton_shutdown(void *backend) {
    (void)backend;
}

static int32_t skeleton_device_count(void *backend) {
    (void)backend;
    return 1;
}

static tport_status skeleton_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
    if (device != 0 || !out || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, SKELETON_NAME ": bad device_info call");
    uint32_t size = out->struct_size;
    memset(out, 0, sizeof *out);
    out->struct_size = size;
    out->kind = TPORT_DEVICE_ACCEL;
    strcpy(out->name, SKELETON_DEVICE);
    strcpy(out->description, SKELETON_ABOUT);
    return TPORT_STATUS_OK;
}

static tport_backend_api skeleton_api = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = SKELETON_NAME,
    .version = "test",
    .init = skeleton_init,
    .shutdown = skeleton_shutdown,
    .device_count = skeleton_device_count,
    .device_info = skeleton_device_info,
    .supports_op = skeleton_supports_op,
    .compute = skeleton_compute,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h) {
    if (!h || h->abi_major != TPORT_ABI_MAJOR)
        return NULL;
    host = h;
    uint32_t mine = TPORT_ABI_MINOR; /* a variable: the constant may be 0 */
    skeleton_api.abi_minor = h->abi_minor < mine ? h->abi_minor : mine;
    return &skeleton_api;
}

#endif
