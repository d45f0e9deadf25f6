/* Turning TPORT_BACKEND_PATH and the installed backends folder into a list
 * of candidate files, in a deterministic order.
 *
 * The installed folder is found relative to the code of libtport itself:
 * dladdr() on one of our functions names the file that contains it.
 *  - libtport.so (shared): <dir of libtport.so>/tport/backends — in the
 *    build tree build/lib/tport/backends, after install
 *    <prefix>/<libdir>/tport/backends.
 *  - libtport.a (static): dladdr names the executable itself, so the folder
 *    is <dir of exe>/../<libdir>/tport/backends, the installed layout
 *    bin/ + lib/.  (A build-tree test linked statically finds nothing there,
 *    which keeps tests deterministic; they name plug-ins explicitly.)
 * No path is baked in at build time and the current directory is never
 * searched implicitly. */
#include "search_path.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

#ifndef TPORT_INSTALL_BACKEND_SUBDIR
#define TPORT_INSTALL_BACKEND_SUBDIR "lib/tport/backends"
#endif

static void add_file(tport_file_list *l, const char *path, const char *origin) {
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        char **p = realloc(l->paths, (size_t)cap * sizeof *p);
        if (!p)
            return;
        l->paths = p;
        const char **o = realloc(l->origins, (size_t)cap * sizeof *o);
        if (!o)
            return;
        l->origins = o;
        l->cap = cap;
    }
    /* "x.so" would make dlopen search LD_LIBRARY_PATH and the system
     * folders; "./x.so" is the file the user named. */
    const bool bare = !strchr(path, '/');
    size_t len = strlen(path) + (bare ? 3 : 1);
    char *copy = malloc(len);
    if (!copy)
        return;
    strcpy(copy, bare ? "./" : "");
    strcat(copy, path);
    l->paths[l->n] = copy;
    l->origins[l->n] = origin;
    l->n++;
}

static bool is_plugin_file_name(const char *name) {
    size_t n = strlen(name);
    return name[0] != '.' && n > 3 && !strcmp(name + n - 3, ".so");
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.so regular file (or link to one) in dir, sorted by name. */
static void add_folder(tport_file_list *l, const char *dir, const char *origin) {
    DIR *d = opendir(dir);
    if (!d) {
        tport_log(TPORT_LOG_DEBUG, "backends: cannot read folder %s", dir);
        return;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_plugin_file_name(e->d_name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            char **p = realloc(names, cap * sizeof *p);
            if (!p)
                break;
            names = p;
        }
        names[n] = strdup(e->d_name);
        if (names[n])
            n++;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, compare_names);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]) + 2;
        char *full = malloc(len);
        if (full) {
            snprintf(full, len, "%s/%s", dir, names[i]);
            struct stat st;
            if (stat(full, &st) == 0 && S_ISREG(st.st_mode))
                add_file(l, full, origin);
            free(full);
        }
        free(names[i]);
    }
    free(names);
}

void tport_file_list_add_entry(tport_file_list *l, const char *entry, const char *origin) {
    struct stat st;
    if (stat(entry, &st) == 0 && S_ISDIR(st.st_mode)) {
        tport_log(TPORT_LOG_DEBUG, "backends: scanning folder %s (%s)", entry, origin);
        add_folder(l, entry, origin);
    } else {
        add_file(l, entry, origin);
    }
}

void tport_file_list_add_path_list(tport_file_list *l, const char *list, const char *origin) {
    const char *p = list;
    while (p && *p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0 && len < PATH_MAX) {
            char entry[PATH_MAX];
            memcpy(entry, p, len);
            entry[len] = '\0';
            tport_file_list_add_entry(l, entry, origin);
        }
        else if (len >= PATH_MAX)
            tport_log(TPORT_LOG_WARN, "backends: %s: an entry of %zu bytes is longer than PATH_MAX; ignored", origin,
                      len);
        p = colon ? colon + 1 : NULL;
    }
}

static void dir_of(char *path) {
    char *slash = strrchr(path, '/');
    if (slash)
        *slash = '\0';
    else
        strcpy(path, ".");
}

void tport_installed_backend_dir(char *buf, unsigned cap) {
    buf[0] = '\0';
    Dl_info info;
    /* The address of a function of ours, as a data pointer for dladdr. */
    void (*self)(char *, unsigned) = tport_installed_backend_dir;
    void *addr;
    memcpy(&addr, &self, sizeof addr);
    if (!dladdr(addr, &info) || !info.dli_fname)
        return;
    char lib[PATH_MAX], exe[PATH_MAX];
    if (!realpath(info.dli_fname, lib))
        return;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    const bool is_exe = n > 0 && !strcmp(lib, exe);
    dir_of(lib);
    if (is_exe)
        snprintf(buf, cap, "%s/../%s", lib, TPORT_INSTALL_BACKEND_SUBDIR);
    else
        snprintf(buf, cap, "%s/tport/backends", lib);
}

void tport_file_list_add_installed(tport_file_list *l) {
    char dir[PATH_MAX];
    tport_installed_backend_dir(dir, sizeof dir);
    struct stat st;
    if (!dir[0] || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        tport_log(TPORT_LOG_DEBUG, "backends: no installed backends folder (%s)", dir[0] ? dir : "unknown");
        return;
    }
    tport_log(TPORT_LOG_DEBUG, "backends: scanning installed folder %s", dir);
    add_folder(l, dir, "installed");
}

void tport_file_list_free(tport_file_list *l) {
    for (int i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
    free(l->origins);
    *l = (tport_file_list){0};
}
