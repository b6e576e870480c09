import Glibc

/// How an `HTTPServer` listens and how it protects itself from too many or too slow clients.
public struct HTTPServerConfiguration: Sendable {
    /// Numeric address to bind to. "0.0.0.0" listens on every IPv4 interface, "::" on every interface with a single
    /// dual-stack socket (IPv4 and IPv6), "127.0.0.1" / "::1" on loopback only. "localhost" means "127.0.0.1".
    /// Default: "0.0.0.0".
    public var host: String
    /// TCP port. 0 picks any free port; read it back with `HTTPServer.boundPort`. Default: 8080.
    public var port: Int
    /// Number of libmicrohttpd worker threads, each running its own epoll loop. Default: the number of active cores.
    /// At least 2 are started: libmicrohttpd's single-thread mode stalls busy keep-alive connections.
    public var threadCount: Int
    /// Maximum number of concurrent connections. A connection beyond it is answered `503 Service Unavailable`
    /// (`Retry-After: 1`) and closed at once; libmicrohttpd accepts up to an eighth more (at least 16) for that, and
    /// past those new connections wait in the listen backlog. Default: 10 000.
    public var connectionLimit: Int
    /// Maximum number of concurrent connections from one IP address, loopback included (libmicrohttpd's own
    /// limit); 0 means unlimited. Default: 0.
    public var perIPConnectionLimit: Int
    /// Maximum number of concurrent connections from one remote address (an IPv4 address or an IPv6 /64); loopback
    /// clients (local players, a proxy on the same host, tests) are not counted. A connection beyond it is answered
    /// `503 Service Unavailable` and closed at once, like one beyond `connectionLimit`. 0: no limit. Default: 256.
    public var remoteClientConnectionLimit = 256
    /// Seconds a request body may take in all, however steadily it arrives (a streamed upload included); 0: no
    /// such limit (the body then has `connectionTimeout`, restarted by every piece of a streamed body).
    /// Default: 300.
    public var requestBodyTimeLimit = 300
    /// Bytes a second a streamed request body (`HTTPRequestAction.streamBody`) must average since its head once
    /// it is older than `connectionTimeout`; a slower one is cut. 0: no minimum. Default: 1024.
    public var requestBodyMinimumRate = 1024
    /// Seconds after which an idle connection is closed (libmicrohttpd's inactivity timeout); also the time a
    /// client has to send a complete request head (after connecting or after its previous request) and then a
    /// complete body, however steadily it trickles bytes (an encoder that streams a segment's body while encoding
    /// it needs more than its segment duration). 0: no timeout. Default: 30.
    public var connectionTimeout: Int
    /// Bytes of memory per connection (libmicrohttpd's pool) for the request line, headers and the answer's head.
    /// A request head that leaves less than `HTTPServerConfiguration.answerHeadReserve` of it is answered 431
    /// (libmicrohttpd answers 431 itself when the head does not fit at all). libmicrohttpd 0.9.75 zeroes the whole
    /// pool after every request, so a smaller pool is faster with many connections. Default: 32 KiB.
    public var connectionMemoryLimit: Int

    /// Pool bytes kept free for the answer's head (status line and headers).
    public static let answerHeadReserve = 2048

    /// Most bytes a parsed request head may take of the pool; see `connectionMemoryLimit`.
    var requestHeadBudget: Int { max(connectionMemoryLimit - Self.answerHeadReserve, connectionMemoryLimit / 2) }
    /// Length of the queue of not yet accepted connections. Default: 4096.
    public var listenBacklog: Int
    /// Sets SO_REUSEPORT on the listening socket (MHD_OPTION_LISTENING_ADDRESS_REUSE = 1), so several processes can
    /// share one port. Off by default: then a second server on the same port fails with "address in use" instead of
    /// silently sharing the traffic. SO_REUSEADDR (quick restarts) is set by libmicrohttpd either way. Default: false.
    public var reusePort: Bool
    /// Headers added to the answers MicroHTTPD builds itself (413 for a body over its limit, 503 at shutdown), e.g.
    /// CORS headers the application puts on every answer. Default: none.
    public var standardHeaders: HTTPHeaders = HTTPHeaders()
    /// A socket already bound and listening (`HTTPServer.listen(_:)`), used instead of binding `host`/`port` at
    /// `start()`: connections that arrive before the server starts wait in its backlog instead of being refused (a
    /// restarted origin binds first and restores its channels after). The server owns it once started. Default: nil.
    public var listeningSocket: Int32?
    /// Serve HTTPS instead of HTTP on this listener (GnuTLS through libmicrohttpd): the certificate, replaceable while
    /// the server runs, and the GnuTLS priority string. nil: plain HTTP. Default: nil.
    public var tls: TLSConfiguration?

    /// Creates a configuration; every parameter has the documented default.
    public init(
        host: String = "0.0.0.0",
        port: Int = 8080,
        threadCount: Int = HTTPServerConfiguration.activeProcessorCount,
        connectionLimit: Int = 10_000,
        perIPConnectionLimit: Int = 0,
        connectionTimeout: Int = 30,
        connectionMemoryLimit: Int = 32 * 1024,
        listenBacklog: Int = 4096,
        reusePort: Bool = false
    ) {
        self.host = host
        self.port = port
        self.threadCount = threadCount
        self.connectionLimit = connectionLimit
        self.perIPConnectionLimit = perIPConnectionLimit
        self.connectionTimeout = connectionTimeout
        self.connectionMemoryLimit = connectionMemoryLimit
        self.listenBacklog = listenBacklog
        self.reusePort = reusePort
    }

    /// The number of processors currently online (at least 1).
    public static var activeProcessorCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}

/// What an HTTPS listener needs: its certificate and the protocol versions and ciphers it offers.
public struct TLSConfiguration: Sendable {
    /// The certificate handshakes get; `TLSCredentials.replace(with:)` renews it while the server runs.
    public var credentials: TLSCredentials
    /// A GnuTLS priority string (e.g. `"SECURE256:-VERS-TLS1.0:-VERS-TLS1.1"`); nil: libmicrohttpd's default
    /// (GnuTLS's system-wide defaults, `@SYSTEM`, then `NORMAL`). Default: nil.
    public var priorities: String?

    /// - Parameters:
    ///   - credentials: the certificate, replaceable while the server runs.
    ///   - priorities: a GnuTLS priority string, or nil for the default.
    public init(credentials: TLSCredentials, priorities: String? = nil) {
        self.credentials = credentials
        self.priorities = priorities
    }
}
