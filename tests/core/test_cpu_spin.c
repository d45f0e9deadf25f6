/* The CPU backend's spin rule (backends/cpu/cpu_spin.h): a thread that
 * slept through a long wait on a crowded machine (more runnable threads
 * than cores) finds it crowded, from its own run-queue time, and from then
 * on every wait spins for microseconds only; a thread that waited without
 * competing for a core finds nothing.
 *
 * Crowding is made here with busy threads, three per core.  Whether a
 * quiet machine reads as quiet depends on what else runs (ctest -j), so
 * the quiet case checks the readings and the budget, not a verdict. */
#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 199309L
#undef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

#include "../test_util.h"
#include "cpu_spin.h"

#define MAX_HOGS 64

static atomic_bool stop;

static void *hog(void *arg) {
    (void)arg;
    volatile unsigned x = 0;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        x++;
    return NULL;
}

static bool never(const void *arg, uint64_t value) {
    (void)arg;
    (void)value;
    return false;
}

static void busy_for(uint64_t ns) {
    uint64_t t0 = cpu_now_ns();
    while (cpu_now_ns() - t0 < ns)
        cpu_relax();
}

/* A wait that began `ago` ns before now and ended now, as the pool's and
 * the barrier's waits end after a sleep. */
static void slept_since(cpu_spin *s, uint64_t ago) {
    s->start = cpu_now_ns() - ago;
    cpu_spin_slept(s);
}

int main(void) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f)
        test_skip("test_cpu_spin", "no /proc/thread-self/schedstat (the rule then always gives the core back)");
    fclose(f);

    /* A short wait never reads anything; a long one reads the baseline. */
    cpu_spin s = CPU_SPIN_INIT;
    slept_since(&s, 10000);
    CHECK(s.checked_at == 0, "a 10 us wait read the run-queue time");
    slept_since(&s, 2000000);
    CHECK(s.checked_at != 0, "a 2 ms wait did not read the run-queue time");
    CHECK(atomic_load(&cpu_spin_crowded_at) == 0, "the first reading, with no baseline, judged the machine");

    /* Not found crowded, a wait spins its full budget. */
    uint64_t t0 = cpu_now_ns();
    CHECK(!cpu_spin_until(never, NULL, 0, &s), "a wait for what never happens succeeded");
    uint64_t took = cpu_now_ns() - t0;
    CHECK(took >= CPU_SPIN_NS, "an uncrowded wait spun %llu ns, less than the budget %d", (unsigned long long)took,
          CPU_SPIN_NS);

    /* Crowded: three busy threads per core. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n_hogs = (int)(cores < 1 ? 3 : cores * 3 > MAX_HOGS ? MAX_HOGS : cores * 3);
    pthread_t hogs[MAX_HOGS];
    int started = 0;
    for (; started < n_hogs; started++)
        if (pthread_create(&hogs[started], NULL, hog, NULL) != 0)
            break;
    CHECK(started == n_hogs, "started %d of %d busy threads", started, n_hogs);

    /* each round: 5 ms of competing for a core, then a long wait ends */
    int rounds = 0;
    for (; rounds < 400 && !atomic_load(&cpu_spin_crowded_at); rounds++) {
        busy_for(5000000);
        slept_since(&s, 2000000);
    }
    CHECK(atomic_load(&cpu_spin_crowded_at) != 0, "%d busy threads on %ld cores: not found crowded in %d rounds",
          n_hogs, cores, rounds);

    /* Every thread's next wait now spins only CPU_SPIN_MIN_NS (give or take
     * a preemption: well under the full budget). */
    cpu_spin other = CPU_SPIN_INIT;
    int short_waits = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t t0 = cpu_now_ns();
        CHECK(!cpu_spin_until(never, NULL, 0, &other), "a wait for what never happens succeeded");
        if (cpu_now_ns() - t0 < CPU_SPIN_NS / 2)
            short_waits++;
    }
    CHECK(short_waits >= 3, "crowded, only %d of 5 waits were short", short_waits);

    atomic_store(&stop, true);
    for (int i = 0; i < started; i++)
        pthread_join(hogs[i], NULL);
    return test_finish("test_cpu_spin");
}
