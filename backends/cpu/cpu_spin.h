/* Bounded spinning, shared by the thread pool (waiting for a job or for its
 * end) and the graph barrier (waiting for a round).  A thread spins on an
 * atomic for at most its budget and then sleeps.
 *
 * The budget has two values.  Normally it is CPU_SPIN_NS, longer than a
 * sleeping thread's wake-up on a virtual machine (60-500 us, mostly
 * 100-200, on the VM of RESULTS run 10): with a shorter budget one late
 * wake-up made the other thread sleep at the next barrier, whose wake-up
 * was late again, and a token's few hundred barriers turned into a chain
 * of sleeps (2 threads slower than 1; RESULTS run 10).  When the machine
 * is crowded, more runnable threads than cores, spinning only keeps the
 * thread being waited for off its core (two 2-thread runs side by side
 * were several times slower spinning than sleeping at once; RESULTS run
 * 10), so the budget drops to CPU_SPIN_MIN_NS until no wait has found it
 * crowded for CPU_SPIN_CALM_NS.  That period is short because crowding
 * comes in bursts: tport serve's slot threads sample and send between
 * steps, and a long period kept the barrier sleeping at every phase of
 * the steps after each burst, on a machine that was no longer crowded
 * (issue 42; RESULTS run 42), while a shorter one costs two 2-thread
 * runs side by side only a few spins per period.
 *
 * A long wait alone does not say which case it is: the host preempting a
 * virtual CPU looks the same from inside.  cpu_spin_slept asks the kernel
 * instead how long this thread sat runnable without a core
 * (/proc/thread-self/schedstat); only the guest's own crowding adds to it.
 * Include after defining _POSIX_C_SOURCE (clock_gettime). */
#ifndef TPORT_CPU_SPIN_H
#define TPORT_CPU_SPIN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The two budgets, in ns, and how long the crowded one lasts. */
#define CPU_SPIN_NS 500000
#define CPU_SPIN_MIN_NS 2000
#define CPU_SPIN_CALM_NS 10000000

/* One thread's waiting state (each thread keeps its own per place it waits) */
typedef struct cpu_spin {
    uint64_t start;      /* when the current wait began */
    uint64_t checked_at; /* when this thread last read its run-queue time, or 0 */
    uint64_t queued_ns;  /* that run-queue time */
} cpu_spin;

#define CPU_SPIN_INIT {0}

/* When a wait last found the machine crowded (cpu_spin.c): crowding is the
 * machine's, so one thread's finding holds for all. */
extern _Atomic uint64_t cpu_spin_crowded_at;

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

/* Spins for at most the budget until done(arg, value); returns whether it
 * happened in time.  When not, the caller sleeps until it happens and then
 * calls cpu_spin_slept. */
static inline bool cpu_spin_until(bool (*done)(const void *arg, uint64_t value), const void *arg, uint64_t value,
                                  cpu_spin *s) {
    s->start = cpu_now_ns();
    uint64_t crowded_at = atomic_load_explicit(&cpu_spin_crowded_at, memory_order_relaxed);
    /* signed: another thread may have set it after this wait began */
    bool crowded = crowded_at && (int64_t)(s->start - crowded_at) < CPU_SPIN_CALM_NS;
    uint64_t budget = crowded ? CPU_SPIN_MIN_NS : CPU_SPIN_NS;
    for (unsigned i = 1;; i++) {
        if (done(arg, value))
            return true;
        cpu_relax(); /* sched_yield here collapsed next to CPU hogs */
        if ((i & 15) == 0 && cpu_now_ns() - s->start > budget)
            return false;
    }
}

/* Wakes every thread asleep on cond, after a condition they re-check
 * under mu has changed.  Taking and releasing mu first means each sleeper
 * that saw the old condition under mu is already waiting on cond (the
 * wait gives mu up atomically), so the broadcast reaches it; broadcasting
 * after the release rather than under mu spares the woken thread from
 * blocking at once on the mutex its waker still holds, a second sleep and
 * wake-up per wake (tport serve's steps, where the barrier sleeps at
 * every phase, spent much of their time in that convoy: issue 42).
 */
static inline void cpu_wake_all(pthread_mutex_t *mu, pthread_cond_t *cond) {
    pthread_mutex_lock(mu);
    pthread_mutex_unlock(mu);
    pthread_cond_broadcast(cond);
}

/* After a wait that outlasted the spin: notes whether the machine is
 * crowded (cpu_spin.c). */
void cpu_spin_slept(cpu_spin *s);

#endif
