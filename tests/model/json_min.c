#include "json_min.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *s, *end;
    int failed;
} parser;

static void skip_ws(parser *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\n' || *p->s == '\r' || *p->s == '\t'))
        p->s++;
}

static int parse_value(parser *p, json *out, int depth);

static int hex4(parser *p, unsigned *v) {
    if (p->end - p->s < 4)
        return -1;
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = *p->s++;
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 99u;
        if (d > 15)
            return -1;
        *v = *v * 16 + d;
    }
    return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) { o[0] = (char)cp; return 1; }
    if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 63)); return 2; }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 63));
        o[2] = (char)(0x80 | (cp & 63)); return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63)); return 4;
}

static int parse_string(parser *p, char **out, size_t *out_len) {
    if (p->s >= p->end || *p->s != '"')
        return -1;
    p->s++;
    char *buf = malloc((size_t)(p->end - p->s) + 1);
    if (!buf)
        return -1;
    size_t n = 0;
    while (p->s < p->end && *p->s != '"') {
        char c = *p->s++;
        if (c != '\\') {
            buf[n++] = c;
            continue;
        }
        if (p->s >= p->end)
            break;
        c = *p->s++;
        switch (c) {
        case 'n': buf[n++] = '\n'; break;
        case 't': buf[n++] = '\t'; break;
        case 'r': buf[n++] = '\r'; break;
        case 'b': buf[n++] = '\b'; break;
        case 'f': buf[n++] = '\f'; break;
        case 'u': {
            unsigned cp;
            if (hex4(p, &cp) != 0) { free(buf); return -1; }
            if (cp >= 0xD800 && cp < 0xDC00 && p->end - p->s >= 6 && p->s[0] == '\\' && p->s[1] == 'u') {
                unsigned lo;
                p->s += 2;
                if (hex4(p, &lo) != 0) { free(buf); return -1; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            n += put_utf8(buf + n, cp);
            break;
        }
        default: buf[n++] = c; break;
        }
    }
    if (p->s >= p->end) { free(buf); return -1; }
    p->s++;
    buf[n] = '\0';
    *out = buf;
    *out_len = n;
    return 0;
}

static int parse_container(parser *p, json *out, int depth, int is_obj) {
    char close = is_obj ? '}' : ']';
    p->s++;
    out->kind = is_obj ? JSON_OBJECT : JSON_ARRAY;
    size_t cap = 0;
    skip_ws(p);
    if (p->s < p->end && *p->s == close) { p->s++; return 0; }
    for (;;) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 8;
            json *items = realloc(out->items, cap * sizeof *items);
            if (!items) return -1;
            out->items = items;
            if (is_obj) {
                char **keys = realloc(out->keys, cap * sizeof *keys);
                if (!keys) return -1;
                out->keys = keys;
            }
        }
        skip_ws(p);
        if (is_obj) {
            size_t kl;
            if (parse_string(p, &out->keys[out->n], &kl) != 0) return -1;
            skip_ws(p);
            if (p->s >= p->end || *p->s != ':') { free(out->keys[out->n]); return -1; }
            p->s++;
        }
        memset(&out->items[out->n], 0, sizeof out->items[0]);
        int rc = parse_value(p, &out->items[out->n], depth + 1);
        out->n++;
        if (rc != 0) return -1;
        skip_ws(p);
        if (p->s < p->end && *p->s == ',') { p->s++; continue; }
        if (p->s < p->end && *p->s == close) { p->s++; return 0; }
        return -1;
    }
}

static int parse_value(parser *p, json *out, int depth) {
    if (depth > 64) return -1;
    skip_ws(p);
    if (p->s >= p->end) return -1;
    char c = *p->s;
    if (c == '{' || c == '[') return parse_container(p, out, depth, c == '{');
    if (c == '"') { out->kind = JSON_STRING; return parse_string(p, &out->str, &out->str_len); }
    if (!strncmp(p->s, "true", 4)) { out->kind = JSON_BOOL; out->number = 1; p->s += 4; return 0; }
    if (!strncmp(p->s, "false", 5)) { out->kind = JSON_BOOL; p->s += 5; return 0; }
    if (!strncmp(p->s, "null", 4)) { out->kind = JSON_NULL; p->s += 4; return 0; }
    char *e;
    out->number = strtod(p->s, &e);
    if (e == p->s) return -1;
    out->kind = JSON_NUMBER;
    p->s = e;
    return 0;
}

static void free_value(json *j) {
    free(j->str);
    for (size_t i = 0; i < j->n; i++) {
        free_value(&j->items[i]);
        if (j->keys) free(j->keys[i]);
    }
    free(j->items);
    free(j->keys);
}

void json_free(json *j) {
    if (!j) return;
    free_value(j);
    free(j);
}

json *json_load(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = size >= 0 ? malloc((size_t)size + 1) : NULL;
    if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
        free(text);
        fclose(f);
        return NULL;
    }
    fclose(f);
    text[size] = '\0';
    parser p = {text, text + size, 0};
    json *j = calloc(1, sizeof *j);
    if (j && parse_value(&p, j, 0) != 0) {
        json_free(j);
        j = NULL;
    }
    free(text);
    return j;
}

const json *json_get(const json *obj, const char *key) {
    if (!obj || obj->kind != JSON_OBJECT) return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}
