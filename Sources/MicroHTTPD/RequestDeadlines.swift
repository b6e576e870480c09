import CMicroHTTPDShims
import Glibc
import Logging
import Synchronization

/// `SHUT_RDWR` of <sys/socket.h> (not imported by name on every toolchain).
let shutdownReadAndWrite: Int32 = 2
/// SHUT_WR.
let shutdownWrite: Int32 = 1

/// Monotonic milliseconds: how `RequestDeadlines` reads time (MicroHTTPD's own tiny clock seam; the origin's
/// `OriginClock` lives in a target this one does not see). A type parameter rather than a stored closure: the server's
/// deadlines are specialised for `CoarseMonotonicClock`, so the read on every connection, request end and body piece
/// is a direct, inlined `clock_gettime`.
protocol MillisecondClock: Sendable {
    /// Monotonic milliseconds now.
    func milliseconds() -> Int64
}

/// The coarse monotonic clock (a few milliseconds of resolution is plenty for deadlines of seconds, and it costs a
/// fraction of the precise one): what a server's deadlines read.
struct CoarseMonotonicClock: MillisecondClock {
    @inline(__always) func milliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC_COARSE, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}

/// The deadlines a server keeps (`ServerContext.deadlines`).
typealias ServerDeadlines = RequestDeadlines<CoarseMonotonicClock>

/// What the server keeps per connection: its deadline and whether a request is in flight. Kept in libmicrohttpd's
/// socket context, so the per-request updates touch only this object (no shared lock or counter between the
/// threads); the registry in `RequestDeadlines` is locked only when a connection opens or closes, and by the sweep.
final class ConnectionRecord: Sendable {
    /// The connection's socket, read on libmicrohttpd's thread when the connection started.
    let socket: Int32
    /// Accepted beyond the connection limit (or beyond its address's limit): answered 503 and closed at once.
    let overLimit: Bool
    /// The remote client's address (an IPv6 client's /64) when it counts against the per-address limit; nil for
    /// loopback clients, unknown addresses and connections over a limit.
    let address: RemoteAddress?
    /// Monotonic milliseconds; `RequestDeadlines.none` while no deadline runs (an answer is being sent).
    let deadline: Atomic<Int64>
    /// A request head has arrived and its answer is not completely sent yet.
    let inFlight = Atomic<Bool>(false)
    /// Monotonic milliseconds when the head of the request whose body is being read arrived.
    let bodyStart = Atomic<Int64>(0)

    init(socket: Int32, overLimit: Bool, address: RemoteAddress?, deadline: Int64) {
        self.socket = socket
        self.overLimit = overLimit
        self.address = address
        self.deadline = Atomic(deadline)
    }
}

/// A client address as the per-address connection limit counts it: an IPv4 address, or the /64 network of an IPv6
/// one (one host commonly holds a whole /64). IPv4-mapped IPv6 addresses count as IPv4.
struct RemoteAddress: Hashable, Sendable {
    let isIPv6: Bool
    let bits: UInt64

    /// The peer of `socket`, or nil if it is a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) or cannot
    /// be read (a Unix socket, a connection already gone).
    static func peer(of socket: Int32) -> RemoteAddress? {
        guard socket >= 0 else { return nil }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let read = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(socket, $0, &length) }
        }
        guard read == 0 else { return nil }
        switch Int32(storage.ss_family) {
        case AF_INET:
            let address = withUnsafeBytes(of: &storage) { $0.load(fromByteOffset: 4, as: UInt32.self) }
            return ipv4(UInt32(bigEndian: address))
        case AF_INET6:
            let bytes = withUnsafeBytes(of: &storage) { Array($0[8..<24]) }
            return ipv6(bytes)
        default:
            return nil
        }
    }

    /// `address` (host order), nil for 127.0.0.0/8.
    static func ipv4(_ address: UInt32) -> RemoteAddress? {
        address >> 24 == 127 ? nil : RemoteAddress(isIPv6: false, bits: UInt64(address))
    }

    /// The 16 bytes of an IPv6 address, nil for ::1 and IPv4-mapped loopback.
    static func ipv6(_ bytes: [UInt8]) -> RemoteAddress? {
        guard bytes.count == 16 else { return nil }
        if bytes[0..<15].allSatisfy({ $0 == 0 }) && bytes[15] == 1 { return nil }
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            return ipv4(bytes[12..<16].reduce(0) { $0 << 8 | UInt32($1) })
        }
        return RemoteAddress(isIPv6: true, bits: bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
    }
}

/// Cuts off clients that trickle a request. libmicrohttpd's connection timeout counts *inactivity*: a client that
/// sends one header byte a second keeps its connection forever and, repeated, pins every connection slot. Here every
/// connection must deliver a complete request head within the deadline after it was accepted or after its previous
/// request completed, and a request body within the deadline after its head; a connection that misses a deadline
/// has its socket shut down, which libmicrohttpd sees as the client going away and closes the connection itself.
/// A streamed body (`HTTPRequestAction.streamBody`) gets the deadline again with every piece, but never past its
/// absolute limit, and once it is older than the deadline it must have averaged the minimum rate since its head: a
/// client sending a byte now and then is cut all the same.
/// Also enforces the connection limit and the per-address limit of remote clients (a connection beyond either gets
/// a 503) and counts requests in flight.
///
/// Answers being sent are never timed here (a slow reader is covered by libmicrohttpd's inactivity timeout).
final class RequestDeadlines<Clock: MillisecondClock>: Sendable {
    /// Milliseconds a head or a body may take; 0 disables the deadlines.
    let limitMilliseconds: Int64
    /// Connections served at once; those accepted beyond it (libmicrohttpd's own limit is higher by
    /// `reserve(for:)`) get a 503 and are closed at once. 0: no limit here.
    let connectionLimit: Int
    /// Connections from one remote address (an IPv6 /64) served at once; loopback clients are not counted.
    /// 0: no limit.
    let remoteAddressLimit: Int
    /// Milliseconds a request body may take in all, however steadily it arrives; 0: no such limit.
    let bodyTimeLimitMilliseconds: Int64
    /// Bytes a second a streamed body must average since its head once it is older than `limitMilliseconds`;
    /// 0: no minimum.
    let minimumBodyRate: Int64
    /// Milliseconds an over-limit connection stays open after its 503 (time for the answer to leave).
    static var overLimitLingerMilliseconds: Int64 { 200 }
    /// The deadline value meaning "no deadline runs".
    static var none: Int64 { .max }

    private struct Registry {
        var records: [ObjectIdentifier: ConnectionRecord] = [:]
        /// Records holding a slot of the limits: not over a limit, and not cut (a cut connection's socket is shut
        /// down and it frees its slot at once, though libmicrohttpd reports it closed only when it next polls it).
        var slotHolders: Set<ObjectIdentifier> = []
        /// Slot holders per remote address.
        var perAddress: [RemoteAddress: Int] = [:]

        /// `record` gives up its slot (once; later calls do nothing).
        mutating func releaseSlot(of record: ConnectionRecord) {
            guard slotHolders.remove(ObjectIdentifier(record)) != nil, let address = record.address else { return }
            let left = perAddress[address, default: 1] - 1
            perAddress[address] = left > 0 ? left : nil
        }
    }

    private let registry = Mutex(Registry())
    private let cutCount = Atomic<Int>(0)
    /// The thread running `sweep()` periodically, between `start()` and `stop()`.
    private let sweeper = Mutex<PeriodicThread?>(nil)
    private let logger: Logger
    /// Monotonic milliseconds, read for every deadline (`CoarseMonotonicClock` unless a test drives it).
    let clock: Clock

    /// - Parameter clock: monotonic milliseconds; a test passes a manual one and calls `sweep()` itself.
    init(
        limitSeconds: Int, connectionLimit: Int = 0, remoteAddressLimit: Int = 0, bodyTimeLimitSeconds: Int = 0,
        minimumBodyRate: Int = 0, clock: Clock, logger: Logger
    ) {
        self.clock = clock
        limitMilliseconds = Int64(max(limitSeconds, 0)) * 1000
        self.connectionLimit = max(connectionLimit, 0)
        self.remoteAddressLimit = max(remoteAddressLimit, 0)
        bodyTimeLimitMilliseconds = Int64(max(bodyTimeLimitSeconds, 0)) * 1000
        self.minimumBodyRate = Int64(max(minimumBodyRate, 0))
        self.logger = logger
    }

    /// Connections answered 503 because their remote address already held `remoteAddressLimit`.
    var refusedOverAddressLimit: Int { addressRefusals.load(ordering: .relaxed) }
    private let addressRefusals = Atomic<Int>(0)

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

    /// A new connection: registers it and starts its head deadline. Returns the record (for the socket context)
    /// and whether it is within the connection limit (if not, the caller answers 503 and the deadline closes it).
    func connectionStarted(socket: Int32) -> (ConnectionRecord, withinLimit: Bool) {
        connectionStarted(socket: socket, address: remoteAddressLimit > 0 ? RemoteAddress.peer(of: socket) : nil)
    }

    /// `connectionStarted(socket:)` for a connection from `address` (nil: not counted per address).
    func connectionStarted(socket: Int32, address: RemoteAddress?) -> (ConnectionRecord, withinLimit: Bool) {
        let now = clock.milliseconds()
        let address = remoteAddressLimit > 0 ? address : nil
        let (record, overAddressLimit) = registry.withLock { registry in
            let overAddressLimit = address.map { registry.perAddress[$0, default: 0] >= remoteAddressLimit } ?? false
            let overLimit =
                overAddressLimit || (connectionLimit > 0 && registry.slotHolders.count >= connectionLimit)
            let deadline =
                overLimit
                ? now + Self.overLimitLingerMilliseconds : limitMilliseconds > 0 ? now + limitMilliseconds : Self.none
            // A socket that could not be read cannot be shut down: no deadline for it.
            let record = ConnectionRecord(
                socket: socket, overLimit: overLimit, address: overLimit ? nil : address,
                deadline: socket >= 0 ? deadline : Self.none)
            registry.records[ObjectIdentifier(record)] = record
            if !overLimit {
                registry.slotHolders.insert(ObjectIdentifier(record))
                if let address { registry.perAddress[address, default: 0] += 1 }
            }
            return (record, overAddressLimit)
        }
        if overAddressLimit { addressRefusals.add(1, ordering: .relaxed) }
        return (record, !record.overLimit)
    }

    /// The connection closed: forgets it (and frees its slot unless its cut did).
    func connectionClosed(_ record: ConnectionRecord) {
        registry.withLock { registry in
            registry.records.removeValue(forKey: ObjectIdentifier(record))
            registry.releaseSlot(of: record)
        }
    }

    /// A request head arrived: the head deadline ends; a body deadline starts if a body follows. Returns false if
    /// the connection is over the limit (it must not be served).
    func headArrived(_ record: ConnectionRecord, expectsBody: Bool) -> Bool {
        if record.overLimit { return false }
        record.inFlight.store(true, ordering: .relaxed)
        guard expectsBody else {
            record.deadline.store(Self.none, ordering: .relaxed)
            return true
        }
        let now = clock.milliseconds()
        record.bodyStart.store(now, ordering: .relaxed)
        record.deadline.store(bodyDeadline(start: now, now: now, received: 0), ordering: .relaxed)
        return true
    }

    /// More of a streamed request body arrived (`HTTPRequestAction.streamBody`), `received` bytes in all: its
    /// deadline starts again, so a body sent as it is produced (a live segment over its duration) may take as long
    /// as it keeps coming, within the absolute limit and at the minimum rate; a sender that goes silent for the
    /// limit is still cut.
    func bodyProgress(_ record: ConnectionRecord, received: Int) {
        let start = record.bodyStart.load(ordering: .relaxed)
        record.deadline.store(
            bodyDeadline(start: start, now: clock.milliseconds(), received: Int64(received)), ordering: .relaxed)
    }

    /// When a body whose head arrived at `start` and that has delivered `received` bytes by `now` is cut unless
    /// more arrives: `limitMilliseconds` after now, never past `bodyTimeLimitMilliseconds` after its head, and, at
    /// the minimum rate, by the time `received` bytes fall below it after the first `limitMilliseconds`.
    func bodyDeadline(start: Int64, now: Int64, received: Int64) -> Int64 {
        var deadline = limitMilliseconds > 0 ? now + limitMilliseconds : Self.none
        if bodyTimeLimitMilliseconds > 0 { deadline = min(deadline, start + bodyTimeLimitMilliseconds) }
        if minimumBodyRate > 0, limitMilliseconds > 0 {
            // received / rate seconds are paid for (a count too large to multiply pays for everything).
            let (product, overflow) = received.multipliedReportingOverflow(by: 1000)
            if !overflow { deadline = min(deadline, start &+ limitMilliseconds &+ product / minimumBodyRate) }
        }
        return deadline
    }

    /// The request body is complete: its deadline ends.
    func bodyComplete(_ record: ConnectionRecord) {
        record.deadline.store(Self.none, ordering: .relaxed)
    }

    /// The answer was sent: the deadline for the next request head starts.
    func requestCompleted(_ record: ConnectionRecord) {
        record.inFlight.store(false, ordering: .relaxed)
        guard limitMilliseconds > 0 else { return }
        record.deadline.store(clock.milliseconds() + limitMilliseconds, ordering: .relaxed)
    }

    /// Milliseconds between two sweeps: a quarter of the limit, between 20 and 100 ms.
    var sweepInterval: Int64 { limitMilliseconds > 0 ? max(min(limitMilliseconds / 4, 100), 20) : 100 }

    /// Starts the periodic sweep on a thread of its own (`PeriodicThread`), owned here and ended by `stop()` (a
    /// server stops its sweep with its threads). Idempotent.
    func start() {
        guard limitMilliseconds > 0 || connectionLimit > 0 else { return }
        sweeper.withLock { sweeper in
            guard sweeper == nil else { return }
            sweeper = PeriodicThread(name: "http-deadlines", intervalMilliseconds: sweepInterval) { [self] in sweep() }
        }
    }

    /// Stops the sweep (and waits for a sweep under way).
    func stop() {
        sweeper.withLock { sweeper in
            defer { sweeper = nil }
            return sweeper
        }?.stop()
    }

    /// Shuts down the sockets of connections past their deadline.
    func sweep() {
        let now = clock.milliseconds()
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
                registry.releaseSlot(of: record)
                if !record.overLimit { cut += 1 }
            }
            return cut
        }
        if cut > 0 {
            cutCount.add(cut, ordering: .relaxed)
            logger.warning(
                """
                MicroHTTPD: closed \(cut) connection(s) whose request head took over \(limitMilliseconds) ms or whose \
                body came too slowly (\(minimumBodyRate) bytes/s at least after that, \(bodyTimeLimitMilliseconds) ms \
                at most)
                """,
                metadata: [
                    "http.log_source": "MicroHTTPD", "http.connections_cut": "\(cut)",
                    "http.request_deadline_ms": "\(limitMilliseconds)",
                    "http.body_minimum_rate": "\(minimumBodyRate)",
                    "http.body_time_limit_ms": "\(bodyTimeLimitMilliseconds)",
                ])
        }
    }
}
