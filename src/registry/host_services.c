/* The services table every plug-in receives.  Every service checks its
 * arguments: a plug-in passing an unknown type, a NULL pointer or a count
 * that is negative or not a whole number of blocks gets an error status,
 * never a crash.  (Buffer lengths cannot be checked: the plug-in vouches
 * that src and dst hold n elements.)  A NULL format is treated as "". */
#include <stdarg.h>

#include "core/error.h"
#include "quant/type_table.h"
#include "registry.h"

static void host_log(int32_t level, const char *fmt, ...) {
    if (!fmt || level < TPORT_LOG_ERROR || level > TPORT_LOG_DEBUG)
        return; /* a level outside 0..3 is dropped */
    va_list ap;
    va_start(ap, fmt);
    tport_vlog(level, fmt, ap);
    va_end(ap);
}

static tport_status host_error(tport_status code, const char *fmt, ...) {
    if (!fmt)
        return tport_error(code, "(no message)");
    va_list ap; /* the stored message is bounded by tport_verror */
    va_start(ap, fmt);
    tport_verror(code, fmt, ap);
    va_end(ap);
    return code;
}

static const tport_type_info *host_type_info(tport_type_id type) {
    const tport_type_traits *t = tport_traits(type);
    return t ? &t->info : NULL;
}

static tport_status host_to_float(tport_type_id type, const void *src, float *dst, int64_t n) {
    const tport_type_traits *t = tport_traits(type);
    if (!t || !t->to_float)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "no dequantizer for type %u", type);
    if (!src || !dst)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "to_float: NULL buffer");
    if (n < 0 || n % t->info.block_size)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%lld is not a multiple of %s's block size",
                           (long long)n, t->info.name);
    t->to_float(src, dst, n);
    return TPORT_STATUS_OK;
}

static tport_status host_from_float(tport_type_id type, const float *src, void *dst, int64_t n) {
    const tport_type_traits *t = tport_traits(type);
    if (!t || !t->from_float)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "no quantizer for type %u", type);
    if (!src || !dst)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "from_float: NULL buffer");
    if (n < 0 || n % t->info.block_size)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%lld is not a multiple of %s's block size",
                           (long long)n, t->info.name);
    t->from_float(src, dst, n);
    return TPORT_STATUS_OK;
}

static const tport_host_api host_api = {
    .struct_size = sizeof(tport_host_api),
    .abi_major = TPORT_ABI_MAJOR,
    .abi_minor = TPORT_ABI_MINOR,
    .log = host_log,
    .error = host_error,
    .type_info = host_type_info,
    .to_float = host_to_float,
    .from_float = host_from_float,
};

const tport_host_api *tport_host_services(void) {
    return &host_api;
}
