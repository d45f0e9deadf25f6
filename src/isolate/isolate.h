/* Out-of-process plug-ins: a plug-in file is loaded by the helper
 * executable tport-backend-host and driven through a proxy backend, a 1.1
 * device-memory backend whose memory is shared with the helper.  When the
 * helper crashes, exits, hangs past its timeout or sends a malformed
 * reply, the proxy kills and reaps it, says so in one line, and every
 * later call returns TPORT_STATUS_DEVICE_LOST.
 *
 * The one interface of src/isolate.  The registry decides which plug-ins
 * run isolated and with what helper and timeouts (src/registry/
 * isolation.c) and passes that in as data; nothing here knows the
 * registry's candidates. */
#ifndef TPORT_ISOLATE_ISOLATE_H
#define TPORT_ISOLATE_ISOLATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/backend.h"

struct iso_proxy; /* one isolated plug-in: its helper and the proxy's state */

typedef struct tport_isolate_options {
    const char *helper;        /* the helper executable                         */
    const char *keep_env;      /* TPORT_ISOLATE_ENV: more variables the helper
                                  keeps (','-separated; NULL: none)             */
    long long timeout_ms;      /* TPORT_COMPUTE_TIMEOUT: every call ...         */
    long long load_timeout_ms; /* ... but loading and init: TPORT_PROBE_TIMEOUT */
    /* Whether a plug-in that reported this name stays isolated; when not,
     * its helper is ended and tport_isolate_open says DECLINED. */
    bool (*wanted)(const char *name);
} tport_isolate_options;

/* What the helper reported about the plug-in it loaded (version and
 * abi_major also when the plug-in was refused; all empty when the helper
 * never answered). */
typedef struct tport_isolate_loaded {
    char name[64]; /* a plain name (letters, digits, '_', '-', '.') when LOADED */
    char version[64];
    uint32_t abi_major, abi_minor; /* abi_minor as the plug-in said        */
    uint64_t required_isa;
    int32_t score;                 /* as the plug-in said (may be <= 0)    */
    int pid;                       /* the helper's process id              */
} tport_isolate_loaded;

typedef enum tport_isolate_outcome {
    TPORT_ISOLATE_LOADED = 0, /* it runs isolated: *proxy is set              */
    TPORT_ISOLATE_REJECTED,   /* reason says why: no helper process, a crash
                                 while loading, the plug-in's own refusal      */
    TPORT_ISOLATE_DECLINED,   /* options->wanted said no: load it in-process  */
} tport_isolate_outcome;

/* Starts the helper and has it load the plug-in file `path`. */
tport_isolate_outcome tport_isolate_open(const char *path, const tport_isolate_options *o, struct iso_proxy **proxy,
                                         tport_isolate_loaded *out, char *reason, size_t cap);
/* init + device query in the helper.  False with a reason: the caller
 * then ends it with tport_isolate_close. */
bool tport_isolate_start(struct iso_proxy *p, char *reason, size_t cap);
/* Ends the helper (shutdown if it is alive, then kill and reap) and frees p. */
void tport_isolate_close(struct iso_proxy *p);

/* The proxy's table (every isolated plug-in shares it; the state, the
 * struct iso_proxy, tells them apart). */
const tport_backend_api *tport_isolate_proxy_api(void);

#endif
