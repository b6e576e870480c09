/// An EXT-X-PROGRAM-DATE-TIME / DATERANGE date: milliseconds since 1970-01-01T00:00:00Z.
///
/// Rendered as `YYYY-MM-DDThh:mm:ss.sssZ` (RFC 8216 section 4.3.2.6, always UTC, always milliseconds).
public struct ProgramDateTime: Sendable, Hashable, Comparable, Codable {
    /// Milliseconds since the Unix epoch, UTC.
    public var millisecondsSince1970: Int64

    /// Creates a date from milliseconds since the Unix epoch.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.millisecondsSince1970 < rhs.millisecondsSince1970 }

    /// The date `milliseconds` later.
    public func adding(milliseconds: Int64) -> ProgramDateTime {
        ProgramDateTime(millisecondsSince1970: millisecondsSince1970 + milliseconds)
    }
}
