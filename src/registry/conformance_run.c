/* One numerics case: make the inputs (seeded, so both backends see the same
 * bytes), ask supports_op, run the one-node graph on the target and on the
 * reference, convert both outputs to f32 and compare.  Outputs start as
 * 0xff bytes (NaN in every float type), so an element a backend forgets to
 * write is caught. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conformance_internal.h"
#include "core/view_srcs.h"
#include "core/error.h"
#include "quant/type_table.h"
#include "registry.h"

#define PAD_BYTES 32

static uint64_t next_random(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static float random_value(uint64_t *s) { /* [-1, 1) */
    return (float)((double)(next_random(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

/* Strides and size of a described tensor; false if it cannot be laid out. */
static bool layout(const check_tensor *d, const tport_type_traits *tr, uint64_t nb[4], size_t *bytes) {
    const int64_t bs = tr->info.block_size;
    if (bs <= 0 || d->ne[0] % bs)
        return false;
    const uint64_t es = tr->info.block_bytes;
    const uint64_t row = (uint64_t)(d->ne[0] / bs) * es;
    if (d->layout == CHECK_LAYOUT_TRANSPOSED) {
        if (bs != 1)
            return false;
        nb[0] = es * (uint64_t)d->ne[1];
        nb[1] = es;
        nb[2] = es * (uint64_t)d->ne[0] * (uint64_t)d->ne[1];
    } else {
        nb[0] = es;
        nb[1] = row + (d->layout == CHECK_LAYOUT_PADDED ? PAD_BYTES : 0);
        nb[2] = nb[1] * (uint64_t)d->ne[1];
    }
    nb[3] = nb[2] * (uint64_t)d->ne[2];
    *bytes = (size_t)(nb[3] * (uint64_t)d->ne[3]);
    return true;
}

/* For a type with a dequantizer but no quantizer (some historical layouts):
 * random bytes per block, kept only when the block decodes to finite
 * values of modest size (random f16 scales are often huge or NaN). */
static bool random_blocks(const check_tensor *d, const tport_type_traits *tr, uint64_t *seed, made_tensor *m,
                          char *why, size_t cap) {
    const int64_t bs = tr->info.block_size, rows = d->ne[1] * d->ne[2] * d->ne[3];
    const size_t bb = (size_t)tr->info.block_bytes;
    float *vals = malloc((size_t)bs * sizeof *vals);
    if (!vals) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    bool ok = true;
    for (int64_t r = 0; r < rows && ok; r++) {
        const int64_t i1 = r % d->ne[1], i2 = (r / d->ne[1]) % d->ne[2], i3 = r / (d->ne[1] * d->ne[2]);
        unsigned char *row = m->mem + i1 * m->view.nb[1] + i2 * m->view.nb[2] + i3 * m->view.nb[3];
        for (int64_t b = 0; b < d->ne[0] / bs && ok; b++) {
            unsigned char *block = row + (size_t)b * bb;
            ok = false;
            for (int attempt = 0; attempt < 256 && !ok; attempt++) {
                for (size_t k = 0; k < bb; k++)
                    block[k] = (unsigned char)(next_random(seed) >> 56);
                tr->to_float(block, vals, bs);
                ok = true;
                for (int64_t k = 0; k < bs && ok; k++)
                    ok = isfinite(vals[k]) && fabsf(vals[k]) <= 16.0f;
            }
        }
    }
    free(vals);
    if (!ok)
        snprintf(why, cap, "could not make finite random %s blocks", tr->info.name);
    return ok;
}

static bool make_tensor(const check_tensor *d, uint64_t *seed, made_tensor *m, char *why, size_t cap) {
    const tport_type_traits *tr = tport_traits(d->type);
    memset(m, 0, sizeof *m);
    if (!tr) {
        snprintf(why, cap, "unknown type %u", d->type);
        return false;
    }
    tport_tensor_view *v = &m->view;
    v->struct_size = sizeof *v;
    v->type = d->type;
    memcpy(v->ne, d->ne, sizeof v->ne);
    tport_view_clear_srcs(v);
    if (!layout(d, tr, v->nb, &m->bytes)) {
        snprintf(why, cap, "cannot lay out %s", tr->info.name);
        return false;
    }
    m->mem = malloc(m->bytes ? m->bytes : 1); /* exact: overruns show under ASan */
    if (!m->mem) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    memset(m->mem, 0, m->bytes);
    v->data = m->mem;
    const int64_t rows = d->ne[1] * d->ne[2] * d->ne[3];
    if (d->type == TPORT_TYPE_I32) {
        int32_t *p = (int32_t *)m->mem; /* dense only */
        for (int64_t i = 0; i < d->ne[0] * rows; i++)
            p[i] = d->data == CHECK_DATA_INDICES ? (int32_t)(next_random(seed) % (uint64_t)d->limit)
                   : d->data == CHECK_DATA_POSITIONS ? (int32_t)((i * 7 + 3) % 13)
                                                     : (int32_t)(next_random(seed) % 100);
        return true;
    }
    if (!tr->from_float && !(tr->to_float && d->layout != CHECK_LAYOUT_TRANSPOSED)) {
        snprintf(why, cap, "no reference quantizer for %s to make test data", tr->info.name);
        return false;
    }
    if (!tr->from_float)
        return random_blocks(d, tr, seed, m, why, cap);
    float *row = malloc((size_t)d->ne[0] * sizeof *row);
    if (!row) {
        snprintf(why, cap, "out of memory");
        return false;
    }
    for (int64_t r = 0; r < rows; r++) {
        const int64_t i1 = r % d->ne[1], i2 = (r / d->ne[1]) % d->ne[2], i3 = r / (d->ne[1] * d->ne[2]);
        unsigned char *base = m->mem + i1 * v->nb[1] + i2 * v->nb[2] + i3 * v->nb[3];
        for (int64_t i = 0; i < d->ne[0]; i++)
            row[i] = d->data == CHECK_DATA_FACTORS ? 2.5f + 1.5f * random_value(seed) : random_value(seed);
        if (d->layout == CHECK_LAYOUT_TRANSPOSED) {
            for (int64_t i = 0; i < d->ne[0]; i++)
                tr->from_float(&row[i], base + i * v->nb[0], 1);
        } else {
            tr->from_float(row, base, d->ne[0]);
        }
    }
    free(row);
    return true;
}

static double type_tolerance(tport_type_id t, bool conversion_target) {
    switch (t) {
    case TPORT_TYPE_F32:
    case TPORT_TYPE_I32: return 1e-4;
    case TPORT_TYPE_F16: return 2e-3;
    case TPORT_TYPE_BF16: return 1.6e-2;
    case TPORT_TYPE_Q8_0:
    case TPORT_TYPE_Q8_1:
    case TPORT_TYPE_Q8_K:
    case TPORT_TYPE_Q8_0_QNT1: return 1.6e-2;
    default: return conversion_target ? 0.15 : 0.05; /* a rounding flip costs one step */
    }
}

/* A product whose first operand (the matrix, or attention's Q) is f32:
 * what TPORT_DEVICE_CAP_F16_PRODUCTS covers.  Only where the sources'
 * own tolerance is tighter than f16's does the cap widen it. */
static bool f32_product(const check_case *c) {
    return (c->op == TPORT_OP_MUL_MAT || c->op == TPORT_OP_MUL_MAT_ID || c->op == TPORT_OP_FLASH_ATTN ||
            c->op == TPORT_OP_FLASH_ATTN_EXT) &&
           c->n_src > 0 && c->src[0].type == TPORT_TYPE_F32;
}

static void describe(const check_case *c, tport_check_result *r) {
    snprintf(r->op, sizeof r->op, "%s", check_op_name(c->op));
    size_t used = 0;
    r->types[0] = r->shape[0] = '\0';
    for (int i = 0; i < c->n_src; i++) {
        const tport_type_traits *tr = tport_traits(c->src[i].type);
        used += (size_t)snprintf(r->types + used, sizeof r->types - used, "%s%s", i ? " x " : "",
                                 tr ? tr->info.name : "?");
        if (used >= sizeof r->types)
            break;
    }
    const tport_type_traits *td = tport_traits(c->dst.type);
    if (used < sizeof r->types)
        snprintf(r->types + used, sizeof r->types - used, " -> %s", td ? td->info.name : "?");
    used = 0;
    for (int i = 0; i < c->n_src && used < sizeof r->shape; i++) {
        const int64_t *ne = c->src[i].ne;
        used += (size_t)snprintf(r->shape + used, sizeof r->shape - used, "%s[%lld,%lld,%lld,%lld]", i ? " x " : "",
                                 (long long)ne[0], (long long)ne[1], (long long)ne[2], (long long)ne[3]);
    }
    if (used < sizeof r->shape && c->note)
        snprintf(r->shape + used, sizeof r->shape - used, " %s", c->note);
}

void check_free_graph(case_graph *g) {
    for (int i = 0; i < CHECK_MAX_SRC; i++)
        free(g->src[i].mem);
    free(g->dst.mem);
}

/* Fresh inputs from a fixed seed (both runs get the same bytes). */
uint64_t check_seed_salt;

bool check_build_graph(const check_case *c, case_graph *g, char *why, size_t cap) {
    memset(g, 0, sizeof *g);
    uint64_t seed = 0x9e3779b97f4a7c15ULL ^ ((uint64_t)c->op << 32) ^ check_seed_salt;
    for (int i = 0; i < c->n_src; i++) {
        if (!make_tensor(&c->src[i], &seed, &g->src[i], why, cap))
            return false;
        g->src[i].view.flags = TPORT_TENSOR_INPUT;
        g->src[i].view.name = "src";
        g->ptrs[i] = &g->src[i].view;
    }
    check_tensor d = c->dst;
    d.layout = CHECK_LAYOUT_DENSE;
    if (!make_tensor(&d, &seed, &g->dst, why, cap))
        return false;
    memset(g->dst.mem, 0xff, g->dst.bytes); /* NaN: unwritten outputs show */
    tport_tensor_view *v = &g->dst.view;
    v->op = c->op;
    for (int i = 0; i < c->n_src; i++) {
        if (i < TPORT_MAX_SRC)
            v->src[i] = i;
        else
            v->src_more[i - TPORT_MAX_SRC] = i;
    }
    v->params = c->params_size ? c->params : NULL;
    v->params_size = c->params_size;
    v->flags = TPORT_TENSOR_OUTPUT;
    v->name = "dst";
    g->ptrs[c->n_src] = v;
    g->node = c->n_src;
    g->view = (tport_graph_view){.struct_size = sizeof g->view, .n_tensors = c->n_src + 1, .tensors = g->ptrs,
                                 .n_nodes = 1, .nodes = &g->node, .n_threads = 2};
    return true;
}

float *check_output_floats(const case_graph *g, int64_t n) {
    const tport_type_traits *tr = tport_traits(g->dst.view.type);
    float *out = malloc((size_t)n * sizeof *out);
    if (out && g->dst.view.type == TPORT_TYPE_I32) /* ids (argsort_top_k): exact as floats */
        for (int64_t i = 0; i < n; i++)
            out[i] = (float)((const int32_t *)(const void *)g->dst.mem)[i];
    else if (out && tr && tr->to_float)
        tr->to_float(g->dst.mem, out, n);
    else if (out)
        for (int64_t i = 0; i < n; i++)
            out[i] = NAN;
    return out;
}

void check_run_case(const check_case *c, const tport_backend_api *api, void *state, const tport_backend_mem *mem,
                    const tport_backend_api *ref, void *ref_state, tport_check_result *r) {
    memset(r, 0, sizeof *r);
    r->tier = "numerics";
    r->max_err = -1;
    describe(c, r);
    double tol = type_tolerance(c->dst.type, c->op == TPORT_OP_CPY);
    for (int i = 0; i < c->n_src; i++) {
        double t = type_tolerance(c->src[i].type, false);
        tol = t > tol ? t : tol;
    }
    /* a device that declares f16 operands in its f32 products (ABI 1.5,
     * ggml's Vulkan) is judged there by what f16 operands allow: the
     * tolerance of an f16 source, named in the note */
    const double f16_tol = type_tolerance(TPORT_TYPE_F16, false);
    const bool f16_products =
        mem && (mem->caps & TPORT_DEVICE_CAP_F16_PRODUCTS) && f32_product(c) && tol < f16_tol;
    if (f16_products)
        tol = f16_tol;
    r->tolerance = tol;

    /* an op of a newer minor than the plug-in's is never given to it */
    if (tport_op_since_minor(c->op) > api->abi_minor) {
        r->outcome = TPORT_CHECK_NOT_CLAIMED;
        snprintf(r->note, sizeof r->note, "an op of ABI 1.%u; the plug-in speaks 1.%u", tport_op_since_minor(c->op),
                 api->abi_minor);
        return;
    }
    case_graph target, reference;
    char why[160];
    bool ok_t = check_build_graph(c, &target, why, sizeof why);
    bool ok_r = ok_t && check_build_graph(c, &reference, why, sizeof why);
    if (!ok_t || !ok_r) {
        r->outcome = TPORT_CHECK_NO_REFERENCE;
        snprintf(r->note, sizeof r->note, "%s", why);
        goto done;
    }
    device_case dev;
    if (!check_device_bind(mem, state, &target, &dev, why, sizeof why)) {
        r->outcome = TPORT_CHECK_FAIL;
        snprintf(r->note, sizeof r->note, "%s", why);
        goto done;
    }
    if (!api->supports_op(state, 0, &target.view, target.node)) {
        check_device_unbind(&dev);
        r->outcome = TPORT_CHECK_NOT_CLAIMED;
        goto done;
    }
    if (!ref->supports_op(ref_state, 0, &reference.view, reference.node)) {
        r->outcome = TPORT_CHECK_NO_REFERENCE;
        snprintf(r->note, sizeof r->note, "claimed, but the reference cpu backend cannot run it");
        goto done;
    }
    tport_clear_error();
    tport_status st = check_device_compute(api, state, &dev, &target);
    check_device_unbind(&dev);
    if (st != TPORT_STATUS_OK) {
        r->outcome = TPORT_CHECK_FAIL;
        snprintf(r->note, sizeof r->note, "compute failed (%s): %.100s", tport_status_name(st), tport_last_error());
        goto done;
    }
    st = ref->compute(ref_state, 0, &reference.view);
    if (st != TPORT_STATUS_OK) {
        r->outcome = TPORT_CHECK_NO_REFERENCE;
        snprintf(r->note, sizeof r->note, "reference failed (%s): %.100s", tport_status_name(st), tport_last_error());
        goto done;
    }
    const int64_t n = c->dst.ne[0] * c->dst.ne[1] * c->dst.ne[2] * c->dst.ne[3];
    float *o = check_output_floats(&target, n), *e = check_output_floats(&reference, n);
    if (!o || !e) {
        free(o);
        free(e);
        r->outcome = TPORT_CHECK_NO_REFERENCE;
        snprintf(r->note, sizeof r->note, "out of memory");
        goto done;
    }
    double max_diff = 0, max_ref = 0;
    int64_t worst = 0, bad_nan = -1;
    for (int64_t i = 0; i < n; i++) {
        if (isnan(o[i]) != isnan(e[i]) || isinf(o[i]) != isinf(e[i])) {
            bad_nan = i;
            break;
        }
        if (isnan(e[i]) || isinf(e[i]))
            continue;
        double diff = fabs((double)o[i] - e[i]);
        if (diff > max_diff) {
            max_diff = diff;
            worst = i;
        }
        max_ref = fabs((double)e[i]) > max_ref ? fabs((double)e[i]) : max_ref;
    }
    if (bad_nan >= 0) {
        r->outcome = TPORT_CHECK_FAIL;
        r->max_err = INFINITY;
        snprintf(r->note, sizeof r->note, "element %lld is %g, reference %g (unwritten or non-finite)",
                 (long long)bad_nan, o[bad_nan], e[bad_nan]);
    } else {
        r->max_err = max_diff / (max_ref > 1e-6 ? max_ref : 1e-6);
        r->outcome = r->max_err <= tol ? TPORT_CHECK_PASS : TPORT_CHECK_FAIL;
        if (r->outcome == TPORT_CHECK_PASS && f16_products)
            snprintf(r->note, sizeof r->note, "f16-operand tolerance: the device declares f32 products on f16 "
                                              "operands");
        if (r->outcome == TPORT_CHECK_FAIL)
            snprintf(r->note, sizeof r->note, "worst element %lld: %g, reference %g%s", (long long)worst, o[worst],
                     e[worst], f16_products ? " (f16-operand tolerance)" : "");
    }
    free(o);
    free(e);
done:
    if (ok_t)
        check_free_graph(&target);
    if (ok_r)
        check_free_graph(&reference);
}

tport_check_counts tport_conformance_numerics(const tport_backend_api *api, void *state, const tport_backend_mem *mem,
                                              tport_check_sink sink, void *user) {
    tport_check_counts counts = {0};
    const tport_host_api *host = tport_host_services();
    const tport_backend_api *ref = tport_cpu_embedded_entry(host);
    void *ref_state = NULL;
    if (!ref || ref->init(&ref_state) != TPORT_STATUS_OK) {
        tport_check_result r = {.tier = "numerics", .outcome = TPORT_CHECK_FAIL, .max_err = -1};
        snprintf(r.op, sizeof r.op, "reference");
        snprintf(r.note, sizeof r.note, "the reference cpu backend did not start: %.100s", tport_last_error());
        sink(&r, user);
        counts.failed++;
        return counts;
    }
    int n = check_cases(NULL, 0);
    check_case *cases = calloc((size_t)n, sizeof *cases);
    if (cases) {
        check_cases(cases, n);
        for (int i = 0; i < n; i++) {
            tport_check_result r;
            check_run_case(&cases[i], api, state, mem, ref, ref_state, &r);
            switch (r.outcome) {
            case TPORT_CHECK_PASS: counts.passed++; break;
            case TPORT_CHECK_FAIL: counts.failed++; break;
            case TPORT_CHECK_NOT_CLAIMED: counts.not_claimed++; break;
            case TPORT_CHECK_NO_REFERENCE: counts.no_reference++; break;
            }
            sink(&r, user);
        }
    }
    free(cases);
    ref->shutdown(ref_state);
    return counts;
}

const char *tport_check_outcome_name(tport_check_outcome o) {
    switch (o) {
    case TPORT_CHECK_PASS: return "pass";
    case TPORT_CHECK_FAIL: return "FAIL";
    case TPORT_CHECK_NOT_CLAIMED: return "not claimed";
    case TPORT_CHECK_NO_REFERENCE: return "no reference";
    }
    return "?";
}
