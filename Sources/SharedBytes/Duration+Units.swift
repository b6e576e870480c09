/// A `Duration` in whole units, for the APIs that take an integer count (Dispatch deadlines, socket timeouts,
/// connect timeouts) and for elapsed-time figures: one conversion instead of one per call site.
extension Duration {
    /// Whole nanoseconds (truncated toward zero), saturating at `Int64`'s bounds.
    public var wholeNanoseconds: Int64 { Self.whole(components, per: 1_000_000_000) }

    /// Whole microseconds (truncated toward zero), saturating at `Int64`'s bounds.
    public var wholeMicroseconds: Int64 { Self.whole(components, per: 1_000_000) }

    /// Whole milliseconds (truncated toward zero), saturating at `Int64`'s bounds.
    public var wholeMilliseconds: Int64 { Self.whole(components, per: 1000) }

    /// Seconds as a `Double` (for `Date` and log lines).
    public var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    private static func whole(_ components: (seconds: Int64, attoseconds: Int64), per second: Int64) -> Int64 {
        // seconds and attoseconds carry the same sign, so the sum truncates toward zero.
        let (product, overflow) = components.seconds.multipliedReportingOverflow(by: second)
        let (sum, sumOverflow) = product.addingReportingOverflow(
            components.attoseconds / (1_000_000_000_000_000_000 / second))
        guard !overflow, !sumOverflow else { return components.seconds < 0 ? .min : .max }
        return sum
    }
}
