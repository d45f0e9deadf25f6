/* Bounded, adaptive spinning, shared by the thread pool (waiting for a
 * job or for its end) and the graph barrier (waiting for a round).  A
 * thread spins on an atomic for at most its budget and then sleeps; the
 * budget adapts: a wait that finished well within it doubles it (up to
 * CPU_SPIN_NS), one that overran it, because the work was slow or because
 * this thread was preempted while spinning, halves it.  On an
 * oversubscribed machine the spins thus shrink towards plain sleeping.
 * Include after defining _POSIX_C_SOURCE (clock_gettime). */
#ifndef TPORT_CPU_SPIN_H
#define TPORT_CPU_SPIN_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Longest and shortest spin budgets, in ns (tuned on 2 cores: 100 us
 * collapsed under oversubscription, 50 us did not). */
#define CPU_SPIN_NS 50000
#define CPU_SPIN_MIN_NS 2000

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

static inline uint64_t cpu_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Spins for at most *budget ns until done(arg, value); returns whether it
 * happened in time, adapting *budget as above. */
static inline bool cpu_spin_until(bool (*done)(const void *arg, uint64_t value), const void *arg, uint64_t value,
                                  uint64_t *budget) {
    uint64_t start = cpu_now_ns();
    for (unsigned i = 1;; i++) {
        if (done(arg, value)) {
            uint64_t took = cpu_now_ns() - start;
            if (took <= *budget / 2 && *budget < CPU_SPIN_NS)
                *budget = *budget * 2 > CPU_SPIN_NS ? CPU_SPIN_NS : *budget * 2;
            else if (took > *budget && *budget > CPU_SPIN_MIN_NS)
                *budget /= 2;
            return true;
        }
        cpu_relax(); /* sched_yield here collapsed next to CPU hogs */
        if ((i & 15) == 0 && cpu_now_ns() - start > *budget) {
            if (*budget > CPU_SPIN_MIN_NS)
                *budget /= 2;
            return false;
        }
    }
}

#endif
