/* Message framing for isolation (wire.h).  Every socket call is
 * non-blocking (MSG_DONTWAIT) and waits in poll() up to the deadline, so a
 * peer that stops reading or writing costs at most the timeout. */
#include "isolate/wire.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static uint16_t version = TPORT_ISOLATE_PROTOCOL;

void iso_wire_set_version(uint16_t v) {
    version = v;
}

uint16_t iso_wire_version(void) {
    return version;
}

long long iso_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long iso_deadline(long long ms) {
    return ms < 0 ? -1 : iso_now_ms() + ms;
}

/* Waits for `events` on sock; false on timeout. */
static bool wait_for(int sock, short events, long long deadline, bool *hangup) {
    for (;;) {
        int left = -1;
        if (deadline >= 0) {
            long long d = deadline - iso_now_ms();
            if (d <= 0)
                return false;
            left = d > 1000000 ? 1000000 : (int)d;
        }
        struct pollfd p = {.fd = sock, .events = events};
        int r = poll(&p, 1, left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *hangup = true;
            return true;
        }
        if (r == 0)
            continue; /* re-check the deadline */
        if ((p.revents & (POLLERR | POLLNVAL)) || ((p.revents & POLLHUP) && !(p.revents & POLLIN)))
            *hangup = true;
        return true;
    }
}

iso_io iso_send(int sock, uint16_t type, uint32_t seq, const void *a, size_t na, const void *b, size_t nb,
                int pass_fd, long long deadline) {
    if (na + nb > ISO_PAYLOAD_MAX)
        return ISO_IO_MALFORMED;
    iso_header h = {.magic = ISO_MAGIC, .version = version, .type = type,
                    .size = (uint32_t)(na + nb), .seq = seq};
    struct iovec iov[3] = {{&h, sizeof h}, {(void *)a, na}, {(void *)b, nb}};
    int first = 0;
    bool fd_sent = pass_fd < 0;
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    while (first < 3) {
        if (iov[first].iov_len == 0) {
            first++;
            continue;
        }
        struct msghdr m = {.msg_iov = iov + first, .msg_iovlen = (size_t)(3 - first)};
        if (!fd_sent) {
            memset(&ctl, 0, sizeof ctl);
            m.msg_control = ctl.buf;
            m.msg_controllen = sizeof ctl.buf;
            struct cmsghdr *c = CMSG_FIRSTHDR(&m);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int));
            memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
        }
        ssize_t w = sendmsg(sock, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return ISO_IO_CLOSED;
            bool hup = false;
            if (!wait_for(sock, POLLOUT, deadline, &hup))
                return ISO_IO_TIMEOUT;
            if (hup)
                return ISO_IO_CLOSED;
            continue;
        }
        fd_sent = true;
        size_t done = (size_t)w;
        while (first < 3 && done >= iov[first].iov_len) {
            done -= iov[first].iov_len;
            iov[first].iov_len = 0;
            first++;
        }
        if (first < 3) {
            iov[first].iov_base = (char *)iov[first].iov_base + done;
            iov[first].iov_len -= done;
        }
    }
    return ISO_IO_OK;
}

/* Reads exactly n bytes; collects at most one passed descriptor. */
static iso_io read_exact(int sock, void *dst, size_t n, int *fd, bool *extra_fd, long long deadline) {
    size_t got = 0;
    while (got < n) {
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(4 * sizeof(int))];
        } ctl;
        struct iovec iov = {(char *)dst + got, n - got};
        struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof ctl.buf};
        ssize_t r = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                return ISO_IO_CLOSED;
            bool hup = false;
            if (!wait_for(sock, POLLIN, deadline, &hup))
                return ISO_IO_TIMEOUT;
            if (hup)
                return ISO_IO_CLOSED;
            continue;
        }
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
                continue;
            size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < k; i++) {
                int f;
                memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
                if (*fd < 0) {
                    *fd = f;
                } else {
                    close(f);
                    *extra_fd = true;
                }
            }
        }
        if (m.msg_flags & MSG_CTRUNC)
            *extra_fd = true; /* more descriptors than expected: dropped by the kernel */
        if (r == 0)
            return ISO_IO_CLOSED;
        got += (size_t)r;
    }
    return ISO_IO_OK;
}

iso_io iso_recv(int sock, iso_header *h, iso_buf *buf, int *fd_out, long long deadline) {
    int fd = -1;
    bool extra = false;
    if (fd_out)
        *fd_out = -1;
    iso_io st = read_exact(sock, h, sizeof *h, &fd, &extra, deadline);
    if (st == ISO_IO_OK && (h->magic != ISO_MAGIC || h->size > ISO_PAYLOAD_MAX))
        st = ISO_IO_MALFORMED;
    if (st == ISO_IO_OK && h->size > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 4096;
        while (cap < h->size)
            cap *= 2;
        unsigned char *p = realloc(buf->p, cap);
        if (!p)
            st = ISO_IO_MALFORMED;
        else {
            buf->p = p;
            buf->cap = cap;
        }
    }
    if (st == ISO_IO_OK && h->size)
        st = read_exact(sock, buf->p, h->size, &fd, &extra, deadline);
    if (st == ISO_IO_OK && (extra || (fd >= 0 && !fd_out)))
        st = ISO_IO_MALFORMED;
    if (st == ISO_IO_OK && h->version != version)
        st = ISO_IO_VERSION;
    if (st == ISO_IO_OK && fd_out)
        *fd_out = fd;
    else if (fd >= 0)
        close(fd);
    return st;
}

void iso_buf_free(iso_buf *b) {
    free(b->p);
    b->p = NULL;
    b->cap = 0;
}
