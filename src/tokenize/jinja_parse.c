/* The Jinja parser: tokens to a syntax tree, with jinja2's grammar and
 * operator precedence (filters and tests bind tighter than arithmetic;
 * `~` sits between + - and * /).  Nesting is bounded so hostile templates
 * cannot exhaust the stack. */
#include <stdio.h>
#include <string.h>

#include "tokenize/jinja.h"

typedef struct parser {
    jctx *c;
    const jtok *t;
    size_t n, i;
    int depth;
    int loops; /* for bodies around this point, within the current macro */
} parser;

static const jtok *cur(parser *p) { return &p->t[p->i < p->n ? p->i : p->n - 1]; }
static const jtok *next(parser *p) {
    const jtok *t = cur(p);
    if (p->i < p->n - 1)
        p->i++;
    return t;
}
static bool tok_is(const jtok *t, jtok_kind k, const char *s) {
    return t->kind == k && (!s || (t->n == strlen(s) && !memcmp(t->s, s, t->n)));
}
static bool is_op(parser *p, const char *s) { return tok_is(cur(p), TK_OP, s); }
static bool is_name(parser *p, const char *s) { return tok_is(cur(p), TK_NAME, s); }
static bool accept_op(parser *p, const char *s) {
    if (!is_op(p, s))
        return false;
    next(p);
    return true;
}
static bool accept_name(parser *p, const char *s) {
    if (!is_name(p, s))
        return false;
    next(p);
    return true;
}

static _Noreturn void unexpected(parser *p, const char *what) {
    const jtok *t = cur(p);
    static const char *const kinds[] = {"end of template", "text", "'{{'", "'}}'", "'{%'", "'%}'", "name", "string", "integer", "float", "operator"};
    if (t->kind == TK_NAME || t->kind == TK_OP)
        jfail(p->c, t->line, "expected %s, got '%.*s'", what, (int)(t->n > 40 ? 40 : t->n), t->s);
    jfail(p->c, t->line, "expected %s, got %s", what, kinds[t->kind]);
}
static void expect_op(parser *p, const char *s) {
    if (!accept_op(p, s)) {
        char what[16];
        snprintf(what, sizeof what, "'%s'", s);
        unexpected(p, what);
    }
}
static void expect_kind(parser *p, jtok_kind k, const char *what) {
    if (cur(p)->kind != k)
        unexpected(p, what);
    next(p);
}

static jnode *node(parser *p, jnode_kind k, int line) {
    jnode *n = jalloc(p->c, sizeof *n);
    n->kind = k;
    n->line = line;
    return n;
}

static void push(jctx *c, jnodes *l, jnode *n) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 4;
        jnode **g = jalloc(c, (size_t)cap * sizeof *g);
        if (l->n)
            memcpy(g, l->v, (size_t)l->n * sizeof *g);
        l->v = g;
        l->cap = cap;
    }
    l->v[l->n++] = n;
}

static const jstr *name_of(parser *p, const jtok *t) { return jv_str(p->c, t->s, t->n).u.s; }

static void push_name(parser *p, jnode *n, const jstr *s) {
    const jstr **g = jalloc(p->c, (size_t)(n->n_names + 1) * sizeof *g);
    if (n->n_names)
        memcpy(g, n->names, (size_t)n->n_names * sizeof *g);
    g[n->n_names++] = s;
    n->names = g;
}

static void enter(parser *p) {
    if (++p->depth > p->c->max_depth)
        jfail(p->c, cur(p)->line, "template nested too deeply");
}

static jnode *expr(parser *p);
static jnode *or_expr(parser *p);
static jnode *unary(parser *p, bool with_filter);

/* (args, name=value, ...) after the '(' */
static void call_args(parser *p, jnode *n) {
    while (!accept_op(p, ")")) {
        if (n->args.n + n->kwargs.n && !accept_op(p, ","))
            unexpected(p, "',' or ')'");
        if (accept_op(p, ")"))
            break;
        if (cur(p)->kind == TK_NAME && p->i + 1 < p->n && tok_is(&p->t[p->i + 1], TK_OP, "=")) {
            push_name(p, n, name_of(p, next(p)));
            next(p);
            push(p->c, &n->kwargs, expr(p));
        } else {
            if (n->kwargs.n)
                jfail(p->c, cur(p)->line, "positional argument follows keyword argument");
            push(p->c, &n->args, expr(p));
        }
    }
}

static jnode *primary(parser *p) {
    const jtok *t = cur(p);
    jnode *n;
    enter(p);
    if (t->kind == TK_NAME) {
        next(p);
        n = node(p, N_LIT, t->line);
        if (tok_is(t, TK_NAME, "true") || tok_is(t, TK_NAME, "True"))
            n->lit = jv_bool(true);
        else if (tok_is(t, TK_NAME, "false") || tok_is(t, TK_NAME, "False"))
            n->lit = jv_bool(false);
        else if (tok_is(t, TK_NAME, "none") || tok_is(t, TK_NAME, "None"))
            n->lit = jv_none();
        else {
            n->kind = N_NAME;
            n->name = name_of(p, t);
        }
    } else if (t->kind == TK_STRING) {
        jbuf b = {0};
        while (cur(p)->kind == TK_STRING) {
            const jtok *s = next(p);
            jbuf_put(p->c, &b, s->s, s->n);
        }
        n = node(p, N_LIT, t->line);
        n->lit = jbuf_value(p->c, &b);
    } else if (t->kind == TK_INT || t->kind == TK_FLOAT) {
        next(p);
        n = node(p, N_LIT, t->line);
        n->lit = t->kind == TK_INT ? jv_int(t->i) : jv_float(t->f);
    } else if (accept_op(p, "(")) {
        if (accept_op(p, ")")) {
            n = node(p, N_TUPLE, t->line);
        } else {
            n = expr(p);
            if (is_op(p, ",")) {
                jnode *tu = node(p, N_TUPLE, t->line);
                push(p->c, &tu->args, n);
                while (accept_op(p, ",") && !is_op(p, ")"))
                    push(p->c, &tu->args, expr(p));
                n = tu;
            }
            expect_op(p, ")");
        }
    } else if (accept_op(p, "[")) {
        n = node(p, N_LIST, t->line);
        while (!accept_op(p, "]")) {
            if (n->args.n)
                expect_op(p, ",");
            if (accept_op(p, "]"))
                break;
            push(p->c, &n->args, expr(p));
        }
    } else if (accept_op(p, "{")) {
        n = node(p, N_DICT, t->line);
        while (!accept_op(p, "}")) {
            if (n->args.n)
                expect_op(p, ",");
            if (accept_op(p, "}"))
                break;
            push(p->c, &n->args, expr(p));
            expect_op(p, ":");
            push(p->c, &n->kwargs, expr(p));
        }
    } else
        unexpected(p, "an expression");
    p->depth--;
    return n;
}

static jnode *postfix(parser *p, jnode *n) {
    for (;;) {
        const jtok *t = cur(p);
        if (accept_op(p, ".")) {
            const jtok *a = next(p);
            jnode *m;
            if (a->kind == TK_NAME) {
                m = node(p, N_ATTR, t->line);
                m->name = name_of(p, a);
            } else if (a->kind == TK_INT) {
                m = node(p, N_ITEM, t->line);
                m->b = node(p, N_LIT, t->line);
                m->b->lit = jv_int(a->i);
            } else
                unexpected(p, "an attribute name");
            m->a = n;
            n = m;
        } else if (accept_op(p, "[")) {
            jnode *parts[3] = {0};
            bool slice = false;
            for (int k = 0; k < 3; k++) {
                if (!is_op(p, ":") && !is_op(p, "]"))
                    parts[k] = expr(p);
                if (k < 2 && accept_op(p, ":"))
                    slice = true;
                else
                    break;
            }
            expect_op(p, "]");
            jnode *m = node(p, slice ? N_SLICE : N_ITEM, t->line);
            m->a = n;
            if (slice) {
                m->b = parts[0];
                m->c = parts[1];
                m->lit.t = JT_NONE;
                if (parts[2])
                    push(p->c, &m->args, parts[2]);
            } else {
                if (!parts[0])
                    unexpected(p, "a subscript");
                m->b = parts[0];
            }
            n = m;
        } else if (accept_op(p, "(")) {
            jnode *m = node(p, N_CALL, t->line);
            m->a = n;
            call_args(p, m);
            n = m;
        } else
            return n;
    }
}

static jnode *filter_expr(parser *p, jnode *n) {
    for (;;) {
        const jtok *t = cur(p);
        if (accept_op(p, "|")) {
            const jtok *f = next(p);
            if (f->kind != TK_NAME)
                unexpected(p, "a filter name");
            jnode *m = node(p, N_FILTER, t->line);
            m->a = n;
            m->name = name_of(p, f);
            if (accept_op(p, "("))
                call_args(p, m);
            n = m;
        } else if (accept_name(p, "is")) {
            jnode *m = node(p, N_TEST, t->line);
            m->op = accept_name(p, "not");
            const jtok *f = next(p);
            if (f->kind != TK_NAME)
                unexpected(p, "a test name");
            m->a = n;
            m->name = name_of(p, f);
            const jtok *a = cur(p);
            if (accept_op(p, "("))
                call_args(p, m);
            else if ((a->kind == TK_NAME || a->kind == TK_STRING || a->kind == TK_INT || a->kind == TK_FLOAT ||
                      tok_is(a, TK_OP, "(") || tok_is(a, TK_OP, "[") || tok_is(a, TK_OP, "{")) &&
                     !is_name(p, "else") && !is_name(p, "or") && !is_name(p, "and"))
                push(p->c, &m->args, postfix(p, primary(p)));
            n = m;
        } else if (accept_op(p, "(")) {
            jnode *m = node(p, N_CALL, t->line);
            m->a = n;
            call_args(p, m);
            n = m;
        } else
            return n;
    }
}

/* `f(args) | g | ...` of {% filter %} and {% set x | f %}: filters whose
 * innermost input (a NULL operand) is the block's text */
static jnode *filter_chain(parser *p) {
    jnode *n = NULL;
    do {
        const jtok *f = next(p);
        if (f->kind != TK_NAME)
            unexpected(p, "a filter name");
        jnode *m = node(p, N_FILTER, f->line);
        m->a = n;
        m->name = name_of(p, f);
        if (accept_op(p, "("))
            call_args(p, m);
        n = m;
    } while (accept_op(p, "|"));
    return n;
}

static jnode *unary(parser *p, bool with_filter) {
    const jtok *t = cur(p);
    jnode *n;
    enter(p);
    if (accept_op(p, "-")) {
        n = node(p, N_NEG, t->line);
        n->a = unary(p, false);
    } else if (accept_op(p, "+")) {
        n = node(p, N_POS, t->line);
        n->a = unary(p, false);
    } else
        n = primary(p);
    n = postfix(p, n);
    if (with_filter)
        n = filter_expr(p, n);
    p->depth--;
    return n;
}

static jnode *bin(parser *p, int op, jnode *a, jnode *b, int line) {
    jnode *n = node(p, N_BIN, line);
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static jnode *pow_expr(parser *p) {
    jnode *n = unary(p, true);
    while (is_op(p, "**")) {
        int line = next(p)->line;
        n = bin(p, OP_POW, n, unary(p, true), line);
    }
    return n;
}

static jnode *mul_expr(parser *p) {
    jnode *n = pow_expr(p);
    for (;;) {
        int op = is_op(p, "*") ? OP_MUL : is_op(p, "/") ? OP_DIV : is_op(p, "//") ? OP_FLOORDIV : is_op(p, "%") ? OP_MOD : -1;
        if (op < 0)
            return n;
        int line = next(p)->line;
        n = bin(p, op, n, pow_expr(p), line);
    }
}

static jnode *concat_expr(parser *p) {
    jnode *n = mul_expr(p);
    while (is_op(p, "~")) {
        int line = next(p)->line;
        n = bin(p, OP_CONCAT, n, mul_expr(p), line);
    }
    return n;
}

static jnode *add_expr(parser *p) {
    jnode *n = concat_expr(p);
    for (;;) {
        int op = is_op(p, "+") ? OP_ADD : is_op(p, "-") ? OP_SUB : -1;
        if (op < 0)
            return n;
        int line = next(p)->line;
        n = bin(p, op, n, concat_expr(p), line);
    }
}

static jnode *compare(parser *p) {
    jnode *n = add_expr(p);
    for (bool chained = false;; chained = true) {
        const jtok *t = cur(p);
        int op = is_op(p, "==") ? OP_EQ : is_op(p, "!=") ? OP_NE : is_op(p, "<") ? OP_LT : is_op(p, "<=") ? OP_LE
               : is_op(p, ">") ? OP_GT : is_op(p, ">=") ? OP_GE : is_name(p, "in") ? OP_IN : -1;
        if (op < 0 && is_name(p, "not") && p->i + 1 < p->n && tok_is(&p->t[p->i + 1], TK_NAME, "in")) {
            next(p);
            op = OP_NOTIN;
        }
        if (op < 0)
            return n;
        next(p);
        if (chained) {
            /* Python's a < b < c: (a < b) and (b < c); b is read twice, which
             * is the same where expressions have no side effects */
            jnode *prev = n->kind == N_AND ? n->b : n;
            jnode *m = node(p, N_AND, t->line);
            m->a = n;
            m->b = bin(p, op, prev->b, add_expr(p), t->line);
            n = m;
        } else
            n = bin(p, op, n, add_expr(p), t->line);
    }
}

static jnode *not_expr(parser *p) {
    const jtok *t = cur(p);
    if (accept_name(p, "not")) {
        enter(p);
        jnode *n = node(p, N_NOT, t->line);
        n->a = not_expr(p);
        p->depth--;
        return n;
    }
    return compare(p);
}

static jnode *and_expr(parser *p) {
    jnode *n = not_expr(p);
    while (is_name(p, "and")) {
        jnode *m = node(p, N_AND, next(p)->line);
        m->a = n;
        m->b = not_expr(p);
        n = m;
    }
    return n;
}

static jnode *or_expr(parser *p) {
    jnode *n = and_expr(p);
    while (is_name(p, "or")) {
        jnode *m = node(p, N_OR, next(p)->line);
        m->a = n;
        m->b = and_expr(p);
        n = m;
    }
    return n;
}

static jnode *expr(parser *p) {
    enter(p);
    jnode *n = or_expr(p);
    while (is_name(p, "if")) {
        jnode *m = node(p, N_COND, next(p)->line);
        m->b = n;
        m->a = or_expr(p);
        if (accept_name(p, "else"))
            m->c = expr(p);
        n = m;
    }
    p->depth--;
    return n;
}

/* ---- statements ---- */

static const char *parse_body(parser *p, jnodes *body, const char *const *ends);

static void end_tag(parser *p) { expect_kind(p, TK_BLOCK_END, "'%}'"); }

/* Consumes `{% name %}` when it is an end tag; returns the end tag's name. */
static void expect_end(parser *p, const char *name) {
    if (!accept_name(p, name)) {
        char what[32];
        snprintf(what, sizeof what, "'%s'", name);
        unexpected(p, what);
    }
    end_tag(p);
}

static jnode *assign_target(parser *p) {
    const jtok *t = next(p);
    if (t->kind != TK_NAME)
        unexpected(p, "a name to assign");
    jnode *n = node(p, N_NAME, t->line);
    n->name = name_of(p, t);
    if (accept_op(p, ".")) {
        const jtok *a = next(p);
        if (a->kind != TK_NAME)
            unexpected(p, "an attribute name");
        jnode *m = node(p, N_ATTR, t->line);
        m->a = n;
        m->name = name_of(p, a);
        return m;
    }
    if (is_op(p, ",")) {
        jnode *tu = node(p, N_TUPLE, t->line);
        push(p->c, &tu->args, n);
        while (accept_op(p, ",")) {
            const jtok *b = next(p);
            if (b->kind != TK_NAME)
                unexpected(p, "a name to assign");
            jnode *m = node(p, N_NAME, b->line);
            m->name = name_of(p, b);
            push(p->c, &tu->args, m);
        }
        return tu;
    }
    return n;
}

static jnode *statement(parser *p, int line) {
    const jtok *kw = next(p);
    static const char *const if_ends[] = {"elif", "else", "endif", NULL};
    static const char *const endif[] = {"endif", NULL};
    static const char *const for_ends[] = {"else", "endfor", NULL};
    static const char *const endfor[] = {"endfor", NULL};
    static const char *const endset[] = {"endset", NULL};
    static const char *const endmacro[] = {"endmacro", NULL};
    static const char *const endcall[] = {"endcall", NULL};
    static const char *const endfilter[] = {"endfilter", NULL};
    static const char *const endgen[] = {"endgeneration", NULL};
    if (tok_is(kw, TK_NAME, "if")) {
        jnode *n = node(p, S_IF, line), *top = n;
        for (;;) {
            n->a = expr(p);
            end_tag(p);
            const char *e = parse_body(p, &n->args, if_ends);
            if (!strcmp(e, "elif")) {
                jnode *m = node(p, S_IF, cur(p)->line);
                next(p);
                push(p->c, &n->kwargs, m);
                n = m;
                continue;
            }
            if (!strcmp(e, "else")) {
                next(p);
                end_tag(p);
                parse_body(p, &n->kwargs, endif);
            }
            expect_end(p, "endif");
            return top;
        }
    }
    if (tok_is(kw, TK_NAME, "for")) {
        jnode *n = node(p, S_FOR, line);
        bool paren = accept_op(p, "(");
        do {
            const jtok *t = next(p);
            if (t->kind != TK_NAME)
                unexpected(p, "a loop variable");
            push_name(p, n, name_of(p, t));
        } while (accept_op(p, ","));
        if (paren)
            expect_op(p, ")");
        if (!accept_name(p, "in"))
            unexpected(p, "'in'");
        n->a = or_expr(p);
        if (is_op(p, ",")) { /* for x in a, b: a tuple */
            jnode *tu = node(p, N_TUPLE, line);
            push(p->c, &tu->args, n->a);
            while (accept_op(p, ","))
                push(p->c, &tu->args, or_expr(p));
            n->a = tu;
        }
        if (accept_name(p, "if"))
            n->c = expr(p);
        if (is_name(p, "recursive"))
            jfail(p->c, line, "recursive loops are not supported");
        end_tag(p);
        p->loops++;
        const char *e = parse_body(p, &n->args, for_ends);
        p->loops--;
        if (!strcmp(e, "else")) {
            next(p);
            end_tag(p);
            parse_body(p, &n->kwargs, endfor);
        }
        expect_end(p, "endfor");
        return n;
    }
    if (tok_is(kw, TK_NAME, "set")) {
        jnode *target = assign_target(p);
        if (accept_op(p, "=")) {
            jnode *n = node(p, S_SET, line);
            n->a = target;
            n->b = expr(p);
            if (is_op(p, ",")) {
                jnode *tu = node(p, N_TUPLE, line);
                push(p->c, &tu->args, n->b);
                while (accept_op(p, ","))
                    push(p->c, &tu->args, expr(p));
                n->b = tu;
            }
            end_tag(p);
            return n;
        }
        if (target->kind != N_NAME)
            jfail(p->c, line, "a block set assigns one name");
        jnode *n = node(p, S_SETBLOCK, line);
        n->a = target;
        if (accept_op(p, "|")) /* {% set x | filter %}: the filters apply to the body */
            n->b = filter_chain(p);
        end_tag(p);
        parse_body(p, &n->args, endset);
        expect_end(p, "endset");
        return n;
    }
    if (tok_is(kw, TK_NAME, "macro") || tok_is(kw, TK_NAME, "call")) {
        bool macro = kw->s[0] == 'm';
        jnode *n = node(p, macro ? S_MACRO : S_CALLBLOCK, line);
        if (macro) {
            const jtok *t = next(p);
            if (t->kind != TK_NAME)
                unexpected(p, "a macro name");
            n->name = name_of(p, t);
        }
        if (accept_op(p, "(")) {
            jnodes defaults = {0};
            while (!accept_op(p, ")")) {
                if (n->n_names)
                    expect_op(p, ",");
                if (accept_op(p, ")"))
                    break;
                const jtok *t = next(p);
                if (t->kind != TK_NAME)
                    unexpected(p, "a parameter name");
                push_name(p, n, name_of(p, t));
                push(p->c, &defaults, accept_op(p, "=") ? expr(p) : NULL);
            }
            n->kwargs = defaults;
        } else if (macro)
            unexpected(p, "'('");
        if (!macro) {
            n->a = expr(p);
            if (n->a->kind != N_CALL)
                jfail(p->c, line, "{%% call %%} needs a call");
        }
        end_tag(p);
        /* a macro's (or caller's) body is a function of its own: a loop
         * around its definition is not a loop for its break/continue */
        int loops = p->loops;
        p->loops = 0;
        parse_body(p, &n->args, macro ? endmacro : endcall);
        p->loops = loops;
        expect_end(p, macro ? "endmacro" : "endcall");
        return n;
    }
    if (tok_is(kw, TK_NAME, "filter")) {
        jnode *n = node(p, S_FILTERBLOCK, line);
        n->b = filter_chain(p);
        end_tag(p);
        parse_body(p, &n->args, endfilter);
        expect_end(p, "endfilter");
        return n;
    }
    if (tok_is(kw, TK_NAME, "generation")) {
        /* transformers' AssistantTracker marks assistant text; the text
         * itself renders unchanged */
        jnode *n = node(p, S_IF, line);
        n->a = node(p, N_LIT, line);
        n->a->lit = jv_bool(true);
        end_tag(p);
        parse_body(p, &n->args, endgen);
        expect_end(p, "endgeneration");
        return n;
    }
    if (tok_is(kw, TK_NAME, "break") || tok_is(kw, TK_NAME, "continue")) {
        if (!p->loops)
            jfail(p->c, line, "'%.*s' outside a loop", (int)kw->n, kw->s);
        jnode *n = node(p, kw->s[0] == 'b' ? S_BREAK : S_CONTINUE, line);
        end_tag(p);
        return n;
    }
    if (kw->kind == TK_NAME)
        jfail(p->c, line, "unknown tag '%.*s'", (int)(kw->n > 40 ? 40 : kw->n), kw->s);
    unexpected(p, "a tag name");
}

/* Statements up to one of the end tags (left unconsumed, after its '{%');
 * returns which, or "" at the end of the template when ends is NULL. */
static const char *parse_body(parser *p, jnodes *body, const char *const *ends) {
    enter(p);
    for (;;) {
        const jtok *t = cur(p);
        if (t->kind == TK_EOF) {
            if (ends)
                jfail(p->c, t->line, "unexpected end of template, expected '%s'", ends[0]);
            p->depth--;
            return "";
        }
        if (t->kind == TK_TEXT) {
            next(p);
            jnode *n = node(p, S_TEXT, t->line);
            n->lit = jv_str(p->c, t->s, t->n);
            push(p->c, body, n);
        } else if (t->kind == TK_VAR_BEGIN) {
            next(p);
            jnode *n = node(p, S_OUT, t->line);
            n->a = expr(p);
            expect_kind(p, TK_VAR_END, "'}}'");
            push(p->c, body, n);
        } else if (t->kind == TK_BLOCK_BEGIN) {
            next(p);
            for (int k = 0; ends && ends[k]; k++)
                if (is_name(p, ends[k])) {
                    p->depth--;
                    return ends[k];
                }
            push(p->c, body, statement(p, t->line));
        } else
            unexpected(p, "text or a tag");
    }
}

jnodes jinja_parse(jctx *c, const jtoks *toks) {
    parser p = {.c = c, .t = toks->t, .n = toks->n};
    jnodes body = {0};
    parse_body(&p, &body, NULL);
    return body;
}
