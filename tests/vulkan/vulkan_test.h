/* Shared by the Vulkan tests: find the plug-in, or say why not.  Outside CI
 * a missing plug-in or device is a skip; with CI=true it is a failure, so
 * CI cannot pass without having run the tests on a device. */
#ifndef TPORT_VULKAN_TEST_H
#define TPORT_VULKAN_TEST_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../test_util.h"

static inline bool vulkan_test_in_ci(void) {
    const char *ci = getenv("CI");
    return ci && (!strcmp(ci, "true") || !strcmp(ci, "1"));
}

/* Skips (exit 77), or under CI=true fails (exit 1), with the reason. */
static inline void vulkan_test_unavailable(const char *name, const char *why) {
    if (vulkan_test_in_ci()) {
        printf("%s: FAILED: %s (CI=true: the Vulkan tests must run)\n", name, why);
        exit(1);
    }
    test_skip(name, why);
}

#endif
