/// EXT-X-PLAYLIST-TYPE.
public enum PlaylistType: String, Sendable, Hashable {
    case event = "EVENT"
    case vod = "VOD"
}

/// EXT-X-START: where a client should start playing the playlist (RFC 8216 section 4.3.5.2).
public struct StartOffset: Sendable, Hashable {
    /// TIME-OFFSET in seconds: from the start of the playlist when positive or zero, from the end of its last
    /// segment when negative. Rendered with three decimals.
    public var timeOffset: Double
    /// PRECISE=YES: start at exactly `timeOffset` (skipping what comes before it in its segment); NO: start at the
    /// beginning of the segment containing it.
    public var precise: Bool

    public init(timeOffset: Double, precise: Bool = false) {
        self.timeOffset = timeOffset
        self.precise = precise
    }
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
    /// EXT-X-START (nil: none, clients choose where to start).
    public var start: StartOffset?
    /// EXT-X-DEFINE tags.
    public var definitions: [VariableDefinition]
    /// EXT-X-I-FRAMES-ONLY: each segment is one I-frame (usually a byte range of a media segment); EXTINF is the time
    /// to the next I-frame.
    public var iFramesOnly: Bool = false
    /// EXT-X-SERVER-CONTROL (Low-Latency HLS and delta updates); nil: not rendered.
    public var serverControl: ServerControl? = nil
    /// EXT-X-PART-INF PART-TARGET in seconds; nil: the playlist has no partial segments.
    public var partTarget: Double? = nil
    /// EXT-X-SKIP: this is a playlist delta update; the first `skip.skippedSegments` segments are left out and
    /// `segments` starts at `mediaSequence + skippedSegments`.
    public var skip: Skip? = nil
    /// The segments in order; the first has number `mediaSequence`.
    public var segments: [MediaSegment]
    /// The segment the encoder is producing: its tags (DATERANGE, DISCONTINUITY, MAP, KEY, PDT) and its parts so
    /// far, rendered after the last complete segment without EXTINF and URI line (its `uri` and `duration` are not
    /// rendered). nil: the last segment is complete.
    public var segmentInProgress: MediaSegment? = nil
    /// EXT-X-PRELOAD-HINT tags, rendered after the segments.
    public var preloadHints: [PreloadHint] = []
    /// EXT-X-RENDITION-REPORT tags, rendered last.
    public var renditionReports: [RenditionReport] = []

    public init(
        targetDuration: Int, mediaSequence: UInt64 = 0, discontinuitySequence: UInt64 = 0,
        independentSegments: Bool = false, playlistType: PlaylistType? = nil, endList: Bool = false,
        start: StartOffset? = nil, definitions: [VariableDefinition] = [], segments: [MediaSegment] = []
    ) {
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.independentSegments = independentSegments
        self.playlistType = playlistType
        self.endList = endList
        self.start = start
        self.definitions = definitions
        self.segments = segments
    }
}
