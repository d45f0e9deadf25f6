/*
 * tport/check.h — the conformance suite of the backend ABI, for plug-in
 * authors: what `tport check-backend` runs.
 *
 * Tiers: ABI (the plug-in negotiates with host tables of an older and a
 * newer minor and refuses another major; needs the plug-in in-process),
 * numerics (every op x type x shape case the backend claims through
 * supports_op runs on it and on the reference, the embedded CPU backend,
 * and is compared against the tolerance of the types involved) and device
 * memory (ABI 1.1: uploads, downloads, fills, copies, asynchronous
 * completion, graph-key replay).
 */
#ifndef TPORT_CHECK_H
#define TPORT_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tport/backend.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef enum tport_check_outcome {
    TPORT_CHECK_PASS = 0,
    TPORT_CHECK_FAIL = 1,
    TPORT_CHECK_NOT_CLAIMED = 2,  /* the backend's supports_op said no      */
    TPORT_CHECK_NO_REFERENCE = 3, /* claimed, but the reference cannot run it */
} tport_check_outcome;

typedef struct tport_check_result {
    const char *tier;      /* "abi" or "numerics"                          */
    char op[24];
    char types[64];        /* "q4_0 x f32 -> f32"                          */
    char shape[96];        /* "[32,5] x [32,3]" plus notes                 */
    double max_err;        /* max |out - ref| / max |ref|, -1 if n/a       */
    double tolerance;
    tport_check_outcome outcome;
    char note[160];        /* why it failed, or what was checked           */
} tport_check_result;

typedef void (*tport_check_sink)(const tport_check_result *r, void *user);

typedef struct tport_check_counts {
    int passed, failed, not_claimed, no_reference;
} tport_check_counts;

const char *tport_check_outcome_name(tport_check_outcome o); /* "pass", "FAIL", ... */

/* What is being checked, as loaded. */
typedef struct tport_check_subject {
    const char *name;
    const char *version;     /* "" when the backend says none          */
    const char *path;        /* the plug-in file, or "(embedded)"      */
    uint32_t abi_major;
    uint32_t abi_minor;      /* negotiated                             */
    int32_t score;
    bool isolated;           /* driven in its helper process: no ABI tier */
} tport_check_subject;

typedef struct tport_check_callbacks {
    /* Once, when the backend is loaded, before any result (may be NULL). */
    void (*begin)(const tport_check_subject *subject, void *user);
    tport_check_sink result; /* every case of every tier               */
    void *user;
} tport_check_callbacks;

/* Checks backend `target`: a plug-in file, or the name of an active
 * backend (checked from its file; the embedded cpu directly).  With
 * `isolated`, the active isolated backend of that name or file (the
 * caller has named it in tport_backend_isolate), through the isolation
 * proxy as a program drives it.  A plug-in file is first probed in a
 * child process, so one that crashes while loading is a message here.
 * *abi gets the ABI tier's counts (zero when isolated), *num the numerics
 * and device-memory tiers'.  A backend that fails to initialise counts as
 * one failed "init" case.  Returns TPORT_STATUS_OK when the check ran
 * (failures are in the counts), or an error when there was nothing to
 * check (tport_last_error says why).  A backend that crashes during a
 * check takes the calling process with it: run it in a child process
 * (tport check-backend does). */
tport_status tport_check_backend(const char *target, bool isolated, const tport_check_callbacks *cb,
                                 tport_check_counts *abi, tport_check_counts *num);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif
#ifdef __cplusplus
}
#endif
#endif /* TPORT_CHECK_H */
