import CSRT
import Foundation
import LiveTimeline
public import Logging
public import OriginCore
import ServiceLifecycle
import SharedBytes
import Synchronization

/// `ingest.srt`: the SRT listener's settings (docs/srt.md).
public struct SRTConfiguration: Sendable, Hashable {
    /// The UDP port callers connect to.
    public var port: Int
    /// The address to listen on (`0.0.0.0`: every IPv4 interface; an IPv6 address listens on IPv6).
    public var host = "0.0.0.0"
    /// The receiver latency in milliseconds (SRTO_RCVLATENCY; the connection uses the larger of both sides').
    public var latencyMilliseconds = 120
    /// Encrypts the callers whose passphrase is not a token's (`SRTAccessRules.passphrase`).
    public var passphrase: String?
    /// Callers connected at once; more are refused in the handshake (1402).
    public var maxCallers = 16
    /// A caller that sends nothing for this long is a feed drop: its connection is closed.
    public var idleTimeoutMilliseconds = 2_000

    public init(port: Int) { self.port = port }
}

/// The SRT input (issue 31): one listening SRT socket, one thread accepting callers and one receiving thread per
/// caller (at most `maxCallers`), so that a caller whose sink is slow (a segment written durably) never holds back
/// another, and nothing runs on the HTTP threads or the Swift concurrency pool.
///
/// A caller is judged in the handshake (libsrt's listen callback): its stream id, its access (`SRTAccessRules`),
/// the channel (configured, or `ingest.autoCreate`), the callers limit and whether its rendition already has a
/// caller; a refused caller is rejected with an access-control reject code (`srt_setrejectreason`), written to the
/// audit log (rate-limited per address) and counted. An admitted caller's bytes go to a `ContinuousStreamSink`
/// session; a disconnect, or silence past `idleTimeoutMilliseconds`, ends the session at once.
public final class SRTListener: Sendable {
    public let configuration: SRTConfiguration
    private let origin: Origin
    /// Where the callers' streams go (the channel status reads the segmenter's sessions from it).
    public let sink: any ContinuousStreamSink
    private let logger: Logger
    private let rules: Mutex<SRTAccessRules>
    private let state = Mutex(ListenerState())
    private let listeningSocket: SRTSOCKET
    private let stopping = Atomic<Bool>(false)
    /// The listening socket was closed (by `runBlocking` at its end, or `deinit`): closed once.
    private let listeningClosed = Atomic<Bool>(false)
    /// Signalled when a caller's thread ends: `runBlocking` waits on it, once stopped, for the callers.
    private let callersEnded = NSCondition()
    /// How long `runBlocking` waits, once stopped, for the callers' threads to close their sessions.
    static let stopWaitMilliseconds: Int64 = 5_000
    /// The port bound (the configured one, or the one the system chose for port 0).
    public let boundPort: Int

    /// Binds the listening socket (so a taken port fails at startup) and listens, the listen callback installed
    /// first: a caller that comes before `run()` is judged in its handshake like any other (it waits in the backlog
    /// to be accepted). Without the callback in place, libsrt admitted every caller in that moment, whatever its
    /// stream id.
    public init(
        configuration: SRTConfiguration, rules: SRTAccessRules, origin: Origin, sink: any ContinuousStreamSink,
        logger: Logger
    ) throws {
        self.configuration = configuration
        self.origin = origin
        self.sink = sink
        self.logger = logger
        self.rules = Mutex(rules)
        SRTLibrary.start()
        let socket = srt_create_socket()
        guard socket != SRT_INVALID_SOCK else { throw SRTError.last("srt_create_socket") }
        do {
            try Self.setInt(socket, SRTO_RCVLATENCY, Int32(configuration.latencyMilliseconds))
            try Self.setInt(socket, SRTO_RCVSYN, 0)
            // libsrt lets SRT sockets of one process share a UDP port (SRTO_REUSEADDR, on by default): off, so a
            // port another listener holds fails here instead of splitting its callers (another process's port
            // already fails: libsrt does not set SO_REUSEADDR on its UDP socket).
            try Self.setInt(socket, SRTO_REUSEADDR, 0)
            boundPort = try Self.bind(socket, host: configuration.host, port: configuration.port)
        } catch {
            srt_close(socket)
            throw error
        }
        listeningSocket = socket
        // From here `deinit` closes the socket.
        srt_listen_callback(socket, srtListenCallback, Unmanaged.passUnretained(self).toOpaque())
        guard srt_listen(socket, 64) != SRT_ERROR else { throw SRTError.last("srt_listen") }
    }

    deinit { closeListeningSocket() }

    /// Closes the listening socket once (`runBlocking` and `deinit` both end it).
    private func closeListeningSocket() {
        guard listeningClosed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        srt_listen_callback(listeningSocket, nil, nil)
        srt_close(listeningSocket)
    }

    /// Replaces the access rules (a configuration reload); callers already connected stay.
    public func update(rules newRules: SRTAccessRules) { rules.withLock { $0 = newRules } }

    /// The connected callers, in connection order.
    public var callers: [SRTCallerStatus] {
        state.withLock { state in state.callers.values.sorted { $0.serial < $1.serial }.map(\.status) }
    }

    /// Counters since start: callers accepted, refused by reason, feeds ended by reason.
    public var counters: SRTCounters { state.withLock { $0.counters } }

    /// Accepts callers until `stop()`; returns once every caller's session is closed (reason `.shutdown`).
    public func runBlocking() {
        // Without a usable epoll the listener polls the non-blocking socket instead (every 50 ms).
        var poll = srt_epoll_create()
        if poll < 0 {
            logger.error("SRT listener: srt_epoll_create failed: \(String(cString: srt_getlasterror_str())); polling")
        } else {
            var events = Int32(SRT_EPOLL_IN.rawValue | SRT_EPOLL_ERR.rawValue)
            if srt_epoll_add_usock(poll, listeningSocket, &events) == SRT_ERROR {
                logger.error(
                    "SRT listener: srt_epoll_add_usock failed: \(String(cString: srt_getlasterror_str())); polling")
                srt_epoll_release(poll)
                poll = -1
            }
        }
        logger.info(
            "SRT listener ready",
            metadata: [
                "srt.port": "\(boundPort)", "srt.latency_ms": "\(configuration.latencyMilliseconds)",
                "srt.max_callers": "\(configuration.maxCallers)",
            ])
        var ready = [SRT_EPOLL_EVENT](repeating: SRT_EPOLL_EVENT(), count: 4)
        var failed = false
        while !stopping.load(ordering: .acquiring) {
            if failed {
                // The listening socket broke: no more callers; the connected ones go on until they end or stop.
                usleep(200_000)
                continue
            }
            if poll >= 0 {
                // A timeout still tries to accept below: a caller whose handshake completed before the socket
                // joined the epoll (the listener listens from its creation) raises no event, and was left waiting
                // in the accept queue until another caller came.
                let count = srt_epoll_uwait(poll, &ready, Int32(ready.count), 200)
                let broken = ready.prefix(Int(max(count, 0))).contains {
                    $0.fd == listeningSocket && $0.events & Int32(SRT_EPOLL_ERR.rawValue) != 0
                }
                if broken || Self.isBroken(listeningSocket) {
                    // An error event stays set: waiting on it again would spin.
                    logger.error("SRT listener: the listening socket failed; no more callers are accepted")
                    srt_epoll_remove_usock(poll, listeningSocket)
                    failed = true
                    continue
                }
            } else {
                usleep(50_000)
                if Self.isBroken(listeningSocket) {
                    logger.error("SRT listener: the listening socket failed; no more callers are accepted")
                    failed = true
                    continue
                }
            }
            while true {
                var address = sockaddr_storage()
                var length = Int32(MemoryLayout<sockaddr_storage>.size)
                let accepted = withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_accept(listeningSocket, $0, &length) }
                }
                guard accepted != SRT_INVALID_SOCK else { break }
                let peer = SocketAddress(address)
                startCaller(accepted, peer: peer)
            }
        }
        if poll >= 0 { srt_epoll_release(poll) }
        closeListeningSocket()
        // Each caller thread notices `stopping` within its receive timeout and closes its session; a session whose
        // close is held (a stalled store) is not waited for past `stopWaitMilliseconds`.
        let deadline = Date(timeIntervalSinceNow: Double(Self.stopWaitMilliseconds) / 1000)
        callersEnded.lock()
        defer { callersEnded.unlock() }
        while state.withLock({ !$0.callers.isEmpty || !$0.starting.isEmpty }) {
            guard callersEnded.wait(until: deadline) else {
                let left = state.withLock { $0.callers.values.map { "\($0.status.channel)/\($0.status.rendition)" } }
                logger.warning(
                    "SRT listener stopped with callers still closing",
                    metadata: ["srt.callers": "\(left.joined(separator: ", "))"])
                break
            }
        }
    }

    /// Updates the state where a caller's thread ends (or a caller fails to start), and wakes `runBlocking`'s wait
    /// for the callers at a stop.
    private func callerEnded(_ update: (inout sending ListenerState) -> Void) {
        state.withLock { update(&$0) }
        callersEnded.lock()
        callersEnded.broadcast()
        callersEnded.unlock()
    }

    /// The listening socket is no longer listening (broken, closed).
    private static func isBroken(_ socket: SRTSOCKET) -> Bool {
        let status = srt_getsockstate(socket)
        return status == SRTS_BROKEN || status == SRTS_CLOSED || status == SRTS_NONEXIST
    }

    /// Asks `runBlocking()` to end.
    public func stop() { stopping.store(true, ordering: .releasing) }

    // MARK: - Handshake

    /// The listen callback's decision for a caller (libsrt's thread, during the handshake): nil admits it (its
    /// passphrase set on `socket`), else the refusal.
    func admit(socket: SRTSOCKET, peer: SocketAddress, streamID: String) -> SRTRefusal? {
        let requester = Requester(credential: "none", address: peer.host)
        let decided = StreamID.parse(streamID).flatMap { id in
            rules.withLock { $0.decide(id, loopback: peer.isLoopback) }.map { (id, $0) }
        }
        switch decided {
        case .failure(let refusal):
            refuse(refusal, streamID: streamID, requester: requester)
            return refusal
        case .success(let (id, admission)):
            let requester = Requester(credential: admission.credential, address: peer.host)
            if let refusal = resourceRefusal(id) ?? reserve(id) {
                refuse(refusal, streamID: streamID, requester: requester)
                return refusal
            }
            if let passphrase = admission.passphrase {
                let set = passphrase.withCString { text in
                    srt_setsockflag(socket, SRTO_PASSPHRASE, text, Int32(strlen(text)))
                }
                if set == SRT_ERROR {
                    let refusal = SRTRefusal(code: 1500, message: "the passphrase could not be set", reason: "error")
                    refuse(refusal, streamID: streamID, requester: requester)
                    return refusal
                }
            }
            // The key exchange comes after this callback: a caller whose passphrase does not match is refused by
            // libsrt, which reports it only in its log (`SRTHandshakeFailures`).
            let now = Self.nowMilliseconds()
            state.withLock { state in
                state.handshakes = state.handshakes.filter {
                    now - $0.value.sinceMilliseconds < SRTHandshakeFailures.watchMilliseconds
                }
                state.handshakes[socket] = PendingHandshake(
                    streamID: streamID, requester: requester, encrypted: admission.passphrase != nil,
                    sinceMilliseconds: now)
            }
            SRTHandshakeFailures.watch(socket, for: self)
            return nil
        }
    }

    /// Why the channel or rendition cannot take a caller: unknown without auto-create (1404), fed by the test
    /// source (1403), or a new channel or rendition past `limits.channels` / `limits.renditionsPerChannel` (1402:
    /// admitted, it would hold a caller slot while every segment is refused).
    func resourceRefusal(_ id: StreamID) -> SRTRefusal? {
        let autoCreate = origin.configuration.ingest.autoCreate
        if let limit = origin.creationRefusal(channel: id.channel, rendition: id.rendition) {
            return SRTRefusal(
                code: SRTRefusal.overload, message: limit.description,
                reason: limit.reason == .channelLimit ? "channel_limit" : "rendition_limit")
        }
        guard let channel = origin.channel(named: id.channel) else {
            return autoCreate
                ? nil
                : SRTRefusal(
                    code: SRTRefusal.notFound, message: "no channel '\(id.channel)' (ingest.autoCreate is off)",
                    reason: "unknown_channel")
        }
        if channel.configuration.source == .testSource {
            return SRTRefusal(
                code: SRTRefusal.forbidden, message: "channel '\(id.channel)' is fed by the test source",
                reason: "not_pushed")
        }
        if !autoCreate && !channel.hasRendition(id.rendition) {
            return SRTRefusal(
                code: SRTRefusal.notFound,
                message: "channel '\(id.channel)' has no rendition '\(id.rendition)' (ingest.autoCreate is off)",
                reason: "unknown_rendition")
        }
        return nil
    }

    /// Refuses a rendition that has a caller (1409) and a caller past `maxCallers` (1402).
    private func reserve(_ id: StreamID) -> SRTRefusal? {
        let fed = renditionsFed(by: id)
        return state.withLock { room(for: id, feeding: fed, in: $0) }
    }

    /// The renditions a caller publishing `id` feeds: `id.rendition`, and those of its channel's configuration cut
    /// from its stream (`srt: { from: id.rendition, ... }`, as `ContinuousTSIngest.openAll` opens them).
    func renditionsFed(by id: StreamID) -> Set<String> {
        let configuration = origin.configuration
        let settings =
            origin.channel(named: id.channel)?.configuration
            ?? (configuration.ingest.autoCreate ? configuration.ingest.autoCreatedChannel : nil)
        let mapped = settings?.renditions.filter { $0.srt?.from == id.rendition }.map(\.name) ?? []
        return Set(mapped).union([id.rendition])
    }

    /// Why `state` has no room for a caller of `id` feeding `fed`: one of those renditions has a caller, connected
    /// or starting (accepted, its session being opened), directly or cut from a caller's stream (1409), or
    /// `maxCallers` callers are connected or starting (1402). Checked in the handshake and again at the accept,
    /// where the caller taken is entered in `starting` under the same lock: of two callers whose handshakes passed
    /// together, the second accepted is closed.
    private func room(for id: StreamID, feeding fed: Set<String>, in state: ListenerState) -> SRTRefusal? {
        let holders =
            state.callers.values.map {
                FedRenditions(channel: $0.status.channel, rendition: $0.status.rendition, renditions: $0.renditions)
            } + state.starting.values
        let holder = holders.first { $0.channel == id.channel && !$0.renditions.isDisjoint(with: fed) }
        if let holder {
            guard holder.rendition != id.rendition else {
                return SRTRefusal(
                    code: SRTRefusal.conflict,
                    message: "\(id.channel)/\(id.rendition) has a caller; a second one is taken once the first drops")
            }
            let taken = holder.renditions.intersection(fed).sorted().map { "\(id.channel)/\($0)" }
            return SRTRefusal(
                code: SRTRefusal.conflict,
                message: "\(taken.joined(separator: ", ")) \(taken.count == 1 ? "is" : "are") fed by the caller of "
                    + "\(id.channel)/\(holder.rendition); a second caller is taken once it drops")
        }
        guard state.callers.count + state.starting.count < configuration.maxCallers else {
            return SRTRefusal(
                code: SRTRefusal.overload, message: "\(configuration.maxCallers) callers are connected (maxCallers)")
        }
        return nil
    }

    /// libsrt refused a caller this listener admitted, in the key exchange after the listen callback: a wrong
    /// passphrase (`SRT_REJ_BADSECRET`), or encryption on one side only (`SRT_REJ_UNSECURE`). Audited, rate-limited
    /// and counted as the callback's refusals are.
    func handshakeFailed(socket: SRTSOCKET, code: Int32) {
        guard let pending = state.withLock({ $0.handshakes.removeValue(forKey: socket) }) else { return }
        let refusal: SRTRefusal =
            switch code {
            case Int32(SRT_REJ_BADSECRET.rawValue):
                SRTRefusal(
                    code: code, message: "the caller's passphrase does not match (SRT_REJ_BADSECRET)",
                    reason: "bad_passphrase")
            case Int32(SRT_REJ_UNSECURE.rawValue):
                SRTRefusal(
                    code: code,
                    message: pending.encrypted
                        ? "the caller sent no passphrase; one is required (SRT_REJ_UNSECURE)"
                        : "the caller encrypts; this stream takes no passphrase (SRT_REJ_UNSECURE)",
                    reason: "unsecure")
            default:
                SRTRefusal(code: code, message: "the handshake failed after the stream id was admitted", reason: "handshake")
            }
        refuse(refusal, streamID: pending.streamID, requester: pending.requester)
    }

    private func refuse(_ refusal: SRTRefusal, streamID: String, requester: Requester) {
        state.withLock { $0.counters.refusals[refusal.reason, default: 0] += 1 }
        origin.audit.record(
            "SRT caller refused", by: requester, outcome: refusal.reason, refused: true,
            details: [
                "srt.streamid": "\(Self.redacted(streamID))", "srt.reject": "\(refusal.code)",
                "srt.reason": "\(refusal.message)",
            ])
    }

    /// The stream id as the log shows it: a token's secret (`s=`, `token=`) replaced.
    static func redacted(_ streamID: String) -> String {
        guard streamID.hasPrefix("#!::") else { return streamID }
        return "#!::"
            + streamID.dropFirst(4).split(separator: ",", omittingEmptySubsequences: false).map { pair in
                pair.hasPrefix("s=") || pair.hasPrefix("token=")
                    ? pair.prefix(through: pair.firstIndex(of: "=")!) + "***" : pair
            }.joined(separator: ",")
    }

    // MARK: - Callers

    private func startCaller(_ socket: SRTSOCKET, peer: SocketAddress) {
        SRTHandshakeFailures.forget(socket)
        state.withLock { _ = $0.handshakes.removeValue(forKey: socket) }
        let streamID = Self.streamID(of: socket)
        guard case .success(let id) = StreamID.parse(streamID) else {
            srt_close(socket)
            return
        }
        let credential: String
        switch rules.withLock({ $0.decide(id, loopback: peer.isLoopback) }) {
        case .success(let admission): credential = admission.credential
        case .failure:
            // The rules changed between the handshake and the accept (a reload).
            srt_close(socket)
            return
        }
        // The handshake checked the renditions; of two callers admitted at once for one of them, the second
        // accepted finds the first in `starting` and closes (audited and counted as a refusal in the handshake).
        let fed = renditionsFed(by: id)
        let admitted: Result<Int, SRTRefusal> = state.withLock { state in
            if let refusal = room(for: id, feeding: fed, in: state) { return .failure(refusal) }
            state.starting[socket] = FedRenditions(channel: id.channel, rendition: id.rendition, renditions: fed)
            state.serial += 1
            return .success(state.serial)
        }
        guard case .success(let serial) = admitted else {
            srt_close(socket)
            if case .failure(let refusal) = admitted {
                refuse(
                    refusal, streamID: streamID, requester: Requester(credential: credential, address: peer.host))
            }
            return
        }
        let thread = Thread { [self] in
            receive(socket: socket, id: id, fed: fed, peer: peer, credential: credential, serial: serial)
        }
        thread.name = "srt \(id.channel)/\(id.rendition)"
        thread.start()
    }

    private func receive(
        socket: SRTSOCKET, id: StreamID, fed: Set<String>, peer: SocketAddress, credential: String, serial: Int
    ) {
        let session: any ContinuousStreamSession
        do {
            session = try sink.open(channel: id.channel, rendition: id.rendition, peer: peer.description)
        } catch {
            callerEnded {
                $0.starting[socket] = nil
                $0.counters.refusals["sink", default: 0] += 1
            }
            logger.warning(
                "SRT caller closed: the stream could not be opened",
                metadata: [
                    "hls.channel": "\(id.channel)", "hls.rendition": "\(id.rendition)", "srt.peer": "\(peer)",
                    "error": "\(error)",
                ])
            srt_close(socket)
            return
        }
        let now = Self.nowMilliseconds()
        var status = SRTCallerStatus(
            channel: id.channel, rendition: id.rendition, peer: peer.description, credential: credential,
            connectedAtMilliseconds: Int64(Date().timeIntervalSince1970 * 1000))
        state.withLock { state in
            state.starting[socket] = nil
            state.counters.accepted += 1
            state.callers[socket] = CallerEntry(serial: serial, status: status, renditions: fed)
        }
        logger.info(
            "SRT caller connected",
            metadata: [
                "hls.channel": "\(id.channel)", "hls.rendition": "\(id.rendition)", "srt.peer": "\(peer)",
                "audit.credential": "\(credential)",
            ])
        _ = try? Self.setInt(socket, SRTO_RCVSYN, 1)
        _ = try? Self.setInt(socket, SRTO_RCVTIMEO, 100)
        let idle = Int64(configuration.idleTimeoutMilliseconds)
        var lastStats = now
        var retransmitted: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 1500)
        let reason: ContinuousStreamEnd
        while true {
            let received = buffer.withUnsafeMutableBytes { bytes in
                srt_recvmsg(socket, bytes.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(bytes.count))
            }
            if received > 0 {
                buffer.withUnsafeBytes { session.receive(UnsafeRawBufferPointer(rebasing: $0[0..<Int(received)])) }
            } else if received == SRT_ERROR {
                // Blocking mode: SRTO_RCVTIMEO ends a wait with SRT_ETIMEOUT (SRT_EASYNCRCV in some versions).
                let error = srt_getlasterror(nil)
                if error != SRT_ETIMEOUT.rawValue && error != SRT_EASYNCRCV.rawValue {
                    reason = .disconnected
                    break
                }
            }
            if stopping.load(ordering: .acquiring) {
                reason = .shutdown
                break
            }
            // Silence is measured on media (the session's access units), not on bytes: null packets and tables
            // from an encoder whose source died keep the connection busy but feed nothing.
            let silent = session.silentMilliseconds
            if silent > idle {
                reason = .silent(milliseconds: Int(silent))
                break
            }
            let clock = Self.nowMilliseconds()
            if clock - lastStats >= 1_000 {
                var perf = SRT_TRACEBSTATS()
                if srt_bstats(socket, &perf, 1) != SRT_ERROR {
                    retransmitted += Int64(perf.pktRcvRetrans)
                    status.update(perf, retransmitted: retransmitted, silentMilliseconds: silent)
                    state.withLock { $0.callers[socket]?.status = status }
                }
                lastStats = clock
            }
        }
        srt_close(socket)
        session.close(reason: reason)
        callerEnded { state in
            state.callers[socket] = nil
            if reason != .shutdown { state.counters.drops[reason.label, default: 0] += 1 }
        }
        logger.log(
            level: reason == .shutdown ? .info : .warning,
            reason == .shutdown ? "SRT caller closed: shutting down" : "SRT caller ended: feed drop",
            metadata: [
                "hls.channel": "\(id.channel)", "hls.rendition": "\(id.rendition)", "srt.peer": "\(peer)",
                "srt.end": "\(reason)",
            ])
    }

    // MARK: - libsrt helpers

    static func streamID(of socket: SRTSOCKET) -> String {
        var bytes = [CChar](repeating: 0, count: 600)
        var length = Int32(bytes.count)
        guard srt_getsockflag(socket, SRTO_STREAMID, &bytes, &length) != SRT_ERROR else { return "" }
        return String(decoding: bytes.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func setInt(_ socket: SRTSOCKET, _ option: SRT_SOCKOPT, _ value: Int32) throws {
        var value = value
        guard srt_setsockflag(socket, option, &value, Int32(MemoryLayout<Int32>.size)) != SRT_ERROR else {
            throw SRTError.last("srt_setsockflag \(option.rawValue)")
        }
    }

    /// Binds `socket` to `host` (an IPv4 or IPv6 address) and `port` (0: the system picks); returns the port bound.
    private static func bind(_ socket: SRTSOCKET, host: String, port: Int) throws -> Int {
        var hints = addrinfo()
        hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let address = found else {
            throw SRTError("bad host '\(host)'")
        }
        defer { freeaddrinfo(found) }
        guard srt_bind(socket, address.pointee.ai_addr, Int32(address.pointee.ai_addrlen)) != SRT_ERROR else {
            throw SRTError.last("srt_bind \(host):\(port)")
        }
        var local = sockaddr_storage()
        var length = Int32(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { srt_getsockname(socket, $0, &length) }
        }
        return SocketAddress(local).port
    }

    static func nowMilliseconds() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Int64(time.tv_sec) * 1000 + Int64(time.tv_nsec) / 1_000_000
    }
}

/// libsrt's listen callback: admits or rejects a caller during its handshake.
private func srtListenCallback(
    opaque: UnsafeMutableRawPointer?, socket: SRTSOCKET, version: Int32, address: UnsafePointer<sockaddr>?,
    streamID: UnsafePointer<CChar>?
) -> Int32 {
    guard let opaque, let address else { return -1 }
    let listener = Unmanaged<SRTListener>.fromOpaque(opaque).takeUnretainedValue()
    let text = streamID.map { String(cString: $0) } ?? ""
    guard let refusal = listener.admit(socket: socket, peer: SocketAddress(address), streamID: text) else { return 0 }
    // The access-control codes (1400...) lie in the predefined range (SRT_REJC_PREDEFINED = 1000): passed as they are.
    srt_setrejectreason(socket, refusal.code)
    return -1
}

/// Why a caller's feed ended, as a metric label.
extension ContinuousStreamEnd {
    var label: String {
        switch self {
        case .disconnected: "disconnected"
        case .silent: "silent"
        case .shutdown: "shutdown"
        }
    }
}

/// One connected caller: what the status and the metrics show (SRT's own statistics, `srt_bstats`, every second).
public struct SRTCallerStatus: Sendable, Hashable, Codable {
    public var channel: String
    public var rendition: String
    /// `host:port`.
    public var peer: String
    /// The token that admitted it, or `loopback`.
    public var credential: String
    /// Wall clock, milliseconds since 1970.
    public var connectedAtMilliseconds: Int64
    public var rttMilliseconds: Double = 0
    /// The receive rate over the last second, bits per second.
    public var bitsPerSecond: Double = 0
    public var receivedBytes: UInt64 = 0
    public var receivedPackets: Int64 = 0
    /// Packets the receiver found missing (most are then retransmitted).
    public var lostPackets: Int64 = 0
    /// Retransmitted packets received.
    public var retransmittedPackets: Int64 = 0
    /// Packets that arrived too late to play (or never): lost for good.
    public var droppedPackets: Int64 = 0
    /// Packets that could not be decrypted (a wrong key).
    public var undecryptedPackets: Int64 = 0
    /// What the receive buffer holds, as time and as bytes.
    public var receiveBufferMilliseconds: Int = 0
    public var receiveBufferBytes: Int = 0
    /// The negotiated latency, milliseconds.
    public var latencyMilliseconds: Int = 0
    /// Since the last payload, when the statistics were read.
    public var silentMilliseconds: Int64 = 0

    mutating func update(_ perf: SRT_TRACEBSTATS, retransmitted: Int64, silentMilliseconds: Int64) {
        rttMilliseconds = perf.msRTT
        bitsPerSecond = perf.mbpsRecvRate * 1_000_000
        receivedBytes = perf.byteRecvTotal
        receivedPackets = perf.pktRecvTotal
        lostPackets = Int64(perf.pktRcvLossTotal)
        retransmittedPackets = retransmitted
        droppedPackets = Int64(perf.pktRcvDropTotal)
        undecryptedPackets = Int64(perf.pktRcvUndecryptTotal)
        receiveBufferMilliseconds = Int(perf.msRcvBuf)
        receiveBufferBytes = Int(perf.byteRcvBuf)
        latencyMilliseconds = Int(perf.msRcvTsbPdDelay)
        self.silentMilliseconds = silentMilliseconds
    }
}

/// The listener's counters since start.
public struct SRTCounters: Sendable, Hashable {
    public var accepted: UInt64 = 0
    /// By reason (`SRTRefusal.reason`).
    public var refusals: [String: UInt64] = [:]
    /// Feeds ended by the caller or by silence, by `disconnected` / `silent`.
    public var drops: [String: UInt64] = [:]
}

private struct CallerEntry {
    var serial: Int
    var status: SRTCallerStatus
    /// The renditions its stream feeds (`SRTListener.renditionsFed(by:)` when it was accepted).
    var renditions: Set<String>
}

/// The renditions a caller feeds (connected, or accepted with its session being opened): taken from other callers.
private struct FedRenditions {
    var channel: String
    var rendition: String
    /// `SRTListener.renditionsFed(by:)`.
    var renditions: Set<String>
}

/// A caller the listen callback admitted, until it is accepted or libsrt refuses it in the key exchange.
private struct PendingHandshake {
    var streamID: String
    var requester: Requester
    /// The callback set a passphrase on its socket.
    var encrypted: Bool
    var sinceMilliseconds: Int64
}

private struct ListenerState {
    var callers: [SRTSOCKET: CallerEntry] = [:]
    /// Admitted in the handshake, not yet accepted (`SRTHandshakeFailures`).
    var handshakes: [SRTSOCKET: PendingHandshake] = [:]
    /// Callers accepted whose session is being opened, by socket: they hold their renditions as the callers do.
    var starting: [SRTSOCKET: FedRenditions] = [:]
    var serial = 0
    var counters = SRTCounters()
}

/// An IPv4 or IPv6 socket address, as text.
struct SocketAddress: Sendable, Hashable, CustomStringConvertible {
    var host: String
    var port: Int

    init(_ storage: sockaddr_storage) {
        var storage = storage
        self = withUnsafePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SocketAddress($0) } }
    }

    init(_ address: UnsafePointer<sockaddr>) {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        if address.pointee.sa_family == sa_family_t(AF_INET6) {
            let v6 = UnsafeRawPointer(address).assumingMemoryBound(to: sockaddr_in6.self)
            var raw = v6.pointee.sin6_addr
            inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
            port = Int(UInt16(bigEndian: v6.pointee.sin6_port))
        } else {
            let v4 = UnsafeRawPointer(address).assumingMemoryBound(to: sockaddr_in.self)
            var raw = v4.pointee.sin_addr
            inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
            port = Int(UInt16(bigEndian: v4.pointee.sin_port))
        }
        host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// 127.0.0.0/8, ::1 and IPv4-mapped loopback (the rule of HTTP ingest).
    var isLoopback: Bool { LoopbackAddress.contains(host) }

    var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

/// A libsrt call that failed.
struct SRTError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
    static func last(_ call: String) -> SRTError { SRTError("\(call): \(String(cString: srt_getlasterror_str()))") }
}

/// `srt_startup` once per process.
enum SRTLibrary {
    private static let started: Void = {
        srt_startup()
        // libsrt's log goes to `srtLogHandler`: at warning level for the line that reports a caller refused in the
        // key exchange (`SRTHandshakeFailures`); of the rest only critical lines are written (to stderr).
        srt_setloghandler(nil, srtLogHandler)
        srt_setloglevel(LOG_WARNING)
    }()

    static func start() { _ = started }
}
