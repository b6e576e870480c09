package import MediaProbe
public import SharedBytes

/// A part of a Low-Latency rendition: MSN and index within its segment (EXT-X-PART URI `{msn}.{part}.{ext}`).
public struct PartPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var msn: UInt64
    public var part: Int

    public init(msn: UInt64, part: Int) {
        self.msn = msn
        self.part = part
    }

    public static func < (lhs: PartPosition, rhs: PartPosition) -> Bool {
        (lhs.msn, lhs.part) < (rhs.msn, rhs.part)
    }

    public var description: String { "\(msn).\(part)" }
}

/// One listed (or retained) part of a segment.
public struct PartEntry: Sendable {
    /// What the part's URL answers.
    public enum Content: Sendable {
        /// The part's bytes: a byte range of its segment, exactly.
        case bytes(SharedBytes)
        /// EXT-X-PART GAP=YES (the feed was missing): the URL answers 404.
        case gap
    }
    /// Index within the segment, from 0.
    public let index: Int
    /// EXT-X-PART DURATION in milliseconds.
    public let durationMilliseconds: Int64
    /// INDEPENDENT=YES: starts with a random access point.
    public let independent: Bool
    public let content: Content

    public init(index: Int, durationMilliseconds: Int64, independent: Bool, content: Content) {
        self.index = index
        self.durationMilliseconds = durationMilliseconds
        self.independent = independent
        self.content = content
    }

    /// The part's bytes; nil for a GAP part.
    public var bytes: SharedBytes? {
        if case .bytes(let bytes) = content { bytes } else { nil }
    }
}

/// A part as cut from a streamed push (`PartAssembler`), before the ingest loop lists it.
package struct CutPart: Sendable {
    /// Index within the segment, from 0.
    package let index: Int
    /// The part's bytes.
    package let bytes: SharedBytes
    /// Decode time of its first access unit as carried by the stream (see `CutPoint.decodeTime`).
    package let decodeTime: MediaTime
    /// Its duration in `decodeTime.timescale` ticks (the last part's from the segment's probed duration).
    package let durationTicks: Int64
    /// Starts with a random access point.
    package let independent: Bool

    package init(index: Int, bytes: SharedBytes, decodeTime: MediaTime, durationTicks: Int64, independent: Bool) {
        self.index = index
        self.bytes = bytes
        self.decodeTime = decodeTime
        self.durationTicks = durationTicks
        self.independent = independent
    }
}

/// What a streamed push's next bytes produced, in order (`PartAssembler.receive`).
package enum PartEvent: Sendable {
    /// Bytes of the part being received (settled: they stay in this part), for a preload-hinted request.
    case bytes(part: Int, SharedBytes)
    /// A part is complete.
    case completed(CutPart)
}

/// A streamed segment between its first part and its end: the MSN its slot gave it (`ChannelState.openSegment`).
package struct OpenSegmentTicket: Sendable, Hashable {
    package let rendition: String
    package let msn: UInt64

    package init(rendition: String, msn: UInt64) {
        self.rendition = rendition
        self.msn = msn
    }
}

/// What a Low-Latency rendition publishes besides its playlist (`RenditionSnapshot.lowLatency`).
public struct LowLatencySnapshot: Sendable {
    /// PART-TARGET in milliseconds.
    public let partTargetMilliseconds: Int64
    /// Parts by MSN: of the segments listed with parts, of the segment in progress, and of segments whose parts
    /// left the playlist less than 3 target durations ago (their URLs still answer).
    public let parts: [UInt64: [PartEntry]]
    /// The last listed part (a closed segment with no segment in progress: that segment's last part); nil before
    /// any part.
    public let lastPart: PartPosition?
    /// The part EXT-X-PRELOAD-HINT names; nil while none is hinted (GAP parts are being written).
    public let preloadHint: PartPosition?
    /// Delta updates (`_HLS_skip=YES` and `v2`) of this playlist; nil when it offers none (window too short).
    public let skipPlaylist: SharedBytes?
    public let skipPlaylistV2: SharedBytes?
    /// The most parts one segment can have (`_HLS_part` above it is refused).
    public let maximumPartsPerSegment: Int

    public init(
        partTargetMilliseconds: Int64, parts: [UInt64: [PartEntry]], lastPart: PartPosition?,
        preloadHint: PartPosition?, skipPlaylist: SharedBytes?, skipPlaylistV2: SharedBytes?,
        maximumPartsPerSegment: Int
    ) {
        self.partTargetMilliseconds = partTargetMilliseconds
        self.parts = parts
        self.lastPart = lastPart
        self.preloadHint = preloadHint
        self.skipPlaylist = skipPlaylist
        self.skipPlaylistV2 = skipPlaylistV2
        self.maximumPartsPerSegment = maximumPartsPerSegment
    }

    /// The part at `position`, while its URL answers.
    public func part(_ position: PartPosition) -> PartEntry? {
        guard let parts = parts[position.msn], position.part >= 0, position.part < parts.count else { return nil }
        return parts[position.part]
    }
}
