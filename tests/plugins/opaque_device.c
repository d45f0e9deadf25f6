/* An "opaque device" for testing ABI 1.1: a backend whose memory the host
 * cannot address at all, built only against tport/backend.h.
 *
 * - Its bytes live in one region of pages kept PROT_NONE except while one of
 *   its own entry points (or its worker thread) runs: a host that
 *   dereferences device memory faults.
 * - Buffer handles are random 64-bit numbers; every tensor view it is given
 *   must name (buffer, offset) and carry no host pointer (counted).
 * - It runs every op a llama model needs with plain reference code of its
 *   own (operands in f32; quantized weights decoded with host->to_float).
 * - Counters (opaque_counters(), exported for the tests) prove that weights
 *   are written once and what moves per evaluation.
 *
 * Behaviour is chosen by environment variables read at init:
 *   TPORT_OPAQUE_ASYNC=1       tickets complete late on a worker thread; a
 *                              download's destination holds poison (NaN)
 *                              until then, an upload reads its source late
 *   TPORT_OPAQUE_DECLINE=a,b   op names it declines (e.g. rope)
 *   TPORT_OPAQUE_DECLINE_LATE  the same, read at every question (a test sets
 *                              it after the weights were placed)
 *   TPORT_OPAQUE_OOM_WEIGHTS=N the (N+1)th weight allocation fails
 *   TPORT_OPAQUE_LOST_AT=N     the Nth compute reports the device lost
 *   TPORT_OPAQUE_LOST_UPLOAD=N the Nth upload reports the device lost (at load)
 *   TPORT_OPAQUE_HANG_AT=N     the Nth asynchronous job never completes
 *   TPORT_OPAQUE_HOST_READABLE=1  it also reads operands in host memory
 *                              (TPORT_DEVICE_CAP_HOST_READABLE): the host
 *                              then stages nothing into it
 *   TPORT_OPAQUE_HOST_MEMORY=1 it negotiates ABI 1.0: a host-memory plug-in
 *                              computing on the host's pointers
 *   TPORT_OPAQUE_RECORD=1      it records a program per graph key and replays
 *                              it as a real device would: the recorded
 *                              structure, rebound to the new operands only
 *                              when the bind key changes.  A host that gives
 *                              two structures one key, or keeps a bind key
 *                              over new buffers, then gets wrong numbers.
 *   TPORT_OPAQUE_SUBSET=NAME   it claims only part of the work, as a vendor's
 *                              partial plug-in would:
 *                                mulmat-f32     F32 mul_mat, nothing else
 *                                mulmat-add-mul mul_mat of F32, F16 and Q8_0
 *                                               weights, F32 add and mul
 *                                no-cpy         everything but cpy
 *                                no-f16         every node with no F16
 *                                               operand or result
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "tport/backend.h"

#define REGION_BYTES (1ull << 30)
#define PAGE 4096ull
#define MAX_BUFFERS 4096
#define MAX_JOBS 256

typedef struct opaque_counters {
    uint64_t weight_writes, weight_buffers, other_writes, reads, fills, copies, computes;
    uint64_t host_pointers_seen; /* records that came with a host address */
    uint64_t bad_handles;        /* handles it never made */
    uint64_t jobs_late;          /* asynchronous jobs completed after return */
    uint64_t compiles;           /* graph keys seen for the first time ("recorded") */
    uint64_t replays;            /* computes of a key seen before */
    uint64_t forgets;            /* forget_graph calls */
} opaque_counters;

static const tport_host_api *host;

enum { SUBSET_ALL, SUBSET_MULMAT_F32, SUBSET_MULMAT_ADD_MUL, SUBSET_NO_CPY, SUBSET_NO_F16 };
static const char *const subset_names[] = {"", "mulmat-f32", "mulmat-add-mul", "no-cpy", "no-f16"};

typedef struct buf {
    tport_buffer handle;
    uint64_t start, size; /* offset into the region */
    bool weights;
} buf;

typedef struct job {
    int kind; /* 0 write, 1 read, 2 compute */
    void *dev;
    void *host_ptr;
    uint64_t size;
    tport_graph_view *graph; /* owned copy for compute */
} job;

typedef struct opaque {
    unsigned char *region;
    uint64_t used;
    buf bufs[MAX_BUFFERS];
    int n_bufs;
    uint64_t rng;
    opaque_counters c;
    /* protection: pages are readable only while someone of ours runs */
    pthread_mutex_t lock;
    int inside;
    /* behaviour */
    bool async;
    char decline[256];
    int subset; /* SUBSET_* */
    long oom_weights, lost_at, hang_at, lost_upload;
    bool lost;
    bool host_memory; /* negotiated 1.0: no device memory, host pointers */
    bool host_readable;
    /* the worker */
    pthread_t worker;
    bool worker_started, stop;
    pthread_cond_t cv, done_cv;
    job jobs[MAX_JOBS];
    uint64_t submitted, completed; /* ticket = submitted count */
    long n_jobs_total;
    uint64_t keys[256];            /* graph keys "recorded", a ring */
    int n_keys;
    bool record;                   /* TPORT_OPAQUE_RECORD */
    struct recording {
        uint64_t key, bind;
        tport_graph_view *program; /* owned copy */
    } recs[64];
    int n_recs;
} opaque;

static tport_graph_view *copy_graph(const tport_graph_view *g);
static void forget_recordings(opaque *o, uint64_t key);

static opaque_counters the_counters;
TPORT_BACKEND_EXPORT const opaque_counters *opaque_counters_get(void);
const opaque_counters *opaque_counters_get(void) { return &the_counters; }

/* Counters change on the host's thread and the worker's: under the lock. */
static void count(opaque *o, uint64_t *field) {
    pthread_mutex_lock(&o->lock);
    (*field)++;
    the_counters = o->c;
    pthread_mutex_unlock(&o->lock);
}

static void enter(opaque *o) {
    pthread_mutex_lock(&o->lock);
    if (o->inside++ == 0)
        mprotect(o->region, REGION_BYTES, PROT_READ | PROT_WRITE);
    pthread_mutex_unlock(&o->lock);
}

static void leave(opaque *o) {
    pthread_mutex_lock(&o->lock);
    if (--o->inside == 0)
        mprotect(o->region, REGION_BYTES, PROT_NONE);
    the_counters = o->c;
    pthread_mutex_unlock(&o->lock);
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : dflt;
}

static uint64_t next_random(opaque *o) {
    o->rng ^= o->rng << 13;
    o->rng ^= o->rng >> 7;
    o->rng ^= o->rng << 17;
    return o->rng;
}

static buf *find(opaque *o, tport_buffer h) {
    for (int i = 0; i < o->n_bufs; i++)
        if (o->bufs[i].handle == h)
            return &o->bufs[i];
    count(o, &o->c.bad_handles);
    return NULL;
}

/* The device address of (buffer, offset) for n bytes, or NULL. */
static unsigned char *addr(opaque *o, tport_buffer h, uint64_t off, uint64_t n) {
    buf *b = find(o, h);
    if (!b || off > b->size || n > b->size - off)
        return NULL;
    return o->region + b->start + off;
}

/* ---- the worker (asynchronous variant) ---------------------------------- */
static tport_status run_graph(opaque *o, const tport_graph_view *g);

static void run_job(opaque *o, job *j) {
    if (j->kind == 0)
        memcpy(j->dev, j->host_ptr, j->size); /* reads the host's source now */
    else if (j->kind == 1)
        memcpy(j->host_ptr, j->dev, j->size);
    else
        (void)run_graph(o, j->graph);
}

static void free_graph_copy(tport_graph_view *g) {
    if (!g)
        return;
    for (int32_t i = 0; i < g->n_tensors; i++)
        free((void *)g->tensors[i]);
    free((void *)g->tensors);
    free((void *)g->nodes);
    free(g);
}

static void *worker_main(void *arg) {
    opaque *o = arg;
    uint64_t delay_rng = 0x2545F4914F6CDD1Dull; /* its own: the host thread draws handles */
    pthread_mutex_lock(&o->lock);
    for (;;) {
        while (!o->stop && o->completed == o->submitted)
            pthread_cond_wait(&o->cv, &o->lock);
        if (o->stop)
            break;
        job j = o->jobs[o->completed % MAX_JOBS];
        long number = ++o->n_jobs_total;
        pthread_mutex_unlock(&o->lock);
        if (o->hang_at > 0 && number >= o->hang_at) {
            /* never completes: the host's wait must time out */
            pthread_mutex_lock(&o->lock);
            while (!o->stop)
                pthread_cond_wait(&o->cv, &o->lock);
            break;
        }
        delay_rng ^= delay_rng << 13;
        delay_rng ^= delay_rng >> 7;
        delay_rng ^= delay_rng << 17;
        struct timespec ts = {0, (long)(delay_rng % 300000)}; /* up to 0.3 ms late */
        nanosleep(&ts, NULL);
        enter(o);
        run_job(o, &j);
        leave(o);
        free_graph_copy(j.graph);
        pthread_mutex_lock(&o->lock);
        o->completed++;
        o->c.jobs_late++;
        pthread_cond_broadcast(&o->done_cv);
    }
    pthread_mutex_unlock(&o->lock);
    return NULL;
}

static tport_status submit(opaque *o, job j, tport_ticket *ticket) {
    pthread_mutex_lock(&o->lock);
    while (o->submitted - o->completed >= MAX_JOBS)
        pthread_cond_wait(&o->done_cv, &o->lock);
    o->jobs[o->submitted % MAX_JOBS] = j;
    *ticket = ++o->submitted;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->lock);
    return TPORT_STATUS_OK;
}

/* ---- the table -------------------------------------------------------- */
static int32_t opaque_score(void) { return 500; }

static tport_backend_api table;

static tport_status opaque_init(void **state) {
    opaque *o = calloc(1, sizeof *o);
    if (!o)
        return host->error(TPORT_STATUS_OUT_OF_MEMORY, "opaque: out of memory");
    o->region = mmap(NULL, REGION_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (o->region == MAP_FAILED) {
        free(o);
        return host->error(TPORT_STATUS_OUT_OF_MEMORY, "opaque: cannot reserve its memory");
    }
    pthread_mutex_init(&o->lock, NULL);
    pthread_cond_init(&o->cv, NULL);
    pthread_cond_init(&o->done_cv, NULL);
    o->rng = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull | 1;
    o->async = env_long("TPORT_OPAQUE_ASYNC", 0) != 0;
    const char *d = getenv("TPORT_OPAQUE_DECLINE");
    snprintf(o->decline, sizeof o->decline, ",%s,", d ? d : "");
    o->oom_weights = env_long("TPORT_OPAQUE_OOM_WEIGHTS", -1);
    o->lost_at = env_long("TPORT_OPAQUE_LOST_AT", 0);
    o->hang_at = env_long("TPORT_OPAQUE_HANG_AT", 0);
    o->lost_upload = env_long("TPORT_OPAQUE_LOST_UPLOAD", 0);
    o->host_readable = env_long("TPORT_OPAQUE_HOST_READABLE", 0) != 0;
    o->record = env_long("TPORT_OPAQUE_RECORD", 0) != 0;
    const char *subset = getenv("TPORT_OPAQUE_SUBSET");
    for (int i = 1; subset && *subset && i < (int)(sizeof subset_names / sizeof subset_names[0]); i++)
        if (!strcmp(subset, subset_names[i]))
            o->subset = i;
    if (subset && *subset && !o->subset) {
        munmap(o->region, REGION_BYTES);
        free(o);
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: unknown TPORT_OPAQUE_SUBSET '%s'", subset);
    }
    /* a 1.0 host knows nothing of device memory: work on its pointers */
    o->host_memory = table.abi_minor < 1;
    if (o->host_memory)
        o->async = false;
    if (o->async) {
        if (pthread_create(&o->worker, NULL, worker_main, o) != 0) {
            munmap(o->region, REGION_BYTES);
            free(o);
            return host->error(TPORT_STATUS_ERROR, "opaque: cannot start its worker");
        }
        o->worker_started = true;
    }
    *state = o;
    return TPORT_STATUS_OK;
}

static void opaque_shutdown(void *state) {
    opaque *o = state;
    if (o->worker_started) {
        pthread_mutex_lock(&o->lock);
        o->stop = true;
        pthread_cond_broadcast(&o->cv);
        pthread_mutex_unlock(&o->lock);
        pthread_join(o->worker, NULL);
        for (uint64_t t = o->completed; t < o->submitted; t++)
            free_graph_copy(o->jobs[t % MAX_JOBS].graph);
    }
    forget_recordings(o, 0);
    munmap(o->region, REGION_BYTES);
    pthread_mutex_destroy(&o->lock);
    pthread_cond_destroy(&o->cv);
    pthread_cond_destroy(&o->done_cv);
    free(o);
}

static int32_t opaque_device_count(void *state) {
    (void)state;
    return 1;
}

static tport_status opaque_device_info(void *state, int32_t device, tport_device_info *out) {
    opaque *o = state;
    if (device != 0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: no device %d", (int)device);
    tport_device_info info = {.kind = TPORT_DEVICE_ACCEL, .memory_total = REGION_BYTES,
                              .memory_free = REGION_BYTES - o->used,
                              .caps = TPORT_DEVICE_CAP_DEVICE_MEMORY | (o->async ? TPORT_DEVICE_CAP_ASYNC : 0) |
                                      (o->host_readable ? TPORT_DEVICE_CAP_HOST_READABLE : 0),
                              .mem_alignment = 256, .max_buffer_size = REGION_BYTES / 2};
    snprintf(info.name, sizeof info.name, "opaque0");
    snprintf(info.description, sizeof info.description, "test device whose memory the host cannot address%s",
             o->async ? " (asynchronous)" : "");
    size_t n = out->struct_size < sizeof info ? out->struct_size : sizeof info;
    info.struct_size = out->struct_size;
    memcpy(out, &info, n);
    return TPORT_STATUS_OK;
}

static const char *op_name(tport_op_id op) {
    static const char *names[] = {"none", "get_rows", "add", "mul", "scale", "mul_mat", "rms_norm", "norm",
                                  "rope", "soft_max", "silu", "gelu", "swiglu", "cpy", "cont", "concat"};
    if (op == TPORT_OP_FLASH_ATTN)
        return "flash_attn";
    return op < sizeof names / sizeof names[0] ? names[op] : "?";
}

static bool is_f32(const tport_tensor_view *t) { return t->type == TPORT_TYPE_F32; }

/* Whether the node falls inside the part of the work TPORT_OPAQUE_SUBSET
 * claims (the op's own checks come after). */
static bool in_subset(const opaque *o, const tport_graph_view *g, const tport_tensor_view *t) {
    const tport_tensor_view *a = t->src[0] >= 0 ? g->tensors[t->src[0]] : NULL;
    switch (o->subset) {
    case SUBSET_MULMAT_F32:
        return t->op == TPORT_OP_MUL_MAT && a && is_f32(a);
    case SUBSET_MULMAT_ADD_MUL:
        if (t->op == TPORT_OP_MUL_MAT)
            return a && (a->type == TPORT_TYPE_F32 || a->type == TPORT_TYPE_F16 || a->type == TPORT_TYPE_Q8_0);
        return t->op == TPORT_OP_ADD || t->op == TPORT_OP_MUL;
    case SUBSET_NO_CPY:
        return t->op != TPORT_OP_CPY;
    case SUBSET_NO_F16:
        if (t->type == TPORT_TYPE_F16)
            return false;
        for (int s = 0; s < TPORT_MAX_SRC; s++)
            if (t->src[s] >= 0 && g->tensors[t->src[s]]->type == TPORT_TYPE_F16)
                return false;
        return true;
    default:
        return true;
    }
}

static bool opaque_supports_op(void *state, int32_t device, const tport_graph_view *g, int32_t node) {
    opaque *o = state;
    const tport_tensor_view *t = g->tensors[node];
    if (device != 0 || (t->op > TPORT_OP_CONCAT && t->op != TPORT_OP_FLASH_ATTN) || t->op == TPORT_OP_NONE)
        return false;
    char key[32];
    snprintf(key, sizeof key, ",%s,", op_name(t->op));
    const char *late = getenv("TPORT_OPAQUE_DECLINE_LATE");
    if (strstr(o->decline, key) || (late && strstr(late, op_name(t->op))) || !in_subset(o, g, t))
        return false;
    const tport_tensor_view *a = t->src[0] >= 0 ? g->tensors[t->src[0]] : NULL;
    if (!a)
        return false;
    switch (t->op) {
    case TPORT_OP_GET_ROWS:
    case TPORT_OP_MUL_MAT: {
        const tport_type_info *ti = host->type_info(a->type);
        /* op_get_rows gathers from one matrix: not rows per batch (dims 2, 3) */
        if (t->op == TPORT_OP_GET_ROWS && (t->ne[2] != 1 || t->ne[3] != 1))
            return false;
        return ti && is_f32(t) && a->nb[0] == ti->block_bytes;
    }
    case TPORT_OP_CPY:
        return is_f32(a) && (t->type == TPORT_TYPE_F32 || t->type == TPORT_TYPE_F16);
    case TPORT_OP_FLASH_ATTN: {
        const tport_tensor_view *k = t->src[1] >= 0 ? g->tensors[t->src[1]] : NULL;
        const tport_tensor_view *v = t->src[2] >= 0 ? g->tensors[t->src[2]] : NULL;
        const tport_tensor_view *m = t->src[3] >= 0 ? g->tensors[t->src[3]] : NULL;
        return is_f32(t) && is_f32(a) && k && v && k->type == v->type && t->params_size >= sizeof(float) &&
               (k->type == TPORT_TYPE_F32 || k->type == TPORT_TYPE_F16) && k->ne[0] <= 1024 &&
               a->ne[1] % k->ne[2] == 0 && (!m || is_f32(m));
    }
    default:
        return is_f32(t) && is_f32(a);
    }
}

/* ---- memory slots --------------------------------------------------------- */
static tport_status opaque_buffer_alloc(void *state, int32_t device, uint32_t kind, uint32_t usage, uint64_t size,
                                        tport_buffer *out, void **host_ptr) {
    opaque *o = state;
    *host_ptr = NULL;
    if (device != 0 || kind != TPORT_MEM_DEVICE)
        return host->error(TPORT_STATUS_UNSUPPORTED, "opaque: only device memory");
    if (o->lost)
        return host->error(TPORT_STATUS_DEVICE_LOST, "opaque: device lost");
    if (usage == TPORT_USAGE_WEIGHTS && o->oom_weights >= 0 && (long)o->c.weight_buffers >= o->oom_weights)
        return host->error(TPORT_STATUS_OUT_OF_MEMORY, "opaque: out of device memory (injected)");
    uint64_t bytes = (size + PAGE - 1) / PAGE * PAGE;
    if (!bytes)
        bytes = PAGE;
    /* first fit in the gaps between live buffers (kept sorted by start) */
    uint64_t at = 0;
    int pos = 0;
    for (; pos < o->n_bufs; pos++) {
        if (o->bufs[pos].start - at >= bytes)
            break;
        at = o->bufs[pos].start + (o->bufs[pos].size + PAGE - 1) / PAGE * PAGE;
    }
    if (o->n_bufs == MAX_BUFFERS || at + bytes > REGION_BYTES)
        return host->error(TPORT_STATUS_OUT_OF_MEMORY, "opaque: out of device memory for %llu bytes",
                           (unsigned long long)size);
    memmove(&o->bufs[pos + 1], &o->bufs[pos], (size_t)(o->n_bufs - pos) * sizeof o->bufs[0]);
    tport_buffer h;
    do
        h = next_random(o);
    while (!h);
    o->bufs[pos] = (buf){.handle = h, .start = at, .size = size, .weights = usage == TPORT_USAGE_WEIGHTS};
    o->n_bufs++;
    o->used += bytes;
    if (usage == TPORT_USAGE_WEIGHTS)
        count(o, &o->c.weight_buffers);
    *out = h;
    return TPORT_STATUS_OK;
}

static void opaque_buffer_free(void *state, tport_buffer h) {
    opaque *o = state;
    for (int i = 0; i < o->n_bufs; i++)
        if (o->bufs[i].handle == h) {
            o->used -= (o->bufs[i].size + PAGE - 1) / PAGE * PAGE;
            memmove(&o->bufs[i], &o->bufs[i + 1], (size_t)(o->n_bufs - i - 1) * sizeof o->bufs[0]);
            o->n_bufs--;
            return;
        }
    count(o, &o->c.bad_handles);
}

static tport_status transfer(opaque *o, int kind, tport_buffer h, uint64_t off, const tport_tensor_view *t,
                             void *host_ptr, uint64_t size, tport_ticket *ticket) {
    if (o->lost)
        return host->error(TPORT_STATUS_DEVICE_LOST, "opaque: device lost");
    if (ticket)
        *ticket = 0;
    buf *b = find(o, h);
    if (!b || off > b->size || size > b->size - off)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: %llu bytes at %llu outside buffer",
                           (unsigned long long)size, (unsigned long long)off);
    if (t && t->data)
        count(o, &o->c.host_pointers_seen);
    if (kind == 1 && b->weights)
        return host->error(TPORT_STATUS_UNSUPPORTED, "opaque: weights are kept in its own layout");
    if (kind == 0 && o->lost_upload > 0 && (long)(o->c.weight_writes + o->c.other_writes + 1) >= o->lost_upload) {
        o->lost = true;
        return host->error(TPORT_STATUS_DEVICE_LOST, "opaque: device lost (injected at upload %ld)", o->lost_upload);
    }
    if (kind == 0) {
        if (b->weights)
            count(o, &o->c.weight_writes);
        else
            count(o, &o->c.other_writes);
    } else {
        count(o, &o->c.reads);
    }
    unsigned char *dev = o->region + b->start + off;
    if (o->async && ticket) {
        if (kind == 1) /* the destination is garbage until the ticket is done */
            for (uint64_t i = 0; i + 4 <= size; i += 4)
                memcpy((unsigned char *)host_ptr + i, &(float){NAN}, 4);
        return submit(o, (job){.kind = kind, .dev = dev, .host_ptr = host_ptr, .size = size}, ticket);
    }
    enter(o);
    if (kind == 0)
        memcpy(dev, host_ptr, size);
    else
        memcpy(host_ptr, dev, size);
    leave(o);
    return TPORT_STATUS_OK;
}

static tport_status opaque_tensor_write(void *state, tport_buffer h, uint64_t off, const tport_tensor_view *t,
                                        const void *src, uint64_t size, tport_ticket *ticket) {
    return transfer(state, 0, h, off, t, (void *)src, size, ticket);
}

static tport_status opaque_tensor_read(void *state, tport_buffer h, uint64_t off, const tport_tensor_view *t,
                                       void *dst, uint64_t size, tport_ticket *ticket) {
    return transfer(state, 1, h, off, t, dst, size, ticket);
}

static tport_status opaque_buffer_fill(void *state, tport_buffer h, uint64_t off, uint64_t size, uint8_t value,
                                       tport_ticket *ticket) {
    opaque *o = state;
    if (ticket)
        *ticket = 0;
    if (o->async && ticket && o->submitted > o->completed) { /* in order: after what is pending */
        pthread_mutex_lock(&o->lock);
        while (o->completed < o->submitted)
            pthread_cond_wait(&o->done_cv, &o->lock);
        pthread_mutex_unlock(&o->lock);
    }
    enter(o);
    unsigned char *p = addr(o, h, off, size);
    if (p)
        memset(p, value, size);
    count(o, &o->c.fills);
    leave(o);
    return p ? TPORT_STATUS_OK : host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: fill outside buffer");
}

static tport_status opaque_wait(void *state, int32_t device, tport_ticket ticket, uint64_t timeout_ns) {
    opaque *o = state;
    (void)device;
    if (o->lost)
        return host->error(TPORT_STATUS_DEVICE_LOST, "opaque: device lost");
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    uint64_t ns = (uint64_t)until.tv_nsec + timeout_ns % 1000000000ull;
    until.tv_sec += (time_t)(timeout_ns / 1000000000ull + ns / 1000000000ull);
    until.tv_nsec = (long)(ns % 1000000000ull);
    pthread_mutex_lock(&o->lock);
    int rc = 0;
    while (o->completed < ticket && rc == 0)
        rc = pthread_cond_timedwait(&o->done_cv, &o->lock, &until);
    bool done = o->completed >= ticket;
    pthread_mutex_unlock(&o->lock);
    return done ? TPORT_STATUS_OK : host->error(TPORT_STATUS_TIMEOUT, "opaque: ticket %llu not done",
                                                 (unsigned long long)ticket);
}

/* ---- compute: plain reference kernels over device memory ---------------- */
typedef struct ten {
    const tport_tensor_view *v;
    unsigned char *p;
} ten;

static float *f32_at(const ten *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const tport_tensor_view *v = t->v;
    return (float *)(t->p + i0 * (int64_t)v->nb[0] + i1 * (int64_t)v->nb[1] + i2 * (int64_t)v->nb[2] +
                     i3 * (int64_t)v->nb[3]);
}

/* Row (i1, i2, i3) of a tensor of any type, decoded into out[ne0]. */
static tport_status row_f32(const ten *t, int64_t i1, int64_t i2, int64_t i3, float *out) {
    const tport_tensor_view *v = t->v;
    if (v->type == TPORT_TYPE_F32) {
        for (int64_t i = 0; i < v->ne[0]; i++)
            out[i] = *f32_at(t, i, i1, i2, i3);
        return TPORT_STATUS_OK;
    }
    const void *row = t->p + i1 * (int64_t)v->nb[1] + i2 * (int64_t)v->nb[2] + i3 * (int64_t)v->nb[3];
    return host->to_float(v->type, row, out, v->ne[0]);
}

#define FOR4(t) \
    for (int64_t i3 = 0; i3 < (t)->ne[3]; i3++) \
        for (int64_t i2 = 0; i2 < (t)->ne[2]; i2++) \
            for (int64_t i1 = 0; i1 < (t)->ne[1]; i1++)

static tport_status op_mul_mat(const ten *d, const ten *a, const ten *b) {
    const tport_tensor_view *A = a->v, *D = d->v;
    const tport_type_info *ti = host->type_info(A->type);
    int64_t k = A->ne[0];
    float *wa = malloc((size_t)k * sizeof *wa), *xb = malloc((size_t)k * sizeof *xb);
    void *q = malloc((size_t)k * 4 + 64);
    tport_status st = wa && xb && q ? TPORT_STATUS_OK : host->error(TPORT_STATUS_OUT_OF_MEMORY, "opaque: oom");
    for (int64_t i3 = 0; i3 < D->ne[3] && !st; i3++)
        for (int64_t i2 = 0; i2 < D->ne[2] && !st; i2++)
            for (int64_t j = 0; j < D->ne[1] && !st; j++) {
                st = row_f32(b, j, i2, i3, xb);
                /* activations rounded as the CPU does for this weight type */
                if (!st && ti && ti->vec_dot_type != TPORT_TYPE_F32 &&
                    host->from_float(ti->vec_dot_type, xb, q, k) == TPORT_STATUS_OK)
                    st = host->to_float(ti->vec_dot_type, q, xb, k);
                int64_t a2 = i2 / (D->ne[2] / A->ne[2]), a3 = i3 / (D->ne[3] / A->ne[3]);
                for (int64_t i = 0; i < D->ne[0] && !st; i++) {
                    st = row_f32(a, i, a2, a3, wa);
                    double s = 0;
                    for (int64_t e = 0; e < k; e++)
                        s += (double)wa[e] * xb[e];
                    *f32_at(d, i, j, i2, i3) = (float)s;
                }
            }
    free(wa);
    free(xb);
    free(q);
    return st;
}

static tport_status op_rope(const ten *d, const ten *a, const ten *pos, const tport_params_rope *p) {
    const tport_tensor_view *D = d->v;
    int64_t nd = p->n_dims;
    FOR4(D) {
        int32_t position = *(const int32_t *)(pos->p + i2 * (int64_t)pos->v->nb[0]);
        for (int64_t i0 = 0; i0 < D->ne[0]; i0++)
            *f32_at(d, i0, i1, i2, i3) = *f32_at(a, i0, i1, i2, i3);
        for (int64_t i = 0; i < nd / 2; i++) {
            double theta = (double)position * p->freq_scale * pow((double)p->freq_base, -2.0 * (double)i / (double)nd);
            float c = (float)cos(theta), s = (float)sin(theta);
            int64_t x0 = p->mode == TPORT_ROPE_NEOX ? i : 2 * i, x1 = p->mode == TPORT_ROPE_NEOX ? i + nd / 2 : 2 * i + 1;
            float u = *f32_at(a, x0, i1, i2, i3), v = *f32_at(a, x1, i1, i2, i3);
            *f32_at(d, x0, i1, i2, i3) = u * c - v * s;
            *f32_at(d, x1, i1, i2, i3) = u * s + v * c;
        }
    }
    return TPORT_STATUS_OK;
}

static tport_status op_soft_max(const ten *d, const ten *a, const ten *mask, float scale) {
    const tport_tensor_view *D = d->v;
    FOR4(D) {
        float mx = -INFINITY;
        for (int64_t i = 0; i < D->ne[0]; i++) {
            float x = *f32_at(a, i, i1, i2, i3) * scale;
            if (mask->p)
                x += *f32_at(mask, i, i1 % mask->v->ne[1], 0, 0);
            *f32_at(d, i, i1, i2, i3) = x;
            mx = x > mx ? x : mx;
        }
        double sum = 0;
        for (int64_t i = 0; i < D->ne[0]; i++) {
            float e = expf(*f32_at(d, i, i1, i2, i3) - mx);
            *f32_at(d, i, i1, i2, i3) = e;
            sum += e;
        }
        for (int64_t i = 0; i < D->ne[0]; i++)
            *f32_at(d, i, i1, i2, i3) = (float)(*f32_at(d, i, i1, i2, i3) / sum);
    }
    return TPORT_STATUS_OK;
}

/* softmax(scale q.k_j + mask) weighted sum of v_j, per query head and token */
static tport_status op_flash_attn(const ten *d, const ten *q, const ten *k, const ten *v, const ten *mask,
                                  float scale) {
    const tport_tensor_view *D = d->v, *K = k->v;
    int64_t hd = D->ne[0], n_kv = K->ne[1], group = D->ne[1] / K->ne[2];
    float *s = malloc((size_t)n_kv * sizeof *s), kr[1024];
    if (!s)
        return host->error(TPORT_STATUS_OUT_OF_MEMORY, "opaque: out of memory");
    tport_status st = TPORT_STATUS_OK;
    for (int64_t t = 0; t < D->ne[2] && !st; t++)
        for (int64_t h = 0; h < D->ne[1] && !st; h++) {
            float mx = -INFINITY;
            for (int64_t j = 0; j < n_kv && !st; j++) {
                st = row_f32(k, j, h / group, 0, kr);
                double dot = 0;
                for (int64_t i = 0; i < hd; i++)
                    dot += (double)*f32_at(q, i, h, t, 0) * kr[i];
                s[j] = (float)dot * scale + (mask->p ? *f32_at(mask, j, t, 0, 0) : 0.0f);
                mx = s[j] > mx ? s[j] : mx;
            }
            double sum = 0;
            for (int64_t j = 0; j < n_kv; j++) {
                s[j] = mx == -INFINITY ? 0.0f : expf(s[j] - mx);
                sum += s[j];
            }
            for (int64_t i = 0; i < hd; i++)
                *f32_at(d, i, h, t, 0) = 0.0f;
            for (int64_t j = 0; j < n_kv && !st && sum > 0; j++) {
                st = row_f32(v, j, h / group, 0, kr);
                for (int64_t i = 0; i < hd; i++)
                    *f32_at(d, i, h, t, 0) += (float)(s[j] / sum) * kr[i];
            }
        }
    free(s);
    return st;
}

static tport_status op_norm(const ten *d, const ten *a, float eps, bool rms) {
    const tport_tensor_view *D = d->v;
    FOR4(D) {
        double mean = 0, var = 0;
        int64_t n = D->ne[0];
        if (!rms) {
            for (int64_t i = 0; i < n; i++)
                mean += *f32_at(a, i, i1, i2, i3);
            mean /= (double)n;
        }
        for (int64_t i = 0; i < n; i++) {
            double x = *f32_at(a, i, i1, i2, i3) - mean;
            var += x * x;
        }
        float scale = (float)(1.0 / sqrt(var / (double)n + eps));
        for (int64_t i = 0; i < n; i++)
            *f32_at(d, i, i1, i2, i3) = (float)(*f32_at(a, i, i1, i2, i3) - mean) * scale;
    }
    return TPORT_STATUS_OK;
}

static float unary(tport_op_id op, float x, float y, float scale) {
    switch (op) {
    case TPORT_OP_SILU: return x / (1.0f + expf(-x));
    case TPORT_OP_GELU: return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    case TPORT_OP_SWIGLU: return x / (1.0f + expf(-x)) * y;
    case TPORT_OP_SCALE: return x * scale;
    case TPORT_OP_ADD: return x + y;
    case TPORT_OP_MUL: return x * y;
    default: return x;
    }
}

static tport_status op_elementwise(const ten *d, const ten *a, const ten *b, tport_op_id op, float scale) {
    const tport_tensor_view *D = d->v;
    FOR4(D) for (int64_t i0 = 0; i0 < D->ne[0]; i0++) {
        float y = 0;
        if (b->p) {
            const tport_tensor_view *B = b->v;
            y = *f32_at(b, i0 % B->ne[0], i1 % B->ne[1], i2 % B->ne[2], i3 % B->ne[3]);
        }
        *f32_at(d, i0, i1, i2, i3) = unary(op, *f32_at(a, i0, i1, i2, i3), y, scale);
    }
    return TPORT_STATUS_OK;
}

/* cpy and cont: element order of the source, layout of the destination */
static tport_status op_copy(const ten *d, const ten *a) {
    const tport_tensor_view *D = d->v, *A = a->v;
    int64_t n = A->ne[0] * A->ne[1] * A->ne[2] * A->ne[3];
    for (int64_t e = 0; e < n; e++) {
        int64_t s0 = e % A->ne[0], s1 = e / A->ne[0] % A->ne[1], s2 = e / (A->ne[0] * A->ne[1]) % A->ne[2],
                s3 = e / (A->ne[0] * A->ne[1] * A->ne[2]);
        int64_t d0 = e % D->ne[0], d1 = e / D->ne[0] % D->ne[1], d2 = e / (D->ne[0] * D->ne[1]) % D->ne[2],
                d3 = e / (D->ne[0] * D->ne[1] * D->ne[2]);
        float x = *f32_at(a, s0, s1, s2, s3);
        unsigned char *dst = d->p + d0 * (int64_t)D->nb[0] + d1 * (int64_t)D->nb[1] + d2 * (int64_t)D->nb[2] +
                             d3 * (int64_t)D->nb[3];
        if (D->type == TPORT_TYPE_F32)
            memcpy(dst, &x, 4);
        else if (host->from_float(D->type, &x, dst, 1) != TPORT_STATUS_OK)
            return host->error(TPORT_STATUS_UNSUPPORTED, "opaque: cpy to type %u", D->type);
    }
    return TPORT_STATUS_OK;
}

static tport_status op_get_rows(const ten *d, const ten *a, const ten *ids) {
    const tport_tensor_view *D = d->v;
    for (int64_t r = 0; r < D->ne[1]; r++) {
        int32_t id = *(const int32_t *)(ids->p + r * (int64_t)ids->v->nb[0]);
        if (id < 0 || id >= a->v->ne[1])
            return host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: row %d out of range", (int)id);
        tport_status st = row_f32(a, id, 0, 0, f32_at(d, 0, r, 0, 0));
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}

static tport_status op_concat(const ten *d, const ten *a, const ten *b, int dim) {
    const tport_tensor_view *D = d->v;
    FOR4(D) for (int64_t i0 = 0; i0 < D->ne[0]; i0++) {
        int64_t idx[4] = {i0, i1, i2, i3};
        const ten *s = idx[dim] < a->v->ne[dim] ? a : b;
        if (s == b)
            idx[dim] -= a->v->ne[dim];
        *f32_at(d, i0, i1, i2, i3) = *f32_at(s, idx[0], idx[1], idx[2], idx[3]);
    }
    return TPORT_STATUS_OK;
}

static tport_status resolve(opaque *o, const tport_tensor_view *v, ten *t) {
    t->v = v;
    t->p = NULL;
    if (!v)
        return TPORT_STATUS_OK;
    if (o->host_memory) {
        t->p = v->data;
        return t->p ? TPORT_STATUS_OK : host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: '%s' has no data", v->name);
    }
    if (o->host_readable && !v->buffer && v->data) {
        t->p = v->data; /* an operand in host memory, read in place */
        return TPORT_STATUS_OK;
    }
    if (v->data)
        count(o, &o->c.host_pointers_seen);
    if (!v->buffer)
        return host->error(TPORT_STATUS_NOT_ADDRESSABLE, "opaque: '%s' is not in device memory", v->name);
    t->p = addr(o, v->buffer, v->offset, 0);
    return t->p ? TPORT_STATUS_OK : host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: bad buffer for '%s'", v->name);
}

static tport_status run_node(opaque *o, const tport_graph_view *g, int32_t idx) {
    const tport_tensor_view *t = g->tensors[idx];
    ten d, s[TPORT_MAX_SRC];
    tport_status st = resolve(o, t, &d);
    for (int i = 0; i < TPORT_MAX_SRC && !st; i++)
        st = resolve(o, t->src[i] >= 0 ? g->tensors[t->src[i]] : NULL, &s[i]);
    if (st)
        return st;
    float scale = t->params && t->params_size >= 4 ? *(const float *)t->params : 1.0f;
    switch (t->op) {
    case TPORT_OP_GET_ROWS: return op_get_rows(&d, &s[0], &s[1]);
    case TPORT_OP_MUL_MAT: return op_mul_mat(&d, &s[0], &s[1]);
    case TPORT_OP_RMS_NORM: return op_norm(&d, &s[0], scale, true);
    case TPORT_OP_NORM: return op_norm(&d, &s[0], scale, false);
    case TPORT_OP_ROPE:
        if (t->params_size < sizeof(tport_params_rope))
            return host->error(TPORT_STATUS_INVALID_ARGUMENT, "opaque: rope parameters");
        return op_rope(&d, &s[0], &s[1], t->params);
    case TPORT_OP_SOFT_MAX: return op_soft_max(&d, &s[0], &s[1], scale);
    case TPORT_OP_FLASH_ATTN: return op_flash_attn(&d, &s[0], &s[1], &s[2], &s[3], scale);
    case TPORT_OP_CPY:
    case TPORT_OP_CONT: return op_copy(&d, &s[0]);
    case TPORT_OP_CONCAT: return op_concat(&d, &s[0], &s[1], t->params_size >= 4 ? *(const int32_t *)t->params : 0);
    default: return op_elementwise(&d, &s[0], &s[1], t->op, scale);
    }
}

static tport_status run_graph(opaque *o, const tport_graph_view *g) {
    for (int32_t i = 0; i < g->n_nodes; i++) {
        tport_status st = run_node(o, g, g->nodes[i]);
        if (st)
            return st;
    }
    return TPORT_STATUS_OK;
}

/* TPORT_OPAQUE_RECORD: the program to run for g.  A key seen before runs
 * what was recorded for it (rebound to g's operands when the bind key
 * changed, as a device would update its descriptors); a new key is
 * recorded and g runs as given. */
static const tport_graph_view *recorded_program(opaque *o, const tport_graph_view *g) {
    if (!o->record || g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_1 || o->host_memory)
        return g;
    for (int i = 0; i < o->n_recs && i < 64; i++) {
        struct recording *r = &o->recs[i];
        if (!r->program || r->key != g->graph_key)
            continue;
        if (r->bind != g->bind_key) {
            int32_t n = r->program->n_tensors < g->n_tensors ? r->program->n_tensors : g->n_tensors;
            for (int32_t k = 0; k < n; k++) {
                tport_tensor_view *t = (tport_tensor_view *)r->program->tensors[k];
                t->buffer = g->tensors[k]->buffer;
                t->offset = g->tensors[k]->offset;
                t->data = g->tensors[k]->data;
            }
            r->bind = g->bind_key;
        }
        return r->program;
    }
    struct recording *r = &o->recs[o->n_recs++ % 64];
    free_graph_copy(r->program);
    *r = (struct recording){.key = g->graph_key, .bind = g->bind_key, .program = copy_graph(g)};
    return g;
}

static void forget_recordings(opaque *o, uint64_t key) {
    for (int i = 0; i < 64; i++)
        if (o->recs[i].program && (key == 0 || o->recs[i].key == key)) {
            free_graph_copy(o->recs[i].program);
            o->recs[i].program = NULL;
        }
}

/* What a real device would do on a new key: record (compile) the graph. */
static void note_key(opaque *o, const tport_graph_view *g) {
    if (g->struct_size < TPORT_GRAPH_VIEW_SIZE_1_1 || o->host_memory)
        return;
    for (int i = 0; i < o->n_keys && i < 256; i++)
        if (o->keys[i] == g->graph_key) {
            count(o, &o->c.replays);
            return;
        }
    o->keys[o->n_keys++ % 256] = g->graph_key;
    count(o, &o->c.compiles);
}

static void opaque_forget_graph(void *state, int32_t device, uint64_t key) {
    opaque *o = state;
    (void)device;
    for (int i = 0; i < o->n_keys && i < 256; i++)
        if (key == 0 || o->keys[i] == key)
            o->keys[i] = 0;
    forget_recordings(o, key);
    count(o, &o->c.forgets);
}

static tport_status lost_check(opaque *o, const tport_graph_view *g) {
    note_key(o, g);
    count(o, &o->c.computes);
    if (o->lost || (o->lost_at > 0 && (long)o->c.computes >= o->lost_at)) {
        o->lost = true;
        return host->error(TPORT_STATUS_DEVICE_LOST, "opaque: device lost (injected at compute %ld)", o->lost_at);
    }
    return TPORT_STATUS_OK;
}

static tport_status opaque_compute(void *state, int32_t device, const tport_graph_view *g) {
    opaque *o = state;
    (void)device;
    tport_status st = lost_check(o, g);
    if (st)
        return st;
    if (o->async) { /* in order: after what is pending */
        pthread_mutex_lock(&o->lock);
        while (o->completed < o->submitted)
            pthread_cond_wait(&o->done_cv, &o->lock);
        pthread_mutex_unlock(&o->lock);
    }
    const tport_graph_view *program = recorded_program(o, g);
    enter(o);
    st = run_graph(o, program);
    leave(o);
    return st;
}

/* The graph must outlive the call: copy what the worker reads. */
static tport_graph_view *copy_graph(const tport_graph_view *g) {
    tport_graph_view *c = calloc(1, sizeof *c);
    tport_tensor_view **ts = c ? calloc((size_t)g->n_tensors, sizeof *ts) : NULL;
    int32_t *nodes = ts ? malloc((size_t)g->n_nodes * sizeof *nodes) : NULL;
    if (!nodes) {
        free(c);
        free(ts);
        return NULL;
    }
    *c = *g;
    for (int32_t i = 0; i < g->n_tensors; i++) {
        size_t extra = g->tensors[i]->params_size;
        ts[i] = malloc(sizeof **ts + extra);
        if (!ts[i]) {
            c->tensors = (const tport_tensor_view *const *)ts;
            c->n_tensors = i;
            c->nodes = nodes;
            free_graph_copy(c);
            return NULL;
        }
        *ts[i] = *g->tensors[i];
        if (extra) {
            memcpy(ts[i] + 1, g->tensors[i]->params, extra);
            ts[i]->params = ts[i] + 1;
        }
        ts[i]->name = "";
    }
    memcpy(nodes, g->nodes, (size_t)g->n_nodes * sizeof *nodes);
    c->tensors = (const tport_tensor_view *const *)ts;
    c->nodes = nodes;
    return c;
}

static tport_status opaque_compute_async(void *state, int32_t device, const tport_graph_view *g, tport_ticket *ticket) {
    opaque *o = state;
    *ticket = 0;
    if (!o->async)
        return opaque_compute(state, device, g);
    tport_status st = lost_check(o, g);
    if (st)
        return st;
    for (int32_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i]->data)
            count(o, &o->c.host_pointers_seen);
    tport_graph_view *c = copy_graph(recorded_program(o, g));
    if (!c)
        return host->error(TPORT_STATUS_OUT_OF_MEMORY, "opaque: out of memory");
    return submit(o, (job){.kind = 2, .graph = c}, ticket);
}

static tport_backend_api table = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .name = "opaque",
    .version = "test",
    .score = opaque_score,
    .init = opaque_init,
    .shutdown = opaque_shutdown,
    .device_count = opaque_device_count,
    .device_info = opaque_device_info,
    .supports_op = opaque_supports_op,
    .compute = opaque_compute,
    .buffer_alloc = opaque_buffer_alloc,
    .buffer_free = opaque_buffer_free,
    .tensor_write = opaque_tensor_write,
    .tensor_read = opaque_tensor_read,
    .buffer_fill = opaque_buffer_fill,
    .compute_async = opaque_compute_async,
    .wait = opaque_wait,
    .forget_graph = opaque_forget_graph,
};

TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h) {
    host = h;
    table.abi_minor = h->abi_minor < TPORT_ABI_MINOR ? h->abi_minor : TPORT_ABI_MINOR;
    /* read here, not at init: the minor is negotiated before init runs */
    if (env_long("TPORT_OPAQUE_HOST_MEMORY", 0))
        table.abi_minor = 0;
    return &table;
}
