public import HLSPlaylist
public import Markers
public import MediaProbe

/// How long the live window is.
public enum WindowLength: Sendable, Hashable {
    /// At most this many segments (never less than three target durations once filled).
    case segments(Int)
    /// At most this many seconds of media (never less than three target durations once filled).
    case seconds(Double)
}

/// Where a channel's media comes from.
public enum ChannelSource: Sendable, Hashable {
    /// Encoders push segments to `/ingest/{channel}/{rendition}/{file}`.
    case push
    /// The built-in test source generates the renditions (each rendition names a test source profile).
    case testSource
}

/// What a channel does with the SCTE-35 cues carried in its pushed MPEG-TS (`inbandCues:`).
public enum InbandCueMode: String, Sendable, Hashable, CaseIterable {
    /// Cues in the stream are not read.
    case ignore
    /// Each cue becomes a marker in the channel's marker book (`Marker.source` `.inband`).
    case markers
    /// As `markers`, and the markers are also rendered as HLS Interstitials.
    case interstitials
}

/// One rendition of a channel as configured.
public struct RenditionConfiguration: Sendable, Hashable {
    /// URL name, e.g. `720p`.
    public var name: String
    /// Test source profile (only for `.testSource` channels); defaults to the rendition name.
    public var testSourceProfile: String?
    /// Makes the rendition an alternate audio rendition (`EXT-X-MEDIA:TYPE=AUDIO`) in this group. Default: nil (a
    /// variant, or an audio member of the probe's default group when it carries audio only).
    public var audio: MediaGroupMembership?
    /// Makes the rendition a subtitle rendition (`EXT-X-MEDIA:TYPE=SUBTITLES`) in this group. Default: nil.
    public var subtitles: MediaGroupMembership?
    /// Cut from another rendition's continuous stream (an SRT caller): a program or one elementary stream of it.
    public var srt: StreamSelection?
    /// HDCP-LEVEL of this rendition's variants and I-frame stream, over the channel's `hdcpLevel` (e.g. TYPE-1 on
    /// the 2160p rendition only). Default: nil = the channel's.
    public var hdcpLevel: HDCPLevel?
    /// ALLOWED-CPC of this rendition's variants and I-frame stream, over the channel's `allowedCPC`. Default: nil =
    /// the channel's.
    public var allowedCPC: AllowedCPC?

    public init(
        name: String, testSourceProfile: String? = nil, audio: MediaGroupMembership? = nil,
        subtitles: MediaGroupMembership? = nil, srt: StreamSelection? = nil, hdcpLevel: HDCPLevel? = nil,
        allowedCPC: AllowedCPC? = nil
    ) {
        self.name = name
        self.hdcpLevel = hdcpLevel
        self.allowedCPC = allowedCPC
        self.srt = srt
        self.testSourceProfile = testSourceProfile
        self.audio = audio
        self.subtitles = subtitles
    }
}

/// What of a continuous stream (an SRT caller publishing `from`) a rendition is cut from: a PAT program (the whole
/// program), or one elementary stream by PID, by ISO 639-2 language (audio) or the first of a kind.
public struct StreamSelection: Sendable, Hashable {
    /// The rendition the caller names in its stream id.
    public var from: String
    public var program: Int?
    public var pid: Int?
    /// ISO 639-2 code, 3 lowercase letters.
    public var language: String?
    /// `video` or `audio`.
    public var kind: TrackKind?

    public init(from: String, program: Int? = nil, pid: Int? = nil, language: String? = nil, kind: TrackKind? = nil) {
        self.from = from
        self.program = program
        self.pid = pid
        self.language = language
        self.kind = kind
    }
}

/// A rendition's place in an `EXT-X-MEDIA` group (audio or subtitles), from the configuration or the encoder's
/// multivariant hint.
public struct MediaGroupMembership: Sendable, Hashable {
    /// GROUP-ID.
    public var group: String
    /// LANGUAGE, an RFC 5646 tag (`en`, `fr-CA`); nil: none.
    public var language: String?
    /// NAME, unique in the group; nil: derived (the language's own name, else the rendition name).
    public var name: String?
    /// DEFAULT=YES (at most one per group).
    public var isDefault: Bool
    /// AUTOSELECT. Default: true.
    public var autoselect: Bool
    /// FORCED (subtitles only). Default: false.
    public var forced: Bool
    /// Subtitles: the media rendition whose timeline the cues follow (`lo` for `lo-vtt`); nil: the rendition name
    /// without its `-vtt` suffix, if that rendition exists.
    public var parent: String?
    /// Subtitles: the MPEGTS value (90 kHz) of the `X-TIMESTAMP-MAP` the origin writes into WebVTT segments that
    /// carry none; nil: derived from the parent's container.
    public var timestampOffset: Int64?

    public init(
        group: String, language: String? = nil, name: String? = nil, isDefault: Bool = false, autoselect: Bool = true,
        forced: Bool = false, parent: String? = nil, timestampOffset: Int64? = nil
    ) {
        self.group = group
        self.language = language
        self.name = name
        self.isDefault = isDefault
        self.autoselect = autoselect
        self.forced = forced
        self.parent = parent
        self.timestampOffset = timestampOffset
    }
}

/// A simulated encoder outage of a test-source channel, planned in the configuration (demos, soak tests).
public struct ScheduledOutage: Sendable, Hashable {
    /// Seconds after the origin starts.
    public var afterSeconds: Double
    /// How long the feed stays away.
    public var durationSeconds: Double
    /// Renditions that drop; empty: all.
    public var renditions: [String]
    /// Repeat every this many seconds; nil: once.
    public var everySeconds: Double?

    public init(afterSeconds: Double, durationSeconds: Double, renditions: [String] = [], everySeconds: Double? = nil) {
        self.afterSeconds = afterSeconds
        self.durationSeconds = durationSeconds
        self.renditions = renditions
        self.everySeconds = everySeconds
    }
}

/// A channel's settings. Defaults are what an auto-created channel gets.
public struct ChannelConfiguration: Sendable, Hashable {
    /// URL name of the channel.
    public var name: String
    /// Renditions in the order the multivariant playlist lists them. Pushed channels may add renditions on first push
    /// when auto-create is on.
    public var renditions: [RenditionConfiguration]
    /// Where media comes from. Default: `.push`.
    public var source: ChannelSource
    /// EXT-X-TARGETDURATION, fixed for the life of the channel. Default: nil = the rounded duration of the first
    /// segment (at least 1).
    public var targetDuration: Int?
    /// Nominal segment duration in seconds: the EXTINF of GAP entries and the slot length used to compute deadlines
    /// before the first segment. Default: 2 (the test source cuts segments of this length).
    public var segmentDuration: Double
    /// Live window length. Default: 6 segments.
    public var window: WindowLength
    /// How long after a slot's end the ingest loop waits before writing EXT-X-GAP for a rendition that did not
    /// deliver. Default: nil = half the target duration.
    public var gracePeriod: Double?
    /// Planned outages of the built-in test source. Default: none.
    public var scheduledOutages: [ScheduledOutage] = []
    /// What a GAP entry's URL answers. Default: `.filler`.
    public var gapResponse: GapResponse
    /// How an outage's slots are listed: EXT-X-GAP entries or slate segments. Default: `.gap`.
    public var outage: OutageMode = .gap
    /// An operator's slate clip per rendition: a path to MPEG-TS where `{rendition}` stands for the rendition's
    /// name (`ClipGapFillerSource`). Its pictures replace the last keyframe in the filler of MPEG-TS renditions.
    /// Default: nil = the last keyframe.
    public var slateClip: String?
    /// Which tags announce ad breaks (markers with SCTE35-OUT): DATERANGE, EXT-X-CUE-OUT/-CONT/-IN or both
    /// (`cueTags:`). Default: `.daterange`.
    public var cueTags: CueTagMode = .daterange
    /// EXT-OATCLS-SCTE35 with the base64 sections on the first segment of a break and after it (`oatcls:`).
    /// Default: false.
    public var oatcls: Bool = false
    /// `cueTags` and `oatcls` as the renderers take them.
    public var cueTagOptions: CueTagOptions { CueTagOptions(mode: cueTags, oatcls: oatcls) }
    /// What SCTE-35 cues in the pushed MPEG-TS become. Default: `.markers`.
    public var inbandCues: InbandCueMode = .markers
    /// HLS Interstitials: the asset breaks are also rendered with, and how many DVR and recording playlists list.
    /// Default: no asset, at most 20 interstitials from the last 2 hours.
    public var interstitials = InterstitialSettings()
    /// Time-shift: how much of the channel the durable store keeps beyond the live window (start-over, catch-up,
    /// segments served from disk). Default: nil = only what the window and a restart need.
    public var dvr: DVRConfiguration?
    /// Also offer each audio group's default rendition as an audio-only variant (audio-only clients). Default: false.
    public var audioOnlyVariant: Bool = false
    /// HDCP-LEVEL of the channel's video variants and I-frame streams (`hdcpLevel:`); a rendition's own
    /// (`RenditionConfiguration.hdcpLevel`) wins for it. Default: nil = none.
    public var hdcpLevel: HDCPLevel?
    /// ALLOWED-CPC of the channel's video variants and I-frame streams (`allowedCPC:`); a rendition's own wins for
    /// it. Default: nil = none.
    public var allowedCPC: AllowedCPC?
    /// How long a slot waits for subtitle renditions after every media (audio/video) rendition filled it; after it
    /// a subtitle rendition that missed the slot gets an empty cue segment. Default: nil = min(TD/2, 1 s).
    public var followerWaitMilliseconds: Int64?
    /// An I-frame playlist (`{r}/iframes.m3u8`, EXT-X-I-FRAME-STREAM-INF) for every rendition with video.
    /// Default: true.
    public var iFramePlaylists: Bool = true
    /// Playback authorization: the multivariant playlist, segments, init sections and keys need a token.
    /// Default: nil = open.
    public var playback: PlaybackAuthorization?
    /// AES-128 encryption of the segments on the way out, with key rotation. Default: nil = clear.
    public var encryption: EncryptionConfiguration?
    /// Low-Latency HLS: pushes streamed while they are encoded are cut into parts of about `partTarget`. Default:
    /// nil = regular HLS.
    public var lowLatency: LowLatencyConfiguration?
    /// The channel is served by a redundancy group (`redundancy:`): slots are numbered and timed as every origin of
    /// the group does (`SharedTimeline`). Default: nil = a lone origin numbers from its own counter.
    public var sharedTimeline: SharedTimeline?
    /// Content Steering across the group's pathways (`steering:`, docs/content-steering.md): the multivariant
    /// playlist lists every variant per pathway and names the steering manifest. Default: nil = none.
    public var steering: ContentSteeringConfiguration?

    /// Peers of the redundancy group can fill the slots this channel's feed missed: a pushed channel in the clear on
    /// a shared timeline (a peer's segment URL serves the pushed bytes; encrypted or token-protected channels serve
    /// ciphertext or need a viewer's token).
    public var repairsFromPeers: Bool {
        sharedTimeline != nil && source == .push && encryption == nil && playback == nil
    }

    public init(
        name: String, renditions: [RenditionConfiguration] = [], source: ChannelSource = .push,
        targetDuration: Int? = nil, segmentDuration: Double = 2, window: WindowLength = .segments(6),
        gracePeriod: Double? = nil, gapResponse: GapResponse = .filler
    ) {
        self.name = name
        self.renditions = renditions
        self.source = source
        self.targetDuration = targetDuration
        self.segmentDuration = segmentDuration
        self.window = window
        self.gracePeriod = gracePeriod
        self.gapResponse = gapResponse
    }
}

/// How much of a channel the durable store keeps for time-shift.
public struct DVRConfiguration: Sendable, Hashable {
    /// Hours of the channel kept on disk (positive).
    public var hours: Double
    /// At most this many bytes of the channel on disk: the oldest time-shift goes first (never what is listed).
    /// Default: nil = no limit of the channel's own (`storage.maxBytes` still applies).
    public var maxBytes: Int64?

    public init(hours: Double, maxBytes: Int64? = nil) {
        self.hours = hours
        self.maxBytes = maxBytes
    }

    /// `hours` in milliseconds.
    public var milliseconds: Int64 { Int64(hours * 3_600_000) }
}

extension ChannelConfiguration {
    /// `segmentDuration` in whole milliseconds, the unit the ingest loop counts in.
    public var segmentDurationMilliseconds: Int64 { Int64((segmentDuration * 1000).rounded()) }

    /// `gracePeriod` in whole milliseconds (truncated), the unit the ingest loop counts in.
    public var gracePeriodMilliseconds: Int64? { gracePeriod.map { Int64($0 * 1000) } }
}

/// Limits and switches of the ingest path.
public struct IngestConfiguration: Sendable, Hashable {
    /// Create channels and renditions on their first push. Default: true.
    public var autoCreate: Bool
    /// Largest accepted segment in bytes. Default: 64 MiB.
    public var maxSegmentBytes: Int
    /// Settings for auto-created channels (the name is replaced).
    public var autoCreatedChannel: ChannelConfiguration

    public init(
        autoCreate: Bool = true, maxSegmentBytes: Int = 64 << 20,
        autoCreatedChannel: ChannelConfiguration = ChannelConfiguration(name: "")
    ) {
        self.autoCreate = autoCreate
        self.maxSegmentBytes = maxSegmentBytes
        self.autoCreatedChannel = autoCreatedChannel
    }
}

/// Playback authorization of a channel: viewers present an HMAC token (`?token=...`) that the multivariant playlist
/// hands to media playlists through EXT-X-DEFINE, so media playlists stay the same for every viewer (cacheable).
public struct PlaybackAuthorization: Sendable, Hashable {
    /// How media playlists receive the token.
    public enum Form: String, Sendable, Hashable {
        /// `#EXT-X-DEFINE:NAME="token",VALUE=...` in the multivariant, `IMPORT="token"` in media playlists
        /// (version 8).
        case importVariable = "import"
        /// `#EXT-X-DEFINE:QUERYPARAM="token"` everywhere: the client takes the token from each playlist URL's query
        /// (version 11).
        case queryParameter = "queryparam"
    }
    public var form: Form
    /// HMAC secret of the tokens (at least 32 bytes).
    public var secret: [UInt8]
    /// A token whose expiry is further ahead than this is refused. Default: 86400.
    public var maxTokenSeconds: Int64

    public init(form: Form = .importVariable, secret: [UInt8], maxTokenSeconds: Int64 = 86400) {
        self.form = form
        self.secret = secret
        self.maxTokenSeconds = maxTokenSeconds
    }
}

/// AES-128 encryption of a channel's segments.
public struct EncryptionConfiguration: Sendable, Hashable {
    /// Segments per key (at least 1): MSN m is in key period m / rotateEvery (counted from where the schedule began).
    public var rotateEvery: Int
    /// Where keys are fetched: a URI template with `{channel}` and `{period}`; nil: the origin serves them at
    /// `/live/{channel}/key-{period}.key`.
    public var keyURITemplate: String?

    public init(rotateEvery: Int, keyURITemplate: String? = nil) {
        self.rotateEvery = rotateEvery
        self.keyURITemplate = keyURITemplate
    }
}

/// Low-Latency HLS settings of a channel.
public struct LowLatencyConfiguration: Sendable, Hashable {
    /// PART-TARGET in seconds (0.1 ... TD/2): parts end at an access unit, never above it. Best a multiple of the
    /// frame duration (0.4 at 25 fps, 0.334 at 30 fps).
    public var partTarget: Double

    public init(partTarget: Double) {
        self.partTarget = partTarget
    }

    /// PART-TARGET in whole milliseconds.
    public var partTargetMilliseconds: Int64 { Int64((partTarget * 1000).rounded()) }
}
