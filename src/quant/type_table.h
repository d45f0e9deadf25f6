/* The table of every tensor type tensorport knows: today's ggml types and
 * every historical layout revision.  One row per type id. */
#ifndef TPORT_QUANT_TYPE_TABLE_H
#define TPORT_QUANT_TYPE_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/types.h" /* the table's rows and lookups */

#endif
