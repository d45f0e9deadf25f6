/* Which plug-ins run isolated, and bringing an isolated candidate up and
 * down for the registry (hooks in registry.c and candidate.c).
 *
 * A plug-in's name is known only from its table, so when isolation is
 * asked for by name every plug-in file is first loaded in a helper; one
 * whose name is listed stays there, the others are ended and loaded
 * in-process as usual.  `all` isolates every plug-in file (the embedded
 * cpu backend is part of libtport and always runs in-process). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "isolate/isolate.h"
#include "isolate/internal.h"
#include "isolate/spawn.h"
#include "registry/search_path.h"

/* The installed bindir relative to the libdir (CMake passes it: ../bin, or
 * ../../bin for a multiarch lib/x86_64-linux-gnu). */
#ifndef TPORT_HELPER_FROM_LIBDIR
#define TPORT_HELPER_FROM_LIBDIR "../bin"
#endif

#define TIMEOUT_DEFAULT_S 30
#define LOAD_TIMEOUT_DEFAULT_S 10 /* as --probe's */
#define TIMEOUT_MAX_S 86400

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static char api_names[512]; /* from tport_backend_isolate(), ','-separated */

static bool list_has(const char *list, const char *name) {
    size_t len = strlen(name);
    for (const char *p = list; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t n = strcspn(p, ",");
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n && ((n == len && !strncmp(p, name, n)) || (n == 3 && !strncmp(p, "all", 3))))
            return true;
        p = strchr(p, ',');
    }
    return false;
}

static bool list_nonempty(const char *list) {
    return list && list[strspn(list, " ,")];
}

bool tport_isolate_requested_any(void) {
    pthread_mutex_lock(&names_lock);
    bool any = list_nonempty(api_names);
    pthread_mutex_unlock(&names_lock);
    return any || list_nonempty(tport_registry_getenv("TPORT_BACKEND_ISOLATE"));
}

bool tport_isolate_requested(const char *name) {
    pthread_mutex_lock(&names_lock);
    bool yes = list_has(api_names, name);
    pthread_mutex_unlock(&names_lock);
    return yes || list_has(tport_registry_getenv("TPORT_BACKEND_ISOLATE"), name);
}

tport_status tport_backend_isolate(const char *name) {
    if (!name || !name[0] || strlen(name) > 63 || strchr(name, ','))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tport_backend_isolate: bad name");
    pthread_mutex_lock(&names_lock);
    size_t used = strlen(api_names);
    tport_status st = TPORT_STATUS_OK;
    if (list_has(api_names, name))
        ;
    else if (used + strlen(name) + 2 > sizeof api_names)
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "tport_backend_isolate: too many names");
    else
        snprintf(api_names + used, sizeof api_names - used, "%s%s", used ? "," : "", name);
    pthread_mutex_unlock(&names_lock);
    return st;
}

/* Seconds from `name` (1..TIMEOUT_MAX_S), else `dflt`, in ms. */
static long long timeout_ms(const char *name, int dflt) {
    const char *v = tport_registry_getenv(name);
    if (!v || !v[0])
        return dflt * 1000LL;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end || n < 1 || n > TIMEOUT_MAX_S) {
        tport_log(TPORT_LOG_WARN, "backends: %s='%.20s' is not 1..%d seconds; using %d", name, v, TIMEOUT_MAX_S,
                  dflt);
        return dflt * 1000LL;
    }
    return n * 1000LL;
}

/* ---- the helper executable ------------------------------------------------ */
static bool executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

bool tport_isolate_helper_path(char *buf, size_t cap) {
    const char *env = tport_registry_getenv("TPORT_BACKEND_HOST");
    if (env && env[0]) {
        snprintf(buf, cap, "%s", env);
        return executable(buf);
    }
    /* <libdir>/tport/backends is the backends folder; the helper is in
     * <libdir>/../bin (installed) or <libdir>/.. (the build tree, beside
     * tport); for a static libtport the folder is found from the
     * executable, and the helper sits beside it. */
    char dir[PATH_MAX];
    tport_installed_backend_dir(dir, sizeof dir);
    char *cut = strstr(dir, "/tport/backends");
    if (cut && !cut[strlen("/tport/backends")]) {
        *cut = '\0';
        static const char *const rel[] = {"/" TPORT_HELPER_FROM_LIBDIR "/tport-backend-host", "/../tport-backend-host"};
        for (size_t i = 0; i < sizeof rel / sizeof *rel; i++) {
            snprintf(buf, cap, "%s%s", dir, rel[i]);
            if (executable(buf))
                return true;
        }
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(buf, cap, "%s/tport-backend-host", exe);
            if (executable(buf))
                return true;
        }
    }
    snprintf(buf, cap, "tport-backend-host");
    return false;
}

/* ---- one candidate --------------------------------------------------------- */
static void proxy_free(iso_proxy *p) {
    iso_region_release_all(p);
    iso_buf_free(&p->rx);
    free(p->weights);
    free(p->spans);
    free(p->backs);
    free(p->sup_keys);
    free(p->sup_vals);
    free(p->enc.p);
    free(p->blob.p);
    free(p->remap);
    free(p->order);
    free(p->is_node);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Ends a live helper politely, then for certain. */
static void proxy_end(iso_proxy *p) {
    if (!p->lost && p->sock >= 0) {
        if (iso_send(p->sock, ISO_SHUTDOWN, ++p->seq, NULL, 0, NULL, 0, -1, iso_deadline(2000)) == ISO_IO_OK) {
            iso_header h;
            iso_recv(p->sock, &h, &p->rx, NULL, iso_deadline(5000));
        }
    }
    if (p->sock >= 0)
        close(p->sock);
    p->sock = -1;
    if (p->pid > 0 && !iso_reap_clean(p->pid, 2000))
        tport_log(TPORT_LOG_DEBUG, "backends: isolated %s: the helper did not exit cleanly", p->name);
    p->pid = -1;
}

static void copy_clean(char *dst, size_t cap, const char *src, size_t src_cap) {
    size_t n = strnlen(src, src_cap < cap ? src_cap : cap - 1);
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    dst[n] = '\0';
}

static bool plain_name(const char *s) {
    size_t n = strlen(s);
    if (!n || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return false;
    return true;
}

bool tport_isolate_try_open(tport_candidate *c) {
    if (!c->path || !tport_isolate_requested_any())
        return false;
    c->isolated = true;
    char helper[PATH_MAX];
    if (!tport_isolate_helper_path(helper, sizeof helper)) {
        tport_candidate_reject(c, "isolation requested, but the helper %s is missing (set TPORT_BACKEND_HOST)",
                               helper);
        return true;
    }
    iso_proxy *p = calloc(1, sizeof *p);
    if (!p) {
        tport_candidate_reject(c, "out of memory");
        return true;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->sock = -1;
    p->timeout_ms = timeout_ms("TPORT_COMPUTE_TIMEOUT", TIMEOUT_DEFAULT_S);
    p->load_timeout_ms = timeout_ms("TPORT_PROBE_TIMEOUT", LOAD_TIMEOUT_DEFAULT_S);
    snprintf(p->name, sizeof p->name, "%s", strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path);
    snprintf(p->stage, sizeof p->stage, "start");
    char why[200];
    p->pid = iso_spawn(helper, &p->sock, why, sizeof why);
    if (p->pid < 0) {
        tport_candidate_reject(c, "isolation requested, but %s could not be started: %s", helper, why);
        proxy_free(p);
        return true;
    }
    iso_hello hello = {.abi_major = TPORT_ABI_MAJOR, .abi_minor = TPORT_ABI_MINOR};
    uint32_t size = 0;
    tport_clear_error();
    if (!iso_call(p, ISO_HELLO, &hello, sizeof hello, c->path, strlen(c->path), -1, "loading", &size) ||
        size != sizeof(iso_loaded)) {
        if (!p->lost) /* a reply of the wrong size */
            iso_lose(p, false, "malformed load reply, killed", "loading");
        char msg[300];
        snprintf(msg, sizeof msg, "%s", tport_last_error());
        tport_candidate_reject(c, "isolated: %s (step %s)", msg, p->stage);
        proxy_free(p);
        return true;
    }
    iso_loaded l;
    memcpy(&l, p->rx.p, sizeof l);
    char name[64];
    copy_clean(name, sizeof name, l.name, sizeof l.name);
    copy_clean(c->version, sizeof c->version, l.version, sizeof l.version);
    c->abi_major = l.abi_major;
    if (!l.ok) {
        char reason[ISO_TEXT_MAX];
        copy_clean(reason, sizeof reason, l.reason, sizeof l.reason);
        tport_candidate_reject(c, "%s", reason);
        proxy_end(p);
        proxy_free(p);
        return true;
    }
    if (!plain_name(name)) {
        tport_candidate_reject(c, "isolated helper sent a malformed name");
        proxy_end(p);
        proxy_free(p);
        return true;
    }
    if (!tport_isolate_requested(name)) {
        c->isolated = false;
        c->version[0] = '\0';
        c->abi_major = 0;
        proxy_end(p);
        proxy_free(p);
        return false; /* load it in-process */
    }
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(p->name, sizeof p->name, "%s", name);
    c->abi_minor = l.abi_minor <= TPORT_ABI_MINOR ? l.abi_minor : TPORT_ABI_MINOR;
    c->required_isa = l.required_isa;
    c->score = l.score > 0 ? l.score : 1;
    c->api = tport_isolate_proxy_api();
    c->isolate = p;
    c->usable = true;
    c->reason[0] = '\0';
    tport_log(TPORT_LOG_DEBUG, "backends: %s: '%s' loaded isolated (helper pid %d), ABI %u.%u, score %d",
              tport_candidate_label(c), c->name, (int)p->pid, c->abi_major, c->abi_minor, c->score);
    return true;
}

bool tport_isolate_start(tport_candidate *c) {
    iso_proxy *p = c->isolate;
    uint32_t size = 0;
    tport_clear_error();
    if (!iso_call(p, ISO_START, NULL, 0, NULL, 0, -1, "init", &size) || size != sizeof(iso_started)) {
        if (!p->lost)
            iso_lose(p, false, "malformed init reply, killed", "init");
        char msg[300];
        snprintf(msg, sizeof msg, "%s", tport_last_error());
        tport_candidate_reject(c, "isolated: %s (step %s)", msg, p->stage);
        tport_isolate_close(c);
        return false;
    }
    iso_started s;
    memcpy(&s, p->rx.p, sizeof s);
    if (!s.ok) {
        char reason[ISO_TEXT_MAX];
        copy_clean(reason, sizeof reason, s.reason, sizeof s.reason);
        tport_candidate_reject(c, "%s", reason);
        tport_isolate_close(c);
        return false;
    }
    if (s.device_count <= 0 || s.n_devices <= 0 || s.n_devices > ISO_MAX_DEVICES ||
        s.n_devices > s.device_count) {
        tport_candidate_reject(c, "isolated helper sent a malformed device list");
        tport_isolate_close(c);
        return false;
    }
    /* A device with memory of its own keeps its buffers in the helper; the
     * others compute on memory shared with it. */
    p->device_mode = (s.devices[0].caps & TPORT_DEVICE_CAP_DEVICE_MEMORY) != 0;
    p->device_count = s.n_devices; /* the host drives what it was told about */
    p->n_devices = s.n_devices;
    c->n_devices = s.n_devices < TPORT_REPORT_MAX_DEVICES ? s.n_devices : TPORT_REPORT_MAX_DEVICES;
    for (int32_t i = 0; i < s.n_devices; i++) {
        iso_device *d = &p->devices[i];
        *d = s.devices[i];
        copy_clean(d->name, sizeof d->name, s.devices[i].name, sizeof d->name);
        copy_clean(d->description, sizeof d->description, s.devices[i].description, sizeof d->description);
        if (i < c->n_devices) {
            tport_device_info *o = &c->devices[i];
            memset(o, 0, sizeof *o);
            o->struct_size = sizeof *o;
            tport_isolate_proxy_api()->device_info(p, i, o);
        }
    }
    c->initialised = true;
    c->active = (tport_active_backend){
        .name = c->name, .api = c->api, .state = p, .abi_minor = TPORT_ABI_MINOR,
        .score = c->score, .path = c->path, .n_devices = p->device_count,
    };
    tport_backend_mem_resolve(&c->active, &c->devices[0]); /* the proxy's 1.1 slots and caps */
    return true;
}

void tport_isolate_close(tport_candidate *c) {
    iso_proxy *p = c->isolate;
    if (p) {
        pthread_mutex_lock(&p->lock);
        proxy_end(p);
        pthread_mutex_unlock(&p->lock);
        proxy_free(p);
    }
    c->isolate = NULL;
    c->initialised = false;
    c->api = NULL;
}
