/* The search tables of ggml's 8-element IQ lattices (iq_lattice.h says
 * what they hold), derived from the dequantization grids: IQ2 bytes
 * {8, 25, 43} and IQ1 values {-1, 0, 1} are levels 0, 1, 2. */
#include "iq_lattice.h"

#include <pthread.h>
#include <stdlib.h>

#include "iq_grids.h"

enum { KEYS = 1 << 16 };

typedef tport_iq_lattice iq2_tables;
static iq2_tables t256 = {.grid = 256}, t512 = {.grid = 512}, t1024 = {.grid = 1024}, t2048 = {.grid = 2048};
static pthread_once_t once256 = PTHREAD_ONCE_INIT, once512 = PTHREAD_ONCE_INIT, once1024 = PTHREAD_ONCE_INIT,
                      once2048 = PTHREAD_ONCE_INIT;

static int dist2(const uint8_t *g, int key) {
    int d = 0;
    for (int i = 0; i < 8; i++) {
        const int diff = 2 * g[i] - 2 * ((key >> 2 * i) & 3);
        d += diff * diff;
    }
    return d;
}

/* Keys with a level 3 are never looked up (levels are clamped to 0..2). */
static bool usable(int key) {
    for (int i = 0; i < 8; i++)
        if (((key >> 2 * i) & 3) == 3)
            return false;
    return true;
}

/* The nwant smallest distinct distances of key to the grid, ascending. */
static void nearest(const iq2_tables *t, int key, int nwant, int *want) {
    for (int w = 0; w < nwant; w++)
        want[w] = INT32_MAX;
    for (int j = 0; j < t->grid; j++) {
        int d = dist2(t->level[j], key);
        for (int w = 0; w < nwant; w++) {
            if (d == want[w])
                break;
            if (d < want[w]) {
                const int tmp = want[w];
                want[w] = d;
                d = tmp;
            }
        }
    }
}

/* Level of a grid entry's byte i, or -1. */
static int level_at(const iq2_tables *t, int j, int i) {
    if (t->grid == 2048) {
        const int8_t v = (int8_t)iq_grid_byte(tport_iq1s_grid[j], i);
        return v >= -1 && v <= 1 ? v + 1 : -1;
    }
    const uint8_t b = iq_grid_byte(t->grid == 256 ? tport_iq2xxs_grid[j]
                                   : t->grid == 512 ? tport_iq2xs_grid[j]
                                                    : tport_iq2s_grid[j], i);
    return b == 8 ? 0 : b == 25 ? 1 : b == 43 ? 2 : -1;
}

static void tables_init(iq2_tables *t) {
    const int nwant = t->grid == 2048 ? 3 : t->grid == 1024 ? 1 : 2;
    int want[3];
    for (int k = 0; k < KEYS; k++)
        t->map[k] = -1;
    for (int j = 0; j < t->grid; j++) {
        int key = 0;
        for (int i = 0; i < 8; i++) {
            const int l = level_at(t, j, i);
            if (l < 0)
                return;
            t->level[j][i] = (uint8_t)l;
            key |= l << 2 * i;
        }
        t->map[key] = j;
    }
    size_t total = 0;
    for (int key = 0; key < KEYS; key++) {
        if (t->map[key] >= 0 || !usable(key))
            continue;
        nearest(t, key, nwant, want);
        total += 1;
        for (int j = 0; j < t->grid; j++)
            total += dist2(t->level[j], key) <= want[nwant - 1];
    }
    t->neighbours = malloc(total * sizeof *t->neighbours);
    if (!t->neighbours || total > INT32_MAX)
        return;
    int32_t at = 0;
    for (int key = 0; key < KEYS; key++) {
        if (t->map[key] >= 0 || !usable(key))
            continue;
        nearest(t, key, nwant, want);
        t->map[key] = -(at + 1);
        uint16_t *count = &t->neighbours[at++];
        *count = 0;
        for (int w = 0; w < nwant; w++) /* by distance, then index */
            for (int j = 0; j < t->grid; j++)
                if (dist2(t->level[j], key) == want[w]) {
                    t->neighbours[at++] = (uint16_t)j;
                    ++*count;
                }
    }
    t->ok = true;
}

static void init256(void) { tables_init(&t256); }
static void init512(void) { tables_init(&t512); }
static void init1024(void) { tables_init(&t1024); }
static void init2048(void) { tables_init(&t2048); }

const tport_iq_lattice *tport_iq_lattice8(int grid) {
    iq2_tables *t = grid == 256 ? &t256 : grid == 512 ? &t512 : grid == 1024 ? &t1024 : grid == 2048 ? &t2048 : NULL;
    pthread_once_t *once = grid == 256 ? &once256 : grid == 512 ? &once512 : grid == 1024 ? &once1024 : &once2048;
    void (*init)(void) = grid == 256 ? init256 : grid == 512 ? init512 : grid == 1024 ? init1024 : init2048;
    if (!t || pthread_once(once, init) != 0 || !t->ok)
        return NULL;
    return t;
}

