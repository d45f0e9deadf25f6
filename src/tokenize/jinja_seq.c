/* The sequence operations that evaluation, filters and methods share:
 * iterating a value as Python would, slicing it, and reading a call's
 * arguments.  They sit below jinja_eval.c, jinja_filters.c and
 * jinja_methods.c, which call them and each other only downwards. */
#include <string.h>

#include "tokenize/jinja.h"

/* A value as a list to iterate: dicts give their keys, strings their
 * characters, Undefined nothing. */
jlist *jinja_iterable(jctx *c, jv v, int line) {
    switch (v.t) {
    case JT_UNDEF: return jv_list(c).u.l;
    case JT_LIST:
        if (v.u.l->gen) {
            jlist *l = jv_list(c).u.l;
            *l = *v.u.l;
            l->gen = false;
            v.u.l->n = v.u.l->cap = 0;
            v.u.l->items = NULL;
            return l;
        }
        return v.u.l;
    case JT_DICT: {
        if (v.u.d->ns)
            break;
        jlist *l = jv_list(c).u.l;
        for (size_t i = 0; i < v.u.d->n; i++)
            jlist_push(c, l, v.u.d->keys[i]);
        return l;
    }
    case JT_STR: {
        jlist *l = jv_list(c).u.l;
        const char *p = v.u.s->s;
        size_t n = v.u.s->len;
        for (size_t i = 0; i < n;) {
            size_t k = 1;
            while (i + k < n && ((unsigned char)p[i + k] & 0xC0) == 0x80)
                k++;
            jlist_push(c, l, jv_str(c, p + i, k));
            i += k;
        }
        return l;
    }
    default: break;
    }
    jfail(c, line, "'%s' object is not iterable", jv_type_name(v));
}

jv jargs_get(const jargs *a, int pos, const char *kw, jv dflt) {
    if (kw)
        for (int i = 0; i < a->n_kw; i++)
            if (!strcmp(a->kw_names[i]->s, kw))
                return a->kw[i];
    if (pos >= 0 && pos < a->n_pos)
        return a->pos[pos];
    return dflt;
}

static bool slice_bound(jv v, int64_t *out) {
    if (v.t == JT_INT)
        *out = v.u.i;
    else if (v.t == JT_BOOL)
        *out = v.u.b;
    else
        return false;
    return true;
}

/* obj[start:stop:step] with Python's clamping.  jinja2 (3.1.2, Debian's)
 * compiles a slice to a plain Python subscript, not its getitem, so what
 * Python refuses fails here too. */
jv jinja_slice(jctx *c, jv obj, jv start, jv stop, jv step, int line) {
    int64_t st = 1, b_lo = 0, b_hi = 0;
    bool has_lo = !(start.t == JT_NONE || start.t == JT_UNDEF), has_hi = !(stop.t == JT_NONE || stop.t == JT_UNDEF);
    size_t n;
    if (obj.t == JT_LIST && !obj.u.l->gen && !obj.u.l->view)
        n = obj.u.l->n;
    else if (obj.t == JT_STR)
        n = jutf8_count(obj.u.s->s, obj.u.s->len);
    else if (obj.t == JT_DICT && !obj.u.d->ns)
        jfail(c, line, "unhashable type: 'slice'");
    else
        jfail(c, line, "'%s' object is not subscriptable", jv_type_name(obj));
    if ((step.t != JT_NONE && step.t != JT_UNDEF && !slice_bound(step, &st)) || (has_lo && !slice_bound(start, &b_lo)) ||
        (has_hi && !slice_bound(stop, &b_hi)))
        jfail(c, line, "slice indices must be integers or None");
    if (st == 0)
        jfail(c, line, "slice step cannot be zero");
    int64_t len = (int64_t)n, lo, hi;
    if (st > 0) {
        lo = has_lo ? b_lo : 0;
        hi = has_hi ? b_hi : len;
        if (lo < 0) lo = lo + len < 0 ? 0 : lo + len;
        if (lo > len) lo = len;
        if (hi < 0) hi = hi + len < 0 ? 0 : hi + len;
        if (hi > len) hi = len;
    } else {
        lo = has_lo ? b_lo : len - 1;
        hi = has_hi ? b_hi : -1;
        if (has_lo) { if (lo < 0) lo = lo + len < 0 ? -1 : lo + len; if (lo >= len) lo = len - 1; }
        if (has_hi) { if (hi < 0) hi = hi + len < 0 ? -1 : hi + len; if (hi >= len) hi = len - 1; }
    }
    size_t *offs = NULL;
    if (obj.t == JT_STR) {
        offs = jalloc(c, (n + 1) * sizeof *offs);
        size_t k = 0;
        for (size_t i = 0; i < obj.u.s->len; i++)
            if (((unsigned char)obj.u.s->s[i] & 0xC0) != 0x80)
                offs[k++] = i;
        offs[n] = obj.u.s->len;
    }
    jv r = obj.t == JT_LIST ? jv_list(c) : jv_undef();
    jbuf o = {0};
    for (int64_t i = lo; st > 0 ? i < hi : i > hi;) {
        if (obj.t == JT_LIST)
            jlist_push(c, r.u.l, obj.u.l->items[i]);
        else
            jbuf_put(c, &o, obj.u.s->s + offs[i], offs[i + 1] - offs[i]);
        if (__builtin_add_overflow(i, st, &i))
            break;
    }
    if (obj.t == JT_LIST) {
        r.u.l->tuple = obj.u.l->tuple;
        return r;
    }
    return jbuf_value(c, &o);
}
