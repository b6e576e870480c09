import CMicroHTTPD
import CMicroHTTPDShims
import Glibc
public import Logging
import Synchronization

/// An HTTP/1.1 server on libmicrohttpd: a pool of threads, each with its own epoll loop, calling an
/// `HTTPRequestHandler` for every request.
public final class HTTPServer: Sendable {
    /// Milliseconds between two wake-ups of every worker's epoll loop (an eventfd in each worker's epoll set,
    /// signalled by a thread of the server's own).
    /// libmicrohttpd 0.9.75's `MHD_epoll`, when one `epoll_wait` returned exactly 128 events (its MAX_EVENTS), calls
    /// `epoll_wait` again with the full timeout (the nearest connection timeout, up to 30 s) before handling any of
    /// them: with nothing else arriving, the worker slept on 128 unread requests (`KeepAliveLoadTests`). The wake-up
    /// ends that wait within one interval; the cost is one empty pass of each worker's loop per interval.
    static let workerWakeMilliseconds: Int64 = 20

    private enum Lifecycle {
        case idle
        case running(DaemonHandle, port: Int)
        case stopped
    }

    /// The configuration the server was created with.
    public let configuration: HTTPServerConfiguration
    private let context: ServerContext
    private let lifecycle = Mutex(Lifecycle.idle)

    /// Creates a server; nothing listens until `start()`.
    /// - Parameters:
    ///   - configuration: where to listen and the connection limits.
    ///   - handler: decides what to do with each request, on libmicrohttpd's threads.
    ///   - logger: receives libmicrohttpd's error log lines and this module's own warnings (level warning, with
    ///     `http.*` metadata), from any thread. Default: discards them.
    public init(
        configuration: HTTPServerConfiguration, handler: some HTTPRequestHandler,
        logger: Logger = HTTPServer.silentLogger
    ) {
        self.configuration = configuration
        self.context = ServerContext(
            handler: handler, standardHeaders: configuration.standardHeaders,
            deadlines: ServerDeadlines(
                limitSeconds: configuration.connectionTimeout, connectionLimit: configuration.connectionLimit,
                remoteAddressLimit: configuration.remoteClientConnectionLimit,
                bodyTimeLimitSeconds: configuration.requestBodyTimeLimit,
                minimumBodyRate: configuration.requestBodyMinimumRate, clock: CoarseMonotonicClock(), logger: logger),
            requestHeadBudget: configuration.requestHeadBudget, isTLS: configuration.tls != nil,
            logger: logger)
    }

    /// Creates a server whose handler is a closure (called on libmicrohttpd's threads; must not block).
    public convenience init(
        configuration: HTTPServerConfiguration, logger: Logger = HTTPServer.silentLogger,
        handler: @escaping @Sendable (HTTPRequestHead) -> HTTPRequestAction
    ) {
        self.init(configuration: configuration, handler: HTTPClosureHandler(handler), logger: logger)
    }

    /// A logger that discards everything (the default of the initializers).
    public static let silentLogger = Logger(label: "MicroHTTPD", factory: { _ in SwiftLogNoOpLogHandler() })

    deinit { stop() }

    /// Binds the listening socket and starts the worker threads.
    /// - Throws: `HTTPServerError` if the configuration is unusable, the port is taken, or the server was started
    ///   before.
    public func start() throws {
        try lifecycle.withLock { lifecycle in
            guard case .idle = lifecycle else { throw HTTPServerError.alreadyStarted }
            let (daemon, port) = try startDaemon()
            lifecycle = .running(daemon, port: port)
        }
    }

    /// The port the server listens on (the real one when the configuration asked for port 0); 0 when not running.
    public var boundPort: Int {
        lifecycle.withLock { lifecycle in
            if case .running(_, let port) = lifecycle { return port }
            return 0
        }
    }

    /// Answers every suspended request with 503 and cuts off every streamed response that has waited for bytes
    /// (waiting up to two seconds for those answers to go out), then
    /// stops libmicrohttpd, closing all connections. Idempotent; also called on deinit. Must not be called from a
    /// handler (it waits for libmicrohttpd's threads to end).
    public func stop() {
        stop(gracePeriod: .zero)
    }

    /// Graceful shutdown: answers every suspended request with 503, lets requests in flight finish for up to
    /// `gracePeriod` (answers sent meanwhile, also to connections opened meanwhile, carry `Connection: close`, so
    /// keep-alive clients go away), then stops libmicrohttpd, which closes the listening socket and what is left.
    /// The listening socket is not closed first: libmicrohttpd 0.9.75's `MHD_quiesce_daemon` races its own epoll
    /// workers over removing it from their epoll sets and then aborts the process (seen here once in three unit-test
    /// runs; docs/LIBMICROHTTPD.md). Idempotent. Must not be called from a handler.
    /// - Parameter gracePeriod: longest wait for requests in flight; `.zero` closes them at once.
    public func stop(gracePeriod: Duration) {
        let daemon = lifecycle.withLock { lifecycle -> DaemonHandle? in
            defer { lifecycle = .stopped }
            if case .running(let daemon, _) = lifecycle { return daemon }
            return nil
        }
        guard let daemon else { return }
        let (responders, streamReaders) = context.beginStopping()
        for responder in responders {
            responder.respond(serviceUnavailable(context.standardHeaders))
        }
        // Streamed responses are cut off (the client sees an incomplete chunked body).
        for reader in streamReaders { reader.cut() }
        // Bounded polls, on purpose: the two counts fall on libmicrohttpd's threads (its completion callback, once
        // per request), and a condition there would put a lock and a signal on every request's path to save a few
        // milliseconds once per shutdown. Stopping runs as background work (`OriginService`), never on a handler's
        // thread.
        let start = ContinuousClock.now
        let suspendedDeadline = start + .seconds(2)
        while context.pendingSuspendedCount > 0 && ContinuousClock.now < suspendedDeadline {
            usleep(1_000)
        }
        let drainDeadline = start + gracePeriod
        while context.requestsInFlight > 0 && ContinuousClock.now < drainDeadline {
            usleep(2_000)
        }
        context.deadlines.stop()
        daemon.wakeSignals.stop()
        MHD_stop_daemon(daemon.pointer)
        close(daemon.wakeDescriptor)
        if let tlsState = daemon.tlsState { CMicroHTTPDShims_tls_state_free(tlsState) }
        // Balances the retain in startDaemon(): no callback can run any more.
        Unmanaged.passUnretained(context).release()
    }

    /// Connections closed so far because their request head or body came in too slowly (see
    /// `HTTPServerConfiguration.connectionTimeout`).
    public var connectionsCutForSlowness: Int { context.deadlines.cutConnections }

    /// Connections answered 503 so far because their remote address already held
    /// `HTTPServerConfiguration.remoteClientConnectionLimit` connections.
    public var connectionsRefusedOverAddressLimit: Int { context.deadlines.refusedOverAddressLimit }

    /// A small number for the calling thread (the lowest one no live thread holds), stable for its lifetime and
    /// free again when it exits; on libmicrohttpd's threads the same as `PlainRequest.threadIndex`. Lets handlers
    /// keep per-thread state, also after servers stop and start new threads.
    public static var currentThreadIndex: Int { Int(CMicroHTTPDShims_thread_index()) }

    /// Requests whose head has arrived and whose answer has not been completely sent yet.
    public var requestsInFlight: Int { context.requestsInFlight }

    /// Binds `configuration`'s host and port and listens, before any server runs: put the socket in
    /// `HTTPServerConfiguration.listeningSocket`. Connections queue in the backlog until the server starts.
    /// - Throws: `HTTPServerError` naming the address and the reason (for instance, the port is taken).
    public static func listen(_ configuration: HTTPServerConfiguration) throws -> Int32 {
        var address = try socketAddress(configuration)
        let fd = CMicroHTTPDShims_listen(
            &address, UInt32(clamping: configuration.listenBacklog), configuration.reusePort ? 1 : 0)
        guard fd >= 0 else {
            throw HTTPServerError.startFailed(
                "could not start the HTTP server on \(configuration.host) port \(configuration.port): "
                    + "Failed to bind to port \(configuration.port): \(String(cString: strerror(-fd)))")
        }
        return fd
    }

    /// The address `configuration` names, checked (port in range, numeric host).
    private static func socketAddress(_ configuration: HTTPServerConfiguration) throws -> CMicroHTTPDShims_Address {
        guard (0...65_535).contains(configuration.port) else {
            throw HTTPServerError.invalidConfiguration("port \(configuration.port) is not between 0 and 65535")
        }
        var address = CMicroHTTPDShims_Address()
        guard CMicroHTTPDShims_make_address(configuration.host, UInt16(configuration.port), &address) == 0 else {
            throw HTTPServerError.invalidConfiguration(
                "host \"\(configuration.host)\" is not a numeric IPv4 or IPv6 address")
        }
        return address
    }

    private func startDaemon() throws -> (DaemonHandle, Int) {
        let config = configuration
        var address = try Self.socketAddress(config)
        guard config.threadCount >= 1, config.connectionLimit >= 1, config.perIPConnectionLimit >= 0,
            config.remoteClientConnectionLimit >= 0, config.requestBodyTimeLimit >= 0,
            config.requestBodyMinimumRate >= 0, config.connectionTimeout >= 0, config.connectionMemoryLimit >= 1024, config.listenBacklog >= 0
        else {
            throw HTTPServerError.invalidConfiguration(
                "threadCount and connectionLimit must be at least 1, connectionMemoryLimit at least 1024, "
                    + "the other limits not negative")
        }
        var flags =
            MHD_USE_EPOLL_INTERNAL_THREAD.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
            | MHD_USE_ERROR_LOG.rawValue
        if config.host == "::" { flags |= MHD_USE_DUAL_STACK.rawValue }

        let wakeDescriptor = CMicroHTTPDShims_wake_create()
        guard wakeDescriptor >= 0 else {
            throw HTTPServerError.startFailed(
                "could not start the \(config.tls == nil ? "HTTP" : "HTTPS") server on \(config.host) port "
                    + "\(config.port): no eventfd for the workers' wake-ups: "
                    + String(cString: strerror(-wakeDescriptor)))
        }
        context.wakeDescriptor.store(wakeDescriptor, ordering: .relaxed)
        let retainedContext = Unmanaged.passRetained(context).toOpaque()
        context.beginStartup()
        var tlsState: UnsafeMutableRawPointer?
        let daemon = withOptionalCString(config.tls?.priorities) { priorities in
            CMicroHTTPDShims_start_daemon(
                flags, &address,
                accessHandler, retainedContext,
                requestCompleted, retainedContext,
                connectionNotification, retainedContext,
                context.logSink,
                // libmicrohttpd 0.9.75's single-thread epoll mode (no pool) stopped reading busy keep-alive
                // connections far more often than the pool (512 connections all ready are four full batches of the
                // 128-event wait `workerWakeMilliseconds` ends). There are still always at least two workers.
                UInt32(clamping: max(config.threadCount, 2)),
                UInt32(clamping: config.connectionLimit + ServerDeadlines.reserve(for: config.connectionLimit)),
                UInt32(clamping: config.perIPConnectionLimit),
                UInt32(clamping: config.connectionTimeout),
                config.connectionMemoryLimit,
                UInt32(clamping: config.listenBacklog),
                config.reusePort ? 1 : 0,
                config.listeningSocket ?? -1,
                config.tls?.credentials.slotPointer, priorities, &tlsState)
        }
        let messages = context.endStartup()
        guard let daemon else {
            context.wakeDescriptor.store(-1, ordering: .relaxed)
            close(wakeDescriptor)
            if let tlsState { CMicroHTTPDShims_tls_state_free(tlsState) }
            Unmanaged<ServerContext>.fromOpaque(retainedContext).release()
            let reason = messages.isEmpty ? "no reason given" : messages.joined(separator: "; ")
            throw HTTPServerError.startFailed(
                "could not start the \(config.tls == nil ? "HTTP" : "HTTPS") server on \(config.host) port "
                    + "\(config.port): \(reason)")
        }
        context.deadlines.start()
        let features =
            "sendfile: \(FileRegion.sendsWithSendfile); read at explicit offsets (shared descriptors safe): "
            + "\(FileRegion.readsAtExplicitOffsets)"
        context.logger.info(
            "MicroHTTPD: file bodies go out with \(features)",
            metadata: [
                "http.sendfile": "\(FileRegion.sendsWithSendfile)",
                "http.shared_fd": "\(FileRegion.readsAtExplicitOffsets)",
            ])
        return (
            DaemonHandle(
                pointer: daemon, tlsState: tlsState, wakeDescriptor: wakeDescriptor,
                wakeSignals: PeriodicThread(
                    name: "http-wake", intervalMilliseconds: Self.workerWakeMilliseconds
                ) { CMicroHTTPDShims_wake_signal(wakeDescriptor) }),
            Int(CMicroHTTPDShims_bound_port(daemon))
        )
    }

    /// Whether the server speaks HTTPS (`HTTPServerConfiguration.tls`).
    public var isTLS: Bool { configuration.tls != nil }
}

/// `body` with `text` as a C string, or with nil.
private func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
    guard let text else { return body(nil) }
    return text.withCString { body($0) }
}

/// An MHD_Daemon* kept by the server, with what the shim keeps for it when it speaks TLS.
private struct DaemonHandle: @unchecked Sendable {
    // @unchecked: only passed to MHD_stop_daemon, once, by the thread that took it out of the lifecycle mutex.
    let pointer: OpaquePointer
    let tlsState: UnsafeMutableRawPointer?
    /// The workers' wake descriptor (`HTTPServer.workerWakeMilliseconds`), closed after the daemon stops.
    let wakeDescriptor: Int32
    /// Signals `wakeDescriptor` every `HTTPServer.workerWakeMilliseconds`; stopped before the daemon.
    let wakeSignals: PeriodicThread
}
