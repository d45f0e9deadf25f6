/* A bounded reader of ONNX's protobuf wire format: just the messages and
 * fields a decoder's weights need (onnx.proto: ModelProto, GraphProto,
 * NodeProto, AttributeProto (integers only), TensorProto,
 * StringStringEntryProto, OperatorSetIdProto).
 * Every length is checked against the bytes left; nesting is fixed (model
 * -> graph -> node/initializer -> attribute/entry, no subgraphs), so nothing recurses
 * over the input; counts are capped.  Unknown fields are skipped by their
 * wire type, as protobuf requires; groups (wire types 3, 4) are refused. */
#include <stdlib.h>
#include <string.h>

#include "formats/onnx_proto.h"

#define MAX_NODES (1u << 22)
#define MAX_INITS (1u << 22)
#define MAX_NAMES (1u << 8) /* inputs or outputs of one node */
#define MAX_STR 65536u

typedef struct pb {
    const uint8_t *p;
    uint64_t n, pos;
    uint64_t base; /* file offset of p[0] */
} pb;

typedef struct pb_field {
    uint32_t num, wire;
    uint64_t v;   /* varint / fixed value */
    pb sub;       /* length-delimited bytes */
} pb_field;

static bool varint(pb *b, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->pos >= b->n)
            return false;
        uint8_t c = b->p[b->pos++];
        r |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = r;
            return true;
        }
    }
    return false;
}

/* The next field; false at the end (*err set on malformed bytes). */
static bool next(pb *b, pb_field *f, const char **err) {
    *err = NULL;
    if (b->pos >= b->n)
        return false;
    uint64_t key;
    if (!varint(b, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff) {
        *err = "bad field key";
        return false;
    }
    f->num = (uint32_t)(key >> 3);
    f->wire = (uint32_t)(key & 7);
    switch (f->wire) {
    case 0:
        if (!varint(b, &f->v))
            *err = "truncated varint";
        break;
    case 1:
    case 5: {
        uint64_t k = f->wire == 1 ? 8 : 4;
        if (b->n - b->pos < k) {
            *err = "truncated fixed-size value";
            break;
        }
        f->v = 0;
        for (uint64_t i = 0; i < k; i++)
            f->v |= (uint64_t)b->p[b->pos + i] << (8 * i);
        b->pos += k;
        break;
    }
    case 2: {
        uint64_t len;
        if (!varint(b, &len) || len > b->n - b->pos) {
            *err = "length runs past its message";
            break;
        }
        f->sub = (pb){b->p + b->pos, len, 0, b->base + b->pos};
        b->pos += len;
        break;
    }
    default:
        *err = "unsupported wire type (group)";
    }
    return *err == NULL;
}

static char *str_of(const pb *s) {
    if (s->n > MAX_STR)
        return NULL;
    char *out = malloc((size_t)s->n + 1);
    if (out) {
        memcpy(out, s->p, (size_t)s->n);
        out[s->n] = '\0';
        if (strlen(out) != s->n) { /* an embedded NUL: not a name */
            free(out);
            return NULL;
        }
    }
    return out;
}

#define FAIL(msg)                \
    do {                         \
        o->err = (msg);          \
        o->err_at = at;          \
        return false;            \
    } while (0)

static bool add_str(char ***arr, uint32_t *n, const pb *s, onnx_model *o, uint64_t at) {
    if (*n >= MAX_NAMES)
        FAIL("a node with too many inputs or outputs");
    char *v = str_of(s);
    char **grown = v ? realloc(*arr, (*n + 1) * sizeof **arr) : NULL;
    if (!grown) {
        free(v);
        FAIL("bad or too long name");
    }
    *arr = grown;
    grown[(*n)++] = v;
    return true;
}

static bool set_str(char **dst, const pb *s, onnx_model *o, uint64_t at) {
    free(*dst);
    if (!(*dst = str_of(s)))
        FAIL("bad or too long string");
    return true;
}

/* AttributeProto: name (1), i (3, varint); the rest is skipped.  An
 * attribute given twice keeps its last value. */
static bool read_attr(pb b, onnx_node *nd, onnx_model *o) {
    pb_field f = {0};
    const char *err;
    char *name = NULL;
    int64_t v = 0;
    bool has_i = false;
    while (next(&b, &f, &err)) {
        uint64_t at = b.base + b.pos;
        if (f.num == 1 && f.wire == 2 && !set_str(&name, &f.sub, o, at))
            return false;
        if (f.num == 3 && f.wire == 0)
            v = (int64_t)f.v, has_i = true;
    }
    if (err) {
        free(name);
        o->err = err;
        o->err_at = b.base + b.pos;
        return false;
    }
    if (!name || !has_i) {
        free(name);
        return true;
    }
    for (uint32_t i = 0; i < nd->n_attrs; i++)
        if (!strcmp(nd->attrs[i].name, name)) {
            free(name);
            nd->attrs[i].i = v;
            return true;
        }
    if (nd->n_attrs >= ONNX_MAX_ATTRS) {
        free(name);
        o->err = "a node with more than 16 integer attributes";
        o->err_at = b.base;
        return false;
    }
    nd->attrs[nd->n_attrs++] = (onnx_attr){name, v};
    return true;
}

bool onnx_attr_int(const onnx_node *nd, const char *name, int64_t *v) {
    for (uint32_t i = 0; i < nd->n_attrs; i++)
        if (!strcmp(nd->attrs[i].name, name)) {
            *v = nd->attrs[i].i;
            return true;
        }
    return false;
}

static bool read_node(pb b, onnx_node *nd, onnx_model *o) {
    pb_field f = {0};
    const char *err;
    while (next(&b, &f, &err)) {
        uint64_t at = b.base + b.pos;
        if (f.wire != 2)
            continue;
        if (f.num == 1 && !add_str(&nd->inputs, &nd->n_inputs, &f.sub, o, at))
            return false;
        if (f.num == 2 && !add_str(&nd->outputs, &nd->n_outputs, &f.sub, o, at))
            return false;
        if (f.num == 3 && !set_str(&nd->name, &f.sub, o, at))
            return false;
        if (f.num == 4 && !set_str(&nd->op_type, &f.sub, o, at))
            return false;
        if (f.num == 7 && !set_str(&nd->domain, &f.sub, o, at))
            return false;
        if (f.num == 5 && !read_attr(f.sub, nd, o))
            return false;
    }
    if (err) {
        o->err = err;
        o->err_at = b.base + b.pos;
        return false;
    }
    return true;
}

static bool read_entry(pb b, onnx_tensor *t, onnx_model *o) {
    pb_field f = {0};
    const char *err;
    char *key = NULL, *value = NULL;
    bool ok = true;
    while (ok && next(&b, &f, &err)) {
        uint64_t at = b.base + b.pos;
        if (f.wire == 2 && f.num == 1)
            ok = set_str(&key, &f.sub, o, at);
        else if (f.wire == 2 && f.num == 2)
            ok = set_str(&value, &f.sub, o, at);
    }
    if (ok && err) {
        o->err = err;
        o->err_at = b.base + b.pos;
        ok = false;
    }
    if (ok && key && value) {
        char *end;
        if (!strcmp(key, "location")) {
            free(t->location);
            t->location = value;
            value = NULL;
        } else if (!strcmp(key, "offset") || !strcmp(key, "length")) {
            unsigned long long v = strtoull(value, &end, 10);
            if (*end || !*value || value[0] == '-') {
                o->err = "external data offset or length is not a number";
                o->err_at = b.base;
                ok = false;
            } else if (key[0] == 'o')
                t->ext_offset = v;
            else
                t->ext_length = v, t->has_ext_length = true;
        }
    }
    free(key);
    free(value);
    return ok;
}

static bool read_tensor(pb b, onnx_tensor *t, onnx_model *o) {
    pb_field f = {0};
    const char *err;
    t->data_type = 0;
    while (next(&b, &f, &err)) {
        uint64_t at = b.base + b.pos;
        if (f.num == 1) { /* dims: packed or one per field */
            if (f.wire == 0) {
                if (t->n_dims >= ONNX_MAX_DIMS)
                    FAIL("more than 8 dimensions");
                t->dims[t->n_dims++] = (int64_t)f.v;
            } else if (f.wire == 2) {
                pb d = f.sub;
                uint64_t v;
                while (d.pos < d.n) {
                    if (!varint(&d, &v) || t->n_dims >= ONNX_MAX_DIMS)
                        FAIL("bad dims or more than 8 dimensions");
                    t->dims[t->n_dims++] = (int64_t)v;
                }
            }
        } else if (f.num == 2 && f.wire == 0) {
            t->data_type = (int32_t)f.v;
        } else if (f.num == 4 && f.wire == 2) { /* float_data, packed: little-endian f32 */
            t->data = f.sub.p;
            t->data_len = f.sub.n;
            t->data_offset = f.sub.base;
            t->from_float_data = true;
        } else if (f.num == 8 && f.wire == 2) {
            if (!set_str(&t->name, &f.sub, o, at))
                return false;
        } else if (f.num == 9 && f.wire == 2) {
            t->data = f.sub.p;
            t->data_len = f.sub.n;
            t->data_offset = f.sub.base;
            t->from_float_data = false;
        } else if (f.num == 13 && f.wire == 2) {
            if (!read_entry(f.sub, t, o))
                return false;
        } else if (f.num == 14 && f.wire == 0) {
            t->external = f.v == 1;
        }
    }
    if (err) {
        o->err = err;
        o->err_at = b.base + b.pos;
        return false;
    }
    for (int i = 0; i < t->n_dims; i++)
        if (t->dims[i] < 0) {
            o->err = "a negative dimension";
            o->err_at = b.base;
            return false;
        }
    return true;
}

static bool read_graph(pb b, onnx_model *o) {
    pb_field f = {0};
    const char *err;
    while (next(&b, &f, &err)) {
        uint64_t at = b.base + b.pos;
        if (f.wire != 2)
            continue;
        if (f.num == 1) {
            if (o->n_nodes >= MAX_NODES)
                FAIL("too many nodes");
            onnx_node *grown = realloc(o->nodes, (o->n_nodes + 1) * sizeof *grown);
            if (!grown)
                FAIL("out of memory");
            o->nodes = grown;
            memset(&grown[o->n_nodes], 0, sizeof *grown);
            if (!read_node(f.sub, &grown[o->n_nodes++], o))
                return false;
        } else if (f.num == 5) {
            if (o->n_inits >= MAX_INITS)
                FAIL("too many initializers");
            onnx_tensor *grown = realloc(o->inits, (o->n_inits + 1) * sizeof *grown);
            if (!grown)
                FAIL("out of memory");
            o->inits = grown;
            memset(&grown[o->n_inits], 0, sizeof *grown);
            if (!read_tensor(f.sub, &grown[o->n_inits++], o))
                return false;
        } else if (f.num == 11 || f.num == 12) { /* ValueInfoProto: only its name (field 1) */
            pb vi = f.sub;
            pb_field g;
            const char *e2;
            while (next(&vi, &g, &e2))
                if (g.num == 1 && g.wire == 2 && f.num == 11 &&
                    !add_str(&o->inputs, &o->n_inputs, &g.sub, o, vi.base + vi.pos))
                    return false;
            if (e2)
                FAIL(e2);
        }
    }
    if (err) {
        o->err = err;
        o->err_at = b.base + b.pos;
        return false;
    }
    return true;
}

bool onnx_parse(const uint8_t *data, uint64_t size, onnx_model *o) {
    memset(o, 0, sizeof *o);
    pb b = {data, size, 0, 0};
    pb_field f = {0};
    const char *err;
    bool graph = false;
    while (next(&b, &f, &err)) {
        uint64_t at = b.base + b.pos;
        if (f.num == 1 && f.wire == 0)
            o->ir_version = f.v;
        else if (f.num == 2 && f.wire == 2) {
            if (!set_str(&o->producer, &f.sub, o, at))
                return false;
        } else if (f.num == 3 && f.wire == 2) {
            if (!set_str(&o->producer_version, &f.sub, o, at))
                return false;
        } else if (f.num == 7 && f.wire == 2) {
            if (graph)
                FAIL("two graphs");
            graph = true;
            if (!read_graph(f.sub, o))
                return false;
        } else if (f.num == 8 && f.wire == 2) { /* opset_import: domain 1, version 2 */
            pb s = f.sub;
            pb_field g;
            const char *e2;
            char *domain = NULL;
            uint64_t version = 0;
            while (next(&s, &g, &e2))
                if (g.num == 1 && g.wire == 2) {
                    if (!set_str(&domain, &g.sub, o, at))
                        return false;
                } else if (g.num == 2 && g.wire == 0)
                    version = g.v;
            if (e2) {
                free(domain);
                FAIL(e2);
            }
            if (!domain || !domain[0] || !strcmp(domain, "ai.onnx"))
                o->opset = version;
            free(domain);
        }
    }
    if (err) {
        o->err = err;
        o->err_at = b.base + b.pos;
        return false;
    }
    if (!graph) {
        o->err = "no graph";
        o->err_at = 0;
        return false;
    }
    return true;
}

static void free_strs(char **a, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        free(a[i]);
    free(a);
}

void onnx_free(onnx_model *o) {
    for (uint32_t i = 0; i < o->n_nodes; i++) {
        onnx_node *nd = &o->nodes[i];
        free_strs(nd->inputs, nd->n_inputs);
        free_strs(nd->outputs, nd->n_outputs);
        free(nd->name);
        free(nd->op_type);
        free(nd->domain);
        for (uint32_t j = 0; j < nd->n_attrs; j++)
            free(nd->attrs[j].name);
    }
    for (uint32_t i = 0; i < o->n_inits; i++) {
        free(o->inits[i].name);
        free(o->inits[i].location);
    }
    free_strs(o->inputs, o->n_inputs);
    free(o->nodes);
    free(o->inits);
    free(o->producer);
    free(o->producer_version);
    memset(o, 0, sizeof *o);
}

bool onnx_sniff(const uint8_t *d, uint64_t n) {
    /* ModelProto starts with ir_version (field 1, varint: 0x08, 3..15),
     * then producer_name (0x12), producer_version (0x1a), domain (0x22),
     * model_version (0x28), doc_string (0x32), graph (0x3a) or
     * opset_import (0x42) */
    if (n < 3 || d[0] != 0x08 || d[1] < 1 || d[1] > 15)
        return false;
    return d[2] == 0x12 || d[2] == 0x1a || d[2] == 0x22 || d[2] == 0x28 || d[2] == 0x32 || d[2] == 0x3a ||
           d[2] == 0x42;
}
