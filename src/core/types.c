/* Public type functions, on top of the type table in src/quant. */
#include <string.h>

#include "quant/type_table.h"
#include "tensor.h"

const tport_type_info *tport_type_get(tport_type_id type) {
    const tport_type_traits *t = tport_traits(type);
    return t ? &t->info : NULL;
}

int64_t tport_type_from_name(const char *name) {
    if (!name)
        return -1;
    for (int i = 0; i < tport_traits_count(); i++) {
        const tport_type_traits *t = tport_traits_at(i);
        if (t && t->info.name && !strcmp(t->info.name, name))
            return t->info.id;
    }
    return -1;
}

size_t tport_row_size(tport_type_id type, int64_t n) {
    const tport_type_traits *t = tport_traits(type);
    if (!t || n < 0 || t->info.block_size <= 0 || n % t->info.block_size)
        return 0;
    return (size_t)(n / t->info.block_size) * t->info.block_bytes;
}

size_t tport_type_block_bytes(tport_type_id type) {
    const tport_type_traits *t = tport_traits(type);
    return t ? t->info.block_bytes : 0;
}

int64_t tport_type_block_size(tport_type_id type) {
    const tport_type_traits *t = tport_traits(type);
    return t ? t->info.block_size : 0;
}

const char *tport_type_name(tport_type_id type) {
    const tport_type_traits *t = tport_traits(type);
    return t && t->info.name ? t->info.name : "unknown";
}

const char *tport_op_name(tport_op_id op) {
    static const char *const names[] = {
        "none", "get_rows", "add", "mul", "scale", "mul_mat", "rms_norm", "norm",
        "rope", "soft_max", "silu", "gelu", "swiglu", "cpy", "cont", "concat",
    };
    if (op == TPORT_OP_FLASH_ATTN)
        return "flash_attn";
    if (op == TPORT_OP_FLASH_ATTN_EXT)
        return "flash_attn_ext";
    if (op == TPORT_OP_ROPE_EXT)
        return "rope_ext";
    /* ids 16..47: the ops of the architectures beyond llama */
    static const char *const arch_names[] = {"gelu_f16", "gelu_erf", "tanh", "clamp", "soft_max_ext"};
    if (op >= 16 && op - 16 < sizeof arch_names / sizeof arch_names[0])
        return arch_names[op - 16];
    /* ids 22..27: mixture of experts (1.3) */
    static const char *const moe_names[] = {"mul_mat_id", "argsort_top_k", "sigmoid", "sum_rows",
                                            "div",        "add_id",        "swiglu_oai"};
    if (op >= 22 && op - 22 < sizeof moe_names / sizeof moe_names[0])
        return moe_names[op - 22];
    if (op == TPORT_OP_EXPERT_GROUPS)
        return "expert_groups";
    return op < sizeof names / sizeof names[0] ? names[op] : "unknown";
}
