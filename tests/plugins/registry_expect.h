/* Shared by the registry tests: look a candidate up in the registry's
 * report and check its status and reason. */
#ifndef TPORT_TEST_REGISTRY_EXPECT_H
#define TPORT_TEST_REGISTRY_EXPECT_H

#include <stdbool.h>
#include <string.h>

#include "../test_util.h"
#include "registry/registry.h"

/* The report entry whose path ends with `file`, or false. */
static inline bool find_candidate(const char *file, tport_candidate_report *out) {
    int n = tport_registry_candidate_count();
    size_t fl = strlen(file);
    for (int i = 0; i < n; i++) {
        tport_registry_candidate(i, out);
        size_t pl = strlen(out->path);
        if (pl >= fl && !strcmp(out->path + pl - fl, file))
            return true;
    }
    return false;
}

static inline void expect(const char *file, tport_candidate_status status, const char *reason_part) {
    tport_candidate_report r;
    if (!find_candidate(file, &r)) {
        CHECK(false, "%s is not in the report", file);
        return;
    }
    CHECK(r.status == status, "%s: status %s, expected %s (reason: %s)", file, tport_candidate_status_name(r.status),
          tport_candidate_status_name(status), r.reason);
    if (reason_part)
        CHECK(strstr(r.reason, reason_part) != NULL, "%s: reason '%s' lacks '%s'", file, r.reason, reason_part);
}

#endif
