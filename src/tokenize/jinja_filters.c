/* Jinja's filters and tests with jinja2's semantics (its defaults, such
 * as case-insensitive sort and unique, included), and transformers'
 * tojson, which takes json.dumps's ensure_ascii, indent, separators and
 * sort_keys instead of jinja2's HTML-safe one. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/jinja.h"

static bool is(const char *a, const char *b) { return !strcmp(a, b); }

static int64_t as_int(jctx *c, jv v, int line, const char *what) {
    if (v.t == JT_INT)
        return v.u.i;
    if (v.t == JT_BOOL)
        return v.u.b;
    jfail(c, line, "%s must be an integer", what);
}

static jv need_str(jctx *c, jv v) { return v.t == JT_STR ? v : jv_to_str(c, v); }

/* jinja2 reads a dotted attribute path ("a.b" or "a.0") with getitem
 * semantics for each part. */
static jv attr_path(jctx *c, jv v, jv path, int line) {
    if (path.t == JT_INT) {
        if (v.t == JT_LIST) {
            int64_t i = path.u.i < 0 ? path.u.i + (int64_t)v.u.l->n : path.u.i;
            return i >= 0 && i < (int64_t)v.u.l->n ? v.u.l->items[i] : jv_undef();
        }
        if (v.t == JT_DICT) {
            jv *r = jdict_find(v.u.d, path);
            return r ? *r : jv_undef();
        }
        return jv_undef();
    }
    if (path.t != JT_STR)
        jfail(c, line, "attribute must be a string");
    const char *s = path.u.s->s;
    while (true) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        jv key = jv_str(c, s, n);
        bool digits = n > 0;
        for (size_t i = 0; i < n; i++)
            digits &= s[i] >= '0' && s[i] <= '9';
        if (v.t == JT_DICT && !v.u.d->ns) {
            jv *r = jdict_find(v.u.d, key);
            v = r ? *r : jinja_attr(c, v, key.u.s->s, n, line);
        } else if (digits && v.t == JT_LIST) {
            size_t i = (size_t)strtoull(key.u.s->s, NULL, 10);
            v = i < v.u.l->n ? v.u.l->items[i] : jv_undef();
        } else if (v.t == JT_UNDEF)
            jfail(c, line, "'%s' is undefined", key.u.s->s);
        else
            v = jinja_attr(c, v, key.u.s->s, n, line);
        if (!dot)
            return v;
        s = dot + 1;
    }
}

/* sort keys: lower-cased strings unless case_sensitive */
static jv sort_key(jctx *c, jv v, bool case_sensitive) {
    return !case_sensitive && v.t == JT_STR ? jstr_case(c, v, 'l') : v;
}

typedef struct sort_item {
    jv key, val;
    size_t idx;
} sort_item;

/* merge sort: stable as Python's sort, and usable with jv_compare's
 * failure (which longjmps, so no qsort state is left behind) */
static void merge_sort(jctx *c, sort_item *v, sort_item *tmp, size_t n, bool rev, int line) {
    if (n < 2)
        return;
    size_t h = n / 2;
    merge_sort(c, v, tmp, h, rev, line);
    merge_sort(c, v + h, tmp, n - h, rev, line);
    size_t i = 0, j = h, k = 0;
    while (i < h && j < n) {
        int r = jv_compare(c, v[j].key, v[i].key, line);
        bool take_right = rev ? r > 0 : r < 0;
        tmp[k++] = take_right ? v[j++] : v[i++];
    }
    while (i < h)
        tmp[k++] = v[i++];
    while (j < n)
        tmp[k++] = v[j++];
    memcpy(v, tmp, n * sizeof *v);
}

static jv sorted(jctx *c, jlist *l, jv attr, bool case_sensitive, bool rev, int line) {
    size_t n = l->n;
    sort_item *v = jalloc(c, (n + 1) * sizeof *v), *tmp = jalloc(c, (n + 1) * sizeof *tmp);
    for (size_t i = 0; i < n; i++) {
        jv k = attr.t == JT_UNDEF || attr.t == JT_NONE ? l->items[i] : attr_path(c, l->items[i], attr, line);
        v[i] = (sort_item){sort_key(c, k, case_sensitive), l->items[i], i};
    }
    merge_sort(c, v, tmp, n, rev, line);
    jv out = jv_list(c);
    for (size_t i = 0; i < n; i++)
        jlist_push(c, out.u.l, v[i].val);
    return out;
}

/* jinja2's title filter (not str.title): the text is cut before runs of
 * whitespace and - ( { [ <, and each piece gets its first character upper
 * and the rest lower; "'k'" stays "'k'" as its first character is the quote. */
static jv title(jctx *c, jv s) {
    jbuf b = {0};
    jbuf_put(c, &b, s.u.s->s, s.u.s->len);
    bool piece_start = true;
    for (size_t i = 0; i < b.n; i++) {
        char ch = b.p[i];
        bool sep = ch == '-' || ch == '(' || ch == '{' || ch == '[' || ch == '<' || ch == ' ' || (ch >= '\t' && ch <= '\r');
        if (sep) {
            piece_start = true;
            continue;
        }
        if (piece_start && ch >= 'a' && ch <= 'z')
            b.p[i] = (char)(ch - 32);
        else if (!piece_start && ch >= 'A' && ch <= 'Z')
            b.p[i] = (char)(ch + 32);
        piece_start = false;
    }
    return jbuf_value(c, &b);
}

static jv first_last(jctx *c, jv v, bool last, int line) {
    if (v.t == JT_LIST && v.u.l->gen) {
        /* next(iter(gen)) takes one item; reversed(gen) fails */
        if (last)
            jfail(c, line, "'generator' object is not reversible");
        if (!v.u.l->n)
            return jv_undef();
        jv x = v.u.l->items[0];
        memmove(v.u.l->items, v.u.l->items + 1, (v.u.l->n - 1) * sizeof *v.u.l->items);
        v.u.l->n--;
        return x;
    }
    if (v.t == JT_LIST)
        return v.u.l->n ? v.u.l->items[last ? v.u.l->n - 1 : 0] : jv_undef();
    jlist *l = jinja_iterable(c, v, line);
    return l->n ? l->items[last ? l->n - 1 : 0] : jv_undef();
}

static jv indent(jctx *c, jv s, jv width, bool first, bool blank) {
    jv ind;
    if (width.t == JT_STR)
        ind = width;
    else {
        int64_t w = width.t == JT_INT ? width.u.i : 4;
        if (w < 0)
            w = 0;
        if (w > 1000)
            jfail(c, 0, "indent width too large");
        char sp[1001];
        memset(sp, ' ', (size_t)w);
        ind = jv_str(c, sp, (size_t)w);
    }
    /* jinja2 appends a newline and takes str.splitlines() */
    jv text = jv_str(c, s.u.s->s, s.u.s->len);
    jbuf tb = {0};
    jbuf_put(c, &tb, text.u.s->s, text.u.s->len);
    jbuf_put(c, &tb, "\n", 1);
    jargs none = {0};
    jlist *lines = jinja_method(c, jbuf_value(c, &tb), "splitlines", &none).u.l;
    jbuf o = {0};
    if (first)
        jbuf_put(c, &o, ind.u.s->s, ind.u.s->len);
    for (size_t i = 0; i < lines->n; i++) {
        const jstr *ln = lines->items[i].u.s;
        if (i) {
            jbuf_put(c, &o, "\n", 1);
            if (blank || ln->len)
                jbuf_put(c, &o, ind.u.s->s, ind.u.s->len);
        }
        jbuf_put(c, &o, ln->s, ln->len);
    }
    return jbuf_value(c, &o);
}

static bool run_test(jctx *c, const char *name, jv v, const jargs *a) {
    bool r;
    if (!jinja_test(c, name, v, a, &r))
        jfail(c, a->line, "no test named '%s'", name);
    return r;
}

/* select/reject/selectattr/rejectattr */
static jv select_items(jctx *c, jv seq, const jargs *a, bool attr, bool keep) {
    if (!jv_truthy(seq)) /* jinja2 checks `if seq:` before iterating */
        return jv_gen(c);
    jlist *l = jinja_iterable(c, seq, a->line);
    int first = attr ? 1 : 0;
    jv attrname = attr ? jargs_get(a, 0, NULL, jv_undef()) : jv_undef();
    jv test = jargs_get(a, first, NULL, jv_undef());
    if (test.t != JT_UNDEF && test.t != JT_STR)
        jfail(c, a->line, "test name must be a string");
    jargs targs = {.line = a->line, .pos = a->pos + first + 1, .n_pos = a->n_pos > first + 1 ? a->n_pos - first - 1 : 0};
    jv out = jv_gen(c);
    for (size_t i = 0; i < l->n; i++) {
        jv item = l->items[i], v = attr ? attr_path(c, item, attrname, a->line) : item;
        bool t = test.t == JT_STR ? run_test(c, test.u.s->s, v, &targs) : jv_truthy(v);
        if (t == keep)
            jlist_push(c, out.u.l, item);
    }
    return out;
}

static jv tojson(jctx *c, jv v, const jargs *a) {
    jjson_opts o = {.indent = -1};
    o.ensure_ascii = jv_truthy(jargs_get(a, 0, "ensure_ascii", jv_bool(false)));
    jv ind = jargs_get(a, 1, "indent", jv_none());
    jv seps = jargs_get(a, 2, "separators", jv_none());
    o.sort_keys = jv_truthy(jargs_get(a, 3, "sort_keys", jv_bool(false)));
    if (ind.t == JT_INT || ind.t == JT_BOOL) {
        int64_t w = ind.t == JT_BOOL ? ind.u.b : ind.u.i;
        o.indent = w < 0 ? 0 : w > 64 ? 64 : (int)w;
    } else if (ind.t == JT_STR) {
        /* a string indent is used as written; only spaces are supported */
        for (size_t i = 0; i < ind.u.s->len; i++)
            if (ind.u.s->s[i] != ' ')
                jfail(c, a->line, "tojson: only space indents are supported");
        o.indent = (int)(ind.u.s->len > 64 ? 64 : ind.u.s->len);
    } else if (ind.t != JT_NONE)
        jfail(c, a->line, "tojson: bad indent");
    if (seps.t == JT_LIST && seps.u.l->n == 2 && seps.u.l->items[0].t == JT_STR && seps.u.l->items[1].t == JT_STR) {
        o.item_sep = seps.u.l->items[0].u.s->s;
        o.key_sep = seps.u.l->items[1].u.s->s;
    } else if (seps.t != JT_NONE)
        jfail(c, a->line, "tojson: separators must be two strings");
    jbuf b = {0};
    jv_write_json(c, &b, v, &o, 0, a->line);
    return jbuf_value(c, &b);
}

static jv to_int(jctx *c, jv v, jv dflt, int line) {
    if (v.t == JT_INT)
        return v;
    if (v.t == JT_BOOL)
        return jv_int(v.u.b);
    if (v.t == JT_FLOAT)
        return isfinite(v.u.f) && fabs(v.u.f) < 9.2e18 ? jv_int((int64_t)v.u.f) : dflt;
    if (v.t == JT_STR) {
        jv t = jstr_strip(c, v, jv_none(), true, true);
        char *end;
        const char *s = t.u.s->s;
        if (!*s)
            return dflt;
        errno = 0;
        long long i = strtoll(s, &end, 10);
        if (!*end && errno == ERANGE)
            jfail(c, line, "int: %s is beyond 64-bit integers", s);
        if (!*end)
            return jv_int(i);
        /* Python's float() reads no hex; strtod would */
        double f = strpbrk(s, "xXpP") ? NAN : strtod(s, &end);
        if (!isnan(f) && !*end && isfinite(f) && fabs(f) < 9.2e18)
            return jv_int((int64_t)f);
    }
    return dflt;
}

bool jinja_filter(jctx *c, const char *f, jv v, const jargs *a, jv *out) {
    int line = a->line;
    jv arg0 = jargs_get(a, 0, NULL, jv_undef());
    if (is(f, "length") || is(f, "count")) {
        switch (v.t) {
        case JT_UNDEF: *out = jv_int(0); return true;
        case JT_STR: *out = jv_int((int64_t)jutf8_count(v.u.s->s, v.u.s->len)); return true;
        case JT_LIST: if (!v.u.l->gen) { *out = jv_int((int64_t)v.u.l->n); return true; } break;
        case JT_DICT: if (!v.u.d->ns) { *out = jv_int((int64_t)v.u.d->n); return true; } break;
        default: break;
        }
        jfail(c, line, "object of type '%s' has no len()", jv_type_name(v));
    }
    if (is(f, "join")) {
        jv sep = jargs_get(a, 0, "d", jv_cstr(c, "")), attr = jargs_get(a, 1, "attribute", jv_none());
        jlist *l = jinja_iterable(c, v, line);
        sep = need_str(c, sep);
        jbuf b = {0};
        for (size_t i = 0; i < l->n; i++) {
            if (i)
                jbuf_put(c, &b, sep.u.s->s, sep.u.s->len);
            jv_write_str(c, &b, attr.t == JT_NONE ? l->items[i] : attr_path(c, l->items[i], attr, line));
        }
        *out = jbuf_value(c, &b);
        return true;
    }
    if (is(f, "tojson")) { *out = tojson(c, v, a); return true; }
    if (is(f, "trim")) {
        jv chars = jargs_get(a, 0, "chars", jv_none());
        *out = jstr_strip(c, need_str(c, v), chars, true, true);
        out->markup = v.t == JT_STR && v.markup;
        return true;
    }
    if (is(f, "upper")) { *out = jstr_case(c, need_str(c, v), 'u'); out->markup = v.markup; return true; }
    if (is(f, "lower")) { *out = jstr_case(c, need_str(c, v), 'l'); out->markup = v.markup; return true; }
    if (is(f, "title")) { *out = title(c, need_str(c, v)); out->markup = v.markup; return true; }
    if (is(f, "capitalize")) { *out = jstr_case(c, need_str(c, v), 'c'); out->markup = v.markup; return true; }
    if (is(f, "first") || is(f, "last")) { *out = first_last(c, v, f[0] == 'l', line); return true; }
    if (is(f, "default") || is(f, "d")) {
        jv dflt = jargs_get(a, 0, "default_value", jv_cstr(c, ""));
        bool boolean = jv_truthy(jargs_get(a, 1, "boolean", jv_bool(false)));
        *out = v.t == JT_UNDEF || (boolean && !jv_truthy(v)) ? dflt : v;
        return true;
    }
    if (is(f, "safe")) {
        *out = need_str(c, v);
        out->markup = true;
        return true;
    }
    if (is(f, "e") || is(f, "escape") || is(f, "forceescape")) {
        *out = jv_escape(c, f[0] == 'f' ? need_str(c, v) : v);
        return true;
    }
    if (is(f, "string")) { /* soft_str: Markup stays Markup */
        *out = need_str(c, v);
        return true;
    }
    if (is(f, "int")) {
        *out = to_int(c, v, jargs_get(a, 0, "default", jv_int(0)), line);
        return true;
    }
    if (is(f, "float")) {
        jv dflt = jargs_get(a, 0, "default", jv_float(0));
        if (jv_is_number(v))
            *out = jv_float(jv_num(v));
        else if (v.t == JT_STR) {
            jv t = jstr_strip(c, v, jv_none(), true, true);
            char *end;
            double x = strtod(t.u.s->s, &end);
            *out = t.u.s->len && !*end ? jv_float(x) : dflt;
        } else
            *out = dflt;
        return true;
    }
    if (is(f, "list")) {
        jlist *l = jinja_iterable(c, v, line);
        *out = jv_list(c);
        for (size_t i = 0; i < l->n; i++)
            jlist_push(c, out->u.l, l->items[i]);
        return true;
    }
    if (is(f, "map")) {
        *out = jv_gen(c);
        if (!jv_truthy(v))
            return true;
        jlist *l = jinja_iterable(c, v, line);
        jv attr = jargs_get(a, -1, "attribute", jv_undef());
        if (attr.t != JT_UNDEF) {
            jv dflt = jargs_get(a, -1, "default", jv_undef());
            for (size_t i = 0; i < l->n; i++) {
                jv x = attr_path(c, l->items[i], attr, line);
                jlist_push(c, out->u.l, x.t == JT_UNDEF ? dflt : x);
            }
            return true;
        }
        if (arg0.t != JT_STR)
            jfail(c, line, "map needs a filter name or attribute=");
        jargs rest = {.line = line, .pos = a->pos + 1, .n_pos = a->n_pos - 1, .kw = a->kw, .kw_names = a->kw_names, .n_kw = a->n_kw};
        for (size_t i = 0; i < l->n; i++) {
            jv x;
            if (!jinja_filter(c, arg0.u.s->s, l->items[i], &rest, &x))
                jfail(c, line, "no filter named '%s'", arg0.u.s->s);
            jlist_push(c, out->u.l, x);
        }
        return true;
    }
    if (is(f, "select")) { *out = select_items(c, v, a, false, true); return true; }
    if (is(f, "reject")) { *out = select_items(c, v, a, false, false); return true; }
    if (is(f, "selectattr")) { *out = select_items(c, v, a, true, true); return true; }
    if (is(f, "rejectattr")) { *out = select_items(c, v, a, true, false); return true; }
    if (is(f, "unique")) {
        jlist *l = jinja_iterable(c, v, line);
        bool cs = jv_truthy(jargs_get(a, 0, "case_sensitive", jv_bool(false)));
        jv attr = jargs_get(a, 1, "attribute", jv_none());
        jv seen = jv_list(c);
        *out = jv_gen(c);
        for (size_t i = 0; i < l->n; i++) {
            jv k = sort_key(c, attr.t == JT_NONE ? l->items[i] : attr_path(c, l->items[i], attr, line), cs);
            bool dup = false;
            for (size_t j = 0; j < seen.u.l->n && !dup; j++) {
                jstep(c, line); /* quadratic: every comparison counts */
                dup = jv_equal(seen.u.l->items[j], k);
            }
            if (!dup) {
                jlist_push(c, seen.u.l, k);
                jlist_push(c, out->u.l, l->items[i]);
            }
        }
        return true;
    }
    if (is(f, "reverse")) {
        if (v.t == JT_STR) {
            *out = jinja_slice(c, v, jv_none(), jv_none(), jv_int(-1), line);
            return true;
        }
        jlist *l = jinja_iterable(c, v, line);
        *out = jv_gen(c); /* reversed(): an iterator */
        for (size_t i = l->n; i-- > 0;)
            jlist_push(c, out->u.l, l->items[i]);
        return true;
    }
    if (is(f, "sort")) {
        jlist *l = jinja_iterable(c, v, line);
        bool rev = jv_truthy(jargs_get(a, 0, "reverse", jv_bool(false)));
        bool cs = jv_truthy(jargs_get(a, 1, "case_sensitive", jv_bool(false)));
        *out = sorted(c, l, jargs_get(a, 2, "attribute", jv_none()), cs, rev, line);
        return true;
    }
    if (is(f, "items") || is(f, "dictsort")) {
        if (v.t == JT_UNDEF && f[0] == 'i') { /* items() of Undefined is empty; dictsort reads .items() */
            *out = jv_gen(c);
            return true;
        }
        if (v.t != JT_DICT)
            jfail(c, line, "%s expects a mapping", f);
        jargs none = {.line = line};
        jv items = jinja_method(c, v, "items", &none);
        items.u.l->view = 0;
        if (f[0] == 'i') {
            *out = items;
            out->u.l->gen = true;
            return true;
        }
        bool cs = jv_truthy(jargs_get(a, 0, "case_sensitive", jv_bool(false)));
        jv by = jargs_get(a, 1, "by", jv_cstr(c, "key"));
        bool rev = jv_truthy(jargs_get(a, 2, "reverse", jv_bool(false)));
        int pos = by.t == JT_STR && !strcmp(by.u.s->s, "value") ? 1 : 0;
        if (by.t != JT_STR || (pos == 0 && strcmp(by.u.s->s, "key")))
            jfail(c, line, "You can only sort by either \"key\" or \"value\"");
        *out = sorted(c, items.u.l, jv_int(pos), cs, rev, line);
        return true;
    }
    if (is(f, "indent")) {
        if (v.t != JT_STR) /* jinja2 appends "\n" to the value: only strings take it */
            jfail(c, line, "indent: unsupported operand type(s) for +=: '%s' and 'str'", jv_type_name(v));
        *out = indent(c, v, jargs_get(a, 0, "width", jv_int(4)), jv_truthy(jargs_get(a, 1, "first", jv_bool(false))),
                      jv_truthy(jargs_get(a, 2, "blank", jv_bool(false))));
        return true;
    }
    if (is(f, "replace")) {
        jv cnt = jargs_get(a, 2, "count", jv_none());
        *out = jstr_replace(c, need_str(c, v), need_str(c, arg0), need_str(c, jargs_get(a, 1, NULL, jv_undef())),
                            cnt.t == JT_NONE ? -1 : as_int(c, cnt, line, "count"), line);
        return true;
    }
    if (is(f, "abs")) {
        if (v.t == JT_INT && v.u.i != INT64_MIN)
            *out = jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        else if (v.t == JT_BOOL)
            *out = jv_int(v.u.b);
        else if (v.t == JT_FLOAT)
            *out = jv_float(fabs(v.u.f));
        else
            jfail(c, line, "bad operand type for abs(): '%s'", jv_type_name(v));
        return true;
    }
    if (is(f, "round")) {
        int64_t prec = as_int(c, jargs_get(a, 0, "precision", jv_int(0)), line, "precision");
        jv method = jargs_get(a, 1, "method", jv_cstr(c, "common"));
        if (!jv_is_number(v))
            jfail(c, line, "round needs a number");
        if (v.t != JT_FLOAT && is(method.t == JT_STR ? method.u.s->s : "", "common")) {
            /* Python's round() of an int is that int */
            *out = jv_int(v.t == JT_BOOL ? v.u.b : v.u.i);
            return true;
        }
        double x = jv_num(v), m = pow(10, (double)(prec < -300 ? -300 : prec > 300 ? 300 : prec));
        const char *how = method.t == JT_STR ? method.u.s->s : "";
        if (is(how, "common") && prec >= 0 && prec <= 300 && isfinite(x)) {
            /* Python's round(): half to even on the exact binary value, which
             * is what a correctly rounded %.*f gives */
            char buf[512];
            snprintf(buf, sizeof buf, "%.*f", (int)prec, x);
            x = strtod(buf, NULL);
        } else if (is(how, "common"))
            x = nearbyint(x * m) / m;
        else if (is(how, "floor"))
            x = floor(x * m) / m;
        else if (is(how, "ceil"))
            x = ceil(x * m) / m;
        else
            jfail(c, line, "method must be common, ceil or floor");
        *out = jv_float(x);
        return true;
    }
    if (is(f, "min") || is(f, "max")) {
        jlist *l = jinja_iterable(c, v, line);
        bool cs = jv_truthy(jargs_get(a, 0, "case_sensitive", jv_bool(false)));
        jv attr = jargs_get(a, 1, "attribute", jv_none());
        if (!l->n) {
            *out = jv_undef();
            return true;
        }
        size_t best = 0;
        jv bk = sort_key(c, attr.t == JT_NONE ? l->items[0] : attr_path(c, l->items[0], attr, line), cs);
        for (size_t i = 1; i < l->n; i++) {
            jv k = sort_key(c, attr.t == JT_NONE ? l->items[i] : attr_path(c, l->items[i], attr, line), cs);
            int r = jv_compare(c, k, bk, line);
            if (f[1] == 'i' ? r < 0 : r > 0) {
                best = i;
                bk = k;
            }
        }
        *out = l->items[best];
        return true;
    }
    if (is(f, "sum")) {
        jlist *l = jinja_iterable(c, v, line);
        jv attr = jargs_get(a, 0, "attribute", jv_none());
        jv acc = jargs_get(a, 1, "start", jv_int(0));
        for (size_t i = 0; i < l->n; i++) {
            jv x = attr.t == JT_NONE ? l->items[i] : attr_path(c, l->items[i], attr, line);
            if (!jv_is_number(x) || !jv_is_number(acc))
                jfail(c, line, "sum needs numbers");
            if (x.t == JT_FLOAT || acc.t == JT_FLOAT)
                acc = jv_float(jv_num(acc) + jv_num(x));
            else {
                int64_t r;
                if (__builtin_add_overflow(as_int(c, acc, line, "sum"), as_int(c, x, line, "sum"), &r))
                    jfail(c, line, "integer overflow");
                acc = jv_int(r);
            }
        }
        *out = acc;
        return true;
    }
    if (is(f, "batch")) {
        int64_t size = as_int(c, jargs_get(a, 0, "linecount", jv_undef()), line, "linecount");
        jv fill = jargs_get(a, 1, "fill_with", jv_none());
        if (size <= 0)
            jfail(c, line, "batch size must be positive");
        jlist *l = jinja_iterable(c, v, line);
        *out = jv_gen(c);
        jv cur = jv_undef();
        for (size_t i = 0; i < l->n; i++) {
            if (cur.t == JT_UNDEF || cur.u.l->n == (size_t)size) {
                cur = jv_list(c);
                jlist_push(c, out->u.l, cur);
            }
            jlist_push(c, cur.u.l, l->items[i]);
        }
        if (cur.t == JT_LIST && fill.t != JT_NONE)
            while (cur.u.l->n < (size_t)size)
                jlist_push(c, cur.u.l, fill);
        return true;
    }
    if (is(f, "wordcount")) { /* jinja2 counts the matches of \\w+ */
        jv s = need_str(c, v);
        int64_t words = 0;
        bool in_word = false;
        for (size_t i = 0; i < s.u.s->len; i++) {
            unsigned char ch = (unsigned char)s.u.s->s[i];
            bool w = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch >= 0x80;
            words += w && !in_word;
            in_word = w;
        }
        *out = jv_int(words);
        return true;
    }
    if (is(f, "attr")) {
        jv name = need_str(c, arg0);
        *out = jinja_attr(c, v, name.u.s->s, name.u.s->len, line);
        return true;
    }
    if (is(f, "center")) {
        jv s = need_str(c, v);
        int64_t w = as_int(c, jargs_get(a, 0, "width", jv_int(80)), line, "width");
        size_t n = jutf8_count(s.u.s->s, s.u.s->len);
        if (w > 100000)
            jfail(c, line, "width too large");
        if ((int64_t)n >= w) {
            *out = s;
            return true;
        }
        size_t pad = (size_t)w - n, left = pad / 2 + (pad & (size_t)w & 1);
        jbuf b = {0};
        for (size_t i = 0; i < left; i++)
            jbuf_put(c, &b, " ", 1);
        jbuf_put(c, &b, s.u.s->s, s.u.s->len);
        for (size_t i = left; i < pad; i++)
            jbuf_put(c, &b, " ", 1);
        *out = jbuf_value(c, &b);
        return true;
    }
    return false;
}

/* Tests that take no argument beyond the value (Python refuses one). */
static const char *const unary_tests[] = {"defined", "undefined", "none", "boolean", "true", "false", "integer", "float",
                                          "number", "string", "mapping", "iterable", "sequence", "callable", "odd",
                                          "even", "lower", "upper", NULL};

bool jinja_test(jctx *c, const char *t, jv v, const jargs *a, bool *out) {
    jv arg = jargs_get(a, 0, NULL, jv_undef());
    for (int i = 0; unary_tests[i]; i++)
        if (is(t, unary_tests[i]) && a->n_pos + a->n_kw > 0)
            jfail(c, a->line, "test_%s() takes 1 positional argument but %d were given", t, 1 + a->n_pos + a->n_kw);
    if (is(t, "defined")) *out = v.t != JT_UNDEF;
    else if (is(t, "undefined")) *out = v.t == JT_UNDEF;
    else if (is(t, "none")) *out = v.t == JT_NONE;
    else if (is(t, "boolean")) *out = v.t == JT_BOOL;
    else if (is(t, "true")) *out = v.t == JT_BOOL && v.u.b;
    else if (is(t, "false")) *out = v.t == JT_BOOL && !v.u.b;
    else if (is(t, "integer")) *out = v.t == JT_INT;
    else if (is(t, "float")) *out = v.t == JT_FLOAT;
    else if (is(t, "number")) *out = jv_is_number(v);
    else if (is(t, "string")) *out = v.t == JT_STR;
    else if (is(t, "mapping")) *out = v.t == JT_DICT && !v.u.d->ns;
    else if (is(t, "iterable")) *out = v.t == JT_UNDEF || v.t == JT_STR || v.t == JT_LIST || (v.t == JT_DICT && !v.u.d->ns);
    else if (is(t, "sequence")) *out = v.t == JT_UNDEF || v.t == JT_STR || (v.t == JT_LIST && !v.u.l->gen) || (v.t == JT_DICT && !v.u.d->ns);
    else if (is(t, "callable")) *out = v.t == JT_FUNC || v.t == JT_UNDEF; /* Undefined has __call__ (that fails) */
    else if (is(t, "odd") || is(t, "even")) {
        if (v.t == JT_FLOAT) { /* value % 2 == 1 (or 0), Python's float modulo */
            double m = fmod(v.u.f, 2);
            if (m < 0)
                m += 2;
            *out = t[0] == 'o' ? m == 1 : m == 0;
        } else {
            int64_t i = as_int(c, v, a->line, "odd/even value");
            *out = (i % 2 != 0) == (t[0] == 'o');
        }
    } else if (is(t, "divisibleby") && (v.t == JT_FLOAT || arg.t == JT_FLOAT)) {
        if (!jv_is_number(v) || !jv_is_number(arg) || jv_num(arg) == 0)
            jfail(c, a->line, "divisibleby needs numbers and a divisor that is not zero");
        *out = fmod(jv_num(v), jv_num(arg)) == 0;
    } else if (is(t, "divisibleby")) {
        int64_t d = as_int(c, arg, a->line, "divisor");
        if (!d)
            jfail(c, a->line, "integer division or modulo by zero");
        *out = d == -1 || as_int(c, v, a->line, "value") % d == 0;
    } else if (is(t, "eq") || is(t, "equalto") || is(t, "==")) *out = jv_equal(v, arg);
    else if (is(t, "ne") || is(t, "!=")) *out = !jv_equal(v, arg);
    else if (is(t, "lt") || is(t, "lessthan") || is(t, "<")) *out = jv_compare(c, v, arg, a->line) < 0;
    else if (is(t, "le") || is(t, "<=")) *out = jv_compare(c, v, arg, a->line) <= 0;
    else if (is(t, "gt") || is(t, "greaterthan") || is(t, ">")) *out = jv_compare(c, v, arg, a->line) > 0;
    else if (is(t, "ge") || is(t, ">=")) *out = jv_compare(c, v, arg, a->line) >= 0;
    else if (is(t, "in")) {
        if (arg.t == JT_UNDEF) /* Undefined iterates as nothing */
            *out = false;
        else if (arg.t == JT_STR) {
            if (v.t != JT_STR)
                jfail(c, a->line, "'in <string>' requires string as left operand");
            *out = strstr(arg.u.s->s, v.u.s->s) != NULL || !v.u.s->len;
        } else if (arg.t == JT_LIST) {
            *out = false;
            for (size_t i = 0; i < arg.u.l->n && !*out; i++)
                *out = jv_equal(arg.u.l->items[i], v);
        } else if (arg.t == JT_DICT)
            *out = jdict_find(arg.u.d, v) != NULL;
        else
            jfail(c, a->line, "argument of type '%s' is not iterable", jv_type_name(arg));
    } else if (is(t, "sameas")) {
        *out = v.t == arg.t && (v.t == JT_LIST ? v.u.l == arg.u.l : v.t == JT_DICT ? v.u.d == arg.u.d : jv_equal(v, arg));
    } else if (is(t, "lower") || is(t, "upper")) {
        jv s = need_str(c, v);
        jargs none = {.line = a->line};
        *out = jv_truthy(jinja_method(c, s, t[0] == 'l' ? "islower" : "isupper", &none));
    } else
        return false;
    return true;
}
