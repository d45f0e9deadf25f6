/* Which plug-ins run isolated, and what src/isolate is told to run them
 * with.  Internal to src/registry (candidate.c). */
#ifndef TPORT_REGISTRY_ISOLATION_H
#define TPORT_REGISTRY_ISOLATION_H

#include <stdbool.h>
#include <stddef.h>

#include "isolate/isolate.h"

/* Whether any isolation is requested (environment or API). */
bool tport_isolation_requested_any(void);
/* Whether plug-ins named `name` are to run isolated. */
bool tport_isolation_requested(const char *name);

/* The helper executable: TPORT_BACKEND_HOST, else tport-backend-host beside
 * the library (../bin, the build tree's parent folder) or the executable.
 * False (buf still names what was looked for) when there is none. */
bool tport_isolation_helper_path(char *buf, size_t cap);

/* The options for src/isolate: `helper`, TPORT_ISOLATE_ENV, the timeouts
 * (TPORT_COMPUTE_TIMEOUT, TPORT_PROBE_TIMEOUT; a bad value is warned
 * about and the default used) and tport_isolation_requested as the name
 * test. */
void tport_isolation_options(tport_isolate_options *o, const char *helper);

#endif
