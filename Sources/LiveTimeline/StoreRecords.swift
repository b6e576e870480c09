public import MediaProbe
public import SharedBytes

/// Where a segment's bytes are in the durable store: a range of one chunk file of its rendition, and the CRC-32 of
/// those bytes.
public struct StoredSegment: Sendable, Hashable {
    /// Chunk file number (`data/{chunk}.{ext}` of the rendition).
    public var chunk: UInt32
    /// Byte offset of the segment in the chunk.
    public var offset: UInt64
    /// Length of the segment in bytes.
    public var length: UInt32
    /// CRC-32 (zlib) of the segment's bytes.
    public var crc: UInt32

    public init(chunk: UInt32, offset: UInt64, length: UInt32, crc: UInt32) {
        self.chunk = chunk
        self.offset = offset
        self.length = length
        self.crc = crc
    }
}

/// One MSN of one rendition as the store records it: written exactly once, when the segment is accepted (held in
/// its open slot) or when its slot closes as a GAP.
public struct SegmentRecord: Sendable, Hashable {
    /// What fills the MSN.
    public enum Kind: UInt8, Sendable {
        /// A segment whose bytes are in the store at `location`.
        case segment = 1
        /// An EXT-X-GAP entry.
        case gap = 2
        /// A segment that was served from memory only (the store could not take its bytes): restored as a GAP.
        case unpersisted = 3
        /// An empty cue segment the origin generated for a subtitle rendition (no chunk bytes): `location.offset`
        /// holds the MPEGTS of its `X-TIMESTAMP-MAP`, `length` and `crc` those of its text, regenerated on load by
        /// `WebVTTSegment.empty(mpegts:)`.
        case synthesized = 4
    }

    public var kind: Kind
    public var msn: UInt64
    /// EXT-X-PROGRAM-DATE-TIME of the entry (its slot's), ms since the epoch.
    public var programDateTimeMilliseconds: Int64
    /// EXTINF in milliseconds.
    public var durationMilliseconds: Int64
    /// The entry itself starts a discontinuity (its slot may add one for every rendition: see `SlotRecord`).
    public var discontinuity: Bool
    /// The segment starts with a random access point.
    public var startsWithKeyframe: Bool
    /// Container of the entry (GAPs carry the rendition's, for the URL's extension).
    public var container: MediaContainer
    /// Where the bytes are; nil for GAP and unpersisted entries.
    public var location: StoredSegment?
    /// fMP4 initialization section version the entry needs.
    public var initSectionVersion: Int?
    /// End of the segment on the encoder's media timeline (unwrapped ticks at `mediaTimescale`); nil for GAPs.
    public var mediaEndTicks: Int64?
    /// Timescale of `mediaEndTicks` (90 kHz for MPEG-TS).
    public var mediaTimescale: Int64

    public init(
        kind: Kind, msn: UInt64, programDateTimeMilliseconds: Int64, durationMilliseconds: Int64,
        discontinuity: Bool, startsWithKeyframe: Bool, container: MediaContainer, location: StoredSegment?,
        initSectionVersion: Int?, mediaEndTicks: Int64?, mediaTimescale: Int64
    ) {
        self.kind = kind
        self.msn = msn
        self.programDateTimeMilliseconds = programDateTimeMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.discontinuity = discontinuity
        self.startsWithKeyframe = startsWithKeyframe
        self.container = container
        self.location = location
        self.initSectionVersion = initSectionVersion
        self.mediaEndTicks = mediaEndTicks
        self.mediaTimescale = mediaTimescale
    }

    /// End of the entry on the PDT timeline.
    public var endMilliseconds: Int64 { programDateTimeMilliseconds + durationMilliseconds }

    /// The entry lists bytes (pushed, or generated for `.synthesized`), not a GAP.
    public var hasBytes: Bool { kind == .segment || kind == .synthesized }
}

/// One closed slot of a channel (the same MSN in every rendition), written when the slot is published: what a
/// restart needs to list the MSN exactly as before.
public struct SlotRecord: Sendable, Hashable {
    public var msn: UInt64
    /// PDT of the slot, ms since the epoch.
    public var programDateTimeMilliseconds: Int64
    /// Length of the slot in ms.
    public var durationMilliseconds: Int64
    /// Discontinuity sequence number of the slot's domain (the same in every rendition).
    public var discontinuitySequence: UInt64
    /// Every rendition lists EXT-X-DISCONTINUITY before this MSN.
    public var discontinuity: Bool

    /// End of the slot on the PDT timeline.
    public var endMilliseconds: Int64 { programDateTimeMilliseconds + durationMilliseconds }

    public init(
        msn: UInt64, programDateTimeMilliseconds: Int64, durationMilliseconds: Int64, discontinuitySequence: UInt64,
        discontinuity: Bool
    ) {
        self.msn = msn
        self.programDateTimeMilliseconds = programDateTimeMilliseconds
        self.durationMilliseconds = durationMilliseconds
        self.discontinuitySequence = discontinuitySequence
        self.discontinuity = discontinuity
    }
}

/// A record the ingest loop asks its owner to make durable before it answers or publishes.
public enum StoreRecord: Sendable, Hashable {
    case segment(rendition: String, SegmentRecord)
    case slot(SlotRecord)
}

/// What the store hands back at start for one channel: the newest closed slots and each rendition's records from
/// the oldest of those slots on (including records above the newest closed slot: entries that were held).
public struct StoredChannel: Sendable {
    /// Closed slots, ascending and consecutive, ending with the newest closed slot; empty if none was closed.
    public var slots: [SlotRecord]
    /// Renditions in the order they were created.
    public var renditions: [StoredRendition]

    public init(slots: [SlotRecord], renditions: [StoredRendition]) {
        self.slots = slots
        self.renditions = renditions
    }
}

/// One rendition's part of a `StoredChannel`.
public struct StoredRendition: Sendable {
    public var name: String
    /// Records by MSN, from the first of `StoredChannel.slots` on, ascending.
    public var records: [SegmentRecord]
    /// The verified bytes of each `.segment` record; a segment record without bytes here is corrupt or missing on
    /// disk and is restored as a GAP.
    public var bytes: [UInt64: SharedBytes]
    /// fMP4 initialization sections by version.
    public var initSections: [Int: SharedBytes]
    /// When `records` start with GAP entries: the newest real segment before them (read from further back in the
    /// store), which their fillers continue. nil if there is none or it is not needed.
    public var segmentBeforeRecords: (record: SegmentRecord, bytes: SharedBytes)?

    public init(name: String, records: [SegmentRecord], bytes: [UInt64: SharedBytes], initSections: [Int: SharedBytes])
    {
        self.name = name
        self.records = records
        self.bytes = bytes
        self.initSections = initSections
    }
}
