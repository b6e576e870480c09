import TestSupport
import Testing

@testable import MediaProbe

@Suite("ADTS, WebVTT and container detection", .offThePool)
struct PackedAudioAndDetectionTests {
    @Test func rawADTSSegment() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("audio.aac"))
        #expect(info.container == .adts)
        #expect(
            info.tracks == [
                TrackInfo(
                    kind: .audio, codec: "mp4a.40.2", sampleRate: 44100, channelCount: 1, trackID: 1,
                    timescale: 44100)
            ])
        // ffprobe -count_packets: 88 AAC frames of 1024 samples at 44.1 kHz.
        #expect(info.duration == MediaTime(ticks: 88 * 1024, timescale: 44100))
        #expect(info.startTime == MediaTime(ticks: 0, timescale: 90000))
        #expect(info.startsWithKeyframe)
    }

    @Test func adtsWithTransportStreamTimestamp() throws {
        let timestamp: UInt64 = (1 << 33) + 900_000  // bits above 33 are ignored
        let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
        let value = (0..<8).map { UInt8(truncatingIfNeeded: timestamp >> (56 - 8 * UInt64($0))) }
        let frameBody = owner + value
        let frame = Array("PRIV".utf8) + Self.bigEndian(UInt32(frameBody.count)) + [0, 0] + frameBody
        let tag = Array("ID3".utf8) + [4, 0, 0] + Self.syncSafe(frame.count) + frame
        let bytes = tag + (try Fixture.bytes("audio.aac"))
        #expect(MediaProbe.detectContainer(bytes) == .adts)
        let info = try MediaProbe.probeSegment(bytes)
        #expect(info.startTime == MediaTime(ticks: 900_000, timescale: 90000))
        #expect(info.duration == MediaTime(ticks: 88 * 1024, timescale: 44100))
    }

    @Test func truncatedADTSFrameThrows() throws {
        let bytes = try Fixture.bytes("audio.aac").dropLast(3)
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(Array(bytes)) }
        #expect(error?.message.contains("declares") == true)
    }

    @Test func webVTTSegment() throws {
        let text = "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\n\n00:00.000 --> 00:02.000\nHello\n"
        let bytes = Array(text.utf8)
        #expect(MediaProbe.detectContainer(bytes) == .webVTT)
        let info = try MediaProbe.probeSegment(bytes)
        #expect(info.container == .webVTT)
        #expect(info.startTime == MediaTime(ticks: 900000, timescale: 90000))
        #expect(info.tracks == [TrackInfo(kind: .subtitles, codec: "wvtt", trackID: 1, timescale: 90000)])
        #expect(MediaProbe.detectContainer([0xEF, 0xBB, 0xBF] + Array("WEBVTT\n".utf8)) == .webVTT)
        #expect(MediaProbe.detectContainer(Array("WEBVTTX".utf8)) == nil)
    }

    @Test(arguments: [
        ("ts-h264-aac-0.ts", MediaContainer.mpegTS), ("ts-aac-only.ts", .mpegTS), ("ts-hevc-aac.ts", .mpegTS),
        ("fmp4-h264-aac-init.mp4", .fragmentedMP4Init), ("fmp4-hevc-init.mp4", .fragmentedMP4Init),
        ("fmp4-h264-aac-0.m4s", .fragmentedMP4Segment), ("fmp4-hevc-0.m4s", .fragmentedMP4Segment),
        ("audio.aac", .adts),
    ])
    func detectsFixture(name: String, container: MediaContainer) throws {
        #expect(MediaProbe.detectContainer(try Fixture.bytes(name)) == container)
    }

    @Test func nonMediaIsRejected() throws {
        let bytes = try Fixture.bytes("not-media.txt")
        #expect(MediaProbe.detectContainer(bytes) == nil)
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes) }
        #expect(
            error?.message
                == "not a media segment: first bytes 54 68 69 73 20 69 73 20 are not MPEG-TS (sync byte 0x47), "
                + "fMP4 (styp/moof), ADTS (sync 0xFFF) or WEBVTT")
        #expect(throws: ProbeError.self) { try MediaProbe.probeInitSection(bytes) }
        #expect(MediaProbe.detectContainer([]) == nil)
        #expect(throws: ProbeError.self) { try MediaProbe.probeSegment([]) }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    static func syncSafe(_ value: Int) -> [UInt8] {
        [UInt8(value >> 21 & 0x7F), UInt8(value >> 14 & 0x7F), UInt8(value >> 7 & 0x7F), UInt8(value & 0x7F)]
    }
}
