/// A place where a segment is cut into Low-Latency HLS parts: the start of an access unit (MPEG-TS) or of a
/// fragment (fMP4), with the program tables or `styp` that belong to it.
public struct CutPoint: Sendable, Hashable {
    /// Byte offset of the cut from the start of the segment's body.
    public var offset: Int
    /// Decode time of the first access unit after the cut, in the cutter's `timescale`, as carried by the stream
    /// (33-bit PTS/DTS for MPEG-TS, not unwrapped; `tfdt` for fMP4).
    public var decodeTime: Int64
    /// The part that starts here starts with a random access point (EXT-X-PART INDEPENDENT=YES).
    public var independent: Bool

    public init(offset: Int, decodeTime: Int64, independent: Bool) {
        self.offset = offset
        self.decodeTime = decodeTime
        self.independent = independent
    }
}

/// Cuts a segment's body into parts of about a target duration while the body arrives, in any split.
///
/// A cutter keeps its state between calls and allocates nothing per packet. The first cut is always at offset 0.
/// Feeding the body in any split gives the same cuts as feeding it whole.
public protocol SegmentCutter: Sendable {
    /// Ticks per second of `CutPoint.decodeTime`.
    var timescale: Int64 { get }
    /// Bytes before this offset can no longer move into a later part (a cut can move back over program tables
    /// that precede an access unit, so the newest bytes may still belong to the next part).
    var settledOffset: Int { get }
    /// Feeds the next bytes of the body; returns the cut points that became certain, in order.
    mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> [CutPoint]
}

/// Cuts MPEG-TS at the start of video access units (audio for audio-only streams), moving the cut back over the
/// PAT/PMT/SDT packets directly before it.
public struct TransportStreamCutter: SegmentCutter {
    public var timescale: Int64 { 90_000 }
    public var settledOffset: Int { fatalError("contract: built by the cutting step") }

    /// - Parameter partTarget: the channel's PART-TARGET; no part (but the last) is longer.
    public init(partTarget: MediaTime) {}

    public mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> [CutPoint] {
        fatalError("contract: built by the cutting step")
    }
}

/// Cuts fMP4 at `moof` boxes (with any `styp`/`prft`/`emsg` before them), grouping fragments shorter than the
/// target.
public struct FragmentCutter: SegmentCutter {
    public var timescale: Int64 { fatalError("contract: built by the cutting step") }
    public var settledOffset: Int { fatalError("contract: built by the cutting step") }

    /// - Parameters:
    ///   - initSection: the rendition's initialization section (track timescales and sample defaults).
    ///   - partTarget: the channel's PART-TARGET.
    public init(initSection: InitSectionInfo, partTarget: MediaTime) {}

    public mutating func consume(_ bytes: UnsafeRawBufferPointer) throws(ProbeError) -> [CutPoint] {
        fatalError("contract: built by the cutting step")
    }
}
