import TestSupport
import Testing

@testable import MediaProbe

/// AC-3 and E-AC-3 5.1 made by ffmpeg (scripts/make-probe-fixtures, step 8): 0.25 s, 48 kHz, 6 channels.
@Suite("AC-3 and E-AC-3 channels", .offThePool)
struct AC3ProbeTests {
    @Test(arguments: [("ts-ac3-5.1.ts", "ac-3"), ("ts-eac3-5.1.ts", "ec-3")])
    func transportStreamSyncframeGivesCodecAndChannels(file: String, codec: String) throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes(file))
        let audio = try #require(info.tracks.first)
        #expect(info.tracks.count == 1)
        #expect(audio.kind == .audio)
        #expect(audio.codec == codec)
        #expect(audio.channelCount == 6)
        #expect(audio.sampleRate == 48000)
        // 0.25 s needs 8 frames of 1536 samples (0.256 s).
        #expect(info.duration == MediaTime(ticks: 8 * 1536 * 90000 / 48000, timescale: 90000))
        #expect(info.startsWithKeyframe)
    }

    @Test(arguments: [("fmp4-ac3", "ac-3"), ("fmp4-eac3", "ec-3")])
    func fragmentedMP4SpecificBoxGivesCodecAndChannels(name: String, codec: String) throws {
        let initSection = try Fixture.initSection("\(name)-init.mp4")
        let audio = try #require(initSection.tracks.first)
        #expect(audio.codec == codec)
        #expect(audio.channelCount == 6)
        #expect(audio.sampleRate == 48000)
        let segment = try MediaProbe.probeSegment(Fixture.bytes("\(name)-0.m4s"), initSection: initSection)
        #expect(segment.tracks.first?.channelCount == 6)
    }

    /// DVB signals AC-3 / E-AC-3 as private data (stream type 0x06) with a descriptor: the fixture's PMT is rewritten
    /// to stream type 0x06 with its `AC-3` / `EAC3` registration descriptor, or an enhanced AC-3 descriptor (0x7A).
    @Test(arguments: [
        ("ts-ac3-5.1.ts", nil, "ac-3"), ("ts-eac3-5.1.ts", nil, "ec-3"),
        ("ts-eac3-5.1.ts", [0x7A, 0x04, 0x00, 0x00, 0x00, 0x00], "ec-3"),
        ("ts-ac3-5.1.ts", [0x6A, 0x04, 0x00, 0x00, 0x00, 0x00], "ac-3"),
        ("ts-ac3-5.1.ts", [0x0A, 0x04, 0x65, 0x6E, 0x67, 0x00], nil),
    ] as [(String, [UInt8]?, String?)])
    func privateStreamWithADolbyDescriptorIsAC3(file: String, descriptor: [UInt8]?, codec: String?) throws {
        var bytes = try Fixture.bytes(file)
        // PMT packet 2: header, pointer field, section from byte 381; stream_type at 393, its 6-byte ES_info at 398.
        try #require(bytes[393] == 0x81 || bytes[393] == 0x87)
        bytes[393] = 0x06
        if let descriptor { bytes.replaceSubrange(398..<404, with: descriptor) }
        let crc = TransportStreamReader.crc(Array(bytes[381..<404]))
        bytes.replaceSubrange(404..<408, with: (0..<4).map { UInt8(truncatingIfNeeded: crc >> (24 - 8 * $0)) })
        if let codec {
            let info = try MediaProbe.probeSegment(bytes)
            #expect(info.tracks.first?.codec == codec)
            #expect(info.tracks.first?.channelCount == 6)
        } else {
            // A language descriptor alone says nothing about the payload: the stream stays data, so no media.
            #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes) }
        }
    }

    @Test func syncframeHeaderFields() throws {
        // AC-3, 48 kHz, frmsizecod 0x1C (384 kbit/s = 768 words), bsid 8, acmod 7 (3/2), cmixlev and surmixlev
        // (2 bits each), lfeon 1.
        let ac3: [UInt8] = [0x0B, 0x77, 0x00, 0x00, 0x1C, 0x40, 0xE1, 0x40]
        let header = try ac3.withUnsafeBytes { try AC3Header($0, at: 0) }
        #expect(header.codec == "ac-3")
        #expect(header.channelCount == 6)
        #expect(header.frameLength == 1536)
        #expect(header.sampleRate == 48000)
        #expect(header.samples == 1536)
        // Stereo (acmod 2) has dsurmod before lfeon; lfeon 0.
        let stereo: [UInt8] = [0x0B, 0x77, 0x00, 0x00, 0x54, 0x40, 0x40, 0x00]
        let two = try stereo.withUnsafeBytes { try AC3Header($0, at: 0) }
        #expect(two.channelCount == 2)
        #expect(two.sampleRate == 44100)
        #expect(two.frameLength == (192 * 96_000 / 44_100) * 2)
        #expect(throws: ProbeError.self) {
            try [0x0B, 0x77, 0, 0, 0xFF, 0x40, 0, 0].withUnsafeBytes { try AC3Header($0, at: 0) }
        }
        #expect([UInt8](repeating: 0, count: 64).withUnsafeBytes { AC3Header.scan($0) } == nil)
    }
}
