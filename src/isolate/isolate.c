/* Bringing one isolated plug-in up and down: the helper started, the file
 * loaded there, init and the device list, and the end (shutdown, then kill
 * and reap).  What the registry needs comes in as tport_isolate_options;
 * what the helper said goes back as tport_isolate_loaded and reason
 * strings (the registry turns them into its candidates' states). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/error.h"
#include "isolate/isolate.h"
#include "isolate/internal.h"
#include "isolate/spawn.h"

static void proxy_free(iso_proxy *p) {
    iso_region_release_all(p);
    iso_buf_free(&p->rx);
    free(p->weights);
    free(p->spans);
    free(p->backs);
    free(p->sup_keys);
    free(p->sup_vals);
    free(p->enc.p);
    free(p->blob.p);
    free(p->remap);
    free(p->order);
    free(p->is_node);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Ends a live helper politely, then for certain. */
static void proxy_end(iso_proxy *p) {
    if (!p->lost && p->sock >= 0) {
        if (iso_send(p->sock, ISO_SHUTDOWN, ++p->seq, NULL, 0, NULL, 0, -1, iso_deadline(2000)) == ISO_IO_OK) {
            iso_header h;
            iso_recv(p->sock, &h, &p->rx, NULL, iso_deadline(5000));
        }
    }
    if (p->sock >= 0)
        close(p->sock);
    p->sock = -1;
    if (p->pid > 0 && !iso_reap_clean(p->pid, 2000))
        tport_log(TPORT_LOG_DEBUG, "backends: isolated %s: the helper did not exit cleanly", p->name);
    p->pid = -1;
}

static void copy_clean(char *dst, size_t cap, const char *src, size_t src_cap) {
    size_t n = strnlen(src, src_cap < cap ? src_cap : cap - 1);
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[i] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    dst[n] = '\0';
}

static bool plain_name(const char *s) {
    size_t n = strlen(s);
    if (!n || n > 63)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '_' || s[i] == '-' || s[i] == '.'))
            return false;
    return true;
}

tport_isolate_outcome tport_isolate_open(const char *path, const tport_isolate_options *o, struct iso_proxy **proxy,
                                         tport_isolate_loaded *out, char *reason, size_t cap) {
    memset(out, 0, sizeof *out);
    *proxy = NULL;
    reason[0] = '\0';
    iso_proxy *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(reason, cap, "out of memory");
        return TPORT_ISOLATE_REJECTED;
    }
    pthread_mutex_init(&p->lock, NULL);
    p->sock = -1;
    p->timeout_ms = o->timeout_ms;
    p->load_timeout_ms = o->load_timeout_ms;
    snprintf(p->name, sizeof p->name, "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
    snprintf(p->stage, sizeof p->stage, "start");
    char why[200];
    p->pid = iso_spawn(o->helper, o->keep_env, &p->sock, why, sizeof why);
    if (p->pid < 0) {
        snprintf(reason, cap, "isolation requested, but %s could not be started: %s", o->helper, why);
        proxy_free(p);
        return TPORT_ISOLATE_REJECTED;
    }
    out->pid = (int)p->pid;
    iso_hello hello = {.abi_major = TPORT_ABI_MAJOR, .abi_minor = TPORT_ABI_MINOR};
    uint32_t size = 0;
    tport_clear_error();
    if (!iso_call(p, ISO_HELLO, &hello, sizeof hello, path, strlen(path), -1, "loading", &size) ||
        size != sizeof(iso_loaded)) {
        if (!p->lost) /* a reply of the wrong size */
            iso_lose(p, false, "malformed load reply, killed", "loading");
        char msg[300];
        snprintf(msg, sizeof msg, "%s", tport_last_error());
        snprintf(reason, cap, "isolated: %s (step %s)", msg, p->stage);
        proxy_free(p);
        return TPORT_ISOLATE_REJECTED;
    }
    iso_loaded l;
    memcpy(&l, p->rx.p, sizeof l);
    copy_clean(out->name, sizeof out->name, l.name, sizeof l.name);
    copy_clean(out->version, sizeof out->version, l.version, sizeof l.version);
    out->abi_major = l.abi_major;
    if (!l.ok) {
        char text[ISO_TEXT_MAX];
        copy_clean(text, sizeof text, l.reason, sizeof l.reason);
        snprintf(reason, cap, "%s", text);
        proxy_end(p);
        proxy_free(p);
        return TPORT_ISOLATE_REJECTED;
    }
    if (!plain_name(out->name)) {
        snprintf(reason, cap, "isolated helper sent a malformed name");
        proxy_end(p);
        proxy_free(p);
        return TPORT_ISOLATE_REJECTED;
    }
    if (o->wanted && !o->wanted(out->name)) {
        proxy_end(p);
        proxy_free(p);
        return TPORT_ISOLATE_DECLINED; /* load it in-process */
    }
    snprintf(p->name, sizeof p->name, "%s", out->name);
    out->abi_minor = l.abi_minor;
    out->required_isa = l.required_isa;
    out->score = l.score;
    *proxy = p;
    return TPORT_ISOLATE_LOADED;
}

bool tport_isolate_start(struct iso_proxy *p, char *reason, size_t cap) {
    uint32_t size = 0;
    tport_clear_error();
    if (!iso_call(p, ISO_START, NULL, 0, NULL, 0, -1, "init", &size) || size != sizeof(iso_started)) {
        if (!p->lost)
            iso_lose(p, false, "malformed init reply, killed", "init");
        char msg[300];
        snprintf(msg, sizeof msg, "%s", tport_last_error());
        snprintf(reason, cap, "isolated: %s (step %s)", msg, p->stage);
        return false;
    }
    iso_started s;
    memcpy(&s, p->rx.p, sizeof s);
    if (!s.ok) {
        char text[ISO_TEXT_MAX];
        copy_clean(text, sizeof text, s.reason, sizeof s.reason);
        snprintf(reason, cap, "%s", text);
        return false;
    }
    if (s.device_count <= 0 || s.n_devices <= 0 || s.n_devices > ISO_MAX_DEVICES ||
        s.n_devices > s.device_count) {
        snprintf(reason, cap, "isolated helper sent a malformed device list");
        return false;
    }
    /* A device with memory of its own keeps its buffers in the helper; the
     * others compute on memory shared with it. */
    p->device_mode = (s.devices[0].caps & TPORT_DEVICE_CAP_DEVICE_MEMORY) != 0;
    p->device_count = s.n_devices; /* the host drives what it was told about */
    p->n_devices = s.n_devices;
    for (int32_t i = 0; i < s.n_devices; i++) {
        iso_device *d = &p->devices[i];
        *d = s.devices[i];
        copy_clean(d->name, sizeof d->name, s.devices[i].name, sizeof d->name);
        copy_clean(d->description, sizeof d->description, s.devices[i].description, sizeof d->description);
    }
    return true;
}

void tport_isolate_close(struct iso_proxy *p) {
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    proxy_end(p);
    pthread_mutex_unlock(&p->lock);
    proxy_free(p);
}
