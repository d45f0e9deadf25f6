/* The operands of a view record beyond src[4] (ABI 1.3's src_more), for
 * the host code that walks a node's operands. */
#ifndef TPORT_CORE_VIEW_SRCS_H
#define TPORT_CORE_VIEW_SRCS_H

#include <stdint.h>

#include "tport/backend.h"

/* Operands of an internal node: the view's src[4] and, since ABI 1.3,
 * src_more[2] (FLASH_ATTN_EXT's sinks are operand 4). */
#define TPORT_CORE_MAX_SRC 6

/* Operand s (0..5) of a view record: src[s], then src_more[s-4] where the
 * writer's struct_size covers it; -1 = none. */
static inline int32_t tport_view_src(const tport_tensor_view *t, int s) {
    if (s < TPORT_MAX_SRC)
        return t->src[s];
    if (t->struct_size < TPORT_TENSOR_VIEW_SIZE_1_3)
        return -1;
    return t->src_more[s - TPORT_MAX_SRC];
}
static inline void tport_view_clear_srcs(tport_tensor_view *t) {
    for (int s = 0; s < TPORT_MAX_SRC; s++)
        t->src[s] = -1;
    t->src_more[0] = t->src_more[1] = -1;
}

#endif
