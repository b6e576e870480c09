/// One sample of an fMP4 media segment, as its `traf` (tfhd, tfdt, trun, trex defaults) describes it.
public struct FragmentedMP4Sample: Sendable, Hashable {
    /// The track the sample belongs to.
    public var trackID: Int
    /// Decode time in the track's timescale: the traf's baseMediaDecodeTime plus the durations before it.
    public var decodeTime: Int64
    /// Duration in the track's timescale.
    public var duration: Int64
    /// Composition time offset (presentation time minus decode time) in the track's timescale.
    public var compositionOffset: Int64
    /// The sample flags in force (trun, tfhd or trex); nil when none is given.
    public var flags: UInt32?
    /// Whether the flags mark a sync sample (a keyframe).
    public var isSync: Bool
    /// Where the sample's bytes are in the segment; nil when the sizes or the data offset are unknown.
    public var byteRange: Range<Int>?

    /// A sample with these facts.
    public init(
        trackID: Int, decodeTime: Int64, duration: Int64, compositionOffset: Int64, flags: UInt32?, isSync: Bool,
        byteRange: Range<Int>?
    ) {
        self.trackID = trackID
        self.decodeTime = decodeTime
        self.duration = duration
        self.compositionOffset = compositionOffset
        self.flags = flags
        self.isSync = isSync
        self.byteRange = byteRange
    }
}

extension MediaProbe {
    /// Every sample of an fMP4 media segment in the order its movie fragments list them, with where its bytes are.
    /// - Parameters:
    ///   - bytes: the complete segment.
    ///   - initSection: the rendition's init section facts (track timescales, trex defaults).
    /// - Throws: `ProbeError` when the bytes are not an fMP4 media segment, are malformed, or list more than
    ///   100 000 samples in one track fragment.
    public static func fragmentedMP4Samples(
        _ bytes: UnsafeRawBufferPointer, initSection: InitSectionInfo
    ) throws(ProbeError) -> [FragmentedMP4Sample] {
        guard let container = detectContainer(bytes),
            container == .fragmentedMP4Segment || container == .fragmentedMP4Init
        else {
            throw ProbeError("not an fMP4 media segment")
        }
        var samples: [FragmentedMP4Sample]? = []
        _ = try FragmentedMP4SegmentProbe.probe(bytes, initSection: initSection, samples: &samples)
        return samples ?? []
    }

    /// `fragmentedMP4Samples(_:initSection:)` for an array.
    public static func fragmentedMP4Samples(
        _ bytes: [UInt8], initSection: InitSectionInfo
    ) throws(ProbeError) -> [FragmentedMP4Sample] {
        let result = bytes.withUnsafeBytes { buffer in
            Result { () throws(ProbeError) in try fragmentedMP4Samples(buffer, initSection: initSection) }
        }
        return try result.get()
    }
}
