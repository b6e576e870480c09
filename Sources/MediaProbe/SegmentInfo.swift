/// A point or span on a media timeline: `ticks` in units of 1/`timescale` seconds.
public struct MediaTime: Sendable, Hashable {
    public var ticks: Int64
    public var timescale: Int64
    public init(ticks: Int64, timescale: Int64) {
        self.ticks = ticks
        self.timescale = timescale
    }
    /// The value in seconds.
    public var seconds: Double { Double(ticks) / Double(timescale) }
    /// `ticks` of 1/`source` s in ticks of 1/`target` s, rounded to the nearest (`(ticks * target + source / 2) /
    /// source`) or toward zero, for any values: a result past Int64 is clamped instead of overflowing. `ticks`
    /// unchanged when `source` is not positive or equals `target`.
    public static func rescale(_ ticks: Int64, from source: Int64, to target: Int64, nearest: Bool = true) -> Int64 {
        guard source > 0, source != target else { return ticks }
        let (product, overflow) = ticks.multipliedReportingOverflow(by: target)
        if !overflow {
            let (sum, sumOverflow) = product.addingReportingOverflow(nearest ? source / 2 : 0)
            if !sumOverflow { return sum / source }
        }
        let exact = Double(ticks) * Double(target) / Double(source)
        guard exact.magnitude < 9.2e18 else { return exact < 0 ? .min : .max }
        return Int64(nearest ? exact.rounded() : exact.rounded(.towardZero))
    }
    /// The value in microseconds, rounded to the nearest.
    /// Safe for any stored values: 0 when `timescale` is not positive, saturating instead of overflowing.
    public var microseconds: Int64 {
        guard timescale > 0 else { return 0 }
        let whole = ticks / timescale
        let fraction = ticks % timescale
        let (scaled, overflow) = whole.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return whole < 0 ? .min : .max }
        // |fraction| < timescale, so fraction * 1e6 fits when timescale < 9.2e12; beyond that go through Double.
        let part =
            timescale < 9_000_000_000_000
            ? (fraction * 1_000_000 + (fraction >= 0 ? timescale / 2 : -timescale / 2)) / timescale
            : Int64((Double(fraction) / Double(timescale) * 1_000_000).rounded())
        let (total, overflow2) = scaled.addingReportingOverflow(part)
        return overflow2 ? (scaled < 0 ? .min : .max) : total
    }
}

/// Container format of a pushed file, as detected from its bytes.
public enum MediaContainer: String, Sendable, Hashable {
    case mpegTS = "mpegts"
    case fragmentedMP4Init = "fmp4-init"
    case fragmentedMP4Segment = "fmp4"
    case adts = "adts"
    case webVTT = "webvtt"
}

/// What kind of track.
public enum TrackKind: String, Sendable, Hashable {
    case video, audio, subtitles, data
}

/// One elementary stream / track and the facts a multivariant playlist needs.
public struct TrackInfo: Sendable, Hashable {
    public var kind: TrackKind
    /// RFC 6381 codec string, e.g. `avc1.64001f`, `hvc1.1.6.L93.B0`, `mp4a.40.2`; nil when unknown.
    public var codec: String?
    public var width: Int?
    public var height: Int?
    /// Frames per second when known (from the SPS timing info or the sample durations).
    public var frameRate: Double?
    public var sampleRate: Int?
    public var channelCount: Int?
    /// fMP4 track ID, or the TS elementary PID.
    public var trackID: Int
    /// fMP4 media timescale (90000 for MPEG-TS).
    public var timescale: Int64
    /// Video: the ITU-T H.273 transfer characteristics the picture is meant to be shown with, what VIDEO-RANGE is
    /// made of (HLSPlaylist's `HLSVideoRange(transferCharacteristics:)`): the SPS VUI's (H.264, HEVC) or the fMP4
    /// `colr` (nclx) box's, 2 (unspecified) when the stream states none; an SDR one replaced by the PQ (16) or HLG
    /// (18) an alternative_transfer_characteristics SEI prefers; a Dolby Vision base layer's compatibility over both
    /// (docs/media-probe.md). nil when not video or no parameter set was read.
    public var transferCharacteristics: UInt8?
    /// Video: SUPPLEMENTAL-CODECS entry of a Dolby Vision stream whose base layer CODECS names (`dvh1.08.07/db1p`),
    /// from the fMP4 `dvcC`/`dvvC` box or the MPEG-TS DOVI descriptor; nil when none.
    public var supplementalCodec: String?
    /// Video: the transfer characteristics the stream states (SPS VUI or `colr`, 2 when none), before an
    /// alternative_transfer_characteristics SEI or a Dolby Vision compatibility is applied; nil like
    /// `transferCharacteristics`. A rendition keeps an SEI's HLG/PQ reading while this and the codec stay the same.
    public var statedTransferCharacteristics: UInt8?
    /// Video: the Dolby Vision configuration (fMP4 `dvcC`/`dvvC`/`dvwC`, MPEG-TS DOVI descriptor); nil when none.
    public var dolbyVision: DolbyVisionConfiguration?

    public init(
        kind: TrackKind, codec: String? = nil, width: Int? = nil, height: Int? = nil, frameRate: Double? = nil,
        sampleRate: Int? = nil, channelCount: Int? = nil, trackID: Int, timescale: Int64,
        transferCharacteristics: UInt8? = nil, supplementalCodec: String? = nil,
        statedTransferCharacteristics: UInt8? = nil, dolbyVision: DolbyVisionConfiguration? = nil
    ) {
        self.transferCharacteristics = transferCharacteristics
        self.supplementalCodec = supplementalCodec
        self.statedTransferCharacteristics = statedTransferCharacteristics
        self.dolbyVision = dolbyVision
        self.kind = kind
        self.codec = codec
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.trackID = trackID
        self.timescale = timescale
    }
}

/// Facts about an fMP4 initialization section (ftyp + moov).
public struct InitSectionInfo: Sendable, Hashable {
    public var tracks: [TrackInfo]
    /// `mvex/trex` defaults by track ID, used when a segment's `tfhd`/`trun` leave sample durations or flags out.
    public var fragmentDefaults: [Int: TrackFragmentDefaults]
    /// Bytes of the NAL unit length fields of H.264/HEVC samples (avcC/hvcC lengthSizeMinusOne + 1) by track ID;
    /// 4 when a video track is missing here.
    public var nalUnitLengthSizes: [Int: Int]
    public init(
        tracks: [TrackInfo], fragmentDefaults: [Int: TrackFragmentDefaults] = [:], nalUnitLengthSizes: [Int: Int] = [:]
    ) {
        self.tracks = tracks
        self.fragmentDefaults = fragmentDefaults
        self.nalUnitLengthSizes = nalUnitLengthSizes
    }
}

/// Facts about one media segment, found by reading its bytes.
public struct SegmentInfo: Sendable, Hashable {
    public var container: MediaContainer
    public var tracks: [TrackInfo]
    /// Presentation time of the earliest sample of the primary track (video if present, else audio).
    /// MPEG-TS: 90 kHz PTS (33-bit, not unwrapped). fMP4: tfdt + composition offset in the track timescale.
    public var startTime: MediaTime
    /// Duration of the primary track: end of its last sample minus `startTime`.
    public var duration: MediaTime
    /// The first video access unit is a random access point (IDR / IRAP); true for audio-only segments.
    public var startsWithKeyframe: Bool
    /// MPEG-TS only: the first two packets are PAT then PMT.
    public var startsWithPATAndPMT: Bool
    /// Size of the segment in bytes.
    public var byteCount: Int
    /// CEA-608/708 caption channels found in the video's SEI (H.264/HEVC); empty when none or not video.
    public var closedCaptions: [ClosedCaptionChannel] = []
    /// WebVTT only: the segment's `X-TIMESTAMP-MAP`, nil when it has none.
    public var webVTTTimestampMap: WebVTTTimestampMap?
    /// Every keyframe (IDR/IRAP access unit) of the primary video track and where its bytes are, ascending `start`;
    /// empty for audio-only and WebVTT segments.
    public var keyframes: [KeyframeRange] = []
    /// MPEG-TS only: the SCTE-35 splice_info_sections the segment carries (PMT stream_type 0x86, or ffmpeg's
    /// stream_type 0x06 with PES stream_id 0xFC), each table_id ... CRC_32 as sent, in stream order; not validated.
    public var spliceSections: [[UInt8]] = []
    /// `[0, end)` of the first keyframe when the segment starts with one: the byte range an I-frame playlist lists
    /// (it includes what precedes the keyframe: PAT/PMT/SDT for MPEG-TS, styp/sidx/moof for fMP4, which players
    /// need to decode it).
    public var iFrameRangeEnd: Int? {
        guard startsWithKeyframe, !tracks.isEmpty, tracks.contains(where: { $0.kind == .video }) else { return nil }
        return keyframes.first.map(\.end)
    }

    public init(
        container: MediaContainer, tracks: [TrackInfo], startTime: MediaTime, duration: MediaTime,
        startsWithKeyframe: Bool, startsWithPATAndPMT: Bool = false, byteCount: Int
    ) {
        self.container = container
        self.tracks = tracks
        self.startTime = startTime
        self.duration = duration
        self.startsWithKeyframe = startsWithKeyframe
        self.startsWithPATAndPMT = startsWithPATAndPMT
        self.byteCount = byteCount
    }
}

/// A keyframe (IDR/IRAP access unit) of a segment and where its bytes are.
public struct KeyframeRange: Sendable, Hashable {
    /// First byte of the keyframe's data: MPEG-TS: the first packet of its PES; fMP4: its moof.
    public var start: Int
    /// One past its last byte: MPEG-TS: the end of the last packet of its PES; fMP4: the end of the sample's data in
    /// the mdat.
    public var end: Int
    /// MPEG-TS: the PAT and PMT packets directly precede `start` (only other PIDs between); fMP4: false.
    public var followsProgramTables: Bool
    /// Presentation time of the keyframe.
    public var presentationTime: MediaTime

    public init(start: Int, end: Int, followsProgramTables: Bool = false, presentationTime: MediaTime) {
        self.start = start
        self.end = end
        self.followsProgramTables = followsProgramTables
        self.presentationTime = presentationTime
    }
}

/// A caption channel carried in video SEI: CEA-608 `CC1`...`CC4`, CEA-708 `SERVICE1`...`SERVICE63`
/// (the INSTREAM-ID of `EXT-X-MEDIA:TYPE=CLOSED-CAPTIONS`).
public struct ClosedCaptionChannel: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// `CC1`...`CC4` or `SERVICE1`...`SERVICE63`.
    public let instreamID: String
    /// CEA-608 channel 1...4.
    public static func cea608(_ channel: Int) -> ClosedCaptionChannel {
        ClosedCaptionChannel(instreamID: "CC\(channel)")
    }
    /// CEA-708 service 1...63.
    public static func cea708(service: Int) -> ClosedCaptionChannel {
        ClosedCaptionChannel(instreamID: "SERVICE\(service)")
    }
    public var description: String { instreamID }
    /// CC channels first, then services, each in number order.
    public static func < (a: ClosedCaptionChannel, b: ClosedCaptionChannel) -> Bool {
        let key = { (c: ClosedCaptionChannel) -> (Int, Int) in
            c.instreamID.hasPrefix("CC")
                ? (0, Int(c.instreamID.dropFirst(2)) ?? 0) : (1, Int(c.instreamID.dropFirst(7)) ?? 0)
        }
        return key(a) < key(b)
    }
}

/// `X-TIMESTAMP-MAP=MPEGTS:{mpegts},LOCAL:{local}` of a WebVTT segment: cue time `local` is media time `mpegts`.
public struct WebVTTTimestampMap: Sendable, Hashable {
    /// 90 kHz MPEG-2 time (33 bits).
    public var mpegts: Int64
    /// Cue time in milliseconds.
    public var localMilliseconds: Int64
    public init(mpegts: Int64, localMilliseconds: Int64) {
        self.mpegts = mpegts
        self.localMilliseconds = localMilliseconds
    }
}

/// Why bytes could not be probed; `message` is shown to the encoder in the 4xx body.
public struct ProbeError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    /// The bytes are well-formed but carry a duration or time no stream has (a sum that overflows 64 bits): the
    /// ingest refuses them as `implausibleTiming` rather than as malformed.
    public var isImplausibleTiming = false
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    /// A duration or time no stream carries.
    public static func implausibleTiming(_ message: String) -> ProbeError {
        var error = ProbeError(message)
        error.isImplausibleTiming = true
        return error
    }
}
