public import LiveTimeline
public import MediaProbe
import SharedBytes
import Synchronization

/// One push into a Low-Latency rendition, taken while it arrives: its bytes are cut into parts outside the channel's
/// lock, each part is listed (one pass under `Channel.state`) as soon as it is cut, and the finished segment is
/// staged in the store and closed as `Channel.accept` closes a whole push.
///
/// The connection's thread calls `receive` for each piece of the body, then `finish` or `abandon` once. A push that
/// would create its channel or rendition creates them only when its first part is cut, so a refused push (not
/// media) creates nothing.
public final class StreamingPush: Sendable {
    /// The channel pushed to.
    public let channelName: String
    /// The rendition pushed to.
    public let rendition: String
    /// No byte for this long: the push is stalled (its segment closes at the last part; the rest is discarded).
    let stallMilliseconds: Int64
    private let clock: any OriginClock
    /// The channel (created on the first part for an auto-created channel or rendition).
    private let resolveChannel: @Sendable () throws(IngestError) -> Channel
    /// Called once when the push ends (finished, refused or abandoned).
    private let ended: @Sendable (StreamingPush) -> Void
    /// When the last byte arrived (shared clock, ms): read by a second push to the rendition.
    private let lastByteMilliseconds: Atomic<Int64>
    /// Taken by the connection's thread for each piece (uncontended) and by a second push replacing a stalled one.
    /// Lock order: `StreamingPush.progress` -> `Channel.state` (listing), and -> `Origin.streamingPushes` (ending).
    private let progress: Mutex<Progress>

    private struct Progress {
        var channel: Channel?
        var assembler: PartAssembler
        var container: MediaContainer?
        /// The open segment, from its first part until it is closed.
        var ticket: OpenSegmentTicket?
        /// Body bytes received so far.
        var received = 0
        /// The refusal answered at the end of the body, whose rest is read and discarded (a stalled push).
        var held: IngestError?
        var ended = false
    }

    init(
        channelName: String, rendition: String, clock: any OriginClock, lowLatency: LowLatencyConfiguration,
        initSection: InitSectionInfo?, limit: Int, channel: Channel?,
        resolveChannel: @escaping @Sendable () throws(IngestError) -> Channel,
        ended: @escaping @Sendable (StreamingPush) -> Void
    ) {
        self.channelName = channelName
        self.rendition = rendition
        self.clock = clock
        self.stallMilliseconds = max(1000, 3 * lowLatency.partTargetMilliseconds)
        self.resolveChannel = resolveChannel
        self.ended = ended
        self.lastByteMilliseconds = Atomic(clock.nowMilliseconds())
        let assembler = PartAssembler(
            partTarget: MediaTime(ticks: lowLatency.partTargetMilliseconds, timescale: 1000), initSection: initSection,
            limit: limit)
        progress = Mutex(Progress(channel: channel, assembler: assembler))
    }

    /// True when no byte arrived for `stallMilliseconds`: a second push may replace this one.
    func isStalled(nowMilliseconds now: Int64) -> Bool {
        now - lastByteMilliseconds.load(ordering: .relaxed) > stallMilliseconds
    }

    /// The next bytes of the body, on the connection's thread. Non-nil: the push is refused or ended now (the
    /// segment closed at its last part); the rest of the body is not read.
    public func receive(_ piece: UnsafeRawBufferPointer) -> IngestError? {
        let now = clock.nowMilliseconds()
        let previous = lastByteMilliseconds.exchange(now, ordering: .relaxed)
        let refusal = progress.withLock { progress -> IngestError? in
            guard !progress.ended else { return nil }
            let offset = progress.received
            progress.received += piece.count
            if progress.held == nil, progress.ticket != nil, now - previous > stallMilliseconds {
                stall(&progress, silentMilliseconds: now - previous)
            }
            guard progress.held == nil else { return nil }
            switch progress.assembler.receive(piece) {
            case .failure(let error):
                return refuse(&progress, error, atByte: offset)
            case .success(let events):
                for event in events {
                    switch event {
                    case .bytes(let part, let bytes):
                        guard let ticket = progress.ticket, let channel = progress.channel else { continue }
                        channel.partProgress(
                            rendition: rendition, position: PartPosition(msn: ticket.msn, part: part), .bytes(bytes))
                    case .completed(let part):
                        if let error = list(part, &progress) { return error }
                    }
                }
                return nil
            }
        }
        // The connection answers the refusal now and reads no more: neither `finish` nor `abandon` follows.
        if refusal != nil { ended(self) }
        return refusal
    }

    /// The body is complete: the segment is stored and closed.
    /// - Parameter cutShortPackets: MPEG-TS packets (ascending byte offsets in the body) left out of the segment: a
    ///   continuous input's PES packets cut short where its stream ended. Only those in the part in progress are;
    ///   that part's watchers, who heard them already, fail (their responses end in error) before it is listed.
    public func finish(leavingOut cutShortPackets: [Int] = []) throws(IngestError) -> IngestReceipt {
        defer { ended(self) }
        return try progress.withLock { progress throws(IngestError) -> IngestReceipt in
            guard !progress.ended else { throw IngestError(.unprocessable, "the push already ended") }
            progress.ended = true
            if let held = progress.held { throw held }
            if !cutShortPackets.isEmpty, progress.assembler.leaveOut(packetsAt: cutShortPackets),
                let ticket = progress.ticket, let channel = progress.channel
            {
                channel.partProgress(
                    rendition: rendition,
                    position: PartPosition(msn: ticket.msn, part: progress.assembler.completedParts), .failed)
            }
            let finished: (last: CutPart?, segment: SharedBytes, info: SegmentInfo)
            switch progress.assembler.finish() {
            case .failure(let error): throw refuse(&progress, error, atByte: progress.received)
            case .success(let value): finished = value
            }
            if let last = finished.last, let error = list(last, &progress) { throw error }
            if let held = progress.held { throw held }
            guard let ticket = progress.ticket, let channel = progress.channel else {
                throw .notMedia("empty body")
            }
            progress.ticket = nil
            return try channel.closeStreamedSegment(ticket: ticket, bytes: finished.segment, info: finished.info)
        }
    }

    /// The connection ended before the body did: the segment closes at its last listed part, if any.
    public func abandon() {
        defer { ended(self) }
        progress.withLock { progress in
            guard !progress.ended else { return }
            progress.ended = true
            closeAtLastPart(&progress)
        }
    }

    /// A second push to the rendition replaces this stalled one: its segment closes at the last part now, and the
    /// rest of its body is read and discarded.
    func supersede() {
        progress.withLock { progress in
            guard !progress.ended, progress.held == nil else { return }
            stall(
                &progress, silentMilliseconds: clock.nowMilliseconds() - lastByteMilliseconds.load(ordering: .relaxed))
        }
    }

    /// Lists a cut part: opens the segment at the first part (creating an auto-created channel or rendition
    /// then), lists it, publishes. Returns the refusal that ends the push; a stall is held for the end instead.
    private func list(_ part: CutPart, _ progress: inout Progress) -> IngestError? {
        let channel: Channel
        if let known = progress.channel {
            channel = known
        } else {
            do throws(IngestError) {
                channel = try resolveChannel()
            } catch {
                progress.ended = true
                return error
            }
            progress.channel = channel
        }
        let container =
            progress.container
            ?? part.bytes.withUnsafeBytes { MediaProbe.detectContainer($0) }
            ?? .mpegTS
        progress.container = container
        switch channel.listStreamedPart(part, rendition: rendition, ticket: progress.ticket, container: container) {
        case .success(let ticket):
            progress.ticket = ticket
            return nil
        case .failure(let error):
            progress.ticket = nil
            if error.reason == .pushStalled {
                progress.held = error
                return nil
            }
            progress.ended = true
            return channel.recordRejection(rendition: rendition, error)
        }
    }

    /// The cutter refused the body: the segment closes at its last part; the refusal names the byte offset.
    private func refuse(_ progress: inout Progress, _ error: IngestError, atByte offset: Int) -> IngestError {
        progress.ended = true
        let listed = progress.ticket != nil
        closeAtLastPart(&progress)
        let refusal =
            listed
            ? IngestError(
                error.reason, "\(error.message) (at byte \(offset) of the body: the segment ends at its last part)")
            : IngestError(error.reason, "\(error.message) (at byte \(offset) of the body)")
        return progress.channel?.recordRejection(rendition: rendition, refusal) ?? refusal
    }

    /// No byte for `silentMilliseconds`: the segment closes at its last part; the rest of the body is discarded
    /// and answered `pushStalled` at its end.
    private func stall(_ progress: inout Progress, silentMilliseconds: Int64) {
        closeAtLastPart(&progress)
        progress.held = IngestError(
            .pushStalled,
            "no byte for \(silentMilliseconds) ms (more than \(stallMilliseconds) ms) after \(progress.received) bytes: "
                + "the segment ended at its last part and the rest of the body was discarded")
    }

    private func closeAtLastPart(_ progress: inout Progress) {
        guard let ticket = progress.ticket, let channel = progress.channel else { return }
        progress.ticket = nil
        channel.partProgress(
            rendition: rendition, position: PartPosition(msn: ticket.msn, part: progress.assembler.completedParts),
            .failed)
        channel.abandonStreamedSegment(ticket: ticket)
    }
}

extension Origin {
    /// Starts taking a media segment as it arrives (MPEG-TS or fMP4, as the input announces: `container`) for a
    /// Low-Latency channel; nil when the push is taken whole (`ingest(_:)`): a regular channel, another container,
    /// an fMP4 rendition without its init section yet. The rendition is the input's (mapped, as in `MediaPush`).
    /// Throws when the push is refused before any byte (unknown channel, `concurrentPush`, a limit, ...); creates
    /// nothing before the first part is cut.
    /// - Parameter requester: who pushes, named in the audit log when the push creates a channel or rendition.
    public func beginStreamingPush(
        channel channelName: String, rendition: String, container: MediaContainer, requester: Requester = .process
    ) throws(IngestError) -> StreamingPush? {
        let fragmented = container == .fragmentedMP4Segment
        guard container == .mpegTS || fragmented else { return nil }
        guard OriginNames.isValid(channelName) else { throw .invalidName("channel", channelName) }
        guard OriginNames.isValid(rendition) else { throw .invalidName("rendition", rendition) }
        let existing = channel(named: channelName)
        // One copy of the settings for the whole push (a reload may swap them meanwhile).
        let configuration = self.configuration
        let autoCreate = configuration.ingest.autoCreate
        guard let settings = existing?.configuration ?? (autoCreate ? configuration.ingest.autoCreatedChannel : nil)
        else { throw .unknownChannel(channelName) }
        guard let lowLatency = settings.lowLatency else { return nil }
        if settings.source == .testSource { throw .notPushed(channelName) }
        let known = existing.map { $0.hasRendition(rendition) } ?? false
        if !known, !autoCreate { throw .unknownRendition(channelName, rendition) }
        // The segment's size is not known yet: a channel at its memory bound takes no new segment.
        try existing?.admit(bytes: 0, limits: configuration.limits)
        var initSection: InitSectionInfo?
        if fragmented {
            guard let existing, let current = existing.currentInitSection(rendition) else { return nil }
            initSection = current
        }
        let push = StreamingPush(
            channelName: channelName, rendition: rendition, clock: clock, lowLatency: lowLatency,
            initSection: initSection, limit: configuration.ingest.maxSegmentBytes, channel: known ? existing : nil,
            resolveChannel: { [self] () throws(IngestError) -> Channel in
                try channelForStreamingPush(channelName, rendition: rendition, requester: requester)
            },
            ended: { [self] push in endStreamingPush(push) })
        try registerStreamingPush(push)
        return push
    }
}
