/// What the origin must remember of a channel across restarts: enough that media sequence numbers never repeat,
/// discontinuity sequences never go back and PROGRAM-DATE-TIME stays monotonic.
public struct ChannelJournalRecord: Codable, Sendable, Hashable {
    /// Format version of the file.
    public var version: Int = 1
    public var channel: String
    /// No MSN above this one was ever published: the next run starts above it. The channel reserves MSNs in blocks
    /// and writes this before publishing an MSN beyond it, so a crash at any moment cannot lead to a reused MSN.
    public var msnReservedThrough: UInt64
    public var renditions: [String: RenditionJournalRecord]
    /// EXT-X-TARGETDURATION once fixed (it never changes, not even across restarts); nil in older journals.
    public var targetDuration: Int?
    /// When this record was written (ms since the epoch, shared clock).
    public var writtenAtMilliseconds: Int64
    /// The encoder's multivariant hint (validated, normalized), so a restart renders the same multivariant
    /// playlist; nil without one and in older journals.
    public var multivariantHint: MultivariantHint? = nil
}

/// Per-rendition part of the journal.
public struct RenditionJournalRecord: Codable, Sendable, Hashable {
    /// MSN of the newest entry.
    public var lastMSN: UInt64?
    /// EXT-X-DISCONTINUITY-SEQUENCE of the newest entry's discontinuity domain (head DSN + discontinuities listed).
    public var edgeDiscontinuitySequence: UInt64
    /// End of the newest entry on the PDT timeline, ms since the epoch.
    public var lastProgramDateTimeEndMilliseconds: Int64?
}
