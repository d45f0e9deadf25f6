/* Jinja values: the arena they live in, Python's equality and ordering,
 * and the text forms that must match Python byte for byte (str, repr,
 * float repr). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/jinja.h"

#define CHUNK (64 * 1024)

void *jalloc(jctx *c, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (n > c->mem_limit || c->used > c->mem_limit - n)
        jfail(c, 0, "template needs more than %zu bytes of memory", c->mem_limit);
    jchunk *k = c->chunks;
    if (!k || k->cap - k->used < n) {
        size_t cap = n > CHUNK / 2 ? n : CHUNK;
        jchunk *g = malloc(sizeof *g + cap);
        if (!g)
            jfail(c, 0, "out of memory");
        g->used = 0;
        g->cap = cap;
        /* a big block goes behind the current chunk so the rest of that
         * chunk stays in use */
        if (k && cap != CHUNK) {
            g->next = k->next;
            k->next = g;
        } else {
            g->next = k;
            c->chunks = g;
        }
        k = g;
    }
    void *p = k->data + k->used;
    k->used += n;
    c->used += n;
    memset(p, 0, n);
    return p;
}

_Noreturn void jfail(jctx *c, int line, const char *fmt, ...) {
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0)
        snprintf(c->err, sizeof c->err, "line %d: %s", line, msg);
    else
        snprintf(c->err, sizeof c->err, "%s", msg);
    longjmp(c->fail, 1);
}

void jstep(jctx *c, int line) {
    if (++c->steps > c->max_steps)
        jfail(c, line, "template evaluation exceeds %llu steps", (unsigned long long)c->max_steps);
}

jv jv_undef(void) { return (jv){.t = JT_UNDEF}; }
jv jv_none(void) { return (jv){.t = JT_NONE}; }
jv jv_bool(bool b) { return (jv){.t = JT_BOOL, .u.b = b}; }
jv jv_int(int64_t i) { return (jv){.t = JT_INT, .u.i = i}; }
jv jv_float(double f) { return (jv){.t = JT_FLOAT, .u.f = f}; }

jv jv_str(jctx *c, const char *s, size_t n) {
    jstr *p = jalloc(c, sizeof *p + n + 1);
    p->len = n;
    if (n)
        memcpy(p->s, s, n);
    p->s[n] = 0;
    return (jv){.t = JT_STR, .u.s = p};
}
jv jv_cstr(jctx *c, const char *s) { return jv_str(c, s, strlen(s)); }
jv jv_list(jctx *c) { return (jv){.t = JT_LIST, .u.l = jalloc(c, sizeof(jlist))}; }
jv jv_gen(jctx *c) {
    jv v = jv_list(c);
    v.u.l->gen = true;
    return v;
}

jv jv_escape(jctx *c, jv s) {
    if (s.t == JT_STR && s.markup)
        return s;
    s = jv_to_str(c, s);
    jbuf b = {0};
    for (size_t i = 0; i < s.u.s->len; i++) {
        char ch = s.u.s->s[i];
        const char *r = ch == '&' ? "&amp;" : ch == '<' ? "&lt;" : ch == '>' ? "&gt;" : ch == '"' ? "&#34;" : ch == '\'' ? "&#39;" : NULL;
        if (r)
            jbuf_puts(c, &b, r);
        else
            jbuf_put(c, &b, &ch, 1);
    }
    jv r = jbuf_value(c, &b);
    r.markup = true;
    return r;
}

jv jv_dict(jctx *c) { return (jv){.t = JT_DICT, .u.d = jalloc(c, sizeof(jdict))}; }

void jlist_push(jctx *c, jlist *l, jv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 4;
        jv *g = jalloc(c, cap * sizeof *g);
        if (l->n)
            memcpy(g, l->items, l->n * sizeof *g);
        l->items = g;
        l->cap = cap;
    }
    l->items[l->n++] = v;
}

/* Python's hash equality for keys: 1 == 1.0 == True. */
jv *jdict_find(const jdict *d, jv key) {
    for (size_t i = 0; i < d->n; i++)
        if (jv_equal(d->keys[i], key))
            return &d->vals[i];
    return NULL;
}

jv *jdict_find_str(const jdict *d, const char *key) {
    size_t n = strlen(key);
    for (size_t i = 0; i < d->n; i++)
        if (d->keys[i].t == JT_STR && d->keys[i].u.s->len == n && !memcmp(d->keys[i].u.s->s, key, n))
            return &d->vals[i];
    return NULL;
}

void jdict_set(jctx *c, jdict *d, jv key, jv val) {
    jv *slot = jdict_find(d, key);
    if (slot) {
        *slot = val;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? 2 * d->cap : 4;
        jv *k = jalloc(c, cap * sizeof *k), *v = jalloc(c, cap * sizeof *v);
        if (d->n) {
            memcpy(k, d->keys, d->n * sizeof *k);
            memcpy(v, d->vals, d->n * sizeof *v);
        }
        d->keys = k;
        d->vals = v;
        d->cap = cap;
    }
    d->keys[d->n] = key;
    d->vals[d->n++] = val;
}

bool jv_truthy(jv v) {
    switch (v.t) {
    case JT_UNDEF: case JT_NONE: return false;
    case JT_BOOL: return v.u.b;
    case JT_INT: return v.u.i != 0;
    case JT_FLOAT: return v.u.f != 0;
    case JT_STR: return v.u.s->len != 0;
    case JT_LIST: return v.u.l->gen || v.u.l->n != 0;
    case JT_DICT: return v.u.d->ns || v.u.d->n != 0;
    case JT_FUNC: return true;
    }
    return false;
}

bool jv_is_number(jv v) { return v.t == JT_INT || v.t == JT_FLOAT || v.t == JT_BOOL; }
double jv_num(jv v) { return v.t == JT_FLOAT ? v.u.f : v.t == JT_BOOL ? v.u.b : (double)v.u.i; }

/* Values nest only as deep as a template builds them (a loop can wrap a
 * list in a list many times): past this depth equality says false rather
 * than exhaust the stack, as Python raises RecursionError there. */
#define MAX_COMPARE_DEPTH 1000

static bool equal(jv a, jv b, int depth) {
    if (depth > MAX_COMPARE_DEPTH)
        return false;
    if (jv_is_number(a) && jv_is_number(b)) {
        if (a.t != JT_FLOAT && b.t != JT_FLOAT)
            return (a.t == JT_BOOL ? a.u.b : a.u.i) == (b.t == JT_BOOL ? b.u.b : b.u.i);
        return jv_num(a) == jv_num(b);
    }
    if (a.t != b.t)
        return false;
    switch (a.t) {
    case JT_UNDEF: case JT_NONE: return true;
    case JT_STR: return a.u.s->len == b.u.s->len && !memcmp(a.u.s->s, b.u.s->s, a.u.s->len);
    case JT_LIST:
        if (a.u.l == b.u.l || a.u.l->gen || b.u.l->gen)
            return a.u.l == b.u.l;
        if (a.u.l->n != b.u.l->n)
            return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!equal(a.u.l->items[i], b.u.l->items[i], depth + 1))
                return false;
        return true;
    case JT_DICT:
        if (a.u.d == b.u.d)
            return true;
        if (a.u.d->ns || b.u.d->ns || a.u.d->n != b.u.d->n)
            return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            jv *o = jdict_find(b.u.d, a.u.d->keys[i]);
            if (!o || !equal(a.u.d->vals[i], *o, depth + 1))
                return false;
        }
        return true;
    case JT_FUNC: return a.u.fn == b.u.fn;
    default: return false;
    }
}

bool jv_equal(jv a, jv b) { return equal(a, b, 0); }

const char *jv_type_name(jv v) {
    static const char *const names[] = {"Undefined", "NoneType", "bool", "int", "float", "str", "list", "dict", "function"};
    if (v.t == JT_LIST && v.u.l->tuple)
        return "tuple";
    if (v.t == JT_LIST && v.u.l->gen)
        return "generator";
    if (v.t == JT_LIST && v.u.l->view)
        return v.u.l->view == 1 ? "dict_keys" : v.u.l->view == 2 ? "dict_values" : "dict_items";
    if (v.t == JT_DICT && v.u.d->ns)
        return "Namespace";
    return names[v.t];
}

static int compare(jctx *c, jv a, jv b, int line, int depth) {
    if (depth > MAX_COMPARE_DEPTH)
        jfail(c, line, "values nested too deeply to compare");
    if (jv_is_number(a) && jv_is_number(b)) {
        if (a.t == JT_INT && b.t == JT_INT)
            return (a.u.i > b.u.i) - (a.u.i < b.u.i);
        double x = jv_num(a), y = jv_num(b);
        return (x > y) - (x < y);
    }
    if (a.t == JT_STR && b.t == JT_STR) {
        /* UTF-8 byte order is code point order, as Python compares */
        size_t n = a.u.s->len < b.u.s->len ? a.u.s->len : b.u.s->len;
        int r = memcmp(a.u.s->s, b.u.s->s, n);
        if (r)
            return r < 0 ? -1 : 1;
        return (a.u.s->len > b.u.s->len) - (a.u.s->len < b.u.s->len);
    }
    if (a.t == JT_LIST && b.t == JT_LIST) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++)
            if (!equal(a.u.l->items[i], b.u.l->items[i], depth + 1))
                return compare(c, a.u.l->items[i], b.u.l->items[i], line, depth + 1);
        return (a.u.l->n > b.u.l->n) - (a.u.l->n < b.u.l->n);
    }
    jfail(c, line, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
}

int jv_compare(jctx *c, jv a, jv b, int line) { return compare(c, a, b, line, 0); }

/* ---- text ---- */

void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n) {
    if (!n)
        return;
    if (b->cap - b->n < n + 1) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->n < n + 1) {
            if (cap > c->out_limit)
                jfail(c, 0, "template output exceeds %zu bytes", c->out_limit);
            cap *= 2;
        }
        char *g = jalloc(c, cap);
        if (b->n)
            memcpy(g, b->p, b->n);
        b->p = g;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void jbuf_puts(jctx *c, jbuf *b, const char *s) { jbuf_put(c, b, s, strlen(s)); }
jv jbuf_value(jctx *c, const jbuf *b) { return jv_str(c, b->p ? b->p : "", b->n); }

/* repr(float): the shortest digits that read back the same, laid out as
 * Python does (exponent form below 1e-4 and from 1e16 on). */
void jv_write_float(jctx *c, jbuf *b, double f) {
    char tmp[64];
    if (isnan(f)) {
        jbuf_puts(c, b, "nan");
        return;
    }
    if (isinf(f)) {
        jbuf_puts(c, b, f < 0 ? "-inf" : "inf");
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f)
            break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
    /* tmp: [-]d.ddde[+-]xx -> digits and exponent */
    char digits[32];
    int nd = 0;
    const char *p = tmp;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.')
            digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    char out[64];
    int o = 0;
    if (neg)
        out[o++] = '-';
    if (exp < -4 || exp >= 16) {
        out[o++] = digits[0];
        if (nd > 1) {
            out[o++] = '.';
            for (int i = 1; i < nd; i++)
                out[o++] = digits[i];
        }
        o += snprintf(out + o, sizeof out - (size_t)o, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    } else if (exp < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > exp; i--)
            out[o++] = '0';
        for (int i = 0; i < nd; i++)
            out[o++] = digits[i];
    } else {
        for (int i = 0; i <= exp; i++)
            out[o++] = i < nd ? digits[i] : '0';
        out[o++] = '.';
        if (nd > exp + 1)
            for (int i = exp + 1; i < nd; i++)
                out[o++] = digits[i];
        else
            out[o++] = '0';
    }
    jbuf_put(c, b, out, (size_t)o);
}

static unsigned utf8_decode(const unsigned char *s, size_t n, size_t *len) {
    unsigned c0 = s[0];
    int k = c0 < 0x80 ? 1 : c0 >= 0xF0 ? 4 : c0 >= 0xE0 ? 3 : c0 >= 0xC0 ? 2 : 1;
    if ((size_t)k > n)
        k = 1;
    unsigned cp = k == 1 ? c0 : k == 2 ? c0 & 0x1F : k == 3 ? c0 & 0x0F : c0 & 0x07;
    for (int i = 1; i < k; i++)
        cp = cp << 6 | (s[i] & 0x3F);
    *len = (size_t)k;
    return cp;
}

size_t jutf8_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

size_t jutf8_offset(const char *s, size_t n, size_t cp) {
    size_t k = 0, i = 0;
    for (; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (k == cp)
                return i;
            k++;
        }
    return n;
}

/* Python's str.isprintable() for the code points repr() escapes: controls,
 * format characters, separators other than the space, surrogates and
 * private use (unassigned code points are not tracked). */
static bool printable(unsigned cp) {
    static const unsigned ranges[][2] = {
        {0x80, 0xA0}, {0xAD, 0xAD}, {0x600, 0x605}, {0x61C, 0x61C}, {0x6DD, 0x6DD}, {0x70F, 0x70F},
        {0x1680, 0x1680}, {0x180E, 0x180E}, {0x2000, 0x200F}, {0x2028, 0x202F}, {0x205F, 0x2064},
        {0x2066, 0x206F}, {0x3000, 0x3000}, {0xD800, 0xF8FF}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB},
        {0x110BD, 0x110BD}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
        {0xF0000, 0x10FFFF}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++)
        if (cp >= ranges[i][0] && cp <= ranges[i][1])
            return false;
    return true;
}

static void write_str_repr(jctx *c, jbuf *b, const jstr *s) {
    bool has_sq = memchr(s->s, '\'', s->len) != NULL, has_dq = memchr(s->s, '"', s->len) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jbuf_put(c, b, &q, 1);
    for (size_t i = 0; i < s->len; i++) {
        unsigned char ch = (unsigned char)s->s[i];
        char e[8];
        if (ch == (unsigned char)q || ch == '\\') {
            e[0] = '\\';
            e[1] = (char)ch;
            jbuf_put(c, b, e, 2);
        } else if (ch == '\n')
            jbuf_puts(c, b, "\\n");
        else if (ch == '\r')
            jbuf_puts(c, b, "\\r");
        else if (ch == '\t')
            jbuf_puts(c, b, "\\t");
        else if (ch < 0x20 || ch == 0x7F) {
            snprintf(e, sizeof e, "\\x%02x", ch);
            jbuf_puts(c, b, e);
        } else if (ch >= 0x80) {
            size_t k;
            unsigned cp = utf8_decode((const unsigned char *)s->s + i, s->len - i, &k);
            if (!printable(cp)) {
                snprintf(e, sizeof e, cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x", cp);
                jbuf_puts(c, b, e);
            } else
                jbuf_put(c, b, s->s + i, k);
            i += k - 1;
        } else
            jbuf_put(c, b, (const char *)&ch, 1);
    }
    jbuf_put(c, b, &q, 1);
}

void jv_write_repr(jctx *c, jbuf *b, jv v) {
    /* a namespace can hold itself (set ns.me = ns); Python prints {...},
     * the engine refuses past the depth limit */
    if ((v.t == JT_LIST || v.t == JT_DICT) && ++c->depth > c->max_depth)
        jfail(c, 0, "value nested too deeply to print");
    switch (v.t) {
    case JT_STR: write_str_repr(c, b, v.u.s); return;
    case JT_LIST: {
        if (v.u.l->gen) {
            jbuf_puts(c, b, "<generator object>");
            c->depth--;
            return;
        }
        static const char *const views[] = {"", "dict_keys(", "dict_values(", "dict_items("};
        bool t = v.u.l->tuple;
        jbuf_puts(c, b, views[v.u.l->view < 4 ? v.u.l->view : 0]);
        jbuf_puts(c, b, t ? "(" : "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i)
                jbuf_puts(c, b, ", ");
            jv_write_repr(c, b, v.u.l->items[i]);
        }
        jbuf_puts(c, b, t ? (v.u.l->n == 1 ? ",)" : ")") : "]");
        if (v.u.l->view)
            jbuf_puts(c, b, ")");
        c->depth--;
        return;
    }
    case JT_DICT:
        if (v.u.d->ns)
            jbuf_puts(c, b, "<Namespace ");
        jbuf_puts(c, b, "{");
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i)
                jbuf_puts(c, b, ", ");
            jv_write_repr(c, b, v.u.d->keys[i]);
            jbuf_puts(c, b, ": ");
            jv_write_repr(c, b, v.u.d->vals[i]);
        }
        jbuf_puts(c, b, v.u.d->ns ? "}>" : "}");
        c->depth--;
        return;
    default: jv_write_str(c, b, v);
    }
}

void jv_write_str(jctx *c, jbuf *b, jv v) {
    char tmp[32];
    switch (v.t) {
    case JT_UNDEF: return;
    case JT_NONE: jbuf_puts(c, b, "None"); return;
    case JT_BOOL: jbuf_puts(c, b, v.u.b ? "True" : "False"); return;
    case JT_INT: snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i); jbuf_puts(c, b, tmp); return;
    case JT_FLOAT: jv_write_float(c, b, v.u.f); return;
    case JT_STR: jbuf_put(c, b, v.u.s->s, v.u.s->len); return;
    case JT_FUNC: jbuf_puts(c, b, "<function>"); return;
    default: jv_write_repr(c, b, v);
    }
}

jv jv_to_str(jctx *c, jv v) {
    if (v.t == JT_STR)
        return v;
    jbuf b = {0};
    jv_write_str(c, &b, v);
    return jbuf_value(c, &b);
}

/* ---- JSON ---- */

static void json_str(jctx *c, jbuf *b, const jstr *s, bool ascii) {
    jbuf_put(c, b, "\"", 1);
    for (size_t i = 0; i < s->len; i++) {
        unsigned char ch = (unsigned char)s->s[i];
        char e[16];
        switch (ch) {
        case '"': jbuf_puts(c, b, "\\\""); continue;
        case '\\': jbuf_puts(c, b, "\\\\"); continue;
        case '\n': jbuf_puts(c, b, "\\n"); continue;
        case '\r': jbuf_puts(c, b, "\\r"); continue;
        case '\t': jbuf_puts(c, b, "\\t"); continue;
        case '\b': jbuf_puts(c, b, "\\b"); continue;
        case '\f': jbuf_puts(c, b, "\\f"); continue;
        default: break;
        }
        if (ch < 0x20 || (ascii && ch == 0x7F)) {
            snprintf(e, sizeof e, "\\u%04x", ch);
            jbuf_puts(c, b, e);
        } else if (ch >= 0x80 && ascii) {
            size_t k;
            unsigned cp = utf8_decode((const unsigned char *)s->s + i, s->len - i, &k);
            if (cp >= 0x10000) {
                cp -= 0x10000;
                snprintf(e, sizeof e, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
            } else
                snprintf(e, sizeof e, "\\u%04x", cp);
            jbuf_puts(c, b, e);
            i += k - 1;
        } else
            jbuf_put(c, b, (const char *)&ch, 1);
    }
    jbuf_put(c, b, "\"", 1);
}

static void json_newline(jctx *c, jbuf *b, const jjson_opts *o, int level) {
    jbuf_put(c, b, "\n", 1);
    for (int i = 0; i < level * o->indent; i++)
        jbuf_put(c, b, " ", 1);
}

static int key_order(const void *x, const void *y) {
    const jv *a = *(const jv *const *)x, *b = *(const jv *const *)y;
    size_t n = a->u.s->len < b->u.s->len ? a->u.s->len : b->u.s->len;
    int r = memcmp(a->u.s->s, b->u.s->s, n);
    return r ? r : (a->u.s->len > b->u.s->len) - (a->u.s->len < b->u.s->len);
}

void jv_write_json(jctx *c, jbuf *b, jv v, const jjson_opts *o, int level, int line) {
    if (level > c->max_depth)
        jfail(c, line, "tojson: value nested too deeply");
    const char *item_sep = o->item_sep ? o->item_sep : o->indent >= 0 ? "," : ", ";
    const char *key_sep = o->key_sep ? o->key_sep : ": ";
    char tmp[32];
    switch (v.t) {
    case JT_NONE: jbuf_puts(c, b, "null"); return;
    case JT_BOOL: jbuf_puts(c, b, v.u.b ? "true" : "false"); return;
    case JT_INT: snprintf(tmp, sizeof tmp, "%lld", (long long)v.u.i); jbuf_puts(c, b, tmp); return;
    case JT_FLOAT:
        if (isnan(v.u.f))
            jbuf_puts(c, b, "NaN");
        else if (isinf(v.u.f))
            jbuf_puts(c, b, v.u.f < 0 ? "-Infinity" : "Infinity");
        else
            jv_write_float(c, b, v.u.f);
        return;
    case JT_STR: json_str(c, b, v.u.s, o->ensure_ascii); return;
    case JT_LIST:
        if (v.u.l->gen || v.u.l->view)
            break;
        if (!v.u.l->n) {
            jbuf_puts(c, b, "[]");
            return;
        }
        jbuf_puts(c, b, "[");
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i)
                jbuf_puts(c, b, item_sep);
            if (o->indent >= 0)
                json_newline(c, b, o, level + 1);
            jv_write_json(c, b, v.u.l->items[i], o, level + 1, line);
        }
        if (o->indent >= 0)
            json_newline(c, b, o, level);
        jbuf_puts(c, b, "]");
        return;
    case JT_DICT: {
        if (v.u.d->ns)
            break;
        if (!v.u.d->n) {
            jbuf_puts(c, b, "{}");
            return;
        }
        size_t n = v.u.d->n;
        const jv **order = jalloc(c, n * sizeof *order);
        for (size_t i = 0; i < n; i++) {
            order[i] = &v.u.d->keys[i];
            if (o->sort_keys && order[i]->t != JT_STR)
                jfail(c, line, "tojson: sort_keys needs string keys");
        }
        if (o->sort_keys)
            qsort(order, n, sizeof *order, key_order);
        jbuf_puts(c, b, "{");
        for (size_t i = 0; i < n; i++) {
            size_t k = (size_t)(order[i] - v.u.d->keys);
            if (i)
                jbuf_puts(c, b, item_sep);
            if (o->indent >= 0)
                json_newline(c, b, o, level + 1);
            jv key = v.u.d->keys[k];
            if (key.t == JT_STR)
                json_str(c, b, key.u.s, o->ensure_ascii);
            else if (key.t == JT_INT || key.t == JT_FLOAT || key.t == JT_BOOL || key.t == JT_NONE) {
                /* Python writes such keys as strings: 1 -> "1", True -> "true" */
                jbuf kb = {0};
                jv_write_json(c, &kb, key, o, level + 1, line);
                jbuf_puts(c, b, "\"");
                jbuf_put(c, b, kb.p, kb.n);
                jbuf_puts(c, b, "\"");
            } else
                jfail(c, line, "tojson: keys must be str, int, float, bool or None, not %s", jv_type_name(key));
            jbuf_puts(c, b, key_sep);
            jv_write_json(c, b, v.u.d->vals[k], o, level + 1, line);
        }
        if (o->indent >= 0)
            json_newline(c, b, o, level);
        jbuf_puts(c, b, "}");
        return;
    }
    default: break;
    }
    jfail(c, line, "Object of type %s is not JSON serializable", jv_type_name(v));
}

/* A small JSON reader (the context comes as a JSON document and the core
 * must build without optional libraries).  Objects keep their key order. */
typedef struct jreader {
    jctx *c;
    const char *s;
    size_t n, i;
    int depth;
    const char *err;
} jreader;

static void skip_ws(jreader *r) {
    while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' || r->s[r->i] == '\r'))
        r->i++;
}

static void put_utf8(jctx *c, jbuf *b, unsigned cp) {
    char u[4];
    size_t k;
    if (cp < 0x80) {
        u[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3F));
        k = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    jbuf_put(c, b, u, k);
}

static bool hex4(jreader *r, unsigned *out) {
    if (r->n - r->i < 4)
        return false;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char h = r->s[r->i++];
        v <<= 4;
        if (h >= '0' && h <= '9')
            v |= (unsigned)(h - '0');
        else if (h >= 'a' && h <= 'f')
            v |= (unsigned)(h - 'a' + 10);
        else if (h >= 'A' && h <= 'F')
            v |= (unsigned)(h - 'A' + 10);
        else
            return false;
    }
    *out = v;
    return true;
}

static bool read_string(jreader *r, jv *out) {
    r->i++; /* the quote */
    jbuf b = {0};
    while (r->i < r->n && r->s[r->i] != '"') {
        char ch = r->s[r->i++];
        if (ch != '\\') {
            jbuf_put(r->c, &b, &ch, 1);
            continue;
        }
        if (r->i >= r->n)
            break;
        char e = r->s[r->i++];
        const char *map = strchr("\"\"\\\\//b\bf\fn\nr\rt\t", e);
        if (e && map && (map - "\"\"\\\\//b\bf\fn\nr\rt\t") % 2 == 0) {
            jbuf_put(r->c, &b, map + 1, 1);
        } else if (e == 'u') {
            unsigned cp;
            if (!hex4(r, &cp))
                return false;
            if (cp >= 0xD800 && cp < 0xDC00 && r->n - r->i >= 6 && r->s[r->i] == '\\' && r->s[r->i + 1] == 'u') {
                size_t save = r->i;
                unsigned lo;
                r->i += 2;
                if (hex4(r, &lo) && lo >= 0xDC00 && lo < 0xE000)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                else
                    r->i = save;
            }
            put_utf8(r->c, &b, cp);
        } else
            return false;
    }
    if (r->i >= r->n)
        return false;
    r->i++;
    *out = jbuf_value(r->c, &b);
    return true;
}

static bool read_value(jreader *r, jv *out) {
    skip_ws(r);
    if (r->i >= r->n || ++r->depth > 200)
        return false;
    char ch = r->s[r->i];
    bool ok = true;
    if (ch == '{') {
        *out = jv_dict(r->c);
        r->i++;
        skip_ws(r);
        if (r->i < r->n && r->s[r->i] == '}')
            r->i++;
        else
            for (;;) {
                jv k, v;
                skip_ws(r);
                if (r->i >= r->n || r->s[r->i] != '"' || !read_string(r, &k))
                    return false;
                skip_ws(r);
                if (r->i >= r->n || r->s[r->i++] != ':' || !read_value(r, &v))
                    return false;
                jdict_set(r->c, out->u.d, k, v);
                skip_ws(r);
                if (r->i < r->n && r->s[r->i] == ',') {
                    r->i++;
                    continue;
                }
                if (r->i < r->n && r->s[r->i] == '}') {
                    r->i++;
                    break;
                }
                return false;
            }
    } else if (ch == '[') {
        *out = jv_list(r->c);
        r->i++;
        skip_ws(r);
        if (r->i < r->n && r->s[r->i] == ']')
            r->i++;
        else
            for (;;) {
                jv v;
                if (!read_value(r, &v))
                    return false;
                jlist_push(r->c, out->u.l, v);
                skip_ws(r);
                if (r->i < r->n && r->s[r->i] == ',') {
                    r->i++;
                    continue;
                }
                if (r->i < r->n && r->s[r->i] == ']') {
                    r->i++;
                    break;
                }
                return false;
            }
    } else if (ch == '"') {
        ok = read_string(r, out);
    } else if (r->n - r->i >= 4 && !memcmp(r->s + r->i, "true", 4)) {
        *out = jv_bool(true);
        r->i += 4;
    } else if (r->n - r->i >= 5 && !memcmp(r->s + r->i, "false", 5)) {
        *out = jv_bool(false);
        r->i += 5;
    } else if (r->n - r->i >= 4 && !memcmp(r->s + r->i, "null", 4)) {
        *out = jv_none();
        r->i += 4;
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
        size_t st = r->i;
        bool flt = false;
        if (r->s[r->i] == '-')
            r->i++;
        while (r->i < r->n && strchr("0123456789.eE+-", r->s[r->i])) {
            if (strchr(".eE", r->s[r->i]))
                flt = true;
            r->i++;
        }
        char num[64];
        size_t len = r->i - st;
        if (len == 0 || len >= sizeof num)
            return false;
        memcpy(num, r->s + st, len);
        num[len] = 0;
        char *end;
        errno = 0;
        if (flt)
            *out = jv_float(strtod(num, &end));
        else
            *out = jv_int(strtoll(num, &end, 10));
        /* Python keeps big integers exactly; the engine has 64 bits and
         * refuses rather than change a number */
        ok = *end == 0 && !(errno == ERANGE && !flt);
    } else
        ok = false;
    r->depth--;
    return ok;
}

const char *jv_parse_json(jctx *c, const char *s, size_t n, jv *out) {
    jreader r = {.c = c, .s = s, .n = n};
    if (!read_value(&r, out))
        return "the context is not valid JSON";
    skip_ws(&r);
    return r.i == r.n ? NULL : "the context has text after its JSON value";
}
