/// Makes the filler of one rendition's gaps from the newest real segment before them.
///
/// The origin asks once per outage (at the first GAP entry after a real segment) and keeps the filler for the
/// GAP entries that follow, so consecutive filler segments continue each other.
public protocol GapFillerSource: Sendable {
    /// A filler continuing after `lastSegment`.
    /// - Parameter lastSegment: the rendition's newest real segment (MPEG-TS).
    /// - Throws: `GapFillerError` when the media cannot be continued (not MPEG-TS, unsupported codec, no keyframe).
    func makeFiller(after lastSegment: UnsafeRawBufferPointer) throws(GapFillerError) -> TransportStreamGapFiller
}

/// The filler of pushed renditions: the last IDR of the newest segment, repeated, and silence.
public struct KeyframeGapFillerSource: GapFillerSource {
    /// The source; it has no settings.
    public init() {}

    public func makeFiller(
        after lastSegment: UnsafeRawBufferPointer
    ) throws(GapFillerError) -> TransportStreamGapFiller {
        try TransportStreamGapFiller(after: lastSegment, picture: .lastKeyframe)
    }
}

/// The filler of a built-in test source rendition: its slate (a still picture coded like the stream) and silence.
public struct SlateGapFillerSource: GapFillerSource {
    /// The slate's access units in decoding order, the first an IDR with SPS and PPS.
    public let accessUnits: [[UInt8]]
    /// One slate frame lasts this many 90 kHz ticks.
    public let frameDurationTicks: Int64

    /// A source looping `accessUnits`, one per `frameDurationTicks`.
    public init(accessUnits: [[UInt8]], frameDurationTicks: Int64) {
        self.accessUnits = accessUnits
        self.frameDurationTicks = frameDurationTicks
    }

    public func makeFiller(
        after lastSegment: UnsafeRawBufferPointer
    ) throws(GapFillerError) -> TransportStreamGapFiller {
        try TransportStreamGapFiller(
            after: lastSegment, picture: .loop(accessUnits: accessUnits, frameDurationTicks: frameDurationTicks))
    }
}
