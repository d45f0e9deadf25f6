/* The restricted unpickler (see pytorch_pickle.h): a stack machine over
 * the pickle opcodes a torch.save'd state dict uses (protocols 2-5), with
 * the globals it needs turned into data.  Nothing here calls out. */
#include "formats/pytorch_pickle.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MARK_DEPTH 1000   /* far above any state dict's nesting */
#define MAX_MEMO (1u << 24)
#define BLOCK_BYTES (64u << 10)
#define MAX_ARENA_BYTES ((size_t)1 << 30) /* real state dicts need a few MiB */

/* ---- arena ------------------------------------------------------------------ */
typedef struct pk_block {
    struct pk_block *next;
    size_t used, cap;
    max_align_t data[];
} pk_block;

struct pk_arena {
    pk_block *head;
    size_t total, budget;
};

static void *arena_alloc(pk_arena *a, size_t n) {
    n = (n + sizeof(max_align_t) - 1) / sizeof(max_align_t) * sizeof(max_align_t);
    if (n > a->budget - a->total)
        return NULL;
    pk_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > BLOCK_BYTES ? n : BLOCK_BYTES;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (uint8_t *)b->data + b->used;
    b->used += n;
    a->total += n;
    memset(p, 0, n);
    return p;
}

void pk_arena_free(pk_arena *a) {
    if (!a)
        return;
    for (pk_block *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

/* ---- the machine ------------------------------------------------------------- */
typedef struct vm {
    const uint8_t *p;
    size_t n, pos, op_at;
    pk_arena *a;
    pk_obj **stack;
    size_t sp, scap;
    size_t marks[MAX_MARK_DEPTH];
    int n_marks;
    pk_obj **memo;
    size_t memo_cap, memo_len;
    char *err;
    size_t err_cap;
    bool failed;
} vm;

static bool fail(vm *m, const char *fmt, ...) {
    if (m->failed)
        return false;
    m->failed = true;
    int k = snprintf(m->err, m->err_cap, "offset %zu: ", m->op_at);
    va_list ap;
    va_start(ap, fmt);
    if (k >= 0 && (size_t)k < m->err_cap)
        vsnprintf(m->err + k, m->err_cap - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

static pk_obj *new_obj(vm *m, pk_kind kind) {
    pk_obj *o = arena_alloc(m->a, sizeof *o);
    if (!o) {
        fail(m, "the pickle needs more memory than its size allows (a pickle bomb?)");
        return NULL;
    }
    o->kind = kind;
    return o;
}

static bool push(vm *m, pk_obj *o) {
    if (!o)
        return false;
    if (m->sp == m->scap) {
        size_t cap = m->scap ? 2 * m->scap : 64;
        pk_obj **s = realloc(m->stack, cap * sizeof *s);
        if (!s)
            return fail(m, "out of memory");
        m->stack = s;
        m->scap = cap;
    }
    m->stack[m->sp++] = o;
    return true;
}

static size_t stack_floor(const vm *m) { return m->n_marks ? m->marks[m->n_marks - 1] : 0; }

static pk_obj *pop(vm *m) {
    if (m->sp <= stack_floor(m)) {
        fail(m, "opcode 0x%02x pops an empty stack", m->p[m->op_at]);
        return NULL;
    }
    return m->stack[--m->sp];
}

static pk_obj *top(vm *m) {
    if (m->sp <= stack_floor(m)) {
        fail(m, "opcode 0x%02x needs a value on the stack", m->p[m->op_at]);
        return NULL;
    }
    return m->stack[m->sp - 1];
}

static bool need(vm *m, size_t k) {
    if (k > m->n - m->pos)
        return fail(m, "opcode 0x%02x needs %zu bytes, only %zu left", m->p[m->op_at], k, m->n - m->pos);
    return true;
}

static uint64_t read_le(vm *m, int k) {
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v |= (uint64_t)m->p[m->pos + (size_t)i] << (8 * i);
    m->pos += (size_t)k;
    return v;
}

/* Appends to a container's item (and value) arrays, growing them in the arena. */
static bool add_item(vm *m, pk_obj *c, pk_obj *item, pk_obj *value) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        pk_obj **items = arena_alloc(m->a, cap * sizeof *items), **values = NULL;
        if (items && c->kind == PK_DICT)
            values = arena_alloc(m->a, cap * sizeof *values);
        if (!items || (c->kind == PK_DICT && !values))
            return fail(m, "the pickle needs more memory than its size allows (a pickle bomb?)");
        if (c->n) {
            memcpy(items, c->items, c->n * sizeof *items);
            if (values)
                memcpy(values, c->values, c->n * sizeof *values);
        }
        c->items = items;
        c->values = values;
        c->cap = cap;
    }
    c->items[c->n] = item;
    if (c->kind == PK_DICT)
        c->values[c->n] = value;
    c->n++;
    return true;
}

static pk_obj *new_str(vm *m, const uint8_t *s, size_t len) {
    pk_obj *o = new_obj(m, PK_STR);
    char *copy = o ? arena_alloc(m->a, len + 1) : NULL;
    if (o && !copy) {
        fail(m, "the pickle needs more memory than its size allows");
        return NULL;
    }
    if (!o)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    o->s = copy;
    o->len = len;
    return o;
}

static bool op_string(vm *m, int len_bytes) {
    if (!need(m, (size_t)len_bytes))
        return false;
    uint64_t len = read_le(m, len_bytes);
    if (len > m->n - m->pos)
        return fail(m, "a string of %llu bytes, only %zu left", (unsigned long long)len, m->n - m->pos);
    pk_obj *o = new_str(m, m->p + m->pos, (size_t)len);
    m->pos += (size_t)len;
    return push(m, o);
}

static bool op_int(vm *m, int k, bool is_signed) {
    if (!need(m, (size_t)k))
        return false;
    uint64_t v = read_le(m, k);
    pk_obj *o = new_obj(m, PK_INT);
    if (!o)
        return false;
    if (is_signed && k < 8 && (v >> (8 * k - 1)) & 1)
        v |= ~0ull << (8 * k);
    o->i = (int64_t)v;
    return push(m, o);
}

/* LONG1/LONG4: little-endian two's complement; longer than 8 bytes is kept
 * as raw bytes (the legacy format's magic number is 10 bytes). */
static bool op_long(vm *m, int len_bytes) {
    if (!need(m, (size_t)len_bytes))
        return false;
    uint64_t len = read_le(m, len_bytes);
    if (len > 64 || len > m->n - m->pos)
        return fail(m, "an integer of %llu bytes", (unsigned long long)len);
    pk_obj *o = new_obj(m, PK_INT);
    if (!o)
        return false;
    if (len <= 8) {
        uint64_t v = len ? read_le(m, (int)len) : 0;
        if (len && len < 8 && (v >> (8 * len - 1)) & 1)
            v |= ~0ull << (8 * len);
        o->i = (int64_t)v;
    } else {
        o->s = (const char *)m->p + m->pos; /* into the input, not terminated */
        o->len = (size_t)len;
        m->pos += (size_t)len;
    }
    return push(m, o);
}

static bool op_memo_put(vm *m, uint64_t idx) {
    pk_obj *o = top(m);
    if (!o)
        return false;
    /* picklers number memo entries in order: an index may overwrite one or
     * append the next, never leave a gap (which would cost memory) */
    if (idx >= MAX_MEMO || idx > m->memo_len)
        return fail(m, "memo index %llu is out of range (%zu stored)", (unsigned long long)idx, m->memo_len);
    if (idx >= m->memo_cap) {
        size_t cap = m->memo_cap ? m->memo_cap : 64;
        while (cap <= idx)
            cap *= 2;
        pk_obj **memo = realloc(m->memo, cap * sizeof *memo);
        if (!memo)
            return fail(m, "out of memory");
        memset(memo + m->memo_cap, 0, (cap - m->memo_cap) * sizeof *memo);
        m->memo = memo;
        m->memo_cap = cap;
    }
    m->memo[idx] = o;
    if (idx >= m->memo_len)
        m->memo_len = (size_t)idx + 1;
    return true;
}

static bool op_memo_get(vm *m, uint64_t idx) {
    if (idx >= m->memo_len || !m->memo[idx])
        return fail(m, "memo index %llu was never stored", (unsigned long long)idx);
    return push(m, m->memo[idx]);
}

/* Items from the last mark to the top, then the mark is dropped. */
static bool pop_mark(vm *m, size_t *from) {
    if (!m->n_marks)
        return fail(m, "opcode 0x%02x without a mark", m->p[m->op_at]);
    *from = m->marks[--m->n_marks];
    return true;
}

static bool op_tuple_from(vm *m, pk_kind kind, size_t from) {
    pk_obj *t = new_obj(m, kind);
    if (!t)
        return false;
    for (size_t i = from; i < m->sp; i++)
        if (!add_item(m, t, m->stack[i], NULL))
            return false;
    m->sp = from;
    return push(m, t);
}

static bool op_tuple_n(vm *m, size_t k) {
    if (m->sp < stack_floor(m) + k)
        return fail(m, "a %zu-tuple from a stack of %zu", k, m->sp - stack_floor(m));
    return op_tuple_from(m, PK_TUPLE, m->sp - k);
}

static const struct {
    const char *module, *name;
    pk_global g;
    int dtype, elem_size;
} allowed[] = {
    {"collections", "OrderedDict", PKG_ORDERED_DICT, 0, 0},
    {"torch._utils", "_rebuild_tensor_v2", PKG_REBUILD_TENSOR_V2, 0, 0},
    {"torch._utils", "_rebuild_parameter", PKG_REBUILD_PARAMETER, 0, 0},
    {"torch._utils", "_rebuild_parameter_with_state", PKG_REBUILD_PARAMETER, 0, 0},
    {"torch", "FloatStorage", PKG_STORAGE_TYPE, 0 /* F32 */, 4},
    {"torch", "HalfStorage", PKG_STORAGE_TYPE, 1 /* F16 */, 2},
    {"torch", "BFloat16Storage", PKG_STORAGE_TYPE, 30 /* BF16 */, 2},
    {"torch", "CharStorage", PKG_STORAGE_TYPE, 24 /* I8 */, 1},
    {"torch", "ShortStorage", PKG_STORAGE_TYPE, 25 /* I16 */, 2},
    {"torch", "IntStorage", PKG_STORAGE_TYPE, 26 /* I32 */, 4},
    {"torch", "ByteStorage", PKG_STORAGE_TYPE, -1, 1},
    {"torch", "BoolStorage", PKG_STORAGE_TYPE, -1, 1},
    {"torch", "LongStorage", PKG_STORAGE_TYPE, -1, 8},
    {"torch", "DoubleStorage", PKG_STORAGE_TYPE, -1, 8},
};

static bool make_global(vm *m, const char *module, size_t mlen, const char *name, size_t nlen) {
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strlen(allowed[i].module) == mlen && !memcmp(allowed[i].module, module, mlen) &&
            strlen(allowed[i].name) == nlen && !memcmp(allowed[i].name, name, nlen)) {
            pk_obj *g = new_obj(m, PK_GLOBAL);
            if (!g)
                return false;
            g->global = allowed[i].g;
            g->s = allowed[i].name;
            g->dtype = allowed[i].dtype;
            g->elem_size = allowed[i].elem_size;
            return push(m, g);
        }
    return fail(m, "global '%.*s.%.*s' is not allowed (a state dict needs only tensors, storages and "
                   "OrderedDict; nothing in the file is run)",
                (int)(mlen > 80 ? 80 : mlen), module, (int)(nlen > 80 ? 80 : nlen), name);
}

static bool op_global(vm *m) {
    const uint8_t *s = m->p + m->pos, *end = m->p + m->n;
    const uint8_t *nl1 = memchr(s, '\n', (size_t)(end - s));
    const uint8_t *nl2 = nl1 ? memchr(nl1 + 1, '\n', (size_t)(end - nl1 - 1)) : NULL;
    if (!nl2)
        return fail(m, "GLOBAL without two newline-terminated names");
    m->pos = (size_t)(nl2 + 1 - m->p);
    return make_global(m, (const char *)s, (size_t)(nl1 - s), (const char *)nl1 + 1, (size_t)(nl2 - nl1 - 1));
}

static bool op_stack_global(vm *m) {
    pk_obj *name = pop(m), *module = name ? pop(m) : NULL;
    if (!module)
        return false;
    if (name->kind != PK_STR || module->kind != PK_STR)
        return fail(m, "STACK_GLOBAL needs two strings");
    return make_global(m, module->s, module->len, name->s, name->len);
}

static bool int_arg(const pk_obj *o, int64_t *v) {
    if (!o || (o->kind != PK_INT && o->kind != PK_BOOL) || o->len > 8)
        return false;
    *v = o->i;
    return true;
}

static bool int_tuple(const pk_obj *t, int64_t *out, int *n) {
    if (!t || (t->kind != PK_TUPLE && t->kind != PK_LIST) || t->n > PK_MAX_DIMS)
        return false;
    for (size_t i = 0; i < t->n; i++)
        if (!int_arg(t->items[i], &out[i]))
            return false;
    *n = (int)t->n;
    return true;
}

/* _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad,
 * backward_hooks[, metadata]) */
static bool rebuild_tensor(vm *m, const pk_obj *args) {
    if (args->n < 4 || args->n > 7 || args->items[0]->kind != PK_STORAGE)
        return fail(m, "_rebuild_tensor_v2 needs (storage, offset, size, stride, ...)");
    pk_obj *t = new_obj(m, PK_TENSOR);
    if (!t)
        return false;
    int n_size = 0, n_stride = 0;
    t->storage = args->items[0];
    if (!int_arg(args->items[1], &t->offset) || !int_tuple(args->items[2], t->size, &n_size) ||
        !int_tuple(args->items[3], t->stride, &n_stride) || n_size != n_stride)
        return fail(m, "_rebuild_tensor_v2: offset, size and stride must be integers (at most %d dims)",
                    PK_MAX_DIMS);
    t->n_dims = n_size;
    return push(m, t);
}

static bool op_reduce(vm *m) {
    pk_obj *args = pop(m), *fn = args ? pop(m) : NULL;
    if (!fn)
        return false;
    if (fn->kind != PK_GLOBAL || args->kind != PK_TUPLE)
        return fail(m, "REDUCE needs an allowed callable and a tuple");
    switch (fn->global) {
    case PKG_ORDERED_DICT: {
        pk_obj *d = new_obj(m, PK_DICT);
        if (!d)
            return false;
        if (args->n == 1 && args->items[0]->kind == PK_LIST) { /* OrderedDict([(k, v), ...]) */
            const pk_obj *l = args->items[0];
            for (size_t i = 0; i < l->n; i++) {
                const pk_obj *kv = l->items[i];
                if (kv->kind != PK_TUPLE || kv->n != 2)
                    return fail(m, "OrderedDict of something other than pairs");
                if (!add_item(m, d, kv->items[0], kv->items[1]))
                    return false;
            }
        } else if (args->n != 0) {
            return fail(m, "OrderedDict with %zu arguments", args->n);
        }
        return push(m, d);
    }
    case PKG_REBUILD_TENSOR_V2:
        return rebuild_tensor(m, args);
    case PKG_REBUILD_PARAMETER:
        if (args->n < 1 || args->items[0]->kind != PK_TENSOR)
            return fail(m, "_rebuild_parameter needs a tensor");
        return push(m, args->items[0]);
    default:
        return fail(m, "storage type %s called", fn->s);
    }
}

/* ('storage', storage type, key, location, numel[, view metadata]) */
static bool op_persid(vm *m) {
    pk_obj *pid = pop(m);
    if (!pid)
        return false;
    if (pid->kind != PK_TUPLE || pid->n < 5 || pid->n > 6 || pid->items[0]->kind != PK_STR ||
        strcmp(pid->items[0]->s, "storage") || pid->items[1]->kind != PK_GLOBAL ||
        pid->items[1]->global != PKG_STORAGE_TYPE || pid->items[2]->kind != PK_STR)
        return fail(m, "a persistent id that is not ('storage', type, key, location, numel)");
    if (pid->n == 6 && pid->items[5]->kind != PK_NONE)
        return fail(m, "storage views (legacy view metadata) are not supported");
    pk_obj *s = new_obj(m, PK_STORAGE);
    if (!s)
        return false;
    s->dtype = pid->items[1]->dtype;
    s->elem_size = pid->items[1]->elem_size;
    s->s = pid->items[1]->s;
    s->key = pid->items[2]->s;
    if (!int_arg(pid->items[4], &s->numel) || s->numel < 0)
        return fail(m, "storage '%.32s': bad element count", s->key);
    return push(m, s);
}

static bool op_setitems(vm *m, size_t from) {
    if (from == 0 || (m->sp - from) % 2)
        return fail(m, "SETITEMS needs a dict and key/value pairs");
    pk_obj *d = m->stack[from - 1];
    if (d->kind != PK_DICT)
        return fail(m, "SETITEM on something other than a dict");
    for (size_t i = from; i < m->sp; i += 2)
        if (!add_item(m, d, m->stack[i], m->stack[i + 1]))
            return false;
    m->sp = from;
    return true;
}

static bool op_appends(vm *m, size_t from) {
    if (from == 0 || m->stack[from - 1]->kind != PK_LIST)
        return fail(m, "APPEND to something other than a list");
    pk_obj *l = m->stack[from - 1];
    for (size_t i = from; i < m->sp; i++)
        if (!add_item(m, l, m->stack[i], NULL))
            return false;
    m->sp = from;
    return true;
}

static bool step(vm *m, bool *stop) {
    m->op_at = m->pos;
    uint8_t op = m->p[m->pos++];
    size_t from = 0;
    switch (op) {
    case 0x80: /* PROTO */
        if (!need(m, 1))
            return false;
        if (m->p[m->pos] > 5)
            return fail(m, "pickle protocol %u", m->p[m->pos]);
        m->pos++;
        return true;
    case 0x95: /* FRAME: a length hint only */
        if (!need(m, 8))
            return false;
        m->pos += 8;
        return true;
    case '.': *stop = true; return true;
    case '(':
        if (m->n_marks == MAX_MARK_DEPTH)
            return fail(m, "nesting deeper than %d marks", MAX_MARK_DEPTH);
        m->marks[m->n_marks++] = m->sp;
        return true;
    case ')': return push(m, new_obj(m, PK_TUPLE));
    case ']': return push(m, new_obj(m, PK_LIST));
    case '}': return push(m, new_obj(m, PK_DICT));
    case 'N': return push(m, new_obj(m, PK_NONE));
    case 0x88: case 0x89: {
        pk_obj *b = new_obj(m, PK_BOOL);
        if (b)
            b->i = op == 0x88;
        return push(m, b);
    }
    case 'J': return op_int(m, 4, true);
    case 'K': return op_int(m, 1, false);
    case 'M': return op_int(m, 2, false);
    case 0x8a: return op_long(m, 1);
    case 0x8b: return op_long(m, 4);
    case 'G': {
        if (!need(m, 8))
            return false;
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v = v << 8 | m->p[m->pos++];
        pk_obj *o = new_obj(m, PK_FLOAT);
        if (o)
            memcpy(&o->f, &v, sizeof v);
        return push(m, o);
    }
    case 'X': case 'B': case 'T': return op_string(m, 4);
    case 0x8c: case 'C': case 'U': return op_string(m, 1);
    case 0x8d: case 0x8e: return op_string(m, 8);
    case 't': return pop_mark(m, &from) && op_tuple_from(m, PK_TUPLE, from);
    case 'l': return pop_mark(m, &from) && op_tuple_from(m, PK_LIST, from);
    case 'd': {
        pk_obj *d = pop_mark(m, &from) ? new_obj(m, PK_DICT) : NULL;
        if (!d)
            return false;
        if ((m->sp - from) % 2)
            return fail(m, "DICT with an odd number of items");
        for (size_t i = from; i < m->sp; i += 2)
            if (!add_item(m, d, m->stack[i], m->stack[i + 1]))
                return false;
        m->sp = from;
        return push(m, d);
    }
    case 0x85: return op_tuple_n(m, 1);
    case 0x86: return op_tuple_n(m, 2);
    case 0x87: return op_tuple_n(m, 3);
    case 'a':
        if (m->sp < stack_floor(m) + 2)
            return fail(m, "APPEND needs a list and a value");
        return op_appends(m, m->sp - 1);
    case 'e': return pop_mark(m, &from) && op_appends(m, from);
    case 's':
        if (m->sp < stack_floor(m) + 3)
            return fail(m, "SETITEM needs a dict, a key and a value");
        return op_setitems(m, m->sp - 2);
    case 'u': return pop_mark(m, &from) && op_setitems(m, from);
    case 'q': return need(m, 1) && op_memo_put(m, read_le(m, 1));
    case 'r': return need(m, 4) && op_memo_put(m, read_le(m, 4));
    case 0x94: return op_memo_put(m, m->memo_len);
    case 'h': return need(m, 1) && op_memo_get(m, read_le(m, 1));
    case 'j': return need(m, 4) && op_memo_get(m, read_le(m, 4));
    case 'c': return op_global(m);
    case 0x93: return op_stack_global(m);
    case 'R': return op_reduce(m);
    case 'Q': return op_persid(m);
    case 'b': { /* BUILD: state for a dict (OrderedDict's _metadata) or a tensor is ignored */
        pk_obj *state = pop(m), *obj = state ? top(m) : NULL;
        if (!obj)
            return false;
        if (obj->kind != PK_DICT && obj->kind != PK_TENSOR)
            return fail(m, "BUILD on something other than a dict or tensor");
        return true;
    }
    case '0': return pop(m) != NULL;
    case '2': {
        pk_obj *o = top(m);
        return o && push(m, o);
    }
    case '1': return pop_mark(m, &from) && (m->sp = from, true);
    default:
        return fail(m, "opcode 0x%02x%s%c%s is not one a state dict uses (refused; nothing in the file is run)",
                    op, op >= 32 && op < 127 ? " '" : "", op >= 32 && op < 127 ? op : ' ',
                    op >= 32 && op < 127 ? "'" : "");
    }
}

bool pk_unpickle(const uint8_t *data, size_t n, pk_arena **arena, pk_obj **out, size_t *used, char *err,
                 size_t cap) {
    *out = NULL;
    *arena = calloc(1, sizeof **arena);
    if (!*arena) {
        snprintf(err, cap, "out of memory");
        return false;
    }
    /* a budget proportional to the input: no pickle bomb gets more */
    (*arena)->budget = n > (MAX_ARENA_BYTES - (16u << 20)) / 512 ? MAX_ARENA_BYTES : 512 * n + (16u << 20);
    vm m = {.p = data, .n = n, .a = *arena, .err = err, .err_cap = cap};
    bool stop = false, ok = true;
    while (ok && !stop) {
        if (m.pos >= n) {
            m.op_at = n;
            ok = fail(&m, "the pickle ends without STOP");
            break;
        }
        ok = step(&m, &stop);
    }
    if (ok && (m.sp != 1 || m.n_marks))
        ok = fail(&m, "the pickle leaves %zu values and %d marks instead of one value", m.sp, m.n_marks);
    if (ok) {
        *out = m.stack[0];
        *used = m.pos;
    }
    free(m.stack);
    free(m.memo);
    return ok;
}

const pk_obj *pk_dict_get(const pk_obj *d, const char *k) {
    if (!d || d->kind != PK_DICT)
        return NULL;
    for (size_t i = 0; i < d->n; i++)
        if (d->items[i]->kind == PK_STR && !strcmp(d->items[i]->s, k))
            return d->values[i];
    return NULL;
}
