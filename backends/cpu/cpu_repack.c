/* Weights in the CPU backend's own layout (ABI 1.1, guide section 9: a
 * host-memory backend may keep weights re-encoded).  At load the host asks
 * tensor_alloc_size for each weight this backend will read; for the
 * matrices it allocates a buffer (buffer_alloc, host memory) and hands over
 * the file's bytes once (tensor_write), which this file re-encodes where
 * a faster layout exists and copies as they are elsewhere.  At compute time a weight view whose `buffer` is set is
 * one of these copies; cpu_weight_layout() says which layout it is in.
 *
 * The "x8" layouts (cpu_mul_mat_x8.c and cpu_mul_mat_x8_avx512.c read
 * them) keep 8 consecutive rows of a Q4_0 or Q8_0 matrix together, block
 * column by block column.  With S = CPU_X8_SLICE (4, or 8 in builds with
 * the 512-bit kernels), for each group of 8 rows and each block b (32
 * elements) of a row:
 *     uint16_t d[8]         the 8 rows' scales (f16), row r at d[r]
 *     then chunks of 8 S bytes; chunk j holds bytes S j .. S j + S - 1 of
 *     each row's quants, row r at bytes S r .. S r + S - 1 of the chunk
 *         (Q4_0: 16 / S chunks of the 16 nibble bytes; Q8_0: 32 / S of 32,
 *         each quant XOR CPU_X8_Q8_XOR: offset by 128 for the 512-bit
 *         kernels, whose VNNI products take unsigned weights)
 * so one load (256 or 512 bits) gives the same S bytes of all 8 rows: each
 * S-byte lane is one row, and a dot product with S broadcast activation
 * bytes leaves each row's sum in its own lane (or pair of 32-bit lanes),
 * with no horizontal sums.  A group takes exactly the bytes its 8 rows
 * took.
 *
 * Q4_K's x8 layout does the same per super-block (256 elements), with the
 * 6-bit scales and mins unpacked to bytes, 1184 bytes for 8 rows (1152 in
 * the file):
 *     uint16_t d[8], dmin[8]
 *     uint8_t sc[8][8]        sc[j][r]: sub-block j's scale of row r
 *     uint8_t mn[4][8][2]     mn[p][r][i]: the min of sub-block 2p + i
 *     then 128 / S chunks of 8 S bytes; chunk (32 / S) g + c holds bytes
 *     32 g + S c .. 32 g + S c + S - 1 of each row's quants, row r at
 *     bytes S r .. S r + S - 1
 *
 * MXFP4's (512-bit builds only) is Q4_0's with a byte, its E8M0
 * exponent, for the scale: cpu_mul_mat_x8_mxfp4.c.  Q6_K's (512-bit
 * builds) is described in cpu_mul_mat_x8_q6k.c; matrices take it unless
 * the CPU has AMX-INT8 (whose tiles take plain K-quant batches) or
 * TPORT_CPU_DENSE_Q6K_X8=0 keeps them in the file's layout.
 *
 * Every other 2-D weight with whole, dense rows gets a plain copy: the
 * file's layout, in the same huge pages.  Generation streams each weight
 * once a token, and from the file's 4 KiB pages it ran clearly slower
 * (f16, f32 and Q6_K alike; RESULTS run 30).
 *
 * Stacks of experts (3-D, ne[2] matrices back to back, named as such:
 * expert_stack; only mul_mat_id reads them) of a type with an x8 layout
 * are re-encoded too, each expert's matrix into groups of its own:
 * expert e's groups start at e (ne[1] / 8) group bytes (cpu_mul_mat_id.c
 * reads them).  Generation reads the selected experts' rows from the
 * file's 4 KiB pages markedly slower than from huge pages (RESULTS run
 * 38).  Stacks of other types stay in the file's mapping unless
 * TPORT_CPU_COPY_EXPERTS=1 asks for a plain copy (copy_eligible): experts
 * are copied by default only to be re-encoded.  Both kinds are kept
 * within a memory budget (stack_budget_ok): a mixture is run from files
 * larger than memory, whose experts' pages come and go with use, and a
 * copy of every expert would not fit; past the budget stacks stay in the
 * file's mapping.  TPORT_CPU_REPACK_EXPERTS=0 keeps all stacks there.
 *
 * Each buffer holds one tensor, in memory of cpu_weight_arena.c (huge
 * pages); the handle is the address of its header, a small allocation of
 * its own (the host only ever gives back handles it got here).  Not in
 * the arena: a header there would fault in a huge page of each weight at
 * allocation, before the weight is written, which raised the peak memory
 * of a run that never re-encodes by a quarter (RESULTS run 30).
 *
 * Deferred copies.  When the host passes a ticket, tensor_write only
 * queues the weight and returns a ticket; the work is done in wait(), on
 * the waiting thread and helpers, for every queued weight up to that
 * ticket, in order.  Until then a graph reads the weight in the file's
 * layout from the host's bytes (which the ABI keeps in place while the
 * ticket is pending): cpu_weight_deferred gives them, and the graph's
 * preparation (cpu_graph.c) reads that weight as a plain one.  Which
 * layout a graph reads is thus the host's choice (whether it waited), not
 * a race with a background thread, so results do not depend on timing;
 * and no copy is made while a graph runs.  What it buys: a new process
 * answers its first short prompt without first writing a copy of every
 * weight (most of a cold start's time went to the kernel clearing the
 * copies' pages; RESULTS runs 26 and 30).
 * TPORT_CPU_REPACK=0 in the environment turns re-encoding and copies off. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_internal.h"

#define BUFFER_MAGIC 0x52435054u /* "TPCR" */

typedef struct cpu_buffer {
    uint32_t magic;
    uint32_t layout; /* CPU_LAYOUT_*: what tensor_write stored (or will) */
    uint64_t capacity;
    uint8_t *data;    /* capacity bytes */
    cpu_arena *arena; /* where data came from */
    /* a deferred re-encoding: the host's plain bytes until it is done
     * (NULL then); written under deferred_lock, read by graphs */
    _Atomic(const uint8_t *) deferred;
    tport_ticket ticket;
    int64_t K, groups; /* the weight's row length and groups of 8 rows */
    size_t row_bytes;
    uint64_t stack_bytes; /* an expert stack's bytes, counted in stacks_live */
    struct cpu_buffer *next; /* in the queue */
} cpu_buffer;

static bool repack_enabled = true;
static bool copy_experts = false; /* TPORT_CPU_COPY_EXPERTS=1 (copy_eligible) */
static bool encode_experts = true; /* TPORT_CPU_REPACK_EXPERTS=0: stacks stay mapped */
static bool dense_q6k = true;      /* TPORT_CPU_DENSE_Q6K_X8=0: dense Q6_K keeps the file's layout */
static uint64_t budget_env;        /* TPORT_CPU_EXPERT_BUDGET_MB, in bytes; 0: from memory */

/* Expert stacks in our memory: their bytes, and the budget they stay in
 * (stack_budget_ok). */
static pthread_mutex_t stacks_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t stacks_live, stacks_budget;
static int encode_threads = 1; /* threads re-encoding one large weight */

/* Deferred copies, oldest first; tickets count up from 1. */
static pthread_mutex_t deferred_lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_buffer *queue_head, *queue_tail;
static tport_ticket last_ticket;

#define ENCODE_THREADS 4
#define ENCODE_MIN_GROUPS 256 /* per thread; smaller weights take fewer */

void cpu_repack_init(void) {
    const char *e = getenv("TPORT_CPU_REPACK");
    repack_enabled = !(e && e[0] == '0' && e[1] == '\0') && cpu_x8_available();
    const char *x = getenv("TPORT_CPU_COPY_EXPERTS");
    copy_experts = x && x[0] == '1' && x[1] == '\0';
    const char *r = getenv("TPORT_CPU_REPACK_EXPERTS");
    encode_experts = !(r && r[0] == '0' && r[1] == '\0');
    const char *q6 = getenv("TPORT_CPU_DENSE_Q6K_X8");
    dense_q6k = !(q6 && q6[0] == '0' && q6[1] == '\0');
    const char *m = getenv("TPORT_CPU_EXPERT_BUDGET_MB");
    char *end = NULL;
    unsigned long long mb = m && *m ? strtoull(m, &end, 10) : 0;
    budget_env = 0;
    if (m && *m && (*end || mb == 0 || mb > (UINT64_MAX >> 20)))
        cpu_host->log(TPORT_LOG_WARN, "cpu: TPORT_CPU_EXPERT_BUDGET_MB=%s is not a positive number; ignored", m);
    else if (m && *m)
        budget_env = (uint64_t)mb << 20;
    long cores = cpu_core_count();
    encode_threads = (int)(cores > ENCODE_THREADS ? ENCODE_THREADS : cores);
}

/* Takes h out of the queue (deferred_lock held). */
static void unqueue(cpu_buffer *h) {
    cpu_buffer **at = &queue_head, *prev = NULL;
    while (*at && *at != h) {
        prev = *at;
        at = &(*at)->next;
    }
    if (!*at)
        return;
    *at = h->next;
    if (queue_tail == h)
        queue_tail = prev;
    atomic_store_explicit(&h->deferred, NULL, memory_order_release);
}

static cpu_buffer *buffer_of(tport_buffer b) {
    cpu_buffer *h = (cpu_buffer *)(uintptr_t)b;
    return h && h->magic == BUFFER_MAGIC ? h : NULL;
}

static uint8_t *buffer_data(cpu_buffer *h) {
    return h->data;
}

/* Whether t is a stack of experts, which only mul_mat_id reads: by its
 * name (GGUF's ffn_{gate,up,down,gate_up}_exps.weight).  Other 3-D
 * weights, such as DeepSeek-2's per-head attn_k_b, are read by mul_mat,
 * which has no x8 path for them. */
static bool expert_stack(const tport_tensor_view *t) {
    static const char suffix[] = "_exps.weight";
    size_t n = t->name ? strlen(t->name) : 0;
    return t->ne[2] > 1 && n >= sizeof suffix - 1 && !strcmp(t->name + n - (sizeof suffix - 1), suffix);
}

/* Whether a Q6_K matrix takes the x8 layout: not where AMX tiles take
 * plain K-quant batches of CPU_AMX_KQ_MIN_COLS columns and more (the x8
 * layout has no AMX kernel; not measured against them), nor with
 * TPORT_CPU_DENSE_Q6K_X8=0. */
static bool dense_q6k_x8(void) {
#if CPU_AMX
    if (cpu_amx_q8_on())
        return false;
#endif
    return dense_q6k;
}

/* The x8 layout a weight can take, or CPU_LAYOUT_PLAIN: a matrix, or a
 * stack of experts' matrices back to back (each one's groups apart). */
static int x8_layout_for(const tport_tensor_view *t) {
    int layout;
    uint64_t bb, bs;
    switch (t->type) {
    case TPORT_TYPE_Q4_0: layout = CPU_LAYOUT_Q4_0_X8, bb = 18, bs = 32; break;
    case TPORT_TYPE_Q8_0: layout = CPU_LAYOUT_Q8_0_X8, bb = 34, bs = 32; break;
    case TPORT_TYPE_Q4_K: layout = CPU_LAYOUT_Q4_K_X8, bb = 144, bs = 256; break;
    case TPORT_TYPE_MXFP4: /* kernels in 512-bit builds only (cpu_mul_mat_x8_mxfp4.c) */
        if (!CPU_X8_WIDE)
            return CPU_LAYOUT_PLAIN;
        layout = CPU_LAYOUT_MXFP4_X8, bb = 17, bs = 32;
        break;
    case TPORT_TYPE_Q6_K:
        if (!CPU_X8_WIDE || (t->ne[2] <= 1 && !dense_q6k_x8()))
            return CPU_LAYOUT_PLAIN;
        layout = CPU_LAYOUT_Q6_K_X8, bb = 210, bs = 256;
        break;
    default: return CPU_LAYOUT_PLAIN;
    }
    if (t->ne[0] <= 0 || t->ne[0] % (int64_t)bs || t->ne[1] < 8 || t->ne[1] % 8 || t->ne[2] < 1 || t->ne[3] != 1)
        return CPU_LAYOUT_PLAIN;
    if (t->nb[0] != bb || t->nb[1] != bb * (uint64_t)t->ne[0] / bs)
        return CPU_LAYOUT_PLAIN;
    if (t->ne[2] > 1 && (!encode_experts || !expert_stack(t) || t->nb[2] != t->nb[1] * (uint64_t)t->ne[1]))
        return CPU_LAYOUT_PLAIN;
    return layout;
}

/* Rows of t: a matrix's, or all of a stack of experts' (ne[2] of them). */
static int64_t plain_rows(const tport_tensor_view *t) {
    return t->ne[1] * (t->ne[2] > 1 ? t->ne[2] : 1);
}

static uint64_t plain_bytes(const tport_tensor_view *t) {
    return t->nb[1] * (uint64_t)plain_rows(t);
}

/* Whether a weight gets a plain copy: a matrix (not a vector: those are
 * read by element-wise ops, which a deferred copy cannot be given to),
 * whole blocks, rows dense; and, only when TPORT_CPU_COPY_EXPERTS=1, a
 * stack of quantized experts without an x8 layout (3-D, the matrices back
 * to back), which only mul_mat_id reads, as its src[0], where a deferred
 * copy is handled.  Generation reads the selected experts' rows faster
 * from the copy's huge pages than from the file's 4 KiB ones (RESULTS run
 * 38), but by default such stacks stay in the file's mapping: the
 * project's rule is that experts are copied only to be re-encoded.
 * Quantized only: f16/f32 stacks may be convolution kernels, read by
 * other ops. */
static bool copy_eligible(const tport_tensor_view *t) {
    const tport_type_info *ti = cpu_host->type_info(t->type);
    if (!ti || ti->block_size <= 0 || t->ne[0] <= 0 || t->ne[0] % ti->block_size || t->ne[1] < 2 ||
        t->ne[2] < 1 || t->ne[3] != 1)
        return false;
    if (t->ne[2] > 1 && (!copy_experts || ti->block_size < 2 || t->nb[2] != t->nb[1] * (uint64_t)t->ne[1]))
        return false;
    return t->nb[0] == ti->block_bytes && t->nb[1] == ti->block_bytes * (uint64_t)(t->ne[0] / ti->block_size);
}

size_t cpu_x8_group_bytes(int layout, int64_t K) {
    switch (layout) {
    case CPU_LAYOUT_Q4_0_X8: return (size_t)(K / 32) * 144;
    case CPU_LAYOUT_Q8_0_X8: return (size_t)(K / 32) * 272;
    case CPU_LAYOUT_Q4_K_X8: return (size_t)(K / 256) * 1184;
    case CPU_LAYOUT_MXFP4_X8: return (size_t)(K / 32) * 136;
    case CPU_LAYOUT_Q6_K_X8: return (size_t)(K / 256) * 1680;
    default: return 0;
    }
}

/* Bytes of weight t in our own memory (layout x8_layout_for(t)), 0 when
 * it gets no copy. */
static uint64_t own_bytes(const tport_tensor_view *t, int layout) {
    if (layout != CPU_LAYOUT_PLAIN)
        return cpu_x8_group_bytes(layout, t->ne[0]) * (uint64_t)(t->ne[1] / 8) * (uint64_t)t->ne[2];
    return copy_eligible(t) ? plain_bytes(t) : 0;
}

/* Half the memory the kernel says is available (MemAvailable: free memory
 * plus what it can reclaim, such as clean file pages); 0 if unknown. */
static uint64_t half_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[128];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb > (UINT64_MAX >> 11) ? UINT64_MAX : (uint64_t)kb << 9;
}

/* Whether a stack of experts of `bytes` in our memory stays within the
 * budget: TPORT_CPU_EXPERT_BUDGET_MB, else half the memory available when
 * the first stack is asked about while none is held (at a model's load;
 * after that the file's pages they replace are given back, which the
 * figure then would count twice).  Half, so that a mixture that fits
 * comfortably runs from huge pages while one near the size of memory
 * keeps the rest for the file's mapping, the cache and other programs.
 * Counted when written (tensor_write), given back when freed; the host
 * asks, allocates and writes one weight at a time. */
static bool stack_budget_ok(uint64_t bytes) {
    pthread_mutex_lock(&stacks_lock);
    if (stacks_live == 0)
        stacks_budget = budget_env ? budget_env : half_available();
    bool ok = bytes <= stacks_budget && stacks_live <= stacks_budget - bytes;
    pthread_mutex_unlock(&stacks_lock);
    return ok;
}

uint64_t cpu_tensor_alloc_size(void *backend, int32_t device, const tport_tensor_view *t) {
    (void)backend;
    if (device != 0 || !t || t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0 || !repack_enabled)
        return 0;
    uint64_t bytes = own_bytes(t, x8_layout_for(t));
    if (bytes && t->ne[2] > 1 && !stack_budget_ok(bytes))
        return 0; /* the stack stays in the file's mapping */
    return bytes;
}

tport_status cpu_buffer_alloc(void *backend, int32_t device, uint32_t kind, uint32_t usage, uint64_t size,
                              tport_buffer *out, void **host_ptr) {
    (void)backend, (void)usage;
    if (device != 0 || kind != TPORT_MEM_DEVICE || !out || !host_ptr)
        return cpu_host->error(TPORT_STATUS_UNSUPPORTED, "cpu: buffers are for weights in its own layout");
    if (size == 0 || size > (uint64_t)SIZE_MAX / 2)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: bad buffer size %llu", (unsigned long long)size);
    cpu_arena *arena = NULL;
    cpu_buffer *h = malloc(sizeof *h);
    uint8_t *data = h ? cpu_arena_alloc((size_t)size, &arena) : NULL;
    if (!data) {
        free(h);
        return cpu_host->error(TPORT_STATUS_OUT_OF_MEMORY, "cpu: out of memory for %llu bytes",
                               (unsigned long long)size);
    }
    *h = (cpu_buffer){.magic = BUFFER_MAGIC, .layout = CPU_LAYOUT_PLAIN, .capacity = size, .data = data,
                      .arena = arena};
    atomic_init(&h->deferred, NULL);
    *out = (tport_buffer)(uintptr_t)h;
    *host_ptr = buffer_data(h);
    return TPORT_STATUS_OK;
}

void cpu_buffer_free(void *backend, tport_buffer b) {
    (void)backend;
    cpu_buffer *h = buffer_of(b);
    if (h) {
        if (atomic_load_explicit(&h->deferred, memory_order_acquire)) { /* never made: dropped */
            pthread_mutex_lock(&deferred_lock);
            unqueue(h);
            pthread_mutex_unlock(&deferred_lock);
        }
        if (h->stack_bytes) {
            pthread_mutex_lock(&stacks_lock);
            stacks_live -= h->stack_bytes;
            pthread_mutex_unlock(&stacks_lock);
        }
        h->magic = 0;
        cpu_arena_free(h->arena);
        free(h);
    }
}

enum { S = CPU_X8_SLICE, CHUNK = 8 * CPU_X8_SLICE };

/* One row's slice (S bytes) from src to dst, each byte XOR x: one word
 * operation, not S byte operations (this runs over every weight at load). */
static void copy_xor(uint8_t *dst, const uint8_t *src, uint8_t x) {
    uint64_t w = 0;
    memcpy(&w, src, S);
    w ^= UINT64_C(0x0101010101010101) * x;
    memcpy(dst, &w, S);
}

/* Rows [8g, 8g+8) of a plain Q4_0/Q8_0 matrix into group g of the x8
 * layout; qbytes is 16 (Q4_0) or 32 (Q8_0), xor what each quant byte is
 * XORed with. */
static void encode_group(const uint8_t *plain, size_t row_bytes, int64_t nblk, int qbytes, uint8_t xor,
                         uint8_t *dst) {
    size_t group_block = 16 + 8 * (size_t)qbytes;
    for (int64_t b = 0; b < nblk; b++) {
        uint8_t *out = dst + (size_t)b * group_block;
        for (int r = 0; r < 8; r++) {
            const uint8_t *blk = plain + (size_t)r * row_bytes + (size_t)b * (size_t)(2 + qbytes);
            memcpy(out + 2 * r, blk, 2);
            for (int j = 0; j < qbytes / S; j++)
                copy_xor(out + 16 + CHUNK * j + S * r, blk + 2 + S * j, xor);
        }
    }
}

/* Q4_K's 6-bit scales and mins from their 12 packed bytes, and back. */
static void k4_unpack_scales(const uint8_t *s, uint8_t sc[8], uint8_t mn[8]) {
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        mn[j] = s[j + 4] & 63;
        sc[j + 4] = (uint8_t)((s[j + 8] & 0xF) | (s[j] >> 6) << 4);
        mn[j + 4] = (uint8_t)((s[j + 8] >> 4) | (s[j + 4] >> 6) << 4);
    }
}

static void k4_pack_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t *s) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 0xF) | (mn[j + 4] & 0xF) << 4);
    }
}

static void encode_group_q4_K(const uint8_t *plain, size_t row_bytes, int64_t nsb, uint8_t *dst) {
    for (int64_t b = 0; b < nsb; b++) {
        uint8_t *out = dst + (size_t)b * 1184;
        for (int r = 0; r < 8; r++) {
            const uint8_t *blk = plain + (size_t)r * row_bytes + (size_t)b * 144;
            uint8_t sc[8], mn[8];
            k4_unpack_scales(blk + 4, sc, mn);
            memcpy(out + 2 * r, blk, 2);          /* d */
            memcpy(out + 16 + 2 * r, blk + 2, 2); /* dmin */
            for (int j = 0; j < 8; j++) {
                out[32 + 8 * j + r] = sc[j];
                out[96 + 16 * (j / 2) + 2 * r + j % 2] = mn[j];
            }
            for (int c = 0; c < 128 / S; c++)
                memcpy(out + 160 + CHUNK * c + S * r, blk + 16 + S * c, S);
        }
    }
}

/* Re-encoding a weight (K elements a row, row_bytes apart), groups
 * [g0, g1) of its rows; for a plain copy, rows [g0, g1). */
typedef struct encode_job {
    int layout;
    int64_t K;
    size_t row_bytes;
    const uint8_t *src;
    uint8_t *dst;
    int64_t g0, g1;
} encode_job;

static void encode_range(const encode_job *j) {
    size_t row_bytes = j->row_bytes, group = cpu_x8_group_bytes(j->layout, j->K);
    if (j->layout == CPU_LAYOUT_PLAIN) {
        memcpy(j->dst + (size_t)j->g0 * row_bytes, j->src + (size_t)j->g0 * row_bytes,
               (size_t)(j->g1 - j->g0) * row_bytes);
        return;
    }
    for (int64_t g = j->g0; g < j->g1; g++) {
        const uint8_t *in = j->src + (size_t)g * 8 * row_bytes;
        uint8_t *out = j->dst + (size_t)g * group;
        if (j->layout == CPU_LAYOUT_Q4_K_X8)
            encode_group_q4_K(in, row_bytes, j->K / 256, out);
        else if (j->layout == CPU_LAYOUT_MXFP4_X8)
            cpu_x8_mxfp4_encode(in, row_bytes, j->K / 32, out);
        else if (j->layout == CPU_LAYOUT_Q6_K_X8)
            cpu_x8_q6k_encode(in, row_bytes, j->K / 256, out);
        else if (j->layout == CPU_LAYOUT_Q4_0_X8)
            encode_group(in, row_bytes, j->K / 32, 16, 0, out);
        else
            encode_group(in, row_bytes, j->K / 32, 32, CPU_X8_Q8_XOR, out);
    }
}

static void *encode_thread(void *arg) {
    encode_range(arg);
    return NULL;
}

/* Large weights are re-encoded on up to ENCODE_THREADS threads of their
 * own (not the compute pool: an upload may overlap another model's
 * compute).  Loading is bound by the first touches of the file's pages
 * and of the new memory, which the cores take in parallel: a large
 * model's cold start got markedly faster on 2 cores (RESULTS run 10). */
static void encode_all(const encode_job *whole, int64_t groups) {
    int n = encode_threads;
    if (groups < (int64_t)ENCODE_MIN_GROUPS * n)
        n = (int)(groups / ENCODE_MIN_GROUPS > 0 ? groups / ENCODE_MIN_GROUPS : 1);
    encode_job jobs[ENCODE_THREADS];
    pthread_t threads[ENCODE_THREADS];
    bool started[ENCODE_THREADS] = {false};
    for (int i = 0; i < n; i++) {
        jobs[i] = *whole;
        cpu_split(groups, i, n, &jobs[i].g0, &jobs[i].g1);
        if (i > 0)
            started[i] = pthread_create(&threads[i], NULL, encode_thread, &jobs[i]) == 0;
    }
    /* part 0 here, and any part whose thread did not start */
    for (int i = 0; i < n; i++)
        if (!started[i])
            encode_range(&jobs[i]);
    for (int i = 1; i < n; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
}

/* Fills h (its layout, K, groups and row_bytes set) from the plain bytes
 * at src. */
static void encode_buffer(cpu_buffer *h, const uint8_t *src) {
    encode_job job = {.layout = (int)h->layout, .K = h->K, .row_bytes = h->row_bytes, .src = src,
                      .dst = buffer_data(h)};
    encode_all(&job, h->groups);
}

tport_status cpu_tensor_write(void *backend, tport_buffer b, uint64_t offset, const tport_tensor_view *t,
                              const void *src, uint64_t size, tport_ticket *ticket) {
    (void)backend;
    if (ticket)
        *ticket = 0; /* done on return */
    cpu_buffer *h = buffer_of(b);
    if (!h || !t || !src || t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_0)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: tensor_write to an unknown buffer");
    if (offset != 0)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: tensor_write at offset %llu (one tensor a buffer)",
                               (unsigned long long)offset);
    if (atomic_load_explicit(&h->deferred, memory_order_relaxed))
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: tensor_write to a buffer whose last write is "
                               "still pending");
    int layout = x8_layout_for(t);
    bool whole = size == plain_bytes(t); /* the weight, not some other span */
    if (!whole || (layout == CPU_LAYOUT_PLAIN && !copy_eligible(t))) { /* kept as it is, now */
        if (size > h->capacity)
            return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: %llu bytes into a buffer of %llu",
                                   (unsigned long long)size, (unsigned long long)h->capacity);
        memcpy(buffer_data(h), src, (size_t)size);
        h->layout = CPU_LAYOUT_PLAIN;
        return TPORT_STATUS_OK;
    }
    if (size > h->capacity || own_bytes(t, layout) > h->capacity)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: buffer too small for %s",
                               t->name ? t->name : "a weight");
    h->layout = (uint32_t)layout;
    h->K = t->ne[0];
    /* a plain copy goes by rows; a stack's experts' groups follow each other */
    h->groups = layout == CPU_LAYOUT_PLAIN ? plain_rows(t) : t->ne[1] / 8 * t->ne[2];
    h->row_bytes = (size_t)t->nb[1];
    if (t->ne[2] > 1 && !h->stack_bytes) {
        h->stack_bytes = own_bytes(t, layout);
        pthread_mutex_lock(&stacks_lock);
        stacks_live += h->stack_bytes;
        pthread_mutex_unlock(&stacks_lock);
    }
    if (!ticket) { /* wanted done on return */
        encode_buffer(h, src);
        return TPORT_STATUS_OK;
    }
    pthread_mutex_lock(&deferred_lock);
    h->ticket = *ticket = ++last_ticket;
    h->next = NULL;
    if (queue_tail)
        queue_tail->next = h;
    else
        queue_head = h;
    queue_tail = h;
    atomic_store_explicit(&h->deferred, (const uint8_t *)src, memory_order_release);
    pthread_mutex_unlock(&deferred_lock);
    return TPORT_STATUS_OK;
}

/* The work is bounded (each queued weight re-encoded or copied once), so
 * the timeout is not needed to avoid a hang and is not applied. */
tport_status cpu_wait(void *backend, int32_t device, tport_ticket ticket, uint64_t timeout_ns) {
    (void)backend, (void)timeout_ns;
    if (device != 0)
        return cpu_host->error(TPORT_STATUS_INVALID_ARGUMENT, "cpu: no device %d", (int)device);
    pthread_mutex_lock(&deferred_lock);
    while (queue_head && queue_head->ticket <= ticket) {
        cpu_buffer *h = queue_head;
        encode_buffer(h, atomic_load_explicit(&h->deferred, memory_order_relaxed));
        unqueue(h);
    }
    pthread_mutex_unlock(&deferred_lock);
    return TPORT_STATUS_OK;
}

const void *cpu_weight_deferred(const tport_tensor_view *t) {
    if (!t || t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_1 || !t->buffer)
        return NULL;
    cpu_buffer *h = buffer_of(t->buffer);
    if (!h || t->offset != 0 || t->data != buffer_data(h)) /* declined by cpu_weight_layout */
        return NULL;
    return atomic_load_explicit(&h->deferred, memory_order_acquire);
}

int cpu_weight_layout(const tport_tensor_view *t) {
    if (!t || t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_1 || !t->buffer)
        return CPU_LAYOUT_PLAIN;
    cpu_buffer *h = buffer_of(t->buffer);
    if (!h || t->offset != 0 || t->data != buffer_data(h))
        return CPU_LAYOUT_UNKNOWN;
    return (int)h->layout;
}

/* Of a stack, row e ne[1] + r is expert e's row r (its groups follow the
 * previous expert's). */
void cpu_x8_row(const tport_tensor_view *t, int layout, int64_t row, uint8_t *out) {
    const uint8_t *g = (const uint8_t *)t->data + (size_t)(row / 8) * cpu_x8_group_bytes(layout, t->ne[0]);
    int r = (int)(row % 8);
    if (layout == CPU_LAYOUT_Q4_K_X8) {
        for (int64_t b = 0; b < t->ne[0] / 256; b++, g += 1184) {
            uint8_t *blk = out + (size_t)b * 144, sc[8], mn[8];
            memcpy(blk, g + 2 * r, 2);
            memcpy(blk + 2, g + 16 + 2 * r, 2);
            for (int j = 0; j < 8; j++) {
                sc[j] = g[32 + 8 * j + r];
                mn[j] = g[96 + 16 * (j / 2) + 2 * r + j % 2];
            }
            k4_pack_scales(sc, mn, blk + 4);
            for (int c = 0; c < 128 / S; c++)
                memcpy(blk + 16 + S * c, g + 160 + CHUNK * c + S * r, S);
        }
        return;
    }
    if (layout == CPU_LAYOUT_MXFP4_X8) {
        cpu_x8_mxfp4_row(g, r, t->ne[0] / 32, out);
        return;
    }
    if (layout == CPU_LAYOUT_Q6_K_X8) {
        cpu_x8_q6k_row(g, r, t->ne[0] / 256, out);
        return;
    }
    int qbytes = layout == CPU_LAYOUT_Q4_0_X8 ? 16 : 32;
    uint8_t xor = layout == CPU_LAYOUT_Q4_0_X8 ? 0 : CPU_X8_Q8_XOR;
    size_t bb = 2 + (size_t)qbytes, group_block = 16 + 8 * (size_t)qbytes;
    for (int64_t b = 0; b < t->ne[0] / 32; b++, g += group_block) {
        uint8_t *blk = out + (size_t)b * bb;
        memcpy(blk, g + 2 * r, 2);
        for (int j = 0; j < qbytes / S; j++)
            copy_xor(blk + 2 + S * j, g + 16 + CHUNK * j + S * r, xor);
    }
}
