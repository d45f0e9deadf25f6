/* An out-of-tree tensorport backend: F32 add, mul and mul_mat on contiguous
 * tensors, computed on the host CPU with plain loops.
 *
 * It includes one header, <tport/backend.h>, links nothing of tensorport,
 * and exports one symbol, tport_backend_entry.  Everything it does not
 * claim in supports_op (other ops, other types, strided views) the host
 * runs on another backend. */
#include <string.h>

#include <tport/backend.h>

#define EXAMPLE_VERSION "1.0.0"

static const tport_host_api *host;

/* Per-instance state; a real accelerator would keep its device handle,
 * queues and caches here. */
typedef struct example_state {
    int64_t nodes_computed;
} example_state;

static example_state the_state;

static tport_status example_init(void **backend) {
    memset(&the_state, 0, sizeof the_state);
    *backend = &the_state;
    return TPORT_STATUS_OK;
}

static void example_shutdown(void *backend) {
    example_state *s = backend;
    if (host && host->log)
        host->log(TPORT_LOG_DEBUG, "example: computed %lld nodes", (long long)s->nodes_computed);
}

static int32_t example_device_count(void *backend) {
    (void)backend;
    return 1;
}

static tport_status example_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
    if (device != 0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "example: no device %d", (int)device);
    /* Write only what the host's struct has room for (struct_size). */
    if (out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "example: device_info struct too small");
    out->kind = TPORT_DEVICE_CPU;
    strncpy(out->name, "example0", sizeof out->name - 1);
    strncpy(out->description, "out-of-tree example backend (plain C loops on the host CPU)",
            sizeof out->description - 1);
    out->memory_total = 0; /* unknown: it uses host memory */
    out->memory_free = 0;
    return TPORT_STATUS_OK;
}

/* ---- what we claim ------------------------------------------------------- */
static const tport_tensor_view *src_of(const tport_graph_view *g, const tport_tensor_view *t, int i) {
    int32_t s = t->src[i];
    return s >= 0 && s < g->n_tensors ? g->tensors[s] : NULL;
}

static bool contiguous_f32(const tport_tensor_view *t) {
    if (!t || t->type != TPORT_TYPE_F32 || !t->data || t->nb[0] != sizeof(float))
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
static void binary(const tport_tensor_view *t, const tport_tensor_view *a, const tport_tensor_view *b, bool mul) {
    float *y = t->data;
    const float *x = a->data, *z = b->data;
    int64_t i = 0;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++) {
                const float *zr = z + (((i3 % b->ne[3]) * b->ne[2] + i2 % b->ne[2]) * b->ne[1] + i1 % b->ne[1]) * b->ne[0];
                for (int64_t i0 = 0; i0 < t->ne[0]; i0++, i++)
                    y[i] = mul ? x[i] * zr[i0 % b->ne[0]] : x[i] + zr[i0 % b->ne[0]];
            }
}

static void mul_mat(const tport_tensor_view *t, const tport_tensor_view *a, const tport_tensor_view *b) {
    const int64_t K = a->ne[0], M = a->ne[1], N = b->ne[1];
    float *y = t->data;
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++) {
            const float *am = (const float *)a->data + ((i3 / (t->ne[3] / a->ne[3])) * a->ne[2] + i2 / (t->ne[2] / a->ne[2])) * M * K;
            const float *bm = (const float *)b->data + (i3 * b->ne[2] + i2) * N * K;
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
        if (t->op == TPORT_OP_MUL_MAT)
            mul_mat(t, a, b);
        else
            binary(t, a, b, t->op == TPORT_OP_MUL);
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
