/* Minimal registry: only the embedded CPU backend.  Plug-in discovery
 * (TPORT_BACKEND_PATH, installed folder, scores, shadowing) comes next. */
#include "registry.h"

#include <pthread.h>
#include <string.h>

#include "core/error.h"

static tport_active_backend active[1];
static int n_active;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void registry_init_once(void) {
    const tport_host_api *host = tport_host_services();
    const tport_backend_api *api = tport_cpu_embedded_entry(host);
    void *state = NULL;
    if (!api || api->init(&state) != TPORT_STATUS_OK) {
        tport_log(TPORT_LOG_ERROR, "embedded cpu backend failed to start: %s", tport_last_error());
        return;
    }
    active[0] = (tport_active_backend){
        .name = api->name, .api = api, .state = state, .abi_minor = api->abi_minor,
        .score = api->score ? api->score() : 1, .n_devices = api->device_count(state), .path = NULL,
    };
    n_active = 1;
}

void tport_registry_init(void) {
    pthread_once(&once, registry_init_once);
}

int tport_registry_active_count(void) {
    tport_registry_init();
    return n_active;
}

const tport_active_backend *tport_registry_active(int i) {
    tport_registry_init();
    return i >= 0 && i < n_active ? &active[i] : NULL;
}

const tport_active_backend *tport_registry_find(const char *name) {
    tport_registry_init();
    for (int i = 0; i < n_active; i++)
        if (!strcmp(active[i].name, name))
            return &active[i];
    return NULL;
}
