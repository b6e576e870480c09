#ifndef CMICROHTTPD_SHIMS_H
#define CMICROHTTPD_SHIMS_H

/*
 * Non-variadic, prefixed wrappers around the parts of libmicrohttpd that Swift cannot call directly
 * (MHD_start_daemon, MHD_get_daemon_info and MHD_get_connection_info are C-variadic) or that need
 * C types such as va_list. Every MHD option is passed with its exact C type so the compiler checks it.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <microhttpd.h>

/* Receives one formatted libmicrohttpd error-log line (without trailing newline). */
typedef void (*CMicroHTTPDShims_LogMessageCallback)(void *cls, const char *message);

/* Where MHD_OPTION_EXTERNAL_LOGGER output goes; owned by the caller, must outlive the daemon. */
typedef struct CMicroHTTPDShims_LogSink {
    CMicroHTTPDShims_LogMessageCallback callback;
    void *cls;
} CMicroHTTPDShims_LogSink;

/* A listening address built from a numeric host string. */
typedef struct CMicroHTTPDShims_Address {
    struct sockaddr_storage storage;
    int is_ipv6;
} CMicroHTTPDShims_Address;

/*
 * Fills `out` from a numeric IPv4 or IPv6 host ("0.0.0.0", "::", "127.0.0.1", "::1") or "localhost"
 * and a port. Returns 0 on success, -1 if `host` is not an address this function understands.
 */
int CMicroHTTPDShims_make_address(const char *host, uint16_t port, CMicroHTTPDShims_Address *out);

/*
 * Starts a daemon with a fixed set of options. The URL unescaper is always replaced by one that leaves the
 * text as sent (path and query arguments come out raw; the Swift side decodes). per_ip_connection_limit 0 means
 * unlimited, listen_backlog 0 means SOMAXCONN. Returns NULL on failure (the reason goes
 * to the log sink).
 */
struct MHD_Daemon *CMicroHTTPDShims_start_daemon(
    unsigned int flags,
    const CMicroHTTPDShims_Address *address,
    MHD_AccessHandlerCallback access_handler, void *access_handler_cls,
    MHD_RequestCompletedCallback request_completed, void *request_completed_cls,
    MHD_NotifyConnectionCallback notify_connection, void *notify_connection_cls,
    CMicroHTTPDShims_LogSink *log_sink,
    unsigned int thread_pool_size,
    unsigned int connection_limit,
    unsigned int per_ip_connection_limit,
    unsigned int connection_timeout_seconds,
    size_t connection_memory_limit,
    unsigned int listen_backlog,
    unsigned int listening_address_reuse,
    int listen_fd);

/* A non-blocking TCP socket bound to `address` and listening (SO_REUSEADDR; SO_REUSEPORT when asked; dual stack for
   the IPv6 any address): the descriptor, or -errno. */
int CMicroHTTPDShims_listen(const CMicroHTTPDShims_Address *address, unsigned int backlog, int reuse_port);

/* The port of the daemon's listening socket (MHD_DAEMON_INFO_BIND_PORT), 0 if unknown. */
uint16_t CMicroHTTPDShims_bound_port(struct MHD_Daemon *daemon);

/*
 * Writes the textual IP address of the connection's client into buf (NUL-terminated).
 * Returns 0 on success, -1 if the address is unknown or does not fit.
 */
int CMicroHTTPDShims_client_address(struct MHD_Connection *connection, char *buf, size_t len);

/*
 * Writes bytes straight to the connection's socket without blocking, bypassing libmicrohttpd. Only for a last
 * words response right before the access handler returns MHD_NO (libmicrohttpd then closes the connection), at a
 * point where libmicrohttpd itself is not sending anything. Returns the number of bytes written or -1.
 */
/* The connection's socket, or -1. */
int CMicroHTTPDShims_connection_fd(struct MHD_Connection *connection);

long CMicroHTTPDShims_send_raw(struct MHD_Connection *connection, const void *bytes, size_t count);

/* The socket context set by the connection notification callback (MHD_CONNECTION_INFO_SOCKET_CONTEXT), or NULL. */
void *CMicroHTTPDShims_socket_context(struct MHD_Connection *connection);

/*
 * What the request head takes of the connection's memory pool once parsed: its bytes
 * (MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE) plus 64 bytes for each header, cookie and query argument record. The
 * answer's own head must still fit in the rest of the pool, or libmicrohttpd closes the connection without a word.
 */
size_t CMicroHTTPDShims_request_head_cost(struct MHD_Connection *connection);

/* A small number for the calling thread (0, 1, 2... in the order threads first ask), stable for its lifetime. */
unsigned int CMicroHTTPDShims_thread_index(void);

/*
 * Whether the request can be answered from a prepared response: no query arguments, no body (Content-Length absent
 * or 0, no Transfer-Encoding) and none of If-None-Match, If-Modified-Since, If-Match, If-Unmodified-Since, If-Range,
 * Range. Returns 1 if so, with the Accept-Encoding value (not NUL-safe: use the length) or NULL when absent; 0
 * otherwise (also for a repeated Accept-Encoding). One pass over the headers, no allocation.
 */
int CMicroHTTPDShims_plain_request(
    struct MHD_Connection *connection, const char **accept_encoding, size_t *accept_encoding_length);

#endif
