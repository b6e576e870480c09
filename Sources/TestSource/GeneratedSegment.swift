/// One MPEG-TS segment produced by a ``TestStreamGenerator``.
public struct GeneratedSegment: Sendable, Hashable {
    /// The segment's bytes: whole 188-byte transport packets, PAT and PMT first, then an IDR access unit.
    public let bytes: [UInt8]
    /// PTS of the segment's first video frame, in 90 kHz ticks, as written (modulo 2^33). The first audio frame
    /// has the same PTS at the start of a timeline, and otherwise the first audio PTS at or after it.
    public let startPTS: Int64
    /// Duration in 90 kHz ticks: the segment duration in seconds × 90 000.
    public let durationTicks: Int64
    /// Position of the segment in the generator's output, from 0; keeps counting across timestamp restarts.
    public let sequence: Int
    /// `true` when this segment starts a new timeline: the generator's first segment, and the first after
    /// ``TestStreamGenerator/restartTimestamps(startPTS:)``. After a restart, the first packet of every PID in this
    /// segment carries the discontinuity indicator (continuity counters and the time base start over).
    public let startsTimeline: Bool

    /// Duration in seconds.
    public var duration: Double { Double(durationTicks) / 90_000 }
}
