/* Whether a thread that slept through a long wait should stop spinning:
 * see cpu_spin.h. */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 199309L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <stdio.h>

#include "cpu_spin.h"

_Atomic uint64_t cpu_spin_crowded_at;

/* Waits shorter than this are a wake-up's latency, not a sign of anything;
 * the run-queue time is read at most this often per thread (a read costs
 * about 9 us). */
#define LONG_WAIT_NS 1000000
/* Crowded: the thread sat runnable without a core for more than this share
 * of the time since the last reading (1/8; uncrowded, 2 threads on 2 cores
 * stay far below that: RESULTS run 10). */
#define CROWDED_SHIFT 3

/* This thread's time spent runnable but waiting for a core, in ns; false
 * when the kernel does not say. */
static bool queued_ns(uint64_t *out) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        return false;
    unsigned long long run, queued;
    bool ok = fscanf(f, "%llu %llu", &run, &queued) == 2;
    fclose(f);
    *out = queued;
    return ok;
}

void cpu_spin_slept(cpu_spin *s) {
    uint64_t now = cpu_now_ns();
    if (now - s->start < LONG_WAIT_NS || now - s->checked_at < LONG_WAIT_NS)
        return;
    uint64_t queued = 0;
    bool crowded;
    if (!queued_ns(&queued))
        crowded = true; /* cannot tell: give the core back */
    else
        crowded = s->checked_at && queued - s->queued_ns > (now - s->checked_at) >> CROWDED_SHIFT;
    s->checked_at = now;
    s->queued_ns = queued;
    if (crowded)
        atomic_store_explicit(&cpu_spin_crowded_at, now, memory_order_relaxed);
}
