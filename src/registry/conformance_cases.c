/* The numerics matrix: which op x type x shape combinations are tried.
 * Odd sizes, broadcasting, padded and transposed (non-contiguous) views,
 * every weight type for mul_mat and get_rows. */
#include <string.h>

#include "conformance_internal.h"
#include "core/tensor.h"
#include "quant/type_table.h"


typedef struct builder {
    check_case *out;
    int cap, n;
} builder;

static check_tensor T(tport_type_id type, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    return (check_tensor){.type = type, .ne = {n0, n1, n2, n3}};
}

static check_tensor with_layout(check_tensor t, int layout) {
    t.layout = layout;
    return t;
}

static void push(builder *b, check_case c) {
    if (b->n < b->cap)
        b->out[b->n] = c;
    b->n++;
}

static void set_params(check_case *c, const void *p, uint32_t size) {
    memcpy(c->params, p, size);
    c->params_size = size;
}

static void binary_cases(builder *b, tport_op_id op) {
    const check_tensor f = T(TPORT_TYPE_F32, 33, 7, 1, 1);
    push(b, (check_case){.op = op, .n_src = 2, .src = {f, f}, .dst = f, .note = "odd"});
    const check_tensor big = T(TPORT_TYPE_F32, 16, 5, 3, 1);
    push(b, (check_case){.op = op, .n_src = 2, .src = {big, T(TPORT_TYPE_F32, 16, 1, 1, 1)}, .dst = big,
                         .note = "broadcast row"});
    push(b, (check_case){.op = op, .n_src = 2, .src = {big, T(TPORT_TYPE_F32, 16, 5, 1, 1)}, .dst = big,
                         .note = "broadcast dim 2"});
    push(b, (check_case){.op = op, .n_src = 2, .src = {with_layout(f, CHECK_LAYOUT_PADDED), f}, .dst = f,
                         .note = "padded src0"});
    push(b, (check_case){.op = op, .n_src = 2, .src = {with_layout(f, CHECK_LAYOUT_TRANSPOSED), f}, .dst = f,
                         .note = "transposed src0"});
}

static void unary_cases(builder *b) {
    const check_tensor f = T(TPORT_TYPE_F32, 37, 3, 2, 1);
    const float scale = 0.75f, eps = 1e-5f;
    check_case c = {.op = TPORT_OP_SCALE, .n_src = 1, .src = {f}, .dst = f, .note = "odd"};
    set_params(&c, &scale, sizeof scale);
    push(b, c);
    c = (check_case){.op = TPORT_OP_RMS_NORM, .n_src = 1, .src = {f}, .dst = f, .note = "odd"};
    set_params(&c, &eps, sizeof eps);
    push(b, c);
    c.op = TPORT_OP_NORM;
    push(b, c);
    push(b, (check_case){.op = TPORT_OP_SILU, .n_src = 1, .src = {f}, .dst = f, .note = "odd"});
    push(b, (check_case){.op = TPORT_OP_GELU, .n_src = 1, .src = {f}, .dst = f, .note = "odd"});
    push(b, (check_case){.op = TPORT_OP_SWIGLU, .n_src = 2, .src = {f, f}, .dst = f, .note = "odd"});
    const tport_params_soft_max sm = {.scale = 0.7f};
    const check_tensor s = T(TPORT_TYPE_F32, 17, 4, 3, 1);
    c = (check_case){.op = TPORT_OP_SOFT_MAX, .n_src = 1, .src = {s}, .dst = s, .note = "no mask"};
    set_params(&c, &sm, sizeof sm);
    push(b, c);
    c = (check_case){.op = TPORT_OP_SOFT_MAX, .n_src = 2, .src = {s, T(TPORT_TYPE_F32, 17, 4, 1, 1)}, .dst = s,
                     .note = "mask broadcast"};
    set_params(&c, &sm, sizeof sm);
    push(b, c);
}

/* The ops of the architectures beyond llama (ids 16..47). */
static void arch_cases(builder *b) {
    const check_tensor f = T(TPORT_TYPE_F32, 37, 3, 2, 1);
    push(b, (check_case){.op = TPORT_OP_GELU_F16, .n_src = 1, .src = {f}, .dst = f, .note = "odd"});
    push(b, (check_case){.op = TPORT_OP_GELU_ERF, .n_src = 1, .src = {f}, .dst = f, .note = "odd"});
    push(b, (check_case){.op = TPORT_OP_TANH, .n_src = 1, .src = {f}, .dst = f, .note = "odd"});
    const tport_params_clamp cl = {-0.25f, 0.5f};
    check_case c = {.op = TPORT_OP_CLAMP, .n_src = 1, .src = {f}, .dst = f, .note = "odd"};
    set_params(&c, &cl, sizeof cl);
    push(b, c);
    /* 3 heads: ALiBi slopes from both of ggml's branches */
    const check_tensor s = T(TPORT_TYPE_F32, 17, 4, 3, 1);
    const tport_params_soft_max_ext sm = {.scale = 0.7f, .max_bias = 8.0f};
    c = (check_case){.op = TPORT_OP_SOFT_MAX_EXT, .n_src = 2, .src = {s, T(TPORT_TYPE_F32, 17, 4, 1, 1)}, .dst = s,
                     .note = "alibi, 3 heads"};
    set_params(&c, &sm, sizeof sm);
    push(b, c);
}

/* Mixture of experts (ids 22..27, ABI 1.3): routing and the expert-indexed
 * product over stacks of every kind of weight the families use. */
static void moe_cases(builder *b) {
    const check_tensor f = T(TPORT_TYPE_F32, 37, 3, 2, 1);
    push(b, (check_case){.op = TPORT_OP_SIGMOID, .n_src = 1, .src = {f}, .dst = f, .note = "odd"});
    push(b, (check_case){.op = TPORT_OP_SUM_ROWS, .n_src = 1, .src = {f}, .dst = T(TPORT_TYPE_F32, 1, 3, 2, 1),
                         .note = "odd"});
    binary_cases(b, TPORT_OP_DIV);
    /* get_rows per batch (the routing weights of each token): ids [4, 3]
     * pick rows of their own matrix of a [9, 7, 3] */
    check_tensor rows = T(TPORT_TYPE_I32, 4, 3, 1, 1);
    rows.data = CHECK_DATA_INDICES;
    rows.limit = 7;
    push(b, (check_case){.op = TPORT_OP_GET_ROWS, .n_src = 2, .src = {T(TPORT_TYPE_F32, 9, 7, 3, 1), rows},
                         .dst = T(TPORT_TYPE_F32, 9, 4, 3, 1), .note = "rows per batch"});
    /* 8 of 60 experts (more than one sorting pass), 5 tokens */
    const tport_params_top_k tk = {8};
    check_case c = {.op = TPORT_OP_ARGSORT_TOP_K, .n_src = 1, .src = {T(TPORT_TYPE_F32, 60, 5, 1, 1)},
                    .dst = T(TPORT_TYPE_I32, 8, 5, 1, 1), .note = "8 of 60"};
    set_params(&c, &tk, sizeof tk);
    push(b, c);
    /* grouped routing (1.4): 4 of 8 groups of 8 experts, 5 tokens */
    const tport_params_expert_groups eg = {8, 4};
    check_case cg = {.op = TPORT_OP_EXPERT_GROUPS, .n_src = 1, .src = {T(TPORT_TYPE_F32, 64, 5, 1, 1)},
                     .dst = T(TPORT_TYPE_F32, 64, 5, 1, 1), .note = "4 of 8 groups"};
    set_params(&cg, &eg, sizeof eg);
    push(b, cg);
    check_tensor ids = T(TPORT_TYPE_I32, 2, 5, 1, 1); /* 2 used of 4 experts, 5 tokens */
    ids.data = CHECK_DATA_INDICES;
    ids.limit = 4;
    push(b, (check_case){.op = TPORT_OP_ADD_ID, .n_src = 3,
                         .src = {T(TPORT_TYPE_F32, 33, 2, 5, 1), T(TPORT_TYPE_F32, 33, 4, 1, 1), ids},
                         .dst = T(TPORT_TYPE_F32, 33, 2, 5, 1), .note = "2 of 4 experts"});
    /* a limit inside the data's range, so both clamps bite */
    const tport_params_swiglu_oai oai = {1.702f, 0.4f};
    c = (check_case){.op = TPORT_OP_SWIGLU_OAI, .n_src = 2, .src = {f, f}, .dst = f, .note = "odd, clamped"};
    set_params(&c, &oai, sizeof oai);
    push(b, c);
    const tport_type_id w[] = {TPORT_TYPE_F32, TPORT_TYPE_F16, TPORT_TYPE_Q8_0, TPORT_TYPE_Q4_0, TPORT_TYPE_Q4_K,
                               TPORT_TYPE_Q6_K, TPORT_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        const int64_t K = tport_traits(w[i])->info.block_size > 64 ? 256 : 64;
        /* one input row for every slot (up, gate), and one per slot (down) */
        push(b, (check_case){.op = TPORT_OP_MUL_MAT_ID, .n_src = 3,
                             .src = {T(w[i], K, 7, 4, 1), T(TPORT_TYPE_F32, K, 1, 5, 1), ids},
                             .dst = T(TPORT_TYPE_F32, 7, 2, 5, 1), .note = "2 of 4, shared input"});
        push(b, (check_case){.op = TPORT_OP_MUL_MAT_ID, .n_src = 3,
                             .src = {T(w[i], K, 7, 4, 1), T(TPORT_TYPE_F32, K, 2, 5, 1), ids},
                             .dst = T(TPORT_TYPE_F32, 7, 2, 5, 1), .note = "2 of 4, input per slot"});
    }
}

static void rope_cases(builder *b) {
    const check_tensor x = T(TPORT_TYPE_F32, 8, 3, 5, 1); /* head dim, heads, tokens */
    check_tensor pos = T(TPORT_TYPE_I32, 5, 1, 1, 1);
    pos.data = CHECK_DATA_POSITIONS;
    for (int mode = 0; mode < 2; mode++) {
        tport_params_rope p = {.n_dims = mode ? 6 : 8, .mode = mode ? TPORT_ROPE_NEOX : TPORT_ROPE_NORMAL,
                               .freq_base = 10000.0f, .freq_scale = 1.0f};
        check_case c = {.op = TPORT_OP_ROPE, .n_src = 2, .src = {x, pos}, .dst = x,
                        .note = mode ? "neox, partial" : "normal"};
        set_params(&c, &p, sizeof p);
        push(b, c);
    }
    /* 1.3: frequency factors, linear scaling, YaRN, an attention factor */
    const check_tensor hx = T(TPORT_TYPE_F32, 16, 3, 5, 1);
    check_tensor ff = T(TPORT_TYPE_F32, 8, 1, 1, 1);
    ff.data = CHECK_DATA_FACTORS;
    const struct {
        bool ff;
        tport_params_rope_ext p;
        const char *note;
    } ext[] = {
        {true, {16, TPORT_ROPE_NORMAL, 500000.0f, 1.0f, 0.0f, 1.0f, 32.0f, 1.0f, 0}, "frequency factors"},
        {false, {12, TPORT_ROPE_NEOX, 10000.0f, 0.25f, 0.0f, 1.0f, 32.0f, 1.0f, 0}, "linear, neox, partial"},
        {false, {16, TPORT_ROPE_NEOX, 1000000.0f, 0.25f, 1.0f, 1.0f, 32.0f, 1.0f, 4096}, "yarn"},
        {true, {16, TPORT_ROPE_NORMAL, 10000.0f, 0.125f, 1.0f, 0.9f, 24.0f, 2.0f, 2048}, "yarn, factors, attn 0.9"},
    };
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        check_case c = {.op = TPORT_OP_ROPE_EXT, .n_src = ext[i].ff ? 3 : 2, .src = {hx, pos, ff}, .dst = hx,
                        .note = ext[i].note};
        set_params(&c, &ext[i].p, sizeof ext[i].p);
        push(b, c);
    }
}

/* flash_attn (1.1) and flash_attn_ext (1.3): q [hd, heads, n], k and v
 * [hd, n_kv, kv heads], a mask, sinks [heads] as operand 4 */
static void attn_cases(builder *b) {
    const check_tensor q = T(TPORT_TYPE_F32, 16, 4, 3, 1), kv = T(TPORT_TYPE_F32, 16, 7, 2, 1),
                       kv16 = T(TPORT_TYPE_F16, 16, 7, 2, 1), mask = T(TPORT_TYPE_F32, 7, 3, 1, 1),
                       sinks = T(TPORT_TYPE_F32, 4, 1, 1, 1);
    tport_params_flash_attn fa = {0.25f};
    check_case c = {.op = TPORT_OP_FLASH_ATTN, .n_src = 4, .src = {q, kv, kv, mask}, .dst = q, .note = "gqa"};
    set_params(&c, &fa, sizeof fa);
    push(b, c);
    tport_params_flash_attn_ext ext = {2.0f, 0.5f};
    c = (check_case){.op = TPORT_OP_FLASH_ATTN_EXT, .n_src = 4, .src = {q, kv16, kv16, mask}, .dst = q,
                     .note = "soft cap"};
    set_params(&c, &ext, sizeof ext);
    push(b, c);
    ext.softcap = 0.0f;
    c = (check_case){.op = TPORT_OP_FLASH_ATTN_EXT, .n_src = 5, .src = {q, kv, kv, mask, sinks}, .dst = q,
                     .note = "sinks"};
    set_params(&c, &ext, sizeof ext);
    push(b, c);
    ext.softcap = 0.5f;
    c.note = "soft cap and sinks";
    set_params(&c, &ext, sizeof ext);
    push(b, c);
}

static void copy_cases(builder *b) {
    const check_tensor f = T(TPORT_TYPE_F32, 64, 3, 1, 1);
    const tport_type_id to[] = {TPORT_TYPE_F32, TPORT_TYPE_F16, TPORT_TYPE_BF16, TPORT_TYPE_Q8_0, TPORT_TYPE_Q4_0};
    for (size_t i = 0; i < sizeof to / sizeof to[0]; i++)
        push(b, (check_case){.op = TPORT_OP_CPY, .n_src = 1, .src = {f}, .dst = T(to[i], 64, 3, 1, 1),
                             .note = "convert"});
    push(b, (check_case){.op = TPORT_OP_CPY, .n_src = 1, .src = {T(TPORT_TYPE_F16, 64, 3, 1, 1)}, .dst = f,
                         .note = "f16 to f32"});
    const check_tensor odd = T(TPORT_TYPE_F32, 9, 5, 1, 1);
    push(b, (check_case){.op = TPORT_OP_CONT, .n_src = 1, .src = {with_layout(odd, CHECK_LAYOUT_TRANSPOSED)},
                         .dst = odd, .note = "transposed"});
    push(b, (check_case){.op = TPORT_OP_CONT, .n_src = 1, .src = {with_layout(odd, CHECK_LAYOUT_PADDED)}, .dst = odd,
                         .note = "padded"});
    for (int dim = 0; dim < 2; dim++) {
        tport_params_concat p = {.dim = dim};
        check_case c = {.op = TPORT_OP_CONCAT, .n_src = 2, .src = {T(TPORT_TYPE_F32, 5, 3, 1, 1),
                                                                   T(TPORT_TYPE_F32, dim ? 5 : 2, dim ? 2 : 3, 1, 1)},
                        .dst = T(TPORT_TYPE_F32, dim ? 5 : 7, dim ? 5 : 3, 1, 1), .note = dim ? "dim 1" : "dim 0"};
        set_params(&c, &p, sizeof p);
        push(b, c);
    }
}

/* Every weight type of the type table (current and historical). */
static void weight_cases(builder *b) {
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *tr = tport_traits_at(i);
        if (!tport_type_is_weight(tr))
            continue;
        tport_type_id w = tr->info.id;
        /* rows of whole blocks: 256 for super-blocks, else 64 */
        const int64_t K = tr->info.block_size > 64 ? 256 : 64;
        /* mul_mat: odd M and N, a vector, and GQA-style broadcast */
        push(b, (check_case){.op = TPORT_OP_MUL_MAT, .n_src = 2,
                             .src = {T(w, K, 5, 1, 1), T(TPORT_TYPE_F32, K, 3, 1, 1)},
                             .dst = T(TPORT_TYPE_F32, 5, 3, 1, 1), .note = "odd"});
        push(b, (check_case){.op = TPORT_OP_MUL_MAT, .n_src = 2,
                             .src = {T(w, K, 7, 1, 1), T(TPORT_TYPE_F32, K, 1, 1, 1)},
                             .dst = T(TPORT_TYPE_F32, 7, 1, 1, 1), .note = "vector"});
        push(b, (check_case){.op = TPORT_OP_MUL_MAT, .n_src = 2,
                             .src = {T(w, K, 4, 2, 1), T(TPORT_TYPE_F32, K, 3, 4, 1)},
                             .dst = T(TPORT_TYPE_F32, 4, 3, 4, 1), .note = "broadcast dim 2"});
        if (w == TPORT_TYPE_F32)
            push(b, (check_case){.op = TPORT_OP_MUL_MAT, .n_src = 2,
                                 .src = {T(w, K, 5, 1, 1), with_layout(T(TPORT_TYPE_F32, K, 3, 1, 1), CHECK_LAYOUT_PADDED)},
                                 .dst = T(TPORT_TYPE_F32, 5, 3, 1, 1), .note = "padded src1"});
        check_tensor ids = T(TPORT_TYPE_I32, 4, 1, 1, 1);
        ids.data = CHECK_DATA_INDICES;
        ids.limit = 7;
        push(b, (check_case){.op = TPORT_OP_GET_ROWS, .n_src = 2, .src = {T(w, K, 7, 1, 1), ids},
                             .dst = T(TPORT_TYPE_F32, K, 4, 1, 1), .note = "rows"});
    }
}

int check_cases(check_case *out, int cap) {
    builder b = {.out = out, .cap = cap};
    binary_cases(&b, TPORT_OP_ADD);
    binary_cases(&b, TPORT_OP_MUL);
    unary_cases(&b);
    arch_cases(&b);
    moe_cases(&b);
    rope_cases(&b);
    attn_cases(&b);
    copy_cases(&b);
    weight_cases(&b);
    return b.n;
}

const char *check_op_name(tport_op_id op) {
    return tport_op_name(op);
}
