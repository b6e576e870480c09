/// Per-track defaults for movie fragments from the init section's `mvex/trex` box (ISO/IEC 14496-12 8.8.3).
public struct TrackFragmentDefaults: Sendable, Hashable {
    public var sampleDuration: UInt32
    public var sampleSize: UInt32
    public var sampleFlags: UInt32

    public init(sampleDuration: UInt32, sampleSize: UInt32, sampleFlags: UInt32) {
        self.sampleDuration = sampleDuration
        self.sampleSize = sampleSize
        self.sampleFlags = sampleFlags
    }
}
