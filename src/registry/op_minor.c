/* Which ABI minor defined each op id: a plug-in that negotiated an older
 * minor cannot read that op's operands or parameters, so the host never
 * asks it about such a node (DESIGN.md, "Minor versions add operation
 * parameters safely"). */
#include "registry.h"

uint32_t tport_op_since_minor(tport_op_id op) {
    if (op <= TPORT_OP_CONCAT)
        return 0;
    if (op <= TPORT_OP_SOFT_MAX_EXT || op == TPORT_OP_FLASH_ATTN)
        return 1;
    /* 1.4: grouped expert routing */
    if (op == TPORT_OP_EXPERT_GROUPS)
        return 4;
    /* 1.3: 21 and 33..35 (RoPE and attention extensions), 22..31 (mixture
     * of experts), 49..55 (their fused ops) */
    if ((op >= 21 && op <= 35) || (op >= 49 && op <= 55))
        return 3;
    return UINT32_MAX; /* an id no minor of this host defines */
}

bool tport_backend_knows_op(const tport_active_backend *b, tport_op_id op) {
    uint32_t since = tport_op_since_minor(op);
    return b && since != UINT32_MAX && b->abi_minor >= since;
}
