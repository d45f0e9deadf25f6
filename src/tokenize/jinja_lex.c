/* The Jinja lexer, set up as Hugging Face sets up jinja2 for chat
 * templates: trim_blocks (the newline after a block or comment tag is
 * dropped), lstrip_blocks (spaces before a block or comment tag on its own
 * line are dropped), `-` and `+` whitespace control on every tag, newlines
 * normalised to \n and one trailing newline removed (keep_trailing_newline
 * is off). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tokenize/jinja.h"

typedef struct lexer {
    jctx *c;
    const char *s;
    size_t n, i;
    int line;
    jtoks *out;
} lexer;

static void emit(lexer *L, jtok t) {
    jtoks *o = L->out;
    if (o->n == o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 256;
        jtok *g = jalloc(L->c, cap * sizeof *g);
        if (o->n)
            memcpy(g, o->t, o->n * sizeof *g);
        o->t = g;
        o->cap = cap;
    }
    o->t[o->n++] = t;
}

static int count_lines(const char *s, size_t n) {
    int k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == '\n';
    return k;
}

static bool is_space(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'; }

/* Python's str.splitlines() boundaries become \n, and the last line's
 * ending is dropped: what jinja2 does to the source before lexing. */
static char *normalise(jctx *c, const char *src, size_t n, size_t *out_n) {
    char *d = jalloc(c, n + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        if (ch == '\r') {
            if (i + 1 < n && src[i + 1] == '\n')
                i++;
            d[o++] = '\n';
        } else if (ch == '\v' || ch == '\f' || ch == 0x1c || ch == 0x1d || ch == 0x1e)
            d[o++] = '\n';
        else if (ch == 0xC2 && i + 1 < n && (unsigned char)src[i + 1] == 0x85) {
            d[o++] = '\n';
            i++;
        } else if (ch == 0xE2 && i + 2 < n && (unsigned char)src[i + 1] == 0x80 &&
                   ((unsigned char)src[i + 2] == 0xA8 || (unsigned char)src[i + 2] == 0xA9)) {
            d[o++] = '\n';
            i += 2;
        } else
            d[o++] = (char)ch;
    }
    if (o && d[o - 1] == '\n')
        o--;
    d[o] = 0;
    *out_n = o;
    return d;
}

static void text(lexer *L, const char *s, size_t n, int line) {
    if (n)
        emit(L, (jtok){.kind = TK_TEXT, .s = s, .n = n, .line = line});
}

/* A string literal with Python's escapes. */
static void lex_string(lexer *L) {
    char q = L->s[L->i];
    int line = L->line;
    size_t j = L->i + 1;
    jbuf b = {0};
    for (;; j++) {
        if (j >= L->n)
            jfail(L->c, line, "unterminated string");
        char ch = L->s[j];
        if (ch == q)
            break;
        if (ch == '\n')
            L->line++;
        if (ch != '\\') {
            jbuf_put(L->c, &b, &ch, 1);
            continue;
        }
        if (++j >= L->n)
            jfail(L->c, line, "unterminated string");
        char e = L->s[j], r;
        switch (e) {
        case 'n': r = '\n'; break;
        case 't': r = '\t'; break;
        case 'r': r = '\r'; break;
        case '0': r = 0; break;
        case 'a': r = '\a'; break;
        case 'b': r = '\b'; break;
        case 'f': r = '\f'; break;
        case 'v': r = '\v'; break;
        case '\\': case '\'': case '"': r = e; break;
        case '\n': L->line++; continue; /* line continuation */
        case 'x': case 'u': case 'U': {
            int k = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            unsigned cp = 0;
            for (int d = 0; d < k; d++) {
                char h = j + 1 < L->n ? L->s[++j] : 0;
                int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (v < 0)
                    jfail(L->c, line, "bad \\%c escape in a string", e);
                cp = cp << 4 | (unsigned)v;
            }
            char u[4];
            size_t m;
            if (cp < 0x80) { u[0] = (char)cp; m = 1; }
            else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); m = 2; }
            else if (cp < 0x10000) { u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | (cp >> 6 & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F)); m = 3; }
            else if (cp < 0x110000) { u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | (cp >> 12 & 0x3F)); u[2] = (char)(0x80 | (cp >> 6 & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); m = 4; }
            else jfail(L->c, line, "bad escape in a string");
            jbuf_put(L->c, &b, u, m);
            continue;
        }
        default: /* Python keeps unknown escapes as written */
            jbuf_put(L->c, &b, "\\", 1);
            r = e;
        }
        jbuf_put(L->c, &b, &r, 1);
    }
    L->i = j + 1;
    emit(L, (jtok){.kind = TK_STRING, .s = b.p ? b.p : "", .n = b.n, .line = line});
}

/* Tokens of one {{ }} or {% %} tag up to its end; returns whether the end
 * carried `-` (strip what follows). */
static int lex_tag(lexer *L, bool block) {
    static const char *const ops2[] = {"**", "//", "==", "!=", "<=", ">=", NULL};
    const char end0 = block ? '%' : '}';
    int depth = 0;
    for (;;) {
        while (L->i < L->n && is_space(L->s[L->i])) {
            L->line += L->s[L->i] == '\n';
            L->i++;
        }
        if (L->i >= L->n)
            jfail(L->c, L->line, "unexpected end of template inside a tag");
        const char *p = L->s + L->i;
        size_t left = L->n - L->i;
        if (depth == 0) {
            int sign = (*p == '-' || *p == '+') ? *p : 0;
            const char *q = sign ? p + 1 : p;
            size_t ql = sign ? left - 1 : left;
            if (ql >= 2 && q[0] == end0 && q[1] == '}') {
                emit(L, (jtok){.kind = block ? TK_BLOCK_END : TK_VAR_END, .line = L->line});
                L->i += (size_t)(q - p) + 2;
                return sign;
            }
        }
        char ch = *p;
        if (ch == '\'' || ch == '"') {
            lex_string(L);
        } else if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
            size_t k = 1;
            while (k < left && ((p[k] >= 'a' && p[k] <= 'z') || (p[k] >= 'A' && p[k] <= 'Z') || p[k] == '_' || (p[k] >= '0' && p[k] <= '9')))
                k++;
            emit(L, (jtok){.kind = TK_NAME, .s = p, .n = k, .line = L->line});
            L->i += k;
        } else if (ch >= '0' && ch <= '9') {
            char num[64];
            size_t k = 0, m = 0;
            bool flt = false;
            while (k < left && ((p[k] >= '0' && p[k] <= '9') || p[k] == '_')) {
                if (p[k] != '_' && m < 63)
                    num[m++] = p[k];
                k++;
            }
            if (k + 1 < left && p[k] == '.' && p[k + 1] >= '0' && p[k + 1] <= '9') {
                flt = true;
                if (m < 63)
                    num[m++] = '.';
                k++;
                while (k < left && ((p[k] >= '0' && p[k] <= '9') || p[k] == '_')) {
                    if (p[k] != '_' && m < 63)
                        num[m++] = p[k];
                    k++;
                }
            }
            if (k < left && (p[k] == 'e' || p[k] == 'E')) {
                size_t e = k + 1;
                if (e < left && (p[e] == '+' || p[e] == '-'))
                    e++;
                if (e < left && p[e] >= '0' && p[e] <= '9') {
                    flt = true;
                    while (k < e && m < 63)
                        num[m++] = p[k++];
                    while (k < left && p[k] >= '0' && p[k] <= '9') {
                        if (m < 63)
                            num[m++] = p[k];
                        k++;
                    }
                }
            }
            /* m stops at 63 (num's room): a longer literal would be read
             * as another number */
            if (m >= 63)
                jfail(L->c, L->line, "a number literal of more than 62 characters");
            num[m] = 0;
            jtok t = {.kind = flt ? TK_FLOAT : TK_INT, .line = L->line};
            if (flt)
                t.f = strtod(num, NULL);
            else {
                errno = 0;
                long long v = strtoll(num, NULL, 10);
                if (errno)
                    jfail(L->c, L->line, "integer literal too large");
                t.i = v;
            }
            emit(L, t);
            L->i += k;
        } else {
            size_t k = 1;
            for (int o = 0; ops2[o]; o++)
                if (left >= 2 && !memcmp(p, ops2[o], 2))
                    k = 2;
            if (k == 1 && !strchr("+-*/%~<>=.,:|()[]{}!", ch))
                jfail(L->c, L->line, "unexpected character '%c'", ch);
            if (ch == '(' || ch == '[' || ch == '{')
                depth++;
            else if ((ch == ')' || ch == ']' || ch == '}') && depth > 0)
                depth--;
            emit(L, (jtok){.kind = TK_OP, .s = p, .n = k, .line = L->line});
            L->i += k;
        }
    }
}

void jinja_lex(jctx *c, const char *src, size_t n, jtoks *out) {
    lexer L = {.c = c, .out = out, .line = 1};
    L.s = normalise(c, src, n, &L.n);
    bool line_starting = true;
    size_t text_start = 0;
    int text_line = 1;
    while (L.i < L.n) {
        const char *p = L.s + L.i;
        if (!(p[0] == '{' && L.i + 1 < L.n && (p[1] == '{' || p[1] == '%' || p[1] == '#'))) {
            L.line += *p == '\n';
            L.i++;
            continue;
        }
        char kind = p[1];
        char sign = L.i + 2 < L.n && (p[2] == '-' || p[2] == '+') ? p[2] : 0;
        /* whitespace before the tag */
        size_t tend = L.i;
        if (sign == '-') {
            while (tend > text_start && is_space(L.s[tend - 1]))
                tend--;
        } else if (sign != '+' && kind != '{') {
            size_t l = tend;
            while (l > text_start && L.s[l - 1] != '\n')
                l--;
            bool has_nl = l > text_start;
            if (has_nl || line_starting) {
                bool blank = true;
                for (size_t k = l; k < tend; k++)
                    if (!is_space(L.s[k]))
                        blank = false;
                if (blank)
                    tend = l;
            }
        }
        text(&L, L.s + text_start, tend - text_start, text_line);
        L.i += 2 + (sign ? 1 : 0);
        int end_sign;
        if (kind == '#') {
            const char *e = NULL;
            for (size_t k = L.i; k + 1 < L.n; k++)
                if (L.s[k] == '#' && L.s[k + 1] == '}') {
                    e = L.s + k;
                    break;
                }
            if (!e)
                jfail(c, L.line, "unterminated comment");
            end_sign = e > L.s + L.i && (e[-1] == '-' || e[-1] == '+') ? e[-1] : 0;
            L.line += count_lines(L.s + L.i, (size_t)(e - (L.s + L.i)));
            L.i = (size_t)(e - L.s) + 2;
        } else {
            bool block = kind == '%';
            emit(&L, (jtok){.kind = block ? TK_BLOCK_BEGIN : TK_VAR_BEGIN, .line = L.line});
            end_sign = lex_tag(&L, block);
            /* {% raw %}: the text up to {% endraw %} is data.  As jinja2's
             * raw rules: `{% raw +%}` is no raw tag (the parser refuses it),
             * `-%}` strips what follows but a plain `%}` keeps its newline;
             * the endraw tag strips, lstrips and trims like any block tag. */
            jtoks *o = L.out;
            if (block && end_sign != '+' && o->n >= 3 && o->t[o->n - 2].kind == TK_NAME && o->t[o->n - 2].n == 3 &&
                !memcmp(o->t[o->n - 2].s, "raw", 3) && o->t[o->n - 3].kind == TK_BLOCK_BEGIN) {
                o->n -= 3;
                size_t bs = L.i;
                if (end_sign == '-')
                    while (bs < L.n && is_space(L.s[bs]))
                        bs++;
                bool body_line_start = bs > L.i && L.s[bs - 1] == '\n';
                size_t k = bs, body_end = 0, after = 0;
                for (; k + 1 < L.n; k++) {
                    if (L.s[k] != '{' || L.s[k + 1] != '%')
                        continue;
                    size_t m = k + 2;
                    char bsign = m < L.n && (L.s[m] == '-' || L.s[m] == '+') ? L.s[m] : 0;
                    if (bsign)
                        m++;
                    while (m < L.n && is_space(L.s[m]))
                        m++;
                    if (L.n - m < 6 || memcmp(L.s + m, "endraw", 6))
                        continue;
                    m += 6;
                    while (m < L.n && is_space(L.s[m]))
                        m++;
                    int es = m < L.n && (L.s[m] == '-' || L.s[m] == '+') ? L.s[m] : 0;
                    if (es)
                        m++;
                    if (L.n - m < 2 || L.s[m] != '%' || L.s[m + 1] != '}')
                        continue;
                    body_end = k;
                    if (bsign == '-') {
                        while (body_end > bs && is_space(L.s[body_end - 1]))
                            body_end--;
                    } else if (bsign != '+') {
                        size_t l = body_end;
                        while (l > bs && L.s[l - 1] != '\n')
                            l--;
                        bool blank = true;
                        for (size_t q = l; q < body_end; q++)
                            blank &= is_space(L.s[q]);
                        if (blank && (l > bs || body_line_start))
                            body_end = l;
                    }
                    after = m + 2;
                    end_sign = es;
                    break;
                }
                if (!after)
                    jfail(c, L.line, "missing endraw");
                text(&L, L.s + bs, body_end - bs, L.line);
                L.line += count_lines(L.s + L.i, after - L.i);
                L.i = after;
            }
        }
        /* whitespace after the tag */
        size_t after_start = L.i;
        if (end_sign == '-') {
            while (L.i < L.n && is_space(L.s[L.i])) {
                L.line += L.s[L.i] == '\n';
                L.i++;
            }
        } else if (end_sign != '+' && kind != '{' && L.i < L.n && L.s[L.i] == '\n') {
            L.i++;
            L.line++;
        }
        line_starting = L.i > after_start ? L.s[L.i - 1] == '\n' : false;
        text_start = L.i;
        text_line = L.line;
    }
    text(&L, L.s + text_start, L.n - text_start, text_line);
    emit(&L, (jtok){.kind = TK_EOF, .line = L.line});
}
