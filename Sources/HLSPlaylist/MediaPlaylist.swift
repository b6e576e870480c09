/// EXT-X-PLAYLIST-TYPE.
public enum PlaylistType: String, Sendable, Hashable {
    case event = "EVENT"
    case vod = "VOD"
}

/// An EXT-X-DEFINE tag (RFC 8216bis section 4.4.2.3): exactly one of the three forms.
public enum VariableDefinition: Sendable, Hashable {
    case value(name: String, value: String)
    case `import`(name: String)
    case queryParameter(name: String)
}

/// A media playlist: the value the origin renders for each snapshot and parses from encoder hints.
public struct MediaPlaylist: Sendable, Hashable {
    /// EXT-X-TARGETDURATION in whole seconds.
    public var targetDuration: Int
    /// EXT-X-MEDIA-SEQUENCE: the media sequence number of the first segment.
    public var mediaSequence: UInt64
    /// EXT-X-DISCONTINUITY-SEQUENCE.
    public var discontinuitySequence: UInt64
    /// EXT-X-INDEPENDENT-SEGMENTS.
    public var independentSegments: Bool
    /// EXT-X-PLAYLIST-TYPE (nil for a sliding live playlist).
    public var playlistType: PlaylistType?
    /// EXT-X-ENDLIST.
    public var endList: Bool
    /// EXT-X-DEFINE tags.
    public var definitions: [VariableDefinition]
    /// The segments in order; the first has number `mediaSequence`.
    public var segments: [MediaSegment]

    public init(
        targetDuration: Int, mediaSequence: UInt64 = 0, discontinuitySequence: UInt64 = 0,
        independentSegments: Bool = false, playlistType: PlaylistType? = nil, endList: Bool = false,
        definitions: [VariableDefinition] = [], segments: [MediaSegment] = []
    ) {
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.independentSegments = independentSegments
        self.playlistType = playlistType
        self.endList = endList
        self.definitions = definitions
        self.segments = segments
    }
}
