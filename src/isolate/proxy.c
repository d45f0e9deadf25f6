/* The proxy backend: an isolated plug-in as the host sees it, a device
 * with memory of its own (ABI 1.1) that happens to be shared with the
 * helper process.  Buffers, uploads, downloads, fills and copies are done
 * here, on the host's mapping, without a message; supports_op (cached by
 * structure) and compute cross to the helper.
 *
 * Any failure of the helper — it died, closed the socket, did not answer
 * within TPORT_COMPUTE_TIMEOUT seconds, or sent something malformed — costs
 * the device: the helper is killed and reaped, one line says what happened
 * and during which call, and every later call returns
 * TPORT_STATUS_DEVICE_LOST at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "isolate/isolate.h"
#include "isolate/internal.h"

/* ---- the table's slots ----------------------------------------------------- */
static tport_status proxy_init(void **backend) {
    (void)backend; /* an isolated backend is started by the registry */
    return tport_error(TPORT_STATUS_UNSUPPORTED, "an isolated backend is started by the registry");
}

static void proxy_shutdown(void *backend) {
    (void)backend; /* the registry ends the helper (tport_isolate_close) */
}

static int32_t proxy_device_count(void *backend) {
    iso_proxy *p = backend;
    return p->device_count;
}

static tport_status proxy_device_info(void *backend, int32_t device, tport_device_info *out) {
    iso_proxy *p = backend;
    if (!out || out->struct_size < TPORT_DEVICE_INFO_SIZE_1_0 || device < 0 || device >= p->n_devices)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: no device %d", p->name, (int)device);
    const iso_device *d = &p->devices[device];
    out->kind = d->kind;
    memcpy(out->name, d->name, sizeof out->name);
    memcpy(out->description, d->description, sizeof out->description);
    out->memory_total = d->memory_total;
    out->memory_free = d->memory_free;
    if (out->struct_size >= TPORT_DEVICE_INFO_SIZE_1_1) {
        if (p->device_mode) { /* the plug-in's own memory, as it described it (every call synchronous) */
            out->caps = d->caps & (TPORT_DEVICE_CAP_DEVICE_MEMORY | TPORT_DEVICE_CAP_HOST_READABLE);
            out->mem_alignment = d->mem_alignment > 64 ? d->mem_alignment : 64;
            out->max_buffer_size = d->max_buffer_size;
        } else { /* memory shared with the helper; host-memory operands are staged */
            out->caps = TPORT_DEVICE_CAP_DEVICE_MEMORY | TPORT_DEVICE_CAP_HOST_READABLE;
            out->mem_alignment = 64;
            out->max_buffer_size = 0;
        }
    }
    return TPORT_STATUS_OK;
}

static bool proxy_supports_op(void *backend, int32_t device, const tport_graph_view *g, int32_t node) {
    iso_proxy *p = backend;
    if (!g || device != 0 || node < 0 || node >= g->n_tensors)
        return false;
    pthread_mutex_lock(&p->lock);
    bool yes = false;
    uint64_t key = 0;
    if (!p->lost && iso_supports_key(p, g, node, &key) == TPORT_STATUS_OK) {
        int known = iso_supports_cached(p, key);
        if (known >= 0) {
            yes = known;
        } else if (iso_encode_supports(p, g, node) == TPORT_STATUS_OK) {
            uint32_t size = 0;
            if (iso_call(p, ISO_SUPPORTS, p->enc.p, p->enc.len, NULL, 0, -1, "supports_op", &size)) {
                iso_status r;
                if (size != sizeof r) {
                    iso_lose(p, false, "malformed supports_op reply, killed", "supports_op");
                } else {
                    memcpy(&r, p->rx.p, sizeof r);
                    if (r.status != 0 && r.status != 1)
                        iso_lose(p, false, "malformed supports_op reply, killed", "supports_op");
                    else {
                        yes = r.status == 1;
                        iso_supports_store(p, key, yes);
                    }
                }
            }
        }
    }
    pthread_mutex_unlock(&p->lock);
    return yes;
}

static tport_status compute_locked(iso_proxy *p, int32_t device, const tport_graph_view *g) {
    if (p->lost) {
        iso_lost_error(p);
        return TPORT_STATUS_DEVICE_LOST;
    }
    if (!g || device != 0 || g->n_nodes < 0)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: bad compute arguments", p->name);
    const unsigned long long call = ++p->n_compute;
    tport_status st = iso_encode_compute(p, g);
    if (st)
        return st;
    char during[96];
    snprintf(during, sizeof during, "compute call %llu (%d nodes)", call, (int)g->n_nodes);
    uint32_t size = 0;
    if (!iso_call(p, ISO_COMPUTE, p->enc.p, p->enc.len, NULL, 0, -1, during, &size))
        return TPORT_STATUS_DEVICE_LOST;
    iso_status r;
    if (size < sizeof r || (memcpy(&r, p->rx.p, sizeof r), r.text_len != size - sizeof r) ||
        r.text_len >= ISO_TEXT_MAX) {
        iso_lose(p, false, "malformed compute reply, killed", during);
        return TPORT_STATUS_DEVICE_LOST;
    }
    char text[ISO_TEXT_MAX];
    iso_copy_text(text, sizeof text, p->rx.p + sizeof r, r.text_len);
    if (r.status == TPORT_STATUS_OK) {
        iso_stage_copy_back(p);
        return TPORT_STATUS_OK;
    }
    if (r.status == TPORT_STATUS_DEVICE_LOST) {
        char cause[512];
        snprintf(cause, sizeof cause, "the plug-in reported its device lost (%s), helper ended", text);
        iso_lose(p, false, cause, during);
        return TPORT_STATUS_DEVICE_LOST;
    }
    return tport_error(r.status, "%s", text[0] ? text : tport_status_name(r.status));
}

static tport_status proxy_compute(void *backend, int32_t device, const tport_graph_view *g) {
    iso_proxy *p = backend;
    pthread_mutex_lock(&p->lock);
    p->report = ISO_REPORT_CAUSE;
    tport_status st = compute_locked(p, device, g);
    p->report = ISO_REPORT_LINE;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static tport_status proxy_compute_async(void *backend, int32_t device, const tport_graph_view *g,
                                        tport_ticket *ticket) {
    if (ticket)
        *ticket = 0; /* done on return */
    return proxy_compute(backend, device, g);
}

static tport_status proxy_wait(void *backend, int32_t device, tport_ticket ticket, uint64_t timeout_ns) {
    iso_proxy *p = backend;
    (void)device, (void)timeout_ns; /* nothing is ever pending */
    pthread_mutex_lock(&p->lock);
    bool lost = p->lost;
    if (lost)
        iso_lost_error(p);
    pthread_mutex_unlock(&p->lock);
    if (lost)
        return TPORT_STATUS_DEVICE_LOST;
    /* every call completes before it returns and gives ticket 0: any other
     * ticket was never issued, and OK would claim work done that never was */
    return ticket ? tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: ticket %llu was never issued", p->name,
                                (unsigned long long)ticket)
                  : TPORT_STATUS_OK;
}

static tport_status proxy_buffer_alloc(void *backend, int32_t device, uint32_t kind, uint32_t usage, uint64_t size,
                                       tport_buffer *out, void **host_ptr) {
    iso_proxy *p = backend;
    if (!out || device != 0 || (kind != TPORT_MEM_DEVICE && kind != TPORT_MEM_HOST_STAGING))
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: bad buffer_alloc arguments", p->name);
    pthread_mutex_lock(&p->lock);
    p->report = ISO_REPORT_CAUSE_AND_CALL;
    tport_status st = TPORT_STATUS_OK;
    uint32_t id = p->lost ? 0
                  : p->device_mode ? iso_region_new_device(p, size, kind, usage)
                  : usage == TPORT_USAGE_WEIGHTS && kind == TPORT_MEM_DEVICE ? iso_region_new_deferred(p, size)
                                   : iso_region_new(p, size, false);
    if (p->lost) {
        iso_lost_error(p);
        st = TPORT_STATUS_DEVICE_LOST;
    } else if (!id) {
        st = p->lost ? TPORT_STATUS_DEVICE_LOST : TPORT_STATUS_OUT_OF_MEMORY;
    } else {
        tport_log(TPORT_LOG_DEBUG, "backends: isolated %s: buffer %u of %llu bytes (kind %u, usage %u)", p->name, id,
                  (unsigned long long)size, kind, usage);
        *out = id;
        if (host_ptr)
            *host_ptr = kind == TPORT_MEM_HOST_STAGING && !p->device_mode ? iso_region_get(p, id)->base : NULL;
    }
    p->report = ISO_REPORT_LINE;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static void proxy_buffer_free(void *backend, tport_buffer buffer) {
    iso_proxy *p = backend;
    pthread_mutex_lock(&p->lock);
    if (buffer != p->scratch && buffer != p->arena && buffer != p->xfer && buffer <= UINT32_MAX)
        iso_region_free(p, (uint32_t)buffer);
    pthread_mutex_unlock(&p->lock);
}

static uint64_t proxy_tensor_alloc_size(void *backend, int32_t device, const tport_tensor_view *tensor) {
    (void)backend, (void)device, (void)tensor;
    return 0; /* the plain size */
}

/* The host address of [offset, offset+size) of a live buffer, or NULL with
 * the error recorded in *st. */
static unsigned char *span_of(iso_proxy *p, tport_buffer buffer, uint64_t offset, uint64_t size, bool write,
                              tport_status *st) {
    if (p->lost) {
        iso_lost_error(p);
        *st = TPORT_STATUS_DEVICE_LOST;
        return NULL;
    }
    iso_region *r = iso_region_get(p, buffer);
    /* a weights buffer not written yet, or the file's read-only pages */
    if (r && (r->deferred || (r->file && write))) {
        if (!iso_region_make_writable(p, (uint32_t)buffer)) {
            *st = p->lost ? TPORT_STATUS_DEVICE_LOST : TPORT_STATUS_OUT_OF_MEMORY;
            return NULL;
        }
        r = iso_region_get(p, buffer);
    }
    if (!r || !r->base || offset > r->size || size > r->size - offset) {
        *st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: range outside buffer %llu", p->name,
                          (unsigned long long)buffer);
        return NULL;
    }
    *st = TPORT_STATUS_OK;
    return r->base + offset;
}

/* ---- device mode: the bytes cross through the transfer region ------------ */
static bool is_device_buffer(iso_proxy *p, tport_buffer buffer) {
    iso_region *r = iso_region_get(p, buffer);
    return r && r->device;
}

/* The transfer region, at least `size` bytes; its host address or NULL. */
static unsigned char *xfer_space(iso_proxy *p, uint64_t size) {
    iso_region *x = iso_region_get(p, p->xfer);
    if (x && x->base && x->size >= size)
        return x->base;
    if (p->xfer)
        iso_region_free(p, p->xfer);
    p->xfer = 0;
    uint64_t want = size > ((uint64_t)4 << 20) ? size : (uint64_t)4 << 20;
    uint32_t id = iso_region_new(p, want, false);
    if (!id)
        return NULL;
    p->xfer = id;
    return iso_region_get(p, id)->base;
}

/* The status a device-mode reply carries (its text recorded as the error). */
static tport_status remote_status(iso_proxy *p, uint32_t size, const char *during) {
    iso_status r;
    if (size < sizeof r || (memcpy(&r, p->rx.p, sizeof r), r.text_len != size - sizeof r) ||
        r.text_len >= ISO_TEXT_MAX) {
        iso_lose(p, false, "malformed reply, killed", during);
        return TPORT_STATUS_DEVICE_LOST;
    }
    if (r.status == TPORT_STATUS_OK)
        return TPORT_STATUS_OK;
    char text[ISO_TEXT_MAX];
    iso_copy_text(text, sizeof text, p->rx.p + sizeof r, r.text_len);
    if (r.status == TPORT_STATUS_DEVICE_LOST) {
        char cause[512];
        snprintf(cause, sizeof cause, "the plug-in reported its device lost (%s), helper ended", text);
        iso_lose(p, false, cause, during);
        return TPORT_STATUS_DEVICE_LOST;
    }
    return tport_error(r.status, "%s", text[0] ? text : tport_status_name(r.status));
}

static tport_status remote_xfer(iso_proxy *p, uint16_t type, tport_buffer buffer, uint64_t offset,
                                const tport_tensor_view *tensor, void *host, uint64_t size) {
    iso_region *r = iso_region_get(p, buffer);
    if (!r || offset > r->size || size > r->size - offset)
        return tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: range outside buffer %llu", p->name,
                           (unsigned long long)buffer);
    unsigned char *x = xfer_space(p, size ? size : 1);
    if (!x)
        return p->lost ? TPORT_STATUS_DEVICE_LOST : TPORT_STATUS_OUT_OF_MEMORY;
    if (type == ISO_WRITE && size)
        memcpy(x, host, (size_t)size);
    iso_xfer q = {.region = (uint32_t)buffer, .staging = p->xfer, .offset = offset, .size = size,
                  .has_tensor = tensor != NULL};
    iso_tensor rec = {0};
    if (tensor) {
        rec.op = tensor->op;
        rec.type = tensor->type;
        rec.flags = tensor->flags;
        memcpy(rec.ne, tensor->ne, sizeof rec.ne);
        memcpy(rec.nb, tensor->nb, sizeof rec.nb);
    }
    const char *during = type == ISO_WRITE ? "tensor_write" : "tensor_read";
    uint32_t n = 0;
    if (!iso_call(p, type, &q, sizeof q, &rec, sizeof rec, -1, during, &n))
        return TPORT_STATUS_DEVICE_LOST;
    tport_status st = remote_status(p, n, during);
    if (st == TPORT_STATUS_OK && type == ISO_READ && size)
        memcpy(host, x, (size_t)size);
    return st;
}

static tport_status proxy_tensor_write(void *backend, tport_buffer buffer, uint64_t offset,
                                       const tport_tensor_view *tensor, const void *src, uint64_t size,
                                       tport_ticket *ticket) {
    iso_proxy *p = backend;
    (void)tensor;
    if (ticket)
        *ticket = 0;
    pthread_mutex_lock(&p->lock);
    p->report = ISO_REPORT_CAUSE_AND_CALL;
    tport_status st;
    if (!p->lost && is_device_buffer(p, buffer)) {
        st = remote_xfer(p, ISO_WRITE, buffer, offset, tensor, (void *)src, size);
    } else {
        iso_region *r = iso_region_get(p, buffer);
        if (r && r->deferred && offset == 0 && iso_region_share_file(p, (uint32_t)buffer, src, size)) {
            st = TPORT_STATUS_OK; /* the model file's own pages: nothing copied */
        } else {
            unsigned char *dst = span_of(p, buffer, offset, size, true, &st);
            if (dst && size)
                memcpy(dst, src, (size_t)size);
        }
    }
    p->report = ISO_REPORT_LINE;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static tport_status proxy_tensor_read(void *backend, tport_buffer buffer, uint64_t offset,
                                      const tport_tensor_view *tensor, void *dst, uint64_t size,
                                      tport_ticket *ticket) {
    iso_proxy *p = backend;
    (void)tensor;
    if (ticket)
        *ticket = 0;
    pthread_mutex_lock(&p->lock);
    p->report = ISO_REPORT_CAUSE_AND_CALL;
    tport_status st;
    if (!p->lost && is_device_buffer(p, buffer)) {
        st = remote_xfer(p, ISO_READ, buffer, offset, tensor, dst, size);
    } else {
        const unsigned char *src = span_of(p, buffer, offset, size, false, &st);
        if (src && size)
            memcpy(dst, src, (size_t)size);
    }
    p->report = ISO_REPORT_LINE;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static tport_status proxy_buffer_fill(void *backend, tport_buffer buffer, uint64_t offset, uint64_t size,
                                      uint8_t value, tport_ticket *ticket) {
    iso_proxy *p = backend;
    if (ticket)
        *ticket = 0;
    pthread_mutex_lock(&p->lock);
    p->report = ISO_REPORT_CAUSE_AND_CALL;
    tport_status st;
    if (!p->lost && is_device_buffer(p, buffer)) {
        iso_region *r = iso_region_get(p, buffer);
        iso_fill f = {.region = (uint32_t)buffer, .value = value, .offset = offset, .size = size};
        uint32_t n = 0;
        if (offset > r->size || size > r->size - offset)
            st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: fill outside buffer", p->name);
        else
            st = iso_call(p, ISO_FILL, &f, sizeof f, NULL, 0, -1, "buffer_fill", &n)
                     ? remote_status(p, n, "buffer_fill") : TPORT_STATUS_DEVICE_LOST;
    } else {
        unsigned char *dst = span_of(p, buffer, offset, size, true, &st);
        if (dst && size)
            memset(dst, value, (size_t)size);
    }
    p->report = ISO_REPORT_LINE;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static tport_status proxy_buffer_copy(void *backend, tport_buffer dst, uint64_t dst_offset, tport_buffer src,
                                      uint64_t src_offset, uint64_t size, tport_ticket *ticket) {
    iso_proxy *p = backend;
    if (ticket)
        *ticket = 0;
    pthread_mutex_lock(&p->lock);
    p->report = ISO_REPORT_CAUSE_AND_CALL;
    tport_status st;
    if (!p->lost && (is_device_buffer(p, dst) || is_device_buffer(p, src))) {
        iso_region *d = iso_region_get(p, dst), *s = iso_region_get(p, src);
        iso_copy k = {.dst = (uint32_t)dst, .src = (uint32_t)src, .dst_offset = dst_offset, .src_offset = src_offset,
                      .size = size};
        uint32_t n = 0;
        if (!d || !s || !d->device || !s->device || dst_offset > d->size || size > d->size - dst_offset ||
            src_offset > s->size || size > s->size - src_offset)
            st = tport_error(TPORT_STATUS_INVALID_ARGUMENT, "isolated %s: copy outside its buffers", p->name);
        else
            st = iso_call(p, ISO_COPY, &k, sizeof k, NULL, 0, -1, "buffer_copy", &n)
                     ? remote_status(p, n, "buffer_copy") : TPORT_STATUS_DEVICE_LOST;
        p->report = ISO_REPORT_LINE;
        pthread_mutex_unlock(&p->lock);
        return st;
    }
    const unsigned char *s = span_of(p, src, src_offset, size, false, &st);
    unsigned char *d = s ? span_of(p, dst, dst_offset, size, true, &st) : NULL;
    if (d && s && size)
        memmove(d, s, (size_t)size);
    p->report = ISO_REPORT_LINE;
    pthread_mutex_unlock(&p->lock);
    return st;
}

static const tport_backend_api proxy_api = {
    .struct_size = sizeof(tport_backend_api),
    .abi_major = TPORT_ABI_MAJOR,
    .abi_minor = TPORT_ABI_MINOR,
    .name = "isolated",
    .version = "proxy",
    .init = proxy_init,
    .shutdown = proxy_shutdown,
    .device_count = proxy_device_count,
    .device_info = proxy_device_info,
    .supports_op = proxy_supports_op,
    .compute = proxy_compute,
    .buffer_alloc = proxy_buffer_alloc,
    .buffer_free = proxy_buffer_free,
    .tensor_alloc_size = proxy_tensor_alloc_size,
    .tensor_write = proxy_tensor_write,
    .tensor_read = proxy_tensor_read,
    .buffer_fill = proxy_buffer_fill,
    .buffer_copy = proxy_buffer_copy,
    .compute_async = proxy_compute_async,
    .wait = proxy_wait,
};

const tport_backend_api *tport_isolate_proxy_api(void) {
    return &proxy_api;
}
