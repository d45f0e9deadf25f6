/* Keys of a graph view: see view_keys.c. */
#ifndef TPORT_CORE_VIEW_KEYS_H
#define TPORT_CORE_VIEW_KEYS_H

#include "tport/backend.h"

/* Sets part->graph_key (ops, types, shapes, strides, parameters and where
 * weights live, of the n nodes and their sources) and part->bind_key
 * (where every other operand lives: host address, buffer and offset).
 * Neither is ever 0. */
void tport_view_keys(tport_graph_view *part, const int32_t *nodes, int n);

#endif
