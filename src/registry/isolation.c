/* Which plug-ins run isolated (TPORT_BACKEND_ISOLATE, tport_backend_isolate),
 * with which helper executable and timeouts: the registry's side of
 * src/isolate, handed to it as tport_isolate_options.
 *
 * A plug-in's name is known only from its table, so when isolation is
 * asked for by name every plug-in file is first loaded in a helper; one
 * whose name is listed stays there, the others are ended and loaded
 * in-process as usual.  `all` isolates every plug-in file (the embedded
 * cpu backend is part of libtport and always runs in-process). */
#include "isolation.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "registry.h"
#include "search_path.h"

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

bool tport_isolation_requested_any(void) {
    pthread_mutex_lock(&names_lock);
    bool any = list_nonempty(api_names);
    pthread_mutex_unlock(&names_lock);
    return any || list_nonempty(tport_registry_getenv("TPORT_BACKEND_ISOLATE"));
}

bool tport_isolation_requested(const char *name) {
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

static bool executable(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

bool tport_isolation_helper_path(char *buf, size_t cap) {
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

void tport_isolation_options(tport_isolate_options *o, const char *helper) {
    *o = (tport_isolate_options){
        .helper = helper,
        .keep_env = tport_registry_getenv("TPORT_ISOLATE_ENV"),
        .timeout_ms = timeout_ms("TPORT_COMPUTE_TIMEOUT", TIMEOUT_DEFAULT_S),
        .load_timeout_ms = timeout_ms("TPORT_PROBE_TIMEOUT", LOAD_TIMEOUT_DEFAULT_S),
        .wanted = tport_isolation_requested,
    };
}
