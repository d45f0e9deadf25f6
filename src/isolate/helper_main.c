/* tport-backend-host: runs ONE plug-in for a host process that isolated it
 * (TPORT_BACKEND_ISOLATE, tport --isolate).  The host starts it with the
 * socket as descriptor 3 (--socket=3) and nothing else; it loads the
 * plug-in named in the first message, through the same checks as the
 * host's registry, then serves requests until the host says shut down or
 * goes away (EOF on the socket, or the parent-death signal).  Tensor data
 * lives in shared-memory regions the host passes in; the plug-in sees
 * ordinary host-memory graph views over them and needs no change.
 *
 * Part of the library, behind one public call (tport_backend_host_main in
 * tport/registry.h), because it is the host's other half: it speaks the
 * private wire protocol and loads plug-ins through the registry's own
 * checks.  tools/tport-backend-host is a main() that calls it.  It owns its
 * process: fail() exits.  Not meant to be run by hand. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "helper_graph.h"
#include "registry/candidate.h"
#include "tport/registry.h"
#include "wire.h"

static int sock = -1;
static uint32_t cur_seq;
static helper_region regions[ISO_MAX_REGIONS];
static uint32_t n_regions = 1; /* ids below this may be mapped */

static void fail(const char *fmt, const char *arg) {
    fprintf(stderr, "tport-backend-host: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

static void reply(uint16_t type, const void *a, size_t na, const void *b, size_t nb) {
    if (iso_send(sock, type | ISO_MSG_REPLY, cur_seq, a, na, b, nb, -1, -1) != ISO_IO_OK)
        _exit(0); /* the host is gone */
}

static void reply_status(uint16_t type, int32_t status, const char *text) {
    iso_status s = {.status = status, .text_len = text ? (uint32_t)strlen(text) : 0};
    reply(type, &s, sizeof s, text, s.text_len);
}

static void send_stage(const char *stage) {
    size_t n = strnlen(stage, 31);
    iso_send(sock, ISO_STAGE, cur_seq, stage, n, NULL, 0, -1, -1);
}

/* The plug-in's last message, one line, bounded. */
static void last_message(char *buf, size_t cap) {
    const char *m = tport_last_error();
    size_t n = m ? strnlen(m, cap - 1) : 0;
    for (size_t i = 0; i < n; i++)
        buf[i] = (unsigned char)m[i] >= 0x20 && (unsigned char)m[i] < 0x7f ? m[i] : '?';
    buf[n] = '\0';
}

static void handle_map(const unsigned char *p, uint32_t size, int fd) {
    iso_map m;
    struct stat st;
    if (size != sizeof m || fd < 0) {
        if (fd >= 0)
            close(fd);
        reply_status(ISO_MAP, TPORT_STATUS_INVALID_ARGUMENT, NULL);
        return;
    }
    memcpy(&m, p, sizeof m);
    void *base = MAP_FAILED;
    const bool file = m.flags & ISO_MAP_FILE; /* the model file, read-only */
    const uint64_t delta = file ? m.delta : 0, at = file ? m.file_offset : 0;
    const long page = sysconf(_SC_PAGESIZE);
    if (m.region > 0 && m.region < ISO_MAX_REGIONS && !regions[m.region].base && !regions[m.region].device &&
        fstat(fd, &st) == 0 && m.size > 0 && m.size <= SIZE_MAX / 2 && delta < (uint64_t)page &&
        at % (uint64_t)page == 0 && at <= UINT64_MAX / 4 && st.st_size >= 0 &&
        (uint64_t)st.st_size >= at + delta + m.size)
        base = mmap(NULL, (size_t)(delta + m.size), file ? PROT_READ : PROT_READ | PROT_WRITE,
                    MAP_SHARED | (m.flags & ISO_MAP_POPULATE ? MAP_POPULATE : 0), fd, (off_t)at);
    close(fd);
    if (base == MAP_FAILED) {
        reply_status(ISO_MAP, TPORT_STATUS_OUT_OF_MEMORY, NULL);
        return;
    }
    regions[m.region] = (helper_region){.base = (unsigned char *)base + delta, .size = m.size, .map_base = base,
                                        .map_len = delta + m.size};
    if (m.region >= n_regions)
        n_regions = m.region + 1;
    reply_status(ISO_MAP, TPORT_STATUS_OK, NULL);
}

static void handle_unmap(const unsigned char *p, uint32_t size) {
    uint32_t id;
    if (size != sizeof id) {
        reply_status(ISO_UNMAP, TPORT_STATUS_INVALID_ARGUMENT, NULL);
        return;
    }
    memcpy(&id, p, sizeof id);
    if (id == 0 || id >= n_regions || !regions[id].base || regions[id].device) {
        reply_status(ISO_UNMAP, TPORT_STATUS_INVALID_ARGUMENT, NULL);
        return;
    }
    munmap(regions[id].map_base, (size_t)regions[id].map_len);
    regions[id] = (helper_region){0};
    reply_status(ISO_UNMAP, TPORT_STATUS_OK, NULL);
}

static void handle_start(tport_candidate *c) {
    iso_started s = {0};
    if (!c->api || c->initialised) {
        snprintf(s.reason, sizeof s.reason, "start out of order");
    } else if (!tport_candidate_start(c)) {
        snprintf(s.reason, sizeof s.reason, "%s", c->reason);
    } else {
        s.ok = 1;
        s.device_count = c->active.n_devices;
        s.n_devices = c->n_devices < ISO_MAX_DEVICES ? c->n_devices : ISO_MAX_DEVICES;
        for (int32_t i = 0; i < s.n_devices; i++) {
            const tport_device_info *d = &c->devices[i];
            iso_device *o = &s.devices[i];
            o->kind = d->kind;
            memcpy(o->name, d->name, sizeof o->name);
            memcpy(o->description, d->description, sizeof o->description);
            o->memory_total = d->memory_total;
            o->memory_free = d->memory_free;
            o->caps = c->abi_minor >= 1 ? c->active.mem.caps : 0; /* as the registry resolved them */
            o->mem_alignment = c->abi_minor >= 1 ? c->active.mem.alignment : 0;
            o->max_buffer_size = c->abi_minor >= 1 ? c->active.mem.max_buffer : 0;
        }
    }
    tport_candidate_set_stage_hook(NULL);
    reply(ISO_START, &s, sizeof s, NULL, 0);
}

/* ---- a plug-in with memory of its own ------------------------------------ */
#define WAIT_NS (24ull * 3600 * 1000000000ull) /* the host's timeout is the real one */

static bool device_ready(const tport_candidate *c) {
    return c->initialised && c->active.mem.device_memory;
}

/* Waits for a ticket a slot returned; the status of the whole operation. */
static tport_status settle(const tport_candidate *c, tport_status st, tport_ticket tk) {
    if (st == TPORT_STATUS_OK && tk && c->active.mem.wait)
        st = c->active.mem.wait(c->active.state, 0, tk, WAIT_NS);
    return st;
}

static void reply_result(uint16_t type, tport_status st) {
    char why[ISO_TEXT_MAX];
    if (st != TPORT_STATUS_OK)
        last_message(why, sizeof why);
    reply_status(type, st, st != TPORT_STATUS_OK ? why : NULL);
}

static helper_region *device_region(uint32_t id) {
    return id > 0 && id < n_regions && regions[id].device ? &regions[id] : NULL;
}

static bool in_range(const helper_region *r, uint64_t offset, uint64_t size) {
    return r && offset <= r->size && size <= r->size - offset;
}

static void handle_buf_alloc(tport_candidate *c, const unsigned char *p, uint32_t size) {
    iso_buf_req q;
    if (size != sizeof q || !device_ready(c)) {
        reply_status(ISO_BUF_ALLOC, TPORT_STATUS_INVALID_ARGUMENT, "not a device-memory plug-in");
        return;
    }
    memcpy(&q, p, sizeof q);
    if (q.region == 0 || q.region >= ISO_MAX_REGIONS || regions[q.region].base || regions[q.region].device ||
        q.size == 0) {
        reply_status(ISO_BUF_ALLOC, TPORT_STATUS_INVALID_ARGUMENT, "bad buffer request");
        return;
    }
    tport_buffer handle = 0;
    void *host_ptr = NULL;
    tport_clear_error();
    tport_status st = c->active.mem.buffer_alloc(c->active.state, 0, q.kind, q.usage, q.size, &handle, &host_ptr);
    if (st == TPORT_STATUS_OK && !handle)
        st = TPORT_STATUS_ERROR;
    if (st == TPORT_STATUS_OK) {
        regions[q.region] = (helper_region){.base = host_ptr, .size = q.size, .handle = handle, .device = true};
        if (q.region >= n_regions)
            n_regions = q.region + 1;
    }
    reply_result(ISO_BUF_ALLOC, st);
}

static void handle_buf_free(tport_candidate *c, const unsigned char *p, uint32_t size) {
    uint32_t id;
    helper_region *r = size == sizeof id ? (memcpy(&id, p, sizeof id), device_region(id)) : NULL;
    if (!r || !device_ready(c)) {
        reply_status(ISO_BUF_FREE, TPORT_STATUS_INVALID_ARGUMENT, NULL);
        return;
    }
    c->active.mem.buffer_free(c->active.state, r->handle);
    *r = (helper_region){0};
    reply_status(ISO_BUF_FREE, TPORT_STATUS_OK, NULL);
}

/* An upload or download through a shared staging region. */
static void handle_xfer(tport_candidate *c, uint16_t type, const unsigned char *p, uint32_t size) {
    iso_xfer x;
    iso_tensor rec;
    if (size != sizeof x + sizeof rec || !device_ready(c) || (type == ISO_READ && !c->active.mem.tensor_read)) {
        reply_status(type, TPORT_STATUS_INVALID_ARGUMENT, "bad transfer");
        return;
    }
    memcpy(&x, p, sizeof x);
    memcpy(&rec, p + sizeof x, sizeof rec);
    helper_region *r = device_region(x.region);
    const helper_region *s = x.staging > 0 && x.staging < n_regions && regions[x.staging].base &&
                                     !regions[x.staging].device ? &regions[x.staging] : NULL;
    if (!in_range(r, x.offset, x.size) || !in_range(s, x.staging_offset, x.size)) {
        reply_status(type, TPORT_STATUS_INVALID_ARGUMENT, "transfer outside its buffers");
        return;
    }
    tport_tensor_view t = {.struct_size = sizeof t, .op = rec.op, .type = rec.type, .flags = rec.flags,
                           .src = {-1, -1, -1, -1}, .src_more = {-1, -1}, .name = "", .buffer = r->handle, .offset = x.offset};
    memcpy(t.ne, rec.ne, sizeof t.ne);
    memcpy(t.nb, rec.nb, sizeof t.nb);
    t.data = r->base ? r->base + x.offset : NULL;
    const tport_tensor_view *tv = x.has_tensor ? &t : NULL;
    tport_ticket tk = 0;
    tport_clear_error();
    tport_status st = type == ISO_WRITE
        ? c->active.mem.tensor_write(c->active.state, r->handle, x.offset, tv, s->base + x.staging_offset, x.size, &tk)
        : c->active.mem.tensor_read(c->active.state, r->handle, x.offset, tv, s->base + x.staging_offset, x.size, &tk);
    reply_result(type, settle(c, st, tk));
}

static void handle_fill(tport_candidate *c, const unsigned char *p, uint32_t size) {
    iso_fill f;
    if (size != sizeof f || !device_ready(c)) {
        reply_status(ISO_FILL, TPORT_STATUS_INVALID_ARGUMENT, "bad fill");
        return;
    }
    memcpy(&f, p, sizeof f);
    helper_region *r = device_region(f.region);
    if (!c->active.mem.buffer_fill) { /* the proxy offers the slot for every plug-in */
        reply_status(ISO_FILL, TPORT_STATUS_UNSUPPORTED, "the plug-in has no buffer_fill");
        return;
    }
    if (!in_range(r, f.offset, f.size) || f.value > 255) {
        reply_status(ISO_FILL, TPORT_STATUS_INVALID_ARGUMENT, "fill outside its buffer");
        return;
    }
    tport_ticket tk = 0;
    tport_clear_error();
    tport_status st = c->active.mem.buffer_fill(c->active.state, r->handle, f.offset, f.size, (uint8_t)f.value, &tk);
    reply_result(ISO_FILL, settle(c, st, tk));
}

static void handle_copy(tport_candidate *c, const unsigned char *p, uint32_t size) {
    iso_copy k;
    if (size != sizeof k || !device_ready(c)) {
        reply_status(ISO_COPY, TPORT_STATUS_INVALID_ARGUMENT, "bad copy");
        return;
    }
    memcpy(&k, p, sizeof k);
    helper_region *d = device_region(k.dst), *s = device_region(k.src);
    if (!c->active.mem.buffer_copy) { /* the proxy offers the slot for every plug-in */
        reply_status(ISO_COPY, TPORT_STATUS_UNSUPPORTED, "the plug-in has no buffer_copy");
        return;
    }
    if (!in_range(d, k.dst_offset, k.size) || !in_range(s, k.src_offset, k.size)) {
        reply_status(ISO_COPY, TPORT_STATUS_INVALID_ARGUMENT, "copy outside its buffers");
        return;
    }
    tport_ticket tk = 0;
    tport_clear_error();
    tport_status st = c->active.mem.buffer_copy(c->active.state, d->handle, k.dst_offset, s->handle, k.src_offset,
                                                k.size, &tk);
    reply_result(ISO_COPY, settle(c, st, tk));
}

static void handle_graph(tport_candidate *c, helper_graph *g, uint16_t type, const unsigned char *p,
                         uint32_t size) {
    char why[ISO_TEXT_MAX];
    const bool supports = type == ISO_SUPPORTS;
    if (!c->initialised) {
        reply_status(type, supports ? 0 : TPORT_STATUS_ERROR, supports ? NULL : "the plug-in is not started");
        return;
    }
    if (!helper_graph_decode(g, p, size, regions, n_regions, supports, why, sizeof why)) {
        reply_status(type, supports ? 0 : TPORT_STATUS_INVALID_ARGUMENT, supports ? NULL : why);
        return;
    }
    const tport_active_backend *a = &c->active;
    if (supports) {
        bool yes = g->view.n_nodes == 1 && a->api->supports_op(a->state, 0, &g->view, g->view.nodes[0]);
        reply_status(type, yes ? 1 : 0, NULL);
        return;
    }
    tport_clear_error();
    tport_status st = a->api->compute(a->state, 0, &g->view);
    if (st != TPORT_STATUS_OK)
        last_message(why, sizeof why);
    reply_status(type, st, st != TPORT_STATUS_OK ? why : NULL);
}

static void serve(tport_candidate *c) {
    iso_buf buf = {0};
    helper_graph g = {0};
    for (;;) {
        iso_header h;
        int fd = -1;
        iso_io io = iso_recv(sock, &h, &buf, &fd, -1);
        if (io == ISO_IO_CLOSED)
            break; /* the host went away: end quietly */
        if (io != ISO_IO_OK) {
            char text[96];
            snprintf(text, sizeof text, "malformed request (framing %d)", (int)io);
            iso_send(sock, ISO_REFUSED, cur_seq, text, strlen(text), NULL, 0, -1, 1000);
            exit(2);
        }
        cur_seq = h.seq;
        if (fd >= 0 && h.type != ISO_MAP) {
            close(fd);
            fd = -1;
        }
        switch (h.type) {
        case ISO_START: handle_start(c); break;
        case ISO_MAP: handle_map(buf.p, h.size, fd); break;
        case ISO_UNMAP: handle_unmap(buf.p, h.size); break;
        case ISO_SUPPORTS:
        case ISO_COMPUTE: handle_graph(c, &g, h.type, buf.p, h.size); break;
        case ISO_BUF_ALLOC: handle_buf_alloc(c, buf.p, h.size); break;
        case ISO_BUF_FREE: handle_buf_free(c, buf.p, h.size); break;
        case ISO_WRITE:
        case ISO_READ: handle_xfer(c, h.type, buf.p, h.size); break;
        case ISO_FILL: handle_fill(c, buf.p, h.size); break;
        case ISO_COPY: handle_copy(c, buf.p, h.size); break;
        case ISO_SHUTDOWN:
            tport_candidate_close(c, false);
            reply_status(ISO_SHUTDOWN, TPORT_STATUS_OK, NULL);
            helper_graph_free(&g);
            iso_buf_free(&buf);
            return;
        default: {
            char text[64];
            snprintf(text, sizeof text, "unknown request type %u", h.type);
            iso_send(sock, ISO_REFUSED, cur_seq, text, strlen(text), NULL, 0, -1, 1000);
            exit(2);
        }
        }
    }
    tport_candidate_close(c, false);
    helper_graph_free(&g);
    iso_buf_free(&buf);
}

int tport_backend_host_main(int argc, char **argv) {
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0); /* as tport does: no spinning beside the plug-in's threads */
    if (argc != 2 || strncmp(argv[1], "--socket=", 9) != 0)
        fail("%s", "started by tensorport for an isolated plug-in (--socket=FD); not meant to be run by hand");
    char *end;
    long fd = strtol(argv[1] + 9, &end, 10);
    struct stat st;
    if (*end || fd < 0 || fd > INT_MAX || fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode))
        fail("'%s' is not a socket descriptor", argv[1] + 9);
    sock = (int)fd;
    iso_wire_set_version(TPORT_ISOLATE_PROTOCOL);
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* again: the host may have died since exec */
    signal(SIGPIPE, SIG_IGN);

    iso_buf buf = {0};
    iso_header h;
    iso_io io = iso_recv(sock, &h, &buf, NULL, -1);
    if (io == ISO_IO_VERSION) {
        char text[128];
        snprintf(text, sizeof text, "the host speaks isolation protocol %u, this helper speaks %u", h.version,
                 TPORT_ISOLATE_PROTOCOL);
        iso_send(sock, ISO_REFUSED, h.seq, text, strlen(text), NULL, 0, -1, 1000);
        fprintf(stderr, "tport-backend-host: %s\n", text);
        return 3;
    }
    if (io != ISO_IO_OK || h.type != ISO_HELLO || h.size <= sizeof(iso_hello) ||
        h.size - sizeof(iso_hello) >= PATH_MAX)
        fail("%s", "no valid hello from the host");
    cur_seq = h.seq;
    char path[PATH_MAX];
    size_t plen = h.size - sizeof(iso_hello);
    memcpy(path, buf.p + sizeof(iso_hello), plen);
    path[plen] = '\0';
    if (strlen(path) != plen)
        fail("%s", "plug-in path with a NUL byte");
    iso_buf_free(&buf);

    tport_candidate c = {.path = path, .origin = "isolated"};
    tport_candidate_set_stage_hook(send_stage);
    iso_loaded l = {0};
    if (tport_candidate_open(&c, NULL)) {
        l.ok = 1;
        l.score = c.score;
    } else {
        snprintf(l.reason, sizeof l.reason, "%s", c.reason);
    }
    l.abi_major = c.abi_major;
    l.abi_minor = c.abi_minor;
    l.required_isa = c.required_isa;
    memcpy(l.name, c.name, sizeof l.name);
    memcpy(l.version, c.version, sizeof l.version);
    reply(ISO_HELLO, &l, sizeof l, NULL, 0);
    if (!l.ok) {
        tport_candidate_close(&c, false);
        return 0;
    }
    serve(&c);
    for (uint32_t i = 1; i < n_regions; i++)
        if (regions[i].map_base)
            munmap(regions[i].map_base, (size_t)regions[i].map_len);
    return 0;
}
