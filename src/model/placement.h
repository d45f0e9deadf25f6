/* Private to src/model: the pieces of load-time weight placement. */
#ifndef TPORT_MODEL_PLACEMENT_H
#define TPORT_MODEL_PLACEMENT_H

#include <stdint.h>

#include "tport/backend.h"

/* The types a weight of type `from` with rows of ne0 elements can be
 * converted to, best first: lossless re-encodings (fewest bits first),
 * then lossy ones of the same family, then every other lossy target with
 * the most bits first (more bits, smaller requantization error; ties go to
 * the lower id, so f16 before bf16).  `from` itself is not listed.
 * Writes at most cap ids; returns how many there are. */
int tport_weight_conversion_targets(tport_type_id from, int64_t ne0, tport_type_id *out, int cap);

#endif
