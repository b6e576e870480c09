/// 33-bit MPEG-2 timestamps (PTS, DTS and the PCR base) in 90 kHz ticks: the arithmetic shared by everything that
/// reads or writes them (the probes, the test source, the gap filler).
///
/// On the wire a timestamp is its value modulo 2^33 and wraps about every 26.5 hours; ``unwrap(_:near:)`` puts a
/// timestamp read from the wire back on a continuous line next to one known before it.
public enum MPEGTimestamp {
    /// Ticks per second.
    public static let clockRate: Int64 = 90_000
    /// 2^33: where timestamps wrap.
    public static let modulus: Int64 = 1 << 33
    /// 2^33 - 1: the bits a timestamp keeps on the wire.
    public static let mask: UInt64 = (1 << 33) - 1

    /// `value` as written on the wire: modulo 2^33, in 0 ..< 2^33 (a negative value wraps from the top).
    public static func wrapped(_ value: Int64) -> Int64 {
        Int64(UInt64(bitPattern: value) & mask)
    }

    /// Undoes the wrap: the value congruent to `timestamp` modulo 2^33 that lies nearest `reference`, so timestamps
    /// read across a wrap stay ordered.
    ///
    /// The result is within 2^32 ticks (about 13 h 15 min) of `reference`: a timestamp just past the wrap comes out
    /// above 2^33 when the reference is just below it (forward), one just below the wrap comes out negative when the
    /// reference is just above 0 (backward). Exactly half-way, the later of the two: `reference + 2^32`.
    /// - Parameters:
    ///   - timestamp: a timestamp as written; only its value modulo 2^33 counts.
    ///   - reference: an unwrapped timestamp nearby, e.g. a segment's first PTS or the end of the segment before.
    /// - Returns: the unwrapped timestamp.
    public static func unwrap(_ timestamp: Int64, near reference: Int64) -> Int64 {
        let offset = wrapped(timestamp &- reference)
        return reference + (offset > modulus / 2 ? offset - modulus : offset)
    }
}
