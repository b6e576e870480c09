import CivilCalendar
import MediaProbe

/// How the origins of a redundancy group number and time their slots so that, fed the same segments, they publish the
/// same MSN and PDT for the same segment, whichever started first and when one starts late (docs/redundancy.md).
///
/// A lone origin anchors a feed on the moment its first segment arrived and numbers from its own counter: two origins
/// fed by one encoder then differ by their arrival jitter (a millisecond on loopback) and by when each started. An
/// origin of a group derives both from what every origin sees the same way:
/// - the **anchor** of a feed (the wall time of media time 0) is the arrival time less the segment's media start,
///   rounded down to a grid of `toleranceMilliseconds`: origins whose clocks agree, and that receive a segment,
///   within much less than the grid compute the same anchor (they differ only when the unrounded value falls within
///   that skew of a grid line);
/// - the **PDT** of the slot that opens a feed (a channel's first segment, a return from an outage, an encoder
///   restart) is the anchor plus the segment's media start; every later slot follows the one before it;
/// - the channel's **first MSN** is the PDT's place on a grid of the nominal segment duration counted from
///   2000-01-01T00:00:00Z, so an origin that starts minutes late gives the same segment the same MSN.
public struct SharedTimeline: Sendable, Hashable {
    /// Anchors are rounded down to this (ms). Clocks of the group (NTP) and arrival of a segment at each origin must
    /// agree within a small fraction of it. Default: 500.
    public var toleranceMilliseconds: Int64
    /// After a restart, how long the slots missed while the origin was down wait for its peers to fill them before
    /// they close as GAPs (`ChannelState+CatchUp`). 0 (no peers): they close at once.
    public var catchUpMilliseconds: Int64

    public init(toleranceMilliseconds: Int64 = 500, catchUpMilliseconds: Int64 = 0) {
        self.toleranceMilliseconds = max(toleranceMilliseconds, 1)
        self.catchUpMilliseconds = max(catchUpMilliseconds, 0)
    }

    /// 2000-01-01T00:00:00Z in ms since 1970: MSN 0 of the grid.
    static let gridOriginMilliseconds: Int64 = 946_684_800_000

    /// The PDT of a slot that opens a feed with a segment whose media starts at `mediaStart`, arrived (its start) at
    /// `arrivalMilliseconds` on the shared clock.
    func openingProgramDateTime(arrivalMilliseconds arrival: Int64, mediaStart: MediaTime) -> Int64 {
        // A media start read from a stream may be any 64-bit time (2^62 ticks of 1/1 s): the arithmetic wraps, so
        // every origin still computes the same anchor, and the PDT stays within the tolerance of the arrival.
        let media = Self.milliseconds(mediaStart)
        let anchor = CivilCalendar.floorDivide(arrival &- media, toleranceMilliseconds) &* toleranceMilliseconds
        return anchor &+ media
    }

    /// The MSN of a channel's first slot: its PDT on the grid of `segmentDurationMilliseconds` (nearest).
    func firstMSN(programDateTimeMilliseconds pdt: Int64, segmentDurationMilliseconds duration: Int64) -> UInt64 {
        let length = max(duration, 1)
        let offset = pdt - Self.gridOriginMilliseconds
        guard offset > 0 else { return 0 }
        return UInt64((offset + length / 2) / length)
    }

    /// A media time in whole milliseconds (rounded down), without overflow for any 64-bit decode time.
    static func milliseconds(_ time: MediaTime) -> Int64 {
        let timescale = max(time.timescale, 1)
        let seconds = CivilCalendar.floorDivide(time.ticks, timescale)
        let rest = time.ticks - seconds * timescale
        return seconds.multipliedReportingOverflow(by: 1000).partialValue &+ rest * 1000 / timescale
    }
}
