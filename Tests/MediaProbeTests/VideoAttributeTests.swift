import TestSupport
import Testing

@testable import MediaProbe

/// VIDEO-RANGE, FRAME-RATE and Dolby Vision facts (docs/media-probe.md). Fixtures: scripts/make-probe-fixtures
/// section 13 (libx264/libx265 with ffmpeg's colour options); expected values as ffprobe reports them.
@Suite("Video attributes: VUI colour and timing, colr, Dolby Vision", .offThePool)
struct VideoAttributeTests {
    static func video(_ name: String) throws -> TrackInfo {
        try #require(MediaProbe.probeSegment(Fixture.bytes(name)).tracks.first { $0.kind == .video })
    }

    static func hevcSPS(_ name: String) throws -> HEVCSequenceParameterSet {
        let bytes = try Fixture.bytes(name)
        let sps = try #require(CodecStringTests.firstNAL(in: bytes, type: NALUnits.hevcSPS, hevc: true))
        return try HEVCSequenceParameterSet(rbsp: sps.withUnsafeBytes { NALUnits.rbsp($0) })
    }

    @Test func hevcVUIStatesPQAnd2997() throws {
        let sps = try Self.hevcSPS("ts-hevc-pq-2997.ts")
        #expect(sps.transferCharacteristics == 16)
        #expect(sps.frameRate == 30000.0 / 1001)
        let track = try Self.video("ts-hevc-pq-2997.ts")
        #expect(track.transferCharacteristics == 16)
        #expect(track.codec?.hasPrefix("hvc1.2.4.") == true)  // Main 10
        #expect(track.frameRate == 30000.0 / 1001)
    }

    @Test func hevcVUIStatesHLGAnd50() throws {
        let sps = try Self.hevcSPS("ts-hevc-hlg-50.ts")
        #expect(sps.transferCharacteristics == 18)
        #expect(sps.frameRate == 50)
        #expect(try Self.video("ts-hevc-hlg-50.ts").transferCharacteristics == 18)
    }

    @Test func hevcWithoutColourDescriptionIsSDRWithItsVUIRate() throws {
        let sps = try Self.hevcSPS("ts-hevc-aac.ts")
        #expect(sps.transferCharacteristics == nil)
        #expect(sps.frameRate == 30)
        #expect(try Self.video("ts-hevc-aac.ts").transferCharacteristics == 2)  // unspecified: SDR
    }

    @Test func h264VUIStatesPQAnd25() throws {
        let track = try Self.video("ts-h264-pq-25.ts")
        #expect(track.transferCharacteristics == 16)
        #expect(track.frameRate == 25)
    }

    @Test func h264InterlacedCountsFramesNotFields() throws {
        // time_scale 60000, num_units_in_tick 1001: one tick per field, so 29.97 frames per second.
        let track = try Self.video("ts-h264-interlaced-2997.ts")
        #expect(track.frameRate == 30000.0 / 1001)
        #expect(track.height == 64)
        #expect(track.transferCharacteristics == 1)  // BT.709: SDR
    }

    @Test func h264WithoutColourDescriptionIsSDR() throws {
        #expect(try Self.video("ts-h264-aac-0.ts").transferCharacteristics == 2)
    }

    @Test func fmp4HEVCInitReadsHvcCSPSAndColr() throws {
        let info = try Fixture.initSection("fmp4-hevc-pq-init.mp4")
        let video = try #require(info.tracks.first)
        #expect(video.transferCharacteristics == 16)
        #expect(video.frameRate == 24)
        #expect(video.supplementalCodec == nil)
    }

    @Test func fmp4ColrBoxWinsOverTheSPS() throws {
        // colr nclx says HLG (18); the SPS was rewritten to BT.709 (1): the container's statement is taken.
        let info = try Fixture.initSection("fmp4-h264-colr-hlg-init.mp4")
        #expect(info.tracks.first?.transferCharacteristics == 18)
        #expect(info.tracks.first?.frameRate == 30)
    }

    @Test func fmp4WithoutColourInformationIsSDR() throws {
        #expect(try Fixture.initSection("fmp4-h264-aac-init.mp4").tracks.first?.transferCharacteristics == 2)
        #expect(try Fixture.initSection("fmp4-hevc-init.mp4").tracks.first?.transferCharacteristics == 2)
    }

    /// A DOVIDecoderConfigurationRecord: version 1.0, the profile, level, rpu + bl present, the compatibility id.
    static func doviRecord(profile: UInt8, level: UInt8, compatibility: UInt8) -> [UInt8] {
        let bits = UInt16(profile) << 9 | UInt16(level) << 3 | 0b101
        return [1, 0, UInt8(bits >> 8), UInt8(bits & 0xFF), compatibility << 4] + [UInt8](repeating: 0, count: 19)
    }

    @Test func dolbyVisionRecordGivesTheSupplementalCodec() throws {
        let p81 = try DolbyVisionConfiguration(record: Self.doviRecord(profile: 8, level: 7, compatibility: 1))
        #expect(p81 == DolbyVisionConfiguration(profile: 8, level: 7, compatibilityID: 1))
        #expect(p81.supplementalCodec(baseSampleEntry: "hvc1", transferCharacteristics: 16) == "dvh1.08.07/db1p")
        #expect(p81.supplementalCodec(baseSampleEntry: "hev1", transferCharacteristics: 16) == "dvhe.08.07/db1p")
        let p84 = try DolbyVisionConfiguration(record: Self.doviRecord(profile: 8, level: 10, compatibility: 4))
        #expect(p84.supplementalCodec(baseSampleEntry: "hvc1", transferCharacteristics: 18) == "dvh1.08.10/db4h")
        #expect(p84.supplementalCodec(baseSampleEntry: "hvc1", transferCharacteristics: 14) == "dvh1.08.10/db4g")
        let p10 = try DolbyVisionConfiguration(record: Self.doviRecord(profile: 10, level: 9, compatibility: 2))
        #expect(p10.supplementalCodec(baseSampleEntry: "av01", transferCharacteristics: 1) == "dav1.10.09/db2g")
        let p5 = try DolbyVisionConfiguration(record: Self.doviRecord(profile: 5, level: 6, compatibility: 0))
        #expect(p5.supplementalCodec(baseSampleEntry: "hvc1", transferCharacteristics: nil) == nil)
        #expect(p5.codec(sampleEntry: "dvh1") == "dvh1.05.06")
        #expect(throws: ProbeError.self) { try DolbyVisionConfiguration(record: [1, 0, 0x10]) }
        let version0 = [0] + Self.doviRecord(profile: 8, level: 7, compatibility: 1)
        #expect(throws: ProbeError.self) { try DolbyVisionConfiguration(record: version0) }
    }

    @Test func fmp4DolbyVisionBoxAddsTheSupplementalCodec() throws {
        // The HDR10 init section with a dvvC box (profile 8.1, level 7) added to its hvc1 sample entry.
        let body = Self.doviRecord(profile: 8, level: 7, compatibility: 1)
        let bytes = try Self.insertingBox(
            "dvvC", body: body, into: ["moov", "trak", "mdia", "minf", "stbl", "stsd", "hvc1"],
            of: Fixture.bytes("fmp4-hevc-pq-init.mp4"))
        let video = try #require(MediaProbe.probeInitSection(bytes).tracks.first)
        #expect(video.supplementalCodec == "dvh1.08.07/db1p")
        #expect(video.codec?.hasPrefix("hvc1.2.4.") == true)
        #expect(video.transferCharacteristics == 16)
    }

    @Test func transportStreamDOVIDescriptorAddsTheSupplementalCodec() throws {
        // A PMT with one HEVC stream (0x24, PID 0x100) carrying a DOVI video stream descriptor (0xB0).
        let descriptor: [UInt8] = [0xB0, 5] + Array(Self.doviRecord(profile: 8, level: 6, compatibility: 1).prefix(5))
        var section: [UInt8] = [0x02, 0, 0, 0x00, 0x01, 0xC1, 0, 0, 0xE1, 0x00, 0xF0, 0x00]
        section += [0x24, 0xE1, 0x00, 0xF0, UInt8(descriptor.count)] + descriptor + [0, 0, 0, 0]
        section[1] = 0xB0
        section[2] = UInt8(section.count - 3)
        let streams = try section.withUnsafeBytes { buffer throws(ProbeError) in
            try ProgramTables.programMap(buffer, pmt: 0..<buffer.count).streams
        }
        #expect(streams.first?.dolbyVision == DolbyVisionConfiguration(profile: 8, level: 6, compatibilityID: 1))
        var state = ElementaryStreamState(pid: 0x100, streamType: 0x24)
        state.dolbyVision = streams.first?.dolbyVision
        state.codec = "hvc1.2.4.L90.B0"
        #expect(state.trackInfo.supplementalCodec == "dvh1.08.06/db1p")
    }

    @Test func doviDescriptorOnAnAudioStreamLeavesItsCodecAlone() throws {
        // A PMT with an AAC stream (0x0F, PID 0x101) carrying a (misplaced) DOVI descriptor of profile 5.
        let descriptor: [UInt8] = [0xB0, 5] + Array(Self.doviRecord(profile: 5, level: 6, compatibility: 0).prefix(5))
        var section: [UInt8] = [0x02, 0, 0, 0x00, 0x01, 0xC1, 0, 0, 0xE1, 0x01, 0xF0, 0x00]
        section += [0x0F, 0xE1, 0x01, 0xF0, UInt8(descriptor.count)] + descriptor + [0, 0, 0, 0]
        section[1] = 0xB0
        section[2] = UInt8(section.count - 3)
        let streams = try section.withUnsafeBytes { buffer throws(ProbeError) in
            try ProgramTables.programMap(buffer, pmt: 0..<buffer.count).streams
        }
        #expect(streams.first?.dolbyVision == nil)
        var state = ElementaryStreamState(pid: 0x101, streamType: 0x0F)
        state.dolbyVision = DolbyVisionConfiguration(profile: 5, level: 6, compatibilityID: 0)
        state.codec = "mp4a.40.2"
        #expect(state.trackInfo.codec == "mp4a.40.2")
        #expect(state.trackInfo.supplementalCodec == nil)
    }

    @Test func dolbyVisionCompatibilityDecidesTheRange() {
        // bl_signal_compatibility_id 0 (profile 5) and 1 are PQ, 4 HLG (even with the BT.2020 transfer 14 an
        // iPhone's profile 8.4 puts in its VUI), 2 SDR (BT.709's 1); other ids keep what the SPS says.
        for (id, transfer, expected): (Int, UInt8?, UInt8) in [
            (0, nil, 16), (1, 1, 16), (4, 14, 18), (2, 16, 1), (6, 16, 16), (6, 1, 1),
        ] {
            var state = ElementaryStreamState(pid: 0x100, streamType: 0x24)
            state.dolbyVision = DolbyVisionConfiguration(profile: 8, level: 6, compatibilityID: id)
            state.codec = "hvc1.2.4.L90.B0"
            state.transferCharacteristics = transfer
            let stated = transfer.map(String.init) ?? "none"
            #expect(state.trackInfo.transferCharacteristics == expected, "compatibility id \(id), transfer \(stated)")
        }
        var plain = ElementaryStreamState(pid: 0x100, streamType: 0x24)
        #expect(plain.trackInfo.transferCharacteristics == nil)  // no SPS read: no range stated
        plain.codec = "hvc1.1.6.L93.B0"
        #expect(plain.trackInfo.transferCharacteristics == 2)
    }

    @Test func fmp4DolbyVisionHLGCompatibleIsHLGWhateverTheSPSSays() throws {
        let bytes = try Self.insertingBox(
            "dvvC", body: Self.doviRecord(profile: 8, level: 4, compatibility: 4),
            into: ["moov", "trak", "mdia", "minf", "stbl", "stsd", "hvc1"], of: Fixture.bytes("fmp4-hevc-init.mp4"))
        let video = try #require(MediaProbe.probeInitSection(bytes).tracks.first)
        #expect(video.transferCharacteristics == 18)
        #expect(video.supplementalCodec == "dvh1.08.04/db4h")
    }

    /// A `colr` box body: colour type and, for nclx, primaries 9, `transfer`, matrix 9 and the full-range byte.
    static func colr(_ type: String, transfer: UInt16 = 0) -> [UInt8] {
        let nclx: [UInt8] = [0, 9, UInt8(transfer >> 8), UInt8(transfer & 0xFF), 0, 9, 0]
        let body: [UInt8] = type == "nclx" ? nclx : [0, 0, 0, 0]
        return Array(type.utf8) + body
    }

    @Test func fmp4ICCProfileColrIsSkippedForTheNclxAfterIt() throws {
        let path = ["moov", "trak", "mdia", "minf", "stbl", "stsd", "hvc1"]
        var bytes = try Self.insertingBox(
            "colr", body: Self.colr("prof"), into: path, of: Fixture.bytes("fmp4-hevc-init.mp4"))
        bytes = try Self.insertingBox("colr", body: Self.colr("nclx", transfer: 18), into: path, of: bytes)
        #expect(try MediaProbe.probeInitSection(bytes).tracks.first?.transferCharacteristics == 18)
    }

    @Test func fmp4NclxWithUnspecifiedTransferLeavesTheSPSRange() throws {
        // The PQ init section's colr nclx rewritten to transfer 2 (unspecified): the SPS's PQ stands.
        var bytes = try Fixture.bytes("fmp4-hevc-pq-init.mp4")
        let nclx = try #require(
            (0..<(bytes.count - 8)).first { Array(bytes[$0..<($0 + 8)]) == Array("colrnclx".utf8) })
        bytes[nclx + 10] = 0
        bytes[nclx + 11] = 2
        #expect(try MediaProbe.probeInitSection(bytes).tracks.first?.transferCharacteristics == 16)
    }

    /// The init section `fixture` with its `hvc1` sample entry renamed `dvh1`.
    static func dvh1Entry(_ fixture: String) throws -> [UInt8] {
        var bytes = try Fixture.bytes(fixture)
        let hvc1 = try #require((0..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == Array("hvc1".utf8) })
        bytes.replaceSubrange(hvc1..<(hvc1 + 4), with: Array("dvh1".utf8))
        return bytes
    }

    @Test func dolbyVisionSampleEntryWithoutAUsableDvcCIsNamedByItsHEVCBase() throws {
        let dvh1 = try Self.dvh1Entry("fmp4-hevc-init.mp4")
        let bare = try #require(MediaProbe.probeInitSection(dvh1).tracks.first?.codec)
        #expect(bare.hasPrefix("hvc1."), "\(bare)")
        let badRecord = [0] + Self.doviRecord(profile: 5, level: 6, compatibility: 0)
        let bad = try Self.insertingBox(
            "dvcC", body: badRecord, into: ["moov", "trak", "mdia", "minf", "stbl", "stsd", "dvh1"], of: dvh1)
        #expect(try MediaProbe.probeInitSection(bad).tracks.first?.codec?.hasPrefix("hvc1.") == true)
        let good = try Self.insertingBox(
            "dvcC", body: Self.doviRecord(profile: 5, level: 6, compatibility: 0),
            into: ["moov", "trak", "mdia", "minf", "stbl", "stsd", "dvh1"], of: dvh1)
        let video = try #require(MediaProbe.probeInitSection(good).tracks.first)
        #expect(video.codec == "dvh1.05.06")
        #expect(video.transferCharacteristics == 16)
    }

    @Test func supplementalCodecsOnlyForTheCompatibilityIDsWithABrand() {
        for id in [1, 2, 4] {
            let config = DolbyVisionConfiguration(profile: 8, level: 6, compatibilityID: id)
            #expect(config.supplementalCodec(baseSampleEntry: "hvc1", transferCharacteristics: 16) != nil)
        }
        for id in [0, 3, 6, 15] {  // 6 is Blu-ray (profile 7), the others reserved
            let config = DolbyVisionConfiguration(profile: 7, level: 6, compatibilityID: id)
            #expect(config.supplementalCodec(baseSampleEntry: "hvc1", transferCharacteristics: 16) == nil)
        }
    }

    @Test func implausibleVUIFrameRateGivesWayToThePresentationTimes() {
        #expect(VideoUsability.plausible(300) == 300)
        #expect(VideoUsability.plausible(600) == nil)
        var state = ElementaryStreamState(pid: 0x100, streamType: 0x1B)
        state.frameRate = 120  // a VUI that says 120 while the frames come every 40 ms
        state.presentationTimes = (0..<10).map { Int64($0) * 3600 }
        #expect(state.trackInfo.frameRate == 25)
        state.frameRate = 30000.0 / 1001  // agrees within 2x: the VUI's exact rate is kept
        state.presentationTimes = (0..<10).map { Int64($0) * 3003 }
        #expect(state.trackInfo.frameRate == 30000.0 / 1001)
    }

    @Test func everyTruncationOfARealSPSParsesOrThrows() throws {
        // Prefixes of real parameter sets end in every field of the SPS and its VUI: each must throw or parse,
        // never trap, and a prefix that reaches the picture size keeps its codec and size even when the VUI is cut
        // (a VUI cut short costs only the colour and rate facts).
        let hevcTS = try Fixture.bytes("ts-hevc-pq-2997.ts")
        let hevc = try #require(CodecStringTests.firstNAL(in: hevcTS, type: NALUnits.hevcSPS, hevc: true))
        let firstHEVC = try Self.firstParsingPrefix(of: hevc) { rbsp in
            let sps = try HEVCSequenceParameterSet(rbsp: rbsp)
            return (sps.codec(), sps.width, sps.height)
        }
        // The picture size ends well before the VUI: some prefixes parse without their colour facts.
        #expect((firstHEVC ?? hevc.count) < hevc.count - 8)
        let h264 = try #require(CodecStringTests.firstNAL(in: Fixture.bytes("ts-h264-pq-25.ts"), type: 7))
        let firstH264 = try Self.firstParsingPrefix(of: h264) { rbsp in
            let sps = try H264SequenceParameterSet(rbsp: rbsp)
            return (sps.codec(), sps.width, sps.height)
        }
        #expect((firstH264 ?? h264.count) < h264.count - 4)
        // All ones: every exp-Golomb code is 0 and every flag set (scaling lists, PCM, long-term pictures...).
        var hostile = Array(hevc.prefix(20))
        hostile += [UInt8](repeating: 0xFF, count: 200)
        _ = try? HEVCSequenceParameterSet(rbsp: hostile)
        // Long runs of zeros: exp-Golomb codes longer than 32 bits throw.
        _ = try? HEVCSequenceParameterSet(rbsp: Array(hevc.prefix(20)) + [UInt8](repeating: 0, count: 200))
        let implausibleRate = VideoUsability.plausible(4_000_000_000)
        #expect(implausibleRate == nil)
    }

    /// Parses every prefix of `unit` (a whole SPS NAL unit) with `parse`: none may trap, and once a prefix parses,
    /// every longer one does too, with the whole unit's codec and picture size. Returns the shortest that parsed.
    static func firstParsingPrefix(
        of unit: [UInt8], _ parse: ([UInt8]) throws -> (codec: String, width: Int, height: Int)
    ) throws -> Int? {
        let whole = try parse(unit.withUnsafeBytes { NALUnits.rbsp($0) })
        var first: Int?
        for length in 0..<unit.count {
            let rbsp = Array(unit.prefix(length)).withUnsafeBytes { NALUnits.rbsp($0) }
            if let parsed = try? parse(rbsp) {
                first = first ?? length
                #expect(parsed.codec == whole.codec && parsed.width == whole.width && parsed.height == whole.height)
            } else if let first {
                Issue.record("prefix of \(length) bytes fails though \(first) bytes reached the picture size")
            }
        }
        return first
    }

    /// `bytes` with a box `type`/`body` appended to the children of the box at `path` (each step the first box of
    /// that type, searched from the parent's content start), every ancestor's 32-bit size grown to match.
    static func insertingBox(_ type: String, body: [UInt8], into path: [String], of bytes: [UInt8]) throws -> [UInt8] {
        let box = withUnsafeBytes(of: UInt32(8 + body.count).bigEndian, Array.init) + Array(type.utf8) + body
        var ancestors: [Int] = []
        var searchFrom = 0
        for step in path {
            let needle = Array(step.utf8)
            let at = try #require(
                (searchFrom..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == needle }, "no \(step) box")
            ancestors.append(at - 4)
            searchFrom = at + 4
        }
        var output = bytes
        let size = { (start: Int) in output[start..<(start + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } }
        let target = try #require(ancestors.last)
        output.insert(contentsOf: box, at: target + Int(size(target)))
        for start in ancestors {
            let grown = withUnsafeBytes(of: (size(start) + UInt32(box.count)).bigEndian, Array.init)
            output.replaceSubrange(start..<(start + 4), with: grown)
        }
        return output
    }
}
