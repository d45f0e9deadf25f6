/* Finding and loading ggml: libggml-base.so and the backend libraries of
 * TPORT_GGML_PATH, the version check, and the device order.  ggml is one
 * set of libraries per process, so this state is process-wide and counted
 * (every backend instance shares it). */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tg_internal.h"

#ifndef TPORT_GGML_VERSION
#error "TPORT_GGML_VERSION must name the ggml release the headers come from"
#endif
#ifndef TPORT_GGML_BACKEND_API
#error "TPORT_GGML_BACKEND_API must be that release's GGML_BACKEND_API_VERSION"
#endif

tg_funcs gf;

#define MAX_LIBS 64
#define MAX_REGS 16

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int users;
static void *base_lib;
static void *libs[MAX_REGS];
static ggml_backend_reg_t regs[MAX_REGS];
static int n_libs;
static char loaded_version[96];

/* a ':'-separated list is read into these */
typedef struct found {
    char *base;              /* the first libggml-base.so */
    char *paths[MAX_LIBS];   /* backend libraries, in list order */
    int n;
} found;

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static bool is_backend_file(const char *name) {
    size_t n = strlen(name);
    return !strncmp(name, "libggml-", 8) && n > 11 && !strcmp(name + n - 3, ".so") && strcmp(name, "libggml-base.so");
}

static void add_file(found *f, const char *path) {
    const char *name = base_name(path);
    if (!strcmp(name, "libggml-base.so")) {
        if (!f->base)
            f->base = strdup(path);
        return;
    }
    if (!is_backend_file(name) || f->n >= MAX_LIBS)
        return;
    for (int i = 0; i < f->n; i++) /* the first of one name wins */
        if (!strcmp(base_name(f->paths[i]), name))
            return;
    f->paths[f->n] = strdup(path);
    if (f->paths[f->n])
        f->n++;
}

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void add_entry(found *f, const char *entry) {
    struct stat st;
    if (entry[0] != '/') { /* never the current directory, even implicitly */
        tg_host->log(TPORT_LOG_WARN, "ggml: TPORT_GGML_PATH entry '%s' is not an absolute path: ignored", entry);
        return;
    }
    if (stat(entry, &st) != 0) {
        tg_host->log(TPORT_LOG_DEBUG, "ggml: TPORT_GGML_PATH entry '%s' does not exist", entry);
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        add_file(f, entry);
        /* a backend file named alone brings the base beside it */
        if (!f->base && is_backend_file(base_name(entry))) {
            char dir[4096];
            snprintf(dir, sizeof dir, "%.*s/libggml-base.so", (int)(base_name(entry) - entry - 1), entry);
            if (stat(dir, &st) == 0)
                add_file(f, dir);
        }
        return;
    }
    struct dirent **list = NULL;
    int n = scandir(entry, &list, NULL, by_name);
    for (int i = 0; i < n; i++) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", entry, list[i]->d_name) < (int)sizeof path)
            add_file(f, path);
        free(list[i]);
    }
    free(list);
}

static void found_free(found *f) {
    free(f->base);
    for (int i = 0; i < f->n; i++)
        free(f->paths[i]);
}

static void route_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    size_t n = strlen(text);
    while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
        n--;
    if (n && level != GGML_LOG_LEVEL_CONT)
        tg_host->log(level == GGML_LOG_LEVEL_ERROR ? TPORT_LOG_WARN : TPORT_LOG_DEBUG, "ggml: %.*s", (int)n, text);
}

typedef ggml_backend_reg_t (*init_fn)(void);
typedef int (*score_fn)(void);

/* Opens one backend library; its registration, or NULL (said why). */
static ggml_backend_reg_t open_backend(const char *path, void **handle) {
    *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!*handle) {
        tg_host->log(TPORT_LOG_WARN, "ggml: %s: %s", path, dlerror());
        return NULL;
    }
    init_fn init = (init_fn)dlsym(*handle, "ggml_backend_init");
    ggml_backend_reg_t reg = init ? init() : NULL;
    if (!reg) {
        tg_host->log(TPORT_LOG_WARN, "ggml: %s: %s", path,
                     init ? "ggml_backend_init returned no backend" : "no ggml_backend_init (not a GGML_BACKEND_DL build)");
        dlclose(*handle);
        *handle = NULL;
        return NULL;
    }
    /* The registration starts with its api_version (ggml-backend-impl.h);
     * ggml's own loader reads it the same way before using anything else. */
    int api = *(const int *)reg;
    if (api != TPORT_GGML_BACKEND_API) {
        tg_host->log(TPORT_LOG_WARN,
                     "ggml: %s speaks ggml backend API %d, this bridge was built for %d (ggml %s): refused", path,
                     api, TPORT_GGML_BACKEND_API, TPORT_GGML_VERSION);
        dlclose(*handle); /* nothing of it was called but init */
        *handle = NULL;
        return NULL;
    }
    return reg;
}

static void add_reg(ggml_backend_reg_t reg, void *handle) {
    if (n_libs < MAX_REGS) {
        regs[n_libs] = reg;
        libs[n_libs++] = handle;
    }
}

static void load_backends(const found *f) {
    /* the CPU variants compete by ggml_backend_score, as ggml's
     * ggml_backend_load_best does; every other library is loaded */
    int best = -1, best_score = 0;
    for (int i = 0; i < f->n; i++) {
        if (strncmp(base_name(f->paths[i]), "libggml-cpu", 11))
            continue;
        void *h = dlopen(f->paths[i], RTLD_NOW | RTLD_LOCAL);
        score_fn score = h ? (score_fn)dlsym(h, "ggml_backend_score") : NULL;
        int s = score ? score() : (h ? 1 : 0);
        tg_host->log(TPORT_LOG_DEBUG, "ggml: %s: score %d", f->paths[i], s);
        if (s > best_score)
            best = i, best_score = s;
        if (h)
            dlclose(h);
    }
    for (int i = 0; i < f->n; i++) {
        bool cpu = !strncmp(base_name(f->paths[i]), "libggml-cpu", 11);
        if (cpu && i != best)
            continue;
        void *h;
        ggml_backend_reg_t reg = open_backend(f->paths[i], &h);
        if (reg) {
            tg_host->log(TPORT_LOG_DEBUG, "ggml: %s: backend %s, %zu devices", f->paths[i],
                         gf.ggml_backend_reg_name(reg), gf.ggml_backend_reg_dev_count(reg));
            add_reg(reg, h);
        }
    }
}

static void close_all(void) {
    for (int i = n_libs - 1; i >= 0; i--)
        if (libs[i])
            dlclose(libs[i]);
    n_libs = 0;
    if (base_lib)
        dlclose(base_lib);
    base_lib = NULL;
    memset(&gf, 0, sizeof gf);
}

static tport_status load_locked(void) {
    const char *env = secure_getenv("TPORT_GGML_PATH");
    if (!env || !*env)
        return tg_host->error(TPORT_STATUS_UNSUPPORTED,
                              "ggml: TPORT_GGML_PATH is not set (folders or files of libggml-base.so and "
                              "libggml-<backend>.so, ggml %s)",
                              TPORT_GGML_VERSION);
    found f = {0};
    char *list = strdup(env);
    if (!list)
        return tg_host->error(TPORT_STATUS_OUT_OF_MEMORY, "ggml: out of memory");
    for (char *save = NULL, *e = strtok_r(list, ":", &save); e; e = strtok_r(NULL, ":", &save))
        add_entry(&f, e);
    free(list);
    tport_status st = TPORT_STATUS_OK;
    if (!f.base) {
        st = tg_host->error(TPORT_STATUS_UNSUPPORTED, "ggml: no libggml-base.so in TPORT_GGML_PATH (%s)", env);
        goto out;
    }
    base_lib = dlopen(f.base, RTLD_NOW | RTLD_LOCAL);
    if (!base_lib) {
        st = tg_host->error(TPORT_STATUS_UNSUPPORTED, "ggml: %s", dlerror());
        goto out;
    }
    /* the version first: nothing else of another release is called */
    const char *(*version)(void) = (const char *(*)(void))dlsym(base_lib, "ggml_version");
    const char *(*commit)(void) = (const char *(*)(void))dlsym(base_lib, "ggml_commit");
    const char *v = version ? version() : "(none: older than ggml_version)";
    if (!version || strcmp(v, TPORT_GGML_VERSION)) {
        st = tg_host->error(TPORT_STATUS_VERSION_MISMATCH,
                            "ggml: %s is ggml %s, this bridge was built for ggml %s (backend API %d): refused",
                            f.base, v, TPORT_GGML_VERSION, TPORT_GGML_BACKEND_API);
        goto out;
    }
    snprintf(loaded_version, sizeof loaded_version, "%s (commit %s)", v, commit ? commit() : "?");
#define TG_RESOLVE(fn)                                                                                               \
    if (!(gf.fn = (__typeof__(gf.fn))dlsym(base_lib, #fn))) {                                                       \
        st = tg_host->error(TPORT_STATUS_VERSION_MISMATCH, "ggml: %s (ggml %s) lacks %s", f.base, v, #fn);          \
        goto out;                                                                                                    \
    }
    TG_FUNCS(TG_RESOLVE)
#undef TG_RESOLVE
    gf.ggml_log_set(route_log, NULL);
    load_backends(&f);
    if (n_libs == 0)
        st = tg_host->error(TPORT_STATUS_UNSUPPORTED, "ggml: no usable ggml backend library (libggml-<name>.so) in "
                                                      "TPORT_GGML_PATH (%s)",
                            env);
out:
    found_free(&f);
    if (st != TPORT_STATUS_OK)
        close_all();
    return st;
}

tport_status tg_load(void) {
    pthread_mutex_lock(&lock);
    tport_status st = TPORT_STATUS_OK;
    if (users == 0 && !base_lib)
        st = load_locked();
    if (st == TPORT_STATUS_OK)
        users++;
    pthread_mutex_unlock(&lock);
    return st;
}

/* Once loaded, ggml stays loaded until the process ends: its C++ parts
 * keep state in statics (the Vulkan instance, a registry) that a dlclose
 * would tear down under later users, and that LeakSanitizer reports as
 * lost once the module is gone. */
void tg_unload(void) {
    pthread_mutex_lock(&lock);
    if (users > 0)
        users--;
    pthread_mutex_unlock(&lock);
}

/* Retired buffers of software Vulkan devices (see tg_internal.h): kept
 * for the process, in static storage (reachable, not a leak), and handed
 * out again for an allocation they can hold. */
#define MAX_RETIRED 256
static struct {
    ggml_backend_buffer_t buf;
    ggml_backend_buffer_type_t buft;
    size_t size;
} retired[MAX_RETIRED];
static int n_retired;

void tg_retire(ggml_backend_buffer_type_t buft, ggml_backend_buffer_t buf) {
    pthread_mutex_lock(&lock);
    if (n_retired == MAX_RETIRED) {
        /* full: the smallest goes (the one case a stale binding can
         * still meet freed memory; logged) */
        int k = 0;
        for (int i = 1; i < n_retired; i++)
            k = retired[i].size < retired[k].size ? i : k;
        tg_host->log(TPORT_LOG_DEBUG, "ggml: %d retired buffers: freeing one of %zu bytes", MAX_RETIRED,
                     retired[k].size);
        gf.ggml_backend_buffer_free(retired[k].buf);
        retired[k] = retired[--n_retired];
    }
    retired[n_retired].buf = buf;
    retired[n_retired].buft = buft;
    retired[n_retired++].size = gf.ggml_backend_buffer_get_size(buf);
    pthread_mutex_unlock(&lock);
}

ggml_backend_buffer_t tg_reuse(ggml_backend_buffer_type_t buft, size_t size) {
    pthread_mutex_lock(&lock);
    int best = -1;
    for (int i = 0; i < n_retired; i++)
        if (retired[i].buft == buft && retired[i].size >= size && (best < 0 || retired[i].size < retired[best].size))
            best = i;
    ggml_backend_buffer_t buf = NULL;
    if (best >= 0) {
        buf = retired[best].buf;
        retired[best] = retired[--n_retired];
    }
    pthread_mutex_unlock(&lock);
    return buf;
}

const char *tg_loaded_version(void) {
    return loaded_version;
}

static int rank(ggml_backend_dev_t d) {
    switch (gf.ggml_backend_dev_type(d)) {
    case GGML_BACKEND_DEVICE_TYPE_GPU:
        return 0;
    case GGML_BACKEND_DEVICE_TYPE_IGPU:
        return 1;
    case GGML_BACKEND_DEVICE_TYPE_CPU:
        return 2;
    default: /* ACCEL devices (BLAS, AMX) take a few ops beside the CPU */
        return 3;
    }
}

int tg_device_list(ggml_backend_dev_t *out, int cap, bool cpu_only) {
    ggml_backend_dev_t all[64];
    int n = 0;
    for (int r = 0; r < n_libs; r++)
        for (size_t i = 0; i < gf.ggml_backend_reg_dev_count(regs[r]) && n < 64; i++)
            all[n++] = gf.ggml_backend_reg_dev_get(regs[r], i);
    int k = 0;
    const char *want = secure_getenv("TPORT_GGML_DEVICES");
    if (cpu_only) /* a 1.0 host: ggml's CPU devices, whatever was chosen for 1.1 */
        want = NULL;
    if (want && *want) { /* only these, in this order */
        char *list = strdup(want);
        for (char *save = NULL, *e = list ? strtok_r(list, ", ", &save) : NULL; e; e = strtok_r(NULL, ", ", &save)) {
            bool seen = false;
            for (int i = 0; i < n && k < cap; i++)
                if (all[i] && !strcmp(gf.ggml_backend_dev_name(all[i]), e)) {
                    out[k++] = all[i];
                    all[i] = NULL;
                    seen = true;
                }
            if (!seen)
                tg_host->log(TPORT_LOG_WARN, "ggml: TPORT_GGML_DEVICES names '%s', which ggml does not offer", e);
        }
        free(list);
        return k;
    }
    for (int r = cpu_only ? 2 : 0; r <= (cpu_only ? 2 : 3); r++)
        for (int i = 0; i < n && k < cap; i++)
            if (rank(all[i]) == r)
                out[k++] = all[i];
    return k;
}
