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
 * TLS. A certificate chain and its private key, parsed and checked once (CMicroHTTPDShims_tls_identity_create), are
 * an identity: immutable and reference-counted. A slot holds the identity a listener presents and can be given
 * another one at any time (a certificate renewed on reload): libmicrohttpd 0.9.75 cannot change the certificate of
 * a running daemon, so the daemon is started with a GnuTLS certificate callback (MHD_OPTION_HTTPS_CERT_CALLBACK2)
 * that asks the slot at every full handshake and hands GnuTLS its own copy of the identity, which GnuTLS frees
 * after use (GNUTLS_CERT_RETR_DEINIT_ALL): a replaced identity is never in use by a handshake once released.
 */
typedef struct CMicroHTTPDShims_TLSIdentity CMicroHTTPDShims_TLSIdentity;
typedef struct CMicroHTTPDShims_TLSSlot CMicroHTTPDShims_TLSSlot;

/*
 * Parses a PEM certificate chain (leaf first) and a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1) and checks
 * that the key belongs to the leaf. Returns the identity (one reference), or NULL with the reason in `error`
 * (NUL-terminated, never any key bytes).
 */
CMicroHTTPDShims_TLSIdentity *CMicroHTTPDShims_tls_identity_create(
    const uint8_t *certificate_pem, size_t certificate_length, const uint8_t *key_pem, size_t key_length,
    char *error, size_t error_length);

/* Drops one reference; the last one frees the identity. */
void CMicroHTTPDShims_tls_identity_release(CMicroHTTPDShims_TLSIdentity *identity);

/* The number of certificates in the chain. */
unsigned int CMicroHTTPDShims_tls_identity_chain_length(const CMicroHTTPDShims_TLSIdentity *identity);

/*
 * A field of the leaf certificate as text: 0 subject DN, 1 issuer DN, 2 serial number (hex). Returns 0, or -1 if it
 * does not fit in `length` bytes (NUL included).
 */
int CMicroHTTPDShims_tls_identity_field(
    const CMicroHTTPDShims_TLSIdentity *identity, int field, char *buffer, size_t length);

/* The leaf certificate's validity: not before (which 0) or not after (which 1), seconds since 1970. */
int64_t CMicroHTTPDShims_tls_identity_time(const CMicroHTTPDShims_TLSIdentity *identity, int which);

/* A slot presenting `identity` (the slot takes its own reference). */
CMicroHTTPDShims_TLSSlot *CMicroHTTPDShims_tls_slot_create(CMicroHTTPDShims_TLSIdentity *identity);

/* New handshakes present `identity` from now on (the slot takes a reference and drops the old one's). */
void CMicroHTTPDShims_tls_slot_set(CMicroHTTPDShims_TLSSlot *slot, CMicroHTTPDShims_TLSIdentity *identity);

/* Frees the slot. Only once no daemon started with it runs any more. */
void CMicroHTTPDShims_tls_slot_free(CMicroHTTPDShims_TLSSlot *slot);

/*
 * Starts a daemon with a fixed set of options. The URL unescaper is always replaced by one that leaves the
 * text as sent (path and query arguments come out raw; the Swift side decodes). per_ip_connection_limit 0 means
 * unlimited, listen_backlog 0 means SOMAXCONN. With a TLS slot the daemon speaks HTTPS only (MHD_USE_TLS), with
 * the slot's identity and the GnuTLS priority string `tls_priorities` (NULL: libmicrohttpd's default), and
 * `*tls_state` is set to what must be freed after the daemon stops (CMicroHTTPDShims_tls_state_free). One slot may
 * serve several daemons; it must outlive them. Returns NULL on failure (the reason goes to the log sink).
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
    int listen_fd,
    struct CMicroHTTPDShims_TLSSlot *tls,
    const char *tls_priorities,
    void **tls_state);

/* Frees what CMicroHTTPDShims_start_daemon kept for a TLS daemon (`tls_state`), after MHD_stop_daemon. */
void CMicroHTTPDShims_tls_state_free(void *tls_state);

/* Internal to the shims (tls.c): the connection notification of a TLS daemon and its certificate callback. */
void *CMicroHTTPDShims_tls_notify_create(
    struct CMicroHTTPDShims_TLSSlot *slot, MHD_NotifyConnectionCallback forward, void *forward_cls);
void CMicroHTTPDShims_tls_notify_connection(
    void *cls, struct MHD_Connection *connection, void **socket_context, enum MHD_ConnectionNotificationCode code);
void *CMicroHTTPDShims_tls_retrieve_function(void);

/* A non-blocking TCP socket bound to `address` and listening (SO_REUSEADDR; SO_REUSEPORT when asked; dual stack for
   the IPv6 any address): the descriptor, or -errno. */
int CMicroHTTPDShims_listen(const CMicroHTTPDShims_Address *address, unsigned int backlog, int reuse_port);

/* A non-blocking eventfd for CMicroHTTPDShims_wake_join and CMicroHTTPDShims_wake_signal: the descriptor, or -errno.
   Close it after MHD_stop_daemon. */
int CMicroHTTPDShims_wake_create(void);

/* Adds `wake_fd` (edge-triggered, event pointer NULL, which libmicrohttpd's epoll loop skips) to the epoll set of the
   worker that serves `connection`, once per worker (remembered per thread: call it on the worker's thread, from the
   connection notification). Each CMicroHTTPDShims_wake_signal then ends that worker's epoll_wait: libmicrohttpd
   0.9.75's MHD_epoll, after an epoll_wait that returned exactly MAX_EVENTS (128) events, waits again with the full
   timeout (up to the connection timeout) before handling any of them, so without another event those requests sit
   unread. 0, or -errno if epoll_ctl failed. */
int CMicroHTTPDShims_wake_join(struct MHD_Connection *connection, int wake_fd);

/* One event on `wake_fd` for every epoll set it joined (the counter is read first, so it never fills up). */
void CMicroHTTPDShims_wake_signal(int wake_fd);

/* The port of the daemon's listening socket (MHD_DAEMON_INFO_BIND_PORT), 0 if unknown. */
uint16_t CMicroHTTPDShims_bound_port(struct MHD_Daemon *daemon);

/*
 * Writes the textual IP address of the connection's client into buf (NUL-terminated).
 * Returns 0 on success, -1 if the address is unknown or does not fit.
 */
int CMicroHTTPDShims_client_address(struct MHD_Connection *connection, char *buf, size_t len);

/*
 * Writes bytes straight to the connection without blocking, bypassing libmicrohttpd: to the socket, or over TLS as
 * one GnuTLS record on the connection's session (the handshake must be over: not from the connection-started
 * notification). Only for a last words response right before the access handler returns MHD_NO (libmicrohttpd
 * then closes the connection), at a point where libmicrohttpd itself is not sending anything. Returns the number
 * of bytes written or -1.
 */
long CMicroHTTPDShims_send_raw(struct MHD_Connection *connection, const void *bytes, size_t count);

/*
 * Ends the sending side of the connection after a last-words answer (`CMicroHTTPDShims_send_raw`): over TLS a
 * close_notify alert first (best effort, non-blocking), then shutdown(SHUT_WR), so the client reads the answer
 * and then the end of the stream.
 */
void CMicroHTTPDShims_end_sending(struct MHD_Connection *connection);

/* The connection's socket, or -1. */
int CMicroHTTPDShims_connection_fd(struct MHD_Connection *connection);

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
 * Range, nor (when `cmcd_headers` is non-zero: the handler reads them) a CMCD-* header. Returns 1 if so, with the
 * Accept-Encoding value (not NUL-safe: use the length) or NULL when absent; 0 otherwise (also for a repeated
 * Accept-Encoding). One pass over the headers, no allocation.
 */
int CMicroHTTPDShims_plain_request(
    struct MHD_Connection *connection, int cmcd_headers, const char **accept_encoding,
    size_t *accept_encoding_length);

#endif
