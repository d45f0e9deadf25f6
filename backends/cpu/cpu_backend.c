/* The CPU backend's entry point and tables.  The same file builds the copy
 * linked into libtport (TPORT_CPU_EMBEDDED) and the plug-in variants that
 * export tport_backend_entry; a variant compiled with -mavx2 etc. declares
 * the instruction sets it needs, derived from the compiler's macros. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_internal.h"

const tport_host_api *cpu_host;

typedef struct cpu_state {
    cpu_pool *pool;
    cpu_graph *graph; /* the nodes and scratch of compute, reused between calls */
} cpu_state;

#define REQUIRED_ISA_SSE42 0
#if defined(__SSE4_2__)
#undef REQUIRED_ISA_SSE42
#define REQUIRED_ISA_SSE42 TPORT_ISA_SSE42
#endif

static uint64_t required_isa(void) {
    uint64_t isa = REQUIRED_ISA_SSE42;
#if defined(__AVX__)
    isa |= TPORT_ISA_AVX;
#endif
#if defined(__AVX2__)
    isa |= TPORT_ISA_AVX2;
#endif
#if defined(__FMA__)
    isa |= TPORT_ISA_FMA;
#endif
#if defined(__F16C__)
    isa |= TPORT_ISA_F16C;
#endif
#if defined(__AVX512F__)
    isa |= TPORT_ISA_AVX512F;
#endif
#if defined(__AVX512BW__)
    isa |= TPORT_ISA_AVX512BW;
#endif
#if defined(__AVX512VL__)
    isa |= TPORT_ISA_AVX512VL;
#endif
#if defined(__AVX512DQ__)
    isa |= TPORT_ISA_AVX512DQ;
#endif
#if defined(__AVX512VNNI__)
    isa |= TPORT_ISA_AVX512VNNI;
#endif
#if defined(__AVX512BF16__)
    isa |= TPORT_ISA_AVX512BF16;
#endif
#if defined(__ARM_NEON)
    isa |= TPORT_ISA_NEON;
#endif
    return isa;
}

static int32_t cpu_score(void) {
#if defined(__AVX512F__)
    return 30;
#elif defined(__AVX2__)
    return 20;
#else
    return 10;
#endif
}

void cpu_op_fail(cpu_op *op, tport_status code, const char *fmt, ...) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&op->status, &expected, (int)code))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(op->message, sizeof op->message, fmt, ap);
    va_end(ap);
}

static tport_status cpu_init(void **backend) {
    cpu_state *s = calloc(1, sizeof *s);
    if (!s)
        return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: out of memory");
    s->pool = cpu_pool_new();
    s->graph = cpu_graph_new();
    if (!s->pool || !s->graph) {
        cpu_pool_free(s->pool);
        cpu_graph_free(s->graph);
        free(s);
        return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: cannot create the thread pool");
    }
    cpu_types_init();
    cpu_repack_init();
    cpu_prefetch_init();
    cpu_dense_init();
#if CPU_AMX
    cpu_amx_q8_init();
#endif
    *backend = s;
    return TPORT_STATUS_OK;
}

static void cpu_shutdown(void *backend) {
    cpu_state *s = backend;
    if (!s)
        return;
    cpu_pool_free(s->pool);
    cpu_graph_free(s->graph);
    free(s);
}

static int32_t cpu_device_count(void *backend) {
    (void)backend;
    return 1;
}

long cpu_core_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* "model name : ..." from /proc/cpuinfo, or "" */
static void cpu_model_name(char *out, size_t cap) {
    out[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10))
            continue;
        const char *colon = strchr(line, ':');
        if (!colon)
            continue;
        colon++;
        while (*colon == ' ' || *colon == '\t')
            colon++;
        snprintf(out, cap, "%s", colon);
        out[strcspn(out, "\n")] = '\0';
        break;
    }
    fclose(f);
}

static tport_status cpu_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
    if (device != 0)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: no device %d", (int)device);
    if (!out || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: device_info struct too small");
    tport_device_info info = {0};
    info.kind = TPORT_DEVICE_CPU;
    info.caps = TPORT_DEVICE_CAP_ASYNC; /* tensor_write may defer re-encoding (cpu_repack.c) */
    snprintf(info.name, sizeof info.name, "cpu");
    char model[96];
    cpu_model_name(model, sizeof model);
    if (model[0])
        snprintf(info.description, sizeof info.description, "%ld cores, %s", cpu_core_count(), model);
    else
        snprintf(info.description, sizeof info.description, "%ld cores", cpu_core_count());
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        info.memory_total = (uint64_t)pages * (uint64_t)page;
    if (avail > 0 && page > 0)
        info.memory_free = (uint64_t)avail * (uint64_t)page;
    /* write only what the host's struct has room for */
    uint32_t size = out->struct_size < sizeof info ? out->struct_size : (uint32_t)sizeof info;
    info.struct_size = out->struct_size;
    memcpy(out, &info, size);
    return TPORT_STATUS_OK;
}

static bool cpu_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)backend;
    if (device != 0 || !g || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_0 || !g->tensors)
        return false;
    return cpu_supports(g, node);
}

static tport_status cpu_compute(void *backend, int32_t device, const tport_graph_view *g) {
    cpu_state *s = backend;
    if (!s || device != 0 || !g || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_0 || (g->n_nodes && !g->nodes))
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: bad compute arguments");
    return cpu_graph_compute(s->graph, s->pool, g);
}

static tport_backend_api cpu_api = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "cpu",
    .version = "0.1.0",
    .score = cpu_score,
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .device_count = cpu_device_count,
    .device_info = cpu_device_info,
    .supports_op = cpu_supports_op,
    .compute = cpu_compute,
    /* 1.1: no device memory, but weights may be kept re-encoded (cpu_repack.c) */
    .buffer_alloc = cpu_buffer_alloc,
    .buffer_free = cpu_buffer_free,
    .tensor_alloc_size = cpu_tensor_alloc_size,
    .tensor_write = cpu_tensor_write,
    .wait = cpu_wait,
};

#ifdef TPORT_CPU_EMBEDDED
const tport_backend_api *tport_cpu_embedded_entry(const tport_host_api *h);
const tport_backend_api *tport_cpu_embedded_entry(const tport_host_api *h)
#else
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h)
#endif
{
    if (!h || h->struct_size < TPORT_HOST_API_SIZE_1_0)
        return NULL;
    if (h->abi_major != TPORT_ABI_MAJOR) {
        if (h->error)
            h->error(TPORT_STATUS_VERSION_MISMATCH, "cpu backend speaks ABI %d.%d, host %u.%u", TPORT_ABI_MAJOR,
                     TPORT_ABI_MINOR, h->abi_major, h->abi_minor);
        return NULL;
    }
    cpu_host = h;
    uint32_t mine = TPORT_ABI_MINOR;
    cpu_api.abi_minor = h->abi_minor < mine ? h->abi_minor : mine;
    cpu_api.required_isa = required_isa();
    return &cpu_api;
}
