/* One candidate backend (a plug-in file or the embedded CPU backend) and
 * the steps of bringing it up.  Internal to src/registry. */
#ifndef TPORT_REGISTRY_CANDIDATE_H
#define TPORT_REGISTRY_CANDIDATE_H

#include "registry.h"

typedef struct tport_candidate {
    char *path;                 /* NULL for the embedded backend            */
    char *real;                 /* realpath of path (NULL if unresolvable),
                                   to load a file only once                 */
    const char *origin;
    void *handle;               /* dlopen handle, NULL when embedded        */
    const tport_backend_api *api;
    char name[64];
    char version[64];
    uint32_t abi_major, abi_minor;
    uint64_t required_isa;
    int32_t score;              /* -1 until asked                           */
    tport_candidate_status status;
    bool usable;                /* passed the checks, waiting for selection */
    bool initialised;           /* init succeeded, shutdown still owed      */
    bool fallback;              /* shadowed embedded cpu kept as last resort */
    char reason[256];
    int32_t n_devices;          /* stored in devices[]                      */
    tport_device_info devices[TPORT_REPORT_MAX_DEVICES];
    tport_active_backend active;
    struct iso_proxy *isolate;  /* set while it runs in a helper (src/isolate) */
    bool isolated;              /* loaded (or refused) through a helper      */
} tport_candidate;

/* Loads the file (or takes the embedded entry when path is NULL), calls the
 * entry point, checks the table and the ISA, asks for the score.  Returns
 * c->usable; on refusal c->status is REJECTED with c->reason. */
bool tport_candidate_open(tport_candidate *c, tport_backend_entry_fn embedded);
/* When isolation is requested (TPORT_BACKEND_ISOLATE, tport_backend_isolate),
 * loads plug-in file c in a helper (src/isolate).  True when that settles
 * it: it now runs isolated (c->isolate set, c->usable) or it was rejected
 * (a crash while loading, the plug-in's own refusal, no helper).  False:
 * not to be isolated (its name is not listed); open it in-process. */
bool tport_candidate_open_isolated(tport_candidate *c);
/* init + device query (in the helper when isolated); on failure the
 * candidate is rejected (and shut down). */
bool tport_candidate_start(tport_candidate *c);
/* shutdown (if initialised) and, unless keep_mapped, dlclose. */
void tport_candidate_close(tport_candidate *c, bool keep_mapped);
/* Marks the candidate rejected with a printf-style reason and logs it. */
void tport_candidate_reject(tport_candidate *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *tport_candidate_label(const tport_candidate *c); /* path or "(embedded)" */

/* The probe child reports each step ("dlopen", "entry", "init", ...) before
 * it runs it, so a crash can be attributed; NULL turns reporting off. */
void tport_candidate_set_stage_hook(void (*hook)(const char *stage));

/* Runs open + start + close in a forked child.  Returns false (and writes
 * "crashed in probe during <step>: SIGILL" or similar) if the child died;
 * true when it came back, whatever it found. */
bool tport_probe_file(const char *path, char *reason, size_t cap);

#endif
