import HLSPlaylist
import LiveTimeline
public import Logging
public import OriginCore
import SharedBytes
import Synchronization

/// Fills the slots this origin's encoder feed missed with the segments a peer of the redundancy group lists for
/// them, before the ingest loop closes them as GAPs, so both origins publish the same entry (docs/redundancy.md).
///
/// A rendition's next slot is *overdue* once its slot ended `lateness` ms ago with no segment here. Each peer in
/// turn is asked for the rendition's media playlist (`/live/{channel}/{rendition}/index.m3u8`); a peer that lists
/// that MSN as a segment (not a GAP) with the same PDT (the same timeline) gives its bytes, which go through the
/// ingest path as a push does (probed, stored, journaled). A peer that does not list it yet is asked again 200 ms
/// later until the slot's deadline. When no peer has it, the slot closes as a GAP here as on every peer.
/// Channels with encryption or playback tokens are not repaired (peers serve ciphertext, or need a viewer's token).
public final class PeerRepairer: Sendable {
    /// What was repaired from one peer, and how fetches from it went.
    public struct PeerStatistics: Sendable, Hashable {
        /// The peer's base URL as configured.
        public let peer: String
        /// Segments fetched from the peer and accepted into a slot this origin missed.
        public var repairedSegments = 0
        /// Requests to the peer that failed (connection, timeout, status other than 200).
        public var failedFetches = 0
        /// Slots the peer listed with another PDT than ours (the two timelines disagree): not repaired from it.
        public var timelineMismatches = 0
        /// The newest failure, for the status page.
        public var lastError: String?
    }

    private struct SlotKey: Hashable {
        let channel: String
        let rendition: String
        let msn: UInt64
    }

    private struct State {
        var statistics: [PeerStatistics]
        var lastTried: [SlotKey: Int64] = [:]
        /// By channel: segments repaired from each peer (by peer index).
        var repairedByChannel: [String: [Int]] = [:]
        /// By channel: the last agreement check with each peer (by peer index).
        var agreements: [String: [PeerAgreement?]] = [:]
        /// By channel: how many agreement checks ran (which rendition is next).
        var turns: [String: Int] = [:]
    }

    let origin: Origin
    let peers: [PeerURL]
    let fetcher: any PeerFetching
    private let lateness: Int64
    /// Longest wait for one answer of a peer (a repair also waits no longer than its slot's deadline).
    let requestTimeout: Duration
    private let logger: Logger
    private let state: Mutex<State>

    /// A slot is asked for again at most this often (ms).
    static let retryMilliseconds: Int64 = 200

    /// - Parameters:
    ///   - peers: base URLs of the other origins of the group (`http://10.0.0.2:8080`).
    ///   - lateness: how long after its slot's end a segment is overdue (ms).
    ///   - requestTimeout: longest wait for one answer of a peer.
    public init(
        origin: Origin, peers: [PeerURL], fetcher: any PeerFetching = PeerClient(), lateness: Int64 = 250,
        requestTimeout: Duration = .milliseconds(500), logger: Logger
    ) {
        self.requestTimeout = requestTimeout
        self.origin = origin
        self.peers = peers
        self.fetcher = fetcher
        self.lateness = lateness
        self.logger = logger
        state = Mutex(State(statistics: peers.map { PeerStatistics(peer: $0.description) }))
    }

    /// Per peer, in the configured order.
    public var statistics: [PeerStatistics] { state.withLock { $0.statistics } }

    /// The last agreement check of `channel` with each peer (checked ones only), in the configured order.
    public func agreements(channel: String) -> [PeerAgreement] {
        state.withLock { $0.agreements[channel]?.compactMap { $0 } ?? [] }
    }

    /// Repairs every `interval` and checks the agreement with the peers every `agreementInterval`, until the task is
    /// cancelled. The two run as loops of their own: a slow or unreachable peer holding up an agreement check never
    /// delays a repair, whose deadline is about a second away.
    public func run(interval: Duration = .milliseconds(100), agreementInterval: Duration = .seconds(2)) async {
        await withTaskGroup(of: Void.self) { loops in
            loops.addTask {
                while !Task.isCancelled {
                    // A restarted origin catching up repairs one slot per rendition and pass: go on at once while
                    // passes repair something.
                    while await self.repairOnce() > 0, !Task.isCancelled {}
                    try? await Task.sleep(for: interval)
                }
            }
            loops.addTask {
                while !Task.isCancelled {
                    await self.checkAgreement()
                    try? await Task.sleep(for: agreementInterval)
                }
            }
        }
    }

    func nextTurn(channel: String) -> Int {
        state.withLock { state in
            defer { state.turns[channel, default: 0] += 1 }
            return state.turns[channel, default: 0]
        }
    }

    func record(_ agreement: PeerAgreement, channel: String, peerIndex: Int) {
        let changed = state.withLock { state -> Bool in
            var list = state.agreements[channel] ?? Array(repeating: nil, count: peers.count)
            let before = list[peerIndex]?.agrees
            list[peerIndex] = agreement
            state.agreements[channel] = list
            return before != agreement.agrees
        }
        guard changed else { return }
        if agreement.agrees {
            logger.info(
                "peer agrees", metadata: ["hls.channel": "\(channel)", "peer": "\(agreement.peer)"])
        } else {
            logger.warning(
                "peer disagrees",
                metadata: [
                    "hls.channel": "\(channel)", "peer": "\(agreement.peer)",
                    "difference": "\(agreement.difference ?? "-")",
                ])
        }
    }

    func repaired(channel: String, peerIndex: Int) -> Int {
        state.withLock { $0.repairedByChannel[channel]?[peerIndex] ?? 0 }
    }

    /// One pass over every overdue slot of every repairable channel, and every first slot held for the peers'
    /// discontinuity sequence (concurrently); returns how many were repaired or settled.
    public func repairOnce() async -> Int {
        let now = origin.clock.nowMilliseconds()
        var due: [(channel: String, slot: MissingSlot)] = []
        var holding: [(channel: Channel, opening: HeldOpening)] = []
        for channel in origin.allChannels where Self.repairable(channel.configuration) {
            let name = channel.configuration.name
            if let held = channel.heldOpening, tryNow(channel: name, rendition: held.rendition, msn: held.msn, now) {
                holding.append((channel, held))
            }
            for slot in channel.missingSlots(lateness: lateness)
            where tryNow(channel: name, rendition: slot.rendition, msn: slot.msn, now) {
                due.append((name, slot))
            }
        }
        state.withLock { state in state.lastTried = state.lastTried.filter { now - $0.value < 60_000 } }
        guard !due.isEmpty || !holding.isEmpty else { return 0 }
        return await withTaskGroup(of: Bool.self) { group in
            for (channel, slot) in due {
                group.addTask { await self.repair(slot, channel: channel) }
            }
            for (channel, held) in holding {
                group.addTask { await self.agree(held, channel: channel) }
            }
            var repaired = 0
            for await done in group where done { repaired += 1 }
            return repaired
        }
    }

    /// Push channels in the clear: a peer's segment URL serves the pushed bytes.
    static func repairable(_ configuration: ChannelConfiguration) -> Bool { configuration.repairsFromPeers }

    /// Asks each peer in turn for the slot; true when one gave it and the ingest path took it into that slot.
    private func repair(_ slot: MissingSlot, channel: String) async -> Bool {
        for (index, peer) in peers.enumerated() {
            let remaining = slot.deadlineMilliseconds - origin.clock.nowMilliseconds()
            guard remaining > 0 else { return false }
            let timeout = min(requestTimeout, .milliseconds(remaining))
            do {
                let bytes: [UInt8]
                let fileName: String
                let placement: PeerPlacement
                switch try await fetchSegment(slot, channel: channel, from: peer, timeout: timeout, peerIndex: index) {
                case .segment(let body, let name, let place):
                    (bytes, fileName, placement) = (body, name, place)
                case .gap, .gone:
                    // Catching up after a restart (the channel decides): the peer had no segment either, or the
                    // slot left its window.
                    if origin.channel(named: channel)?.acceptPeerGap(rendition: slot.rendition, msn: slot.msn) == true {
                        return true
                    }
                    continue
                case .notYet, .otherTimeline:
                    continue
                }
                // Media at the peer's place, under this origin's rendition name; the number ending the peer's segment
                // URL pairs WebVTT segments as an encoder's file number does.
                let receipt = try origin.ingest(
                    MediaPush(
                        channel: channel, rendition: slot.rendition, kind: .media, body: SharedBytes(bytes),
                        sequenceNumber: WebVTTSegment.fileNumber(fileName), label: fileName, placement: placement))
                guard receipt.kind == .segment else { return false }  // the encoder's push arrived meanwhile
                if receipt.msn != slot.msn {
                    logger.warning(
                        "segment repaired from a peer took another slot",
                        metadata: [
                            "hls.channel": "\(channel)", "hls.rendition": "\(slot.rendition)",
                            "hls.msn": "\(slot.msn)", "peer": "\(peer)",
                            "taken": "\(receipt.msn.map(String.init) ?? "-")",
                        ])
                }
                state.withLock { state in
                    state.statistics[index].repairedSegments += 1
                    state.repairedByChannel[channel, default: Array(repeating: 0, count: peers.count)][index] += 1
                }
                logger.info(
                    "slot repaired from a peer",
                    metadata: [
                        "hls.channel": "\(channel)", "hls.rendition": "\(slot.rendition)", "hls.msn": "\(slot.msn)",
                        "peer": "\(peer)",
                    ])
                return true
            } catch {
                noteFailure(peerIndex: index, error)
            }
        }
        return false
    }

    /// True when the slot was not asked for within `retryMilliseconds` (it is marked as asked now).
    private func tryNow(channel: String, rendition: String, msn: UInt64, _ now: Int64) -> Bool {
        let key = SlotKey(channel: channel, rendition: rendition, msn: msn)
        return state.withLock { state in
            if let last = state.lastTried[key], now - last < Self.retryMilliseconds { return false }
            state.lastTried[key] = now
            return true
        }
    }

    /// Counts a failed request to a peer, with its reason for the status.
    private func noteFailure(peerIndex index: Int, _ error: any Error) {
        state.withLock {
            $0.statistics[index].failedFetches += 1
            $0.statistics[index].lastError = "\(error)"
        }
        logger.debug("peer request failed", metadata: ["peer": "\(peers[index])", "reason": "\(error)"])
    }

    /// Settles a held opening with the peers (`ChannelState+Agreement`): a peer that lists a segment within the clock
    /// tolerance of it gives its place (and, for a first slot, its discontinuity sequence); else, once every peer
    /// answered, the preferred of the candidates the peers hold and this origin's own (a peer that has no media for
    /// the rendition, lists something else at that time, or cannot be reached offers none). A peer whose newest entry
    /// is older and that holds nothing is asked again; the channel stops waiting on its own when its hold has
    /// passed. True when settled.
    private func agree(_ held: HeldOpening, channel: Channel) async -> Bool {
        let name = channel.configuration.name
        let tolerance = channel.configuration.sharedTimeline?.toleranceMilliseconds ?? 0
        var chosen = held.candidate
        for (index, peer) in peers.enumerated() {
            let answer: PeerOpening
            do {
                answer = try await opening(near: held, tolerance: tolerance, channel: name, from: peer)
            } catch {
                noteFailure(peerIndex: index, error)
                continue
            }
            switch answer {
            case .listed(let candidate, let sequence):
                guard
                    channel.settleOpening(
                        msn: held.msn, agreed: candidate, peerSequence: held.first ? sequence : nil)
                else { return false }
                logger.info(
                    "opening agreed: placed as a peer lists it",
                    metadata: [
                        "hls.channel": "\(name)", "hls.msn": "\(candidate.msn)", "peer": "\(peer)",
                        "hls.pdt_shift_ms":
                            "\(candidate.programDateTimeMilliseconds - held.programDateTimeMilliseconds)",
                        "hls.discontinuity_sequence": "\(held.first ? sequence.description : "own")",
                    ])
                return true
            case .held(let candidate): chosen = OpeningCandidate.preferred(chosen, candidate)
            case .nothing: continue
            case .notYet: return false
            }
        }
        let agreed = chosen == held.candidate ? nil : chosen
        guard channel.settleOpening(msn: held.msn, agreed: agreed, peerSequence: nil) else { return false }
        if let agreed {
            logger.info(
                "opening agreed: a peer's held candidate preferred",
                metadata: [
                    "hls.channel": "\(name)", "hls.msn": "\(agreed.msn)",
                    "hls.pdt_shift_ms": "\(agreed.programDateTimeMilliseconds - held.programDateTimeMilliseconds)",
                ])
        }
        return true
    }

    /// What a peer says of an opening this origin holds.
    enum PeerOpening {
        /// It lists a segment within the tolerance: its MSN and PDT, and the discontinuity sequence there.
        case listed(OpeningCandidate, sequence: UInt64)
        /// It holds an opening of its own within the tolerance.
        case held(OpeningCandidate)
        /// It has no media for the rendition, or lists something else at that time: it offers nothing.
        case nothing
        /// Its newest entry is older and it holds nothing: ask again.
        case notYet
    }

    /// Reads the peer's media playlist of the held opening's rendition, then, if it lists no segment near the
    /// opening, the opening the peer holds (`GET /peer/{channel}/opening`).
    private func opening(
        near held: HeldOpening, tolerance: Int64, channel: String, from peer: PeerURL
    ) async throws -> PeerOpening {
        let listed = try await mediaPlaylist(
            channel: channel, rendition: held.rendition, from: peer, timeout: requestTimeout)
        var covered = listed == nil
        if let (playlist, _) = listed {
            var sequence = playlist.discontinuitySequence
            for (offset, segment) in playlist.segments.enumerated() {
                if segment.discontinuity { sequence += 1 }
                guard let pdt = segment.programDateTime?.millisecondsSince1970 else { continue }
                if pdt + NumberFormatting.milliseconds(segment.duration) > held.programDateTimeMilliseconds {
                    covered = true
                }
                guard !segment.gap, abs(pdt - held.programDateTimeMilliseconds) <= tolerance else { continue }
                let msn = playlist.mediaSequence + UInt64(offset)
                return .listed(OpeningCandidate(msn: msn, programDateTimeMilliseconds: pdt), sequence: sequence)
            }
        }
        let openingURL = peer.with(path: "/peer/\(channel)/opening")
        let opening = try await fetcher.get(openingURL, timeout: requestTimeout, limit: 4096)
        if opening.status == 200, let candidate = OpeningCandidate(peerAnswer: opening.body),
            abs(candidate.programDateTimeMilliseconds - held.programDateTimeMilliseconds) <= tolerance
        {
            return .held(candidate)
        }
        guard opening.status == 200 || opening.status == 404 else {
            throw PeerFetchError(.status, "\(openingURL): status \(opening.status)")
        }
        return covered ? .nothing : .notYet
    }

    /// What a peer's media playlist lists at an MSN.
    enum PeerListing {
        /// An entry with the same PDT: the playlist, the entry's position in it, and the playlist's URL.
        case listed(MediaPlaylist, position: Int, url: PeerURL)
        /// The peer has no media for the rendition (404).
        case noMedia
        /// Nothing any more: the MSN left the peer's window.
        case gone
        /// Nothing yet: the peer's newest entry is older.
        case notYet
        /// An entry with another PDT (the timelines disagree): counted and logged, not taken.
        case otherTimeline
    }

    /// The peer's media playlist of `rendition` and its URL; nil when the peer has no media for it (404). Throws on
    /// a failed request, another status, or a playlist that does not parse.
    private func mediaPlaylist(
        channel: String, rendition: String, from peer: PeerURL, timeout: Duration
    ) async throws -> (MediaPlaylist, PeerURL)? {
        let url = peer.with(path: "/live/\(channel)/\(rendition)/index.m3u8")
        let answer = try await fetcher.get(url, timeout: timeout, limit: 1 << 20)
        if answer.status == 404 { return nil }
        guard answer.status == 200 else { throw PeerFetchError(.status, "\(url): status \(answer.status)") }
        return (try MediaPlaylist.parse(String(decoding: answer.body, as: UTF8.self)), url)
    }

    /// Reads the peer's media playlist of `rendition` and finds the entry at `msn`. Throws on a failed request, a
    /// status other than 200 and 404, or a playlist that does not parse.
    private func listing(
        msn: UInt64, programDateTimeMilliseconds pdt: Int64, channel: String, rendition: String,
        from peer: PeerURL, timeout: Duration, peerIndex: Int
    ) async throws -> PeerListing {
        guard
            let (playlist, playlistURL) = try await mediaPlaylist(
                channel: channel, rendition: rendition, from: peer, timeout: timeout)
        else { return .noMedia }
        guard msn >= playlist.mediaSequence else { return .gone }
        guard msn - playlist.mediaSequence < UInt64(playlist.segments.count) else { return .notYet }
        let position = Int(msn - playlist.mediaSequence)
        guard playlist.segments[position].programDateTime?.millisecondsSince1970 == pdt else {
            state.withLock { $0.statistics[peerIndex].timelineMismatches += 1 }
            logger.warning(
                "peer lists the slot with another PDT: timelines disagree, not taken from it",
                metadata: [
                    "hls.channel": "\(channel)", "hls.rendition": "\(rendition)", "hls.msn": "\(msn)",
                    "peer": "\(peer)",
                ])
            return .otherTimeline
        }
        return .listed(playlist, position: position, url: playlistURL)
    }

    /// What a peer lists for a slot.
    enum PeerEntry {
        /// A segment on the same timeline: its bytes, file name and place.
        case segment([UInt8], fileName: String, placement: PeerPlacement)
        /// A GAP.
        case gap
        /// Nothing any more: the slot left the peer's window.
        case gone
        /// Nothing yet: the peer's newest entry is older.
        case notYet
        /// An entry with another PDT (the timelines disagree): not taken.
        case otherTimeline
    }

    /// What the peer lists for the slot, with the segment's bytes when it lists a segment on the same timeline.
    private func fetchSegment(
        _ slot: MissingSlot, channel: String, from peer: PeerURL, timeout: Duration, peerIndex: Int
    ) async throws -> PeerEntry {
        let listing = try await listing(
            msn: slot.msn, programDateTimeMilliseconds: slot.programDateTimeMilliseconds, channel: channel,
            rendition: slot.rendition, from: peer, timeout: timeout, peerIndex: peerIndex)
        let segment: MediaSegment
        let playlistURL: PeerURL
        switch listing {
        case .listed(let playlist, let position, let url): (segment, playlistURL) = (playlist.segments[position], url)
        case .noMedia:
            throw PeerFetchError(.status, "\(peer): no media for rendition '\(slot.rendition)' of channel '\(channel)' (404)")
        case .gone: return .gone
        case .notYet: return .notYet
        case .otherTimeline: return .otherTimeline
        }
        if segment.gap { return .gap }
        guard let segmentURL = playlistURL.resolving(segment.uri) else {
            throw PeerFetchError(.invalid, "\(playlistURL): segment URI '\(segment.uri)' is not on the peer")
        }
        let bytes = try await fetcher.get(
            segmentURL, timeout: timeout, limit: origin.configuration.ingest.maxSegmentBytes)
        guard bytes.status == 200 else { throw PeerFetchError(.status, "\(segmentURL): status \(bytes.status)") }
        // The peer's slate for an outage is no media of the encoder: the slot is missing there too, and closes as
        // the same slate here at its deadline.
        if bytes.isSlate { return .gap }
        let fileName = segmentURL.path.split(separator: "/").last.map(String.init) ?? "segment.ts"
        return .segment(
            bytes.body, fileName: fileName,
            placement: PeerPlacement(
                msn: slot.msn, programDateTimeMilliseconds: slot.programDateTimeMilliseconds,
                discontinuity: segment.discontinuity))
    }
}
