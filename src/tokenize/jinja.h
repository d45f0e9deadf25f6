/* The Jinja engine's internal interface: values, the syntax tree, and the
 * render context shared by the lexer, parser, evaluator and builtins.
 *
 * Memory: everything a render makes (tokens, nodes, values, output) lives in
 * one arena freed at the end, so lists and dicts can be shared by reference
 * as in Python and no value needs a count.  Errors longjmp back to the entry
 * point (jinja_render), which is safe because nothing outside the arena
 * needs freeing.  Templates come from model files, so the arena size, the
 * output size, recursion depth and evaluation steps are all bounded. */
#ifndef TPORT_TOKENIZE_JINJA_H
#define TPORT_TOKENIZE_JINJA_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The engine's parts share these names among its files only: hidden, so
 * libtport exports tport_template_render and nothing of the engine. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

typedef struct jctx jctx;

/* ---- arena ---- */
typedef struct jchunk {
    struct jchunk *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} jchunk;

void *jalloc(jctx *c, size_t n);              /* zeroed; longjmps when over the limit */

/* ---- values ---- */
typedef enum jtype { JT_UNDEF, JT_NONE, JT_BOOL, JT_INT, JT_FLOAT, JT_STR, JT_LIST, JT_DICT, JT_FUNC } jtype;

typedef struct jstr {
    size_t len;
    char s[];                                  /* NUL-terminated as well */
} jstr;

typedef struct jv jv;
typedef struct jlist {
    jv *items;
    size_t n, cap;
    bool tuple;                                /* prints as (a, b) */
    /* a one-shot iterator (what map, select, reject ... return in jinja2):
     * always true, no length, not JSON, consumed by the first pass */
    bool gen;
    /* dict.keys()/values()/items(): print as dict_keys([...]) and are not
     * JSON; 0 for a plain list */
    uint8_t view;
} jlist;
typedef struct jdict {
    jv *keys, *vals;                           /* insertion order, as Python */
    size_t n, cap;
    bool ns;                                   /* namespace(): attributes may be set */
} jdict;
typedef struct jfunc jfunc;

struct jv {
    jtype t;
    /* markupsafe.Markup (|safe, |escape): `+` with a plain string escapes
     * the plain one, as Markup.__add__ does */
    bool markup;
    union {
        bool b;
        int64_t i;
        double f;
        const jstr *s;
        jlist *l;
        jdict *d;
        jfunc *fn;
    } u;
};

jv jv_undef(void);
jv jv_none(void);
jv jv_bool(bool b);
jv jv_int(int64_t i);
jv jv_float(double f);
jv jv_str(jctx *c, const char *s, size_t n);
jv jv_cstr(jctx *c, const char *s);
jv jv_list(jctx *c);
jv jv_gen(jctx *c);                            /* an empty one-shot iterator */
jv jv_escape(jctx *c, jv s);                   /* markupsafe.escape */
jv jv_dict(jctx *c);
void jlist_push(jctx *c, jlist *l, jv v);
jv *jdict_find(const jdict *d, jv key);        /* the value slot, or NULL */
jv *jdict_find_str(const jdict *d, const char *key);
void jdict_set(jctx *c, jdict *d, jv key, jv val);

bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
/* Python ordering for sort/min/max and < >; fails on mixed kinds. */
int jv_compare(jctx *c, jv a, jv b, int line);
bool jv_is_number(jv v);
double jv_num(jv v);
const char *jv_type_name(jv v);

/* ---- text ---- */
typedef struct jbuf {
    char *p;
    size_t n, cap;
} jbuf;
void jbuf_put(jctx *c, jbuf *b, const char *s, size_t n);
void jbuf_puts(jctx *c, jbuf *b, const char *s);
jv jbuf_value(jctx *c, const jbuf *b);

void jv_write_str(jctx *c, jbuf *b, jv v);     /* Python str() */
void jv_write_repr(jctx *c, jbuf *b, jv v);    /* Python repr() */
jv jv_to_str(jctx *c, jv v);                   /* str() as a string value */
void jv_write_float(jctx *c, jbuf *b, double f);     /* Python repr(float) */
/* json.dumps(v, ensure_ascii, indent (<0 none), separators, sort_keys) */
typedef struct jjson_opts {
    bool ensure_ascii, sort_keys;
    int indent;                                /* -1: none */
    const char *item_sep, *key_sep;            /* NULL: Python's defaults */
} jjson_opts;
void jv_write_json(jctx *c, jbuf *b, jv v, const jjson_opts *o, int level, int line);
/* Parses a JSON document into values; NULL on success, else a message. */
const char *jv_parse_json(jctx *c, const char *s, size_t n, jv *out);

/* UTF-8 helpers: strings are indexed by code point as in Python. */
size_t jutf8_count(const char *s, size_t n);
size_t jutf8_offset(const char *s, size_t n, size_t cp);  /* byte offset of code point cp */

/* ---- lexer ---- */
typedef enum jtok_kind {
    TK_EOF, TK_TEXT, TK_VAR_BEGIN, TK_VAR_END, TK_BLOCK_BEGIN, TK_BLOCK_END,
    TK_NAME, TK_STRING, TK_INT, TK_FLOAT, TK_OP
} jtok_kind;
typedef struct jtok {
    jtok_kind kind;
    int line;
    const char *s;                             /* TEXT/NAME/STRING: the (decoded) text; OP: the operator */
    size_t n;
    int64_t i;
    double f;
} jtok;
typedef struct jtoks {
    jtok *t;
    size_t n, cap;
} jtoks;
void jinja_lex(jctx *c, const char *src, size_t n, jtoks *out);

/* ---- syntax tree ---- */
typedef enum jnode_kind {
    /* expressions */
    N_LIT, N_NAME, N_LIST, N_TUPLE, N_DICT, N_ATTR, N_ITEM, N_SLICE, N_CALL, N_FILTER, N_TEST,
    N_NOT, N_NEG, N_POS, N_BIN, N_AND, N_OR, N_COND,
    /* statements */
    S_TEXT, S_OUT, S_IF, S_FOR, S_SET, S_SETBLOCK, S_MACRO, S_CALLBLOCK, S_FILTERBLOCK, S_BREAK, S_CONTINUE
} jnode_kind;

typedef enum jbinop {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_CONCAT,
    OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN
} jbinop;

typedef struct jnode jnode;
typedef struct jnodes {
    jnode **v;
    int n, cap;
} jnodes;
struct jnode {
    jnode_kind kind;
    int line;
    int op;                                    /* jbinop; N_TEST: negated */
    jnode *a, *b, *c;                          /* operands, condition, value, slice parts */
    jnodes args;                               /* call/filter/test args, list items, dict keys, body */
    jnodes kwargs;                             /* keyword values, dict values, else body, macro defaults */
    const jstr **names;                        /* keyword names, macro params, for targets */
    int n_names;
    const jstr *name;                          /* NAME, ATTR, FILTER, TEST, MACRO */
    jv lit;
};
jnodes jinja_parse(jctx *c, const jtoks *toks);

/* ---- evaluation ---- */
typedef struct jscope {
    struct jscope *parent;
    jdict vars;
} jscope;

struct jfunc {
    enum { FN_MACRO, FN_BUILTIN, FN_METHOD } kind;
    const jnode *macro;                        /* FN_MACRO */
    jscope *closure;
    const jnode *caller_body;                  /* the body of {% call %}, for caller() */
    jscope *caller_scope;
    const char *name;                          /* FN_BUILTIN: global name; FN_METHOD: method */
    jv self;                                   /* FN_METHOD */
};

/* A call's arguments, already evaluated. */
typedef struct jargs {
    jv *pos;
    int n_pos;
    const jstr **kw_names;
    jv *kw;
    int n_kw;
    int line;
} jargs;
jv jargs_get(const jargs *a, int pos, const char *kw, jv dflt);

struct jctx {
    jchunk *chunks;
    size_t used, mem_limit, out_limit;
    uint64_t steps, max_steps;
    int depth, max_depth;
    int64_t now;                               /* strftime_now's time (Unix seconds) */
    jmp_buf fail;
    char err[512];
    jscope *globals;
    int loop_ctl;                              /* 1 break, 2 continue */
    size_t out_total;
};

_Noreturn void jfail(jctx *c, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
void jstep(jctx *c, int line);                 /* counts work; fails past max_steps */

void jinja_exec(jctx *c, const jnodes *body, jscope *s, jbuf *out);
jv jinja_call(jctx *c, jv fn, const jargs *a);

/* builtins (jinja_filters.c, jinja_methods.c) */
bool jinja_filter(jctx *c, const char *name, jv v, const jargs *a, jv *out);   /* false: no such filter */
bool jinja_test(jctx *c, const char *name, jv v, const jargs *a, bool *out);   /* false: no such test */
bool jinja_global(jctx *c, const char *name, const jargs *a, jv *out);        /* false: no such function */
jv jinja_attr(jctx *c, jv obj, const char *name, size_t n, int line);         /* obj.name */
jv jinja_method(jctx *c, jv self, const char *name, const jargs *a);
jlist *jinja_iterable(jctx *c, jv v, int line);                              /* for, list(), join ... */
jv jinja_slice(jctx *c, jv obj, jv start, jv stop, jv step, int line);
/* Python's str methods shared by filters and methods (jinja_methods.c). */
jv jstr_strip(jctx *c, jv s, jv chars, bool left, bool right);
jv jstr_case(jctx *c, jv s, char how);                                         /* u l t c */
jv jstr_replace(jctx *c, jv s, jv old, jv new_, int64_t count, int line);

/* Renders a template with a context dict (or JT_NONE).  Returns the output
 * (in the arena) or NULL with c->err set. */
const jstr *jinja_render(jctx *c, const char *tmpl, size_t n, jv context);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif
