/* Bringing one candidate backend up, step by step, refusing it with a
 * one-line reason at the first step that fails.  The order matters: nothing
 * of the plug-in runs before its ISA requirement is checked except its entry
 * point (which the rules keep trivial: it only returns a table).
 *
 * Everything the plug-in hands back is untrusted: sizes are bounded, strings
 * are read with a length limit and copied (non-printable bytes replaced, so
 * every report line stays one line), counts and status codes are checked. */
#include "candidate.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "isolation.h"

/* A table larger than this is garbage, not a newer minor: a minor appends a
 * few slots, it does not add kilobytes. */
#define TABLE_SIZE_MAX 4096u
/* Largest status id this host knows (tport/backend.h). */
#define KNOWN_STATUS_MAX TPORT_STATUS_NOT_ADDRESSABLE

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

/* Copies at most cap-1 bytes of an untrusted string (read no further than
 * that), replacing control and non-ASCII bytes with '?'. */
static void copy_printable(char *dst, size_t cap, const char *src) {
    size_t n = src ? strnlen(src, cap - 1) : 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    dst[n] = '\0';
}

/* The same, in place, for a fixed array the plug-in wrote into. */
static void sanitize_array(char *s, size_t cap) {
    s[cap - 1] = '\0'; /* untrusted: force termination */
    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch >= 0x7f)
            s[i] = '?';
    }
}

/* The plug-in's last message (recorded through host->error), or fallback.
 * The error store is bounded; this also keeps it on one line. */
static const char *plugin_message(const char *fallback, char *buf, size_t cap) {
    const char *m = tport_last_error();
    if (!m || !m[0])
        return fallback;
    copy_printable(buf, cap, m);
    return buf;
}

static const char *status_text(tport_status st, char *buf, size_t cap) {
    if (st >= 0 && st <= KNOWN_STATUS_MAX)
        return tport_status_name(st);
    snprintf(buf, cap, "unknown status %d", (int)st);
    return buf;
}

/* NULL when the name is acceptable, else what is wrong with it. */
static const char *name_problem(const char *name) {
    size_t n = strnlen(name, 64);
    if (n == 0)
        return "backend name is empty";
    if (n == 64)
        return "backend name is longer than 63 bytes (or not terminated)";
    for (size_t i = 0; i < n; i++) {
        char ch = name[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                  ch == '_' || ch == '-' || ch == '.';
        if (!ok)
            return "backend name has a byte outside [A-Za-z0-9_.-]";
    }
    return NULL;
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
    if (api->struct_size > TABLE_SIZE_MAX) {
        snprintf(reason, cap, "table claims %u bytes, implausibly large (limit %u): not a table to trust",
                 api->struct_size, TABLE_SIZE_MAX);
        return false;
    }
    /* A plug-in should pick min(host, its own); clamp if it did not.  The
     * reserved field is ignored (a later minor may give it a meaning). */
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
    const char *bad_name = name_problem(api->name);
    if (bad_name) {
        snprintf(reason, cap, "%s", bad_name);
        return false;
    }
    return true;
}

/* Whether addr lies in a loaded segment mapped executable.  An entry
 * "symbol" that is a data object is found by dlsym just the same; calling
 * it would crash, so it is refused before the call. */
typedef struct exec_query {
    uintptr_t addr;
    bool found, exec;
} exec_query;

static int find_segment(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    exec_query *q = data;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t start = (uintptr_t)info->dlpi_addr + (uintptr_t)ph->p_vaddr;
        if (q->addr >= start && q->addr - start < (uintptr_t)ph->p_memsz) {
            q->found = true;
            q->exec = (ph->p_flags & PF_X) != 0;
            return 1;
        }
    }
    return 0;
}

static bool is_code(void *addr) {
    exec_query q = {.addr = (uintptr_t)addr};
    dl_iterate_phdr(find_segment, &q);
    return q.found && q.exec;
}

static bool open_library(tport_candidate *c, tport_backend_entry_fn *entry) {
    /* dlopen of a FIFO or device would block or read forever; a folder or
     * a missing file gets a clearer reason than dlopen's. */
    struct stat st;
    if (stat(c->path, &st) != 0) {
        tport_candidate_reject(c, "no such file");
        return false;
    }
    if (!S_ISREG(st.st_mode)) {
        tport_candidate_reject(c, "not a regular file (%s)", S_ISDIR(st.st_mode) ? "a folder"
                                                            : S_ISFIFO(st.st_mode) ? "a FIFO"
                                                                                   : "a device or socket");
        return false;
    }
    stage("dlopen");
    dlerror();
    c->handle = dlopen(c->path, RTLD_NOW | RTLD_LOCAL);
    if (!c->handle) {
        const char *e = dlerror();
        char msg[200];
        copy_printable(msg, sizeof msg, e ? e : "unknown dlopen error");
        tport_candidate_reject(c, "not loadable: %s", msg);
        return false;
    }
    stage("dlsym");
    void *sym = dlsym(c->handle, TPORT_BACKEND_ENTRY_NAME);
    if (!sym) {
        tport_candidate_reject(c, "no '%s' symbol: not a tensorport backend", TPORT_BACKEND_ENTRY_NAME);
        return false;
    }
    if (!is_code(sym)) {
        tport_candidate_reject(c, "'%s' is not a function (it is in a non-executable segment)",
                               TPORT_BACKEND_ENTRY_NAME);
        return false;
    }
    memcpy(entry, &sym, sizeof *entry);
    return true;
}

bool tport_candidate_open(tport_candidate *c, tport_backend_entry_fn embedded) {
    const tport_host_api *host = tport_host_services();
    char msg[200];
    c->score = -1;
    c->usable = false;
    tport_backend_entry_fn entry = embedded;
    if (c->path && !open_library(c, &entry))
        return false;

    stage("entry");
    tport_clear_error();
    const tport_backend_api *api = entry(host);
    if (!api) {
        tport_candidate_reject(c, "entry point returned NULL: %s", plugin_message("no reason given", msg, sizeof msg));
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
    snprintf(c->name, sizeof c->name, "%s", api->name); /* checked: <= 63 bytes */
    copy_printable(c->version, sizeof c->version, api->version);
    c->required_isa = api->required_isa;

    const uint64_t lacking = api->required_isa & ~tport_isa_host();
    if (lacking) {
        char names[160];
        tport_isa_names(lacking, names, sizeof names);
        /* Bits this host has no name for cannot be checked: refused too. */
        tport_candidate_reject(c, "needs %s, which this CPU or OS does not provide", names);
        return false;
    }
    stage("score");
    int32_t score = api->score ? api->score() : 1;
    c->score = score < 0 ? 0 : score;
    if (score < 0) {
        tport_candidate_reject(c, "score %d is negative: cannot run on this machine", (int)score);
        return false;
    }
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

/* ---- a candidate in a helper process (src/isolate) ------------------------ */
static void close_isolated(tport_candidate *c) {
    tport_isolate_close(c->isolate);
    c->isolate = NULL;
    c->initialised = false;
    c->api = NULL;
}

bool tport_candidate_open_isolated(tport_candidate *c) {
    if (!c->path || !tport_isolation_requested_any())
        return false;
    c->isolated = true;
    char helper[PATH_MAX];
    if (!tport_isolation_helper_path(helper, sizeof helper)) {
        tport_candidate_reject(c, "isolation requested, but the helper %s is missing (set TPORT_BACKEND_HOST)",
                               helper);
        return true;
    }
    tport_isolate_options opt;
    tport_isolation_options(&opt, helper);
    struct iso_proxy *p = NULL;
    tport_isolate_loaded l;
    char why[512];
    tport_isolate_outcome r = tport_isolate_open(c->path, &opt, &p, &l, why, sizeof why);
    if (r == TPORT_ISOLATE_DECLINED) {
        c->isolated = false;
        c->version[0] = '\0';
        c->abi_major = 0;
        return false; /* load it in-process */
    }
    snprintf(c->version, sizeof c->version, "%s", l.version);
    c->abi_major = l.abi_major;
    if (r != TPORT_ISOLATE_LOADED) {
        tport_candidate_reject(c, "%s", why);
        return true;
    }
    snprintf(c->name, sizeof c->name, "%s", l.name);
    c->abi_minor = l.abi_minor <= TPORT_ABI_MINOR ? l.abi_minor : TPORT_ABI_MINOR;
    c->required_isa = l.required_isa;
    c->score = l.score > 0 ? l.score : 1;
    c->api = tport_isolate_proxy_api();
    c->isolate = p;
    c->usable = true;
    c->reason[0] = '\0';
    tport_log(TPORT_LOG_DEBUG, "backends: %s: '%s' loaded isolated (helper pid %d), ABI %u.%u, score %d",
              tport_candidate_label(c), c->name, l.pid, c->abi_major, c->abi_minor, c->score);
    return true;
}

static bool start_isolated(tport_candidate *c) {
    struct iso_proxy *p = c->isolate;
    char why[512];
    if (!tport_isolate_start(p, why, sizeof why)) {
        tport_candidate_reject(c, "%s", why);
        close_isolated(c);
        return false;
    }
    int32_t count = c->api->device_count(p);
    c->n_devices = count < TPORT_REPORT_MAX_DEVICES ? count : TPORT_REPORT_MAX_DEVICES;
    for (int32_t i = 0; i < c->n_devices; i++) {
        tport_device_info *o = &c->devices[i];
        memset(o, 0, sizeof *o);
        o->struct_size = sizeof *o;
        c->api->device_info(p, i, o);
    }
    c->initialised = true;
    c->active = (tport_active_backend){
        .name = c->name, .api = c->api, .state = p, .abi_minor = TPORT_ABI_MINOR,
        .score = c->score, .path = c->path, .n_devices = count,
    };
    tport_backend_mem_resolve(&c->active, &c->devices[0]); /* the proxy's 1.1 slots and caps */
    return true;
}

/* ---- in-process ------------------------------------------------------------ */
bool tport_candidate_start(tport_candidate *c) {
    if (c->isolate)
        return start_isolated(c);
    const tport_backend_api *api = c->api;
    char msg[160], code[32];
    void *state = NULL; /* init may leave it NULL: the state is opaque to the host */
    stage("init");
    tport_clear_error();
    tport_status st = api->init(&state);
    if (st != TPORT_STATUS_OK) {
        tport_candidate_reject(c, "init failed (%s): %s", status_text(st, code, sizeof code),
                               plugin_message("no message", msg, sizeof msg));
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
        tport_candidate_reject(c, "no devices (device_count returned %d)", (int)count);
        stage("shutdown");
        api->shutdown(state);
        c->initialised = false;
        return false;
    }
    /* A huge count costs nothing: only the first few are asked about and
     * stored; the scheduler uses device 0. */
    c->active.n_devices = count;
    c->n_devices = count < TPORT_REPORT_MAX_DEVICES ? count : TPORT_REPORT_MAX_DEVICES;
    stage("device_info");
    for (int32_t i = 0; i < c->n_devices; i++) {
        tport_device_info *d = &c->devices[i];
        memset(d, 0, sizeof *d);
        d->struct_size = sizeof *d;
        tport_clear_error();
        if (api->device_info(state, i, d) != TPORT_STATUS_OK) {
            memset(d, 0, sizeof *d);
            snprintf(d->name, sizeof d->name, "device %d", (int)i);
            snprintf(d->description, sizeof d->description, "(device_info failed: %.90s)",
                     plugin_message("no message", msg, sizeof msg));
        }
        d->struct_size = sizeof *d; /* whatever the plug-in wrote there */
        sanitize_array(d->name, sizeof d->name);
        sanitize_array(d->description, sizeof d->description);
    }
    tport_backend_mem_resolve(&c->active, c->n_devices > 0 ? &c->devices[0] : NULL);
    stage("done");
    return true;
}

void tport_candidate_close(tport_candidate *c, bool keep_mapped) {
    if (c->isolate)
        close_isolated(c); /* nothing of it is loaded here */
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
