/* A helper that speaks the isolation protocol and lies, for test_isolate.c:
 * the host must treat every malformed reply as the device lost (or the
 * plug-in refused, while loading), close whatever it was sent and leave
 * nothing behind.  ISO_EVIL_MODE (passed through TPORT_ISOLATE_ENV):
 *   1 the hello reply carries another sequence number
 *   2 the hello reply is 4 bytes short
 *   3 a header announcing a payload over the limit
 *   4 a correct hello reply with a file descriptor attached
 *   5 loads and starts fine ("evil", one ACCEL device), then answers
 *     supports_op with 7 (not 0 or 1)
 *   6 like 5, then answers supports_op with a reply of another type */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "isolate/wire.h"
#include "tport/backend.h"

static int sock = 3;

static void send_loaded(uint32_t seq, size_t cut, int fd) {
    iso_loaded l = {.ok = 1, .score = 5, .abi_major = TPORT_ABI_MAJOR, .abi_minor = TPORT_ABI_MINOR};
    snprintf(l.name, sizeof l.name, "evil");
    snprintf(l.version, sizeof l.version, "1");
    iso_send(sock, ISO_HELLO | ISO_MSG_REPLY, seq, &l, sizeof l - cut, NULL, 0, fd, iso_deadline(2000));
}

int main(void) {
    const char *m = getenv("ISO_EVIL_MODE");
    const int mode = m ? atoi(m) : 0;
    iso_buf buf = {0};
    iso_header h;
    if (iso_recv(sock, &h, &buf, NULL, iso_deadline(5000)) != ISO_IO_OK)
        return 1;
    if (mode == 1)
        send_loaded(h.seq + 1, 0, -1);
    else if (mode == 2)
        send_loaded(h.seq, 4, -1);
    else if (mode == 3) {
        iso_header big = {.magic = ISO_MAGIC, .version = TPORT_ISOLATE_PROTOCOL, .type = ISO_HELLO | ISO_MSG_REPLY,
                          .size = ISO_PAYLOAD_MAX + 1, .seq = h.seq};
        if (write(sock, &big, sizeof big) < 0)
            return 1;
    } else if (mode == 4) {
        int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        send_loaded(h.seq, 0, fd);
        close(fd);
    } else {
        send_loaded(h.seq, 0, -1);
    }
    for (;;) { /* then answer what comes, badly where the mode says so */
        int fd = -1;
        if (iso_recv(sock, &h, &buf, &fd, iso_deadline(30000)) != ISO_IO_OK)
            break;
        if (fd >= 0)
            close(fd);
        if (h.type == ISO_START) {
            iso_started s = {.ok = 1, .device_count = 1, .n_devices = 1};
            s.devices[0].kind = TPORT_DEVICE_ACCEL;
            snprintf(s.devices[0].name, sizeof s.devices[0].name, "evil0");
            iso_send(sock, ISO_START | ISO_MSG_REPLY, h.seq, &s, sizeof s, NULL, 0, -1, iso_deadline(2000));
        } else if (h.type == ISO_SUPPORTS) {
            iso_status st = {.status = mode == 5 ? 7 : 1};
            uint16_t type = mode == 6 ? ISO_COMPUTE | ISO_MSG_REPLY : ISO_SUPPORTS | ISO_MSG_REPLY;
            iso_send(sock, type, h.seq, &st, sizeof st, NULL, 0, -1, iso_deadline(2000));
        } else {
            iso_status st = {0};
            iso_send(sock, h.type | ISO_MSG_REPLY, h.seq, &st, sizeof st, NULL, 0, -1, iso_deadline(2000));
            if (h.type == ISO_SHUTDOWN)
                break;
        }
    }
    iso_buf_free(&buf);
    return 0;
}
