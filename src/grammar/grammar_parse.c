/* GBNF, the grammar notation of llama.cpp (grammars/README.md there),
 * parsed into rules of flat element sequences.  The text comes from HTTP
 * requests, so every read is bounds-checked against the length, counts are
 * capped (grammar.h), and a grammar the matcher could loop on (left
 * recursion) is refused at parse time, naming the rule.
 *
 *   rule    ::= name "::=" alts          (a rule ends where the next
 *   alts    ::= seq ("|" seq)*            "name ::=" begins)
 *   seq     ::= (item postfix?)*
 *   item    ::= "literal" | [set] | [^set] | . | name | "(" alts ")"
 *   postfix ::= * | + | ? | {m} | {m,} | {m,n}
 * Comments run from # to the end of the line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "grammar/grammar.h"

typedef struct parser {
    struct tport_grammar *g;
    const char *s, *end, *start;
    int depth;
    bool failed;
} parser;

/* A sequence being built: element runs are kept here until complete, so a
 * group parsed in the middle of it lands in its own rule, not inside it. */
typedef struct seq {
    gram_elem *e;
    int32_t n, cap;
} seq;

static bool perr(parser *p, const char *what) {
    if (!p->failed)
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: %s at offset %ld", what, (long)(p->s - p->start));
    p->failed = true;
    return false;
}

static bool grow(void **buf, int32_t *cap, int32_t need, size_t size, int32_t limit) {
    if (need <= *cap)
        return true;
    if (need > limit)
        return false;
    int32_t c = *cap ? *cap : 16;
    while (c < need)
        c = c > limit / 2 ? limit : 2 * c;
    void *b = realloc(*buf, (size_t)c * size);
    if (!b)
        return false;
    *buf = b;
    *cap = c;
    return true;
}

static bool seq_push(parser *p, seq *q, int32_t kind, int32_t arg) {
    if (!grow((void **)&q->e, &q->cap, q->n + 1, sizeof *q->e, GRAM_MAX_ELEMS))
        return perr(p, "the grammar is too large");
    q->e[q->n++] = (gram_elem){kind, arg};
    return true;
}

/* A new character set of n ranges; returns its index or -1. */
static int32_t new_set(parser *p, const uint32_t *r, int32_t n, bool negated) {
    struct tport_grammar *g = p->g;
    if (!grow((void **)&g->sets, &g->cap_sets, g->n_sets + 1, sizeof *g->sets, GRAM_MAX_ELEMS) ||
        !grow((void **)&g->ranges, &g->cap_ranges, g->n_ranges + 2 * n, sizeof *g->ranges, 4 * GRAM_MAX_ELEMS)) {
        perr(p, "the grammar is too large");
        return -1;
    }
    if (n)
        memcpy(g->ranges + g->n_ranges, r, (size_t)n * 2 * sizeof *r);
    g->sets[g->n_sets] = (gram_set){g->n_ranges, n, negated};
    g->n_ranges += 2 * n;
    return g->n_sets++;
}

static int32_t new_rule(parser *p, const char *name, size_t len) {
    struct tport_grammar *g = p->g;
    if (!grow((void **)&g->rules, &g->cap_rules, g->n_rules + 1, sizeof *g->rules, GRAM_MAX_RULES)) {
        perr(p, "the grammar has too many rules");
        return -1;
    }
    gram_rule *r = &g->rules[g->n_rules];
    memset(r, 0, sizeof *r);
    if (!(r->name = malloc(len + 1))) {
        perr(p, "out of memory");
        return -1;
    }
    memcpy(r->name, name, len);
    r->name[len] = 0;
    return g->n_rules++;
}

static int32_t find_rule(const struct tport_grammar *g, const char *name, size_t len) {
    for (int32_t i = 0; i < g->n_rules; i++)
        if (strlen(g->rules[i].name) == len && !memcmp(g->rules[i].name, name, len))
            return i;
    return -1;
}

/* Adds an alternative (a finished sequence) to rule r. */
static bool add_alt(parser *p, int32_t r, const gram_elem *e, int32_t n) {
    struct tport_grammar *g = p->g;
    gram_rule *rule = &g->rules[r];
    int32_t cap = rule->n_alts; /* grown one at a time: rules have few alternatives */
    int32_t *a = realloc(rule->alts, (size_t)(cap + 1) * sizeof *a);
    if (!a)
        return perr(p, "out of memory");
    rule->alts = a;
    if (!grow((void **)&g->elems, &g->cap_elems, g->n_elems + n + 1, sizeof *g->elems, GRAM_MAX_ELEMS))
        return perr(p, "the grammar is too large");
    rule->alts[rule->n_alts++] = g->n_elems;
    if (n)
        memcpy(g->elems + g->n_elems, e, (size_t)n * sizeof *e);
    g->n_elems += n;
    g->elems[g->n_elems++] = (gram_elem){GE_END, 0};
    return true;
}

static int32_t anon_rule(parser *p) {
    char name[32];
    int len = snprintf(name, sizeof name, "-%d", (int)p->g->n_rules);
    int32_t r = new_rule(p, name, (size_t)len);
    if (r >= 0)
        p->g->rules[r].defined = true;
    return r;
}

static bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static void skip_space(parser *p) {
    while (p->s < p->end) {
        char c = *p->s;
        if (c == '#') {
            while (p->s < p->end && *p->s != '\n')
                p->s++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            p->s++;
        } else {
            break;
        }
    }
}

static size_t name_len(const parser *p, const char *s) {
    size_t n = 0;
    while (s + n < p->end && is_name_char(s[n]))
        n++;
    return n;
}

/* Whether the text at s is "name ::=": the start of the next rule. */
static bool at_rule_start(const parser *p, const char *s) {
    size_t n = name_len(p, s);
    if (!n)
        return false;
    s += n;
    while (s < p->end && (*s == ' ' || *s == '\t'))
        s++;
    return p->end - s >= 3 && !memcmp(s, "::=", 3);
}

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* One UTF-8 code point of the grammar text; -1 on malformed input. */
static int64_t read_utf8(parser *p) {
    const unsigned char *s = (const unsigned char *)p->s;
    size_t left = (size_t)(p->end - p->s);
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || (size_t)n > left)
        return -1;
    uint32_t v = n == 1 ? c : c & (0x7Fu >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return -1;
        v = v << 6 | (s[i] & 0x3F);
    }
    p->s += n;
    return v;
}

/* A character of a literal or set, with the escapes \n \r \t \\ \" \[ \]
 * \xHH \uHHHH \UHHHHHHHH. */
static int64_t read_char(parser *p) {
    if (p->s >= p->end)
        return perr(p, "unexpected end of the grammar"), -1;
    if (*p->s != '\\') {
        int64_t c = read_utf8(p);
        return c < 0 ? (perr(p, "malformed UTF-8"), -1) : c;
    }
    if (p->end - p->s < 2)
        return perr(p, "unexpected end of the grammar"), -1;
    char e = p->s[1];
    p->s += 2;
    int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; i++) {
            int h = p->s < p->end ? hexval(*p->s) : -1;
            if (h < 0)
                return perr(p, "bad hexadecimal escape"), -1;
            v = v << 4 | (uint32_t)h;
            p->s++;
        }
        if (v > 0x10FFFF)
            return perr(p, "escape beyond U+10FFFF"), -1;
        return v;
    }
    switch (e) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case '\\': case '"': case '[': case ']': case '-': case '^': return (unsigned char)e;
    default: return perr(p, "unknown escape"), -1;
    }
}

static bool parse_alts(parser *p, int32_t rule);

/* Elements [from, q->n) as one element: itself if single, else a rule. */
static int32_t wrap(parser *p, seq *q, int32_t from) {
    if (q->n - from == 1 && q->e[from].kind == GE_REF)
        return q->e[from].arg;
    int32_t r = anon_rule(p);
    if (r < 0 || !add_alt(p, r, q->n > from ? q->e + from : NULL, q->n - from))
        return -1;
    return r;
}

/* X* as R ::= X R | empty; X+ as R ::= X R | X; X? as R ::= X | empty. */
static int32_t star_rule(parser *p, int32_t x, bool plus) {
    int32_t r = anon_rule(p);
    gram_elem two[2] = {{GE_REF, x}, {GE_REF, r}};
    if (r < 0 || !add_alt(p, r, two, 2) || !add_alt(p, r, two, plus ? 1 : 0))
        return -1;
    return r;
}

static int32_t opt_rule(parser *p, const gram_elem *e, int32_t n) {
    int32_t r = anon_rule(p);
    if (r < 0 || !add_alt(p, r, e, n) || !add_alt(p, r, NULL, 0))
        return -1;
    return r;
}

static bool read_count(parser *p, long *out) {
    long v = 0;
    const char *s0 = p->s;
    while (p->s < p->end && *p->s >= '0' && *p->s <= '9' && v <= GRAM_MAX_REPEAT)
        v = v * 10 + (*p->s++ - '0');
    if (p->s == s0)
        return perr(p, "expected a number in {m,n}");
    if (v > GRAM_MAX_REPEAT)
        return perr(p, "a repetition count is above 1000");
    *out = v;
    return true;
}

/* Applies a postfix operator to the elements from `from` on. */
static bool postfix(parser *p, seq *q, int32_t from) {
    char op = *p->s;
    long lo, hi;
    if (op == '*' || op == '+' || op == '?') {
        p->s++;
        lo = op == '+' ? 1 : 0;
        hi = op == '?' ? 1 : -1;
    } else { /* {m}, {m,}, {m,n} */
        p->s++;
        skip_space(p);
        if (!read_count(p, &lo))
            return false;
        skip_space(p);
        hi = lo;
        if (p->s < p->end && *p->s == ',') {
            p->s++;
            skip_space(p);
            hi = -1;
            if (p->s < p->end && *p->s != '}' && !read_count(p, &hi))
                return false;
            skip_space(p);
        }
        if (p->s >= p->end || *p->s != '}')
            return perr(p, "expected '}'");
        p->s++;
        if (hi >= 0 && hi < lo)
            return perr(p, "{m,n} with n < m");
    }
    int32_t x = wrap(p, q, from);
    if (x < 0)
        return false;
    q->n = from;
    /* m copies of X, then X* or (n - m) nested optionals: R_k ::= X R_k-1 | empty */
    for (long i = 0; i < lo; i++)
        if (!seq_push(p, q, GE_REF, x))
            return false;
    if (hi < 0) {
        if (lo >= 1 && q->n > from) { /* X+ ends in a rule of its own: X R | X */
            q->n--;
            int32_t r = star_rule(p, x, true);
            return r >= 0 && seq_push(p, q, GE_REF, r);
        }
        int32_t r = star_rule(p, x, false);
        return r >= 0 && seq_push(p, q, GE_REF, r);
    }
    int32_t tail = -1;
    for (long i = lo; i < hi; i++) {
        gram_elem two[2] = {{GE_REF, x}, {GE_REF, tail}};
        tail = opt_rule(p, two, tail < 0 ? 1 : 2);
        if (tail < 0)
            return false;
    }
    return tail < 0 || seq_push(p, q, GE_REF, tail);
}

static bool parse_set(parser *p, seq *q) {
    p->s++; /* [ */
    bool negated = p->s < p->end && *p->s == '^';
    if (negated)
        p->s++;
    uint32_t *r = NULL;
    int32_t n = 0, cap = 0;
    bool ok = true;
    while (ok && p->s < p->end && *p->s != ']') {
        int64_t lo = read_char(p), hi = lo;
        if (lo < 0) {
            ok = false;
            break;
        }
        if (p->end - p->s >= 2 && p->s[0] == '-' && p->s[1] != ']') {
            p->s++;
            if ((hi = read_char(p)) < 0 || hi < lo) {
                ok = hi >= 0 ? perr(p, "a range whose end is before its start") : false;
                break;
            }
        }
        if (!grow((void **)&r, &cap, 2 * (n + 1), sizeof *r, 2 * GRAM_MAX_ELEMS)) {
            ok = perr(p, "a character set is too large");
            break;
        }
        r[2 * n] = (uint32_t)lo;
        r[2 * n + 1] = (uint32_t)hi;
        n++;
    }
    if (ok && p->s >= p->end)
        ok = perr(p, "unterminated character set");
    int32_t set = -1;
    if (ok) {
        p->s++; /* ] */
        set = new_set(p, r, n, negated);
    }
    free(r);
    return set >= 0 && seq_push(p, q, GE_CHARS, set);
}

static bool parse_literal(parser *p, seq *q) {
    p->s++; /* " */
    while (p->s < p->end && *p->s != '"') {
        int64_t c = read_char(p);
        if (c < 0)
            return false;
        uint32_t r[2] = {(uint32_t)c, (uint32_t)c};
        int32_t set = new_set(p, r, 1, false);
        if (set < 0 || !seq_push(p, q, GE_CHARS, set))
            return false;
    }
    if (p->s >= p->end)
        return perr(p, "unterminated string");
    p->s++;
    return true;
}

static bool parse_seq(parser *p, int32_t rule) {
    seq q = {0};
    bool ok = true;
    for (;;) {
        skip_space(p);
        if (p->s >= p->end || *p->s == '|' || *p->s == ')' || at_rule_start(p, p->s))
            break;
        int32_t from = q.n;
        char c = *p->s;
        if (c == '"') {
            ok = parse_literal(p, &q);
        } else if (c == '[') {
            ok = parse_set(p, &q);
        } else if (c == '.') {
            p->s++;
            uint32_t all[2] = {0, 0x10FFFF};
            int32_t set = new_set(p, all, 1, false);
            ok = set >= 0 && seq_push(p, &q, GE_CHARS, set);
        } else if (c == '(') {
            p->s++;
            if (++p->depth > GRAM_MAX_NESTING) {
                ok = perr(p, "parentheses nested too deep");
                break;
            }
            int32_t r = anon_rule(p);
            ok = r >= 0 && parse_alts(p, r);
            p->depth--;
            skip_space(p);
            if (ok && (p->s >= p->end || *p->s != ')'))
                ok = perr(p, "expected ')'");
            if (ok) {
                p->s++;
                ok = seq_push(p, &q, GE_REF, r);
            }
        } else if (is_name_char(c)) {
            size_t n = name_len(p, p->s);
            int32_t r = find_rule(p->g, p->s, n);
            if (r < 0)
                r = new_rule(p, p->s, n);
            p->s += n;
            ok = r >= 0 && seq_push(p, &q, GE_REF, r);
        } else {
            ok = perr(p, "unexpected character");
        }
        if (!ok)
            break;
        /* a postfix applies to the item just read (a whole literal included) */
        while (ok && p->s < p->end && (*p->s == '*' || *p->s == '+' || *p->s == '?' || *p->s == '{'))
            ok = postfix(p, &q, from);
        if (!ok)
            break;
    }
    ok = ok && add_alt(p, rule, q.e, q.n);
    free(q.e);
    return ok;
}

static bool parse_alts(parser *p, int32_t rule) {
    if (!parse_seq(p, rule))
        return false;
    for (;;) {
        skip_space(p);
        if (p->s >= p->end || *p->s != '|')
            return true;
        p->s++;
        if (!parse_seq(p, rule))
            return false;
    }
}

/* Nullable rules (those that can match nothing), to a fixed point. */
static void find_nullable(struct tport_grammar *g) {
    for (bool changed = true; changed;) {
        changed = false;
        for (int32_t r = 0; r < g->n_rules; r++) {
            if (g->rules[r].nullable)
                continue;
            for (int32_t a = 0; a < g->rules[r].n_alts && !g->rules[r].nullable; a++) {
                const gram_elem *e = g->elems + g->rules[r].alts[a];
                while (e->kind == GE_REF && g->rules[e->arg].nullable)
                    e++;
                if (e->kind == GE_END)
                    g->rules[r].nullable = changed = true;
            }
        }
    }
}

/* Left recursion (a rule reachable from its own start through nullable
 * prefixes) would make the matcher expand forever: refuse it.  Iterative
 * depth-first search; color 1 = on the path, 2 = done. */
static bool check_left_recursion(struct tport_grammar *g) {
    int32_t n = g->n_rules;
    uint8_t *color = calloc((size_t)n, 1);
    int32_t *stack = malloc((size_t)n * 2 * sizeof *stack); /* (rule, next edge) pairs */
    bool ok = color && stack;
    if (!ok)
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "grammar: out of memory");
    for (int32_t root = 0; ok && root < n; root++) {
        if (color[root])
            continue;
        int32_t sp = 0;
        stack[sp++] = root;
        stack[sp++] = 0;
        color[root] = 1;
        while (ok && sp) {
            int32_t r = stack[sp - 2], edge = stack[sp - 1]++;
            /* edge k = the k-th reference in first position, over all alternatives */
            int32_t target = -1, k = 0;
            for (int32_t a = 0; a < g->rules[r].n_alts && target < 0; a++)
                for (const gram_elem *e = g->elems + g->rules[r].alts[a]; e->kind == GE_REF; e++) {
                    if (k++ == edge) {
                        target = e->arg;
                        break;
                    }
                    if (!g->rules[e->arg].nullable)
                        break;
                }
            if (target < 0) {
                color[r] = 2;
                sp -= 2;
            } else if (color[target] == 1) {
                tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: rule '%s' is left-recursive",
                            g->rules[target].name[0] == '-' ? g->rules[r].name : g->rules[target].name);
                ok = false;
            } else if (!color[target]) {
                color[target] = 1;
                stack[sp++] = target;
                stack[sp++] = 0;
            }
        }
    }
    free(color);
    free(stack);
    return ok;
}

void tport_grammar_free(tport_grammar *g) {
    if (!g)
        return;
    for (int32_t i = 0; i < g->n_rules; i++) {
        free(g->rules[i].name);
        free(g->rules[i].alts);
    }
    free(g->rules);
    free(g->elems);
    free(g->ranges);
    free(g->sets);
    free(g);
}

tport_grammar *tport_grammar_parse(const char *text, size_t len, const char *root) {
    if (!text) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: no text");
        return NULL;
    }
    tport_grammar *g = calloc(1, sizeof *g);
    if (!g) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "grammar: out of memory");
        return NULL;
    }
    parser p = {.g = g, .s = text, .end = text + len, .start = text};
    bool ok = true;
    for (;;) {
        skip_space(&p);
        if (p.s >= p.end)
            break;
        size_t n = name_len(&p, p.s);
        if (!n || !at_rule_start(&p, p.s)) {
            ok = perr(&p, "expected a rule: name ::= ...");
            break;
        }
        int32_t r = find_rule(g, p.s, n);
        if (r >= 0 && g->rules[r].defined) {
            ok = perr(&p, "a rule is defined twice");
            break;
        }
        if (r < 0 && (r = new_rule(&p, p.s, n)) < 0) {
            ok = false;
            break;
        }
        g->rules[r].defined = true;
        p.s += n;
        skip_space(&p);
        p.s += 3; /* ::= (at_rule_start saw it) */
        if (!parse_alts(&p, r)) {
            ok = false;
            break;
        }
        skip_space(&p);
        if (p.s < p.end && !at_rule_start(&p, p.s)) {
            ok = perr(&p, "unexpected character");
            break;
        }
    }
    for (int32_t i = 0; ok && i < g->n_rules; i++)
        if (!g->rules[i].defined) {
            tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: rule '%s' is used but not defined", g->rules[i].name);
            ok = false;
        }
    const char *rn = root ? root : "root";
    if (ok && (g->root = find_rule(g, rn, strlen(rn))) < 0) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "grammar: there is no rule '%s'", rn);
        ok = false;
    }
    if (ok) {
        find_nullable(g);
        ok = check_left_recursion(g);
    }
    if (!ok) {
        tport_grammar_free(g);
        return NULL;
    }
    return g;
}

bool gram_set_has(const struct tport_grammar *g, int32_t set, uint32_t c) {
    const gram_set *s = &g->sets[set];
    /* an empty set ("[]") has no ranges, and a grammar of only such sets
     * no range array at all */
    const uint32_t *r = s->n ? g->ranges + s->first : NULL;
    for (int32_t i = 0; i < s->n; i++)
        if (c >= r[2 * i] && c <= r[2 * i + 1])
            return !s->negated;
    return s->negated;
}

bool gram_set_meets(const struct tport_grammar *g, int32_t set, uint32_t lo, uint32_t hi) {
    const gram_set *s = &g->sets[set];
    /* an empty set ("[]") has no ranges, and a grammar of only such sets
     * no range array at all */
    const uint32_t *r = s->n ? g->ranges + s->first : NULL;
    if (!s->negated) {
        for (int32_t i = 0; i < s->n; i++)
            if (r[2 * i] <= hi && r[2 * i + 1] >= lo)
                return true;
        return false;
    }
    /* negated: some point of [lo, hi] outside every range; walk lo up past
     * the ranges that cover it */
    for (bool moved = true; moved && lo <= hi;) {
        moved = false;
        for (int32_t i = 0; i < s->n; i++)
            if (lo >= r[2 * i] && lo <= r[2 * i + 1]) {
                if (r[2 * i + 1] >= hi)
                    return false;
                lo = r[2 * i + 1] + 1;
                moved = true;
            }
    }
    return lo <= hi;
}
