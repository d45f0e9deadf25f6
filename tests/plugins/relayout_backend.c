/* A host-memory backend that keeps weights in a layout of its own (ABI 1.1
 * without device memory, the way the CPU backend repacks): F32 mul_mat
 * only, with each weight stored transposed at upload.  Built only against
 * tport/backend.h.
 *
 * tensor_alloc_size says which weights it wants (2-D F32 ones) and how
 * big; tensor_write re-encodes; compute recognises its own copy by the
 * record's buffer handle and reads the plain layout for everything else.
 * relayout_counters() lets the test see that the copies were used. */
#include <stdlib.h>
#include <string.h>

#include "tport/backend.h"

typedef struct relayout_counters {
    unsigned long long uploads, own_reads, plain_reads;
} relayout_counters;
static relayout_counters counters;
TPORT_BACKEND_EXPORT const relayout_counters *relayout_counters_get(void);
const relayout_counters *relayout_counters_get(void) { return &counters; }

static const tport_host_api *host;

#define MAX_BUFFERS 1024
typedef struct relayout {
    float *bufs[MAX_BUFFERS];
} relayout;

static int32_t relayout_score(void) { return 400; }

static tport_status relayout_init(void **state) {
    *state = calloc(1, sizeof(relayout));
    return *state ? TPORT_STATUS_OK : host->error(TPORT_STATUS_OUT_OF_MEMORY, "relayout: out of memory");
}

static void relayout_shutdown(void *state) {
    relayout *r = state;
    for (int i = 0; i < MAX_BUFFERS; i++)
        free(r->bufs[i]);
    free(r);
}

static int32_t relayout_device_count(void *state) {
    (void)state;
    return 1;
}

static tport_status relayout_device_info(void *state, int32_t device, tport_device_info *out) {
    (void)state;
    if (device != 0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "relayout: no device %d", (int)device);
    out->kind = TPORT_DEVICE_CPU;
    strcpy(out->name, "relayout0");
    strcpy(out->description, "test: host memory, weights kept transposed");
    return TPORT_STATUS_OK; /* caps stay 0: host memory */
}

static bool dense_f32(const tport_tensor_view *t) {
    return t && t->type == TPORT_TYPE_F32 && t->nb[0] == 4 && t->nb[1] == 4 * (uint64_t)t->ne[0] &&
           t->ne[2] == 1 && t->ne[3] == 1;
}

static bool relayout_supports_op(void *state, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)state;
    const tport_tensor_view *t = g->tensors[node];
    if (device != 0 || t->op != TPORT_OP_MUL_MAT || t->src[0] < 0 || t->src[1] < 0)
        return false;
    const tport_tensor_view *a = g->tensors[t->src[0]], *b = g->tensors[t->src[1]];
    return (a->flags & TPORT_TENSOR_WEIGHT) && dense_f32(a) && dense_f32(b) && dense_f32(t);
}

static tport_status relayout_buffer_alloc(void *state, int32_t device, uint32_t kind, uint32_t usage, uint64_t size,
                                          tport_buffer *out, void **host_ptr) {
    relayout *r = state;
    (void)usage;
    if (device != 0 || kind != TPORT_MEM_DEVICE)
        return host->error(TPORT_STATUS_UNSUPPORTED, "relayout: one kind of memory");
    for (int i = 0; i < MAX_BUFFERS; i++)
        if (!r->bufs[i]) {
            r->bufs[i] = malloc(size);
            if (!r->bufs[i])
                return host->error(TPORT_STATUS_OUT_OF_MEMORY, "relayout: out of memory");
            *out = (tport_buffer)(i + 1) << 8;
            *host_ptr = r->bufs[i]; /* host memory: the host may address it */
            return TPORT_STATUS_OK;
        }
    return host->error(TPORT_STATUS_OUT_OF_MEMORY, "relayout: too many buffers");
}

static float *own(relayout *r, tport_buffer b) {
    uint64_t i = (b >> 8) - 1;
    return b && !(b & 0xff) && i < MAX_BUFFERS ? r->bufs[i] : NULL;
}

static void relayout_buffer_free(void *state, tport_buffer b) {
    relayout *r = state;
    float *p = own(r, b);
    if (p) {
        free(p);
        r->bufs[(b >> 8) - 1] = NULL;
    }
}

static uint64_t relayout_alloc_size(void *state, int32_t device, const tport_tensor_view *t) {
    (void)state;
    (void)device;
    return dense_f32(t) && t->ne[1] > 1 ? (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * 4 : 0;
}

/* The weight [K, M] (rows of K) stored as [M, K] transposed: column-major. */
static tport_status relayout_tensor_write(void *state, tport_buffer b, uint64_t offset, const tport_tensor_view *t,
                                          const void *src, uint64_t size, tport_ticket *ticket) {
    float *dst = own(state, b);
    if (ticket)
        *ticket = 0;
    if (!dst || offset || !dense_f32(t) || size != (uint64_t)t->ne[0] * (uint64_t)t->ne[1] * 4)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "relayout: unexpected upload");
    const float *s = src;
    int64_t K = t->ne[0], M = t->ne[1];
    for (int64_t m = 0; m < M; m++)
        for (int64_t k = 0; k < K; k++)
            dst[k * M + m] = s[m * K + k];
    counters.uploads++;
    return TPORT_STATUS_OK;
}

static tport_status relayout_compute(void *state, int32_t device, const tport_graph_view *g) {
    relayout *r = state;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        const tport_tensor_view *t = g->tensors[g->nodes[n]];
        if (!relayout_supports_op(state, device, g, g->nodes[n]))
            return host->error(TPORT_STATUS_UNSUPPORTED, "relayout: node not supported");
        const tport_tensor_view *a = g->tensors[t->src[0]], *b = g->tensors[t->src[1]];
        int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
        const float *w = own(r, a->buffer), *x = b->data;
        float *y = t->data;
        if (w && a->data != (const void *)w)
            return host->error(TPORT_STATUS_INVALID_ARGUMENT, "relayout: own copy at another address");
        if (w)
            counters.own_reads++;
        else
            counters.plain_reads++;
        const float *plain = a->data;
        for (int64_t j = 0; j < N; j++)
            for (int64_t m = 0; m < M; m++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += (double)(w ? w[k * M + m] : plain[m * K + k]) * x[j * K + k];
                y[j * M + m] = (float)s;
            }
    }
    return TPORT_STATUS_OK;
}

static tport_backend_api table = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "relayout",
    .version = "test",
    .score = relayout_score,
    .init = relayout_init,
    .shutdown = relayout_shutdown,
    .device_count = relayout_device_count,
    .device_info = relayout_device_info,
    .supports_op = relayout_supports_op,
    .compute = relayout_compute,
    .buffer_alloc = relayout_buffer_alloc,
    .buffer_free = relayout_buffer_free,
    .tensor_alloc_size = relayout_alloc_size,
    .tensor_write = relayout_tensor_write,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h) {
    host = h;
    table.abi_minor = h->abi_minor < TPORT_ABI_MINOR ? h->abi_minor : TPORT_ABI_MINOR;
    return &table;
}
