/* Which keys and tensors of a file change the computation, and whether
 * the architecture implements them (the table is in arch_math.c). */
#ifndef TPORT_MODEL_ARCH_MATH_H
#define TPORT_MODEL_ARCH_MATH_H


#include <stdbool.h>
#include <stddef.h>

#include "formats/model_file.h"

struct tport_arch;

/* True when the file asks for math that `arch` does not implement; `why`
 * (cap bytes) then lists the keys and tensors, "; " between them. */
bool tport_arch_refusal(const tport_model_file *mf, const struct tport_arch *arch, char *why, size_t cap);

#endif
