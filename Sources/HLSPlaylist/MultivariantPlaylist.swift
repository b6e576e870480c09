/// RESOLUTION=WxH.
public struct Resolution: Sendable, Hashable {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
}

/// An EXT-X-STREAM-INF entry.
public struct VariantStream: Sendable, Hashable {
    public var uri: String
    /// Peak segment bit rate, bits per second.
    public var bandwidth: Int
    public var averageBandwidth: Int?
    /// RFC 6381 codec strings, rendered comma-separated in one quoted string.
    public var codecs: [String]
    public var resolution: Resolution?
    public var frameRate: Double?
    /// SUPPLEMENTAL-CODECS entries (`dvh1.08.07/db1p`), rendered comma-separated in one quoted string; empty for none.
    public var supplementalCodecs: [String] = []
    /// VIDEO-RANGE; nil renders none (which a client reads as SDR).
    public var videoRange: HLSVideoRange? = nil
    /// HDCP-LEVEL; nil renders none.
    public var hdcpLevel: HDCPLevel? = nil
    /// ALLOWED-CPC; nil renders none.
    public var allowedCPC: AllowedCPC? = nil
    /// GROUP-ID of the audio EXT-X-MEDIA group this variant uses.
    public var audioGroup: String?
    /// GROUP-ID of the subtitles EXT-X-MEDIA group this variant uses.
    public var subtitlesGroup: String?
    /// CLOSED-CAPTIONS: a group id or `NONE`; nil renders no attribute.
    public var closedCaptions: ClosedCaptionsReference?
    /// PATHWAY-ID: the Content Steering pathway the variant belongs to (RFC 8216bis 4.4.6.2); nil renders none.
    public var pathwayID: String? = nil

    public init(
        uri: String, bandwidth: Int, averageBandwidth: Int? = nil, codecs: [String] = [],
        resolution: Resolution? = nil, frameRate: Double? = nil, audioGroup: String? = nil,
        subtitlesGroup: String? = nil, closedCaptions: ClosedCaptionsReference? = nil
    ) {
        self.uri = uri
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.codecs = codecs
        self.resolution = resolution
        self.frameRate = frameRate
        self.audioGroup = audioGroup
        self.subtitlesGroup = subtitlesGroup
        self.closedCaptions = closedCaptions
    }
}

/// The value of EXT-X-STREAM-INF's CLOSED-CAPTIONS attribute (RFC 8216 section 4.3.4.2).
///
/// Beware `closedCaptions = .none` on an optional: write `ClosedCaptionsReference.none` to mean `NONE`.
public enum ClosedCaptionsReference: Sendable, Hashable {
    /// The enumerated string `NONE`: no variant of the playlist carries closed captions.
    case none
    /// The GROUP-ID of a CLOSED-CAPTIONS EXT-X-MEDIA group.
    case group(String)
}

/// EXT-X-MEDIA TYPE.
public enum RenditionType: String, Sendable, Hashable {
    case audio = "AUDIO"
    case video = "VIDEO"
    case subtitles = "SUBTITLES"
    case closedCaptions = "CLOSED-CAPTIONS"
}

/// An EXT-X-MEDIA entry (alternative rendition).
public struct Rendition: Sendable, Hashable {
    public var type: RenditionType
    public var groupID: String
    public var name: String
    public var uri: String?
    public var language: String?
    public var isDefault: Bool
    public var autoselect: Bool
    /// CHANNELS (audio), e.g. "2".
    public var channels: String?
    /// FORCED (SUBTITLES only; rendered only for them), nil for no attribute.
    public var forced: Bool?
    /// INSTREAM-ID (CLOSED-CAPTIONS only): `CC1`...`CC4` or `SERVICE1`...`SERVICE63`.
    public var instreamID: String?
    /// CHARACTERISTICS: comma-separated Uniform Type Identifiers, passed through as given.
    public var characteristics: String?

    public init(
        type: RenditionType, groupID: String, name: String, uri: String? = nil, language: String? = nil,
        isDefault: Bool = false, autoselect: Bool = false, channels: String? = nil, forced: Bool? = nil,
        instreamID: String? = nil, characteristics: String? = nil
    ) {
        self.type = type
        self.groupID = groupID
        self.name = name
        self.uri = uri
        self.language = language
        self.isDefault = isDefault
        self.autoselect = autoselect
        self.channels = channels
        self.forced = forced
        self.instreamID = instreamID
        self.characteristics = characteristics
    }
}

/// An EXT-X-I-FRAME-STREAM-INF: the I-frame playlist of a video rendition (trick play, scrubbing).
public struct IFrameStream: Sendable, Hashable {
    /// URI of the I-frame media playlist.
    public var uri: String
    /// Peak bit rate of the I-frames alone (bits per second).
    public var bandwidth: Int
    public var averageBandwidth: Int?
    /// The video codec only.
    public var codecs: [String]
    public var resolution: Resolution?
    /// SUPPLEMENTAL-CODECS of the video (`dvh1.08.07/db1p`); empty for none.
    public var supplementalCodecs: [String] = []
    /// VIDEO-RANGE; nil renders none.
    public var videoRange: HLSVideoRange? = nil
    /// HDCP-LEVEL; nil renders none.
    public var hdcpLevel: HDCPLevel? = nil
    /// ALLOWED-CPC; nil renders none.
    public var allowedCPC: AllowedCPC? = nil
    /// PATHWAY-ID: the Content Steering pathway the I-frame stream belongs to; nil renders none.
    public var pathwayID: String? = nil

    public init(
        uri: String, bandwidth: Int, averageBandwidth: Int? = nil, codecs: [String] = [], resolution: Resolution? = nil
    ) {
        self.uri = uri
        self.bandwidth = bandwidth
        self.averageBandwidth = averageBandwidth
        self.codecs = codecs
        self.resolution = resolution
    }
}

/// A multivariant (master) playlist.
public struct MultivariantPlaylist: Sendable, Hashable {
    public var independentSegments: Bool
    public var definitions: [VariableDefinition]
    public var renditions: [Rendition]
    public var variants: [VariantStream]
    /// EXT-X-I-FRAME-STREAM-INF lines, rendered after the variants.
    public var iFrameStreams: [IFrameStream] = []
    /// EXT-X-SESSION-KEY lines (never `.none`), rendered after the definitions: lets a client preload the key.
    public var sessionKeys: [EncryptionKey] = []
    /// EXT-X-CONTENT-STEERING (RFC 8216bis 4.4.6.6); nil renders none.
    public var contentSteering: ContentSteeringTag? = nil

    public init(
        independentSegments: Bool = false, definitions: [VariableDefinition] = [], renditions: [Rendition] = [],
        variants: [VariantStream] = []
    ) {
        self.independentSegments = independentSegments
        self.definitions = definitions
        self.renditions = renditions
        self.variants = variants
    }
}

/// EXT-X-CONTENT-STEERING: where the steering manifest is and which pathway to use until it is loaded.
public struct ContentSteeringTag: Sendable, Hashable {
    /// SERVER-URI: the steering manifest's URI (relative URIs resolve against the multivariant playlist's).
    public var serverURI: String
    /// PATHWAY-ID: the pathway a client applies until it has loaded the first steering manifest.
    public var pathwayID: String?

    public init(serverURI: String, pathwayID: String? = nil) {
        self.serverURI = serverURI
        self.pathwayID = pathwayID
    }
}
