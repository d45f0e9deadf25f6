/* The table of one proxy's regions, by id: taking an id, finding a
 * region, and dropping the host's mappings (no message: the helper is gone
 * or going).  Below the channel (a lost helper takes its mappings with
 * it) and the regions' life cycle in region.c. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "isolate/internal.h"

uint32_t iso_region_take(iso_proxy *p) {
    for (uint32_t i = 1; i < p->n_regions; i++)
        if (!p->regions[i].used)
            return i;
    if (p->n_regions >= ISO_MAX_REGIONS)
        return 0;
    uint32_t n = p->n_regions ? p->n_regions : 1;
    iso_region *r = realloc(p->regions, (size_t)(n + 1) * sizeof *r);
    if (!r)
        return 0;
    p->regions = r;
    memset(&r[n], 0, sizeof r[n]);
    if (!p->n_regions)
        memset(&r[0], 0, sizeof r[0]);
    p->n_regions = n + 1;
    return n;
}

iso_region *iso_region_get(iso_proxy *p, uint64_t id) {
    if (id == 0 || id >= p->n_regions || !p->regions[id].used)
        return NULL;
    return &p->regions[id];
}

void iso_region_unmap_all(iso_proxy *p) {
    for (uint32_t i = 1; i < p->n_regions; i++)
        if (p->regions[i].map_base) {
            munmap(p->regions[i].map_base, (size_t)p->regions[i].map_len);
            p->regions[i].base = NULL;
            p->regions[i].map_base = NULL;
        }
}

void iso_region_release_all(iso_proxy *p) {
    iso_region_unmap_all(p);
    free(p->regions);
    p->regions = NULL;
    p->n_regions = 0;
}
