/* Bounded, adaptive spinning, shared by the thread pool (waiting for a
 * job or for its end) and the graph barrier (waiting for a round).  A
 * thread spins on an atomic for at most its budget and then sleeps.  The
 * budget adapts: a wait that ended well within it doubles it (up to
 * CPU_SPIN_NS); a wait that outlasted it and, sleep and wake-up included,
 * took longer than CPU_SPIN_SHORT_NS (the other thread was preempted, or
 * the machine has more threads than cores) halves it, so on an
 * oversubscribed machine the spins shrink towards plain sleeping.  A wait
 * that outlasted the budget but was short leaves it alone.
 *
 * (Halving on every overrun, as before, was bistable: one slow wake-up made
 * the next waits overrun too, each halving again, until every barrier of a
 * token slept.  A 2-layer model then generated 400-5,700 tokens/s with 2
 * threads, run to run, against 6,900 with 1; with this rule 4,000-7,500,
 * while two 2-thread runs side by side on 2 cores stay within 10-17 % of
 * the old rule's speed, where spinning 1 ms instead made them 10x slower.)
 * Include after defining _POSIX_C_SOURCE (clock_gettime). */
#ifndef TPORT_CPU_SPIN_H
#define TPORT_CPU_SPIN_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Longest and shortest spin budgets, in ns, and the longest wait that
 * still counts as short: it includes the sleep's wake-up, tens of
 * microseconds on a virtual machine, where a preempted thread is gone for
 * a time slice, milliseconds. */
#define CPU_SPIN_NS 50000
#define CPU_SPIN_MIN_NS 2000
#define CPU_SPIN_SHORT_NS 500000

typedef struct cpu_spin {
    uint64_t budget; /* ns; starts at CPU_SPIN_NS */
    uint64_t start;  /* when the current wait began */
} cpu_spin;

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

/* Spins for at most s->budget ns until done(arg, value); returns whether it
 * happened in time.  When not, the caller sleeps until it happens and then
 * calls cpu_spin_slept. */
static inline bool cpu_spin_until(bool (*done)(const void *arg, uint64_t value), const void *arg, uint64_t value,
                                  cpu_spin *s) {
    s->start = cpu_now_ns();
    for (unsigned i = 1;; i++) {
        if (done(arg, value)) {
            if (cpu_now_ns() - s->start <= s->budget / 2 && s->budget < CPU_SPIN_NS)
                s->budget = s->budget * 2 > CPU_SPIN_NS ? CPU_SPIN_NS : s->budget * 2;
            return true;
        }
        cpu_relax(); /* sched_yield here collapsed next to CPU hogs */
        if ((i & 15) == 0 && cpu_now_ns() - s->start > s->budget)
            return false;
    }
}

/* After a wait that outlasted the spin: a long one halves the budget. */
static inline void cpu_spin_slept(cpu_spin *s) {
    if (cpu_now_ns() - s->start > CPU_SPIN_SHORT_NS && s->budget / 2 >= CPU_SPIN_MIN_NS)
        s->budget /= 2;
}

#endif
