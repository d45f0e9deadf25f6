/* The ABI tier: the plug-in meets hosts it was not built with.
 *  - a host at minor 0 whose table is exactly the 1.0 size, and which
 *    offers device_info records of exactly the 1.0 size (with a canary
 *    behind them: writing past struct_size is caught);
 *  - a host at minor (ours + 1) with a larger table (extra trailing slots);
 *  - a host of major 2, whose services beyond log and error the plug-in
 *    must not touch and whose major it must not claim.
 * Each accepted negotiation is then used: init, devices, one compute,
 * shutdown. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conformance_internal.h"
#include "core/error.h"
#include "registry.h"

typedef struct host_next_minor {
    tport_host_api base;
    void (*future_slot)(void);
    uint64_t future_flags;
} host_next_minor;

static int foreign_calls; /* services of the major-2 host that were used */

/* log and error behave as the real host's do, bad arguments included. */
static void fake_log(int32_t level, const char *fmt, ...) {
    if (!fmt || level < TPORT_LOG_ERROR || level > TPORT_LOG_DEBUG)
        return;
    va_list ap;
    va_start(ap, fmt);
    tport_vlog(level, fmt, ap);
    va_end(ap);
}

static tport_status fake_error(tport_status code, const char *fmt, ...) {
    if (!fmt)
        return tport_error(code, "(no message)");
    va_list ap;
    va_start(ap, fmt);
    tport_verror(code, fmt, ap);
    va_end(ap);
    return code;
}

/* Of a host of another major only the version words, log and error keep
 * their places; anything else used is counted as a violation. */
static const tport_type_info *foreign_type_info(tport_type_id type) {
    (void)type;
    foreign_calls++;
    return NULL;
}

static tport_status foreign_to_float(tport_type_id type, const void *src, float *dst, int64_t n) {
    (void)type, (void)src, (void)dst, (void)n;
    foreign_calls++;
    return TPORT_STATUS_UNSUPPORTED;
}

static tport_status foreign_from_float(tport_type_id type, const float *src, void *dst, int64_t n) {
    (void)type, (void)src, (void)dst, (void)n;
    foreign_calls++;
    return TPORT_STATUS_UNSUPPORTED;
}

static void future_slot(void) {
}

static void fill_services(tport_host_api *h, uint32_t size, uint32_t major, uint32_t minor) {
    const tport_host_api *real = tport_host_services();
    *h = (tport_host_api){.struct_size = size, .abi_major = major, .abi_minor = minor,
                          .log = fake_log, .error = fake_error, .type_info = real->type_info,
                          .to_float = real->to_float, .from_float = real->from_float};
}

static void fail(tport_check_result *r, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->note, sizeof r->note, fmt, ap);
    va_end(ap);
    r->outcome = TPORT_CHECK_FAIL;
}

/* One small compute through the negotiated table: the first of a few
 * simple cases the backend claims. */
static void try_compute(const tport_backend_api *api, void *state, const tport_backend_mem *mem,
                        tport_check_result *r) {
    check_case cases[256];
    int n = check_cases(cases, 256);
    n = n < 256 ? n : 256;
    const tport_backend_api *ref = tport_cpu_embedded_entry(tport_host_services());
    void *ref_state = NULL;
    if (!ref || ref->init(&ref_state) != TPORT_STATUS_OK) {
        snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note), "; no reference for a compute");
        return;
    }
    for (int i = 0; i < n; i++) {
        tport_check_result one;
        check_run_case(&cases[i], api, state, mem, ref, ref_state, &one);
        if (one.outcome == TPORT_CHECK_NOT_CLAIMED || one.outcome == TPORT_CHECK_NO_REFERENCE)
            continue;
        if (one.outcome == TPORT_CHECK_FAIL)
            fail(r, "compute of %s %s: %s", one.op, one.shape, one.note);
        else
            snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note), "; computed %s", one.op);
        break;
    }
    ref->shutdown(ref_state);
}

static void use_backend(const tport_backend_api *api, uint32_t device_info_size, tport_check_result *r) {
    void *state = NULL;
    tport_clear_error();
    tport_status st = api->init(&state);
    if (st != TPORT_STATUS_OK) {
        fail(r, "init failed (%s): %.100s", tport_status_name(st), tport_last_error());
        return;
    }
    int32_t n = api->device_count(state);
    if (n <= 0) {
        fail(r, "no devices");
    } else {
        /* a device_info record of exactly device_info_size, canary behind */
        union {
            tport_device_info info;
            unsigned char bytes[sizeof(tport_device_info) + 64];
        } buf;
        memset(buf.bytes, 0xa5, sizeof buf.bytes);
        memset(buf.bytes, 0, device_info_size);
        buf.info.struct_size = device_info_size;
        st = api->device_info(state, 0, &buf.info);
        bool canary = true;
        for (size_t i = device_info_size; i < sizeof buf.bytes; i++)
            canary &= buf.bytes[i] == 0xa5;
        if (st != TPORT_STATUS_OK)
            fail(r, "device_info failed (%s): %.100s", tport_status_name(st), tport_last_error());
        else if (!canary)
            fail(r, "device_info wrote past the struct_size the host gave (%u)", device_info_size);
        else if (buf.info.struct_size != device_info_size)
            fail(r, "device_info changed struct_size from %u to %u (the host's field)", device_info_size,
                 buf.info.struct_size);
        else if (!memchr(buf.info.name, 0, sizeof buf.info.name) ||
                 !memchr(buf.info.description, 0, sizeof buf.info.description))
            fail(r, "device_info left name or description without a terminating NUL");
        else if (buf.info.kind < TPORT_DEVICE_CPU || buf.info.kind > TPORT_DEVICE_REMOTE)
            fail(r, "device_info gave kind %d, not a TPORT_DEVICE_* id", (int)buf.info.kind);
        else {
            snprintf(r->note, sizeof r->note, "init, %d device(s)", (int)n);
            /* what this negotiation allows: 1.1 device memory, or host memory */
            tport_active_backend a = {.name = api->name, .api = api, .state = state, .abi_minor = api->abi_minor};
            tport_backend_mem_resolve(&a, &buf.info);
            if (a.mem.device_memory)
                snprintf(r->note + strlen(r->note), sizeof r->note - strlen(r->note), ", device memory");
            try_compute(api, state, &a.mem, r);
        }
    }
    api->shutdown(state);
}

static void check_accepting_host(tport_backend_entry_fn entry, const tport_host_api *host, const char *label,
                                 uint32_t device_info_size, tport_check_result *r) {
    snprintf(r->op, sizeof r->op, "negotiate");
    snprintf(r->types, sizeof r->types, "%s", label);
    r->outcome = TPORT_CHECK_PASS;
    tport_clear_error();
    const tport_backend_api *api = entry(host);
    if (!api) {
        fail(r, "entry returned NULL for a host it must accept: %.100s", tport_last_error());
        return;
    }
    uint32_t minor = 0;
    char why[160];
    if (!tport_backend_table_check(api, host, &minor, why, sizeof why)) {
        fail(r, "%s", why);
        return;
    }
    if (api->abi_minor > host->abi_minor) {
        fail(r, "picked minor %u, above the host's %u", api->abi_minor, host->abi_minor);
        return;
    }
    if (api->reserved != 0) { /* the registry ignores it; a later minor may not */
        fail(r, "reserved is 0x%x, must be 0", api->reserved);
        return;
    }
    snprintf(r->shape, sizeof r->shape, "host %u.%u (%u-byte table) -> %u.%u", host->abi_major, host->abi_minor,
             host->struct_size, api->abi_major, api->abi_minor);
    use_backend(api, device_info_size, r);
}

static void check_foreign_major(tport_backend_entry_fn entry, tport_check_result *r) {
    static tport_host_api foreign;
    fill_services(&foreign, sizeof foreign, TPORT_ABI_MAJOR + 1, 0);
    foreign.type_info = foreign_type_info;
    foreign.to_float = foreign_to_float;
    foreign.from_float = foreign_from_float;
    snprintf(r->op, sizeof r->op, "negotiate");
    snprintf(r->types, sizeof r->types, "major %d host", TPORT_ABI_MAJOR + 1);
    snprintf(r->shape, sizeof r->shape, "must be refused");
    r->outcome = TPORT_CHECK_PASS;
    foreign_calls = 0;
    const tport_backend_api *api = entry(&foreign);
    if (api && api->struct_size >= 3 * sizeof(uint32_t) && api->abi_major == foreign.abi_major)
        fail(r, "claimed major %u, which it was not built for", api->abi_major);
    else if (foreign_calls)
        fail(r, "used %d service(s) of a host of another major", foreign_calls);
    else
        snprintf(r->note, sizeof r->note, api ? "returned its own major %u" : "returned NULL",
                 api ? api->abi_major : 0);
}

tport_check_counts tport_conformance_abi(tport_backend_entry_fn entry, tport_check_sink sink, void *user) {
    tport_check_counts counts = {0};
    static tport_host_api older;
    static host_next_minor newer;
    fill_services(&older, (uint32_t)TPORT_HOST_API_SIZE_1_0, TPORT_ABI_MAJOR, 0);
    fill_services(&newer.base, sizeof newer, TPORT_ABI_MAJOR, TPORT_ABI_MINOR + 1);
    newer.future_slot = future_slot;
    newer.future_flags = 1;

    tport_check_result r[3];
    for (int i = 0; i < 3; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].tier = "abi";
        r[i].max_err = -1;
    }
    check_accepting_host(entry, &older, "older minor", (uint32_t)TPORT_DEVICE_INFO_SIZE_1_0, &r[0]);
    check_accepting_host(entry, &newer.base, "newer minor", sizeof(tport_device_info), &r[1]);
    check_foreign_major(entry, &r[2]);
    /* leave the plug-in bound to the real host */
    entry(tport_host_services());
    for (int i = 0; i < 3; i++) {
        if (r[i].outcome == TPORT_CHECK_PASS)
            counts.passed++;
        else
            counts.failed++;
        sink(&r[i], user);
    }
    return counts;
}
