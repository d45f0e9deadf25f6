/* Shared-memory regions: a memfd the host creates, sizes, seals (so the
 * helper can neither shrink it under the host's feet nor grow it), maps,
 * passes once to the helper and closes.  Nothing has a name in the file
 * system: when both mappings are gone the memory is gone.
 *
 * Weights are the exception: a weights buffer written whole from a file
 * mapping (the model file) shares that file's pages, mapped read-only on
 * both sides, instead of a copy; the file is checked to be the one mapped
 * (device and inode).  Written again, it becomes shared memory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/error.h"
#include "isolate/internal.h"

#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 2u
#endif

static bool size_ok(iso_proxy *p, uint64_t size) {
    if (p->lost) {
        tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s was lost", p->name);
        return false;
    }
    if (size == 0 || size > ((uint64_t)1 << 46)) {
        tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: buffer of %llu bytes", p->name,
                    (unsigned long long)size);
        return false;
    }
    return true;
}

/* Maps a sealed memfd of `size` bytes as region id, here and in the helper. */
static bool map_memfd(iso_proxy *p, uint32_t id, uint64_t size, bool populate) {
    int fd = memfd_create("tport-isolate", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "isolated %s: memfd_create: %s", p->name, strerror(errno));
        return false;
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
        return false;
    }
    iso_map m = {.region = id, .flags = populate ? ISO_MAP_POPULATE : 0, .size = size};
    bool ok = iso_call(p, ISO_MAP, &m, sizeof m, NULL, 0, fd, "mapping a buffer", NULL);
    close(fd);
    if (!ok) {
        munmap(base, (size_t)size);
        return false;
    }
    p->regions[id] = (iso_region){.base = base, .size = size, .map_base = base, .map_len = size, .used = true};
    return true;
}

uint32_t iso_region_new(iso_proxy *p, uint64_t size, bool populate) {
    if (!size_ok(p, size))
        return 0;
    uint32_t id = iso_region_take(p);
    if (!id) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "isolated %s: too many buffers", p->name);
        return 0;
    }
    return map_memfd(p, id, size, populate) ? id : 0;
}

uint32_t iso_region_new_deferred(iso_proxy *p, uint64_t size) {
    if (!size_ok(p, size))
        return 0;
    uint32_t id = iso_region_take(p);
    if (!id) {
        tport_error(TPORT_STATUS_OUT_OF_MEMORY, "isolated %s: too many buffers", p->name);
        return 0;
    }
    p->regions[id] = (iso_region){.size = size, .used = true, .deferred = true};
    return id;
}

/* Drops region id's mapping here and in the helper (the id stays taken). */
static void unmap_one(iso_proxy *p, uint32_t id) {
    iso_region *r = &p->regions[id];
    if (r->map_base) {
        munmap(r->map_base, (size_t)r->map_len);
        if (!p->lost) {
            uint32_t region = id;
            iso_call(p, ISO_UNMAP, &region, sizeof region, NULL, 0, -1, "unmapping a buffer", NULL);
        }
    }
    r->base = NULL;
    r->map_base = NULL;
    r->map_len = 0;
}

bool iso_region_make_writable(iso_proxy *p, uint32_t id) {
    iso_region *r = iso_region_get(p, id);
    if (!r || r->device)
        return false;
    if (!r->deferred && !r->file)
        return r->base != NULL;
    const uint64_t size = r->size;
    const bool was_file = r->file;
    unsigned char *old = NULL;
    if (was_file && r->base) { /* keep the bytes: a copy before the file pages go */
        old = malloc((size_t)size);
        if (!old) {
            tport_error(TPORT_STATUS_OUT_OF_MEMORY, "out of memory");
            return false;
        }
        memcpy(old, r->base, (size_t)size);
    }
    unmap_one(p, id);
    bool ok = map_memfd(p, id, size, true);
    if (ok && old)
        memcpy(p->regions[id].base, old, (size_t)size);
    free(old);
    if (!ok) /* the id stays taken, without memory */
        p->regions[id] = (iso_region){.size = size, .used = true, .deferred = true};
    return ok;
}

/* The file behind [src, src+size) if one readable mapping of this process
 * holds all of it: its path, device and inode, and the file offset of src. */
static bool file_behind(const void *src, uint64_t size, char *path, size_t cap, unsigned *maj, unsigned *min,
                        unsigned long *ino, uint64_t *offset) {
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return false;
    const uintptr_t at = (uintptr_t)src;
    char line[4096 + 128];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long start, end, off;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &start, &end, perms, &off, maj, min, ino, &pos) < 7)
            continue;
        if (at < start || at >= end || size > end - at)
            continue;
        const char *name = line + pos;
        size_t n = strcspn(name, "\n");
        if (perms[0] != 'r' || *ino == 0 || name[0] != '/' || n >= cap || strstr(name, " (deleted)"))
            break; /* not a plain file mapping */
        memcpy(path, name, n);
        path[n] = '\0';
        *offset = off + (at - start);
        found = true;
    }
    fclose(f);
    return found;
}

bool iso_region_share_file(iso_proxy *p, uint32_t id, const void *src, uint64_t size) {
    iso_region *r = iso_region_get(p, id);
    char path[4096];
    unsigned maj = 0, min = 0;
    unsigned long ino = 0;
    uint64_t offset = 0;
    if (!r || !r->deferred || size != r->size || p->lost ||
        !file_behind(src, size, path, sizeof path, &maj, &min, &ino, &offset))
        return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return false;
    const long page = sysconf(_SC_PAGESIZE);
    const uint64_t aligned = offset & ~(uint64_t)(page - 1), delta = offset - aligned;
    void *map = MAP_FAILED;
    /* the very file that is mapped (not one renamed over it since) */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino && major(st.st_dev) == maj &&
        minor(st.st_dev) == min && (uint64_t)st.st_size >= offset + size)
        map = mmap(NULL, (size_t)(delta + size), PROT_READ, MAP_SHARED, fd, (off_t)aligned);
    if (map == MAP_FAILED) {
        close(fd);
        return false;
    }
    iso_map m = {.region = id, .flags = ISO_MAP_FILE | ISO_MAP_POPULATE, .size = size, .file_offset = aligned,
                 .delta = delta};
    bool ok = iso_call(p, ISO_MAP, &m, sizeof m, NULL, 0, fd, "mapping a weight", NULL);
    close(fd);
    if (!ok) {
        munmap(map, (size_t)(delta + size));
        return false;
    }
    p->regions[id] = (iso_region){.base = (unsigned char *)map + delta, .size = size, .map_base = map,
                                  .map_len = delta + size, .used = true, .file = true};
    return true;
}

uint32_t iso_region_new_device(iso_proxy *p, uint64_t size, uint32_t kind, uint32_t usage) {
    if (p->lost) {
        tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s was lost", p->name);
        return 0;
    }
    uint32_t id = size ? iso_region_take(p) : 0;
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

void iso_region_free(iso_proxy *p, uint32_t id) {
    iso_region *r = iso_region_get(p, id);
    if (!r)
        return;
    if (r->device && !p->lost) {
        uint32_t region = id;
        iso_call(p, ISO_BUF_FREE, &region, sizeof region, NULL, 0, -1, "buffer_free", NULL);
    }
    unmap_one(p, id);
    p->regions[id] = (iso_region){0};
}
