import TestSupport
import Testing

@testable import MediaProbe

/// Expected values come from ffprobe on init + segment concatenated (`-ignore_editlist 1` for raw timestamps).
@Suite("fMP4 init sections and segments", .offThePool)
struct FragmentedMP4ProbeTests {
    static let h264Tracks = [
        TrackInfo(
            kind: .video, codec: "avc1.64000b", width: 160, height: 90, frameRate: 30, trackID: 1, timescale: 15360,
            transferCharacteristics: 2, statedTransferCharacteristics: 2),
        TrackInfo(kind: .audio, codec: "mp4a.40.2", sampleRate: 48000, channelCount: 2, trackID: 2, timescale: 48000),
    ]

    @Test func h264InitSection() throws {
        let info = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        #expect(info.tracks == Self.h264Tracks)
        #expect(info.fragmentDefaults[1] == TrackFragmentDefaults(sampleDuration: 0, sampleSize: 0, sampleFlags: 0))
        #expect(info.fragmentDefaults.count == 2)
        #expect(MediaProbe.detectContainer(try Fixture.bytes("fmp4-h264-aac-init.mp4")) == .fragmentedMP4Init)
    }

    @Test func hevcInitSection() throws {
        let info = try Fixture.initSection("fmp4-hevc-init.mp4")
        #expect(
            info.tracks == [
                // The hvcC's SPS states 30 fps in its VUI timing info and no colour description (SDR).
                TrackInfo(
                    kind: .video, codec: "hvc1.1.6.L30.90", width: 160, height: 90, frameRate: 30, trackID: 1,
                    timescale: 15360, transferCharacteristics: 2, statedTransferCharacteristics: 2),
                TrackInfo(
                    kind: .audio, codec: "mp4a.40.2", sampleRate: 48000, channelCount: 2, trackID: 2, timescale: 48000),
            ])
    }

    @Test func h264Segments() throws {
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        let first = try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-0.m4s"), initSection: initInfo)
        #expect(first.container == .fragmentedMP4Segment)
        #expect(first.tracks == Self.h264Tracks)
        // tfdt 0 + composition offset 1024 of the first (IDR) sample; 60 samples of 512.
        #expect(first.startTime == MediaTime(ticks: 1024, timescale: 15360))
        #expect(first.duration == MediaTime(ticks: 30720, timescale: 15360))
        #expect(first.startsWithKeyframe)
        #expect(first.byteCount == 23849)
        let second = try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-1.m4s"), initSection: initInfo)
        #expect(second.startTime == MediaTime(ticks: 31744, timescale: 15360))
        #expect(second.duration == MediaTime(ticks: 30720, timescale: 15360))
        #expect(second.startTime.ticks == first.startTime.ticks + first.duration.ticks)
        #expect(second.startsWithKeyframe)
    }

    @Test func hevcSegment() throws {
        let initInfo = try Fixture.initSection("fmp4-hevc-init.mp4")
        let info = try MediaProbe.probeSegment(Fixture.bytes("fmp4-hevc-0.m4s"), initSection: initInfo)
        #expect(info.startTime == MediaTime(ticks: 1024, timescale: 15360))
        #expect(info.duration == MediaTime(ticks: 30720, timescale: 15360))
        #expect(info.startsWithKeyframe)
        // The init section's SPS (VUI timing) gives the frame rate, as does the sample duration (512 / 15360 s).
        #expect(info.tracks.first?.frameRate == 30)
    }

    @Test func audioOnlyWhenInitHasOnlyAudio() throws {
        var initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        initInfo.tracks.removeFirst()
        let info = try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-0.m4s"), initSection: initInfo)
        // ffprobe: 92 AAC frames of 1024 samples from pts 0.
        #expect(info.startTime == MediaTime(ticks: 0, timescale: 48000))
        #expect(info.duration == MediaTime(ticks: 92 * 1024, timescale: 48000))
        #expect(info.startsWithKeyframe)
    }

    @Test func selfInitializingSegment() throws {
        let bytes = try Fixture.bytes("fmp4-h264-aac-init.mp4") + Fixture.bytes("fmp4-h264-aac-1.m4s")
        #expect(MediaProbe.detectContainer(bytes) == .fragmentedMP4Init)
        let info = try MediaProbe.probeSegment(bytes)
        #expect(info.startTime == MediaTime(ticks: 31744, timescale: 15360))
        #expect(info.duration == MediaTime(ticks: 30720, timescale: 15360))
    }

    @Test func segmentWithoutInitSectionThrows() throws {
        let error = #expect(throws: ProbeError.self) {
            try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-0.m4s"))
        }
        #expect(error?.message.contains("init section") == true)
    }

    @Test func initSectionIsNotASegment() throws {
        let error = #expect(throws: ProbeError.self) {
            try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-init.mp4"))
        }
        #expect(error?.message == "this is an fMP4 initialization section (ftyp/moov), not a media segment")
    }

    @Test func segmentIsNotAnInitSection() throws {
        let error = #expect(throws: ProbeError.self) {
            try MediaProbe.probeInitSection(Fixture.bytes("fmp4-h264-aac-0.m4s"))
        }
        #expect(error?.message.hasPrefix("fMP4 init section: no 'moov' box") == true)
    }

    @Test func concatenatedFragmentsAddUp() throws {
        // Two moof+mdat pairs in one segment: durations add, start is the first fragment's.
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        let first = try Fixture.bytes("fmp4-h264-aac-0.m4s")
        let second = try Fixture.bytes("fmp4-h264-aac-1.m4s")
        let secondFragments = try Self.dropLeadingBoxes(second, types: ["styp", "sidx"])
        let info = try MediaProbe.probeSegment(first + secondFragments, initSection: initInfo)
        #expect(info.startTime == MediaTime(ticks: 1024, timescale: 15360))
        #expect(info.duration == MediaTime(ticks: 61440, timescale: 15360))
    }

    /// Removes leading top-level boxes of the given types (trun data offsets are relative to moof, so still valid).
    static func dropLeadingBoxes(_ bytes: [UInt8], types: Set<String>) throws -> [UInt8] {
        var offset = 0
        while offset + 8 <= bytes.count {
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            guard types.contains(type) else { break }
            offset += bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
        }
        return Array(bytes[offset...])
    }
}
