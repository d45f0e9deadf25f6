/* The registry: discovery in a fixed order, selection among candidates of
 * the same name by score (the others are "shadowed"), and the preference
 * order of the active backends.
 *
 * Selection per name: the highest-scoring usable candidate is initialised;
 * if its init fails or it has no devices it is rejected and the next one is
 * tried, so a broken variant falls back to a working one.  Ties go to the
 * earlier-discovered candidate (so the embedded CPU backend wins a tie with
 * a plug-in variant of the same score).
 *
 * Order of the active list: names in TPORT_BACKEND first, in that order;
 * then backends with a non-CPU device before CPU-only ones; then score;
 * then discovery order.  Backends not named in TPORT_BACKEND stay
 * available after the named ones.
 *
 * The embedded cpu backend is the last resort.  A plug-in named "cpu" may
 * shadow it (that is how the ISA variants work), but if the winner declines
 * even a plain F32 add, the embedded one stays initialised at the very end
 * of the active list, so every op the winner declines still has a backend.
 *
 * A file is loaded once: the same file named twice, through a folder and
 * by name, or through a symlink (same realpath) is one candidate. */
#include "registry.h"

#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "candidate.h"
#include "core/error.h"
#include "isolation.h"
#include "search_path.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool discovered;
static bool probe_requested;
static tport_candidate **cands; /* discovery order; each malloc'd (stable) */
static int n_cands, cap_cands;
static tport_candidate **active;
static int n_active;

static bool env_flag(const char *name) {
    const char *v = tport_registry_getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

const char *tport_candidate_status_name(tport_candidate_status s) {
    switch (s) {
    case TPORT_CANDIDATE_ACTIVE: return "active";
    case TPORT_CANDIDATE_SHADOWED: return "shadowed";
    case TPORT_CANDIDATE_REJECTED: return "rejected";
    }
    return "unknown";
}

static tport_candidate *new_candidate(const char *path, const char *origin) {
    if (n_cands == cap_cands) {
        int cap = cap_cands ? cap_cands * 2 : 16;
        tport_candidate **p = realloc(cands, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        cands = p;
        cap_cands = cap;
    }
    tport_candidate *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    if (path && !(c->path = strdup(path))) {
        free(c);
        return NULL;
    }
    c->real = path ? realpath(path, NULL) : NULL; /* NULL: not resolvable */
    c->origin = origin;
    c->score = -1;
    /* Until tport_candidate_open says otherwise; `usable` marks the ones
     * waiting for selection. */
    c->status = TPORT_CANDIDATE_REJECTED;
    snprintf(c->reason, sizeof c->reason, "not examined");
    cands[n_cands++] = c;
    return c;
}

/* Index of an already-known candidate for the same file, or -1. */
static int find_same_file(const char *path) {
    char want[PATH_MAX];
    if (!realpath(path, want))
        return -1;
    for (int i = 0; i < n_cands; i++) /* realpaths cached: no O(n^2) syscalls */
        if (cands[i]->real && !strcmp(want, cands[i]->real))
            return i;
    return -1;
}

static void drop_handle(tport_candidate *c) {
    tport_candidate_close(c, env_flag("TPORT_NO_UNLOAD"));
}

/* Loads one file as a candidate (probing it first if asked). */
static tport_candidate *add_file(const char *path, const char *origin) {
    int same = find_same_file(path);
    if (same >= 0) {
        tport_log(TPORT_LOG_INFO, "backends: %s: same file as %s, loaded once", path,
                  tport_candidate_label(cands[same]));
        return cands[same];
    }
    tport_candidate *c = new_candidate(path, origin);
    if (!c)
        return NULL;
    tport_log(TPORT_LOG_DEBUG, "backends: candidate %s (%s)", path, origin);
    if (tport_candidate_open_isolated(c)) /* TPORT_BACKEND_ISOLATE: loaded (or refused) in a helper */
        return c;
    if (probe_requested || env_flag("TPORT_BACKEND_PROBE")) {
        char why[sizeof c->reason];
        if (!tport_probe_file(path, why, sizeof why)) {
            tport_candidate_reject(c, "%s", why);
            tport_log(TPORT_LOG_WARN, "backends: %s: %s", path, why);
            return c;
        }
    }
    if (!tport_candidate_open(c, NULL))
        drop_handle(c);
    return c;
}

static bool better(const tport_candidate *a, const tport_candidate *b) {
    return a->score > b->score; /* ties: the earlier one (scanned first) stays */
}

/* Whether b accepts a contiguous F32 add of 8 elements, the least any
 * usable cpu backend does. */
static bool handles_basics(const tport_candidate *b) {
    static float x[8], y[8], z[8];
    tport_tensor_view t[3];
    for (int i = 0; i < 3; i++) {
        t[i] = (tport_tensor_view){
            .struct_size = sizeof t[i], .op = TPORT_OP_NONE, .type = TPORT_TYPE_F32, .src = {-1, -1, -1, -1}, .src_more = {-1, -1},
            .ne = {8, 1, 1, 1}, .nb = {4, 32, 32, 32}, .name = "basic",
        };
    }
    t[0].data = x;
    t[1].data = y;
    t[2].data = z;
    t[2].op = TPORT_OP_ADD;
    t[2].src[0] = 0;
    t[2].src[1] = 1;
    const tport_tensor_view *ptrs[3] = {&t[0], &t[1], &t[2]};
    const int32_t nodes[1] = {2};
    tport_graph_view v = {.struct_size = sizeof v, .n_tensors = 3, .tensors = ptrs, .n_nodes = 1,
                          .nodes = nodes, .n_threads = 1};
    return b->api && b->api->supports_op(b->active.state, 0, &v, 2);
}

/* The embedded cpu, shadowed by `winner`: kept initialised as the last
 * resort unless the winner handles the basics. */
static void maybe_keep_fallback(tport_candidate *c, const tport_candidate *winner) {
    if (!winner->isolate && handles_basics(winner))
        return; /* an isolated winner may be lost: the embedded cpu stays behind it */
    if (!c->initialised && !tport_candidate_start(c))
        return; /* rejected, with start's reason */
    c->fallback = true;
    size_t len = strlen(c->reason);
    if (winner->isolate) {
        snprintf(c->reason + len, sizeof c->reason - len, "; kept as fallback: the winner runs isolated");
        return;
    }
    snprintf(c->reason + len, sizeof c->reason - len, "; kept as fallback: the winner declines a plain F32 add");
    tport_log(TPORT_LOG_WARN, "backends: %s named 'cpu' declines a plain F32 add; the embedded cpu stays as fallback",
              tport_candidate_label(winner));
}

/* Settles every candidate named `name`: one active, the rest shadowed. */
static void settle_name(const char *name) {
    for (;;) {
        tport_candidate *best = NULL;
        for (int i = 0; i < n_cands; i++) {
            tport_candidate *c = cands[i];
            bool contender = c->usable || c->status == TPORT_CANDIDATE_ACTIVE;
            if (contender && c->status != TPORT_CANDIDATE_SHADOWED && !strcmp(c->name, name) &&
                (!best || better(c, best)))
                best = c;
        }
        if (!best)
            return;
        if (best->usable) {
            if (!tport_candidate_start(best)) {
                drop_handle(best);
                continue; /* fall back to the next best of this name */
            }
            best->usable = false;
            best->status = TPORT_CANDIDATE_ACTIVE;
            best->reason[0] = '\0';
            tport_log(TPORT_LOG_DEBUG, "backends: '%s' from %s is active (score %d, %d device(s))", name,
                      tport_candidate_label(best), best->score, best->active.n_devices);
        }
        for (int i = 0; i < n_cands; i++) {
            tport_candidate *c = cands[i];
            if (c == best || strcmp(c->name, name) || !(c->usable || c->status == TPORT_CANDIDATE_ACTIVE))
                continue;
            if (best->score == c->score)
                snprintf(c->reason, sizeof c->reason, "shadowed by %s (same score %d, found first)",
                         tport_candidate_label(best), best->score);
            else
                snprintf(c->reason, sizeof c->reason, "shadowed by %s (score %d beats %d)",
                         tport_candidate_label(best), best->score, c->score);
            c->status = TPORT_CANDIDATE_SHADOWED;
            tport_log(TPORT_LOG_DEBUG, "backends: %s: %s", tport_candidate_label(c), c->reason);
            if (!c->path && !c->fallback && (c->usable || c->initialised)) {
                c->usable = false;
                maybe_keep_fallback(c, best);
                if (!c->fallback && !c->initialised)
                    drop_handle(c);
            } else if (c->usable) {
                c->usable = false;
                drop_handle(c);
            }
            /* A formerly active one stays initialised until shutdown: the
             * scheduler may still hold it. */
        }
        return;
    }
}

/* Position of name in TPORT_BACKEND ("a,b,c"), or INT_MAX. */
static int preference(const char *name) {
    const char *list = tport_registry_getenv("TPORT_BACKEND");
    int idx = 0;
    size_t len = strlen(name);
    for (const char *p = list; p && *p; idx++) {
        while (*p == ' ')
            p++;
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 0 && p[n - 1] == ' ')
            n--;
        if (n == len && !strncmp(p, name, n))
            return idx;
        p = end ? end + 1 : NULL;
    }
    return INT_MAX;
}

static bool cpu_only(const tport_candidate *c) {
    if (!strcmp(c->name, "cpu"))
        return true;
    for (int i = 0; i < c->n_devices; i++)
        if (c->devices[i].kind != TPORT_DEVICE_CPU)
            return false;
    return true;
}

static int discovery_index(const tport_candidate *c) {
    for (int i = 0; i < n_cands; i++)
        if (cands[i] == c)
            return i;
    return n_cands;
}

static int compare_active(const void *pa, const void *pb) {
    const tport_candidate *a = *(tport_candidate *const *)pa, *b = *(tport_candidate *const *)pb;
    int pa_ = preference(a->name), pb_ = preference(b->name);
    if (pa_ != pb_)
        return pa_ < pb_ ? -1 : 1;
    bool ca = cpu_only(a), cb = cpu_only(b);
    if (ca != cb)
        return ca ? 1 : -1;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return discovery_index(a) - discovery_index(b);
}

static void settle_all(void) {
    for (int i = 0; i < n_cands; i++)
        if (cands[i]->usable)
            settle_name(cands[i]->name);
    free(active);
    active = NULL;
    n_active = 0;
    active = malloc((size_t)(n_cands ? n_cands : 1) * sizeof *active);
    if (!active)
        return;
    for (int i = 0; i < n_cands; i++)
        if (cands[i]->status == TPORT_CANDIDATE_ACTIVE)
            active[n_active++] = cands[i];
    qsort(active, (size_t)n_active, sizeof *active, compare_active);
    for (int i = 0; i < n_cands; i++) /* the last resort, after everything */
        if (cands[i]->fallback && cands[i]->initialised && cands[i]->status == TPORT_CANDIDATE_SHADOWED) {
            cands[i]->active.fallback = true;
            active[n_active++] = cands[i];
        }
    for (int i = 0; i < n_active; i++)
        tport_log(TPORT_LOG_DEBUG, "backends: preference %d: '%s' (%s)", i, active[i]->name,
                  tport_candidate_label(active[i]));
    const char *list = tport_registry_getenv("TPORT_BACKEND");
    if (list && list[0]) {
        /* say so (once per name) when a preferred name is not available */
        char buf[256];
        snprintf(buf, sizeof buf, "%s", list);
        const char *seen[64];
        int n_seen = 0;
        for (char *save = NULL, *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
            bool found = false;
            for (int i = 0; i < n_active; i++)
                found |= !strcmp(active[i]->name, tok);
            for (int i = 0; i < n_seen; i++)
                found |= !strcmp(seen[i], tok);
            if (n_seen < 64)
                seen[n_seen++] = tok;
            if (!found)
                tport_log(TPORT_LOG_WARN, "backends: TPORT_BACKEND names '%s', which is not available", tok);
        }
    }
}

static void discover_locked(void) {
    if (discovered)
        return;
    discovered = true;
    tport_log(TPORT_LOG_DEBUG, "backends: discovery starts (host ABI %d.%d)", TPORT_ABI_MAJOR, TPORT_ABI_MINOR);
    tport_candidate *embedded = new_candidate(NULL, "embedded");
    if (embedded && !tport_candidate_open(embedded, tport_cpu_embedded_entry))
        tport_log(TPORT_LOG_ERROR, "backends: the embedded cpu backend was refused: %s", embedded->reason);

    tport_file_list files = {0};
    const char *env = tport_registry_getenv("TPORT_BACKEND_PATH");
    if (env)
        tport_file_list_add_path_list(&files, env, "TPORT_BACKEND_PATH");
    tport_file_list_add_installed(&files);
    for (int i = 0; i < files.n; i++)
        add_file(files.paths[i], files.origins[i]);
    tport_file_list_free(&files);
    settle_all();
}

void tport_registry_init(void) {
    pthread_mutex_lock(&lock);
    discover_locked();
    pthread_mutex_unlock(&lock);
}

void tport_registry_set_probe(bool on) {
    pthread_mutex_lock(&lock);
    probe_requested = on;
    pthread_mutex_unlock(&lock);
}

static void (*shutdown_hook)(void);

void tport_registry_set_shutdown_hook(void (*hook)(void)) {
    shutdown_hook = hook;
}

void tport_registry_shutdown(void) {
    /* the scheduler gives back device buffers before backends shut down */
    if (shutdown_hook)
        shutdown_hook();
    pthread_mutex_lock(&lock);
    const bool keep = env_flag("TPORT_NO_UNLOAD");
    /* Reverse order: the last loaded goes first. */
    for (int i = n_cands - 1; i >= 0; i--) {
        tport_candidate_close(cands[i], keep);
        free(cands[i]->path);
        free(cands[i]->real);
        free(cands[i]);
    }
    free(cands);
    free(active);
    cands = NULL;
    active = NULL;
    n_cands = cap_cands = n_active = 0;
    discovered = false;
    pthread_mutex_unlock(&lock);
}

int tport_registry_active_count(void) {
    pthread_mutex_lock(&lock);
    discover_locked();
    int n = n_active;
    pthread_mutex_unlock(&lock);
    return n;
}

const tport_active_backend *tport_registry_active(int i) {
    pthread_mutex_lock(&lock);
    discover_locked();
    const tport_active_backend *a = i >= 0 && i < n_active ? &active[i]->active : NULL;
    pthread_mutex_unlock(&lock);
    return a;
}

const tport_active_backend *tport_registry_find(const char *name) {
    const tport_active_backend *a = NULL;
    pthread_mutex_lock(&lock);
    discover_locked();
    for (int i = 0; name && i < n_active && !a; i++)
        if (!strcmp(active[i]->name, name))
            a = &active[i]->active;
    pthread_mutex_unlock(&lock);
    return a;
}

int tport_registry_candidate_count(void) {
    pthread_mutex_lock(&lock);
    discover_locked();
    int n = n_cands;
    pthread_mutex_unlock(&lock);
    return n;
}

bool tport_registry_candidate(int i, tport_candidate_report *out) {
    pthread_mutex_lock(&lock);
    discover_locked();
    bool ok = i >= 0 && i < n_cands;
    if (ok) {
        const tport_candidate *c = cands[i];
        *out = (tport_candidate_report){
            .path = tport_candidate_label(c), .origin = c->origin, .name = c->name, .version = c->version,
            .abi_major = c->abi_major, .abi_minor = c->abi_minor, .required_isa = c->required_isa,
            .score = c->score, .status = c->status, .reason = c->reason,
            .n_devices = c->status == TPORT_CANDIDATE_REJECTED ? 0 : c->n_devices, .devices = c->devices,
            .fallback = c->fallback, .isolated = c->isolated,
        };
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

/* ---- public API (tport.h) ------------------------------------------------ */
tport_status tport_backend_load(const char *path) {
    if (!path || !path[0])
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "tport_backend_load: empty path");
    pthread_mutex_lock(&lock);
    discover_locked();
    tport_candidate *c = add_file(path, "api");
    tport_status st = TPORT_STATUS_OK;
    if (!c) {
        st = tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory", path);
    } else {
        if (c->usable)
            settle_all();
        if (c->status == TPORT_CANDIDATE_REJECTED)
            st = tport_error(strstr(c->reason, "backend ABI") ? TPORT_STATUS_VERSION_MISMATCH : TPORT_STATUS_ERROR,
                             "%s: %s", path, c->reason);
    }
    pthread_mutex_unlock(&lock);
    return st;
}

int tport_backend_count(void) {
    return tport_registry_active_count();
}

const char *tport_backend_name(int i) {
    const tport_active_backend *a = tport_registry_active(i);
    return a ? a->name : NULL;
}

bool tport_backend_is_isolated(int i) {
    const tport_active_backend *a = tport_registry_active(i);
    return a && a->api == tport_isolate_proxy_api();
}

bool tport_backend_is_fallback(int i) {
    const tport_active_backend *a = tport_registry_active(i);
    return a && a->fallback;
}

bool tport_backend_supports(int i, const tport_graph_view *graph, int32_t node) {
    const tport_active_backend *a = tport_registry_active(i);
    if (!a || !a->api->supports_op || !graph || node < 0 || node >= graph->n_tensors)
        return false;
    for (int32_t dev = 0; dev < a->n_devices; dev++)
        if (a->api->supports_op(a->state, dev, graph, node))
            return true;
    return false;
}
