/* Memory for re-encoded weights (cpu_repack.c): carved from large mappings
 * that ask the kernel for transparent huge pages (MADV_HUGEPAGE).  A
 * weight matrix is streamed once per token; with 4 KiB pages the hardware
 * prefetchers stop at every page boundary and each page costs a TLB walk,
 * with 2 MiB pages they do not (generation was clearly faster on a Zen 3:
 * RESULTS run 7).  Weights
 * are far smaller than a huge page each (a 768 x 768 Q4_0 matrix is 324
 * KiB), so they share arenas: bump allocation, an arena is unmapped when
 * its last block is freed.  Thread-safe: loads and frees may come from any
 * thread. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "cpu_internal.h"

#define HUGE_PAGE ((size_t)2 << 20)
#define ARENA_BYTES ((size_t)32 << 20)

struct cpu_arena {
    uint8_t *base;
    size_t size, used;
    int live; /* blocks not yet freed */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static cpu_arena *current; /* where small blocks go next */

static cpu_arena *arena_new(size_t need) {
    size_t size = need > ARENA_BYTES ? (need + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE : ARENA_BYTES;
    /* one huge page more, so that the usable part can start on a huge-page boundary */
    size_t map = size + HUGE_PAGE;
    uint8_t *p = mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uint8_t *base = (uint8_t *)(((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (base > p)
        munmap(p, (size_t)(base - p));
    size_t tail = (size_t)(p + map - (base + size));
    if (tail)
        munmap(base + size, tail);
#ifdef MADV_HUGEPAGE
    (void)madvise(base, size, MADV_HUGEPAGE); /* a hint: without THP, plain pages */
#endif
    cpu_arena *a = malloc(sizeof *a);
    if (!a) {
        munmap(base, size);
        return NULL;
    }
    *a = (cpu_arena){.base = base, .size = size};
    return a;
}

static void arena_drop(cpu_arena *a) {
    munmap(a->base, a->size);
    free(a);
}

void *cpu_arena_alloc(size_t bytes, cpu_arena **owner) {
    bytes = (bytes + 63) / 64 * 64;
    if (!bytes)
        return NULL;
    pthread_mutex_lock(&lock);
    cpu_arena *a = current;
    if (!a || a->size - a->used < bytes) {
        a = arena_new(bytes);
        if (!a) {
            pthread_mutex_unlock(&lock);
            return NULL;
        }
        if (bytes <= ARENA_BYTES / 2) /* room left for the next ones; the old one lives on */
            current = a;              /* until its last block is freed */
    }
    void *p = a->base + a->used;
    a->used += bytes;
    a->live++;
    pthread_mutex_unlock(&lock);
    *owner = a;
    return p;
}

void cpu_arena_free(cpu_arena *a) {
    if (!a)
        return;
    pthread_mutex_lock(&lock);
    if (--a->live == 0) {
        if (a == current)
            current = NULL;
        arena_drop(a);
    }
    pthread_mutex_unlock(&lock);
}
