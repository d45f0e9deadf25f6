/* Bringing one candidate backend up, step by step, refusing it with a
 * one-line reason at the first step that fails.  The order matters: nothing
 * of the plug-in runs before its ISA requirement is checked except its entry
 * point (which the rules keep trivial: it only returns a table). */
#include "candidate.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

static void (*stage_hook)(const char *stage);

void tport_candidate_set_stage_hook(void (*hook)(const char *stage)) {
    stage_hook = hook;
}

static void stage(const char *what) {
    if (stage_hook)
        stage_hook(what);
}

const char *tport_candidate_label(const tport_candidate *c) {
    return c->path ? c->path : "(embedded)";
}

void tport_candidate_reject(tport_candidate *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->reason, sizeof c->reason, fmt, ap);
    va_end(ap);
    c->status = TPORT_CANDIDATE_REJECTED;
    c->usable = false;
    tport_log(TPORT_LOG_DEBUG, "backends: %s: rejected: %s", tport_candidate_label(c), c->reason);
}

/* The plug-in's last message (recorded through host->error), or fallback. */
static const char *plugin_message(const char *fallback) {
    const char *m = tport_last_error();
    return m && m[0] ? m : fallback;
}

static bool valid_name(const char *name) {
    size_t n = strnlen(name, 64);
    if (n == 0 || n == 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '_' || ch == '-' || ch == '.';
        if (!ok)
            return false;
    }
    return true;
}

bool tport_backend_table_check(const tport_backend_api *api, const tport_host_api *host,
                               uint32_t *minor, char *reason, size_t cap) {
    /* struct_size, abi_major and abi_minor keep their places in every
     * major, so they can be read before anything else is trusted. */
    if (api->struct_size < 3 * sizeof(uint32_t)) {
        snprintf(reason, cap, "table is %u bytes, too small to hold a version", api->struct_size);
        return false;
    }
    if (api->abi_major != host->abi_major) {
        snprintf(reason, cap, "plug-in speaks backend ABI %u.%u, this host speaks %u.%u", api->abi_major,
                 api->abi_minor, host->abi_major, host->abi_minor);
        return false;
    }
    if (api->struct_size < TPORT_BACKEND_API_SIZE_1_0) {
        snprintf(reason, cap, "table is %u bytes, ABI %u.0 needs at least %zu", api->struct_size,
                 (unsigned)TPORT_ABI_MAJOR, (size_t)TPORT_BACKEND_API_SIZE_1_0);
        return false;
    }
    /* A plug-in should pick min(host, its own); clamp if it did not. */
    *minor = api->abi_minor < host->abi_minor ? api->abi_minor : host->abi_minor;
    const char *missing = !api->name ? "name"
                          : !api->init ? "init"
                          : !api->shutdown ? "shutdown"
                          : !api->device_count ? "device_count"
                          : !api->device_info ? "device_info"
                          : !api->supports_op ? "supports_op"
                          : !api->compute ? "compute"
                                          : NULL;
    if (missing) {
        snprintf(reason, cap, "required slot '%s' is NULL", missing);
        return false;
    }
    if (!valid_name(api->name)) {
        snprintf(reason, cap, "backend name is empty, longer than 63 bytes or not [A-Za-z0-9_.-]");
        return false;
    }
    return true;
}

static bool open_library(tport_candidate *c, tport_backend_entry_fn *entry) {
    stage("dlopen");
    dlerror();
    c->handle = dlopen(c->path, RTLD_NOW | RTLD_LOCAL);
    if (!c->handle) {
        const char *e = dlerror();
        tport_candidate_reject(c, "not loadable: %s", e ? e : "unknown dlopen error");
        return false;
    }
    stage("dlsym");
    void *sym = dlsym(c->handle, TPORT_BACKEND_ENTRY_NAME);
    if (!sym) {
        tport_candidate_reject(c, "no '%s' symbol: not a tensorport backend", TPORT_BACKEND_ENTRY_NAME);
        return false;
    }
    memcpy(entry, &sym, sizeof *entry);
    return true;
}

bool tport_candidate_open(tport_candidate *c, tport_backend_entry_fn embedded) {
    const tport_host_api *host = tport_host_services();
    c->score = -1;
    c->usable = false;
    tport_backend_entry_fn entry = embedded;
    if (c->path && !open_library(c, &entry))
        return false;

    stage("entry");
    tport_clear_error();
    const tport_backend_api *api = entry(host);
    if (!api) {
        tport_candidate_reject(c, "entry point returned NULL: %s", plugin_message("no reason given"));
        return false;
    }
    uint32_t minor = 0;
    char why[sizeof c->reason];
    if (!tport_backend_table_check(api, host, &minor, why, sizeof why)) {
        if (api->struct_size >= 3 * sizeof(uint32_t))
            c->abi_major = api->abi_major;
        tport_candidate_reject(c, "%s", why);
        return false;
    }
    c->api = api;
    c->abi_major = api->abi_major;
    c->abi_minor = minor;
    snprintf(c->name, sizeof c->name, "%s", api->name);
    snprintf(c->version, sizeof c->version, "%.63s", api->version ? api->version : "");
    c->required_isa = api->required_isa;

    const uint64_t lacking = api->required_isa & ~tport_isa_host();
    if (lacking) {
        char names[160];
        tport_isa_names(lacking, names, sizeof names);
        tport_candidate_reject(c, "needs %s, which this CPU or OS does not provide", names);
        return false;
    }
    stage("score");
    int32_t score = api->score ? api->score() : 1;
    c->score = score < 0 ? 0 : score;
    if (c->score == 0) {
        tport_candidate_reject(c, "score 0: cannot run on this machine");
        return false;
    }
    c->usable = true;
    c->reason[0] = '\0';
    tport_log(TPORT_LOG_DEBUG, "backends: %s: '%s' %s, ABI %u.%u, score %d", tport_candidate_label(c), c->name,
              c->version, c->abi_major, c->abi_minor, c->score);
    return true;
}

bool tport_candidate_start(tport_candidate *c) {
    const tport_backend_api *api = c->api;
    void *state = NULL;
    stage("init");
    tport_clear_error();
    tport_status st = api->init(&state);
    if (st != TPORT_STATUS_OK) {
        tport_candidate_reject(c, "init failed (%s): %s", tport_status_name(st), plugin_message("no message"));
        return false;
    }
    c->initialised = true;
    c->active = (tport_active_backend){
        .name = c->name, .api = api, .state = state, .abi_minor = c->abi_minor,
        .score = c->score, .path = c->path,
    };
    stage("device_count");
    int32_t count = api->device_count(state);
    if (count <= 0) {
        tport_candidate_reject(c, "no devices");
        stage("shutdown");
        api->shutdown(state);
        c->initialised = false;
        return false;
    }
    c->active.n_devices = count;
    c->n_devices = count < TPORT_REPORT_MAX_DEVICES ? count : TPORT_REPORT_MAX_DEVICES;
    stage("device_info");
    for (int32_t i = 0; i < c->n_devices; i++) {
        tport_device_info *d = &c->devices[i];
        memset(d, 0, sizeof *d);
        d->struct_size = sizeof *d;
        if (api->device_info(state, i, d) != TPORT_STATUS_OK) {
            memset(d, 0, sizeof *d);
            d->struct_size = sizeof *d;
            snprintf(d->name, sizeof d->name, "device %d", (int)i);
            snprintf(d->description, sizeof d->description, "(device_info failed: %.90s)",
                     plugin_message("no message"));
        }
        d->struct_size = sizeof *d;
        d->name[sizeof d->name - 1] = '\0'; /* untrusted: force termination */
        d->description[sizeof d->description - 1] = '\0';
    }
    stage("done");
    return true;
}

void tport_candidate_close(tport_candidate *c, bool keep_mapped) {
    if (c->initialised && c->api) {
        tport_log(TPORT_LOG_DEBUG, "backends: shutting down '%s' (%s)", c->name, tport_candidate_label(c));
        c->api->shutdown(c->active.state);
        c->initialised = false;
    }
    if (c->handle && !keep_mapped)
        dlclose(c->handle);
    c->handle = NULL;
    c->api = NULL;
}
