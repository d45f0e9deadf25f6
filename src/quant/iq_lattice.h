/* The search tables of ggml's 8-element IQ lattices (iq_lattice.c):
 * IQ2_XXS (256 entries), IQ2_XS (512), IQ2_S (1024), IQ1_S/IQ1_M (2048).
 * Each grid entry is 8 levels 0..2; 8 levels make the 16-bit key
 * sum l_i << 2i.  map[key] is the entry's index for a key on the grid,
 * else -(offset + 1) of its neighbour list in neighbours[]: a count, then
 * the entries at the nwant smallest squared distances (in 2l + 1 units;
 * nwant 2, 2, 1, 3 as ggml's iq2xs_init_impl), by distance then index. */
#ifndef TPORT_QUANT_IQ_LATTICE_H
#define TPORT_QUANT_IQ_LATTICE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct tport_iq_lattice {
    int grid;
    uint8_t level[2048][8];
    int32_t map[1 << 16];
    uint16_t *neighbours; /* allocated once, never freed */
    bool ok;
} tport_iq_lattice;

/* The tables of the grid with that many entries, built on first use
 * (thread-safe); NULL for another size or when out of memory. */
const tport_iq_lattice *tport_iq_lattice8(int grid);

#endif
