/* The backend registry: discovers, loads, version-checks, scores and
 * initialises backends, and keeps them in preference order.
 *
 * Discovery order: the embedded CPU backend; files given to
 * tport_backend_load(); every entry of TPORT_BACKEND_PATH; the backends
 * folder installed beside libtport.  Every file found is a "candidate"; the
 * registry keeps a report of all of them (active, shadowed or rejected, and
 * why) for `tport backends`. */
#ifndef TPORT_REGISTRY_H
#define TPORT_REGISTRY_H

#include <stdbool.h>

#include "tport/registry.h"

/* The ABI 1.1 device-memory slots of one backend, NULL where the plug-in
 * left them out, did not negotiate 1.1, or wrote a table too small to
 * hold them.  The host reads slots only through this copy. */
typedef struct tport_backend_mem {
    tport_status (*buffer_alloc)(void *, int32_t, uint32_t, uint32_t, uint64_t, tport_buffer *, void **);
    void (*buffer_free)(void *, tport_buffer);
    uint64_t (*tensor_alloc_size)(void *, int32_t, const tport_tensor_view *);
    tport_status (*tensor_write)(void *, tport_buffer, uint64_t, const tport_tensor_view *, const void *, uint64_t,
                                 tport_ticket *);
    tport_status (*tensor_read)(void *, tport_buffer, uint64_t, const tport_tensor_view *, void *, uint64_t,
                                tport_ticket *);
    tport_status (*buffer_fill)(void *, tport_buffer, uint64_t, uint64_t, uint8_t, tport_ticket *);
    tport_status (*buffer_copy)(void *, tport_buffer, uint64_t, tport_buffer, uint64_t, uint64_t, tport_ticket *);
    tport_status (*import_host)(void *, int32_t, void *, uint64_t, tport_buffer *);
    tport_status (*compute_async)(void *, int32_t, const tport_graph_view *, tport_ticket *);
    tport_status (*wait)(void *, int32_t, tport_ticket, uint64_t);
    void (*forget_graph)(void *, int32_t, uint64_t);
    uint64_t caps;          /* device 0's TPORT_DEVICE_CAP_* (0 before 1.1) */
    uint64_t alignment;     /* device 0's offset alignment (>= 64)          */
    uint64_t max_buffer;    /* device 0's largest buffer (0 = no limit)     */
    bool device_memory;     /* tensors of its device 0 live in its buffers  */
    bool own_layout;        /* a host-memory backend that re-encodes weights */
} tport_backend_mem;

/* An initialised backend the scheduler may use. */
typedef struct tport_active_backend {
    const char *name;
    const tport_backend_api *api;
    void *state;            /* what api->init returned                   */
    uint32_t abi_minor;     /* negotiated minor                          */
    int32_t score;
    int32_t n_devices;
    const char *path;       /* plug-in file, or NULL when linked in      */
    bool fallback;          /* the embedded cpu kept behind a "cpu" plug-in
                               that declines basic ops (always listed last) */
    tport_backend_mem mem;  /* ABI 1.1 device memory; all NULL for 1.0      */
} tport_active_backend;

/* The ABI minor that defined op (UINT32_MAX: none of this host's), and
 * whether backend b negotiated a minor that has it (op_minor.c): the host
 * asks a plug-in only about ops of its minor. */
uint32_t tport_op_since_minor(tport_op_id op);
bool tport_backend_knows_op(const tport_active_backend *b, tport_op_id op);

/* Fills a->mem from the backend's table and device 0's info, reading no
 * slot the negotiated minor or the table's struct_size leaves out. */
void tport_backend_mem_resolve(tport_active_backend *a, const tport_device_info *dev0);

/* Active backends in preference order (TPORT_BACKEND first, then non-CPU
 * backends, then by score). */
int tport_registry_active_count(void);
const tport_active_backend *tport_registry_active(int i);
const tport_active_backend *tport_registry_find(const char *name);

/* Called first by tport_registry_shutdown (the scheduler frees device
 * buffers there). */
void tport_registry_set_shutdown_hook(void (*hook)(void));


/* The candidates report, ISA checks and the lifecycle calls are public:
 * include/tport/registry.h. */
/* ---- internals shared by the registry's files ---------------------------- */
/* The services table handed to every plug-in. */
const tport_host_api *tport_host_services(void);

/* The CPU backend linked into libtport (backends/cpu built with
 * TPORT_CPU_EMBEDDED). */
const tport_backend_api *tport_cpu_embedded_entry(const tport_host_api *host);

/* Environment variable, or NULL in set-uid/set-gid processes (AT_SECURE). */
const char *tport_registry_getenv(const char *name);

/* Checks a table an entry point returned against the host's ABI: major,
 * struct_size, required slots, name.  Returns true if usable; otherwise
 * writes a one-line reason.  *minor receives the negotiated minor. */
bool tport_backend_table_check(const tport_backend_api *api, const tport_host_api *host,
                               uint32_t *minor, char *reason, size_t cap);

#endif
