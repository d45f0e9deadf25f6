/* An out-of-tree tensorport backend: F32 add, mul and mul_mat on contiguous
 * tensors, computed with plain loops on memory of its own.
 *
 * It includes one header, <tport/backend.h>, links nothing of tensorport,
 * and exports one symbol, tport_backend_entry.  Everything it does not
 * claim in supports_op (other ops, other types, strided views) the host
 * runs on another backend.
 *
 * It shows the ABI 1.1 memory model the way an accelerator with its own
 * memory uses it: the host never gets a pointer to the example's memory,
 * only opaque buffer handles; weights are uploaded once (tensor_write) and
 * stay; the host stages activations in and out (tensor_write/tensor_read)
 * where a graph crosses between the example and another backend.  With a
 * 1.0 host it falls back to computing on host pointers. */
#include <stdlib.h>
#include <string.h>

#include <tport/backend.h>

#define EXAMPLE_VERSION "1.0.0"

static const tport_host_api *host;

#define MAX_BUFFERS 1024
/* Handles are the slot number with a tag: never a pointer the host could
 * dereference, and a handle we did not make is recognised as such. */
#define HANDLE_TAG 0x45580000u

static tport_backend_api table;

/* Per-instance state; a real accelerator would keep its device handle,
 * queues and caches here. */
typedef struct example_state {
    int64_t nodes_computed;
    bool device_memory;          /* negotiated 1.1: buffers are ours     */
    void *buffers[MAX_BUFFERS];  /* "device memory" (here: malloc'd)    */
    uint64_t sizes[MAX_BUFFERS];
} example_state;

static tport_status example_init(void **backend) {
    example_state *s = calloc(1, sizeof *s);
    if (!s)
        return host->error(TPORT_STATUS_OUT_OF_MEMORY, "example: out of memory");
    s->device_memory = table.abi_minor >= 1;
    *backend = s;
    return TPORT_STATUS_OK;
}

static void example_shutdown(void *backend) {
    example_state *s = backend;
    if (host && host->log)
        host->log(TPORT_LOG_DEBUG, "example: computed %lld nodes", (long long)s->nodes_computed);
    for (int i = 0; i < MAX_BUFFERS; i++)
        free(s->buffers[i]); /* the host frees its buffers first; this is a safety net */
    free(s);
}

/* ---- memory (ABI 1.1) ------------------------------------------------------ */
static tport_status example_buffer_alloc(void *backend, int32_t device, uint32_t kind, uint32_t usage, uint64_t size,
                                         tport_buffer *out, void **host_ptr) {
    example_state *s = backend;
    (void)usage;
    *host_ptr = NULL; /* the host may not touch our memory */
    if (device != 0 || kind != TPORT_MEM_DEVICE)
        return host->error(TPORT_STATUS_UNSUPPORTED, "example: only device memory");
    for (uint32_t i = 0; i < MAX_BUFFERS; i++)
        if (!s->buffers[i]) {
            s->buffers[i] = malloc(size ? size : 1);
            if (!s->buffers[i])
                return host->error(TPORT_STATUS_OUT_OF_MEMORY, "example: no memory for %llu bytes",
                                   (unsigned long long)size);
            s->sizes[i] = size;
            *out = ((uint64_t)HANDLE_TAG << 32) | (i + 1);
            return TPORT_STATUS_OK;
        }
    return host->error(TPORT_STATUS_OUT_OF_MEMORY, "example: more than %d buffers", MAX_BUFFERS);
}

/* Our address of (buffer, offset) with n bytes behind it, or NULL. */
static unsigned char *resolve(example_state *s, tport_buffer b, uint64_t offset, uint64_t n) {
    uint64_t i = (b & 0xffffffffu) - 1;
    if ((b >> 32) != HANDLE_TAG || i >= MAX_BUFFERS || !s->buffers[i] || offset > s->sizes[i] ||
        n > s->sizes[i] - offset)
        return NULL;
    return (unsigned char *)s->buffers[i] + offset;
}

static void example_buffer_free(void *backend, tport_buffer b) {
    example_state *s = backend;
    uint64_t i = (b & 0xffffffffu) - 1;
    if (resolve(s, b, 0, 0)) {
        free(s->buffers[i]);
        s->buffers[i] = NULL;
    }
}

/* Uploads and downloads are synchronous here (no ticket): a real device
 * would queue a DMA and hand back a ticket the host waits on. */
static tport_status example_tensor_write(void *backend, tport_buffer b, uint64_t offset, const tport_tensor_view *t,
                                         const void *src, uint64_t size, tport_ticket *ticket) {
    (void)t;
    unsigned char *dst = resolve(backend, b, offset, size);
    if (!dst)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "example: write outside a buffer");
    memcpy(dst, src, size);
    if (ticket)
        *ticket = 0;
    return TPORT_STATUS_OK;
}

static tport_status example_tensor_read(void *backend, tport_buffer b, uint64_t offset, const tport_tensor_view *t,
                                        void *dst, uint64_t size, tport_ticket *ticket) {
    (void)t;
    const unsigned char *src = resolve(backend, b, offset, size);
    if (!src)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "example: read outside a buffer");
    memcpy(dst, src, size);
    if (ticket)
        *ticket = 0;
    return TPORT_STATUS_OK;
}

static tport_status example_buffer_fill(void *backend, tport_buffer b, uint64_t offset, uint64_t size, uint8_t value,
                                        tport_ticket *ticket) {
    unsigned char *dst = resolve(backend, b, offset, size);
    if (!dst)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "example: fill outside a buffer");
    memset(dst, value, size);
    if (ticket)
        *ticket = 0;
    return TPORT_STATUS_OK;
}

static int32_t example_device_count(void *backend) {
    (void)backend;
    return 1;
}

static tport_status example_device_info(void *backend, int32_t device, tport_device_info *out) {
    if (device != 0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "example: no device %d", (int)device);
    /* Write only what the host's struct has room for (struct_size). */
    if (out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "example: device_info struct too small");
    out->kind = TPORT_DEVICE_CPU;
    strncpy(out->name, "example0", sizeof out->name - 1);
    strncpy(out->description, "out-of-tree example backend (plain C loops on the host CPU)",
            sizeof out->description - 1);
    out->memory_total = 0; /* unknown */
    out->memory_free = 0;
    example_state *s = backend;
    if (out->struct_size >= TPORT_DEVICE_INFO_SIZE_1_1 && s->device_memory) {
        out->caps = TPORT_DEVICE_CAP_DEVICE_MEMORY;
        out->mem_alignment = 64;
        out->max_buffer_size = 0; /* no limit of its own */
    }
    return TPORT_STATUS_OK;
}

/* ---- what we claim ------------------------------------------------------- */
static const tport_tensor_view *src_of(const tport_graph_view *g, const tport_tensor_view *t, int i) {
    int32_t s = t->src[i];
    return s >= 0 && s < g->n_tensors ? g->tensors[s] : NULL;
}

static bool contiguous_f32(const tport_tensor_view *t) {
    if (!t || t->type != TPORT_TYPE_F32 || t->nb[0] != sizeof(float))
        return false;
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (t->ne[d] < 1)
            return false;
    for (int d = 1; d < TPORT_MAX_DIMS; d++)
        if (t->nb[d] != t->nb[d - 1] * (uint64_t)t->ne[d - 1])
            return false;
    return true;
}

static bool same_shape(const tport_tensor_view *a, const tport_tensor_view *b) {
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (a->ne[d] != b->ne[d])
            return false;
    return true;
}

/* b repeats to fill a: every dimension of b divides a's. */
static bool broadcasts_to(const tport_tensor_view *b, const tport_tensor_view *a) {
    for (int d = 0; d < TPORT_MAX_DIMS; d++)
        if (a->ne[d] % b->ne[d])
            return false;
    return true;
}

static bool example_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)backend;
    if (device != 0 || node < 0 || node >= g->n_tensors)
        return false;
    const tport_tensor_view *t = g->tensors[node];
    const tport_tensor_view *a = src_of(g, t, 0), *b = src_of(g, t, 1);
    switch (t->op) {
    case TPORT_OP_ADD:
    case TPORT_OP_MUL:
        return contiguous_f32(t) && contiguous_f32(a) && contiguous_f32(b) && same_shape(t, a) && broadcasts_to(b, t);
    case TPORT_OP_MUL_MAT:
        /* a: [K, M, A2, A3], b: [K, N, B2, B3], t: [M, N, B2, B3]; a repeats over dims 2, 3 */
        return contiguous_f32(t) && contiguous_f32(a) && contiguous_f32(b) && a->ne[0] == b->ne[0] &&
               t->ne[0] == a->ne[1] && t->ne[1] == b->ne[1] && t->ne[2] == b->ne[2] && t->ne[3] == b->ne[3] &&
               b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0;
    default:
        return false; /* every other op, and ids we do not know */
    }
}

/* ---- how we compute it --------------------------------------------------- */
/* y = x (+ or *) z, z broadcast; x has t's shape (supports_op checked) */
static void binary(const tport_tensor_view *t, const tport_tensor_view *b, float *y, const float *x, const float *z,
                   bool mul) {
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++) {
                const float *zr = z + (((i3 % b->ne[3]) * b->ne[2] + i2 % b->ne[2]) * b->ne[1] + i1 % b->ne[1]) * b->ne[0];
                for (int64_t i0 = 0; i0 < t->ne[0]; i0++, i++)
                    y[i] = mul ? x[i] * zr[i0 % b->ne[0]] : x[i] + zr[i0 % b->ne[0]];
            }
}

static void mul_mat(const tport_tensor_view *t, const tport_tensor_view *a, const tport_tensor_view *b, float *y,
                    const float *pa, const float *pb) {
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++) {
            const float *am = pa + ((i3 / (t->ne[3] / a->ne[3])) * a->ne[2] + i2 / (t->ne[2] / a->ne[2])) * M * K;
            const float *bm = pb + (i3 * b->ne[2] + i2) * N * K;
            float *ym = y + (i3 * t->ne[2] + i2) * N * M;
            for (int64_t j = 0; j < N; j++)
                for (int64_t i = 0; i < M; i++) {
                    double sum = 0;
                    for (int64_t k = 0; k < K; k++)
                        sum += (double)am[i * K + k] * bm[j * K + k];
                    ym[j * M + i] = (float)sum;
                }
        }
}

/* Where a tensor's bytes are for us: (buffer, offset) in our memory, or
 * the host's pointer when we speak 1.0. */
static float *data_of(example_state *s, const tport_tensor_view *t) {
    uint64_t bytes = t->nb[3] * (uint64_t)t->ne[3];
    if (!s->device_memory)
        return t->data;
    return (float *)resolve(s, t->buffer, t->offset, bytes);
}

static tport_status example_compute(void *backend, int32_t device, const tport_graph_view *g) {
    example_state *s = backend;
    for (int32_t n = 0; n < g->n_nodes; n++) {
        int32_t idx = g->nodes[n];
        /* never trust the caller more than supports_op would */
        if (!example_supports_op(backend, device, g, idx))
            return host->error(TPORT_STATUS_UNSUPPORTED, "example: node %d (op %u) is not supported", (int)idx,
                               idx >= 0 && idx < g->n_tensors ? g->tensors[idx]->op : 0u);
        const tport_tensor_view *t = g->tensors[idx];
        const tport_tensor_view *a = src_of(g, t, 0), *b = src_of(g, t, 1);
        float *y = data_of(s, t), *x = data_of(s, a), *z = data_of(s, b);
        if (!y || !x || !z)
            return host->error(TPORT_STATUS_NOT_ADDRESSABLE, "example: node %d has an operand outside its memory",
                               (int)idx);
        if (t->op == TPORT_OP_MUL_MAT)
            mul_mat(t, a, b, y, x, z);
        else
            binary(t, b, y, x, z, t->op == TPORT_OP_MUL);
        s->nodes_computed++;
    }
    return TPORT_STATUS_OK;
}

static int32_t example_score(void) {
    return 1; /* plain loops: usable anywhere, preferred nowhere */
}

static tport_backend_api table = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "example",
    .version = EXAMPLE_VERSION,
    .required_isa = 0,
    .score = example_score,
    .init = example_init,
    .shutdown = example_shutdown,
    .device_count = example_device_count,
    .device_info = example_device_info,
    .supports_op = example_supports_op,
    .compute = example_compute,
    .buffer_alloc = example_buffer_alloc,
    .buffer_free = example_buffer_free,
    .tensor_write = example_tensor_write,
    .tensor_read = example_tensor_read,
    .buffer_fill = example_buffer_fill,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h) {
    if (!h)
        return NULL;
    if (h->abi_major != TPORT_ABI_MAJOR) {
        /* Another major: touch nothing else of *h.  Returning the table
         * lets the host refuse it with both versions in the message. */
        table.abi_minor = TPORT_ABI_MINOR;
        return &table;
    }
    host = h;
    const uint32_t mine = TPORT_ABI_MINOR; /* the highest minor both sides know */
    table.abi_minor = h->abi_minor < mine ? h->abi_minor : mine;
    return &table;
}
