/* The Jinja evaluator: statements write to an output buffer, expressions
 * give values, with jinja2's scoping (a for loop's body is its own scope,
 * which is why templates use namespace(); if blocks are not) and its
 * default Undefined (prints empty, iterates empty, fails when its
 * attributes are read, when called, or when used in arithmetic). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/jinja.h"

static jv eval(jctx *c, const jnode *n, jscope *s);

static bool str_is(const jstr *s, const char *lit) { return s->len == strlen(lit) && !memcmp(s->s, lit, s->len); }

static jscope *new_scope(jctx *c, jscope *parent) {
    jscope *s = jalloc(c, sizeof *s);
    s->parent = parent;
    return s;
}

static void set_var(jctx *c, jscope *s, const jstr *name, jv v) {
    jdict_set(c, &s->vars, (jv){.t = JT_STR, .u.s = name}, v);
}

static bool lookup(const jscope *s, const jstr *name, jv *out) {
    jv key = {.t = JT_STR, .u.s = name};
    for (; s; s = s->parent) {
        jv *v = jdict_find(&s->vars, key);
        if (v) {
            *out = *v;
            return true;
        }
    }
    return false;
}

static _Noreturn void undefined_error(jctx *c, const jnode *n) {
    if (n->kind == N_NAME)
        jfail(c, n->line, "'%s' is undefined", n->name->s);
    if (n->kind == N_ATTR)
        jfail(c, n->line, "'%s' is undefined", n->name->s);
    jfail(c, n->line, "a value is undefined");
}


static bool contains(jctx *c, jv container, jv item, int line) {
    switch (container.t) {
    case JT_UNDEF: return false;
    case JT_STR:
        if (item.t != JT_STR)
            jfail(c, line, "'in <string>' requires string as left operand, not %s", jv_type_name(item));
        if (!item.u.s->len)
            return true;
        for (size_t i = 0; i + item.u.s->len <= container.u.s->len; i++)
            if (!memcmp(container.u.s->s + i, item.u.s->s, item.u.s->len))
                return true;
        return false;
    case JT_LIST:
        for (size_t i = 0; i < container.u.l->n; i++)
            if (jv_equal(container.u.l->items[i], item))
                return true;
        return false;
    case JT_DICT: return jdict_find(container.u.d, item) != NULL;
    default: jfail(c, line, "argument of type '%s' is not iterable", jv_type_name(container));
    }
}

/* ---- arithmetic with Python's rules ---- */

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0)))
        q--;
    return q;
}

static jv arith(jctx *c, int op, jv a, jv b, int line) {
    if (a.t == JT_UNDEF || b.t == JT_UNDEF)
        jfail(c, line, "an undefined value used in arithmetic");
    if (jv_is_number(a) && jv_is_number(b)) {
        bool ints = a.t != JT_FLOAT && b.t != JT_FLOAT;
        int64_t x = a.t == JT_BOOL ? a.u.b : a.u.i, y = b.t == JT_BOOL ? b.u.b : b.u.i, r;
        double fx = jv_num(a), fy = jv_num(b);
        switch (op) {
        case OP_ADD:
            if (ints) {
                if (__builtin_add_overflow(x, y, &r))
                    jfail(c, line, "integer overflow");
                return jv_int(r);
            }
            return jv_float(fx + fy);
        case OP_SUB:
            if (ints) {
                if (__builtin_sub_overflow(x, y, &r))
                    jfail(c, line, "integer overflow");
                return jv_int(r);
            }
            return jv_float(fx - fy);
        case OP_MUL:
            if (ints) {
                if (__builtin_mul_overflow(x, y, &r))
                    jfail(c, line, "integer overflow");
                return jv_int(r);
            }
            return jv_float(fx * fy);
        case OP_DIV:
            if (fy == 0)
                jfail(c, line, "division by zero");
            return jv_float(fx / fy);
        case OP_FLOORDIV:
            if (fy == 0)
                jfail(c, line, "integer division or modulo by zero");
            if (ints) {
                if (x == INT64_MIN && y == -1)
                    jfail(c, line, "integer overflow");
                return jv_int(floor_div(x, y));
            }
            return jv_float(floor(fx / fy));
        case OP_MOD:
            if (fy == 0)
                jfail(c, line, "integer division or modulo by zero");
            if (ints) {
                if (y == -1)
                    return jv_int(0);
                int64_t m = x % y;
                if (m && ((m < 0) != (y < 0)))
                    m += y;
                return jv_int(m);
            } else {
                double m = fmod(fx, fy);
                if (m && ((m < 0) != (fy < 0)))
                    m += fy;
                return jv_float(m);
            }
        case OP_POW:
            if (ints && y >= 0) {
                int64_t acc = 1;
                for (int64_t k = 0; k < y; k++) {
                    if (__builtin_mul_overflow(acc, x, &acc))
                        jfail(c, line, "integer overflow");
                    if (acc == 0 || acc == 1)
                        break;
                    jstep(c, line);
                }
                return jv_int(acc);
            }
            return jv_float(pow(fx, fy));
        default: break;
        }
    }
    if (op == OP_ADD && a.t == JT_STR && b.t == JT_STR) {
        bool markup = a.markup || b.markup;
        if (markup) {
            a = jv_escape(c, a);
            b = jv_escape(c, b);
        }
        jbuf o = {0};
        jbuf_put(c, &o, a.u.s->s, a.u.s->len);
        jbuf_put(c, &o, b.u.s->s, b.u.s->len);
        jv r = jbuf_value(c, &o);
        r.markup = markup;
        return r;
    }
    if (op == OP_ADD && a.t == JT_LIST && b.t == JT_LIST && a.u.l->tuple == b.u.l->tuple && !a.u.l->gen &&
        !b.u.l->gen && !a.u.l->view && !b.u.l->view) {
        jv r = jv_list(c);
        r.u.l->tuple = a.u.l->tuple;
        for (size_t i = 0; i < a.u.l->n; i++)
            jlist_push(c, r.u.l, a.u.l->items[i]);
        for (size_t i = 0; i < b.u.l->n; i++)
            jlist_push(c, r.u.l, b.u.l->items[i]);
        return r;
    }
    if (op == OP_MUL && (a.t == JT_STR || a.t == JT_LIST || b.t == JT_STR || b.t == JT_LIST)) {
        jv seq = a.t == JT_STR || a.t == JT_LIST ? a : b, k = seq.t == a.t && a.t != JT_INT ? b : a;
        if (k.t == JT_INT || k.t == JT_BOOL) {
            int64_t times = k.t == JT_BOOL ? k.u.b : k.u.i;
            jv r = seq.t == JT_STR ? jv_str(c, "", 0) : jv_list(c);
            if (seq.t == JT_LIST)
                r.u.l->tuple = seq.u.l->tuple;
            jbuf o = {0};
            for (int64_t t = 0; t < times; t++) {
                jstep(c, line);
                if (seq.t == JT_STR)
                    jbuf_put(c, &o, seq.u.s->s, seq.u.s->len);
                else
                    for (size_t i = 0; i < seq.u.l->n; i++)
                        jlist_push(c, r.u.l, seq.u.l->items[i]);
            }
            return seq.t == JT_STR ? jbuf_value(c, &o) : r;
        }
    }
    static const char *const sym[] = {"+", "-", "*", "/", "//", "%", "**"};
    jfail(c, line, "unsupported operand type(s) for %s: '%s' and '%s'", sym[op], jv_type_name(a), jv_type_name(b));
}

/* ---- calls ---- */

static bool mentions(const jnode *n, const char *name, int depth) {
    if (!n || depth > 200)
        return false;
    if (n->kind == N_NAME && str_is(n->name, name))
        return true;
    if (mentions(n->a, name, depth + 1) || mentions(n->b, name, depth + 1) || mentions(n->c, name, depth + 1))
        return true;
    for (int i = 0; i < n->args.n; i++)
        if (mentions(n->args.v[i], name, depth + 1))
            return true;
    for (int i = 0; i < n->kwargs.n; i++)
        if (mentions(n->kwargs.v[i], name, depth + 1))
            return true;
    return false;
}

static bool mentions_body(const jnode *m, const char *name) {
    for (int i = 0; i < m->args.n; i++)
        if (mentions(m->args.v[i], name, 0))
            return true;
    return false;
}

static jv call_macro(jctx *c, const jfunc *f, const jargs *a, jv caller) {
    const jnode *m = f->macro;
    if (++c->depth > c->max_depth)
        jfail(c, a->line, "macro calls nested too deeply");
    jscope *s = new_scope(c, f->closure);
    int np = m->n_names;
    bool *bound = jalloc(c, (size_t)(np ? np : 1));
    jv varargs = jv_list(c), kwargs = jv_dict(c);
    varargs.u.l->tuple = true; /* Python's *args */
    for (int i = 0; i < a->n_pos; i++) {
        if (i < np) {
            set_var(c, s, m->names[i], a->pos[i]);
            bound[i] = true;
        } else
            jlist_push(c, varargs.u.l, a->pos[i]);
    }
    for (int k = 0; k < a->n_kw; k++) {
        int i = 0;
        while (i < np && !(m->names[i]->len == a->kw_names[k]->len && !memcmp(m->names[i]->s, a->kw_names[k]->s, m->names[i]->len)))
            i++;
        if (i < np) {
            if (bound[i])
                jfail(c, a->line, "macro got multiple values for argument '%s'", m->names[i]->s);
            set_var(c, s, m->names[i], a->kw[k]);
            bound[i] = true;
        } else
            jdict_set(c, kwargs.u.d, (jv){.t = JT_STR, .u.s = a->kw_names[k]}, a->kw[k]);
    }
    /* jinja2 accepts extra arguments only when the body reads varargs or kwargs */
    if (varargs.u.l->n && !mentions_body(m, "varargs"))
        jfail(c, a->line, "macro takes not more than %d argument(s)", np);
    if (kwargs.u.d->n && !mentions_body(m, "kwargs"))
        jfail(c, a->line, "macro takes no keyword argument '%s'", kwargs.u.d->keys[0].u.s->s);
    for (int i = 0; i < np; i++)
        if (!bound[i])
            set_var(c, s, m->names[i], i < m->kwargs.n && m->kwargs.v[i] ? eval(c, m->kwargs.v[i], s) : jv_undef());
    set_var(c, s, jv_cstr(c, "varargs").u.s, varargs);
    set_var(c, s, jv_cstr(c, "kwargs").u.s, kwargs);
    if (caller.t != JT_UNDEF)
        set_var(c, s, jv_cstr(c, "caller").u.s, caller);
    jbuf out = {0};
    int saved = c->loop_ctl;
    c->loop_ctl = 0;
    jinja_exec(c, &m->args, s, &out);
    c->loop_ctl = saved;
    c->depth--;
    return jbuf_value(c, &out);
}

jv jinja_call(jctx *c, jv fn, const jargs *a) {
    if (fn.t != JT_FUNC)
        jfail(c, a->line, fn.t == JT_UNDEF ? "an undefined value was called" : "'%s' object is not callable", jv_type_name(fn));
    const jfunc *f = fn.u.fn;
    switch (f->kind) {
    case FN_MACRO: return call_macro(c, f, a, jv_undef());
    case FN_METHOD: return jinja_method(c, f->self, f->name, a);
    case FN_BUILTIN: {
        jv out;
        if (!jinja_global(c, f->name, a, &out))
            jfail(c, a->line, "'%s' is undefined", f->name);
        return out;
    }
    }
    jfail(c, a->line, "bad function");
}

static void eval_args(jctx *c, const jnode *n, jscope *s, jargs *a) {
    a->line = n->line;
    a->n_pos = n->args.n;
    a->pos = jalloc(c, (size_t)(n->args.n + 1) * sizeof *a->pos);
    for (int i = 0; i < n->args.n; i++)
        a->pos[i] = eval(c, n->args.v[i], s);
    a->n_kw = n->kwargs.n;
    a->kw = jalloc(c, (size_t)(n->kwargs.n + 1) * sizeof *a->kw);
    a->kw_names = n->names;
    for (int i = 0; i < n->kwargs.n; i++)
        a->kw[i] = eval(c, n->kwargs.v[i], s);
}


/* ---- subscripts ---- */

static bool norm_index(int64_t *i, size_t n) {
    if (*i < 0)
        *i += (int64_t)n;
    return *i >= 0 && *i < (int64_t)n;
}

/* obj[key] as jinja2's getitem: Python's TypeError and LookupError (a
 * generator, an unhashable key, a missing index) give Undefined */
static jv get_item(jctx *c, jv obj, jv key, int line) {
    if (obj.t == JT_LIST && (obj.u.l->gen || obj.u.l->view))
        return jv_undef();
    if ((key.t == JT_LIST && !key.u.l->tuple) || key.t == JT_DICT)
        return jv_undef();
    switch (obj.t) {
    case JT_DICT: {
        jv *v = jdict_find(obj.u.d, key);
        if (v)
            return *v;
        break;
    }
    case JT_LIST:
        if (key.t == JT_INT || key.t == JT_BOOL) {
            int64_t i = key.t == JT_BOOL ? key.u.b : key.u.i;
            if (norm_index(&i, obj.u.l->n))
                return obj.u.l->items[i];
            return jv_undef();
        }
        break;
    case JT_STR:
        if (key.t == JT_INT) {
            int64_t i = key.u.i;
            size_t n = jutf8_count(obj.u.s->s, obj.u.s->len);
            if (!norm_index(&i, n))
                return jv_undef();
            size_t b0 = jutf8_offset(obj.u.s->s, obj.u.s->len, (size_t)i), b1 = jutf8_offset(obj.u.s->s, obj.u.s->len, (size_t)i + 1);
            return jv_str(c, obj.u.s->s + b0, b1 - b0);
        }
        break;
    default: break;
    }
    /* jinja2's getitem falls back to an attribute for string keys */
    if (key.t == JT_STR)
        return jinja_attr(c, obj, key.u.s->s, key.u.s->len, line);
    return jv_undef();
}


/* ---- expressions ---- */

static jv eval_filter(jctx *c, const jnode *n, jscope *s, jv input) {
    jv v = n->a ? (n->a->kind == N_FILTER ? eval_filter(c, n->a, s, input) : eval(c, n->a, s)) : input;
    jargs a;
    eval_args(c, n, s, &a);
    jv out;
    if (!jinja_filter(c, n->name->s, v, &a, &out))
        jfail(c, n->line, "no filter named '%s'", n->name->s);
    return out;
}

static jv eval(jctx *c, const jnode *n, jscope *s) {
    jstep(c, n->line);
    if (++c->depth > c->max_depth)
        jfail(c, n->line, "expression nested too deeply");
    jv r;
    switch (n->kind) {
    case N_LIT: r = n->lit; break;
    case N_NAME:
        if (!lookup(s, n->name, &r)) {
            /* a builtin global (range, namespace, raise_exception ...) is a
             * function value; anything else is undefined */
            static const char *const builtins[] = {"range", "namespace", "dict", "raise_exception", "strftime_now", "lipsum", "cycler", "joiner", NULL};
            r = jv_undef();
            for (int k = 0; builtins[k]; k++)
                if (str_is(n->name, builtins[k])) {
                    jfunc *f = jalloc(c, sizeof *f);
                    f->kind = FN_BUILTIN;
                    f->name = builtins[k];
                    r = (jv){.t = JT_FUNC, .u.fn = f};
                }
        }
        break;
    case N_LIST:
    case N_TUPLE:
        r = jv_list(c);
        r.u.l->tuple = n->kind == N_TUPLE;
        for (int i = 0; i < n->args.n; i++)
            jlist_push(c, r.u.l, eval(c, n->args.v[i], s));
        break;
    case N_DICT:
        r = jv_dict(c);
        for (int i = 0; i < n->args.n; i++) {
            jv k = eval(c, n->args.v[i], s);
            if (k.t == JT_LIST && !k.u.l->tuple)
                jfail(c, n->line, "unhashable type: 'list'");
            if (k.t == JT_DICT)
                jfail(c, n->line, "unhashable type: 'dict'");
            jdict_set(c, r.u.d, k, eval(c, n->kwargs.v[i], s));
        }
        break;
    case N_ATTR: {
        jv obj = eval(c, n->a, s);
        if (obj.t == JT_UNDEF)
            undefined_error(c, n->a);
        r = jinja_attr(c, obj, n->name->s, n->name->len, n->line);
        break;
    }
    case N_ITEM: {
        jv obj = eval(c, n->a, s);
        if (obj.t == JT_UNDEF)
            undefined_error(c, n->a);
        jv key = eval(c, n->b, s);
        r = get_item(c, obj, key, n->line);
        break;
    }
    case N_SLICE: {
        jv obj = eval(c, n->a, s);
        if (obj.t == JT_UNDEF)
            undefined_error(c, n->a);
        jv lo = n->b ? eval(c, n->b, s) : jv_none(), hi = n->c ? eval(c, n->c, s) : jv_none();
        jv st = n->args.n ? eval(c, n->args.v[0], s) : jv_none();
        r = jinja_slice(c, obj, lo, hi, st, n->line);
        break;
    }
    case N_CALL: {
        jv fn = eval(c, n->a, s);
        if (fn.t == JT_UNDEF)
            undefined_error(c, n->a);
        jargs a;
        eval_args(c, n, s, &a);
        r = jinja_call(c, fn, &a);
        break;
    }
    case N_FILTER: r = eval_filter(c, n, s, jv_undef()); break;
    case N_TEST: {
        jv v = eval(c, n->a, s);
        jargs a;
        eval_args(c, n, s, &a);
        bool t;
        if (!jinja_test(c, n->name->s, v, &a, &t))
            jfail(c, n->line, "no test named '%s'", n->name->s);
        r = jv_bool(n->op ? !t : t);
        break;
    }
    case N_NOT: r = jv_bool(!jv_truthy(eval(c, n->a, s))); break;
    case N_NEG:
    case N_POS: {
        jv v = eval(c, n->a, s);
        if (v.t == JT_BOOL)
            v = jv_int(v.u.b);
        if (v.t == JT_INT)
            r = n->kind == N_POS ? v : v.u.i == INT64_MIN ? (jfail(c, n->line, "integer overflow"), v) : jv_int(-v.u.i);
        else if (v.t == JT_FLOAT)
            r = jv_float(n->kind == N_POS ? v.u.f : -v.u.f);
        else
            jfail(c, n->line, "bad operand type for unary %c: '%s'", n->kind == N_NEG ? '-' : '+', jv_type_name(v));
        break;
    }
    case N_AND: {
        jv a = eval(c, n->a, s);
        r = jv_truthy(a) ? eval(c, n->b, s) : a;
        break;
    }
    case N_OR: {
        jv a = eval(c, n->a, s);
        r = jv_truthy(a) ? a : eval(c, n->b, s);
        break;
    }
    case N_COND:
        r = jv_truthy(eval(c, n->a, s)) ? eval(c, n->b, s) : n->c ? eval(c, n->c, s) : jv_undef();
        break;
    case N_BIN: {
        jv a = eval(c, n->a, s), b = eval(c, n->b, s);
        switch (n->op) {
        case OP_CONCAT: {
            jbuf o = {0};
            jv_write_str(c, &o, a);
            jv_write_str(c, &o, b);
            r = jbuf_value(c, &o);
            break;
        }
        case OP_EQ: r = jv_bool(jv_equal(a, b)); break;
        case OP_NE: r = jv_bool(!jv_equal(a, b)); break;
        case OP_LT: case OP_LE: case OP_GT: case OP_GE: {
            if (a.t == JT_UNDEF || b.t == JT_UNDEF)
                jfail(c, n->line, "an undefined value was compared");
            int k = jv_compare(c, a, b, n->line);
            r = jv_bool(n->op == OP_LT ? k < 0 : n->op == OP_LE ? k <= 0 : n->op == OP_GT ? k > 0 : k >= 0);
            break;
        }
        case OP_IN: r = jv_bool(contains(c, b, a, n->line)); break;
        case OP_NOTIN: r = jv_bool(!contains(c, b, a, n->line)); break;
        default: r = arith(c, n->op, a, b, n->line);
        }
        break;
    }
    default: jfail(c, n->line, "not an expression");
    }
    c->depth--;
    return r;
}

/* ---- statements ---- */

static void assign(jctx *c, const jnode *target, jv v, jscope *s) {
    if (target->kind == N_NAME) {
        set_var(c, s, target->name, v);
    } else if (target->kind == N_TUPLE) {
        jlist *l = jinja_iterable(c, v, target->line);
        if (l->n != (size_t)target->args.n)
            jfail(c, target->line, "cannot unpack %zu values into %d names", l->n, target->args.n);
        for (int i = 0; i < target->args.n; i++)
            set_var(c, s, target->args.v[i]->name, l->items[i]);
    } else {
        jv ns;
        if (!lookup(s, target->a->name, &ns) || ns.t != JT_DICT || !ns.u.d->ns)
            jfail(c, target->line, "cannot assign attribute on non-namespace object");
        jdict_set(c, ns.u.d, (jv){.t = JT_STR, .u.s = target->name}, v);
    }
}

static void write_value(jctx *c, jbuf *out, jv v) {
    size_t before = out->n;
    jv_write_str(c, out, v);
    c->out_total += out->n - before;
    if (c->out_total > c->out_limit)
        jfail(c, 0, "template output exceeds %zu bytes", c->out_limit);
}

static void exec_for(jctx *c, const jnode *n, jscope *s, jbuf *out) {
    jv seq = eval(c, n->a, s);
    jlist *items = jinja_iterable(c, seq, n->line);
    jscope *ls = new_scope(c, s);
    /* the loop filter applies before loop.length and friends are known */
    if (n->c) {
        jlist *kept = jv_list(c).u.l;
        for (size_t i = 0; i < items->n; i++) {
            jstep(c, n->line);
            if (n->n_names == 1)
                set_var(c, ls, n->names[0], items->items[i]);
            else
                for (int k = 0; k < n->n_names; k++)
                    set_var(c, ls, n->names[k], get_item(c, items->items[i], jv_int(k), n->line));
            if (jv_truthy(eval(c, n->c, ls)))
                jlist_push(c, kept, items->items[i]);
        }
        items = kept;
    } else if (items == seq.u.l) {
        /* iterate a snapshot: the body cannot change what it walks */
        jlist *copy = jv_list(c).u.l;
        for (size_t i = 0; i < items->n; i++)
            jlist_push(c, copy, items->items[i]);
        items = copy;
    }
    /* jinja2 runs the else block unless some iteration reached the end of
     * the body: no items, or every iteration left by break or continue */
    bool completed = false;
    const char *keys[] = {"index", "index0", "revindex", "revindex0", "first", "last", "length", "previtem", "nextitem", "depth", "depth0"};
    jv kv[11];
    for (int k = 0; k < 11; k++)
        kv[k] = jv_cstr(c, keys[k]);
    jv cycle_key = jv_cstr(c, "cycle");
    for (size_t i = 0; i < items->n; i++) {
        jstep(c, n->line);
        jscope *it = new_scope(c, s);
        jv item = items->items[i];
        if (n->n_names == 1)
            set_var(c, it, n->names[0], item);
        else {
            jlist *parts = jinja_iterable(c, item, n->line);
            if (parts->n != (size_t)n->n_names)
                jfail(c, n->line, "cannot unpack %zu values into %d loop variables", parts->n, n->n_names);
            for (int k = 0; k < n->n_names; k++)
                set_var(c, it, n->names[k], parts->items[k]);
        }
        jv loop = jv_dict(c);
        int64_t len = (int64_t)items->n, idx = (int64_t)i;
        jv vals[11] = {jv_int(idx + 1), jv_int(idx), jv_int(len - idx), jv_int(len - idx - 1), jv_bool(i == 0),
                       jv_bool(idx == len - 1), jv_int(len), i ? items->items[i - 1] : jv_undef(),
                       idx + 1 < len ? items->items[i + 1] : jv_undef(), jv_int(1), jv_int(0)};
        for (int k = 0; k < 11; k++)
            jdict_set(c, loop.u.d, kv[k], vals[k]);
        jfunc *cycle = jalloc(c, sizeof *cycle);
        cycle->kind = FN_METHOD;
        cycle->name = "cycle";
        cycle->self = jv_int(idx); /* loop.cycle(a, b, ...) picks by index0 */
        jdict_set(c, loop.u.d, cycle_key, (jv){.t = JT_FUNC, .u.fn = cycle});
        set_var(c, it, jv_cstr(c, "loop").u.s, loop);
        jinja_exec(c, &n->args, it, out);
        int ctl = c->loop_ctl;
        c->loop_ctl = 0;
        completed |= ctl == 0;
        if (ctl == 1)
            break;
    }
    if (!completed)
        jinja_exec(c, &n->kwargs, s, out);
}

static void exec_stmt(jctx *c, const jnode *n, jscope *s, jbuf *out) {
    jstep(c, n->line);
    switch (n->kind) {
    case S_TEXT: {
        size_t before = out->n;
        jbuf_put(c, out, n->lit.u.s->s, n->lit.u.s->len);
        c->out_total += out->n - before;
        if (c->out_total > c->out_limit)
            jfail(c, n->line, "template output exceeds %zu bytes", c->out_limit);
        return;
    }
    case S_OUT: write_value(c, out, eval(c, n->a, s)); return;
    case S_IF:
        if (jv_truthy(eval(c, n->a, s)))
            jinja_exec(c, &n->args, s, out);
        else
            jinja_exec(c, &n->kwargs, s, out);
        return;
    case S_FOR: exec_for(c, n, s, out); return;
    case S_SET: assign(c, n->a, eval(c, n->b, s), s); return;
    case S_SETBLOCK:
    case S_FILTERBLOCK: {
        jbuf body = {0};
        /* the body is a scope of its own: its sets do not leak (jinja2's
         * inner frame) */
        jinja_exec(c, &n->args, new_scope(c, s), &body);
        if (c->loop_ctl) /* break/continue left the block: jinja2 drops its text */
            return;
        jv v = jbuf_value(c, &body);
        if (n->b)
            v = eval_filter(c, n->b, s, v);
        if (n->kind == S_SETBLOCK)
            assign(c, n->a, v, s);
        else
            write_value(c, out, v);
        return;
    }
    case S_MACRO: {
        jfunc *f = jalloc(c, sizeof *f);
        f->kind = FN_MACRO;
        f->macro = n;
        f->closure = s;
        set_var(c, s, n->name, (jv){.t = JT_FUNC, .u.fn = f});
        return;
    }
    case S_CALLBLOCK: {
        jfunc *caller = jalloc(c, sizeof *caller);
        caller->kind = FN_MACRO;
        caller->macro = n;
        caller->closure = s;
        jv fn = eval(c, n->a->a, s);
        if (fn.t != JT_FUNC || fn.u.fn->kind != FN_MACRO)
            jfail(c, n->line, "{%% call %%} needs a macro");
        jargs a;
        eval_args(c, n->a, s, &a);
        write_value(c, out, call_macro(c, fn.u.fn, &a, (jv){.t = JT_FUNC, .u.fn = caller}));
        return;
    }
    case S_BREAK: c->loop_ctl = 1; return;
    case S_CONTINUE: c->loop_ctl = 2; return;
    default: jfail(c, n->line, "not a statement");
    }
}

void jinja_exec(jctx *c, const jnodes *body, jscope *s, jbuf *out) {
    if (++c->depth > c->max_depth)
        jfail(c, body->n ? body->v[0]->line : 0, "template nested too deeply");
    for (int i = 0; i < body->n && !c->loop_ctl; i++)
        exec_stmt(c, body->v[i], s, out);
    c->depth--;
}

const jstr *jinja_render(jctx *c, const char *tmpl, size_t n, jv context) {
    if (setjmp(c->fail))
        return NULL;
    jtoks toks = {0};
    jinja_lex(c, tmpl, n, &toks);
    jnodes body = jinja_parse(c, &toks);
    c->globals = new_scope(c, NULL);
    if (context.t == JT_DICT)
        for (size_t i = 0; i < context.u.d->n; i++)
            if (context.u.d->keys[i].t == JT_STR)
                set_var(c, c->globals, context.u.d->keys[i].u.s, context.u.d->vals[i]);
    jbuf out = {0};
    /* the template's own top-level names live in a scope above the context,
     * so `set` at top level never changes the caller's values */
    jinja_exec(c, &body, new_scope(c, c->globals), &out);
    return jbuf_value(c, &out).u.s;
}
