/* A small fake backend, compiled once per test case with FAKE_CASE set to
 * one of the defects below, so each refusal rule of the registry has a
 * plug-in that breaks exactly that rule.  FAKE_CASE_GOOD is a working
 * backend (F32 add on contiguous tensors, one ACCEL device).
 *
 * It includes only tport/backend.h — built with -I pointing either at
 * today's include/ or at tests/plugins/abi_1_0 (the header frozen at 1.0).
 *
 * The "evil" knobs below (FAKE_STRUCT_SIZE, FAKE_NAME_KIND, FAKE_DEVICES,
 * ...) each bend one field or behaviour of an otherwise good plug-in, for
 * test_evil_plugins.c: what a plug-in author we never met might ship. */
#include "tport/backend.h"

#define FAKE_CASE_GOOD 0
#define FAKE_CASE_NO_ENTRY 1
#define FAKE_CASE_NULL_ENTRY 2
#define FAKE_CASE_MAJOR2 3
#define FAKE_CASE_SMALL_STRUCT 4
#define FAKE_CASE_MISSING_SLOT 5
#define FAKE_CASE_ISA 6
#define FAKE_CASE_SCORE0 7
#define FAKE_CASE_INIT_FAIL 8
#define FAKE_CASE_NO_DEVICES 9
#define FAKE_CASE_CRASH_ENTRY 10
#define FAKE_CASE_NEWER_MINOR 11
#define FAKE_CASE_CPU_HIGH 12 /* a "cpu" with a high score: shadows the embedded one */
#define FAKE_CASE_WRONG_RESULT 13 /* claims add and computes one element wrong */
#define FAKE_CASE_CRASH_INIT 14    /* loads fine, aborts in init */
#define FAKE_CASE_HANG_ENTRY 15    /* never returns from the entry point */
#define FAKE_CASE_HANG_INIT 16     /* never returns from init */
#define FAKE_CASE_EXIT_INIT 17     /* calls exit(0) in init */

#if FAKE_CASE == FAKE_CASE_CRASH_INIT || FAKE_CASE == FAKE_CASE_EXIT_INIT
#include <stdlib.h>
#endif
#if FAKE_CASE == FAKE_CASE_HANG_ENTRY || FAKE_CASE == FAKE_CASE_HANG_INIT
#include <unistd.h>
static void hang_forever(void) {
    for (;;)
        sleep(1);
}
#endif

#ifndef FAKE_CASE
#define FAKE_CASE FAKE_CASE_GOOD
#endif
#ifndef FAKE_NAME
#ifdef FAKE_DEFAULT_NAME
#define FAKE_NAME FAKE_DEFAULT_NAME
#else
#define FAKE_NAME "fake"
#endif
#endif
#ifndef FAKE_SCORE
#define FAKE_SCORE 5
#endif

/* A newer minor this plug-in pretends to know (1.7): the table has three
 * more slots at the end and a larger struct_size. */
#if FAKE_CASE == FAKE_CASE_NEWER_MINOR
#define FAKE_KNOWN_MINOR 7
#elif defined(FAKE_OLDER_MINOR) /* an older plug-in: it knows only that minor */
#define FAKE_KNOWN_MINOR FAKE_OLDER_MINOR
#else
#define FAKE_KNOWN_MINOR TPORT_ABI_MINOR
#endif

static const tport_host_api *host;

static int32_t fake_score(void) {
#if FAKE_CASE == FAKE_CASE_ISA
    __builtin_trap(); /* the host must never get here: the ISA check comes first */
#endif
    return FAKE_CASE == FAKE_CASE_SCORE0 ? 0 : FAKE_SCORE;
}

static int fake_state = 42;

#ifdef FAKE_NULL_STATE
#define STATE_OK(b) ((b) == 0) /* init left the state NULL, on purpose */
#else
#define STATE_OK(b) ((b) == &fake_state)
#endif

#ifdef FAKE_HOST_ABUSE
/* Calls every host service with bad arguments; each must answer with an
 * error (or NULL), never crash.  Returns a message naming the first
 * service that misbehaved, or 0. */
static const char *abuse_host(void) {
    float out[64] = {0};
    unsigned char block[64] = {0};
    if (host->type_info(9999) != 0 || host->type_info(0xffffffffu) != 0)
        return "type_info(unknown) is not NULL";
    if (host->to_float(9999, block, out, 32) == TPORT_STATUS_OK)
        return "to_float(unknown type) succeeded";
    if (host->to_float(TPORT_TYPE_Q4_0, block, out, -32) == TPORT_STATUS_OK)
        return "to_float(n < 0) succeeded";
    if (host->to_float(TPORT_TYPE_Q4_0, block, out, 7) == TPORT_STATUS_OK)
        return "to_float(n not a multiple of the block) succeeded";
    if (host->to_float(TPORT_TYPE_F32, 0, out, 4) == TPORT_STATUS_OK)
        return "to_float(NULL src) succeeded";
    if (host->to_float(TPORT_TYPE_F32, block, 0, 4) == TPORT_STATUS_OK)
        return "to_float(NULL dst) succeeded";
    if (host->from_float(TPORT_TYPE_Q8_0, out, 0, 32) == TPORT_STATUS_OK)
        return "from_float(NULL dst) succeeded";
    if (host->from_float(TPORT_TYPE_Q8_0, out, block, -1) == TPORT_STATUS_OK)
        return "from_float(n < 0) succeeded";
    if (host->to_float(TPORT_TYPE_F32, block, out, 4) != TPORT_STATUS_OK)
        return "to_float of good arguments failed";
    host->log(99, "level 99 must be dropped");
    host->log(-7, "level -7 must be dropped");
    host->log(TPORT_LOG_DEBUG, 0);
    if (host->error(TPORT_STATUS_IO, 0) != TPORT_STATUS_IO)
        return "error(code, NULL) did not return the code";
    return 0;
}
#endif
#ifdef FAKE_CALLS_LIBTPORT
/* What a plug-in must never do: call into libtport directly. */
const char *tport_last_error(void);
#endif

static tport_status fake_init(void **backend) {
#if FAKE_CASE == FAKE_CASE_ISA
    __builtin_trap();
#endif
#ifdef FAKE_CALLS_LIBTPORT
    (void)tport_last_error();
#endif
#if FAKE_CASE == FAKE_CASE_CRASH_INIT
    abort(); /* SIGABRT: what a plug-in must never do */
#endif
#if FAKE_CASE == FAKE_CASE_HANG_INIT
    hang_forever();
#endif
#if FAKE_CASE == FAKE_CASE_EXIT_INIT
    exit(0); /* what a plug-in must never do */
#endif
#ifdef FAKE_HOST_ABUSE
    const char *bad = abuse_host();
    if (bad)
        return host->error(TPORT_STATUS_ERROR, "host misbehaved: %s", bad);
#endif
#ifdef FAKE_INIT_STATUS
    return host->error(FAKE_INIT_STATUS, "init says %d", (int)FAKE_INIT_STATUS);
#endif
#ifdef FAKE_NULL_STATE
    *backend = 0;
    return TPORT_STATUS_OK;
#endif
    if (FAKE_CASE == FAKE_CASE_INIT_FAIL)
        return host->error(TPORT_STATUS_DEVICE_LOST, "simulated init failure");
    *backend = &fake_state;
    return TPORT_STATUS_OK;
}

static void fake_shutdown(void *backend) {
    (void)backend;
}

static int32_t fake_device_count(void *backend) {
#ifdef FAKE_DEVICES
    return STATE_OK(backend) ? (int32_t)(FAKE_DEVICES) : 0;
#else
    return STATE_OK(backend) && FAKE_CASE != FAKE_CASE_NO_DEVICES ? 1 : 0;
#endif
}

static void copy_string(char *dst, unsigned cap, const char *src) {
    unsigned i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = src[i];
    dst[i] = '\0';
}

static tport_status fake_device_info(void *backend, int32_t device, tport_device_info *out) {
    (void)backend;
#ifdef FAKE_GARBAGE_INFO
    /* No terminators, bytes that are not text, a bogus kind and size. */
    for (unsigned i = 0; i < sizeof out->name; i++)
        out->name[i] = (char)(i % 2 ? 0xff : '\n');
    for (unsigned i = 0; i < sizeof out->description; i++)
        out->description[i] = 'x';
    out->kind = 999;
    out->struct_size = 1u << 30;
    return device == 0 ? TPORT_STATUS_OK : 12345;
#endif
    if (device != 0 || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0)
        return host->error(TPORT_STATUS_INVALID_ARGUMENT, "no device %d", (int)device);
    out->kind = FAKE_CASE == FAKE_CASE_CPU_HIGH ? TPORT_DEVICE_CPU : TPORT_DEVICE_ACCEL;
    copy_string(out->name, sizeof out->name, FAKE_NAME "0");
    copy_string(out->description, sizeof out->description, "test plug-in");
    out->memory_total = 1u << 20;
    out->memory_free = 1u << 20;
    return TPORT_STATUS_OK;
}

static bool contiguous_f32(const tport_tensor_view *t) {
    if (t->type != TPORT_TYPE_F32 || t->nb[0] != sizeof(float))
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

static bool fake_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    (void)backend;
#ifdef FAKE_SUPPORTS_ALL
    (void)device, (void)g, (void)node;
    return true;
#endif
#ifdef FAKE_SUPPORTS_NOTHING
    (void)device, (void)g, (void)node;
    return false;
#endif
    if (device != 0 || node < 0 || node >= g->n_tensors)
        return false;
    const tport_tensor_view *t = g->tensors[node];
    if (t->op != TPORT_OP_ADD || t->src[0] < 0 || t->src[1] < 0 || t->src[0] >= g->n_tensors ||
        t->src[1] >= g->n_tensors)
        return false;
    const tport_tensor_view *a = g->tensors[t->src[0]], *b = g->tensors[t->src[1]];
    return contiguous_f32(t) && contiguous_f32(a) && contiguous_f32(b) && same_shape(t, a) && same_shape(t, b);
}

#ifdef FAKE_COMPUTE_STATUS
/* A message far larger than any buffer of the host's. */
static char huge_message[100 * 1024];
#endif

static tport_status fake_compute(void *backend, int32_t device, const tport_graph_view *g) {
#ifdef FAKE_CRASH_COMPUTE
    __builtin_trap(); /* claims everything, dies in compute */
#endif
#ifdef FAKE_COMPUTE_STATUS
    (void)backend, (void)device, (void)g;
    for (unsigned i = 0; i + 1 < sizeof huge_message; i++)
        huge_message[i] = "evil compute failure "[i % 21];
    return host->error(FAKE_COMPUTE_STATUS, "%s", huge_message);
#endif
    for (int32_t i = 0; i < g->n_nodes; i++) {
        int32_t idx = g->nodes[i];
        if (!fake_supports_op(backend, device, g, idx))
            return host->error(TPORT_STATUS_UNSUPPORTED, "fake: node %d not supported", (int)idx);
        const tport_tensor_view *t = g->tensors[idx];
        const float *a = g->tensors[t->src[0]]->data, *b = g->tensors[t->src[1]]->data;
        float *y = t->data;
        int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        for (int64_t k = 0; k < n; k++)
            y[k] = a[k] + b[k];
        if (FAKE_CASE == FAKE_CASE_WRONG_RESULT)
            y[n / 2] += 0.25f; /* for tport check-backend to catch */
    }
    return TPORT_STATUS_OK;
}

#if FAKE_CASE == FAKE_CASE_NEWER_MINOR
/* The table as a 1.7 header would declare it: 1.0 plus slots appended. */
typedef struct fake_backend_api_1_7 {
    tport_backend_api base;
    tport_status (*future_slot_a)(void *backend);
    tport_status (*future_slot_b)(void *backend, int32_t device);
    uint64_t future_flags;
} fake_backend_api_1_7;
static tport_status future_a(void *backend) {
    (void)backend;
    return TPORT_STATUS_OK;
}
static fake_backend_api_1_7 table_17 = {.future_slot_a = future_a, .future_flags = 7};
#define TABLE (table_17.base)
#define TABLE_SIZE sizeof(fake_backend_api_1_7)
#else
static tport_backend_api table_10;
#define TABLE table_10
#define TABLE_SIZE sizeof(tport_backend_api)
#endif

#if FAKE_CASE != FAKE_CASE_NO_ENTRY
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry(const tport_host_api *h)
#else
/* Exported, but under the wrong name. */
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry_v2(const tport_host_api *h);
TPORT_BACKEND_EXPORT const tport_backend_api *tport_backend_entry_v2(const tport_host_api *h)
#endif
{
#if FAKE_CASE == FAKE_CASE_CRASH_ENTRY
    __builtin_trap(); /* SIGILL, as a variant built for a newer CPU would */
#endif
#if FAKE_CASE == FAKE_CASE_HANG_ENTRY
    hang_forever();
#endif
    if (!h || h->abi_major != TPORT_ABI_MAJOR)
        return 0;
    host = h;
    if (FAKE_CASE == FAKE_CASE_NULL_ENTRY) {
        h->error(TPORT_STATUS_UNSUPPORTED, "simulated: no driver installed");
        return 0;
    }
    tport_backend_api *t = &TABLE;
    t->struct_size = TABLE_SIZE;
    t->abi_major = FAKE_CASE == FAKE_CASE_MAJOR2 ? 2 : TPORT_ABI_MAJOR;
    const uint32_t known = FAKE_KNOWN_MINOR; /* a variable: no "< 0 is always false" */
    t->abi_minor = h->abi_minor < known ? h->abi_minor : known;
    t->name = FAKE_NAME;
    t->version = "test-1";
#ifdef FAKE_NAME_KIND
    static const char unterminated[80] = {'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a',
                                          'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a',
                                          'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a',
                                          'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a',
                                          'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a', 'a',
                                          'a', 'a', 'a', 'a', 'a'};
    static const char *const names[] = {
        "fake", 0, "", "has space", "has/slash", "\xff\xfe\xc3", /* 0..5 */
        "a123456789012345678901234567890123456789012345678901234567890123", /* 6: 64 bytes */
        unterminated, /* 7 */
    };
    t->name = names[FAKE_NAME_KIND];
#endif
#ifdef FAKE_VERSION_KIND
    static char long_version[5000];
    for (unsigned i = 0; i + 1 < sizeof long_version; i++)
        long_version[i] = i == 10 ? '\n' : i == 11 ? (char)0xff : 'v';
    t->version = FAKE_VERSION_KIND == 1 ? 0 : long_version;
#endif
#if FAKE_CASE == FAKE_CASE_ISA
#if defined(__aarch64__)
    t->required_isa = TPORT_ISA_AVX2;
#else
    t->required_isa = TPORT_ISA_NEON;
#endif
#endif
    t->score = fake_score;
    t->init = fake_init;
    t->shutdown = fake_shutdown;
    t->device_count = fake_device_count;
    t->device_info = fake_device_info;
    t->supports_op = fake_supports_op;
    t->compute = FAKE_CASE == FAKE_CASE_MISSING_SLOT ? 0 : fake_compute;
    if (FAKE_CASE == FAKE_CASE_SMALL_STRUCT)
        t->struct_size = (uint32_t)offsetof(tport_backend_api, compute);
#ifdef FAKE_STRUCT_SIZE
    t->struct_size = (uint32_t)(FAKE_STRUCT_SIZE);
#endif
#ifdef FAKE_RESERVED
    t->reserved = FAKE_RESERVED;
#endif
#ifdef FAKE_MAJOR
    t->abi_major = FAKE_MAJOR;
#endif
#ifdef FAKE_MINOR
    t->abi_minor = FAKE_MINOR; /* not negotiated down */
#endif
#ifdef FAKE_ISA
    t->required_isa = FAKE_ISA;
#endif
    return t;
}
