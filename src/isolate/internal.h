/* The proxy of one isolated plug-in: its helper process, the shared-memory
 * regions both sides map, and what the host caches to keep round trips
 * off the per-token path.  Internal to src/isolate. */
#ifndef TPORT_ISOLATE_INTERNAL_H
#define TPORT_ISOLATE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "isolate/protocol.h"
#include "isolate/wire.h"
#include "tport/backend.h"

typedef struct iso_region {
    unsigned char *base; /* host address of byte 0; NULL when free or unmapped */
    uint64_t size;
    void *map_base;      /* what to munmap (a file mapping starts before base) */
    uint64_t map_len;
    bool deferred;       /* a weights buffer with no memory until it is written */
    bool file;           /* read-only pages of the model file, shared        */
    bool used;           /* the id is taken (a host buffer may outlive the mapping) */
    bool device;         /* a buffer of the plug-in's own memory, in the helper */
} iso_region;

/* A weight the 1.0 path handed over in host memory, uploaded once. */
typedef struct iso_weight {
    uintptr_t ptr;   /* host address; 0 = empty slot */
    uint64_t extent;
    uint64_t sample; /* hash of a few spots, to notice reused addresses */
    uint32_t region;
    uint64_t offset;
} iso_weight;

/* A merged range of host memory staged for one compute. */
typedef struct iso_span {
    uintptr_t start, end;
    uint64_t offset; /* in the scratch region */
    bool written;    /* holds a node's result: copied back */
} iso_span;

typedef struct iso_bytes {
    unsigned char *p;
    size_t len, cap;
} iso_bytes;

typedef struct iso_proxy {
    pthread_mutex_t lock;
    char name[64];  /* the plug-in's name, or its file until loaded */
    char stage[32]; /* the helper's last reported step while loading */
    pid_t pid;
    int sock;
    uint32_t seq;
    bool lost;
    /* Who reports a loss: the proxy itself (ISO_REPORT_LINE: calls whose
     * caller gets no status), or the caller, from the recorded error
     * (compute: the scheduler adds the split; other status calls: the
     * error names the call). */
    int report;
    bool refused;     /* ended over a protocol version mismatch            */
    bool device_mode; /* the plug-in has memory of its own: buffers live there */
    uint32_t xfer;    /* shared region data crosses through in device mode */
    long long timeout_ms;      /* TPORT_COMPUTE_TIMEOUT: every call ...        */
    long long load_timeout_ms; /* ... but loading and init: TPORT_PROBE_TIMEOUT */
    uint64_t n_compute;
    iso_buf rx;
    /* regions, by id (0 unused) */
    iso_region *regions;
    uint32_t n_regions; /* ids below this were handed out */
    /* devices as the plug-in described them */
    int32_t device_count, n_devices;
    iso_device devices[ISO_MAX_DEVICES];
    /* the 1.0 path: weights uploaded once, host memory staged per compute */
    iso_weight *weights;
    uint32_t weights_cap, weights_n;
    uint32_t arena;           /* region of the current weight chunk (0: none) */
    uint64_t arena_used;
    uint32_t scratch;         /* region for staged host memory (0: none) */
    iso_span *spans;
    uint32_t spans_cap, spans_n;
    iso_span *backs;          /* node results to copy back after compute */
    uint32_t backs_cap, backs_n;
    /* supports_op answers by structure hash (0 = empty) */
    uint64_t *sup_keys;
    uint8_t *sup_vals;
    uint32_t sup_n;
    /* encoding scratch */
    iso_bytes enc, blob;
    int32_t *remap, *order; /* -1 / tensors marked for the current message */
    uint8_t *is_node;
    int32_t n_marked;
    uint32_t remap_cap;
} iso_proxy;

enum { ISO_REPORT_LINE = 0, ISO_REPORT_CAUSE = 1, ISO_REPORT_CAUSE_AND_CALL = 2 };

/* ---- region_table.c -------------------------------------------------------- */
/* A free id in the table (grown as needed), or 0 when none is left. */
uint32_t iso_region_take(iso_proxy *p);
/* The region for a handle, or NULL. */
iso_region *iso_region_get(iso_proxy *p, uint64_t id);
/* Unmaps every region (the helper is gone); ids stay taken. */
void iso_region_unmap_all(iso_proxy *p);
void iso_region_release_all(iso_proxy *p);

/* ---- channel.c ------------------------------------------------------------- */
/* One request and its reply (payload in p->rx.p, *size bytes).  On any
 * failure the helper is lost (killed, reaped, reported) and false comes
 * back with TPORT_STATUS_DEVICE_LOST recorded as the error. */
bool iso_call(iso_proxy *p, uint16_t type, const void *a, size_t na, const void *b, size_t nb, int fd,
              const char *during, uint32_t *size);
/* Marks p lost with a cause; kills and reaps the helper.  Reports it as
 * p->report says: the one line "tport: backend NAME lost: CAUSE during
 * CALL" on stderr, or only the recorded error for a caller that reports
 * (the scheduler's line then names the split). */
void iso_lose(iso_proxy *p, bool peer_gone, const char *cause, const char *during);
/* Records the error of a call on a proxy already lost. */
void iso_lost_error(const iso_proxy *p);
/* Copies n bytes of the helper's text, '?' for anything not printable. */
void iso_copy_text(char *dst, size_t cap, const unsigned char *src, size_t n);

/* ---- region.c -------------------------------------------------------------- */
/* A new shared region of `size` bytes mapped here and in the helper; 0 on
 * failure (an error is recorded; a lost helper is reported).  `populate`:
 * the whole region will be written and read (weights), so both sides map
 * it in one go instead of a page fault per page. */
uint32_t iso_region_new(iso_proxy *p, uint64_t size, bool populate);
void iso_region_free(iso_proxy *p, uint32_t id);
/* A weights buffer whose memory is chosen at its first upload: the model
 * file's own pages when the bytes come whole from a file mapping (no copy,
 * nothing resident twice), shared memory otherwise.  0 on failure. */
uint32_t iso_region_new_deferred(iso_proxy *p, uint64_t size);
/* Gives a deferred or file-backed region writable shared memory (keeping
 * its bytes); false on failure. */
bool iso_region_make_writable(iso_proxy *p, uint32_t id);
/* Upload into a deferred region: shares the file pages when src is
 * [offset 0, whole size) of a file mapping; true when done that way. */
bool iso_region_share_file(iso_proxy *p, uint32_t id, const void *src, uint64_t size);
/* A buffer of the plug-in's own memory (device mode); 0 on failure. */
uint32_t iso_region_new_device(iso_proxy *p, uint64_t size, uint32_t kind, uint32_t usage);

/* ---- graph.c --------------------------------------------------------------- */
/* Bytes a tensor spans from its first byte (0 if a dimension is empty);
 * false for an unknown type or an overflow. */
bool iso_extent(uint32_t type, const int64_t ne[4], const uint64_t nb[4], uint64_t *bytes);
/* The structure hash of node `node` of g and its sources (what supports_op
 * answers are cached by); marks them for iso_encode_supports. */
tport_status iso_supports_key(iso_proxy *p, const tport_graph_view *g, int32_t node, uint64_t *key);
/* Encodes the node and sources iso_supports_key marked into p->enc. */
tport_status iso_encode_supports(iso_proxy *p, const tport_graph_view *g, int32_t node);
/* Encodes the nodes of g for compute into p->enc; host memory is staged
 * into the scratch region (weights once into the arena). */
tport_status iso_encode_compute(iso_proxy *p, const tport_graph_view *g);
/* After a successful compute: copies staged results back to host memory. */
void iso_stage_copy_back(iso_proxy *p);
/* supports_op answers by structure hash: 0/1, or -1 when not known. */
int iso_supports_cached(iso_proxy *p, uint64_t key);
void iso_supports_store(iso_proxy *p, uint64_t key, bool yes);

#endif
