/// Agreeing with the redundancy group where a feed opens (docs/redundancy.md, "Openings agreed with the peers").
///
/// On a shared timeline the PDT of a slot that opens a feed (the channel's first slot of a run, a return from an
/// outage, an encoder restart) is the feed's anchor, rounded down to the `clockTolerance` grid, plus the segment's
/// media start (`SharedTimeline`). Origins whose clocks and arrivals differ by a few milliseconds compute the same
/// anchor unless its unrounded value falls within that skew of a grid line: then their PDTs differ by one grid step
/// (and a first slot's MSN, taken from the PDT, may differ by one). So on a channel its peers can repair, such a slot
/// is held (nothing of it is listed) until the group has agreed on it (`PeerRepairer`):
/// - a peer lists a segment within the tolerance of the slot's PDT: the slot takes that entry's PDT (and, for the
///   first slot, its MSN and discontinuity sequence): what a peer published is final;
/// - a peer holds its own opening within the tolerance: every origin takes the same of the two, the one with the
///   higher MSN, else the earlier PDT (`OpeningCandidate.preferred`);
/// - every peer has no media for the rendition (or cannot be reached): the slot keeps its own.
/// The hold ends on its own after `SharedTimeline.catchUpMilliseconds`. Low-Latency channels list parts before a slot
/// closes, so they do not hold.
extension ChannelState {
    /// Held openings are agreed with the group: a shared timeline and peers to ask, no parts.
    var agreesOpenings: Bool { configuration.lowLatency == nil && peerWaitMilliseconds != nil }

    /// Starts the wait of the first slot of this run on a new state (a restored channel has published slots).
    mutating func startJoin() {
        peers.joinsPeers = agreesOpenings && slotClock.closedThrough == nil
    }

    /// Holds the slot `msn` just opened with PDT `programDateTime`, if it opens a feed the group must agree on: the
    /// first slot of the run, or a slot whose PDT is this origin's anchor (`anchored`). One hold at a time.
    mutating func holdOpeningIfNeeded(msn: UInt64, programDateTime: Int64, anchored: Int64, nowMilliseconds now: Int64)
    {
        guard agreesOpenings, peers.openingHold == nil else { return }
        let first = slotClock.closedThrough == nil
        guard first ? peers.joinsPeers : programDateTime == anchored else { return }
        peers.openingHold = OpeningHold(msn: msn, sinceMilliseconds: now, first: first)
    }

    /// True while slot `msn` is held for the group; ends the hold once its time is up.
    mutating func holdsOpening(msn: UInt64, nowMilliseconds now: Int64) -> Bool {
        guard let hold = peers.openingHold, hold.msn == msn else { return false }
        if let wait = peerWaitMilliseconds, now < hold.sinceMilliseconds + wait { return true }
        endHold()
        return false
    }

    private mutating func endHold() {
        if peers.openingHold?.first == true { peers.joinsPeers = false }
        peers.openingHold = nil
        peers.openingRecords.removeAll()
    }

    /// The held opening: its MSN, PDT, a media rendition that filled it (whose playlist the peers are asked for);
    /// nil when none is held.
    package var heldOpening: HeldOpening? {
        guard let hold = peers.openingHold, let slot = slotClock.slots[hold.msn],
            let rendition = renditions.first(where: { !$0.isFollower && $0.hasEntry(msn: hold.msn) })
        else { return nil }
        return HeldOpening(
            rendition: rendition.name, msn: hold.msn, programDateTimeMilliseconds: slot.programDateTimeMilliseconds,
            first: hold.first)
    }

    /// Ends the hold of slot `msn` as the group agreed: with `agreed`, the slot (and the open slots after it) take its
    /// PDT, and a first slot its MSN; with `peerSequence`, a first slot's discontinuity sequence number as a peer
    /// lists it. An agreement further than the clock tolerance from the slot, or one that would move a slot other
    /// than the first (or below the MSNs this channel reserved), is not taken. Publishes what is ready; nil when
    /// nothing was held (or `msn` is another slot).
    package mutating func settleOpening(
        msn: UInt64, agreed: OpeningCandidate?, peerSequence: UInt64?, nowMilliseconds now: Int64
    ) -> IngestActions? {
        guard let hold = peers.openingHold, hold.msn == msn, let slot = slotClock.slots[msn] else { return nil }
        var settled = msn
        if let agreed, agreed.msn != msn || agreed.programDateTimeMilliseconds != slot.programDateTimeMilliseconds {
            let tolerance = configuration.sharedTimeline?.toleranceMilliseconds ?? 0
            let moves = agreed.msn != msn
            if abs(agreed.programDateTimeMilliseconds - slot.programDateTimeMilliseconds) <= tolerance,
                !moves || (hold.first && agreed.msn >= slotClock.reservedFirstMSN)
            {
                moveOpenSlots(
                    from: msn, to: agreed.msn,
                    byMilliseconds: agreed.programDateTimeMilliseconds - slot.programDateTimeMilliseconds)
                settled = agreed.msn
            }
        }
        if hold.first, let peerSequence {
            let own =
                journal.publishedDiscontinuityDomain ?? renditions.map(\.window.edgeDiscontinuitySequence).max() ?? 0
            let discontinuity = renditions.contains { $0.held.first?.msn == settled && $0.held.first!.discontinuity }
            // `publishSlot` adds the slot's own discontinuity to the domain before it.
            let before = peerSequence - (discontinuity && peerSequence > 0 ? 1 : 0)
            journal.publishedDiscontinuityDomain = max(own, before)
        }
        endHold()
        journal.dirty = true
        _ = closeDueSlots(nowMilliseconds: now)
        return actions(publish: true, nowMilliseconds: now)
    }

    /// Moves the open slots from `msn` on (and every entry held for them) to start at `target`, `shift` ms later,
    /// and queues their store records again at their new place.
    private mutating func moveOpenSlots(from msn: UInt64, to target: UInt64, byMilliseconds shift: Int64) {
        func moved(_ value: UInt64) -> UInt64 { value >= msn ? value - msn + target : value }
        var movedSlots: [UInt64: Slot] = [:]
        for (key, slot) in slotClock.slots {
            var slot = slot
            if key >= msn { slot.programDateTimeMilliseconds += shift }
            movedSlots[moved(key)] = slot
        }
        slotClock.slots = movedSlots
        if slotClock.closedThrough == nil { slotClock.firstMSN = moved(slotClock.firstMSN) }
        for position in renditions.indices {
            var rendition = renditions[position]
            rendition.held = rendition.held.map { entry in
                entry.msn >= msn
                    ? entry.moved(
                        msn: moved(entry.msn), programDateTimeMilliseconds: entry.programDateTimeMilliseconds + shift)
                    : entry
            }
            rendition.heldRecords = Dictionary(
                uniqueKeysWithValues: rendition.heldRecords.map { key, record in
                    var record = record
                    record.msn = moved(key)
                    return (moved(key), record)
                })
            rendition.displacedMSNs = Set(rendition.displacedMSNs.map(moved))
            rendition.recentSequenceNumbers = rendition.recentSequenceNumbers.map { ($0.number, moved($0.msn)) }
            renditions[position] = rendition
        }
        // The store holds the entries' records at their old MSNs: write them again where they are now. A place
        // vacated above the new ones (the slots moved down) is overwritten by the next segment of its rendition.
        for (rendition, record) in peers.openingRecords {
            var record = record
            guard record.msn >= msn else { continue }
            record.msn = moved(record.msn)
            record.programDateTimeMilliseconds += shift
            store.pending.append(.segment(rendition: rendition, record))
        }
    }
}

/// The slot held for the group's agreement (`ChannelState+Agreement`).
struct OpeningHold: Sendable, Hashable {
    var msn: UInt64
    var sinceMilliseconds: Int64
    /// The channel's first slot of this run: its MSN comes from its PDT, and it takes a peer's discontinuity sequence.
    var first: Bool
}

/// A slot held until the redundancy group agrees where the feed it opens starts (`ChannelState+Agreement`).
public struct HeldOpening: Sendable, Hashable {
    /// A media rendition that filled it: the peers are asked for its playlist.
    public let rendition: String
    public let msn: UInt64
    /// The slot's PDT as this origin's anchor gives it.
    public let programDateTimeMilliseconds: Int64
    /// The channel's first slot of this run (its MSN may move; it takes a peer's discontinuity sequence).
    public let first: Bool

    public init(rendition: String, msn: UInt64, programDateTimeMilliseconds: Int64, first: Bool) {
        self.rendition = rendition
        self.msn = msn
        self.programDateTimeMilliseconds = programDateTimeMilliseconds
        self.first = first
    }

    /// This origin's own candidate.
    public var candidate: OpeningCandidate {
        OpeningCandidate(msn: msn, programDateTimeMilliseconds: programDateTimeMilliseconds)
    }
}

/// Where an origin of the group would open a feed: an MSN and its PDT.
public struct OpeningCandidate: Sendable, Hashable, Codable {
    public let msn: UInt64
    public let programDateTimeMilliseconds: Int64

    public init(msn: UInt64, programDateTimeMilliseconds: Int64) {
        self.msn = msn
        self.programDateTimeMilliseconds = programDateTimeMilliseconds
    }

    /// The candidate every origin of the group takes of two held ones: the higher MSN (a first slot never moves
    /// down, so no store record is left above the moved ones), else the earlier PDT. The same whichever origin asks.
    public static func preferred(_ a: OpeningCandidate, _ b: OpeningCandidate) -> OpeningCandidate {
        if a.msn != b.msn { return a.msn > b.msn ? a : b }
        return a.programDateTimeMilliseconds <= b.programDateTimeMilliseconds ? a : b
    }
}
