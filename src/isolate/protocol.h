/* The messages between the host and tport-backend-host, the helper process
 * that runs one isolated plug-in (docs/writing-a-backend.md, section 10).
 *
 * Both ends are on one machine, so fields are in native byte order; what
 * must match is the protocol version, carried in every message header.  A
 * peer of another version is refused with a message naming both.
 *
 * Every request gets exactly one reply of the same type with
 * ISO_MSG_REPLY set and the same sequence number; during loading the
 * helper may send STAGE messages first (the step it is about to take, so
 * a crash can be attributed).  Every length is checked by the receiver.
 *
 * Tensor data never travels in messages: it lives in shared-memory regions
 * (memfds the host creates, seals against resizing and passes once with
 * SCM_RIGHTS); a tensor record names (region, offset). */
#ifndef TPORT_ISOLATE_PROTOCOL_H
#define TPORT_ISOLATE_PROTOCOL_H

#include <stdint.h>

#ifndef TPORT_ISOLATE_PROTOCOL
#define TPORT_ISOLATE_PROTOCOL 2 /* 2: iso_tensor src[6] (ABI 1.3) */
#endif

#define ISO_MAGIC 0x48495054u /* "TPIH" */
#define ISO_MSG_REPLY 0x8000u
/* Largest payload either side accepts (a graph of ~200k tensor records). */
#define ISO_PAYLOAD_MAX (32u << 20)
#define ISO_MAX_STAGES 64      /* STAGE messages before one reply        */
#define ISO_MAX_DEVICES 16
#define ISO_MAX_REGIONS 65536  /* live shared-memory regions per helper  */
#define ISO_MAX_TENSORS (1 << 20)
#define ISO_MAX_THREADS 4096
#define ISO_NAME_MAX 64        /* names in records, bytes incl. NUL      */
#define ISO_PARAMS_MAX 256     /* op parameter block, bytes              */
#define ISO_TEXT_MAX 256       /* messages and reasons, bytes incl. NUL  */

typedef struct iso_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t size; /* payload bytes after the header */
    uint32_t seq;
} iso_header;

enum {
    ISO_HELLO = 1,    /* host: iso_hello + plug-in path; reply iso_loaded      */
    ISO_STAGE = 2,    /* helper: a NUL-free step name, no reply                */
    ISO_START = 3,    /* host: nothing; reply iso_started                      */
    ISO_MAP = 4,      /* host: iso_map + one fd; reply iso_status              */
    ISO_UNMAP = 5,    /* host: uint32 region; reply iso_status                 */
    ISO_SUPPORTS = 6, /* host: graph, its node 0 asked; reply iso_status 0/1  */
    ISO_COMPUTE = 7,  /* host: graph; reply iso_status + message text          */
    ISO_SHUTDOWN = 8, /* host: nothing; reply iso_status, then the helper exits */
    ISO_REFUSED = 9,  /* either: text; the sender gives up after sending it    */
    /* a plug-in with memory of its own: its buffers stay in the helper and
     * data crosses through a shared transfer region */
    ISO_BUF_ALLOC = 10, /* host: iso_buf_req; reply iso_status                */
    ISO_BUF_FREE = 11,  /* host: uint32 region; reply iso_status              */
    ISO_WRITE = 12,     /* host: iso_xfer + iso_tensor; reply iso_status + text */
    ISO_READ = 13,      /* host: iso_xfer + iso_tensor; reply iso_status + text */
    ISO_FILL = 14,      /* host: iso_fill; reply iso_status + text            */
    ISO_COPY = 15,      /* host: iso_copy; reply iso_status + text            */
};

typedef struct iso_buf_req {
    uint32_t region; /* the id the host names it by from now on */
    uint32_t kind, usage;
    uint32_t reserved;
    uint64_t size;
} iso_buf_req;

typedef struct iso_xfer {
    uint32_t region;  /* a plug-in buffer                            */
    uint32_t staging; /* a shared region holding the bytes            */
    uint64_t offset, staging_offset, size;
    uint32_t has_tensor; /* 0: the host gave no tensor view         */
    uint32_t reserved;
} iso_xfer;

typedef struct iso_fill {
    uint32_t region;
    uint32_t value;
    uint64_t offset, size;
} iso_fill;

typedef struct iso_copy {
    uint32_t dst, src;
    uint64_t dst_offset, src_offset, size;
} iso_copy;

typedef struct iso_hello {
    uint32_t abi_major, abi_minor; /* the host's backend ABI */
} iso_hello;

typedef struct iso_loaded {
    int32_t ok;
    int32_t score;
    uint32_t abi_major, abi_minor;
    uint64_t required_isa;
    char name[ISO_NAME_MAX];
    char version[ISO_NAME_MAX];
    char reason[ISO_TEXT_MAX];
} iso_loaded;

typedef struct iso_device {
    int32_t kind;
    uint32_t reserved;
    char name[64];
    char description[128];
    uint64_t memory_total, memory_free, caps;
    uint64_t mem_alignment, max_buffer_size;
} iso_device;

typedef struct iso_started {
    int32_t ok;
    int32_t device_count;  /* what the plug-in said                */
    int32_t n_devices;     /* entries below (<= ISO_MAX_DEVICES)   */
    uint32_t reserved;
    char reason[ISO_TEXT_MAX];
    iso_device devices[ISO_MAX_DEVICES];
} iso_started;

typedef struct iso_map {
    uint32_t region; /* 1.. ISO_MAX_REGIONS-1 */
    uint32_t flags;  /* ISO_MAP_* */
    uint64_t size;
    uint64_t file_offset; /* ISO_MAP_FILE: page-aligned offset mapped ...  */
    uint64_t delta;       /* ... and where the region starts after it      */
} iso_map;
#define ISO_MAP_POPULATE 1u /* map every page now (weights: all of it is read) */
#define ISO_MAP_FILE 2u     /* the fd is the model file, mapped read-only     */

typedef struct iso_status {
    int32_t status;
    uint32_t text_len; /* bytes of text after this struct (COMPUTE only) */
} iso_status;

/* A graph: iso_graph, n_tensors iso_tensor, n_nodes int32 node indices,
 * blob_size bytes of parameter blocks and names. */
typedef struct iso_graph {
    int32_t n_tensors;
    int32_t n_nodes;
    int32_t n_threads;
    uint32_t blob_size;
} iso_graph;

typedef struct iso_tensor {
    uint32_t op, type;
    int32_t src[6];       /* the view's src[4], then src_more[2] (1.3) */
    int64_t ne[4];
    uint64_t nb[4];
    uint32_t region;      /* 0: no data (supports_op of host memory)   */
    uint32_t flags;
    uint64_t offset;      /* in the region; for region 0 the alignment  */
    uint32_t params_off, params_size; /* in the blob                  */
    uint32_t name_off, name_len;      /* in the blob, no NUL          */
} iso_tensor;

#endif
