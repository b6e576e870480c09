public import LiveTimeline
public import Logging
import MediaProbe
public import OriginCore
import SharedBytes
import Synchronization
public import TSSegmenter

/// Feeds continuous MPEG-TS streams to the origin (an SRT caller, a file, a test): one session per stream, its bytes
/// cut by a `TransportStreamSegmenter` on the channel's clock and handed to the core as any push is. A whole segment
/// goes through `Origin.ingest(_:)` once it ends (stored before it is listed); on a Low-Latency channel each segment
/// is a `StreamingPush` fed as its bytes arrive, so parts are cut at access units and the preload hint answered from
/// them. Knows nothing of SRT: the SRT listener opens a session per caller.
public final class ContinuousTSIngest: Sendable {
    let origin: Origin
    let logger: Logger
    /// `channel/rendition` of the streams that had a session: a later session starts with a discontinuity.
    private let fed = Mutex<Set<String>>([])
    /// The open sessions by `channel/rendition` (the newest one per rendition), for the channel status.
    private let open = Mutex<[String: ContinuousTSSession]>([:])

    public init(origin: Origin, logger: Logger) {
        self.origin = origin
        self.logger = logger
    }

    /// A stream for `channel`/`rendition` begins (the caller's access was checked by the input).
    /// - Parameter peer: who sends it (`host:port`), for logs and the audit trail.
    /// - Throws: the channel is unknown and auto-create is off.
    public func open(channel: String, rendition: String, peer: String) throws(IngestError) -> ContinuousTSSession {
        let settings = try settings(channel: channel, rendition: rendition)
        return open(channel: channel, rendition: rendition, peer: peer, settings: settings, selector: nil, anchor: nil)
    }

    /// A stream for `channel`/`rendition` begins: a session for each rendition the channel's configuration cuts from
    /// it (`srt: { from: rendition, ... }`, each keeping its program or stream, all on one anchor), and one for
    /// `rendition` itself, the whole stream, unless it is configured as one of them; else `rendition` alone.
    /// - Throws: the channel is unknown and auto-create is off.
    public func openAll(channel: String, rendition: String, peer: String) throws(IngestError) -> [ContinuousTSSession] {
        let settings = try settings(channel: channel, rendition: rendition)
        let mapped = settings.renditions.filter { $0.srt?.from == rendition }
        guard !mapped.isEmpty else {
            return [
                open(channel: channel, rendition: rendition, peer: peer, settings: settings, selector: nil, anchor: nil)
            ]
        }
        let anchor = SharedStreamAnchor()
        var sessions: [ContinuousTSSession] = []
        if !mapped.contains(where: { $0.name == rendition }) {
            sessions.append(
                open(
                    channel: channel, rendition: rendition, peer: peer, settings: settings, selector: nil,
                    anchor: anchor))
        }
        for member in mapped {
            guard let selection = member.srt else { continue }
            let selector = TransportStreamSelector(
                program: selection.program, pid: selection.pid, language: selection.language, kind: selection.kind)
            sessions.append(
                open(
                    channel: channel, rendition: member.name, peer: peer, settings: settings, selector: selector,
                    anchor: anchor))
        }
        return sessions
    }

    private func settings(channel: String, rendition: String) throws(IngestError) -> ChannelConfiguration {
        guard OriginNames.isValid(channel) else { throw .invalidName("channel", channel) }
        guard OriginNames.isValid(rendition) else { throw .invalidName("rendition", rendition) }
        let configuration = origin.configuration
        guard
            let settings = origin.channel(named: channel)?.configuration
                ?? (configuration.ingest.autoCreate ? configuration.ingest.autoCreatedChannel : nil)
        else { throw IngestError(.unknownChannel, "unknown channel '\(channel)' (auto-create is off)") }
        return settings
    }

    private func open(
        channel: String, rendition: String, peer: String, settings: ChannelConfiguration,
        selector: TransportStreamSelector?, anchor: SharedStreamAnchor?
    ) -> ContinuousTSSession {
        let configuration = origin.configuration
        let resumed = fed.withLock { !$0.insert("\(channel)/\(rendition)").inserted }
        let segmenter = TransportStreamSegmenter(
            configuration: .init(
                segmentDurationMilliseconds: settings.segmentDurationMilliseconds,
                toleranceMilliseconds: settings.sharedTimeline?.toleranceMilliseconds ?? 500,
                maximumSegmentBytes: configuration.ingest.maxSegmentBytes, selector: selector),
            discontinuity: resumed, sharedAnchor: anchor)
        var sessionLogger = logger
        sessionLogger[metadataKey: "channel"] = "\(channel)"
        sessionLogger[metadataKey: "rendition"] = "\(rendition)"
        sessionLogger[metadataKey: "peer"] = "\(peer)"
        sessionLogger.info("continuous MPEG-TS stream opened\(resumed ? " (resumes the feed: discontinuity)" : "")")
        let key = "\(channel)/\(rendition)"
        let session = ContinuousTSSession(
            origin: origin, channel: channel, rendition: rendition, peer: peer, segmenter: segmenter,
            lowLatency: settings.lowLatency != nil, logger: sessionLogger,
            closed: { [weak self] closed in
                self?.open.withLock { sessions in
                    if sessions[key] === closed { sessions[key] = nil }
                }
            })
        open.withLock { $0[key] = session }
        return session
    }

    /// The open sessions of `channel`, by rendition: what the channel status shows (segments, refusals, the
    /// demuxer's counters, the keyframe-interval warning with the `-g` to use).
    public func sessions(channel: String) -> [String: ContinuousTSSession.Status] {
        let sessions = open.withLock { $0.values.filter { $0.channel == channel } }
        var result: [String: ContinuousTSSession.Status] = [:]
        for session in sessions { result[session.rendition] = session.status }
        return result
    }
}

/// One continuous stream into one rendition: `receive` its bytes in order, then `close` once.
public final class ContinuousTSSession: Sendable {
    public let channel: String
    public let rendition: String
    public let peer: String
    private let origin: Origin
    private let logger: Logger
    private let lowLatency: Bool
    private let state: Mutex<State>
    /// A copy of the status under its own lock: `receive` holds `state` while the origin stores a segment, and a
    /// status request must not wait for a stalled store.
    private let published: Mutex<Status>
    private let closed: @Sendable (ContinuousTSSession) -> Void
    /// When the stream last carried media (a primary access unit), on the origin's clock; the open time before.
    private let lastMediaMilliseconds: Atomic<Int64>

    /// What the channel status shows of a session.
    public struct Status: Sendable, Hashable, Codable {
        public var segmenter: TransportStreamSegmenter.Status
        public var segmentsAccepted = 0
        public var segmentsRefused = 0
        public var bytesReceived = 0
        /// The latest refusal of a segment by the origin.
        public var lastRefusal: String?
        public var closed = false
    }

    private struct State: ~Copyable {
        var segmenter: TransportStreamSegmenter
        var status: Status
        /// Low-Latency: the open segment's push (nil when none is open, or it was refused: the rest of that segment
        /// is dropped).
        var push: StreamingPush?
        /// Otherwise: the open segment's bytes (nil when none is open), handed to the store without a copy.
        var segment: ByteAccumulator?
        /// The last segment's size: the next one's first allocation.
        var lastSegmentBytes = 0
        /// When the status was last copied to `published`.
        var publishedAt: Int64?
    }

    init(
        origin: Origin, channel: String, rendition: String, peer: String, segmenter: TransportStreamSegmenter,
        lowLatency: Bool, logger: Logger, closed: @escaping @Sendable (ContinuousTSSession) -> Void = { _ in }
    ) {
        self.closed = closed
        self.origin = origin
        self.channel = channel
        self.rendition = rendition
        self.peer = peer
        self.lowLatency = lowLatency
        self.logger = logger
        state = Mutex(State(segmenter: segmenter, status: Status(segmenter: segmenter.status)))
        published = Mutex(Status(segmenter: segmenter.status))
        lastMediaMilliseconds = Atomic(origin.clock.nowMilliseconds())
    }

    /// How long the stream has carried no media: no access unit of its primary stream since (or since the session
    /// opened). Null packets, tables and other PIDs are not media: a CBR encoder whose source died keeps sending
    /// them, and the input drops such a caller once this passes its idle timeout.
    public var silentMilliseconds: Int64 {
        max(0, origin.clock.nowMilliseconds() - lastMediaMilliseconds.load(ordering: .relaxed))
    }

    /// The status as of the last bytes handled; never waits for a segment being stored.
    public var status: Status { published.withLock { $0 } }

    /// The next bytes of the stream, in arrival order (any split).
    public func receive(_ bytes: UnsafeRawBufferPointer) {
        let now = origin.clock.nowMilliseconds()
        state.withLock { state in
            guard !state.status.closed else { return }
            state.status.bytesReceived += bytes.count
            let units = state.segmenter.status.accessUnits
            let events = state.segmenter.consume(bytes, arrivalMilliseconds: now)
            if state.segmenter.status.accessUnits != units { lastMediaMilliseconds.store(now, ordering: .relaxed) }
            handle(events, &state)
            // The copy is made when a segment started or ended, else at most every `publishMilliseconds`: not
            // on every SRT payload (seven packets).
            if !events.isEmpty || state.publishedAt.map({ now - $0 >= Self.publishMilliseconds }) ?? true {
                state.publishedAt = now
                publish(state.status)
            }
        }
    }

    /// How stale the status's byte and packet counters may be.
    static let publishMilliseconds: Int64 = 250

    /// The stream ended (`reason` is logged): the open segment ends with what it has. A later session for the same
    /// rendition starts with a discontinuity.
    /// - Parameter feedDrop: the encoder is gone (a disconnect, silence), not the origin shutting down: the
    ///   rendition's feed shows `dropped` at once, not when the next slot closes with a GAP.
    public func close(reason: String, feedDrop: Bool = true) {
        let first = state.withLock { state in
            guard !state.status.closed else { return false }
            let events = state.segmenter.finish()
            handle(events, &state)
            state.status.closed = true
            publish(state.status)
            return true
        }
        guard first else { return }
        // After the last segment is stored (storing it makes the feed live again).
        if feedDrop { origin.markFeedDropped(channel: channel, rendition: rendition) }
        closed(self)
        logger.info("continuous MPEG-TS stream closed: \(reason)")
    }

    private func handle(_ events: [TransportStreamSegmenter.Event], _ state: inout State) {
        for event in events {
            switch event {
            case .started(let start):
                // A new session, a timestamp jump or a stream change: a discontinuity even where the PTS continue.
                if start.discontinuity { origin.markDiscontinuity(channel: channel, rendition: rendition) }
                if lowLatency {
                    state.push = beginPush(start, &state)
                } else {
                    let expected = state.lastSegmentBytes
                    state.segment = ByteAccumulator(initialCapacity: max(64 << 10, expected + expected / 16))
                }
            case .bytes(let bytes):
                if lowLatency {
                    guard let push = state.push else { continue }
                    let refusal = bytes.withUnsafeBytes { push.receive($0) }
                    if let refusal {
                        refused(refusal, &state)
                        state.push = nil
                    }
                } else if var segment = state.segment.take() {
                    bytes.withUnsafeBytes { segment.append($0) }
                    state.segment = consume segment
                }
            case .ended(let end):
                // The stream ended inside PES packets (the caller's end): they are left out, and a segment with no
                // whole access unit of its media, or none of a stream the stream carried (a frame or a few after a
                // keyframe, no audio: hls.js stops there), is dropped: its slot is a GAP (a Low-Latency one closes
                // at its last listed part). No segment of a continuous stream was acknowledged to its sender.
                if end.dropped { logDropped(end) }
                if lowLatency {
                    guard let push = state.push else { continue }
                    state.push = nil
                    if end.dropped {
                        push.abandon()
                        continue
                    }
                    do throws(IngestError) {
                        _ = try push.finish(leavingOut: end.cutShortPackets)
                        state.status.segmentsAccepted += 1
                    } catch {
                        refused(error, &state)
                    }
                } else {
                    guard let segment = state.segment.take() else { continue }
                    state.lastSegmentBytes = segment.count
                    if end.dropped { continue }
                    var body = segment.finish()
                    if !end.cutShortPackets.isEmpty {
                        body = SharedBytes(
                            body.withUnsafeBytes {
                                TransportStreamPackets.removing(packetsAt: end.cutShortPackets, from: $0)
                            })
                    }
                    let push = MediaPush(
                        channel: channel, rendition: rendition, kind: .media, body: body,
                        label: "segment \(end.index) of the stream from \(peer)",
                        requester: Requester(credential: "stream", address: peer))
                    do throws(IngestError) {
                        _ = try origin.ingest(push)
                        state.status.segmentsAccepted += 1
                    } catch {
                        refused(error, &state)
                    }
                }
            case .keyframeWarning(let message):
                logger.warning("\(message)")
            }
        }
        state.status.segmenter = state.segmenter.status
    }

    private func publish(_ status: Status) { published.withLock { $0 = status } }

    private func logDropped(_ end: TransportStreamSegmenter.SegmentEnd) {
        let pids = end.missingStreams.map(String.init).joined(separator: ", ")
        let why = end.cutShortEntirely ? "no whole access unit of its media" : "no whole PES of PID \(pids)"
        logger.info("the stream's last segment (\(end.durationTicks / 90) ms) is dropped: \(why)")
    }

    private func beginPush(_ start: TransportStreamSegmenter.SegmentStart, _ state: inout State) -> StreamingPush? {
        do throws(IngestError) {
            return try origin.beginStreamingPush(
                channel: channel, rendition: rendition, container: .mpegTS,
                requester: Requester(credential: "stream", address: peer))
        } catch {
            refused(error, &state)
            return nil
        }
    }

    private func refused(_ error: IngestError, _ state: inout State) {
        state.status.segmentsRefused += 1
        state.status.lastRefusal = error.description
        logger.warning("segment refused: \(error.description)")
    }
}
