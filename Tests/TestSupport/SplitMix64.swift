/// SplitMix64 (Steele, Lea and Flood, 2014): a small seeded generator, so a test's random choices repeat from its
/// seed.
public struct SplitMix64: RandomNumberGenerator {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }

    /// A number in `0..<bound`, by remainder (the slight bias does not matter to a test).
    public mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
