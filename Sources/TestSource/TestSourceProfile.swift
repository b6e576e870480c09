public import MediaProbe

/// One rendition the built-in test source can produce: a resolution and bitrate backed by a pre-encoded fixture.
///
/// All built-in profiles share the same frame rate and GOP structure, so segments of every profile cut at the same
/// segment duration and start PTS have the same boundaries. Audio (AAC-LC, 48 kHz, stereo, 96 kbit/s, a 440 Hz
/// tone) is the same in every profile.
public struct TestSourceProfile: Sendable, Hashable {
    /// The profile's name, e.g. `"360p"`; also names its fixtures.
    public let name: String
    /// Picture width in pixels.
    public let width: Int
    /// Picture height in pixels.
    public let height: Int
    /// Nominal video bitrate in bits per second (the encoder's target; the measured rate varies around it).
    public let videoBitrate: Int
    /// Nominal audio bitrate in bits per second.
    public let audioBitrate: Int
    /// Frames per second (a divisor of 90 000, so a frame lasts a whole number of 90 kHz ticks).
    public let framesPerSecond: Int
    /// GOP duration in whole seconds: every GOP starts with an IDR carrying SPS and PPS.
    public let gopDuration: Int
    /// The RFC 6381 codec string of the video, as its SPS says, e.g. `"avc1.4d401e"`.
    public let videoCodec: String
    /// The caption channels the video carries in its SEI: `[CC1]` for the `captions` profile (CEA-608 pop-on
    /// "HELLO" once a second, see ``CEA608Captions``), empty otherwise.
    public let closedCaptions: [ClosedCaptionChannel]
    /// The name of the profile whose video and slate fixtures this one uses (its own name for most).
    let fixtureName: String

    init(
        name: String, width: Int, height: Int, videoBitrate: Int, audioBitrate: Int, framesPerSecond: Int,
        gopDuration: Int, videoCodec: String, fixtureName: String? = nil, closedCaptions: [ClosedCaptionChannel] = []
    ) {
        self.name = name
        self.width = width
        self.height = height
        self.videoBitrate = videoBitrate
        self.audioBitrate = audioBitrate
        self.framesPerSecond = framesPerSecond
        self.gopDuration = gopDuration
        self.videoCodec = videoCodec
        self.fixtureName = fixtureName ?? name
        self.closedCaptions = closedCaptions
    }

    /// The RFC 6381 codec string of the audio: AAC-LC.
    public var audioCodec: String { "mp4a.40.2" }

    /// The `CODECS` attribute value for a variant stream carrying this profile, video first.
    public var codecs: String { "\(videoCodec),\(audioCodec)" }

    /// Nominal total bitrate (video + audio) in bits per second, before transport-stream overhead.
    public var nominalBitrate: Int { videoBitrate + audioBitrate }

    /// Duration of one video frame in 90 kHz ticks.
    public var frameDurationTicks: Int64 { Int64(90_000 / framesPerSecond) }

    /// The profiles whose fixtures ship with the module, highest resolution first; then `captions`, the 360p
    /// picture with CEA-608 captions on CC1.
    public static let builtIn: [TestSourceProfile] = [
        TestSourceProfile(
            name: "360p", width: 640, height: 360, videoBitrate: 400_000, audioBitrate: 96_000,
            framesPerSecond: 25, gopDuration: 1, videoCodec: "avc1.4d401e"),
        TestSourceProfile(
            name: "180p", width: 320, height: 180, videoBitrate: 150_000, audioBitrate: 96_000,
            framesPerSecond: 25, gopDuration: 1, videoCodec: "avc1.4d400c"),
        TestSourceProfile(
            name: "captions", width: 640, height: 360, videoBitrate: 400_000, audioBitrate: 96_000,
            framesPerSecond: 25, gopDuration: 1, videoCodec: "avc1.4d401e", fixtureName: "360p",
            closedCaptions: [.cea608(1)]),
    ]

    /// The built-in profile with this name, if there is one.
    /// - Parameter name: A profile name such as `"360p"`.
    public static func named(_ name: String) -> TestSourceProfile? {
        builtIn.first { $0.name == name }
    }
}
