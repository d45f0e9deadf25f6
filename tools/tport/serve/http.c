/* libmicrohttpd glue: one thread per connection (a generation blocks its
 * own thread only), body collection with a size limit, API-key check,
 * JSON responses and the access log. */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "serve.h"
#include "stream.h"

double serve_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* POLLRDHUP: the peer closed (or half-closed) its side.  HTTP clients do
 * not half-close while waiting for an answer, so this means "gone". */
bool serve_client_gone(void *arg) {
    serve_conn *c = arg;
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c->mhd, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci)
        return true;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLRDHUP};
    return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

static enum MHD_Result queue(serve_conn *c, unsigned status, struct MHD_Response *r, const char *type) {
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    c->status = status;
    enum MHD_Result ok = MHD_queue_response(c->mhd, status, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result serve_send_json(serve_conn *c, unsigned status, cJSON *body) {
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (!text)
        return MHD_NO;
    size_t n = strlen(text);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
    if (!r)
        free(text);
    return queue(c, status, r, "application/json; charset=utf-8");
}

/* OpenAI's error object; `type` as llama-server names them. */
static const char *error_type(unsigned status) {
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 413: return "invalid_request_error";
    case 503: return "unavailable_error";
    case 500: return "server_error";
    default: return "invalid_request_error";
    }
}

enum MHD_Result serve_send_error(serve_conn *c, unsigned status, const char *param, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    char *clean = utf8_clean(msg, strlen(msg));
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "message", clean ? clean : "error");
    cJSON_AddStringToObject(e, "type", error_type(status));
    if (param)
        cJSON_AddStringToObject(e, "param", param);
    else
        cJSON_AddNullToObject(e, "param");
    cJSON_AddNumberToObject(e, "code", status);
    free(clean);
    return serve_send_json(c, status, root);
}

/* Constant-time comparison, so the key cannot be guessed byte by byte. */
static bool same_key(const char *a, const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    unsigned char d = na != nb;
    for (size_t i = 0; i < na; i++)
        d |= (unsigned char)(a[i] ^ b[i % (nb ? nb : 1)]);
    return d == 0;
}

static bool authorised(serve_conn *c) {
    if (!c->srv->api_key || !strcmp(c->path, "/health"))
        return true;
    const char *h = MHD_lookup_connection_value(c->mhd, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7))
        return false;
    return same_key(h + 7, c->srv->api_key);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *mhd, const char *url, const char *method,
                                  const char *version, const char *upload, size_t *upload_size, void **req_cls) {
    (void)version;
    serve_server *srv = cls;
    serve_conn *c = *req_cls;
    if (!c) { /* first call: headers only */
        if (!(c = calloc(1, sizeof *c)))
            return MHD_NO;
        c->srv = srv;
        c->mhd = mhd;
        c->t_start = serve_now_ms();
        snprintf(c->method, sizeof c->method, "%s", method);
        snprintf(c->path, sizeof c->path, "%s", url);
        *req_cls = c;
        if (!authorised(c))
            return serve_send_error(c, 401, NULL, "invalid or missing API key (Authorization: Bearer KEY)");
        const char *cl = MHD_lookup_connection_value(mhd, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl && strtoull(cl, NULL, 10) > srv->max_body)
            return serve_send_error(c, 413, NULL, "the body exceeds the limit of %zu bytes (--max-body)",
                                    srv->max_body);
        return MHD_YES;
    }
    if (*upload_size) { /* a piece of the body */
        size_t n = *upload_size;
        *upload_size = 0;
        if (c->body_too_large || c->body_len + n > srv->max_body) {
            c->body_too_large = true;
            return MHD_YES;
        }
        if (c->body_len + n + 1 > c->body_cap) {
            size_t cap = c->body_cap ? c->body_cap : 4096;
            while (cap < c->body_len + n + 1)
                cap *= 2;
            char *b = realloc(c->body, cap);
            if (!b)
                return MHD_NO;
            c->body = b;
            c->body_cap = cap;
        }
        memcpy(c->body + c->body_len, upload, n);
        c->body_len += n;
        c->body[c->body_len] = 0;
        return MHD_YES;
    }
    if (c->status) /* already answered (401/413 before the body) */
        return MHD_YES;
    if (c->body_too_large)
        return serve_send_error(c, 413, NULL, "the body exceeds the limit of %zu bytes (--max-body)", srv->max_body);
    return serve_route(c);
}

static const char *client_address(struct MHD_Connection *mhd, char *buf, size_t cap) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mhd, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    snprintf(buf, cap, "?");
    if (!ci || !ci->client_addr)
        return buf;
    const struct sockaddr *sa = ci->client_addr;
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, buf, (socklen_t)cap);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, buf, (socklen_t)cap);
    return buf;
}

/* One access-log line per request: client, method, path, status, tokens, time. */
static void on_completed(void *cls, struct MHD_Connection *mhd, void **req_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls;
    serve_conn *c = *req_cls;
    if (!c)
        return;
    *req_cls = NULL;
    if (c->stream)
        serve_stream_detach(c);
    char addr[64];
    fprintf(stderr, "tport serve: %s %s %s %u prompt=%d completion=%d %.1f ms%s\n", client_address(mhd, addr, sizeof addr),
            c->method, c->path, c->status, (int)c->n_prompt, (int)c->n_gen, serve_now_ms() - c->t_start,
            toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed early)");
    free(c->body);
    free(c);
}

static void on_mhd_error(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    /* what libmicrohttpd says when a handler drops a connection whose client
     * already left (logged as 499 by the access log) */
    if (!strncmp(fmt, "Application reported internal error", 35))
        return;
    fputs("tport serve: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

struct MHD_Daemon *serve_http_start(serve_server *srv, const char *host, int port, int *bound_port) {
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE},
                    *ai = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int gai = getaddrinfo(host, service, &hints, &ai);
    if (gai) {
        fprintf(stderr, "tport: serve: cannot resolve --host %s: %s\n", host, gai_strerror(gai));
        return NULL;
    }
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC |
                     MHD_USE_ERROR_LOG | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_error, srv,
        MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_CONNECTION_LIMIT, (unsigned)512, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        fprintf(stderr, "tport: serve: cannot listen on %s:%d (in use, or not an address of this machine)\n", host,
                port);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *bound_port = di ? di->port : port;
    return d;
}
