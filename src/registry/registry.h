/* The backend registry: discovers, loads, version-checks, scores and
 * initialises backends, and keeps them in preference order.
 *
 * Discovery order: the embedded CPU backend; files given to
 * tport_backend_load(); every entry of TPORT_BACKEND_PATH; the backends
 * folder installed beside libtport.  Every file found is a "candidate"; the
 * registry keeps a report of all of them (active, shadowed or rejected, and
 * why) for `tport backends`. */
#ifndef TPORT_REGISTRY_H
#define TPORT_REGISTRY_H

#include <stdbool.h>

#include "tport/backend.h"

/* The ABI 1.1 device-memory slots of one backend, NULL where the plug-in
 * left them out, did not negotiate 1.1, or wrote a table too small to
 * hold them.  The host reads slots only through this copy. */
typedef struct tport_backend_mem {
    tport_status (*buffer_alloc)(void *, int32_t, uint32_t, uint32_t, uint64_t, tport_buffer *, void **);
    void (*buffer_free)(void *, tport_buffer);
    uint64_t (*tensor_alloc_size)(void *, int32_t, const tport_tensor_view *);
    tport_status (*tensor_write)(void *, tport_buffer, uint64_t, const tport_tensor_view *, const void *, uint64_t,
                                 tport_ticket *);
    tport_status (*tensor_read)(void *, tport_buffer, uint64_t, const tport_tensor_view *, void *, uint64_t,
                                tport_ticket *);
    tport_status (*buffer_fill)(void *, tport_buffer, uint64_t, uint64_t, uint8_t, tport_ticket *);
    tport_status (*buffer_copy)(void *, tport_buffer, uint64_t, tport_buffer, uint64_t, uint64_t, tport_ticket *);
    tport_status (*import_host)(void *, int32_t, void *, uint64_t, tport_buffer *);
    tport_status (*compute_async)(void *, int32_t, const tport_graph_view *, tport_ticket *);
    tport_status (*wait)(void *, int32_t, tport_ticket, uint64_t);
    void (*forget_graph)(void *, int32_t, uint64_t);
    uint64_t caps;          /* device 0's TPORT_DEVICE_CAP_* (0 before 1.1) */
    uint64_t alignment;     /* device 0's offset alignment (>= 64)          */
    uint64_t max_buffer;    /* device 0's largest buffer (0 = no limit)     */
    bool device_memory;     /* tensors of its device 0 live in its buffers  */
    bool own_layout;        /* a host-memory backend that re-encodes weights */
} tport_backend_mem;

/* An initialised backend the scheduler may use. */
typedef struct tport_active_backend {
    const char *name;
    const tport_backend_api *api;
    void *state;            /* what api->init returned                   */
    uint32_t abi_minor;     /* negotiated minor                          */
    int32_t score;
    int32_t n_devices;
    const char *path;       /* plug-in file, or NULL when linked in      */
    bool fallback;          /* the embedded cpu kept behind a "cpu" plug-in
                               that declines basic ops (always listed last) */
    tport_backend_mem mem;  /* ABI 1.1 device memory; all NULL for 1.0      */
} tport_active_backend;

/* The ABI minor that defined op (UINT32_MAX: none of this host's), and
 * whether backend b negotiated a minor that has it (op_minor.c): the host
 * asks a plug-in only about ops of its minor. */
uint32_t tport_op_since_minor(tport_op_id op);
bool tport_backend_knows_op(const tport_active_backend *b, tport_op_id op);

/* Fills a->mem from the backend's table and device 0's info, reading no
 * slot the negotiated minor or the table's struct_size leaves out. */
void tport_backend_mem_resolve(tport_active_backend *a, const tport_device_info *dev0);

/* Discovers and initialises backends once; later calls are cheap.
 * Thread-safe.  Never fails for a bad plug-in (it is skipped). */
void tport_registry_init(void);
/* Active backends in preference order (TPORT_BACKEND first, then non-CPU
 * backends, then by score). */
int tport_registry_active_count(void);
const tport_active_backend *tport_registry_active(int i);
const tport_active_backend *tport_registry_find(const char *name);

/* Shuts every initialised backend down, then unloads the libraries
 * (TPORT_NO_UNLOAD=1 keeps them mapped, for sanitizer stack traces).
 * Explicit, never from atexit.  A later tport_registry_init() discovers
 * everything again (the environment is read again). */
void tport_registry_shutdown(void);
/* Called first by tport_registry_shutdown (the scheduler frees device
 * buffers there). */
void tport_registry_set_shutdown_hook(void (*hook)(void));

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

/* ---- internals shared by the registry's files ---------------------------- */
/* The services table handed to every plug-in. */
const tport_host_api *tport_host_services(void);

/* The CPU backend linked into libtport (backends/cpu built with
 * TPORT_CPU_EMBEDDED). */
const tport_backend_api *tport_cpu_embedded_entry(const tport_host_api *host);

/* Environment variable, or NULL in set-uid/set-gid processes (AT_SECURE). */
const char *tport_registry_getenv(const char *name);

/* Checks a table an entry point returned against the host's ABI: major,
 * struct_size, required slots, name.  Returns true if usable; otherwise
 * writes a one-line reason.  *minor receives the negotiated minor. */
bool tport_backend_table_check(const tport_backend_api *api, const tport_host_api *host,
                               uint32_t *minor, char *reason, size_t cap);

#endif
