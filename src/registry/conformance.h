/* Conformance of a backend against the reference (the embedded CPU
 * backend): the numerics tier runs every op x type x shape case the backend
 * claims on both and compares; the ABI tier drives the plug-in through host
 * tables of an older and a newer minor (and another major, which it must
 * refuse).  Used by `tport check-backend`. */
#ifndef TPORT_REGISTRY_CONFORMANCE_H
#define TPORT_REGISTRY_CONFORMANCE_H

#include <stdbool.h>

#include "tport/check.h"

/* The outcome, result and counts types are public (tport/check.h). */

/* Runs every numerics case on (api, state) and on the reference; reports
 * each through sink.  The backend must be initialised. */
struct tport_backend_mem;
tport_check_counts tport_conformance_numerics(const tport_backend_api *api, void *state,
                                              const struct tport_backend_mem *mem, tport_check_sink sink, void *user);

/* The device-memory tier (ABI 1.1): upload/download round trips of every
 * type the backend takes, fills, copies, asynchronous completion and
 * graph-key replay; nothing to check for a host-memory backend. */
tport_check_counts tport_conformance_device(const tport_backend_api *api, void *state,
                                            const struct tport_backend_mem *mem, tport_check_sink sink, void *user);

/* Drives `entry` through fake host tables (minor 0 at the 1.0 size, minor
 * 1 with a larger table, major 2).  Each negotiation gets init, a device
 * query, one small compute if claimed, shutdown.  The plug-in is left bound
 * to the real host afterwards (entry is called with it last). */
tport_check_counts tport_conformance_abi(tport_backend_entry_fn entry, tport_check_sink sink, void *user);


#endif
