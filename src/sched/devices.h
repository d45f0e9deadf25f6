/* Device memory as the scheduler keeps it (ABI 1.1): one "memory space"
 * per backend whose device has memory of its own, plus the host (space 0,
 * shared by the CPU, blas and every 1.0 plug-in).  Everything here runs
 * under the scheduler's lock. */
#ifndef TPORT_SCHED_DEVICES_H
#define TPORT_SCHED_DEVICES_H

#include <stdbool.h>
#include <stdint.h>

#include "registry/registry.h"

#define SCHED_MAX_SPACES 8 /* the host and up to 7 devices */
#define SCHED_HOST 0

typedef struct sched_space {
    const tport_active_backend *b; /* NULL for the host                   */
    tport_buffer compute;          /* mirrors the host arena, then staged leaves */
    uint64_t compute_size;
    tport_ticket last;             /* newest ticket of the device, 0 = idle */
} sched_space;

/* The space of backend b (SCHED_HOST for host-memory backends), or -1 if
 * every device slot is taken. */
int sched_space_of(const tport_active_backend *b);
sched_space *sched_space_get(int space);

/* Makes the space's compute buffer at least `size` bytes. */
tport_status sched_space_reserve(int space, uint64_t size);

/* Waits for everything submitted to the space (no-op for the host).  A
 * timeout or a lost device marks the backend lost. */
tport_status sched_space_drain(int space);
tport_status sched_drain_all(void);

/* Waits for one ticket of backend b, TPORT_COMPUTE_TIMEOUT seconds at most. */
tport_status sched_wait_ticket(const tport_active_backend *b, tport_ticket ticket);

/* Lost backends are never chosen again in this process. */
bool sched_backend_lost(const tport_active_backend *b);
/* Marks b lost and records why; returns TPORT_STATUS_DEVICE_LOST with the
 * message "backend NAME lost: WHY". */
tport_status sched_mark_lost(const tport_active_backend *b, const char *why);
/* A backend status that means the device is gone (lost or timed out). */
bool sched_status_is_loss(tport_status st);

/* Remembers a graph key handed to b; tells b to forget the oldest when the
 * ring is full. */
void sched_note_key(const tport_active_backend *b, uint64_t key);

/* Frees compute buffers and forgets keys (the registry's shutdown hook). */
void sched_release_devices(void);

/* Seconds a wait may take (TPORT_COMPUTE_TIMEOUT, default 30). */
uint64_t sched_timeout_ns(void);

#endif
