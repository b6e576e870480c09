/// The sub-states a `ChannelState` owns, each a group of fields that change together; the rules that change them
/// are the `ChannelState+*` extensions named in each comment.

/// The state journal's side of a channel (`ChannelState+Journal`, `+Restore`): what must be written before an MSN is
/// visible, and what an earlier run's journal said.
package struct JournalBook: Sendable {
    /// MSNs below this one are reserved in the journal; nil when the channel keeps no journal.
    package var msnReservedBelow: UInt64?
    /// Something the journal records changed since it was last written.
    package var dirty = false
    /// A slot was published since the journal was last written: the live edge's PDT end and discontinuity sequence
    /// moved, and the journal must record them before the slot is served (a restart after kill -9 must not let PDT
    /// go back or a discontinuity sequence repeat).
    package var behindEdge = false
    /// When the journal was last written (ms).
    package var lastWrite: Int64 = 0
    /// Journal records of an earlier run, applied to renditions as they are created.
    var restoredRenditions: [String: RenditionJournalRecord] = [:]
    /// PDT never goes below the end of what an earlier run published.
    var minimumProgramDateTime: Int64?
    /// Discontinuity sequence number of the newest published slot (the same in every rendition).
    var publishedDiscontinuityDomain: UInt64?
}

/// The durable segment store's side of a channel: whether it keeps one, and the records queued for it.
package struct StoreQueue: Sendable {
    /// The channel keeps a durable segment store: every entry and closed slot queues a `StoreRecord`.
    package var keepsRecords = false
    /// Store records queued since the last actions were returned.
    var pending: [StoreRecord] = []
}

/// The redundancy group's side of a channel (`ChannelState+CatchUp`, `+Agreement`).
struct PeerState: Sendable {
    /// After a restart: until when the slots missed while the origin was down wait for the peers to fill them
    /// (`ChannelState+CatchUp`); nil when the channel is not catching up.
    var catchUpUntilMilliseconds: Int64?
    /// The first slot of this run is to be agreed with the peers (`ChannelState+Agreement`).
    var joinsPeers = false
    /// The slot held until the group agrees where the feed it opens starts (`ChannelState+Agreement`).
    var openingHold: OpeningHold?
    /// The store records of the held opening's entries, queued again if the group moves them.
    var openingRecords: [(rendition: String, record: SegmentRecord)] = []
}

/// Low-Latency streamed pushes (`ChannelState+LowLatency`).
struct LowLatencyState: Sendable {
    /// Low-Latency: streamed pushes the ingest loop closed before their end (too long, stalled), and why; their
    /// later steps are refused with that reason.
    var closedTickets: [OpenSegmentTicket: IngestError.Reason] = [:]
    /// Low-Latency: something changed outside a step that returns actions (a refused part closed its segment);
    /// the next tick publishes it.
    var pendingPublish = false
}

/// The slot clock (`ChannelState.swift`, `+LowLatency`, `+Agreement`, `+Restore`): the open slots of the channel's
/// PDT timeline, how far they are closed, and where this run's MSNs start.
package struct SlotClock: Sendable {
    /// Slots from the newest closed one on.
    var slots: [UInt64: Slot] = [:]
    /// Every started rendition has an entry (segment or GAP) for every MSN up to this one.
    package internal(set) var closedThrough: UInt64?
    /// MSN of the first slot (above everything an earlier run of the origin published); with a shared timeline,
    /// moved up to the grid's MSN when the channel's first slot opens.
    var firstMSN: UInt64
    /// The lowest MSN this run may give its first slot (the journal's reservation of an earlier run).
    let reservedFirstMSN: UInt64

    init(firstMSN: UInt64) {
        self.firstMSN = firstMSN
        self.reservedFirstMSN = firstMSN
    }

    /// The MSN that closes next: the one after the newest closed slot, or the first slot.
    var nextToClose: UInt64 { closedThrough.map { $0 + 1 } ?? firstMSN }

    /// The MSN whose deadline comes next: the one after the newest closed slot; before any slot closed, the first
    /// slot once it opened (nil until then).
    var dueToClose: UInt64? { closedThrough != nil || slots[firstMSN] != nil ? nextToClose : nil }

    /// The lowest MSN a slot may still open at (never below `firstMSN`).
    var lowestOpen: UInt64 { max(nextToClose, firstMSN) }

    /// Slot `msn` is closed: it is the newest closed one, and the slots before it are dropped.
    mutating func close(_ msn: UInt64) {
        closedThrough = msn
        slots = slots.filter { $0.key >= msn }
    }
}
