/* Weights in the CPU backend's own layout (ABI 1.1, guide section 9: a
 * host-memory backend may keep weights re-encoded).  At load the host asks
 * tensor_alloc_size for each weight this backend will read; for the ones
 * that have a faster layout here it allocates a buffer (buffer_alloc, host
 * memory) and hands over the file's bytes once (tensor_write), which this
 * file re-encodes.  At compute time a weight view whose `buffer` is set is
 * one of these copies; cpu_weight_layout() says which layout it is in.
 *
 * The "x8" layouts (cpu_mul_mat_x8.c reads them) keep 8 consecutive rows of
 * a Q4_0 or Q8_0 matrix together, block column by block column.  For each
 * group of 8 rows and each block b (32 elements) of a row:
 *     uint16_t d[8]         the 8 rows' scales (f16), row r at d[r]
 *     then chunks of 32 bytes; chunk j holds bytes 4j..4j+3 of each row's
 *     quants, row r at bytes 4r..4r+3 of the chunk
 *         (Q4_0: 4 chunks of the 16 nibble bytes; Q8_0: 8 chunks of 32)
 * so one 256-bit load gives the same 4 bytes of all 8 rows: each 32-bit
 * lane is one row, and a dot product with 4 broadcast activation bytes
 * leaves each row's sum in its own lane, with no horizontal sums.  A group
 * takes exactly the bytes its 8 rows took.
 *
 * Each buffer holds one tensor after a 64-byte header; the handle is the
 * header's address (the host only ever gives back handles it got here).
 * TPORT_CPU_REPACK=0 in the environment turns re-encoding off. */
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define BUFFER_MAGIC 0x52435054u /* "TPCR" */
#define HEADER_BYTES 64

typedef struct cpu_buffer {
    uint32_t magic;
    uint32_t layout; /* CPU_LAYOUT_*: what tensor_write stored */
    uint64_t capacity;
} cpu_buffer;

_Static_assert(sizeof(cpu_buffer) <= HEADER_BYTES, "the header fits before the data");

static bool repack_enabled = true;

void cpu_repack_init(void) {
    const char *e = getenv("TPORT_CPU_REPACK");
    repack_enabled = !(e && e[0] == '0' && e[1] == '\0') && cpu_x8_available();
}

static cpu_buffer *buffer_of(tport_buffer b) {
    cpu_buffer *h = (cpu_buffer *)(uintptr_t)b;
    return h && h->magic == BUFFER_MAGIC ? h : NULL;
}

static uint8_t *buffer_data(cpu_buffer *h) {
    return (uint8_t *)h + HEADER_BYTES;
}

/* The x8 layout a weight can take, or CPU_LAYOUT_PLAIN. */
static int x8_layout_for(const tport_tensor_view *t) {
    if (t->type != TPORT_TYPE_Q4_0 && t->type != TPORT_TYPE_Q8_0)
        return CPU_LAYOUT_PLAIN;
    uint64_t bb = t->type == TPORT_TYPE_Q4_0 ? 18 : 34;
    if (t->ne[0] <= 0 || t->ne[0] % 32 || t->ne[1] < 8 || t->ne[1] % 8 || t->ne[2] != 1 || t->ne[3] != 1)
        return CPU_LAYOUT_PLAIN;
    if (t->nb[0] != bb || t->nb[1] != bb * (uint64_t)(t->ne[0] / 32))
        return CPU_LAYOUT_PLAIN;
    return t->type == TPORT_TYPE_Q4_0 ? CPU_LAYOUT_Q4_0_X8 : CPU_LAYOUT_Q8_0_X8;
}

static uint64_t plain_bytes(const tport_tensor_view *t) {
    return t->nb[1] * (uint64_t)t->ne[1];
}

uint64_t cpu_tensor_alloc_size(void *backend, int32_t device, const tport_tensor_view *t) {
    (void)backend;
    if (device != 0 || !t || t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0 || !repack_enabled)
        return 0;
    return x8_layout_for(t) == CPU_LAYOUT_PLAIN ? 0 : plain_bytes(t);
}

tport_status cpu_buffer_alloc(void *backend, int32_t device, uint32_t kind, uint32_t usage, uint64_t size,
                              tport_buffer *out, void **host_ptr) {
    (void)backend, (void)usage;
    if (device != 0 || kind != TPORT_MEM_DEVICE || !out || !host_ptr)
        return cpu_host->error(TPORT_STATUS_UNSUPPORTED, "cpu: buffers are for weights in its own layout");
    if (size == 0 || size > (uint64_t)SIZE_MAX - 2 * HEADER_BYTES)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: bad buffer size %llu", (unsigned long long)size);
    size_t bytes = HEADER_BYTES + ((size_t)size + 63) / 64 * 64;
    cpu_buffer *h = aligned_alloc(64, bytes);
    if (!h)
        return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: out of memory for %llu bytes",
                               (unsigned long long)size);
    *h = (cpu_buffer){.magic = BUFFER_MAGIC, .layout = CPU_LAYOUT_PLAIN, .capacity = size};
    *out = (tport_buffer)(uintptr_t)h;
    *host_ptr = buffer_data(h);
    return TPORT_STATUS_OK;
}

void cpu_buffer_free(void *backend, tport_buffer b) {
    (void)backend;
    cpu_buffer *h = buffer_of(b);
    if (h) {
        h->magic = 0;
        free(h);
    }
}

/* Rows [8g, 8g+8) of a plain Q4_0/Q8_0 matrix into group g of the x8 layout. */
static void encode_group(const uint8_t *plain, size_t row_bytes, int64_t nblk, size_t bb, int chunks, uint8_t *dst) {
    size_t group_block = 16 + 32 * (size_t)chunks;
    for (int64_t b = 0; b < nblk; b++) {
        uint8_t *out = dst + (size_t)b * group_block;
        for (int r = 0; r < 8; r++) {
            const uint8_t *blk = plain + (size_t)r * row_bytes + (size_t)b * bb;
            memcpy(out + 2 * r, blk, 2);
            for (int j = 0; j < chunks; j++)
                memcpy(out + 16 + 32 * j + 4 * r, blk + 2 + 4 * j, 4);
        }
    }
}

tport_status cpu_tensor_write(void *backend, tport_buffer b, uint64_t offset, const tport_tensor_view *t,
                              const void *src, uint64_t size, tport_ticket *ticket) {
    (void)backend;
    if (ticket)
        *ticket = 0; /* done on return */
    cpu_buffer *h = buffer_of(b);
    if (!h || !t || !src || t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: tensor_write to an unknown buffer");
    if (offset != 0 || size > h->capacity)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: tensor_write of %llu bytes at %llu into %llu",
                               (unsigned long long)size, (unsigned long long)offset,
                               (unsigned long long)h->capacity);
    int layout = x8_layout_for(t);
    if (layout == CPU_LAYOUT_PLAIN || size != plain_bytes(t)) { /* kept as it is */
        memcpy(buffer_data(h), src, (size_t)size);
        h->layout = CPU_LAYOUT_PLAIN;
        return TPORT_STATUS_OK;
    }
    size_t row_bytes = (size_t)t->nb[1];
    int64_t nblk = t->ne[0] / 32;
    size_t bb = t->nb[0];
    int chunks = layout == CPU_LAYOUT_Q4_0_X8 ? 4 : 8;
    for (int64_t g = 0; g < t->ne[1] / 8; g++)
        encode_group((const uint8_t *)src + (size_t)g * 8 * row_bytes, row_bytes, nblk, bb, chunks,
                     buffer_data(h) + (size_t)g * 8 * row_bytes);
    h->layout = (uint32_t)layout;
    return TPORT_STATUS_OK;
}

int cpu_weight_layout(const tport_tensor_view *t) {
    if (!t || t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_1 || !t->buffer)
        return CPU_LAYOUT_PLAIN;
    cpu_buffer *h = buffer_of(t->buffer);
    if (!h || t->offset != 0 || t->data != buffer_data(h))
        return CPU_LAYOUT_UNKNOWN;
    return (int)h->layout;
}

void cpu_x8_row(const tport_tensor_view *t, int layout, int64_t row, uint8_t *out) {
    int chunks = layout == CPU_LAYOUT_Q4_0_X8 ? 4 : 8;
    size_t bb = 2 + 4 * (size_t)chunks, group_block = 16 + 32 * (size_t)chunks;
    int64_t nblk = t->ne[0] / 32;
    const uint8_t *g = (const uint8_t *)t->data + (size_t)(row / 8) * 8 * (size_t)t->nb[1];
    int r = (int)(row % 8);
    for (int64_t b = 0; b < nblk; b++, g += group_block) {
        uint8_t *blk = out + (size_t)b * bb;
        memcpy(blk, g + 2 * r, 2);
        for (int j = 0; j < chunks; j++)
            memcpy(blk + 2 + 4 * j, g + 16 + 32 * j + 4 * r, 4);
    }
}
