#include "CMicroHTTPDShims.h"

#include <gnutls/gnutls.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int CMicroHTTPDShims_make_address(const char *host, uint16_t port, CMicroHTTPDShims_Address *out) {
    memset(out, 0, sizeof(*out));
    if (strcmp(host, "localhost") == 0) {
        host = "127.0.0.1";
    }
    struct sockaddr_in *v4 = (struct sockaddr_in *)&out->storage;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        out->is_ipv6 = 0;
        return 0;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&out->storage;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        out->is_ipv6 = 1;
        return 0;
    }
    return -1;
}

/* Leaves the URL and the query arguments exactly as sent (MHD has already turned '+' into ' ' in arguments). */
static size_t CMicroHTTPDShims_keep_raw(void *cls, struct MHD_Connection *connection, char *s) {
    (void)cls;
    (void)connection;
    return strlen(s);
}

static void CMicroHTTPDShims_format_log(void *cls, const char *format, va_list arguments) {
    CMicroHTTPDShims_LogSink *sink = (CMicroHTTPDShims_LogSink *)cls;
    if (sink == NULL || sink->callback == NULL) {
        return;
    }
    char message[1024];
    int length = vsnprintf(message, sizeof(message), format, arguments);
    if (length < 0) {
        return;
    }
    size_t end = strlen(message);
    while (end > 0 && (message[end - 1] == '\n' || message[end - 1] == '\r')) {
        message[--end] = '\0';
    }
    sink->callback(sink->cls, message);
}

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
    CMicroHTTPDShims_TLSSlot *tls,
    const char *tls_priorities,
    void **tls_state) {
    if (address->is_ipv6) {
        flags |= MHD_USE_IPv6;
    }
    uint16_t port = 0;
    if (address->is_ipv6) {
        port = ntohs(((const struct sockaddr_in6 *)&address->storage)->sin6_port);
    } else {
        port = ntohs(((const struct sockaddr_in *)&address->storage)->sin_port);
    }
    if (listen_backlog == 0) {
        listen_backlog = SOMAXCONN;
    }
    /* Options passed only when asked for. MHD_OPTION_LISTENING_ADDRESS_REUSE with 0 does not mean "default": it
       makes libmicrohttpd leave out SO_REUSEADDR, so a restarted origin could not bind its port while old
       connections sit in TIME_WAIT (about 60 s after a kill -9). A thread pool of 1 makes MHD log a warning. */
    struct MHD_OptionItem optional[8];
    int count = 0;
    *tls_state = NULL;
    if (tls != NULL) {
        /* The connection notification goes through the TLS shim first: it tells the certificate callback which slot
           this worker thread serves (tls.c). */
        void *notify = CMicroHTTPDShims_tls_notify_create(tls, notify_connection, notify_connection_cls);
        if (notify == NULL) {
            return NULL;
        }
        *tls_state = notify;
        flags |= MHD_USE_TLS;
        notify_connection = CMicroHTTPDShims_tls_notify_connection;
        notify_connection_cls = notify;
        optional[count++] = (struct MHD_OptionItem){
            MHD_OPTION_HTTPS_CERT_CALLBACK2, 0, CMicroHTTPDShims_tls_retrieve_function()};
        if (tls_priorities != NULL) {
            optional[count++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_PRIORITIES, 0, (void *)tls_priorities};
        }
    }
    if (listen_fd >= 0) {
        /* A socket bound before the daemon (connections that came meanwhile wait in its backlog). */
        optional[count++] = (struct MHD_OptionItem){MHD_OPTION_LISTEN_SOCKET, (intptr_t)listen_fd, NULL};
    }
    if (listening_address_reuse) {
        optional[count++] = (struct MHD_OptionItem){MHD_OPTION_LISTENING_ADDRESS_REUSE, 1, NULL};
    }
    if (thread_pool_size > 1) {
        optional[count++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, (intptr_t)thread_pool_size, NULL};
    }
    optional[count] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    return MHD_start_daemon(
        flags, port, NULL, NULL,
        access_handler, access_handler_cls,
        /* The logger goes first so that messages about the other options reach it too. */
        MHD_OPTION_EXTERNAL_LOGGER, CMicroHTTPDShims_format_log, (void *)log_sink,
        MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&address->storage,
        MHD_OPTION_NOTIFY_COMPLETED, request_completed, request_completed_cls,
        MHD_OPTION_NOTIFY_CONNECTION, notify_connection, notify_connection_cls,
        MHD_OPTION_UNESCAPE_CALLBACK, CMicroHTTPDShims_keep_raw, (void *)NULL,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, connection_timeout_seconds,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_connection_limit,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, listen_backlog,
        MHD_OPTION_ARRAY, optional,
        MHD_OPTION_END);
}

int CMicroHTTPDShims_wake_create(void) {
    int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

void CMicroHTTPDShims_wake_signal(int wake_fd) {
    uint64_t count = 0;
    (void)!read(wake_fd, &count, sizeof(count));
    count = 1;
    (void)!write(wake_fd, &count, sizeof(count));
}

/* The worker daemon whose epoll set this thread has joined the wake descriptor to (a worker thread serves one daemon
   for its whole life, so this is set once per worker). */
static _Thread_local const struct MHD_Daemon *wake_joined = NULL;

int CMicroHTTPDShims_wake_join(struct MHD_Connection *connection, int wake_fd) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_DAEMON);
    if (info == NULL || info->daemon == NULL || info->daemon == wake_joined) {
        return 0;
    }
    const union MHD_DaemonInfo *daemon_info = MHD_get_daemon_info(info->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    if (daemon_info == NULL || daemon_info->epoll_fd < 0) {
        return 0;
    }
    /* Edge-triggered: each signal is one event, whether or not the workers ever read the descriptor (they never do). */
    struct epoll_event event = {.events = EPOLLIN | EPOLLET, .data = {.ptr = NULL}};
    if (epoll_ctl(daemon_info->epoll_fd, EPOLL_CTL_ADD, wake_fd, &event) != 0 && errno != EEXIST) {
        return -errno;
    }
    wake_joined = info->daemon;
    return 0;
}

int CMicroHTTPDShims_listen(const CMicroHTTPDShims_Address *address, unsigned int backlog, int reuse_port) {
    int family = address->is_ipv6 ? AF_INET6 : AF_INET;
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return -errno;
    }
    int on = 1;
    int off = 0;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
        (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0) ||
        (address->is_ipv6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) != 0)) {
        int error = errno;
        close(fd);
        return -error;
    }
    socklen_t length = address->is_ipv6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    if (bind(fd, (const struct sockaddr *)&address->storage, length) != 0 ||
        listen(fd, backlog == 0 ? SOMAXCONN : (int)backlog) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

uint16_t CMicroHTTPDShims_bound_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

int CMicroHTTPDShims_client_address(struct MHD_Connection *connection, char *buf, size_t len) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL || len == 0) {
        return -1;
    }
    const struct sockaddr *address = info->client_addr;
    const char *written = NULL;
    if (address->sa_family == AF_INET) {
        written = inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buf, (socklen_t)len);
    } else if (address->sa_family == AF_INET6) {
        written = inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buf, (socklen_t)len);
    }
    return written == NULL ? -1 : 0;
}

/* The connection's GnuTLS session, or NULL on a plain HTTP connection. */
static gnutls_session_t CMicroHTTPDShims_tls_session(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    return info == NULL ? NULL : (gnutls_session_t)info->tls_session;
}

long CMicroHTTPDShims_send_raw(struct MHD_Connection *connection, const void *bytes, size_t count) {
    gnutls_session_t session = CMicroHTTPDShims_tls_session(connection);
    if (session != NULL) {
        ssize_t sent = gnutls_record_send(session, bytes, count);
        return sent < 0 ? -1 : (long)sent;
    }
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (info == NULL) {
        return -1;
    }
    return (long)send(info->connect_fd, bytes, count, MSG_NOSIGNAL | MSG_DONTWAIT);
}

void CMicroHTTPDShims_end_sending(struct MHD_Connection *connection) {
    gnutls_session_t session = CMicroHTTPDShims_tls_session(connection);
    if (session != NULL) {
        (void)gnutls_bye(session, GNUTLS_SHUT_WR);
    }
    int fd = CMicroHTTPDShims_connection_fd(connection);
    if (fd >= 0) {
        shutdown(fd, SHUT_WR);
    }
}

int CMicroHTTPDShims_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

void *CMicroHTTPDShims_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

size_t CMicroHTTPDShims_request_head_cost(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (info == NULL) {
        return 0;
    }
    /* Each parsed value is a struct MHD_HTTP_Header (about 56 bytes) allocated from the pool. */
    int records = MHD_get_connection_values(
        connection, (enum MHD_ValueKind)(MHD_HEADER_KIND | MHD_COOKIE_KIND | MHD_GET_ARGUMENT_KIND), NULL, NULL);
    return info->header_size + (size_t)(records > 0 ? records : 0) * 64;
}

/* Thread indices are the lowest ones no live thread holds, returned when their thread exits (a pthread key's
 * destructor), so they stay small for the life of the process however many servers start and stop: per-thread
 * tables indexed by them (OriginServer's answer caches) keep working after threads are replaced. */
enum { THREAD_INDEX_LIMIT = 4096 };
static pthread_mutex_t thread_index_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char thread_index_used[THREAD_INDEX_LIMIT];
static pthread_key_t thread_index_key;
static pthread_once_t thread_index_once = PTHREAD_ONCE_INIT;
static _Thread_local unsigned int thread_index_plus_one = 0; /* 0: not assigned yet */

static void thread_index_release(void *value) {
    unsigned int index = (unsigned int)(uintptr_t)value - 1;
    if (index >= THREAD_INDEX_LIMIT) return;
    pthread_mutex_lock(&thread_index_lock);
    thread_index_used[index] = 0;
    pthread_mutex_unlock(&thread_index_lock);
}

static void thread_index_make_key(void) { (void)pthread_key_create(&thread_index_key, thread_index_release); }

unsigned int CMicroHTTPDShims_thread_index(void) {
    if (thread_index_plus_one == 0) {
        pthread_once(&thread_index_once, thread_index_make_key);
        unsigned int index = THREAD_INDEX_LIMIT; /* all taken: an index no table has (callers then keep nothing) */
        pthread_mutex_lock(&thread_index_lock);
        for (unsigned int candidate = 0; candidate < THREAD_INDEX_LIMIT; candidate++) {
            if (!thread_index_used[candidate]) {
                thread_index_used[candidate] = 1;
                index = candidate;
                break;
            }
        }
        pthread_mutex_unlock(&thread_index_lock);
        thread_index_plus_one = index + 1;
        if (index < THREAD_INDEX_LIMIT) (void)pthread_setspecific(thread_index_key, (void *)(uintptr_t)(index + 1));
    }
    return thread_index_plus_one - 1;
}

/* What CMicroHTTPDShims_plain_request learns from one pass over the headers. */
struct CMicroHTTPDShims_PlainScan {
    int plain;
    int cmcd_headers; /* CMCD-* headers take the request off the fast path */
    const char *accept_encoding;
    size_t accept_encoding_length;
};

static enum MHD_Result CMicroHTTPDShims_scan_header(
    void *cls, enum MHD_ValueKind kind, const char *key, size_t key_size, const char *value, size_t value_size) {
    (void)kind;
    (void)key_size;
    struct CMicroHTTPDShims_PlainScan *scan = cls;
    if (key == NULL) {
        return MHD_YES;
    }
    /* Headers that change the answer to a GET (validators, ranges) or announce a body. */
    static const char *const changing[] = {
        "If-None-Match", "If-Modified-Since", "If-Match", "If-Unmodified-Since", "If-Range", "Range",
        "Transfer-Encoding",
    };
    for (size_t i = 0; i < sizeof(changing) / sizeof(changing[0]); i++) {
        if (strcasecmp(key, changing[i]) == 0) {
            scan->plain = 0;
            return MHD_NO;
        }
    }
    /* CMCD-Request, -Object, -Status, -Session (CTA-5004): the player reports something the handler reads. */
    if (scan->cmcd_headers && strncasecmp(key, "CMCD-", 5) == 0) {
        scan->plain = 0;
        return MHD_NO;
    }
    if (strcasecmp(key, "Content-Length") == 0) {
        if (value == NULL || strcmp(value, "0") != 0) {
            scan->plain = 0;
            return MHD_NO;
        }
    } else if (strcasecmp(key, "Accept-Encoding") == 0) {
        if (scan->accept_encoding != NULL) { /* repeated: let the full path decide */
            scan->plain = 0;
            return MHD_NO;
        }
        scan->accept_encoding = value == NULL ? "" : value;
        scan->accept_encoding_length = value == NULL ? 0 : value_size;
    }
    return MHD_YES;
}

int CMicroHTTPDShims_plain_request(
    struct MHD_Connection *connection, int cmcd_headers, const char **accept_encoding,
    size_t *accept_encoding_length) {
    *accept_encoding = NULL;
    *accept_encoding_length = 0;
    if (MHD_get_connection_values(connection, MHD_GET_ARGUMENT_KIND, NULL, NULL) != 0) {
        return 0;
    }
    struct CMicroHTTPDShims_PlainScan scan = {1, cmcd_headers, NULL, 0};
    MHD_get_connection_values_n(connection, MHD_HEADER_KIND, CMicroHTTPDShims_scan_header, &scan);
    if (!scan.plain) {
        return 0;
    }
    *accept_encoding = scan.accept_encoding;
    *accept_encoding_length = scan.accept_encoding_length;
    return 1;
}
