/* Framing of isolation messages over a stream socket: one header, then the
 * payload; an optional file descriptor rides on the first byte.  Used by
 * the host (with deadlines, so a hung helper never blocks it) and by the
 * helper (deadline -1: wait for ever, the host's EOF ends it). */
#ifndef TPORT_ISOLATE_WIRE_H
#define TPORT_ISOLATE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "isolate/protocol.h"

typedef enum iso_io {
    ISO_IO_OK = 0,
    ISO_IO_CLOSED = 1,    /* EOF or a socket error: the peer is gone       */
    ISO_IO_TIMEOUT = 2,   /* the deadline passed                           */
    ISO_IO_MALFORMED = 3, /* bad magic, oversized payload, unexpected fd   */
    ISO_IO_VERSION = 4,   /* well-formed header of another protocol version */
} iso_io;

/* A growable receive buffer, reused between messages. */
typedef struct iso_buf {
    unsigned char *p;
    size_t cap;
} iso_buf;

/* The protocol version this side writes and accepts (default
 * TPORT_ISOLATE_PROTOCOL; a test helper sets another to be refused). */
void iso_wire_set_version(uint16_t version);
uint16_t iso_wire_version(void);

/* Monotonic milliseconds, and a deadline `ms` from now (ms < 0: none). */
long long iso_now_ms(void);
long long iso_deadline(long long ms);

/* Sends header + a + b (either may be empty) and, if pass_fd >= 0, that
 * descriptor.  Never raises SIGPIPE. */
iso_io iso_send(int sock, uint16_t type, uint32_t seq, const void *a, size_t na, const void *b, size_t nb,
                int pass_fd, long long deadline);

/* Receives one message: *h, and the payload in buf (h->size bytes).  A
 * descriptor that came with it is stored in *fd_out (when fd_out is NULL
 * it is closed and the message is malformed); *fd_out = -1 otherwise.
 * With ISO_IO_VERSION the header is filled in and the payload read. */
iso_io iso_recv(int sock, iso_header *h, iso_buf *buf, int *fd_out, long long deadline);

void iso_buf_free(iso_buf *b);

#endif
