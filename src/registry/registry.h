/* The backend registry: discovers, loads, version-checks, scores and
 * initialises backends, and keeps them in preference order. */
#ifndef TPORT_REGISTRY_H
#define TPORT_REGISTRY_H

#include "tport/backend.h"

/* An initialised backend the scheduler may use. */
typedef struct tport_active_backend {
    const char *name;
    const tport_backend_api *api;
    void *state;            /* what api->init returned                   */
    uint32_t abi_minor;     /* negotiated minor                          */
    int32_t score;
    int32_t n_devices;
    const char *path;       /* plug-in file, or NULL when linked in      */
} tport_active_backend;

/* Discovers and initialises backends once; later calls are cheap.
 * Thread-safe.  Never fails for a bad plug-in (it is skipped). */
void tport_registry_init(void);
/* Active backends in preference order (TPORT_BACKEND first, then score). */
int tport_registry_active_count(void);
const tport_active_backend *tport_registry_active(int i);
const tport_active_backend *tport_registry_find(const char *name);

/* The services table handed to every plug-in. */
const tport_host_api *tport_host_services(void);

/* The CPU backend linked into libtport (backends/cpu built with
 * TPORT_CPU_EMBEDDED). */
const tport_backend_api *tport_cpu_embedded_entry(const tport_host_api *host);

#endif
