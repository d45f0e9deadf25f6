/* JSON Schema to GBNF (tport_grammar_parse's notation) for structured
 * output.  The subset is what OpenAI's strict mode and the common client
 * libraries (pydantic, zod) produce: type (one or a list), object with
 * properties / required / additionalProperties, array with items /
 * minItems / maxItems, string with minLength / maxLength, number,
 * integer, boolean, null, enum, const, anyOf, and $ref into $defs or
 * definitions (recursion allowed).  Annotations (title, description,
 * default, examples, $schema, $id, strict) are ignored; any other keyword
 * is refused, named in the error, so a schema is never half-enforced.
 * Properties come in the schema's order, required ones first. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_schema.h"

#define MAX_DEPTH 64
#define MAX_RULES 4096
#define MAX_COUNT 1000

typedef struct buf {
    char *s;
    size_t n, cap;
    bool oom;
} buf;

typedef struct conv {
    buf out;
    const cJSON *root;
    int n_rules;
    /* $ref targets already given a rule: the reference string and rule number */
    char *ref_name[MAX_RULES];
    int ref_rule[MAX_RULES];
    int n_refs;
    serve_error *err;
    bool failed;
} conv;

static void put(buf *b, const char *s, size_t n) {
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 1024;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->oom = true;
            return;
        }
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = 0;
}

static void putf(buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void putf(buf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n > 0)
        put(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static int cfail(conv *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static int cfail(conv *c, const char *fmt, ...) {
    if (!c->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err->message, sizeof c->err->message, fmt, ap);
        va_end(ap);
        c->err->param = "response_format";
        c->failed = true;
    }
    return -1;
}

/* A GBNF string literal holding the bytes of s. */
static void put_literal(buf *b, const char *s) {
    put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            put(b, e, 2);
        } else if (ch < 0x20) {
            putf(b, "\\x%02x", ch);
        } else {
            put(b, s, 1);
        }
    }
    put(b, "\"", 1);
}

/* The JSON text of a value as a literal, followed by optional space. */
static bool put_json_literal(conv *c, const cJSON *v) {
    char *t = cJSON_PrintUnformatted(v);
    if (!t)
        return cfail(c, "out of memory"), false;
    put_literal(&c->out, t);
    put(&c->out, " space", 6);
    free(t);
    return true;
}

static int new_rule(conv *c) {
    if (c->n_rules >= MAX_RULES)
        return cfail(c, "the schema is too large (more than %d rules)", MAX_RULES);
    return c->n_rules++;
}

static int gen(conv *c, const cJSON *s, int depth);

static const char *const annotations[] = {"title", "description", "default", "examples", "$schema", "$id",
                                          "strict", "$comment", "deprecated", "readOnly", "writeOnly", "$defs",
                                          "definitions"};

/* Every key of s must be one this converter knows (or an annotation). */
static bool known_keys(conv *c, const cJSON *s, const char *const *ok, size_t n_ok) {
    const cJSON *k;
    cJSON_ArrayForEach(k, s) {
        bool found = false;
        for (size_t i = 0; i < n_ok && !found; i++)
            found = !strcmp(k->string, ok[i]);
        for (size_t i = 0; i < sizeof annotations / sizeof *annotations && !found; i++)
            found = !strcmp(k->string, annotations[i]);
        if (!found)
            return cfail(c, "JSON schema keyword '%s' is not supported (tport serve enforces type, properties, "
                         "required, additionalProperties, items, minItems, maxItems, minLength, maxLength, enum, "
                         "const, anyOf, $ref)", k->string), false;
    }
    return true;
}

static bool get_count(conv *c, const cJSON *s, const char *key, long *out) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, key);
    if (!v)
        return true;
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > MAX_COUNT ||
        v->valuedouble != (double)(long)v->valuedouble)
        return cfail(c, "'%s' must be an integer in [0, %d]", key, MAX_COUNT), false;
    *out = (long)v->valuedouble;
    return true;
}

/* X{min,max} of rule x, comma-separated, as the body of an array. */
static void put_list(conv *c, int x, long min, long max) {
    buf *b = &c->out;
    if (max == 0) {
        return;
    }
    putf(b, "(r%d", x);
    if (max < 0)
        putf(b, " (\",\" space r%d){%ld,}", x, min > 1 ? min - 1 : 0);
    else
        putf(b, " (\",\" space r%d){%ld,%ld}", x, min > 1 ? min - 1 : 0, max - 1);
    put(b, ")", 1);
    if (min == 0)
        put(b, "?", 1);
}

static int gen_object(conv *c, const cJSON *s, int depth) {
    static const char *const ok[] = {"type", "properties", "required", "additionalProperties"};
    if (!known_keys(c, s, ok, sizeof ok / sizeof *ok))
        return -1;
    const cJSON *props = cJSON_GetObjectItemCaseSensitive(s, "properties");
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(s, "required");
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(s, "additionalProperties");
    if (props && !cJSON_IsObject(props))
        return cfail(c, "'properties' must be an object");
    if (req && !cJSON_IsArray(req))
        return cfail(c, "'required' must be an array");
    if (add && !cJSON_IsBool(add) && !cJSON_IsObject(add))
        return cfail(c, "'additionalProperties' must be a boolean or a schema");
    if (props && props->child && add && !cJSON_IsFalse(add))
        return cfail(c, "'additionalProperties' beside 'properties' is not supported (only false)");
    if (!props || !props->child) {
        /* a map: any keys, values of the additionalProperties schema (or any) */
        int v = add && cJSON_IsObject(add) ? gen(c, add, depth + 1) : -2;
        if (v == -1)
            return -1;
        int r = new_rule(c);
        if (r < 0)
            return -1;
        if (v == -2 && add && cJSON_IsFalse(add)) {
            putf(&c->out, "r%d ::= \"{\" space \"}\" space\n", r);
            return r;
        }
        int kv = new_rule(c);
        if (kv < 0)
            return -1;
        if (v == -2)
            putf(&c->out, "r%d ::= string \":\" space value\n", kv);
        else
            putf(&c->out, "r%d ::= string \":\" space r%d\n", kv, v);
        putf(&c->out, "r%d ::= \"{\" space ", r);
        put_list(c, kv, 0, -1);
        put(&c->out, " \"}\" space\n", 11);
        return r;
    }
    /* each property: "key" : value, as a rule */
    int n = cJSON_GetArraySize(props);
    int *kv = calloc((size_t)n, sizeof *kv);
    bool *required = calloc((size_t)n, sizeof *required);
    if (!kv || !required) {
        free(kv);
        free(required);
        return cfail(c, "out of memory");
    }
    int i = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, props) {
        const cJSON *r;
        cJSON_ArrayForEach(r, req) {
            if (cJSON_IsString(r) && !strcmp(r->valuestring, p->string))
                required[i] = true;
        }
        int v = gen(c, p, depth + 1);
        kv[i] = v < 0 ? -1 : new_rule(c);
        if (kv[i] < 0)
            break;
        cJSON *key = cJSON_CreateString(p->string);
        char *kt = key ? cJSON_PrintUnformatted(key) : NULL;
        cJSON_Delete(key);
        if (!kt) {
            cfail(c, "out of memory");
            break;
        }
        putf(&c->out, "r%d ::= ", kv[i]);
        put_literal(&c->out, kt);
        free(kt);
        putf(&c->out, " space \":\" space r%d\n", v);
        i++;
    }
    const cJSON *r;
    cJSON_ArrayForEach(r, req) {
        if (!cJSON_IsString(r) || !cJSON_GetObjectItemCaseSensitive(props, r->valuestring))
            cfail(c, "'required' names '%.60s', which is not among the properties",
                  cJSON_IsString(r) ? r->valuestring : "(not a string)");
    }
    int rule = c->failed ? -1 : new_rule(c);
    if (rule >= 0) {
        buf *b = &c->out;
        putf(b, "r%d ::= \"{\" space", rule);
        int n_req = 0;
        for (i = 0; i < n; i++)
            if (required[i])
                putf(b, "%s r%d", n_req++ ? " \",\" space" : "", kv[i]);
        if (n_req) {
            for (i = 0; i < n; i++)
                if (!required[i])
                    putf(b, " (\",\" space r%d)?", kv[i]);
        } else {
            /* no required ones: the first present property has no comma */
            bool any = false;
            put(b, " (", 2);
            for (i = 0; i < n; i++) {
                if (required[i])
                    continue;
                putf(b, "%s r%d", any ? " |" : "", kv[i]);
                for (int k = i + 1; k < n; k++)
                    putf(b, " (\",\" space r%d)?", kv[k]);
                any = true;
            }
            put(b, " )?", 3);
        }
        put(b, " \"}\" space\n", 11);
    }
    free(kv);
    free(required);
    return rule;
}

static int gen_array(conv *c, const cJSON *s, int depth) {
    static const char *const ok[] = {"type", "items", "minItems", "maxItems"};
    if (!known_keys(c, s, ok, sizeof ok / sizeof *ok))
        return -1;
    long min = 0, max = -1;
    if (!get_count(c, s, "minItems", &min) || !get_count(c, s, "maxItems", &max))
        return -1;
    if (max >= 0 && max < min)
        return cfail(c, "'maxItems' is below 'minItems'");
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(s, "items");
    int x;
    if (items) {
        if (!cJSON_IsObject(items))
            return cfail(c, "'items' must be a schema (an object)");
        x = gen(c, items, depth + 1);
    } else {
        x = new_rule(c);
        if (x >= 0)
            putf(&c->out, "r%d ::= value\n", x);
    }
    int r = x < 0 ? -1 : new_rule(c);
    if (r < 0)
        return -1;
    putf(&c->out, "r%d ::= \"[\" space ", r);
    put_list(c, x, min, max);
    put(&c->out, " \"]\" space\n", 11);
    return r;
}

static int gen_string(conv *c, const cJSON *s) {
    static const char *const ok[] = {"type", "minLength", "maxLength"};
    if (!known_keys(c, s, ok, sizeof ok / sizeof *ok))
        return -1;
    long min = 0, max = -1;
    if (!get_count(c, s, "minLength", &min) || !get_count(c, s, "maxLength", &max))
        return -1;
    if (max >= 0 && max < min)
        return cfail(c, "'maxLength' is below 'minLength'");
    int r = new_rule(c);
    if (r < 0)
        return -1;
    if (max < 0)
        putf(&c->out, "r%d ::= \"\\\"\" char{%ld,} \"\\\"\" space\n", r, min);
    else
        putf(&c->out, "r%d ::= \"\\\"\" char{%ld,%ld} \"\\\"\" space\n", r, min, max);
    return r;
}

/* A rule naming one of the shared rules below. */
static int alias(conv *c, const char *shared) {
    int r = new_rule(c);
    if (r >= 0)
        putf(&c->out, "r%d ::= %s\n", r, shared);
    return r;
}

static int gen_type(conv *c, const cJSON *s, const char *type, int depth) {
    if (!strcmp(type, "object"))
        return gen_object(c, s, depth);
    if (!strcmp(type, "array"))
        return gen_array(c, s, depth);
    if (!strcmp(type, "string"))
        return gen_string(c, s);
    static const char *const plain[] = {"type"};
    if (!known_keys(c, s, plain, 1))
        return -1;
    if (!strcmp(type, "number"))
        return alias(c, "number");
    if (!strcmp(type, "integer"))
        return alias(c, "integer");
    if (!strcmp(type, "boolean"))
        return alias(c, "boolean");
    if (!strcmp(type, "null"))
        return alias(c, "null");
    return cfail(c, "JSON schema type '%.40s' is not supported", type);
}

/* #/$defs/NAME or #/definitions/NAME, one rule per target (so a recursive
 * schema becomes a recursive grammar). */
static int gen_ref(conv *c, const cJSON *s, int depth) {
    static const char *const ok[] = {"$ref"};
    if (!known_keys(c, s, ok, 1))
        return -1;
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(s, "$ref");
    if (!cJSON_IsString(ref))
        return cfail(c, "'$ref' must be a string");
    for (int i = 0; i < c->n_refs; i++)
        if (!strcmp(c->ref_name[i], ref->valuestring))
            return c->ref_rule[i];
    const char *name = NULL, *v = ref->valuestring;
    const cJSON *defs = NULL;
    if (!strncmp(v, "#/$defs/", 8))
        defs = cJSON_GetObjectItemCaseSensitive(c->root, "$defs"), name = v + 8;
    else if (!strncmp(v, "#/definitions/", 14))
        defs = cJSON_GetObjectItemCaseSensitive(c->root, "definitions"), name = v + 14;
    const cJSON *target = defs && name ? cJSON_GetObjectItemCaseSensitive(defs, name) : NULL;
    if (!cJSON_IsObject(target))
        return cfail(c, "'$ref' '%.80s' is not supported or not found (only #/$defs/NAME and #/definitions/NAME)", v);
    if (c->n_refs >= MAX_RULES)
        return cfail(c, "the schema has too many references");
    int r = new_rule(c);
    if (r < 0)
        return -1;
    if (!(c->ref_name[c->n_refs] = strdup(v)))
        return cfail(c, "out of memory");
    c->ref_rule[c->n_refs++] = r; /* registered before its body: recursion ends here */
    int body = gen(c, target, depth + 1);
    if (body < 0)
        return -1;
    putf(&c->out, "r%d ::= r%d\n", r, body);
    return r;
}

static int gen(conv *c, const cJSON *s, int depth) {
    if (c->failed)
        return -1;
    if (depth > MAX_DEPTH)
        return cfail(c, "the schema is nested deeper than %d", MAX_DEPTH);
    if (cJSON_IsTrue(s) || (cJSON_IsObject(s) && !s->child))
        return alias(c, "value"); /* true and {} accept anything */
    if (!cJSON_IsObject(s))
        return cfail(c, "a JSON schema must be an object or true");
    if (cJSON_GetObjectItemCaseSensitive(s, "$ref"))
        return gen_ref(c, s, depth);
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(s, "enum");
    const cJSON *cn = cJSON_GetObjectItemCaseSensitive(s, "const");
    const cJSON *any = cJSON_GetObjectItemCaseSensitive(s, "anyOf");
    if (en || cn) {
        /* the value decides; "type" beside it is redundant for JSON output */
        static const char *const ok[] = {"enum", "const", "type"};
        if (!known_keys(c, s, ok, 3))
            return -1;
        if (en && (!cJSON_IsArray(en) || !en->child))
            return cfail(c, "'enum' must be a non-empty array");
        int r = new_rule(c);
        if (r < 0)
            return -1;
        putf(&c->out, "r%d ::= ", r);
        if (cn) {
            if (!put_json_literal(c, cn))
                return -1;
        } else {
            const cJSON *e;
            bool first = true;
            cJSON_ArrayForEach(e, en) {
                if (!first)
                    put(&c->out, " | ", 3);
                first = false;
                if (!put_json_literal(c, e))
                    return -1;
            }
        }
        put(&c->out, "\n", 1);
        return r;
    }
    if (any) {
        static const char *const ok[] = {"anyOf"};
        if (!known_keys(c, s, ok, 1))
            return -1;
        if (!cJSON_IsArray(any) || !any->child)
            return cfail(c, "'anyOf' must be a non-empty array");
        int n = cJSON_GetArraySize(any), *alt = calloc((size_t)n, sizeof *alt), i = 0;
        if (!alt)
            return cfail(c, "out of memory");
        const cJSON *e;
        cJSON_ArrayForEach(e, any) {
            if ((alt[i++] = gen(c, e, depth + 1)) < 0)
                break;
        }
        int r = c->failed ? -1 : new_rule(c);
        if (r >= 0) {
            putf(&c->out, "r%d ::=", r);
            for (i = 0; i < n; i++)
                putf(&c->out, "%s r%d", i ? " |" : "", alt[i]);
            put(&c->out, "\n", 1);
        }
        free(alt);
        return r;
    }
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(s, "type");
    if (cJSON_IsString(type))
        return gen_type(c, s, type->valuestring, depth);
    if (cJSON_IsArray(type) && type->child) { /* ["string", "null"]: one of them */
        int n = cJSON_GetArraySize(type), *alt = calloc((size_t)n, sizeof *alt), i = 0;
        if (!alt)
            return cfail(c, "out of memory");
        const cJSON *e;
        cJSON_ArrayForEach(e, type) {
            if (!cJSON_IsString(e)) {
                cfail(c, "'type' must be a string or an array of strings");
                break;
            }
            if ((alt[i++] = gen_type(c, s, e->valuestring, depth)) < 0)
                break;
        }
        int r = c->failed ? -1 : new_rule(c);
        if (r >= 0) {
            putf(&c->out, "r%d ::=", r);
            for (i = 0; i < n; i++)
                putf(&c->out, "%s r%d", i ? " |" : "", alt[i]);
            put(&c->out, "\n", 1);
        }
        free(alt);
        return r;
    }
    if (type)
        return cfail(c, "'type' must be a string or an array of strings");
    /* no type: properties imply an object, items an array */
    if (cJSON_GetObjectItemCaseSensitive(s, "properties"))
        return gen_object(c, s, depth);
    if (cJSON_GetObjectItemCaseSensitive(s, "items"))
        return gen_array(c, s, depth);
    static const char *const none[] = {"type"};
    if (!known_keys(c, s, none, 1))
        return -1;
    return alias(c, "value");
}

/* The JSON rules every converted schema may use.  Whitespace between
 * tokens is bounded, so a model cannot fill the answer with blanks. */
static const char COMMON[] =
    "space ::= \" \"? | \"\\n\" [ \\t]{0,20}\n"
    "char ::= [^\"\\\\\\x00-\\x1f] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n"
    "string ::= \"\\\"\" char* \"\\\"\" space\n"
    "integer ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15}) space\n"
    "number ::= \"-\"? ([0-9] | [1-9] [0-9]{1,15}) (\".\" [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? space\n"
    "boolean ::= (\"true\" | \"false\") space\n"
    "null ::= \"null\" space\n"
    "value ::= object | array | string | number | boolean | null\n"
    "object ::= \"{\" space (string \":\" space value (\",\" space string \":\" space value)*)? \"}\" space\n"
    "array ::= \"[\" space (value (\",\" space value)*)? \"]\" space\n";

char *json_schema_to_gbnf(const cJSON *schema, serve_error *err) {
    conv *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err->message, sizeof err->message, "out of memory");
        return NULL;
    }
    c->root = schema;
    c->err = err;
    put(&c->out, COMMON, sizeof COMMON - 1);
    int top = schema ? gen(c, schema, 0) : alias(c, "object");
    if (top >= 0)
        putf(&c->out, "root ::= space r%d\n", top);
    if (!c->failed && c->out.oom)
        cfail(c, "out of memory");
    char *out = c->failed ? NULL : c->out.s;
    if (!out)
        free(c->out.s);
    for (int i = 0; i < c->n_refs; i++)
        free(c->ref_name[i]);
    free(c);
    return out;
}
