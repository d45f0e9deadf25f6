/*
 * tport/registry.h — the backend registry, seen from a program: which
 * plug-in files were found, what became of each (active, shadowed,
 * rejected, and why), what the CPU offers, and when backends start and
 * stop.  `tport backends` is its client.
 *
 * Discovery order: the embedded CPU backend; files given to
 * tport_backend_load(); every entry of TPORT_BACKEND_PATH; the backends
 * folder installed beside libtport.  Every file found is a "candidate".
 * The active backends themselves are listed by tport_backend_count() and
 * tport_backend_name() (tport.h).
 */
#ifndef TPORT_REGISTRY_PUBLIC_H
#define TPORT_REGISTRY_PUBLIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/backend.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* Discovers and initialises backends once; later calls are cheap.
 * Thread-safe.  Never fails for a bad plug-in (it is skipped). */
void tport_registry_init(void);
/* Shuts every initialised backend down, then unloads the libraries
 * (TPORT_NO_UNLOAD=1 keeps them mapped, for sanitizer stack traces).
 * Explicit, never from atexit.  A later tport_registry_init() discovers
 * everything again (the environment is read again). */
void tport_registry_shutdown(void);
/* With probing on, every plug-in file is first loaded in a forked child
 * (entry, init, device query); a file whose probe crashes is rejected with
 * the signal's name and never loaded in this process.  Takes effect at the
 * next discovery; TPORT_BACKEND_PROBE=1 turns it on too. */
void tport_registry_set_probe(bool on);
/* ---- the report: every candidate and what became of it ------------------ */
typedef enum tport_candidate_status {
    TPORT_CANDIDATE_ACTIVE = 0,
    TPORT_CANDIDATE_SHADOWED = 1, /* same name as a better-scoring one   */
    TPORT_CANDIDATE_REJECTED = 2, /* reason says why                      */
} tport_candidate_status;

#define TPORT_REPORT_MAX_DEVICES 16

typedef struct tport_candidate_report {
    const char *path;        /* file, or "(embedded)"                       */
    const char *origin;      /* "embedded", "api", "TPORT_BACKEND_PATH", "installed" */
    const char *name;        /* "" when the entry point was never reached   */
    const char *version;
    uint32_t abi_major;      /* what the plug-in declared (0 = unknown)     */
    uint32_t abi_minor;      /* negotiated minor                            */
    uint64_t required_isa;
    int32_t score;           /* -1 = not asked                              */
    tport_candidate_status status;
    const char *reason;      /* why rejected or shadowed; "" when active    */
    int32_t n_devices;       /* devices stored: min(count, MAX_DEVICES)     */
    const tport_device_info *devices;
    bool fallback;           /* shadowed, yet kept as the last-resort backend */
    bool isolated;           /* runs (or was refused) in a helper process  */
} tport_candidate_report;

int tport_registry_candidate_count(void);
/* Fills *out for candidate i (in discovery order); false if out of range.
 * Strings stay valid until tport_registry_shutdown(). */
bool tport_registry_candidate(int i, tport_candidate_report *out);
const char *tport_candidate_status_name(tport_candidate_status s);

/* ---- ISA checks --------------------------------------------------------- */
/* TPORT_ISA_* bits this CPU has and the OS has enabled (XCR0 for AVX and
 * AVX-512 state), minus those named in TPORT_ISA_DISABLE ("avx512f,avx2"). */
uint64_t tport_isa_host(void);
/* Writes the names of the bits in `isa` ("avx2 fma ...") into buf. */
void tport_isa_names(uint64_t isa, char *buf, size_t cap);

/* The folder of installed plug-ins (beside libtport), or "" if unknown. */
void tport_installed_backend_dir(char *buf, unsigned cap);

/* ---- active backends ------------------------------------------------------ */
/* Whether active backend i runs in a helper process (tport_backend_isolate),
 * and whether it is the embedded CPU kept as the last resort behind a "cpu"
 * plug-in that declines basic ops. */
bool tport_backend_is_isolated(int i);
bool tport_backend_is_fallback(int i);
/* Asks active backend i whether any of its devices runs node `node` of
 * `graph` (its supports_op): what a program uses to see which types and
 * shapes a backend takes.  False for an index out of range. */
bool tport_backend_supports(int i, const tport_graph_view *graph, int32_t node);

/* ---- the helper process of isolated backends ------------------------------ */
/* The whole of tport-backend-host, the process that runs one isolated
 * plug-in for a host (tport_backend_isolate): its main() calls this with
 * its arguments.  Started by the library with --socket=FD; returns the
 * process's exit status, or exits on a broken channel. */
int tport_backend_host_main(int argc, char **argv);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TPORT_REGISTRY_PUBLIC_H */
