/* Shared-memory regions: a memfd the host creates, sizes, seals (so the
 * helper can neither shrink it under the host's feet nor grow it), maps,
 * passes once to the helper and closes.  Nothing has a name in the file
 * system: when both mappings are gone the memory is gone. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "isolate_internal.h"

#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 2u
#endif

static uint32_t take_id(iso_proxy *p) {
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

uint32_t iso_region_new(iso_proxy *p, uint64_t size, bool populate) {
    if (p->lost) {
        tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s was lost", p->name);
        return 0;
    }
    if (size == 0 || size > ((uint64_t)1 << 46)) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: buffer of %llu bytes", p->name,
                    (unsigned long long)size);
        return 0;
    }
    uint32_t id = take_id(p);
    if (!id) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "isolated %s: too many buffers", p->name);
        return 0;
    }
    int fd = memfd_create("tport-isolate", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "isolated %s: memfd_create: %s", p->name, strerror(errno));
        return 0;
    }
    void *base = MAP_FAILED;
    if (ftruncate(fd, (off_t)size) == 0 &&
        fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0)
        base = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
    if (base == MAP_FAILED) {
        int e = errno;
        close(fd);
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "isolated %s: %llu bytes of shared memory: %s", p->name,
                    (unsigned long long)size, strerror(e));
        return 0;
    }
    iso_map m = {.region = id, .flags = populate ? ISO_MAP_POPULATE : 0, .size = size};
    bool ok = iso_call(p, ISO_MAP, &m, sizeof m, NULL, 0, fd, "mapping a buffer", NULL);
    close(fd);
    if (!ok) {
        munmap(base, (size_t)size);
        return 0;
    }
    p->regions[id] = (iso_region){.base = base, .size = size, .used = true};
    return id;
}

uint32_t iso_region_new_device(iso_proxy *p, uint64_t size, uint32_t kind, uint32_t usage) {
    if (p->lost) {
        tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s was lost", p->name);
        return 0;
    }
    uint32_t id = size ? take_id(p) : 0;
    if (!id) {
        tport_error(size ? TPORT_STATUS_OUT_OF_MEMORY : TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: no buffer id",
                    p->name);
        return 0;
    }
    iso_buf_req q = {.region = id, .kind = kind, .usage = usage, .size = size};
    uint32_t n = 0;
    if (!iso_call(p, ISO_BUF_ALLOC, &q, sizeof q, NULL, 0, -1, "buffer_alloc", &n))
        return 0;
    iso_status r;
    if (n < sizeof r) {
        iso_lose(p, false, "malformed buffer_alloc reply, killed", "buffer_alloc");
        return 0;
    }
    memcpy(&r, p->rx.p, sizeof r);
    if (r.status != TPORT_STATUS_OK) {
        tport_error(r.status == TPORT_STATUS_OUT_OF_MEMORY ? r.status : TPORT_STATUS_OUT_OF_MEMORY,
                    "isolated %s: buffer_alloc of %llu bytes failed (status %d)", p->name, (unsigned long long)size,
                    (int)r.status);
        return 0;
    }
    p->regions[id] = (iso_region){.size = size, .used = true, .device = true};
    return id;
}

iso_region *iso_region_get(iso_proxy *p, uint64_t id) {
    if (id == 0 || id >= p->n_regions || !p->regions[id].used)
        return NULL;
    return &p->regions[id];
}

void iso_region_free(iso_proxy *p, uint32_t id) {
    iso_region *r = iso_region_get(p, id);
    if (!r)
        return;
    if (r->device && !p->lost) {
        uint32_t region = id;
        iso_call(p, ISO_BUF_FREE, &region, sizeof region, NULL, 0, -1, "buffer_free", NULL);
    }
    if (r->base) {
        munmap(r->base, (size_t)r->size);
        r->base = NULL;
        if (!p->lost) {
            uint32_t region = id;
            iso_call(p, ISO_UNMAP, &region, sizeof region, NULL, 0, -1, "unmapping a buffer", NULL);
        }
    }
    *r = (iso_region){0};
}

void iso_region_unmap_all(iso_proxy *p) {
    for (uint32_t i = 1; i < p->n_regions; i++)
        if (p->regions[i].base) {
            munmap(p->regions[i].base, (size_t)p->regions[i].size);
            p->regions[i].base = NULL;
        }
}

void iso_region_release_all(iso_proxy *p) {
    iso_region_unmap_all(p);
    free(p->regions);
    p->regions = NULL;
    p->n_regions = 0;
}
