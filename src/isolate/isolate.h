/* Out-of-process plug-ins: a plug-in named in TPORT_BACKEND_ISOLATE (or
 * tport_backend_isolate()) is loaded by the helper executable
 * tport-backend-host and driven through a proxy backend, a 1.1
 * device-memory backend whose memory is shared with the helper.  When the
 * helper crashes, exits, hangs past TPORT_COMPUTE_TIMEOUT or sends a
 * malformed reply, the proxy kills and reaps it, says so in one line, and
 * every later call returns TPORT_STATUS_DEVICE_LOST.  Internal to
 * src/registry (the hooks in registry.c and candidate.c). */
#ifndef TPORT_ISOLATE_ISOLATE_H
#define TPORT_ISOLATE_ISOLATE_H

#include <stdbool.h>
#include <stddef.h>

#include "registry/candidate.h"

/* Whether any isolation is requested (environment or API). */
bool tport_isolate_requested_any(void);
/* Whether plug-ins named `name` are to run isolated. */
bool tport_isolate_requested(const char *name);

/* Loads candidate c (a plug-in file) in a helper when isolation is
 * requested.  True when the candidate is settled by it: either it now runs
 * isolated (c->isolate set, c->usable) or it was rejected (a crash while
 * loading, the plug-in's own refusal, no helper).  False: not to be
 * isolated (its name is not listed); load it in-process as usual. */
bool tport_isolate_try_open(tport_candidate *c);
/* init + device query in the helper; on failure c is rejected. */
bool tport_isolate_start(tport_candidate *c);
/* Ends the helper (shutdown if it is alive, then kill and reap). */
void tport_isolate_close(tport_candidate *c);

/* The proxy's table (every isolated candidate shares it; state tells them
 * apart).  Exposed for the tests. */
const tport_backend_api *tport_isolate_proxy_api(void);

/* The helper executable: TPORT_BACKEND_HOST, else tport-backend-host beside
 * the library (../bin, the build tree's parent folder) or the executable. */
bool tport_isolate_helper_path(char *buf, size_t cap);

#endif
