/* Quantized dot products: none yet (every type falls back to f32). */
#include "../cpu_quant.h"

#include <stddef.h>

cpu_vec_dot_fn cpu_vec_dot_for(tport_type_id type) {
    (void)type;
    return NULL;
}
