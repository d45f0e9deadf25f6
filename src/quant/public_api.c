/* The public quantization API of tport.h ("---- quantization ----"): thin,
 * argument-checking wrappers over the type table, the rule table
 * (quant_rules.h) and the converter (convert.h). */
#include <stdint.h>

#include "convert.h"
#include "core/error.h"
#include "quant_rules.h"
#include "tport/tport.h"
#include "type_table.h"

/* Every type is at most 10 bytes per element (f32: 4; Q8_K: 292/256), so
 * bounding n keeps every byte count far from overflow. */
#define MAX_ELEMENTS (INT64_MAX / 64)

static tport_status check_count(const char *what, const tport_type_traits *t, int64_t n) {
    if (n < 0 || n > MAX_ELEMENTS)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s %s: bad element count %lld", what, t->info.name,
                           (long long)n);
    if (n % t->info.block_size)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "%s %s: %lld elements is not a multiple of the block size %lld", what, t->info.name,
                           (long long)n, (long long)t->info.block_size);
    return TPORT_STATUS_OK;
}

tport_status tport_quantize(tport_type_id type, const char *rule, const float *src, void *dst, int64_t n) {
    const tport_type_traits *t = tport_traits(type);
    if (!t)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "quantize: unknown type id %u", type);
    const tport_quant_rule *r = tport_quant_rule_find(type, rule);
    if (!r) {
        if (!tport_quant_rules_count(type))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "quantize: type %s has no quantizer", t->info.name);
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT,
                           "quantize: type %s has no rule '%s' (tport quantize --list-rules --type %s)",
                           t->info.name, rule ? rule : "(default)", t->info.name);
    }
    const tport_status st = check_count("quantize", t, n);
    if (st)
        return st;
    if (n > 0 && (!src || !dst))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "quantize %s: NULL buffer", t->info.name);
    if (n > 0)
        r->quantize(src, dst, n);
    return TPORT_STATUS_OK;
}

tport_status tport_dequantize(tport_type_id type, const void *src, float *dst, int64_t n) {
    const tport_type_traits *t = tport_traits(type);
    if (!t)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "dequantize: unknown type id %u", type);
    if (t->flags & TPORT_TYPEF_ROW_GROUPS)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "dequantize: %s interleaves the blocks of several rows; "
                           "only whole tensors convert (tport convert)", t->info.name);
    if (!t->to_float)
        return tport_error(TPORT_STATUS_UNSUPPORTED, "dequantize: type %s has no decoder", t->info.name);
    const tport_status st = check_count("dequantize", t, n);
    if (st)
        return st;
    if (n > 0 && (!src || !dst))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "dequantize %s: NULL buffer", t->info.name);
    if (n > 0)
        t->to_float(src, dst, n);
    return TPORT_STATUS_OK;
}

int tport_quant_rule_count(tport_type_id type) { return tport_quant_rules_count(type); }

const char *tport_quant_rule_name(tport_type_id type, int i) {
    const tport_quant_rule *r = tport_quant_rule_at(type, i);
    return r ? r->name : NULL;
}

const char *tport_quant_rule_about(tport_type_id type, int i) {
    const tport_quant_rule *r = tport_quant_rule_at(type, i);
    return r ? r->about : NULL;
}

tport_status tport_convert_data(tport_type_id from, const void *src, tport_type_id to, void *dst, int64_t n,
                                tport_conversion *report) {
    return tport_convert(from, src, to, dst, n, report);
}
