import TestSupport
import Testing

@testable import MediaProbe

/// Where each keyframe's bytes are. The expected offsets were found with a separate TS / MP4 box walker and checked
/// once by hand with ffmpeg 5.1.9: `head -c END segment | ffprobe -count_frames -show_entries stream=nb_read_frames`
/// (fMP4: the init section, then the segment's first END bytes) decodes exactly one video frame, an I frame, and
/// one byte less decodes none.
@Suite("Keyframe byte ranges", .offThePool)
struct KeyframeRangeTests {
    @Test("MPEG-TS, two GOPs per segment: every keyframe PES, the first behind SDT, PAT and PMT")
    func transportStreamTwoKeyframes() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-two-gops-0.ts"))
        // Packets: SDT, PAT, PMT, then the IDR's PES in packets 3...11; PAT and PMT again at 86 and 87 before the
        // second IDR (packets 88...94).
        #expect(info.keyframes.map(\.start) == [564, 16544])
        #expect(info.keyframes.map(\.end) == [2256, 17860])
        #expect(info.keyframes.map(\.followsProgramTables) == [true, true])
        #expect(info.keyframes[0].presentationTime == info.startTime)
        #expect(info.keyframes[1].presentationTime.ticks - info.keyframes[0].presentationTime.ticks == 90000)
        #expect(info.iFrameRangeEnd == 2256)
    }

    @Test("MPEG-TS, one GOP per segment: one keyframe; B-frames and HEVC change nothing")
    func transportStreamOneKeyframe() throws {
        let plain = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-aac-0.ts"))
        #expect(plain.keyframes.map { $0.start..<$0.end } == [564..<2256])
        #expect(plain.iFrameRangeEnd == 2256)
        let bFrames = try MediaProbe.probeSegment(Fixture.bytes("ts-h264-bframes.ts"))
        #expect(bFrames.keyframes.map { $0.start..<$0.end } == [564..<2444])
        // HEVC: the first VCL NAL unit is IDR_N_LP (20), an IRAP picture.
        let hevc = try MediaProbe.probeSegment(Fixture.bytes("ts-hevc-aac.ts"))
        #expect(hevc.keyframes.map { $0.start..<$0.end } == [564..<4888])
    }

    @Test("MPEG-TS without PSI before the second keyframe: followsProgramTables is false there")
    func transportStreamWithoutRepeatedTables() throws {
        var bytes = try Fixture.bytes("ts-h264-two-gops-0.ts")
        // Turn the repeated PAT and PMT (packets 86, 87) into null packets (PID 0x1FFF).
        for packet in [86, 87] {
            bytes[packet * 188 + 1] = 0x1F
            bytes[packet * 188 + 2] = 0xFF
        }
        let info = try MediaProbe.probeSegment(bytes)
        #expect(info.keyframes.map(\.start) == [564, 16544])
        #expect(info.keyframes.map(\.followsProgramTables) == [true, false])
    }

    @Test("audio-only segments have no keyframes and no I-frame range")
    func audioOnly() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-aac-only.ts"))
        #expect(info.keyframes.isEmpty)
        #expect(info.iFrameRangeEnd == nil)
    }

    @Test("fMP4 (ffmpeg HLS, styp + 2 sidx + moof): from the moof to the end of the IDR sample")
    func fragmentedOneFragment() throws {
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        let first = try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-0.m4s"), initSection: initInfo)
        #expect(first.keyframes.map { $0.start..<$0.end } == [128..<2870])
        #expect(first.keyframes.map(\.followsProgramTables) == [false])
        #expect(first.keyframes.first?.presentationTime == first.startTime)
        #expect(first.iFrameRangeEnd == 2870)
        let second = try MediaProbe.probeSegment(Fixture.bytes("fmp4-h264-aac-1.m4s"), initSection: initInfo)
        #expect(second.iFrameRangeEnd == 2973)
        let hevc = try MediaProbe.probeSegment(
            Fixture.bytes("fmp4-hevc-0.m4s"), initSection: Fixture.initSection("fmp4-hevc-init.mp4"))
        #expect(hevc.iFrameRangeEnd == 3217)
    }

    @Test("fMP4 with one moof per GOP: each keyframe starts at its own moof")
    func fragmentedOneMoofPerGOP() throws {
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        let first = try Fixture.bytes("fmp4-h264-aac-0.m4s")
        let second = try FragmentedMP4ProbeTests.dropLeadingBoxes(
            Fixture.bytes("fmp4-h264-aac-1.m4s"), types: ["styp", "sidx"])
        let info = try MediaProbe.probeSegment(first + second, initSection: initInfo)
        let moof = first.count
        #expect(info.keyframes.map { $0.start..<$0.end } == [128..<2870, moof..<(moof + 2973 - 128)])
        #expect(info.iFrameRangeEnd == 2870)
    }

    // MARK: - Hand-built fragments: flags from trex, first_sample_flags, base_data_offset, two trafs

    static let sync: UInt32 = 0x0200_0000
    static let nonSync: UInt32 = 0x0101_0000

    static func videoInit(trexFlags: UInt32) -> InitSectionInfo {
        InitSectionInfo(
            tracks: [
                TrackInfo(kind: .video, codec: "avc1.64001f", trackID: 1, timescale: 90000),
                TrackInfo(kind: .audio, codec: "mp4a.40.2", trackID: 2, timescale: 48000),
            ],
            fragmentDefaults: [
                1: TrackFragmentDefaults(sampleDuration: 3000, sampleSize: 0, sampleFlags: trexFlags),
                2: TrackFragmentDefaults(sampleDuration: 1024, sampleSize: 0, sampleFlags: 0),
            ])
    }

    typealias Box = SubtitleFragmentTests

    /// A traf with a trun of per-sample sizes (and flags when given), data_offset `dataOffset`.
    static func traf(
        trackID: Int, tfhdFlags: Int = 0x02_0000, baseDataOffset: Int? = nil, firstSampleFlags: UInt32? = nil,
        sizes: [Int], flags: [UInt32]? = nil, dataOffset: Int?
    ) -> [UInt8] {
        let tfhd = Box.fullBox(
            "tfhd", flags: tfhdFlags | (baseDataOffset == nil ? 0 : 1),
            Box.be32(trackID) + (baseDataOffset.map(Box.be64) ?? []))
        let tfdt = Box.fullBox("tfdt", version: 1, Box.be64(9000))
        var trunFlags = 0x200
        var body = Box.be32(sizes.count)
        if let dataOffset {
            trunFlags |= 0x01
            body += Box.be32(dataOffset)
        }
        if let firstSampleFlags {
            trunFlags |= 0x04
            body += Box.be32(Int(firstSampleFlags))
        }
        if flags != nil { trunFlags |= 0x400 }
        for (index, size) in sizes.enumerated() {
            body += Box.be32(size)
            if let flags { body += Box.be32(Int(flags[index])) }
        }
        return Box.box("traf", tfhd + tfdt + Box.fullBox("trun", flags: trunFlags, body))
    }

    /// `prefix` bytes of styp (a multiple of 4, at least 16), moof (with the trafs `make(dataStart)` builds, given where the mdat
    /// payload starts), then an mdat of `payload` bytes.
    static func segment(prefix: Int = 0, payload: Int, _ make: (Int) -> [[UInt8]]) -> [UInt8] {
        // A styp of `prefix` bytes: major brand, minor version, then compatible brands.
        let brands = (prefix - 16) / 4
        let head =
            prefix > 0
            ? Box.box(
                "styp", Array("msdh".utf8) + Box.be32(0) + Array(repeating: Array("msdh".utf8), count: brands).joined())
            : []
        let probe = Box.box("moof", Box.fullBox("mfhd", Box.be32(1)) + make(0).joined())
        let dataStart = head.count + probe.count + 8
        let moof = Box.box("moof", Box.fullBox("mfhd", Box.be32(1)) + make(dataStart).joined())
        return head + moof + Box.box("mdat", [UInt8](repeating: 0x55, count: payload))
    }

    @Test("fMP4: sync samples found from trex defaults, first_sample_flags and per-sample flags")
    func fragmentedFlagSources() throws {
        // trex says sync for every sample (all-intra): three keyframes, each ending at its sample's end.
        let allIntra = Self.segment(prefix: 40, payload: 600) { dataStart in
            [Self.traf(trackID: 1, sizes: [100, 200, 300], dataOffset: dataStart - 40)]
        }
        let intra = try MediaProbe.probeSegment(allIntra, initSection: Self.videoInit(trexFlags: Self.sync))
        let mdatPayload = allIntra.count - 600
        #expect(intra.keyframes.map(\.start) == [40, 40, 40])
        #expect(intra.keyframes.map(\.end) == [mdatPayload + 100, mdatPayload + 300, mdatPayload + 600])
        #expect(intra.keyframes.map(\.presentationTime.ticks) == [9000, 12000, 15000])

        // trex says non-sync; first_sample_flags makes sample 0 sync.
        let firstFlag = Self.segment(payload: 600) { dataStart in
            [Self.traf(trackID: 1, firstSampleFlags: Self.sync, sizes: [100, 200, 300], dataOffset: dataStart)]
        }
        let first = try MediaProbe.probeSegment(firstFlag, initSection: Self.videoInit(trexFlags: Self.nonSync))
        #expect(first.startsWithKeyframe)
        #expect(first.keyframes.map(\.end) == [firstFlag.count - 500])
        #expect(first.iFrameRangeEnd == firstFlag.count - 500)

        // Per-sample flags: the second sample is the keyframe; the segment does not start with one.
        let perSample = Self.segment(payload: 600) { dataStart in
            [
                Self.traf(
                    trackID: 1, sizes: [100, 200, 300], flags: [Self.nonSync, Self.sync, Self.nonSync],
                    dataOffset: dataStart)
            ]
        }
        let late = try MediaProbe.probeSegment(perSample, initSection: Self.videoInit(trexFlags: Self.sync))
        #expect(!late.startsWithKeyframe)
        #expect(late.keyframes.map(\.end) == [perSample.count - 300])
        #expect(late.iFrameRangeEnd == nil)
    }

    @Test("fMP4: base_data_offset, and a second traf without default-base-is-moof continuing the first's data")
    func fragmentedDataOffsets() throws {
        // Audio traf first (explicit base_data_offset = mdat payload), then the video traf with neither
        // base_data_offset nor default-base-is-moof: its data follows the audio's 50 bytes.
        let bytes = Self.segment(payload: 350) { dataStart in
            [
                Self.traf(
                    trackID: 2, tfhdFlags: 0, baseDataOffset: dataStart, sizes: [50], flags: [0], dataOffset: nil),
                Self.traf(trackID: 1, tfhdFlags: 0, sizes: [300], dataOffset: nil),
            ]
        }
        let info = try MediaProbe.probeSegment(bytes, initSection: Self.videoInit(trexFlags: Self.sync))
        #expect(info.keyframes.map { $0.start..<$0.end } == [0..<bytes.count])
        #expect(info.iFrameRangeEnd == bytes.count)
    }

    @Test("fMP4: a trun whose data runs past the end keeps the older truncation message")
    func fragmentedTruncatedKeepsTheTruncationMessage() throws {
        // With a trun data_offset, the older "truncated?" check names the fault first.
        let bytes = Self.segment(payload: 100) { dataStart in
            [Self.traf(trackID: 1, sizes: [160], dataOffset: dataStart)]
        }
        let error = #expect(throws: ProbeError.self) {
            try MediaProbe.probeSegment(bytes, initSection: Self.videoInit(trexFlags: Self.sync))
        }
        #expect(error?.message.hasSuffix("(truncated?)") == true)
    }

    @Test("fMP4: a keyframe sample placed past the segment's end by base_data_offset is a probe error naming it")
    func fragmentedPastTheEnd() throws {
        // Placed by base_data_offset (no trun data_offset, so the trun's own data check does not apply).
        let bytes = Self.segment(payload: 100) { dataStart in
            [Self.traf(trackID: 1, tfhdFlags: 0, baseDataOffset: dataStart, sizes: [160], dataOffset: nil)]
        }
        let error = #expect(throws: ProbeError.self) {
            try MediaProbe.probeSegment(bytes, initSection: Self.videoInit(trexFlags: Self.sync))
        }
        let start = bytes.count - 100
        #expect(
            error?.message
                == "fMP4 segment: track 1 keyframe sample data at \(start)..\(start + 160) runs past the segment's "
                + "\(bytes.count) bytes")
    }
}
