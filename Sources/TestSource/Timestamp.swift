/// 90 kHz MPEG timestamps: 33 bits on the wire.
enum Timestamp {
    /// Ticks per second.
    static let clockRate: Int64 = 90_000
    /// 2^33 - 1: PTS, DTS and the PCR base wrap at 2^33.
    static let mask: UInt64 = (1 << 33) - 1

    /// A timestamp as written: `value` modulo 2^33, in 0 ..< 2^33.
    static func wrapped(_ value: Int64) -> Int64 {
        Int64(UInt64(bitPattern: value) & mask)
    }
}
