/* Tiny test harness shared by every test program: CHECK counts failures,
 * test_finish prints the summary line and returns the exit status.
 * A test whose data is missing calls test_skip(), which prints "skipped"
 * and exits 77 (ctest reports it as skipped, never as passed). */
#ifndef TPORT_TEST_UTIL_H
#define TPORT_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_checks, test_failures;

#define CHECK(cond, ...)                                               \
    do {                                                               \
        test_checks++;                                                 \
        if (!(cond)) {                                                 \
            test_failures++;                                           \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,     \
                    __LINE__, #cond);                                  \
            fprintf(stderr, __VA_ARGS__);                              \
            fputc('\n', stderr);                                       \
        }                                                              \
    } while (0)

static inline int test_finish(const char *name) {
    printf("%s: %d checks, %d failed\n", name, test_checks, test_failures);
    return test_failures ? 1 : 0;
}

static inline void test_skip(const char *name, const char *why) {
    printf("%s: skipped (%s)\n", name, why);
    exit(77);
}

/* Path of a file under ../shared (TPORT_SHARED_DIR), or NULL if absent. */
static inline const char *test_shared_path(const char *rel, char *buf, size_t cap) {
    const char *dir = getenv("TPORT_SHARED_DIR");
    if (!dir)
        dir = "../shared";
    snprintf(buf, cap, "%s/%s", dir, rel);
    FILE *f = fopen(buf, "rb");
    if (!f)
        return NULL;
    fclose(f);
    return buf;
}

/* Deterministic random numbers for tests (xorshift64*). */
static inline unsigned long long test_rng_next(unsigned long long *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}
static inline float test_rng_uniform(unsigned long long *s) { /* [-1, 1) */
    return (float)((double)(test_rng_next(s) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

#endif
