import CMicroHTTPDShims
import Glibc
import Logging
import Synchronization

/// Everything libmicrohttpd's callbacks reach through their `cls` pointer: the handler, the log and the registry of
/// suspended requests. Retained for the lifetime of the daemon.
final class ServerContext: Sendable {
    private struct Registry {
        var isStopping = false
        var suspended: [ObjectIdentifier: HTTPResponder] = [:]
        /// Connections that have waited for bytes of an `HTTPBodyStream` and whose response is not gone yet.
        var streamReaders: [ObjectIdentifier: StreamReader] = [:]
        /// Messages logged while `start()` runs, for the error it throws.
        var startupMessages: [String]? = nil
    }

    let handler: any HTTPRequestHandler
    let logger: Logger
    /// Headers added to the answers MicroHTTPD builds itself (413, 503).
    let standardHeaders: HTTPHeaders
    /// Bytes of a request body read and thrown away for actions other than `.receiveBody` before answering 413.
    let discardLimit = 64 * 1024
    /// Bytes past a body limit that are still read and thrown away so the 413 can be sent as a normal response
    /// once the body ends; past this the 413 is written straight to the socket and the connection is cut.
    let drainLimit = 1024 * 1024
    private let registry = Mutex(Registry())
    /// Mirrors `Registry.isStopping` for the hot path (read on every answer without the lock).
    private let stopping = Atomic<Bool>(false)
    // Written once in init, then only read by libmicrohttpd's logger; freed in deinit after the daemon has stopped.
    nonisolated(unsafe) let logSink: UnsafeMutablePointer<CMicroHTTPDShims_LogSink>

    /// Deadlines for request heads and bodies (slow clients).
    let deadlines: ServerDeadlines
    /// Most bytes a parsed request head may take of the connection's memory pool (see
    /// `CMicroHTTPDShims_request_head_cost`); a larger head gets 431. 0: no check.
    let requestHeadBudget: Int
    /// The server speaks HTTPS: requests are marked `isTLS`, and nothing is written to a connection before its TLS
    /// handshake (a connection over the limit is closed without the 503 a plain HTTP client gets).
    let isTLS: Bool
    /// The eventfd that wakes every worker's epoll loop (`HTTPServer.workerWakeMilliseconds`), set by `start()`
    /// before the daemon runs; -1 before. Each worker's first connection joins it to that worker's epoll set.
    let wakeDescriptor = Atomic<Int32>(-1)

    init(
        handler: any HTTPRequestHandler, standardHeaders: HTTPHeaders = HTTPHeaders(),
        deadlines: ServerDeadlines? = nil, requestHeadBudget: Int = 0, isTLS: Bool = false, logger: Logger
    ) {
        self.handler = handler
        self.isTLS = isTLS
        self.requestHeadBudget = requestHeadBudget
        self.deadlines = deadlines ?? ServerDeadlines(limitSeconds: 0, clock: CoarseMonotonicClock(), logger: logger)
        self.standardHeaders = standardHeaders
        self.logger = logger
        logSink = .allocate(capacity: 1)
        logSink.initialize(to: CMicroHTTPDShims_LogSink(callback: forwardLogMessage, cls: nil))
        logSink.pointee.cls = Unmanaged.passUnretained(self).toOpaque()
    }

    deinit { logSink.deallocate() }

    /// Joins `wakeDescriptor` to the epoll set of the worker serving `connection`, on that worker's thread (once
    /// per worker; see `HTTPServer.workerWakeMilliseconds`).
    func joinWake(_ connection: OpaquePointer) {
        let descriptor = wakeDescriptor.load(ordering: .relaxed)
        guard descriptor >= 0 else { return }
        let result = CMicroHTTPDShims_wake_join(connection, descriptor)
        guard result < 0 else { return }
        let reason = String(cString: strerror(-result))
        let message =
            "MicroHTTPD: could not add the wake descriptor to a worker's epoll set (\(reason)): that worker may "
            + "leave up to 128 requests unread until its next event"
        logger.warning("\(message)", metadata: ["http.error": "\(reason)"])
    }

    /// A libmicrohttpd log line.
    func logMessage(_ message: String) {
        registry.withLock { registry in registry.startupMessages?.append(message) }
        logger.warning("\(message)", metadata: ["http.log_source": "libmicrohttpd"])
    }

    /// A warning of this module, e.g. a connection closed for a reason the client is not told.
    func warn(_ message: Logger.Message, _ metadata: Logger.Metadata = [:]) {
        var metadata = metadata
        metadata["http.log_source"] = "MicroHTTPD"
        logger.warning(message, metadata: metadata)
    }

    /// Collects log lines until `endStartup()`.
    func beginStartup() {
        registry.withLock { $0.startupMessages = [] }
    }

    /// The log lines written since `beginStartup()`.
    func endStartup() -> [String] {
        registry.withLock { registry in
            defer { registry.startupMessages = nil }
            return registry.startupMessages ?? []
        }
    }

    /// Registers a responder before its connection is suspended; false once the server is stopping.
    func track(_ responder: HTTPResponder) -> Bool {
        registry.withLock { registry in
            guard !registry.isStopping else { return false }
            registry.suspended[ObjectIdentifier(responder)] = responder
            return true
        }
    }

    /// Forgets a responder whose request has completed.
    func untrack(_ responder: HTTPResponder) {
        _ = registry.withLock { $0.suspended.removeValue(forKey: ObjectIdentifier(responder)) }
    }

    /// Registers a stream reader before its connection first suspends; false once the server is stopping.
    func track(_ reader: StreamReader) -> Bool {
        registry.withLock { registry in
            guard !registry.isStopping else { return false }
            registry.streamReaders[ObjectIdentifier(reader)] = reader
            return true
        }
    }

    /// Forgets a stream reader whose response is gone.
    func untrack(_ reader: StreamReader) {
        _ = registry.withLock { $0.streamReaders.removeValue(forKey: ObjectIdentifier(reader)) }
    }

    /// Refuses further suspensions and returns the responders of every request still suspended or not yet complete,
    /// and the readers of streamed responses that have waited for bytes.
    func beginStopping() -> (responders: [HTTPResponder], streamReaders: [StreamReader]) {
        registry.withLock { registry in
            registry.isStopping = true
            stopping.store(true, ordering: .relaxed)
            return (Array(registry.suspended.values), Array(registry.streamReaders.values))
        }
    }

    /// Requests started and not yet completed.
    var requestsInFlight: Int { deadlines.requestsInFlight }

    /// True once `beginStopping()` ran: answers should close their connection.
    var isStopping: Bool { stopping.load(ordering: .relaxed) }

    /// Number of suspended requests and stream readers that have not completed yet.
    var pendingSuspendedCount: Int {
        registry.withLock { $0.suspended.count + $0.streamReaders.count }
    }
}

/// libmicrohttpd's error log, already formatted by the C shim.
private func forwardLogMessage(_ cls: UnsafeMutableRawPointer?, _ message: UnsafePointer<CChar>?) {
    guard let cls, let message else { return }
    Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue().logMessage(String(cString: message))
}
