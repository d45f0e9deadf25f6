/* The blas backend: the plug-in table, instance lifetime and device info.
 * It takes only MUL_MAT (see blas_supports.c) and only for batches large
 * enough that OpenBLAS beats the CPU backend's kernels, so a prompt's
 * matrix products run here and single-token generation stays on the CPU:
 * the choice is made per operation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "blas_internal.h"

#define BLAS_BACKEND_VERSION "1.0.0"

const tport_host_api *blas_host;

/* Environment variable `name` if set to a whole number in [1, 2^40], else
 * `fallback`. */
static int64_t count_from_env(const char *name, int64_t fallback) {
    const char *v = getenv(name);
    if (!v || !*v)
        return fallback;
    char *end = NULL;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end || n < 1 || n > ((long long)1 << 40)) {
        blas_host->log(TPORT_LOG_WARN, "blas: ignoring %s='%s' (want a whole number >= 1)", name, v);
        return fallback;
    }
    return n;
}

/* Whether F32 is better left to the CPU backend: on an x86 CPU with
 * AVX-512F it is.  Where OpenBLAS runs older kernels (Debian 12's 0.3.21
 * runs Zen 4 and Zen 5 as "Haswell") the CPU backend's AVX-512 GEMM is
 * far faster (RESULTS run 14).  With its AVX-512 kernels ("SkylakeX" on
 * a Xeon) the two were even on prompts, and a weight whose batches run
 * here stays in the file's pages, where the CPU backend would keep it in
 * huge pages, which generation reads faster (RESULTS run 30). */
static bool f32_better_on_cpu(void) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
#else
    return false;
#endif
}

static tport_status blas_init(void **backend) {
    if (!backend)
        return blas_host->error(TPORT_STATUS_INVALID_ARGUMENT, "blas: init without a result pointer");
    blas_state *s = calloc(1, sizeof *s);
    if (!s)
        return blas_host->error(TPORT_STATUS_OUT_OF_MEMORY, "blas: out of memory");
    s->min_batch = count_from_env("TPORT_BLAS_MIN_BATCH", BLAS_DEFAULT_MIN_BATCH);
    s->scratch_max = count_from_env("TPORT_BLAS_SCRATCH_FLOATS", BLAS_SCRATCH_MAX_FLOATS);
    /* Converting F16 weights for sgemm costs more than the CPU backend's
     * own F16 GEMM (cpu_mul_mat_dense.c) saves, so F16 is opt-in. */
    const char *f16 = getenv("TPORT_BLAS_F16"), *f32 = getenv("TPORT_BLAS_F32");
    s->take_f16 = f16 && strcmp(f16, "1") == 0;
    const char *core = openblas_get_corename();
    const bool forced = f32 && (!strcmp(f32, "0") || !strcmp(f32, "1"));
    if (f32 && !forced)
        blas_host->log(TPORT_LOG_WARN, "blas: ignoring TPORT_BLAS_F32='%s' (want 0 or 1)", f32);
    s->take_f32 = forced ? f32[0] == '1' : !f32_better_on_cpu();
    blas_host->log(TPORT_LOG_DEBUG,
                   "blas: OpenBLAS core %s; mul_mat of weights f32 %s, f16 %s, for batches >= %lld (f16 scratch <= "
                   "%lld floats)",
                   core ? core : "(unknown)", s->take_f32 ? "yes" : "no", s->take_f16 ? "yes" : "no",
                   (long long)s->min_batch, (long long)s->scratch_max);
    if (!s->take_f32 && !forced)
        blas_host->log(TPORT_LOG_INFO,
                       "blas: OpenBLAS runs its %s kernels on a CPU with AVX-512; F32 mul_mats stay on the CPU "
                       "backend, whose AVX-512 GEMM is as fast or faster (TPORT_BLAS_F32=1 takes them)",
                       core ? core : "(unknown)");
    *backend = s;
    return TPORT_STATUS_OK;
}

static void blas_shutdown(void *backend) {
    blas_state *s = backend;
    if (!s)
        return;
    blas_host->log(TPORT_LOG_DEBUG, "blas: computed %lld nodes", (long long)s->nodes_computed);
    free(s->scratch);
    free(s);
}

static int32_t blas_device_count(void *backend) {
    (void)backend;
    return 1;
}

static tport_status blas_device_info(void *backend, int32_t device, tport_device_info *out) {
    const blas_state *s = backend;
    if (device != 0)
        return blas_host->error(TPORT_STATUS_INVALID_ARGUMENT, "blas: no device %d", (int)device);
    if (!out || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return blas_host->error(TPORT_STATUS_INVALID_ARGUMENT, "blas: device_info struct too small");
    out->kind = TPORT_DEVICE_CPU;
    snprintf(out->name, sizeof out->name, "openblas0");
    const char *config = openblas_get_config();
    snprintf(out->description, sizeof out->description, "%s%s", config ? config : "OpenBLAS (unknown build)",
             s && !s->take_f32 ? "; F32 left to cpu (TPORT_BLAS_F32=1)" : "");
    out->memory_total = 0; /* host memory */
    out->memory_free = 0;
    return TPORT_STATUS_OK;
}

static bool blas_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    if (!backend || device != 0 || !g || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_0)
        return false;
    return blas_supports_mul_mat(backend, g, node);
}

static tport_status blas_compute(void *backend, int32_t device, const tport_graph_view *g) {
    blas_state *s = backend;
    if (!s || device != 0 || !g || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_0 || g->n_nodes < 0 ||
        (g->n_nodes > 0 && !g->nodes))
        return blas_host->error(TPORT_STATUS_INVALID_ARGUMENT, "blas: bad compute call");
    openblas_set_num_threads(g->n_threads >= 1 ? g->n_threads : 1);
    for (int32_t n = 0; n < g->n_nodes; n++) {
        int32_t idx = g->nodes[n];
        /* never trust the caller more than supports_op would */
        if (!blas_supports_mul_mat(s, g, idx))
            return blas_host->error(TPORT_STATUS_UNSUPPORTED, "blas: node %d is not a mul_mat it takes",
                                    (int)idx);
        tport_status st = blas_mul_mat(s, g, idx);
        if (st != TPORT_STATUS_OK)
            return st;
        s->nodes_computed++;
    }
    return TPORT_STATUS_OK;
}

static int32_t blas_score(void) {
    /* Above the CPU variants (10..30): the registry orders backends of CPU
     * devices by score, and for the large-batch mul_mats we claim we are the
     * better choice; everything we decline still goes to cpu. */
    return 100;
}

static tport_backend_api table = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "blas",
    .version = BLAS_BACKEND_VERSION,
    .required_isa = 0, /* OpenBLAS picks its kernels at run time */
    .score = blas_score,
    .init = blas_init,
    .shutdown = blas_shutdown,
    .device_count = blas_device_count,
    .device_info = blas_device_info,
    .supports_op = blas_supports_op,
    .compute = blas_compute,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h) {
    if (!h)
        return NULL;
    if (h->abi_major != TPORT_ABI_MAJOR) {
        /* another major: touch nothing else of *h; the host refuses us */
        table.abi_minor = TPORT_ABI_MINOR;
        return &table;
    }
    if (h->struct_size < TPORT_HOST_API_SIZE_1_0)
        return NULL;
    blas_host = h;
    const uint32_t mine = TPORT_ABI_MINOR; /* the highest minor both sides know */
    table.abi_minor = h->abi_minor < mine ? h->abi_minor : mine;
    return &table;
}
