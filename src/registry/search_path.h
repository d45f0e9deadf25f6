/* Where the registry looks for plug-in files: TPORT_BACKEND_PATH entries
 * and the backends folder installed beside libtport. */
#ifndef TPORT_REGISTRY_SEARCH_PATH_H
#define TPORT_REGISTRY_SEARCH_PATH_H

#include "tport/registry.h"

typedef struct tport_file_list {
    char **paths;
    const char **origins; /* static strings: "api", "TPORT_BACKEND_PATH", ... */
    int n, cap;
} tport_file_list;

/* Adds one entry: a folder adds every *.so file in it (sorted by name), a
 * file (or a path that does not exist, so the loader can say why) is added
 * as is.  A relative path stays relative to the current directory but is
 * made explicit ("./x.so") so dlopen never searches the library path. */
void tport_file_list_add_entry(tport_file_list *l, const char *entry, const char *origin);
/* Every entry of a ':'-separated list; empty entries are skipped (they do
 * NOT mean the current directory). */
void tport_file_list_add_path_list(tport_file_list *l, const char *list, const char *origin);
/* The backends folder installed beside the library (see search_path.c for
 * how it is found); silently nothing if it does not exist. */
void tport_file_list_add_installed(tport_file_list *l);
/* tport_installed_backend_dir (tport/registry.h) names the folder it uses. */
void tport_file_list_free(tport_file_list *l);

#endif
