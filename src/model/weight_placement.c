/* Load-time weight placement (DESIGN.md, "Types and quantization layout
 * revisions"): every 2-D weight is matched with the backend that will run
 * its consumer op, mul_mat for matrices and get_rows for token_embd (both
 * when the classifier is tied to it).  That backend is the forced one, or
 * the first in preference order that accepts the op with the weight in the
 * file's type or in a type the weight converts to; the scheduler later
 * asks the same question per node, so it lands the node on that backend.
 * Weights the backend takes as stored stay zero-copy in the file mapping;
 * the others are converted into memory the model owns, to the best target
 * of tport_weight_conversion_targets that the backend accepts.  With a
 * weight type set by the user, every matrix goes to that type instead, on
 * the first backend that takes it.  Each distinct conversion is reported
 * once at warn level, with the error of lossy ones. */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/view_srcs.h"
#include "model/model.h"
#include "model/placement.h"
#include "quant/convert.h"
#include "quant/type_table.h"
#include "sched/sched.h"

enum { USE_MUL_MAT = 1, USE_GET_ROWS = 2, USE_MUL_MAT_ID = 4 };

#define MAX_NOTES 32
#define MAX_CACHE 32
#define MAX_TARGETS 64

/* One line of the report: count tensors with the same conversion. */
typedef struct conv_note {
    tport_type_id from, to;
    tport_conv_kind kind;
    bool asked;            /* by the user's weight type, not the backend */
    char backend[64];
    int count;
    double n, sum_sq, max_err;
} conv_note;

/* Weights of one shape and type get the same answer: ask once. */
typedef struct decision {
    tport_type_id from;
    int64_t ne0, ne1;
    int64_t ne2; /* > 1: a stack of experts, read by mul_mat_id */
    unsigned uses;
    int64_t want;                        /* the user's weight type, or -1 */
    const tport_active_backend *backend; /* NULL: nobody takes it */
    tport_type_id to;
    bool no_copy; /* a backend ahead of `backend` takes the prompt batches */
} decision;

#define MAX_HOMES 4096

/* --place PATTERN=BACKEND: weights whose names match go to that backend */
#define MAX_OVERRIDES 16
typedef struct place_override {
    regex_t re;
    const tport_active_backend *backend;
} place_override;

typedef struct placer {
    place_override overrides[MAX_OVERRIDES];
    int n_overrides;
    tport_model *m;
    tport_weight_home *homes; /* each weight and its consumer's backend */
    int n_homes;
    const tport_active_backend *forced;
    int64_t weight_type; /* -1 = keep the file's types */
    conv_note notes[MAX_NOTES];
    int n_notes;
    decision cache[MAX_CACHE];
    int n_cache;
    int n_unfit;           /* weights whose rows are not whole blocks of */
    int64_t unfit_ne0[4];  /* weight_type keep their own type; row sizes */
    int n_unfit_ne0;
} placer;

/* supports_op receives a data address; it must not read through it, but a
 * real one keeps a careless backend from faulting. */
static _Alignas(64) unsigned char probe_bytes[64];

static void dense_record3(tport_tensor_view *t, tport_type_id type, int64_t ne0, int64_t ne1, int64_t ne2) {
    const tport_type_traits *tr = tport_traits(type);
    t->type = type;
    t->ne[0] = ne0;
    t->ne[1] = ne1;
    t->ne[2] = ne2;
    t->nb[0] = tr->info.block_bytes;
    t->nb[1] = t->nb[0] * (uint64_t)(ne0 / tr->info.block_size);
    t->nb[2] = t->nb[1] * (uint64_t)ne1;
    t->nb[3] = t->nb[2] * (uint64_t)ne2;
}

static void dense_record(tport_tensor_view *t, tport_type_id type, int64_t ne0, int64_t ne1) {
    dense_record3(t, type, ne0, ne1, 1);
}

/* Would backend b run mul_mat_id over a stack of experts of this type and
 * shape?  Asked for one token using two of them (a batch runs the same op). */
static bool takes_stack(const tport_active_backend *b, tport_type_id type, int64_t ne0, int64_t ne1, int64_t ne2,
                        const char *name) {
    const tport_type_traits *tr = tport_traits(type);
    if (!tr || tr->info.block_size <= 0 || ne0 % tr->info.block_size)
        return false;
    tport_tensor_view t[4];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 4; i++) {
        t[i].struct_size = sizeof t[i];
        for (int s = 0; s < TPORT_MAX_SRC; s++)
            t[i].src[s] = -1;
        for (int d = 0; d < TPORT_MAX_DIMS; d++)
            t[i].ne[d] = 1;
        t[i].data = probe_bytes;
        t[i].name = "";
    }
    int64_t used = ne2 < 2 ? ne2 : 2;
    dense_record3(&t[0], type, ne0, ne1, ne2);
    t[0].flags = TPORT_TENSOR_WEIGHT;
    t[0].name = name;
    dense_record3(&t[1], TPORT_TYPE_F32, ne0, 1, 1);
    dense_record3(&t[2], TPORT_TYPE_I32, used, 1, 1);
    dense_record3(&t[3], TPORT_TYPE_F32, ne1, used, 1);
    t[1].flags = t[2].flags = TPORT_TENSOR_INPUT;
    t[3].op = TPORT_OP_MUL_MAT_ID;
    t[3].src[0] = 0;
    t[3].src[1] = 1;
    t[3].src[2] = 2;
    t[3].flags = TPORT_TENSOR_OUTPUT;
    const tport_tensor_view *ptrs[4] = {&t[0], &t[1], &t[2], &t[3]};
    const int32_t node = 3;
    tport_graph_view v = {.struct_size = sizeof v, .n_tensors = 4, .tensors = ptrs, .n_nodes = 1,
                          .nodes = &node, .n_threads = 1};
    return tport_sched_backend_supports(b, &v, node);
}

/* Would backend b run `op` reading a weight of this type and shape?  Asked
 * with a one-node graph: weight, an input of `tokens` tokens, the result. */
static bool takes_op_for(const tport_active_backend *b, tport_op_id op, tport_type_id type, int64_t ne0,
                         int64_t ne1, int64_t tokens, const char *name) {
    const tport_type_traits *tr = tport_traits(type);
    if (!tr || tr->info.block_size <= 0 || ne0 % tr->info.block_size)
        return false;
    tport_tensor_view t[3];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 3; i++) {
        t[i].struct_size = sizeof t[i];
        tport_view_clear_srcs(&t[i]);
        for (int d = 0; d < TPORT_MAX_DIMS; d++)
            t[i].ne[d] = 1;
        t[i].data = probe_bytes;
        t[i].name = "";
    }
    dense_record(&t[0], type, ne0, ne1);
    t[0].flags = TPORT_TENSOR_WEIGHT;
    t[0].name = name;
    if (op == TPORT_OP_MUL_MAT) {
        dense_record(&t[1], TPORT_TYPE_F32, ne0, tokens);
        dense_record(&t[2], TPORT_TYPE_F32, ne1, tokens);
    } else {
        dense_record(&t[1], TPORT_TYPE_I32, 1, 1);
        dense_record(&t[2], TPORT_TYPE_F32, ne0, 1);
    }
    t[1].flags = TPORT_TENSOR_INPUT;
    t[2].op = op;
    t[2].src[0] = 0;
    t[2].src[1] = 1;
    t[2].flags = TPORT_TENSOR_OUTPUT;
    const tport_tensor_view *ptrs[3] = {&t[0], &t[1], &t[2]};
    const int32_t node = 2;
    tport_graph_view v = {.struct_size = sizeof v, .n_tensors = 3, .tensors = ptrs, .n_nodes = 1,
                          .nodes = &node, .n_threads = 1};
    return tport_sched_backend_supports(b, &v, node);
}

static bool takes_op(const tport_active_backend *b, tport_op_id op, tport_type_id type, int64_t ne0,
                     int64_t ne1, const char *name) {
    return takes_op_for(b, op, type, ne0, ne1, 1, name);
}

static bool takes(const tport_active_backend *b, unsigned uses, tport_type_id type, int64_t ne0, int64_t ne1,
                  const char *name) {
    if (uses == USE_MUL_MAT_ID)
        return false; /* asked through takes_d */
    return (!(uses & USE_MUL_MAT) || takes_op(b, TPORT_OP_MUL_MAT, type, ne0, ne1, name)) &&
           (!(uses & USE_GET_ROWS) || takes_op(b, TPORT_OP_GET_ROWS, type, ne0, ne1, name));
}

static const char *uses_name(unsigned uses) {
    if (uses == USE_MUL_MAT_ID)
        return "mul_mat_id";
    return uses == (USE_MUL_MAT | USE_GET_ROWS) ? "get_rows and mul_mat" : uses & USE_GET_ROWS ? "get_rows"
                                                                                               : "mul_mat";
}

/* The backend and type for one weight (see the comment at the top). */
/* Whether a backend ahead of host-memory backend b in the preference
 * order takes the prompt batches (512 tokens) of matrix w, though not one
 * token (placement's question): the blas plug-in with F32 weights.  It
 * reads the file's bytes then, and a copy of b's would hold the weight
 * twice (stories110M F32: 808 instead of 474 MiB), so b keeps none. */
static bool batches_elsewhere(const tport_active_backend *b, tport_type_id type, int64_t ne0, int64_t ne1,
                              const char *name) {
    for (int i = 0; i < tport_registry_active_count(); i++) {
        const tport_active_backend *a = tport_registry_active(i);
        if (a == b)
            return false;
        if (a && takes_op_for(a, TPORT_OP_MUL_MAT, type, ne0, ne1, 512, name))
            return true;
    }
    return false;
}

static bool takes_d(const tport_active_backend *b, const decision *d, tport_type_id type, const char *name) {
    if (d->uses == USE_MUL_MAT_ID)
        return takes_stack(b, type, d->ne0, d->ne1, d->ne2, name);
    return takes(b, d->uses, type, d->ne0, d->ne1, name);
}

static void decide(placer *p, decision *d, const char *name) {
    tport_type_id targets[MAX_TARGETS];
    int n_targets = tport_weight_conversion_targets(d->from, d->ne0, targets, MAX_TARGETS);
    if (n_targets > MAX_TARGETS)
        n_targets = MAX_TARGETS;
    int n_backends = p->forced ? 1 : tport_registry_active_count();
    const tport_type_traits *ft = tport_traits(d->from);
    const bool grouped = ft && (ft->flags & TPORT_TYPEF_ROW_GROUPS);
    d->backend = NULL;
    d->to = d->from;
    for (int i = 0; i < n_backends && !d->backend; i++) {
        const tport_active_backend *b = p->forced ? p->forced : tport_registry_active(i);
        if (!b)
            continue;
        if (d->want >= 0) {
            if (takes_d(b, d, (tport_type_id)d->want, name)) {
                d->backend = b;
                d->to = (tport_type_id)d->want;
            }
            continue;
        }
        /* a row-grouped type is never put to a backend: re-encoded first */
        if (!grouped && takes_d(b, d, d->from, name)) {
            d->backend = b;
            break;
        }
        for (int k = 0; k < n_targets && !d->backend; k++)
            if (takes_d(b, d, targets[k], name)) {
                d->backend = b;
                d->to = targets[k];
            }
    }
    d->no_copy = d->backend && !d->backend->mem.device_memory && !p->forced && (d->uses & USE_MUL_MAT) &&
                 batches_elsewhere(d->backend, d->to, d->ne0, d->ne1, name);
}

static const decision *lookup3(placer *p, tport_type_id from, int64_t ne0, int64_t ne1, int64_t ne2, unsigned uses,
                               int64_t want, const char *name) {
    for (int i = 0; i < p->n_cache; i++) {
        decision *d = &p->cache[i];
        if (d->from == from && d->ne0 == ne0 && d->ne1 == ne1 && d->ne2 == ne2 && d->uses == uses && d->want == want)
            return d;
    }
    /* a full cache (never with a llama's few shapes) reuses its last slot */
    decision *d = &p->cache[p->n_cache < MAX_CACHE ? p->n_cache++ : MAX_CACHE - 1];
    *d = (decision){.from = from, .ne0 = ne0, .ne1 = ne1, .ne2 = ne2, .uses = uses, .want = want};
    decide(p, d, name);
    return d;
}

static const decision *lookup(placer *p, tport_type_id from, int64_t ne0, int64_t ne1, unsigned uses,
                              int64_t want, const char *name) {
    return lookup3(p, from, ne0, ne1, 1, uses, want, name);
}

static void note(placer *p, const decision *d, const tport_convert_report *rep) {
    conv_note *n = NULL;
    for (int i = 0; i < p->n_notes && !n; i++)
        if (p->notes[i].from == d->from && p->notes[i].to == d->to && p->notes[i].asked == (d->want >= 0) &&
            !strcmp(p->notes[i].backend, d->backend->name))
            n = &p->notes[i];
    if (!n) {
        if (p->n_notes == MAX_NOTES)
            n = &p->notes[MAX_NOTES - 1]; /* never with the model's few shapes; stay safe */
        else
            n = &p->notes[p->n_notes++];
        memset(n, 0, sizeof *n);
        n->from = d->from;
        n->to = d->to;
        n->asked = d->want >= 0;
        snprintf(n->backend, sizeof n->backend, "%s", d->backend->name);
    }
    n->kind = rep->kind > n->kind ? rep->kind : n->kind;
    n->count++;
    n->n += (double)rep->n;
    n->sum_sq += rep->rmse * rep->rmse * (double)rep->n;
    if (rep->max_abs_err > n->max_err)
        n->max_err = rep->max_abs_err;
}

/* Converts *slot to type `to` into owned memory and points *slot at a new
 * record for it. */
static tport_status convert_weight(tport_model *m, tport_tensor **slot, tport_type_id to,
                                   tport_convert_report *rep) {
    tport_tensor *w = *slot;
    const char *name = tport_tensor_name(w);
    /* a stack of experts converts as ne1 * ne2 rows */
    int64_t ne0 = tport_tensor_ne(w, 0), ne2 = tport_tensor_ne(w, 2), ne1 = tport_tensor_ne(w, 1) * ne2;
    size_t row = tport_row_size(to, ne0);
    if (!row || ne1 <= 0 || (size_t)ne1 > (SIZE_MAX - 64) / row)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "%s: cannot convert %s [%lld x %lld] to %s",
                           m->file->path, name, (long long)ne0, (long long)ne1, tport_type_get(to)->name);
    size_t bytes = row * (size_t)ne1;
    void *buf = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!buf)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: out of memory converting %s (%zu bytes)",
                           m->file->path, name, bytes);
    tport_status st = tport_model_own(m, buf);
    if (st != TPORT_STATUS_OK)
        return st;
    st = tport_convert_rows(tport_tensor_type(w), tport_tensor_data(w), to, buf, ne0, ne1, rep);
    if (st != TPORT_STATUS_OK)
        return tport_error(st, "%s: converting %s: %s", m->file->path, name, tport_last_error());
    tport_tensor *c = ne2 > 1 ? tport_new_tensor_3d(m->wctx, to, ne0, ne1 / ne2, ne2)
                              : tport_new_tensor_2d(m->wctx, to, ne0, ne1);
    if (!c)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "%s: cannot record tensor %s", m->file->path, name);
    tport_tensor_set_data(c, buf);
    tport_tensor_set_weight(c);
    tport_tensor_set_name(c, name);
    *slot = c;
    return TPORT_STATUS_OK;
}

static void home(placer *p, tport_tensor *w, const tport_active_backend *b) {
    if (w && b && p->n_homes < MAX_HOMES)
        p->homes[p->n_homes++] = (tport_weight_home){.weight = w, .backend = b};
}

/* The home of a weight placed by decision d.  A table read only by
 * get_rows (an embedding) stays in the file for a host-memory backend: it
 * reads a few rows a token, which are all of it the file's mapping brings
 * into memory, while a copy in the backend's layout would hold all of it
 * and speed nothing up.  A backend with memory of its own still gets it.
 * Nor does a matrix whose batches another backend takes (d->no_copy). */
static void home_for(placer *p, tport_tensor *w, const decision *d) {
    if (d->no_copy || (d->uses == USE_GET_ROWS && !d->backend->mem.device_memory))
        return;
    home(p, w, d->backend);
}

/* "PATTERN=BACKEND[,PATTERN=BACKEND...]" into p->overrides. */
static tport_status parse_overrides(placer *p, const char *place) {
    for (const char *s = place; s && *s;) {
        const char *comma = strchr(s, ','), *end = comma ? comma : s + strlen(s);
        const char *eq = NULL;
        for (const char *c = s; c < end; c++)
            if (*c == '=')
                eq = c; /* the last '=': a pattern may hold one */
        char pattern[256], name[64];
        if (!eq || eq == s || eq + 1 == end || (size_t)(eq - s) >= sizeof pattern || (size_t)(end - eq - 1) >= sizeof name)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "place: '%.*s' is not PATTERN=BACKEND", (int)(end - s), s);
        if (p->n_overrides == MAX_OVERRIDES)
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "place: more than %d overrides", MAX_OVERRIDES);
        memcpy(pattern, s, (size_t)(eq - s));
        pattern[eq - s] = '\0';
        memcpy(name, eq + 1, (size_t)(end - eq - 1));
        name[end - eq - 1] = '\0';
        place_override *o = &p->overrides[p->n_overrides];
        if (!(o->backend = tport_registry_find(name)))
            return tport_error(TPORT_STATUS_UNSUPPORTED, "place: backend '%s' is not available", name);
        if (regcomp(&o->re, pattern, REG_EXTENDED | REG_NOSUB))
            return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "place: '%s' is not a regular expression", pattern);
        p->n_overrides++;
        s = comma ? comma + 1 : end;
    }
    return TPORT_STATUS_OK;
}

/* The backend an override names for this weight, or NULL. */
static const tport_active_backend *override_for(const placer *p, const char *name) {
    for (int i = 0; i < p->n_overrides; i++)
        if (!regexec(&p->overrides[i].re, name, 0, NULL, 0))
            return p->overrides[i].backend;
    return NULL;
}

static tport_status place(placer *p, tport_tensor **slot, unsigned uses, const tport_active_backend **on) {
    tport_tensor *w = *slot;
    *on = NULL;
    const char *name = tport_tensor_name(w);
    const tport_active_backend *forced = override_for(p, name);
    if (forced && !p->forced) {
        /* decided for this weight alone: the cache holds the general answer */
        p->forced = forced;
        int n_cache = p->n_cache;
        p->n_cache = 0;
        decision saved = p->cache[0];
        tport_status st = place(p, slot, uses, on);
        p->cache[0] = saved;
        p->n_cache = n_cache;
        p->forced = NULL;
        if (st == TPORT_STATUS_OK && *on != forced)
            st = tport_error(TPORT_STATUS_UNSUPPORTED, "%s: place: backend '%s' does not take %s", p->m->file->path,
                             forced->name, name);
        if (st == TPORT_STATUS_OK)
            (*slot)->pinned = forced;
        return st;
    }
    tport_type_id from = tport_tensor_type(w);
    int64_t ne0 = tport_tensor_ne(w, 0), want = p->weight_type;
    if (want >= 0 && ne0 % tport_type_get((tport_type_id)want)->block_size) {
        /* as llama.cpp's quantize does: such a weight keeps its own type
         * (or what its backend needs) */
        want = -1;
        p->n_unfit++;
        bool seen = false;
        for (int i = 0; i < p->n_unfit_ne0; i++)
            seen = seen || p->unfit_ne0[i] == ne0;
        if (!seen && p->n_unfit_ne0 < 4)
            p->unfit_ne0[p->n_unfit_ne0++] = ne0;
    }
    if (tport_tensor_ne(w, 2) > 1)
        uses = USE_MUL_MAT_ID;
    const decision *d = lookup3(p, from, ne0, tport_tensor_ne(w, 1), tport_tensor_ne(w, 2), uses, want, name);
    if (!d->backend) {
        if (want >= 0) {
            char who[96];
            if (p->forced)
                snprintf(who, sizeof who, "backend '%s' does not run", p->forced->name);
            else
                snprintf(who, sizeof who, "no backend runs");
            return tport_error(TPORT_STATUS_UNSUPPORTED, "%s: %s %s with %s [%lld x %lld] as %s", p->m->file->path,
                               who, uses_name(uses), name, (long long)d->ne0, (long long)d->ne1,
                               tport_type_get((tport_type_id)want)->name);
        }
        /* nothing to convert to; the scheduler will say who cannot run it */
        tport_log(TPORT_LOG_DEBUG, "placement: %s (%s): no backend takes it", name, tport_type_get(from)->name);
        return TPORT_STATUS_OK;
    }
    tport_log(TPORT_LOG_DEBUG, "placement: %s (%s [%lld x %lld], %s) on %s as %s", name,
              tport_type_get(from)->name, (long long)d->ne0, (long long)d->ne1, uses_name(uses),
              d->backend->name, tport_type_get(d->to)->name);
    *on = d->backend;
    if (d->to == from) {
        home_for(p, *slot, d);
        return TPORT_STATUS_OK;
    }
    tport_convert_report rep;
    tport_status st = convert_weight(p->m, slot, d->to, &rep);
    if (st == TPORT_STATUS_OK) {
        note(p, d, &rep);
        home_for(p, *slot, d);
    }
    return st;
}

/* Whether a table that is both gathered and multiplied (a tied embedding)
 * should live where its product runs, on a device with memory of its own
 * that takes it as stored: the product reads all of it every token, the
 * gather a few rows, which a host backend still finds in the file's
 * mapping (the host's copy stays valid).  Placed for both uses on one
 * backend instead, a device that does not gather would be sent the whole
 * table every token. */
static bool product_on_device(placer *p, const tport_tensor *w) {
    if (p->weight_type >= 0 || p->forced)
        return false;
    tport_type_id from = tport_tensor_type(w);
    const decision *d = lookup(p, from, tport_tensor_ne(w, 0), tport_tensor_ne(w, 1), USE_MUL_MAT, -1,
                               tport_tensor_name(w));
    return d->backend && d->backend->mem.device_memory && d->to == from;
}

/* Logs one line per distinct conversion (and one for weights a requested
 * type does not fit) and keeps the lines in the model. */
static tport_status report(placer *p) {
    if (!p->n_notes && !p->n_unfit)
        return TPORT_STATUS_OK;
    size_t cap = (size_t)(p->n_notes + 1) * 320, used = 0;
    char *text = malloc(cap), line[320];
    if (!text)
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    text[0] = '\0';
    for (int i = 0; i <= p->n_notes; i++) {
        if (i == p->n_notes) {
            if (!p->n_unfit)
                break;
            const tport_type_info *t = tport_type_get((tport_type_id)p->weight_type);
            char sizes[96] = "";
            for (int k = 0, at = 0; k < p->n_unfit_ne0 && at < (int)sizeof sizes; k++)
                at += snprintf(sizes + at, sizeof sizes - (size_t)at, "%s%lld", k ? ", " : "",
                               (long long)p->unfit_ne0[k]);
            snprintf(line, sizeof line, "%d tensor%s not converted to %s: rows of %s elements are not whole "
                     "blocks of %lld", p->n_unfit, p->n_unfit == 1 ? "" : "s", t->name, sizes,
                     (long long)t->block_size);
        } else {
            const conv_note *n = &p->notes[i];
            const char *from = tport_type_get(n->from)->name, *to = tport_type_get(n->to)->name;
            char why[96];
            if (n->asked)
                snprintf(why, sizeof why, "as weight type %s was asked for", to);
            else
                snprintf(why, sizeof why, "which does not take %s", from);
            if (n->kind == TPORT_CONV_LOSSY)
                snprintf(line, sizeof line, "%d tensor%s %s -> %s (lossy: rmse %.3g, max error %.3g) for backend "
                         "%s, %s", n->count, n->count == 1 ? "" : "s", from, to,
                         n->n > 0 ? sqrt(n->sum_sq / n->n) : 0.0, n->max_err, n->backend, why);
            else
                snprintf(line, sizeof line, "%d tensor%s %s -> %s (lossless) for backend %s, %s", n->count,
                         n->count == 1 ? "" : "s", from, to, n->backend, why);
        }
        tport_log(TPORT_LOG_WARN, "%s", line);
        used += (size_t)snprintf(text + used, cap - used, "%s%s", used ? "\n" : "", line);
    }
    free(p->m->placement_report);
    p->m->placement_report = text;
    return TPORT_STATUS_OK;
}

tport_status tport_model_place_weights(tport_model *m, const char *backend, const char *weight_type,
                                       const char *overrides) {
    placer *p = calloc(1, sizeof *p);
    if (p)
        p->homes = calloc(MAX_HOMES, sizeof *p->homes);
    if (!p || !p->homes) {
        free(p);
        return tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
    }
    p->m = m;
    p->weight_type = -1;
    tport_status st = parse_overrides(p, overrides);
    if (backend && !(p->forced = tport_registry_find(backend)))
        st = tport_error(TPORT_STATUS_UNSUPPORTED, "backend '%s' is not available", backend);
    if (st == TPORT_STATUS_OK && weight_type) {
        p->weight_type = tport_type_from_name(weight_type);
        const tport_type_traits *tr = p->weight_type >= 0 ? tport_traits((tport_type_id)p->weight_type) : NULL;
        if (!tr || !tr->from_float)
            st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "weight type '%s' %s (see tport types)", weight_type,
                             tr ? "has no quantizer" : "is unknown");
    }
    /* a pipeline stage places (and converts) only the weights it bound */
    bool tied = m->w.output && m->w.output == m->w.tok_embd;
    const tport_active_backend *on = NULL, *out_on = NULL;
    unsigned embd_uses = (m->has_embedding ? USE_GET_ROWS : 0) | (tied ? USE_MUL_MAT : 0);
    if (st == TPORT_STATUS_OK && embd_uses == (USE_GET_ROWS | USE_MUL_MAT) && product_on_device(p, m->w.tok_embd))
        embd_uses = USE_MUL_MAT;
    if (st == TPORT_STATUS_OK && m->w.tok_embd)
        st = place(p, &m->w.tok_embd, embd_uses, &out_on);
    if (tied)
        m->w.output = m->w.tok_embd;
    else if (st == TPORT_STATUS_OK && m->w.output)
        st = place(p, &m->w.output, USE_MUL_MAT, &out_on);
    /* the embedding norm feeds the first layer's matrices, which run where
     * the embedding does in practice; position embeddings are gathered */
    if (st == TPORT_STATUS_OK && m->w.pos_embd)
        st = place(p, &m->w.pos_embd, USE_GET_ROWS, &on);
    /* a norm weight (or bias) lives with the matrices its result feeds */
    home(p, m->w.output_norm, out_on);
    home(p, m->w.output_norm_b, out_on);
    home(p, m->w.output_b, out_on);
    home(p, m->w.tok_norm, out_on);
    home(p, m->w.tok_norm_b, out_on);
    /* each side of a layer (the table's TENSOR_FFN): its matrices where
     * mul_mat takes them, its vectors with the first of them */
    static const unsigned matrices[2] = {TPORT_LAYER_ATTN_MATRICES, TPORT_LAYER_FFN_MATRICES};
    static const unsigned vectors[2] = {TPORT_LAYER_ATTN_VECTORS, TPORT_LAYER_FFN_VECTORS};
    for (int32_t i = m->layer_begin; i < m->layer_end && st == TPORT_STATUS_OK; i++) {
        for (int side = 0; side < 2 && st == TPORT_STATUS_OK; side++) {
            tport_tensor **slots[64];
            const tport_active_backend *side_on = NULL;
            int n = tport_model_layer_weights(m, i, matrices[side], slots, 64);
            for (int k = 0; k < n && st == TPORT_STATUS_OK; k++) {
                if (!*slots[k])
                    continue;
                st = place(p, slots[k], USE_MUL_MAT, &on);
                if (!side_on)
                    side_on = on;
            }
            n = tport_model_layer_weights(m, i, vectors[side], slots, 64);
            for (int k = 0; k < n; k++) {
                /* a bias per expert (2-D, read by add_id) stays in the file
                 * for a host-memory backend: a layout of its own (the
                 * CPU's repacked matrices) serves only products */
                if (*slots[k] && tport_tensor_ne(*slots[k], 1) > 1 && side_on && !side_on->mem.device_memory)
                    continue;
                home(p, *slots[k], side_on);
            }
        }
    }
    if (st == TPORT_STATUS_OK)
        st = report(p);
    if (st == TPORT_STATUS_OK)
        st = tport_model_upload_weights(m, p->homes, p->n_homes);
    for (int i = 0; i < p->n_overrides; i++)
        regfree(&p->overrides[i].re);
    free(p->homes);
    free(p);
    return st;
}
