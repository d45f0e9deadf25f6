/* tport serve: the server's shared state and the parts' entry points.
 * http.c is the libmicrohttpd glue, routes.c the endpoints, request.c the
 * JSON bodies, stream.c the server-sent events, slots.c the sessions and
 * queue, prompt.c the prompt tokens, chat_template.c the chat formats,
 * generate.c the token loop, utf8.c valid output, serve_main.c the command. */
#ifndef TPORT_SERVE_SERVE_H
#define TPORT_SERVE_SERVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <microhttpd.h>

#include "chat_jinja.h"
#include "chat_template.h"
#include "generate.h"
#include "slots.h"
#include "tool_calls.h"
#include "tport/tport.h"

/* Counters since start, for GET /metrics (llama-server's names). */
typedef struct serve_metrics {
    atomic_uint_fast64_t requests, requests_failed;
    atomic_uint_fast64_t prompt_tokens, prompt_cached, predicted, decodes;
    atomic_uint_fast64_t prompt_us, predicted_us; /* microseconds         */
} serve_metrics;

typedef struct serve_server {
    tport_model *model;
    char model_id[128];        /* what /v1/models lists                   */
    long created;              /* load time, Unix seconds                 */
    slot_pool slots;
    int32_t n_ctx;             /* per slot                                */
    chat_format chat;          /* the format, when jinja.tmpl is NULL     */
    chat_jinja jinja;          /* the model's own template, if it renders */
    const char *end_of_turn;   /* an extra stop marker for chats, or NULL */
    tool_format tools;         /* the template's tool-call format         */
    size_t max_body;
    const char *api_key;       /* NULL = no authentication                */
    int32_t default_max_tokens;
    atomic_bool stopping;      /* SIGINT/SIGTERM: finish streams, refuse new work */
    atomic_int open_streams;   /* streaming responses not yet torn down   */
    atomic_uint_fast64_t next_id;
    serve_metrics metrics;     /* for GET /metrics                        */
} serve_server;

/* One HTTP request, from its first byte to the access-log line. */
typedef struct serve_conn {
    serve_server *srv;
    struct MHD_Connection *mhd;
    char method[8];
    char path[96];
    char *body;
    size_t body_len, body_cap;
    bool body_too_large;
    double t_start;
    unsigned status;
    int32_t n_prompt, n_gen;   /* tokens, for the log                     */
    struct serve_stream *stream; /* shared with the streaming response  */
} serve_conn;

/* Logged for a request whose client left before the answer (nginx's
 * "client closed request"); never sent. */
#define SERVE_STATUS_CLIENT_GONE 499

/* Milliseconds on the monotonic clock. */
double serve_now_ms(void);
/* True once the client's socket is closed (poll for hang-up, no read). */
bool serve_client_gone(void *conn /* serve_conn* */);

/* Responses.  Each queues the response and returns MHD's result. */
enum MHD_Result serve_send_json(serve_conn *c, unsigned status, cJSON *body); /* takes body */
enum MHD_Result serve_send_error(serve_conn *c, unsigned status, const char *param, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Adds a finished generation to the metrics. */
void serve_count_job(serve_server *srv, const gen_job *j);
/* GET /metrics and GET /slots. */
enum MHD_Result serve_metrics_page(serve_conn *c);
enum MHD_Result serve_slots_page(serve_conn *c);

/* POST /v1/embeddings (embeddings.c). */
enum MHD_Result serve_embeddings(serve_conn *c);

/* Routes a complete request (body read). */
enum MHD_Result serve_route(serve_conn *c);

/* The generation endpoints, non-streaming and streaming. */
enum MHD_Result serve_completion(serve_conn *c, serve_request *req, bool chat);

/* A streaming response over an acquired slot; takes the spec and slot. */
enum MHD_Result serve_stream_start(serve_conn *c, gen_spec *spec, int slot, bool chat, bool include_usage,
                                   const char *id);

/* Starts libmicrohttpd on host:port (port 0 = any free one); returns the
 * daemon and the port it got, or NULL after printing why. */
struct MHD_Daemon *serve_http_start(serve_server *srv, const char *host, int port, int *bound_port);

#endif
