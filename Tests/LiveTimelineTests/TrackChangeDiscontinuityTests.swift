import MediaProbe
import SharedBytes
import TestSupport
import Testing

@testable import LiveTimeline

/// A discontinuity starts where a rendition's tracks change (RFC 8216 section 6.2.1), not where a segment has no
/// sample of one of them (an encoder that died just after a keyframe: the PMT lists the audio, no audio PES yet).
@Suite(.offThePool) struct TrackChangeDiscontinuityTests {
    static let start: Int64 = 1_767_225_600_000

    /// A 2 s MPEG-TS segment `n` (continuing the previous one) with these video and audio codecs; a nil audio codec
    /// is a PMT listing the audio with no audio PES in the segment, no audio is a PMT without it.
    static func segment(_ n: Int64, video: String = "avc1.42c01e", audio: String?? = .some("mp4a.40.2")) -> SegmentInfo
    {
        var tracks = [TrackInfo(kind: .video, codec: video, trackID: 256, timescale: 90_000)]
        if case .some(let codec) = audio {
            tracks.append(TrackInfo(kind: .audio, codec: codec, trackID: 257, timescale: 90_000))
        }
        return SegmentInfo(
            container: .mpegTS, tracks: tracks, startTime: MediaTime(ticks: 900_000 + n * 180_000, timescale: 90_000),
            duration: MediaTime(ticks: 180_000, timescale: 90_000), startsWithKeyframe: true, byteCount: 188)
    }

    /// The discontinuity flags of the entries accepted for `segments`, in order.
    static func discontinuities(_ segments: [SegmentInfo]) throws -> [Bool] {
        var state = ChannelState(
            configuration: ChannelConfiguration(name: "c", renditions: [.init(name: "r")]), firstMSN: 0)
        state.addRendition("r")
        var now = start
        return try segments.map { info in
            now += 2000
            return try state.accept(rendition: "r", bytes: SharedBytes([0x47]), info: info, nowMilliseconds: now)
                .result.get().discontinuity
        }
    }

    @Test func aSegmentWithoutAudioSamplesIsNoFormatChangeNorIsTheNextFullOne() throws {
        let segments = [Self.segment(0), Self.segment(1), Self.segment(2, audio: .some(nil)), Self.segment(3)]
        #expect(try Self.discontinuities(segments) == [false, false, false, false])
    }

    @Test func anotherVideoCodecStartsADiscontinuity() throws {
        let segments = [Self.segment(0), Self.segment(1), Self.segment(2, video: "avc1.64001f")]
        #expect(try Self.discontinuities(segments) == [false, false, true])
    }

    @Test func anotherAudioCodecOrATrackLeavingThePMTStartsADiscontinuity() throws {
        #expect(try Self.discontinuities([Self.segment(0), Self.segment(1, audio: "ac-3")]) == [false, true])
        #expect(try Self.discontinuities([Self.segment(0), Self.segment(1, audio: .none)]) == [false, true])
    }
}
