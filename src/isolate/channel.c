/* The channel to one helper: a request and its reply, with the helper's
 * deadline, and what happens when the helper fails it (iso_lose: killed,
 * reaped, reported, every later call refused).  Below the regions, the
 * graph encoding and the proxy's table, which all talk through it. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "isolate/internal.h"
#include "isolate/spawn.h"

void iso_lose(iso_proxy *p, bool peer_gone, const char *cause, const char *during) {
    if (p->lost)
        return;
    p->lost = true;
    char how[160];
    iso_reap(p->pid, peer_gone, how, sizeof how);
    p->pid = -1;
    if (p->sock >= 0)
        close(p->sock);
    p->sock = -1;
    iso_region_unmap_all(p); /* the helper's mappings went with it */
    if (p->report != ISO_REPORT_LINE) {
        tport_log(TPORT_LOG_DEBUG, "backends: isolated %s lost during %s", p->name, during);
        if (p->report == ISO_REPORT_CAUSE)
            tport_error(TPORT_STATUS_DEVICE_LOST, "%s", cause ? cause : how);
        else
            tport_error(TPORT_STATUS_DEVICE_LOST, "%s during %s", cause ? cause : how, during);
        return;
    }
    char line[1024];
    if (p->refused) /* another protocol version: not a loss, a refusal */
        snprintf(line, sizeof line, "backend %s refused: %s", p->name, cause ? cause : how);
    else
        snprintf(line, sizeof line, "backend %s lost: %s during %s", p->name, cause ? cause : how, during);
    fprintf(stderr, "tport: %s\n", line);
    tport_error(TPORT_STATUS_DEVICE_LOST, "%s", line);
}

void iso_lost_error(const iso_proxy *p) {
    tport_error(TPORT_STATUS_DEVICE_LOST, "backend %s was lost earlier (isolated helper gone)", p->name);
}

void iso_copy_text(char *dst, size_t cap, const unsigned char *src, size_t n) {
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] >= 0x20 && src[i] < 0x7f ? (char)src[i] : '?';
    dst[n] = '\0';
}

bool iso_call(iso_proxy *p, uint16_t type, const void *a, size_t na, const void *b, size_t nb, int fd,
              const char *during, uint32_t *size) {
    if (p->lost) {
        iso_lost_error(p);
        return false;
    }
    char at[96];
    if (type == ISO_HELLO || type == ISO_START) { /* name the step the helper reported last */
        snprintf(at, sizeof at, "%s (step %s)", during, p->stage);
        during = at;
    }
    const uint32_t seq = ++p->seq;
    const bool loading = type == ISO_HELLO || type == ISO_START;
    const long long limit = loading ? p->load_timeout_ms : p->timeout_ms;
    const long long deadline = iso_deadline(limit);
    char cause[512];
    iso_io io = iso_send(p->sock, type, seq, a, na, b, nb, fd, deadline);
    int stages = 0;
    while (io == ISO_IO_OK) {
        iso_header h;
        io = iso_recv(p->sock, &h, &p->rx, NULL, deadline);
        if (io == ISO_IO_VERSION) {
            char text[ISO_TEXT_MAX] = "";
            if (h.type == ISO_REFUSED)
                iso_copy_text(text, sizeof text, p->rx.p, h.size);
            snprintf(cause, sizeof cause, "the helper speaks isolation protocol %u, this host speaks %u%s%s%s",
                     h.version, TPORT_ISOLATE_PROTOCOL, text[0] ? " (the helper: " : "", text, text[0] ? ")" : "");
            p->refused = true;
            iso_lose(p, false, cause, during);
            return false;
        }
        if (io != ISO_IO_OK)
            break;
        if (h.type == ISO_STAGE && (type == ISO_HELLO || type == ISO_START) && ++stages <= ISO_MAX_STAGES) {
            iso_copy_text(p->stage, sizeof p->stage, p->rx.p, h.size);
            snprintf(at, sizeof at, "%s (step %s)", type == ISO_HELLO ? "loading" : "init", p->stage);
            continue;
        }
        if (h.type == ISO_REFUSED) {
            char text[ISO_TEXT_MAX];
            iso_copy_text(text, sizeof text, p->rx.p, h.size);
            snprintf(cause, sizeof cause, "the helper refused: %s", text);
            iso_lose(p, false, cause, during);
            return false;
        }
        if (h.type != (type | ISO_MSG_REPLY) || h.seq != seq) {
            snprintf(cause, sizeof cause, "malformed reply (message type %u seq %u, expected %u seq %u), killed",
                     h.type, h.seq, type | ISO_MSG_REPLY, seq);
            iso_lose(p, false, cause, during);
            return false;
        }
        if (size)
            *size = h.size;
        else if (h.size != sizeof(iso_status) || ((const iso_status *)(void *)p->rx.p)->status != 0) {
            snprintf(cause, sizeof cause, "malformed or failed reply (%u bytes), killed", h.size);
            iso_lose(p, false, cause, during);
            return false;
        }
        return true;
    }
    if (io == ISO_IO_TIMEOUT) {
        snprintf(cause, sizeof cause, "no answer within %lld s (%s), killed", limit / 1000,
                 loading ? "TPORT_PROBE_TIMEOUT" : "TPORT_COMPUTE_TIMEOUT");
        iso_lose(p, false, cause, during);
    } else if (io == ISO_IO_MALFORMED) {
        iso_lose(p, false, "malformed reply (bad framing), killed", during);
    } else {
        iso_lose(p, true, NULL, during);
    }
    return false;
}
