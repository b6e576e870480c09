import Dispatch
import Glibc
import Logging
import Synchronization

/// `SHUT_RDWR` of <sys/socket.h> (not imported by name on every toolchain).
let shutdownReadAndWrite: Int32 = 2
/// SHUT_WR.
let shutdownWrite: Int32 = 1

/// What the server keeps per connection: its deadline and whether a request is in flight. Kept in libmicrohttpd's
/// socket context, so the per-request updates touch only this object (no shared lock or counter between the
/// threads); the registry in `RequestDeadlines` is locked only when a connection opens or closes, and by the sweep.
final class ConnectionRecord: Sendable {
    /// The connection's socket, read on libmicrohttpd's thread when the connection started.
    let socket: Int32
    /// Accepted beyond the connection limit: answered 503 and closed at once.
    let overLimit: Bool
    /// Monotonic milliseconds; `RequestDeadlines.none` while no deadline runs (an answer is being sent).
    let deadline: Atomic<Int64>
    /// A request head has arrived and its answer is not completely sent yet.
    let inFlight = Atomic<Bool>(false)

    init(socket: Int32, overLimit: Bool, deadline: Int64) {
        self.socket = socket
        self.overLimit = overLimit
        self.deadline = Atomic(deadline)
    }
}

/// Cuts off clients that trickle a request. libmicrohttpd's connection timeout counts *inactivity*: a client that
/// sends one header byte a second keeps its connection forever and, repeated, pins every connection slot. Here every
/// connection must deliver a complete request head within the deadline after it was accepted or after its previous
/// request completed, and a request body within the deadline after its head; a connection that misses a deadline
/// has its socket shut down, which libmicrohttpd sees as the client going away and closes the connection itself.
/// Also enforces the connection limit (a connection beyond it gets a 503) and counts requests in flight.
///
/// Answers being sent are never timed here (a slow reader is covered by libmicrohttpd's inactivity timeout).
final class RequestDeadlines: Sendable {
    /// Milliseconds a head or a body may take; 0 disables the deadlines.
    let limitMilliseconds: Int64
    /// Connections served at once; those accepted beyond it (libmicrohttpd's own limit is higher by
    /// `reserve(for:)`) get a 503 and are closed at once. 0: no limit here.
    let connectionLimit: Int
    /// Milliseconds an over-limit connection stays open after its 503 (time for the answer to leave).
    static let overLimitLingerMilliseconds: Int64 = 200
    /// The deadline value meaning "no deadline runs".
    static let none = Int64.max

    private struct Registry {
        var records: [ObjectIdentifier: ConnectionRecord] = [:]
        /// Records that are not over the limit.
        var served = 0
    }

    private let registry = Mutex(Registry())
    private let cutCount = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)
    private let logger: Logger

    init(limitSeconds: Int, connectionLimit: Int = 0, logger: Logger) {
        limitMilliseconds = Int64(max(limitSeconds, 0)) * 1000
        self.connectionLimit = max(connectionLimit, 0)
        self.logger = logger
    }

    /// Extra connections libmicrohttpd accepts beyond `connectionLimit`, so a flood is answered 503 and closed
    /// instead of waiting in the listen backlog: an eighth of the limit, at least 16.
    static func reserve(for connectionLimit: Int) -> Int { max(16, connectionLimit / 8) }

    /// Connections cut so far because a head or body came too slowly.
    var cutConnections: Int { cutCount.load(ordering: .relaxed) }

    /// Requests whose head has arrived and whose answer is not completely sent yet.
    var requestsInFlight: Int {
        registry.withLock { registry in
            registry.records.values.reduce(0) { $0 + ($1.inFlight.load(ordering: .relaxed) ? 1 : 0) }
        }
    }

    /// Monotonic milliseconds (the coarse clock: a few milliseconds of resolution is plenty for deadlines of
    /// seconds, and it costs a fraction of the precise one).
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    /// A new connection: registers it and starts its head deadline. Returns the record (for the socket context)
    /// and whether it is within the connection limit (if not, the caller answers 503 and the deadline closes it).
    func connectionStarted(socket: Int32) -> (ConnectionRecord, withinLimit: Bool) {
        let now = Self.now()
        return registry.withLock { registry in
            let overLimit = connectionLimit > 0 && registry.served >= connectionLimit
            let deadline =
                overLimit
                ? now + Self.overLimitLingerMilliseconds : limitMilliseconds > 0 ? now + limitMilliseconds : Self.none
            // A socket that could not be read cannot be shut down: no deadline for it.
            let record = ConnectionRecord(
                socket: socket, overLimit: overLimit, deadline: socket >= 0 ? deadline : Self.none)
            registry.records[ObjectIdentifier(record)] = record
            if !overLimit { registry.served += 1 }
            return (record, !overLimit)
        }
    }

    /// The connection closed: forgets it.
    func connectionClosed(_ record: ConnectionRecord) {
        registry.withLock { registry in
            if registry.records.removeValue(forKey: ObjectIdentifier(record)) != nil, !record.overLimit {
                registry.served -= 1
            }
        }
    }

    /// A request head arrived: the head deadline ends; a body deadline starts if a body follows. Returns false if
    /// the connection is over the limit (it must not be served).
    func headArrived(_ record: ConnectionRecord, expectsBody: Bool) -> Bool {
        if record.overLimit { return false }
        record.inFlight.store(true, ordering: .relaxed)
        let deadline = expectsBody && limitMilliseconds > 0 ? Self.now() + limitMilliseconds : Self.none
        record.deadline.store(deadline, ordering: .relaxed)
        return true
    }

    /// More of a streamed request body arrived (`HTTPRequestAction.streamBody`): its deadline starts again, so a
    /// body sent as it is produced (a live segment over its duration) may take as long as it keeps coming, while a
    /// sender that goes silent for the limit is still cut.
    func bodyProgress(_ record: ConnectionRecord) {
        guard limitMilliseconds > 0 else { return }
        record.deadline.store(Self.now() + limitMilliseconds, ordering: .relaxed)
    }

    /// The request body is complete: its deadline ends.
    func bodyComplete(_ record: ConnectionRecord) {
        record.deadline.store(Self.none, ordering: .relaxed)
    }

    /// The answer was sent: the deadline for the next request head starts.
    func requestCompleted(_ record: ConnectionRecord) {
        record.inFlight.store(false, ordering: .relaxed)
        guard limitMilliseconds > 0 else { return }
        record.deadline.store(Self.now() + limitMilliseconds, ordering: .relaxed)
    }

    /// Starts the periodic sweep (every quarter of the limit, between 20 and 100 ms).
    func start() {
        guard limitMilliseconds > 0 || connectionLimit > 0, !running.exchange(true, ordering: .relaxed) else { return }
        scheduleSweep()
    }

    /// Stops the sweep.
    func stop() {
        running.store(false, ordering: .relaxed)
    }

    private func scheduleSweep() {
        let interval = limitMilliseconds > 0 ? max(min(limitMilliseconds / 4, 100), 20) : 100
        DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(Int(interval))) { [self] in
            guard running.load(ordering: .relaxed) else { return }
            sweep()
            scheduleSweep()
        }
    }

    /// Shuts down the sockets of connections past their deadline.
    func sweep() {
        let now = Self.now()
        let cut = registry.withLock { registry -> Int in
            var cut = 0
            for record in registry.records.values {
                let deadline = record.deadline.load(ordering: .relaxed)
                guard now >= deadline else { continue }
                // Only the deadline that is still the one read is spent (a request may have started meanwhile).
                guard
                    record.deadline.compareExchange(expected: deadline, desired: Self.none, ordering: .relaxed)
                        .exchanged
                else { continue }
                shutdown(record.socket, shutdownReadAndWrite)
                if !record.overLimit { cut += 1 }
            }
            return cut
        }
        if cut > 0 {
            cutCount.add(cut, ordering: .relaxed)
            logger.warning(
                "MicroHTTPD: closed \(cut) connection(s) whose request head or body took over \(limitMilliseconds) ms",
                metadata: [
                    "http.log_source": "MicroHTTPD", "http.connections_cut": "\(cut)",
                    "http.request_deadline_ms": "\(limitMilliseconds)",
                ])
        }
    }
}
