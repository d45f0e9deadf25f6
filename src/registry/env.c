/* The environment as the registry reads it (declared in registry.h): below
 * every other file of src/registry, which all read their variables here. */
#include <stdlib.h>
#include <sys/auxv.h>

#include "registry.h"

const char *tport_registry_getenv(const char *name) {
    if (getauxval(AT_SECURE))
        return NULL; /* set-uid/set-gid: the environment is not the user's to trust */
    return getenv(name);
}
