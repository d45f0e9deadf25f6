/* The ggml bridge: a tensorport plug-in that loads ggml's own backend
 * libraries (libggml-base.so and libggml-<name>.so of a GGML_BACKEND_DL
 * build) at run time and offers their devices.  Every ggml function is
 * reached through a pointer resolved with dlsym (gf below), typed from the
 * ggml headers the bridge was built against, so the plug-in loads (and says
 * why it cannot run) on a machine without ggml, and never links it. */
#ifndef TPORT_GGML_INTERNAL_H
#define TPORT_GGML_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <tport/backend.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml.h"

/* Every ggml function the bridge calls, from libggml-base.so. */
#define TG_FUNCS(X)                                                                                                  \
    X(ggml_version) X(ggml_commit) X(ggml_abort) X(ggml_log_set) X(ggml_init) X(ggml_free) X(ggml_new_tensor)                   \
    X(ggml_new_graph_custom) X(ggml_build_forward_expand) X(ggml_blck_size) X(ggml_type_size) X(ggml_nbytes)        \
    X(ggml_is_contiguous) X(ggml_is_transposed) X(ggml_get_rows) X(ggml_add) X(ggml_mul) X(ggml_scale)            \
    X(ggml_mul_mat) X(ggml_mul_mat_set_prec) X(ggml_rms_norm) X(ggml_norm) X(ggml_rope_ext) X(ggml_soft_max_ext)  \
    X(ggml_silu) X(ggml_gelu) X(ggml_gelu_erf) X(ggml_tanh) X(ggml_clamp) X(ggml_swiglu_split) X(ggml_cpy)        \
    X(ggml_cont_4d) X(ggml_concat) X(ggml_flash_attn_ext) X(ggml_flash_attn_ext_set_prec) X(ggml_permute)         \
    X(ggml_cast) X(ggml_backend_reg_name) X(ggml_backend_reg_dev_count) X(ggml_backend_reg_dev_get)               \
    X(ggml_backend_reg_get_proc_address) X(ggml_backend_dev_name) X(ggml_backend_dev_description)                 \
    X(ggml_backend_dev_memory) X(ggml_backend_dev_type) X(ggml_backend_dev_init) X(ggml_backend_dev_buffer_type)  \
    X(ggml_backend_dev_supports_op) X(ggml_backend_free) X(ggml_backend_buft_alloc_buffer)                        \
    X(ggml_backend_buft_get_alignment) X(ggml_backend_buft_get_max_size) X(ggml_backend_buffer_free)             \
    X(ggml_backend_buffer_get_base) X(ggml_backend_buffer_get_size) X(ggml_backend_buffer_set_usage)              \
    X(ggml_backend_tensor_set) X(ggml_backend_tensor_get) X(ggml_backend_tensor_memset)                           \
    X(ggml_backend_tensor_copy) X(ggml_backend_tensor_alloc) X(ggml_backend_graph_compute)                        \
    X(ggml_backend_synchronize) X(ggml_gallocr_new) X(ggml_gallocr_free) X(ggml_gallocr_alloc_graph) X(ggml_tensor_overhead) X(ggml_graph_overhead_custom)   \
    X(ggml_backend_dev_backend_reg) X(ggml_backend_buft_get_alloc_size) X(ggml_get_first_tensor) X(ggml_get_next_tensor) X(ggml_backend_dev_get_props) X(ggml_backend_graph_compute_async) \
   

typedef struct tg_funcs {
#define TG_FIELD(f) __typeof__(f) *f;
    TG_FUNCS(TG_FIELD)
#undef TG_FIELD
} tg_funcs;

extern tg_funcs gf;
extern const tport_host_api *tg_host;
extern uint32_t tg_minor; /* the negotiated ABI minor */

/* ---- the loaded ggml (tg_load.c): process-wide, counted ---------------- */
#define TG_MAX_DEVS 16
typedef struct tg_dev {
    ggml_backend_dev_t dev;
    ggml_backend_t backend;     /* made at init */
    ggml_backend_buffer_type_t buft;
    char name[64];              /* ggml's: "CPU", "Vulkan0"          */
    char description[128];
    int32_t kind;               /* TPORT_DEVICE_*                    */
    bool host_memory;           /* ABI 1.0: a ggml CPU device on host memory */
    void (*set_n_threads)(ggml_backend_t, int);
    int n_threads;              /* last set (CPU devices)            */
    struct tg_cache *cache;     /* translated graphs (tg_graph.c)    */
    /* asynchronous compute (ggml's caps.async): tickets count the async
     * computes issued; one device runs its work in order, so waiting for
     * the backend covers every ticket */
    bool async;
    uint64_t issued, done;
    uint64_t async_waits; /* the first is logged (TPORT_LOG=debug) */
    bool f16_products;    /* f32 products on f16 operands (ABI 1.5 cap) */
    bool retire_buffers;  /* lavapipe: never destroy a buffer (tg_retire) */
} tg_dev;

/* Loads libggml-base.so and the backend libraries named by TPORT_GGML_PATH
 * (once per process; counted), checks their versions and fills gf.  On
 * failure returns the status with host->error's one line. */
tport_status tg_load(void);
void tg_unload(void);
/* The ggml devices, in the order offered (TPORT_GGML_DEVICES, else
 * accelerators first; cpu_only: ggml's CPU devices, for a 1.0 host). */
int tg_device_list(ggml_backend_dev_t *out, int cap, bool cpu_only);
const char *tg_loaded_version(void); /* "0.23.0 (commit)" */
/* Mesa's lavapipe (22.3) keeps pointers to the buffers of earlier
 * dispatches in its queue's binding state without holding them: once
 * such a VkBuffer is destroyed, a later dispatch that rebinds the slot
 * drops a reference on freed memory (a SIGSEGV in its queue thread, or
 * glibc finding the heap corrupt).  So on a software Vulkan device a
 * freed buffer is retired instead, for the process (ggml's device lives
 * as long), and reused for a later allocation it can hold. */
void tg_retire(ggml_backend_buffer_type_t buft, ggml_backend_buffer_t buf);
ggml_backend_buffer_t tg_reuse(ggml_backend_buffer_type_t buft, size_t size); /* NULL: none fits */

/* ---- the backend instance (tg_backend.c) ------------------------------- */
typedef struct tg_buf {
    ggml_backend_buffer_t buf;
    int32_t device;
    uint64_t size;
    char *base; /* ggml_backend_buffer_get_base */
} tg_buf;

typedef struct tg_backend {
    tg_dev devs[TG_MAX_DEVS];
    int n_dev;
    tg_buf *bufs;    /* handle h is bufs[h - 1]; buf NULL = free slot */
    uint32_t n_bufs, cap_bufs;
} tg_backend;

tg_buf *tg_buf_get(tg_backend *be, tport_buffer h);

/* ---- translation (tg_translate.c) -------------------------------------- */
/* The ggml type of a tensorport type, or -1 (ids agree where ggml has
 * the type and its block layout is the one the host describes). */
int tg_type(tport_type_id type);
/* Named in TPORT_GGML_SKIP_OPS ("rope,soft_max", or "mul_mat:iq1_s" for the
 * op on one type of its first operand): left to other backends. */
bool tg_op_skipped(tport_op_id op, tport_type_id src0_type);

#define TG_MAX_EXTRA 4
typedef struct tg_build {
    struct ggml_context *ctx;
    const tport_graph_view *g;
    struct ggml_tensor **t; /* per tport tensor index, NULL until made */
    tg_backend *be;         /* NULL: shapes only (supports_op) */
    /* per tport tensor: the ggml tensor placed at its (buffer, offset)
     * (a node's result, or the destination a copy writes through), or
     * NULL; may itself be NULL */
    struct ggml_tensor **placed;
    int32_t device;
    bool ggml_cpu;          /* a device of ggml's CPU backend */
    /* supports_op: the helper nodes a node needs (the f16 mask of
     * flash attention), asked about too */
    struct ggml_tensor *extra[TG_MAX_EXTRA];
    int n_extra;
} tg_build;

/* Makes (once) the ggml tensor of tport tensor i: a leaf, or the node's
 * op over its sources.  With be set, places tport-owned tensors in their
 * buffers.  NULL (and host->error) when the node cannot be expressed. */
struct ggml_tensor *tg_tensor(tg_build *b, int32_t i);
/* A tensor view the host gave, checked (NULL if malformed). */
const tport_tensor_view *tg_view(const tport_graph_view *g, int32_t i);

/* ---- graphs (tg_graph.c) ------------------------------------------------ */
bool tg_supports(tg_backend *be, int32_t device, const tport_graph_view *g, int32_t node);
/* async: may return before the work is done (the caller issues the
 * ticket; tg_settle waits); else done on return. */
tport_status tg_compute(tg_backend *be, int32_t device, const tport_graph_view *g, bool async);
/* Waits for every async compute of d issued so far: before anything that
 * reads or changes what it may still use (memory, kept graphs). */
void tg_settle(tg_dev *d);
void tg_forget(tg_dev *d, uint64_t key);
/* Buffer h is being freed: the kept graphs placed in it are re-bound
 * before their next use (never computed into the freed memory). */
void tg_unbind(tg_dev *d, tport_buffer h);

#endif
