import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `SHUT_RDWR` of <sys/socket.h> (not imported by name on every toolchain).
let shutdownReadAndWrite: Int32 = 2

/// Cuts off clients that trickle a request. libmicrohttpd's connection timeout counts *inactivity*: a client that
/// sends one header byte a second keeps its connection forever and, repeated, pins every connection slot. Here every
/// connection must deliver a complete request head within the deadline after it was accepted or after its previous
/// request completed, and a request body within the deadline after its head; a connection that misses a deadline
/// has its socket shut down, which libmicrohttpd sees as the client going away and closes the connection itself.
///
/// Answers being sent are never timed here (a slow reader is covered by libmicrohttpd's inactivity timeout).
final class RequestDeadlines: Sendable {
    private struct Entry {
        /// The connection's socket, read on libmicrohttpd's thread when the connection started.
        let socket: Int32
        /// Monotonic milliseconds; nil while no deadline runs (an answer is being sent).
        var deadline: Int64?
        /// Accepted beyond the connection limit: answered 503 and closed at once.
        var overLimit = false
    }

    /// Milliseconds a head or a body may take; 0 disables the deadlines.
    let limitMilliseconds: Int64
    /// Connections served at once; those accepted beyond it (libmicrohttpd's own limit is higher by
    /// `reserve(for:)`) get a 503 and are closed at once. 0: no limit here.
    let connectionLimit: Int
    /// Milliseconds an over-limit connection stays open after its 503 (time for the answer to leave).
    static let overLimitLingerMilliseconds: Int64 = 200
    private struct Table {
        var entries: [UInt: Entry] = [:]
        /// Entries that are not over the limit.
        var served = 0
    }

    private let table = Mutex(Table())
    private let cutCount = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)
    private let log: @Sendable (String) -> Void

    init(limitSeconds: Int, connectionLimit: Int = 0, log: @escaping @Sendable (String) -> Void) {
        limitMilliseconds = Int64(max(limitSeconds, 0)) * 1000
        self.connectionLimit = max(connectionLimit, 0)
        self.log = log
    }

    /// Extra connections libmicrohttpd accepts beyond `connectionLimit`, so a flood is answered 503 and closed
    /// instead of waiting in the listen backlog: an eighth of the limit, at least 16.
    static func reserve(for connectionLimit: Int) -> Int { max(16, connectionLimit / 8) }

    private var isEnabled: Bool { limitMilliseconds > 0 || connectionLimit > 0 }

    /// Connections cut so far because a head or body came too slowly.
    var cutConnections: Int { cutCount.load(ordering: .relaxed) }

    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }

    private static func key(_ connection: OpaquePointer) -> UInt { UInt(bitPattern: Int(bitPattern: connection)) }

    /// A connection was accepted: its first request head is due. Returns false if the connection is over the
    /// connection limit: the caller answers 503, and the connection is closed within
    /// `overLimitLingerMilliseconds`.
    func connectionStarted(_ connection: OpaquePointer, socket: Int32) -> Bool {
        guard isEnabled, socket >= 0 else { return true }
        let now = Self.now()
        return table.withLock { table in
            let overLimit = connectionLimit > 0 && table.served >= connectionLimit
            let deadline: Int64? =
                overLimit
                ? now + Self.overLimitLingerMilliseconds : limitMilliseconds > 0 ? now + limitMilliseconds : nil
            table.entries[Self.key(connection)] = Entry(socket: socket, deadline: deadline, overLimit: overLimit)
            if !overLimit { table.served += 1 }
            return !overLimit
        }
    }

    /// A connection is being closed by libmicrohttpd (its socket is closed after this returns).
    func connectionClosed(_ connection: OpaquePointer) {
        guard isEnabled else { return }
        table.withLock { table in
            if let removed = table.entries.removeValue(forKey: Self.key(connection)), !removed.overLimit {
                table.served -= 1
            }
        }
    }

    /// A request head arrived: a body, if one follows, is due within the limit; otherwise nothing is timed until
    /// the request completes. Returns false if the connection is over the limit (its 503 was sent at accept): the
    /// request must not be answered.
    func headArrived(_ connection: OpaquePointer, expectsBody: Bool) -> Bool {
        guard isEnabled else { return true }
        let deadline = expectsBody && limitMilliseconds > 0 ? Self.now() + limitMilliseconds : nil
        return table.withLock { table in
            let key = Self.key(connection)
            guard let entry = table.entries[key] else { return true }
            if entry.overLimit { return false }
            table.entries[key]?.deadline = deadline
            return true
        }
    }

    /// The request's body is complete: the answer is not timed.
    func bodyComplete(_ connection: OpaquePointer) {
        guard limitMilliseconds > 0 else { return }
        table.withLock { $0.entries[Self.key(connection)]?.deadline = nil }
    }

    /// A request completed: the next head on this keep-alive connection is due within the limit.
    func requestCompleted(_ connection: OpaquePointer) {
        guard limitMilliseconds > 0 else { return }
        let deadline = Self.now() + limitMilliseconds
        table.withLock { $0.entries[Self.key(connection)]?.deadline = deadline }
    }

    /// Starts the sweep (every quarter of a second, at most every limit / 4).
    func start() {
        guard isEnabled, !running.exchange(true, ordering: .relaxed) else { return }
        scheduleSweep()
    }

    /// Stops the sweep; connections still tracked are left to libmicrohttpd.
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

    /// Shuts down the sockets of connections past their deadline. Runs under the lock, so a connection cannot be
    /// closed (and its socket number reused) while its socket is shut down.
    func sweep() {
        let now = Self.now()
        let cut = table.withLock { table -> Int in
            var cut = 0
            for (key, entry) in table.entries {
                guard let deadline = entry.deadline, now >= deadline else { continue }
                shutdown(entry.socket, shutdownReadAndWrite)
                table.entries[key]?.deadline = nil
                if !entry.overLimit { cut += 1 }
            }
            return cut
        }
        if cut > 0 {
            cutCount.add(cut, ordering: .relaxed)
            log("MicroHTTPD: closed \(cut) connection(s) whose request head or body took over \(limitMilliseconds) ms")
        }
    }
}
