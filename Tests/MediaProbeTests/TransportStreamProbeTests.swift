import TestSupport
import Testing

@testable import MediaProbe

/// Expected values come from `ffprobe -show_streams -show_packets` on the same fixture files.
@Suite("MPEG-TS segments", .offThePool)
struct TransportStreamProbeTests {
    @Test func h264AACSegmentFacts() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-aac-0.ts"))
        #expect(info.container == .mpegTS)
        #expect(info.byteCount == 33840)
        #expect(
            info.tracks == [
                TrackInfo(
                    kind: .video, codec: "avc1.4d400b", width: 160, height: 90, frameRate: 30, trackID: 256,
                    timescale: 90000, transferCharacteristics: 2, statedTransferCharacteristics: 2),
                TrackInfo(
                    kind: .audio, codec: "mp4a.40.2", sampleRate: 48000, channelCount: 2, trackID: 257,
                    timescale: 90000),
            ])
        // ffprobe: video start_pts 127920, 60 frames of 3000 ticks, last PTS 304920.
        #expect(info.startTime == MediaTime(ticks: 127920, timescale: 90000))
        #expect(info.duration == MediaTime(ticks: 180000, timescale: 90000))
        #expect(info.startsWithKeyframe)
        // ffmpeg writes the SDT (PID 0x11) before PAT and PMT.
        #expect(!info.startsWithPATAndPMT)
    }

    @Test func consecutiveSegmentsAreContiguous() throws {
        let first = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-aac-0.ts"))
        let second = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-aac-1.ts"))
        #expect(second.startTime == MediaTime(ticks: 307920, timescale: 90000))
        #expect(second.duration == MediaTime(ticks: 180000, timescale: 90000))
        #expect(second.startTime.ticks == first.startTime.ticks + first.duration.ticks)
        #expect(second.startsWithKeyframe)
    }

    @Test func bFramesUseLowestPTSNotFirstPTS() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-bframes.ts"))
        #expect(info.tracks.first?.codec == "avc1.64000b")
        #expect(info.tracks.first?.width == 160)
        #expect(info.tracks.first?.height == 90)
        // ffprobe: first packet pts 132000 dts 126000, highest pts 309000, frame duration 3000.
        #expect(info.startTime == MediaTime(ticks: 132000, timescale: 90000))
        #expect(info.duration == MediaTime(ticks: 180000, timescale: 90000))
        #expect(info.startsWithKeyframe)
    }

    @Test func hevcSegmentFacts() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-hevc-aac.ts"))
        // libx265 Main, level 30 (level 1), progressive_source + frame_only constraint flags (0x90).
        #expect(
            info.tracks.first
                == TrackInfo(
                    kind: .video, codec: "hvc1.1.6.L30.90", width: 160, height: 90, frameRate: 30, trackID: 256,
                    timescale: 90000, transferCharacteristics: 2, statedTransferCharacteristics: 2))
        #expect(info.startTime == MediaTime(ticks: 132000, timescale: 90000))
        #expect(info.duration == MediaTime(ticks: 180000, timescale: 90000))
        #expect(info.startsWithKeyframe)
    }

    @Test func audioOnlySegmentUsesADTSFrameCount() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-aac-only.ts"))
        #expect(
            info.tracks == [
                TrackInfo(
                    kind: .audio, codec: "mp4a.40.2", sampleRate: 48000, channelCount: 2, trackID: 256,
                    timescale: 90000)
            ])
        // ffprobe: 95 AAC frames of 1920 ticks from pts 126000.
        #expect(info.startTime == MediaTime(ticks: 126000, timescale: 90000))
        #expect(info.duration == MediaTime(ticks: 95 * 1920, timescale: 90000))
        #expect(info.startsWithKeyframe)
    }

    @Test func ptsWrapInsideSegment() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-pts-wrap.ts"))
        // ffprobe shows start_pts -1592 after its own unwrapping: the raw 33-bit PTS is 2^33 - 1592.
        #expect(info.startTime == MediaTime(ticks: (1 << 33) - 1592, timescale: 90000))
        #expect(info.duration == MediaTime(ticks: 180000, timescale: 90000))
        #expect(info.startsWithKeyframe)
    }

    @Test func patAndPMTFirstWhenSDTRemoved() throws {
        let bytes = try Fixture.bytes("ts-h264-aac-0.ts")
        #expect(bytes[1] & 0x1F == 0 && bytes[2] == 0x11)  // packet 0 is the SDT
        let info = try MediaProbe.probeSegment(Array(bytes.dropFirst(188)))
        #expect(info.startsWithPATAndPMT)
        #expect(info.startTime == MediaTime(ticks: 127920, timescale: 90000))
    }

    @Test func segmentWithoutIDRIsNotKeyframe() throws {
        // Replace the IDR NAL type (5) with a non-IDR slice (1) in the first video PES.
        var bytes = try Fixture.bytes("ts-h264-aac-0.ts")
        let firstVideoPacket = try #require(
            stride(from: 0, to: bytes.count, by: 188).first {
                (Int(bytes[$0 + 1] & 0x1F) << 8 | Int(bytes[$0 + 2])) == 256
            })
        var patched = false
        // x264's SEI makes the first PES span packets; the IDR slice header follows within the first few.
        for index in (firstVideoPacket + 4)..<(firstVideoPacket + 188 * 8) where !patched {
            if bytes[index] == 0, bytes[index + 1] == 0, bytes[index + 2] == 1, bytes[index + 3] & 0x1F == 5 {
                bytes[index + 3] = bytes[index + 3] & 0xE0 | 1
                patched = true
            }
        }
        try #require(patched)
        let info = try MediaProbe.probeSegment(bytes)
        #expect(!info.startsWithKeyframe)
    }

    @Test func ptsUnwrap() {
        let top: Int64 = 1 << 33
        #expect(MPEGTimestamp.unwrap(100, near: top - 50) == top + 100)
        #expect(MPEGTimestamp.unwrap(top - 50, near: 100) == -50)
        #expect(MPEGTimestamp.unwrap(5000, near: 4000) == 5000)
    }
}
