/* What jinja2's sandbox lets a template reach on values: attributes and
 * the methods of str, dict and list (the ones that do not modify; the
 * immutable sandbox Hugging Face uses turns list.append, dict.update and
 * friends into an undefined value that fails when called), plus the
 * global functions transformers provides. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenize/jinja.h"

static bool is(const char *a, const char *b) { return !strcmp(a, b); }

static const char *const str_methods[] = {"strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper",
                                          "lower", "title", "capitalize", "swapcase", "replace", "find", "rfind", "index",
                                          "rindex", "count", "format", "join", "splitlines", "isdigit", "isalpha", "isalnum",
                                          "isspace", "isupper", "islower", "isnumeric", "isdecimal", NULL};
static const char *const dict_methods[] = {"items", "keys", "values", "get", "copy", NULL};
static const char *const dict_unsafe[] = {"pop", "popitem", "update", "setdefault", "clear", NULL};
static const char *const list_methods[] = {"index", "count", "copy", NULL};
/* list.append, pop, sort ... are unsafe: as any unknown attribute they
 * read as undefined, which fails when called */

static bool in_set(const char *const *set, const char *name) {
    for (int i = 0; set[i]; i++)
        if (is(set[i], name))
            return true;
    return false;
}

static jv method(jctx *c, jv self, const char *name) {
    jfunc *f = jalloc(c, sizeof *f);
    f->kind = FN_METHOD;
    f->self = self;
    f->name = name;
    return (jv){.t = JT_FUNC, .u.fn = f};
}

jv jinja_attr(jctx *c, jv obj, const char *name, size_t n, int line) {
    (void)line;
    if (strlen(name) != n || name[0] == '_')
        return jv_undef();
    if (obj.t == JT_DICT && obj.u.d->ns) {
        jv *v = jdict_find_str(obj.u.d, name);
        return v ? *v : jv_undef();
    }
    if (obj.t == JT_DICT) {
        for (int i = 0; dict_methods[i]; i++)
            if (is(dict_methods[i], name))
                return method(c, obj, dict_methods[i]);
        if (in_set(dict_unsafe, name))
            return jv_undef();
        jv *v = jdict_find_str(obj.u.d, name);
        return v ? *v : jv_undef();
    }
    if (obj.t == JT_STR)
        for (int i = 0; str_methods[i]; i++)
            if (is(str_methods[i], name))
                return method(c, obj, str_methods[i]);
    if (obj.t == JT_LIST)
        for (int i = 0; list_methods[i]; i++)
            if (is(list_methods[i], name))
                return method(c, obj, list_methods[i]);
    return jv_undef();
}

/* ---- Python's whitespace and str helpers ---- */

/* Length of the whitespace character at s[i] (0 if none), by Python's
 * str.isspace(). */
static size_t ws_at(const char *s, size_t n, size_t i) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == ' ' || (ch >= '\t' && ch <= '\r') || (ch >= 0x1c && ch <= 0x1f))
        return 1;
    if (ch == 0xC2 && i + 1 < n && ((unsigned char)s[i + 1] == 0x85 || (unsigned char)s[i + 1] == 0xA0))
        return 2;
    if (ch == 0xE1 && i + 2 < n && (unsigned char)s[i + 1] == 0x9A && (unsigned char)s[i + 2] == 0x80)
        return 3;
    if (ch == 0xE2 && i + 2 < n) {
        unsigned b1 = (unsigned char)s[i + 1], b2 = (unsigned char)s[i + 2];
        if (b1 == 0x80 && ((b2 >= 0x80 && b2 <= 0x8A) || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF))
            return 3;
        if (b1 == 0x81 && b2 == 0x9F)
            return 3;
    }
    if (ch == 0xE3 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 && (unsigned char)s[i + 2] == 0x80)
        return 3;
    return 0;
}

static size_t cp_len(const char *s, size_t n, size_t i) {
    size_t k = 1;
    while (i + k < n && ((unsigned char)s[i + k] & 0xC0) == 0x80)
        k++;
    return k;
}

static size_t cp_start_before(const char *s, size_t end) {
    size_t i = end - 1;
    while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80)
        i--;
    return i;
}

static bool in_chars(const jstr *chars, const char *s, size_t k) {
    for (size_t i = 0; i < chars->len;) {
        size_t m = cp_len(chars->s, chars->len, i);
        if (m == k && !memcmp(chars->s + i, s, k))
            return true;
        i += m;
    }
    return false;
}

jv jstr_strip(jctx *c, jv v, jv chars, bool left, bool right) {
    const char *s = v.u.s->s;
    size_t lo = 0, hi = v.u.s->len;
    bool ws = chars.t != JT_STR;
    while (left && lo < hi) {
        size_t k = ws ? ws_at(s, hi, lo) : (in_chars(chars.u.s, s + lo, cp_len(s, hi, lo)) ? cp_len(s, hi, lo) : 0);
        if (!k)
            break;
        lo += k;
    }
    while (right && hi > lo) {
        size_t st = cp_start_before(s, hi);
        bool strip = ws ? ws_at(s, hi, st) == hi - st : in_chars(chars.u.s, s + st, hi - st);
        if (!strip)
            break;
        hi = st;
    }
    return jv_str(c, s + lo, hi - lo);
}

jv jstr_case(jctx *c, jv v, char how) {
    jbuf b = {0};
    jbuf_put(c, &b, v.u.s->s, v.u.s->len);
    bool prev_cased = false;
    for (size_t i = 0; i < b.n; i++) {
        char ch = b.p[i];
        bool upper = ch >= 'A' && ch <= 'Z', lower = ch >= 'a' && ch <= 'z';
        bool to_upper;
        switch (how) {
        case 'u': to_upper = true; break;
        case 'l': to_upper = false; break;
        case 't': to_upper = !prev_cased; break;
        case 's': to_upper = lower; break;
        default: to_upper = i == 0; break; /* capitalize */
        }
        if (to_upper && lower)
            b.p[i] = (char)(ch - 32);
        else if (!to_upper && upper)
            b.p[i] = (char)(ch + 32);
        /* non-ASCII letters count as cased for title(); they are kept */
        prev_cased = upper || lower || ((unsigned char)ch >= 0x80);
    }
    return jbuf_value(c, &b);
}

jv jstr_replace(jctx *c, jv v, jv old, jv new_, int64_t count, int line) {
    if (old.t != JT_STR || new_.t != JT_STR)
        jfail(c, line, "replace() arguments must be str");
    const jstr *s = v.u.s, *o = old.u.s, *w = new_.u.s;
    jbuf b = {0};
    if (!o->len) {
        /* Python inserts the replacement between every character */
        size_t i = 0;
        int64_t done = 0;
        while (true) {
            if (count < 0 || done < count) {
                jbuf_put(c, &b, w->s, w->len);
                done++;
            }
            if (i >= s->len)
                break;
            size_t k = cp_len(s->s, s->len, i);
            jbuf_put(c, &b, s->s + i, k);
            i += k;
            jstep(c, line);
        }
        return jbuf_value(c, &b);
    }
    size_t i = 0;
    int64_t done = 0;
    while (i < s->len) {
        if ((count < 0 || done < count) && i + o->len <= s->len && !memcmp(s->s + i, o->s, o->len)) {
            jbuf_put(c, &b, w->s, w->len);
            i += o->len;
            done++;
        } else
            jbuf_put(c, &b, s->s + i++, 1);
    }
    return jbuf_value(c, &b);
}

static jv split(jctx *c, jv v, jv sep, int64_t maxsplit, bool from_right, int line) {
    const char *s = v.u.s->s;
    size_t n = v.u.s->len;
    jv out = jv_list(c);
    if (sep.t == JT_STR) {
        const jstr *d = sep.u.s;
        if (!d->len)
            jfail(c, line, "empty separator");
        if (!from_right || maxsplit < 0) {
            size_t st = 0;
            int64_t done = 0;
            for (size_t i = 0; i + d->len <= n;) {
                if ((maxsplit < 0 || done < maxsplit) && !memcmp(s + i, d->s, d->len)) {
                    jlist_push(c, out.u.l, jv_str(c, s + st, i - st));
                    i += d->len;
                    st = i;
                    done++;
                } else
                    i++;
            }
            jlist_push(c, out.u.l, jv_str(c, s + st, n - st));
            return out;
        }
        /* rsplit with a limit: collect from the right, then reverse */
        size_t end = n;
        int64_t done = 0;
        jv rev = jv_list(c);
        for (size_t i = n; i >= d->len && done < maxsplit;) {
            if (!memcmp(s + i - d->len, d->s, d->len)) {
                jlist_push(c, rev.u.l, jv_str(c, s + i, end - i));
                i -= d->len;
                end = i;
                done++;
            } else
                i--;
        }
        jlist_push(c, rev.u.l, jv_str(c, s, end));
        for (size_t k = rev.u.l->n; k-- > 0;)
            jlist_push(c, out.u.l, rev.u.l->items[k]);
        return out;
    }
    if (from_right && maxsplit >= 0) {
        /* rsplit() on whitespace with a limit */
        jv rev = jv_list(c);
        size_t hi = n;
        int64_t done = 0;
        while (hi > 0) {
            while (hi > 0 && ws_at(s, n, cp_start_before(s, hi)))
                hi = cp_start_before(s, hi);
            if (!hi)
                break;
            if (done == maxsplit) {
                jlist_push(c, rev.u.l, jv_str(c, s, hi));
                hi = 0;
                break;
            }
            size_t lo = hi;
            while (lo > 0 && !ws_at(s, n, cp_start_before(s, lo)))
                lo = cp_start_before(s, lo);
            jlist_push(c, rev.u.l, jv_str(c, s + lo, hi - lo));
            hi = lo;
            done++;
        }
        for (size_t k = rev.u.l->n; k-- > 0;)
            jlist_push(c, out.u.l, rev.u.l->items[k]);
        return out;
    }
    size_t i = 0;
    int64_t done = 0;
    while (i < n) {
        size_t k;
        while (i < n && (k = ws_at(s, n, i)))
            i += k;
        if (i >= n)
            break;
        if (maxsplit >= 0 && done == maxsplit) {
            /* the rest, with its trailing whitespace, is one piece */
            jlist_push(c, out.u.l, jv_str(c, s + i, n - i));
            break;
        }
        size_t st = i;
        while (i < n && !ws_at(s, n, i))
            i += cp_len(s, n, i);
        jlist_push(c, out.u.l, jv_str(c, s + st, i - st));
        done++;
    }
    return out;
}

static bool affix(jctx *c, jv s, jv what, bool end, int line) {
    if (what.t == JT_LIST && what.u.l->tuple) {
        for (size_t i = 0; i < what.u.l->n; i++)
            if (affix(c, s, what.u.l->items[i], end, line))
                return true;
        return false;
    }
    if (what.t != JT_STR)
        jfail(c, line, "%s first arg must be str or a tuple of str, not %s", end ? "endswith" : "startswith", jv_type_name(what));
    size_t n = s.u.s->len, k = what.u.s->len;
    return k <= n && !memcmp(s.u.s->s + (end ? n - k : 0), what.u.s->s, k);
}

static int64_t find(jv s, jv sub, bool last) {
    size_t n = s.u.s->len, k = sub.u.s->len;
    int64_t at = -1;
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(s.u.s->s + i, sub.u.s->s, k)) {
            at = (int64_t)i;
            if (!last)
                break;
        }
    return at < 0 ? -1 : (int64_t)jutf8_count(s.u.s->s, (size_t)at);
}

/* str.format: {} {0} {name} and {{ }}; format specs are refused. */
static jv format(jctx *c, jv fmt, const jargs *a) {
    const char *s = fmt.u.s->s;
    size_t n = fmt.u.s->len;
    jbuf b = {0};
    int auto_i = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '{' && i + 1 < n && s[i + 1] == '{') {
            jbuf_put(c, &b, "{", 1);
            i++;
        } else if (s[i] == '}' && i + 1 < n && s[i + 1] == '}') {
            jbuf_put(c, &b, "}", 1);
            i++;
        } else if (s[i] == '{') {
            size_t e = i + 1;
            while (e < n && s[e] != '}')
                e++;
            if (e >= n)
                jfail(c, a->line, "Single '{' encountered in format string");
            char field[64];
            size_t fl = e - i - 1;
            if (fl >= sizeof field || memchr(s + i + 1, ':', fl) || memchr(s + i + 1, '!', fl))
                jfail(c, a->line, "unsupported format field");
            memcpy(field, s + i + 1, fl);
            field[fl] = 0;
            jv v = jv_undef();
            bool found = false;
            if (!fl || (field[0] >= '0' && field[0] <= '9')) {
                int idx = fl ? atoi(field) : auto_i++;
                found = idx >= 0 && idx < a->n_pos;
                if (found)
                    v = a->pos[idx];
            } else
                for (int k = 0; k < a->n_kw && !found; k++)
                    if (!strcmp(a->kw_names[k]->s, field)) {
                        found = true;
                        v = a->kw[k];
                    }
            if (!found)
                jfail(c, a->line, "format: missing argument '%s'", field);
            jv_write_str(c, &b, v);
            i = e;
        } else if (s[i] == '}')
            jfail(c, a->line, "Single '}' encountered in format string");
        else
            jbuf_put(c, &b, s + i, 1);
    }
    return jbuf_value(c, &b);
}

static bool all_chars(jv s, int kind) {
    if (!s.u.s->len)
        return false;
    bool cased = false;
    for (size_t i = 0; i < s.u.s->len; i++) {
        unsigned char ch = (unsigned char)s.u.s->s[i];
        bool digit = ch >= '0' && ch <= '9', up = ch >= 'A' && ch <= 'Z', lo = ch >= 'a' && ch <= 'z';
        bool sp = ch == ' ' || (ch >= '\t' && ch <= '\r');
        switch (kind) {
        case 'd': if (!digit) return false; break;
        case 'a': if (!up && !lo) return false; break;
        case 'n': if (!up && !lo && !digit) return false; break;
        case 's': if (!sp) return false; break;
        case 'U': if (lo) return false; cased |= up; break;
        case 'L': if (up) return false; cased |= lo; break;
        default: break;
        }
    }
    return kind == 'U' || kind == 'L' ? cased : true;
}

static jv method_impl(jctx *c, jv self, const char *m, const jargs *a) {
    int line = a->line;
    if (self.t == JT_INT && is(m, "cycle")) {
        if (!a->n_pos)
            jfail(c, line, "no items for cycling given");
        return a->pos[self.u.i % a->n_pos];
    }
    if (self.t == JT_STR) {
        if (is(m, "strip") || is(m, "lstrip") || is(m, "rstrip")) {
            jv chars = jargs_get(a, 0, NULL, jv_none());
            if (chars.t != JT_STR && chars.t != JT_NONE)
                jfail(c, line, "%s arg must be None or str", m);
            return jstr_strip(c, self, chars, m[0] != 'r', m[0] != 'l');
        }
        if (is(m, "split") || is(m, "rsplit")) {
            jv sep = jargs_get(a, 0, "sep", jv_none()), mx = jargs_get(a, 1, "maxsplit", jv_int(-1));
            if (sep.t != JT_STR && sep.t != JT_NONE)
                jfail(c, line, "must be str or None, not %s", jv_type_name(sep));
            return split(c, self, sep, mx.t == JT_INT ? mx.u.i : -1, m[0] == 'r', line);
        }
        if (is(m, "startswith") || is(m, "endswith"))
            return jv_bool(affix(c, self, jargs_get(a, 0, NULL, jv_undef()), m[0] == 'e', line));
        if (is(m, "upper")) return jstr_case(c, self, 'u');
        if (is(m, "lower")) return jstr_case(c, self, 'l');
        if (is(m, "title")) return jstr_case(c, self, 't');
        if (is(m, "capitalize")) return jstr_case(c, self, 'c');
        if (is(m, "swapcase")) return jstr_case(c, self, 's');
        if (is(m, "replace")) {
            jv cnt = jargs_get(a, 2, "count", jv_int(-1));
            return jstr_replace(c, self, jargs_get(a, 0, NULL, jv_undef()), jargs_get(a, 1, NULL, jv_undef()),
                                cnt.t == JT_INT ? cnt.u.i : -1, line);
        }
        if (is(m, "find") || is(m, "rfind") || is(m, "index") || is(m, "rindex") || is(m, "count")) {
            jv sub = jargs_get(a, 0, NULL, jv_undef());
            if (sub.t != JT_STR)
                jfail(c, line, "must be str, not %s", jv_type_name(sub));
            if (is(m, "count")) {
                if (!sub.u.s->len)
                    return jv_int((int64_t)jutf8_count(self.u.s->s, self.u.s->len) + 1);
                int64_t k = 0;
                for (size_t i = 0; i + sub.u.s->len <= self.u.s->len;)
                    if (!memcmp(self.u.s->s + i, sub.u.s->s, sub.u.s->len)) {
                        k++;
                        i += sub.u.s->len;
                    } else
                        i++;
                return jv_int(k);
            }
            int64_t at = find(self, sub, m[0] == 'r');
            if (at < 0 && m[m[0] == 'r'] == 'i')
                jfail(c, line, "substring not found");
            return jv_int(at);
        }
        if (is(m, "format"))
            return format(c, self, a);
        if (is(m, "join")) {
            jlist *l = jinja_iterable(c, jargs_get(a, 0, NULL, jv_undef()), line);
            jbuf b = {0};
            for (size_t i = 0; i < l->n; i++) {
                if (l->items[i].t != JT_STR)
                    jfail(c, line, "sequence item %zu: expected str instance, %s found", i, jv_type_name(l->items[i]));
                if (i)
                    jbuf_put(c, &b, self.u.s->s, self.u.s->len);
                jbuf_put(c, &b, l->items[i].u.s->s, l->items[i].u.s->len);
            }
            return jbuf_value(c, &b);
        }
        if (is(m, "splitlines")) {
            jv out = jv_list(c);
            const char *s = self.u.s->s;
            size_t n = self.u.s->len, st = 0;
            for (size_t i = 0; i < n; i++)
                if (s[i] == '\n' || s[i] == '\r') {
                    jlist_push(c, out.u.l, jv_str(c, s + st, i - st));
                    if (s[i] == '\r' && i + 1 < n && s[i + 1] == '\n')
                        i++;
                    st = i + 1;
                }
            if (st < n)
                jlist_push(c, out.u.l, jv_str(c, s + st, n - st));
            return out;
        }
        if (is(m, "isdigit") || is(m, "isnumeric") || is(m, "isdecimal")) return jv_bool(all_chars(self, 'd'));
        if (is(m, "isalpha")) return jv_bool(all_chars(self, 'a'));
        if (is(m, "isalnum")) return jv_bool(all_chars(self, 'n'));
        if (is(m, "isspace")) return jv_bool(all_chars(self, 's'));
        if (is(m, "isupper")) return jv_bool(all_chars(self, 'U'));
        if (is(m, "islower")) return jv_bool(all_chars(self, 'L'));
    } else if (self.t == JT_DICT) {
        jdict *d = self.u.d;
        if (is(m, "items") || is(m, "keys") || is(m, "values")) {
            jv out = jv_list(c);
            out.u.l->view = m[0] == 'k' ? 1 : m[0] == 'v' ? 2 : 3;
            for (size_t i = 0; i < d->n; i++) {
                if (m[0] == 'k')
                    jlist_push(c, out.u.l, d->keys[i]);
                else if (m[0] == 'v')
                    jlist_push(c, out.u.l, d->vals[i]);
                else {
                    jv t = jv_list(c);
                    t.u.l->tuple = true;
                    jlist_push(c, t.u.l, d->keys[i]);
                    jlist_push(c, t.u.l, d->vals[i]);
                    jlist_push(c, out.u.l, t);
                }
            }
            return out;
        }
        if (is(m, "get")) {
            jv *v = jdict_find(d, jargs_get(a, 0, "key", jv_undef()));
            return v ? *v : jargs_get(a, 1, "default", jv_none());
        }
        if (is(m, "copy")) {
            jv out = jv_dict(c);
            for (size_t i = 0; i < d->n; i++)
                jdict_set(c, out.u.d, d->keys[i], d->vals[i]);
            return out;
        }
    } else if (self.t == JT_LIST) {
        jlist *l = self.u.l;
        if (is(m, "copy")) {
            jv out = jv_list(c);
            for (size_t i = 0; i < l->n; i++)
                jlist_push(c, out.u.l, l->items[i]);
            return out;
        }
        jv x = jargs_get(a, 0, NULL, jv_undef());
        int64_t k = 0;
        for (size_t i = 0; i < l->n; i++)
            if (jv_equal(l->items[i], x)) {
                if (is(m, "index"))
                    return jv_int((int64_t)i);
                k++;
            }
        if (is(m, "index"))
            jfail(c, line, "value is not in list");
        return jv_int(k);
    }
    jfail(c, line, "'%s' object has no method '%s'", jv_type_name(self), m);
}

/* Markup's string methods give Markup (their arguments are escaped
 * there too; templates only pass literals, which need none). */
jv jinja_method(jctx *c, jv self, const char *m, const jargs *a) {
    jv r = method_impl(c, self, m, a);
    if (self.t == JT_STR && self.markup && r.t == JT_STR && !is(m, "join"))
        r.markup = true;
    return r;
}

/* ---- globals ---- */

bool jinja_global(jctx *c, const char *name, const jargs *a, jv *out) {
    int line = a->line;
    if (is(name, "raise_exception")) {
        jv msg = jv_to_str(c, jargs_get(a, 0, "message", jv_undef()));
        jfail(c, line, "%s", msg.u.s->s);
    }
    if (is(name, "range")) {
        int64_t v[3] = {0, 0, 1};
        if (a->n_pos < 1 || a->n_pos > 3 || a->n_kw)
            jfail(c, line, "range expected 1 to 3 arguments");
        for (int i = 0; i < a->n_pos; i++) {
            if (a->pos[i].t != JT_INT && a->pos[i].t != JT_BOOL)
                jfail(c, line, "'%s' object cannot be interpreted as an integer", jv_type_name(a->pos[i]));
            v[a->n_pos == 1 ? 1 : i] = a->pos[i].t == JT_BOOL ? a->pos[i].u.b : a->pos[i].u.i;
        }
        if (!v[2])
            jfail(c, line, "range() arg 3 must not be zero");
        /* jinja2's sandbox refuses ranges over 100000 items */
        double count = v[2] > 0 ? ((double)v[1] - (double)v[0]) / (double)v[2] : ((double)v[0] - (double)v[1]) / (double)-v[2];
        if (count > 100000)
            jfail(c, line, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
        *out = jv_list(c);
        for (int64_t i = v[0]; v[2] > 0 ? i < v[1] : i > v[1];) {
            jlist_push(c, out->u.l, jv_int(i));
            if (__builtin_add_overflow(i, v[2], &i))
                break;
        }
        return true;
    }
    if (is(name, "namespace") || is(name, "dict")) {
        *out = jv_dict(c);
        out->u.d->ns = name[0] == 'n';
        if (a->n_pos > 1)
            jfail(c, line, "%s expected at most 1 argument, got %d", name, a->n_pos);
        if (a->n_pos == 1) {
            jv src = a->pos[0];
            if (src.t == JT_DICT && !src.u.d->ns) {
                for (size_t i = 0; i < src.u.d->n; i++)
                    jdict_set(c, out->u.d, src.u.d->keys[i], src.u.d->vals[i]);
            } else {
                jlist *l = jinja_iterable(c, src, line);
                for (size_t i = 0; i < l->n; i++) {
                    jv pair = l->items[i];
                    if (pair.t != JT_LIST || pair.u.l->n != 2)
                        jfail(c, line, "dictionary update sequence element #%zu has the wrong length", i);
                    jdict_set(c, out->u.d, pair.u.l->items[0], pair.u.l->items[1]);
                }
            }
        }
        for (int i = 0; i < a->n_kw; i++)
            jdict_set(c, out->u.d, (jv){.t = JT_STR, .u.s = a->kw_names[i]}, a->kw[i]);
        return true;
    }
    if (is(name, "strftime_now")) {
        jv fmt = jargs_get(a, 0, NULL, jv_undef());
        if (fmt.t != JT_STR)
            jfail(c, line, "strftime_now needs a format string");
        time_t t = c->now ? (time_t)c->now : time(NULL);
        struct tm tm;
        if (!localtime_r(&t, &tm))
            jfail(c, line, "strftime_now: bad time");
        char buf[512];
        size_t k = fmt.u.s->len ? strftime(buf, sizeof buf, fmt.u.s->s, &tm) : 0;
        if (fmt.u.s->len && !k)
            jfail(c, line, "strftime_now: format too long");
        *out = jv_str(c, buf, k);
        return true;
    }
    return false;
}
