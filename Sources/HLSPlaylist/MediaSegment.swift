/// A byte range of a resource (EXT-X-BYTERANGE / BYTERANGE attribute).
public struct ByteRange: Sendable, Hashable {
    public var length: Int
    public var offset: Int?
    public init(length: Int, offset: Int? = nil) {
        self.length = length
        self.offset = offset
    }
}

/// An EXT-X-MAP: the initialization section of fMP4 segments.
public struct MediaInitializationSection: Sendable, Hashable {
    public var uri: String
    public var byteRange: ByteRange?
    public init(uri: String, byteRange: ByteRange? = nil) {
        self.uri = uri
        self.byteRange = byteRange
    }
}

/// How media segments (EXT-X-KEY) or a whole presentation (EXT-X-SESSION-KEY) are encrypted.
public enum EncryptionKey: Sendable, Hashable {
    /// METHOD=NONE: the segments that follow are clear.
    case none
    /// METHOD=AES-128: whole resources encrypted with AES-128-CBC and PKCS7 padding; the 16-byte key is at `uri`.
    /// `iv`: 16 bytes, rendered as `IV=0x…`; nil: the IV is the segment's media sequence number (RFC 8216 5.2).
    case aes128(uri: String, iv: [UInt8]? = nil)
}

/// One entry of a media playlist with the tags that apply to it.
public struct MediaSegment: Sendable, Hashable {
    /// The URI line.
    public var uri: String
    /// EXTINF duration in seconds (rendered with three decimals).
    public var duration: Double
    /// EXTINF title (after the comma); usually empty.
    public var title: String
    /// EXT-X-DISCONTINUITY before this segment.
    public var discontinuity: Bool
    /// EXT-X-GAP: the segment is missing; clients should not load it.
    public var gap: Bool
    /// EXT-X-PROGRAM-DATE-TIME of the segment's first sample.
    public var programDateTime: ProgramDateTime?
    /// The initialization section that applies to this segment (EXT-X-MAP is rendered when it changes).
    public var map: MediaInitializationSection?
    /// EXT-X-BYTERANGE.
    public var byteRange: ByteRange?
    /// EXT-X-DATERANGE tags rendered just before this segment's tags.
    public var dateRanges: [DateRange]
    /// Further complete tag lines (e.g. legacy `#EXT-X-CUE-OUT:30`) rendered before EXTINF, in order.
    public var extraTags: [String]
    /// EXT-X-KEY rendered before this segment (after any EXT-X-MAP): set where the key changes and on the first
    /// segment of a playlist; nil: the key in force above still applies.
    public var key: EncryptionKey? = nil
    /// EXT-X-PART tags of the segment's partial segments, rendered after its other tags and before EXTINF.
    public var parts: [PartialSegment] = []

    public init(
        uri: String, duration: Double, title: String = "", discontinuity: Bool = false, gap: Bool = false,
        programDateTime: ProgramDateTime? = nil, map: MediaInitializationSection? = nil, byteRange: ByteRange? = nil,
        dateRanges: [DateRange] = [], extraTags: [String] = []
    ) {
        self.uri = uri
        self.duration = duration
        self.title = title
        self.discontinuity = discontinuity
        self.gap = gap
        self.programDateTime = programDateTime
        self.map = map
        self.byteRange = byteRange
        self.dateRanges = dateRanges
        self.extraTags = extraTags
    }
}
