import TestSupport
import Testing

@testable import MediaProbe

/// Malformed input must throw `ProbeError` (or, for cuts at a packet or box boundary, probe fine) and never crash.
@Suite("Hostile input", .offThePool)
struct HostileInputTests {
    static let mediaFixtures = [
        "ts-h264-aac-0.ts", "ts-h264-bframes.ts", "ts-hevc-aac.ts", "ts-aac-only.ts", "ts-pts-wrap.ts",
        "fmp4-h264-aac-0.m4s", "fmp4-hevc-0.m4s", "audio.aac",
    ]


    /// Probes as the origin would; returns the error message or nil.
    static func probe(_ bytes: [UInt8], name: String) -> String? {
        do {
            if name.hasSuffix(".mp4") {
                _ = try MediaProbe.probeInitSection(bytes)
            } else if name.hasPrefix("fmp4-h264") {
                _ = try MediaProbe.probeSegment(bytes, initSection: try Fixture.initSection("fmp4-h264-aac-init.mp4"))
            } else if name.hasPrefix("fmp4-hevc") {
                _ = try MediaProbe.probeSegment(bytes, initSection: try Fixture.initSection("fmp4-hevc-init.mp4"))
            } else {
                _ = try MediaProbe.probeSegment(bytes)
            }
            return nil
        } catch let error as ProbeError {
            return error.message
        } catch {
            Issue.record("unexpected error type \(error)")
            return nil
        }
    }

    @Test(arguments: mediaFixtures + ["fmp4-h264-aac-init.mp4", "fmp4-hevc-init.mp4"])
    func truncatedAtManyLengths(name: String) throws {
        let bytes = try Fixture.bytes(name)
        var lengths = Array(0..<min(bytes.count, 600))
        lengths += stride(from: 600, to: bytes.count, by: 97)
        var thrown = 0
        for length in lengths {
            let message = Self.probe(Array(bytes.prefix(length)), name: name)
            if message != nil { thrown += 1 }
            if name.hasSuffix(".ts"), length % 188 != 0 { #expect(message != nil, "length \(length)") }
        }
        #expect(thrown > lengths.count / 2)
    }

    @Test func truncatedTSMessage() throws {
        let bytes = try Fixture.bytes("ts-h264-aac-0.ts")
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(Array(bytes.prefix(1000))) }
        #expect(
            error?.message
                == "MPEG-TS segment is truncated: 1000 bytes is not a whole number of 188-byte packets "
                + "(60 bytes left over)")
    }

    @Test func randomBytes() {
        var generator = SplitMix64(seed: 42)
        for round in 0..<300 {
            let count = Int.random(in: 0...3000, using: &generator)
            var bytes = (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
            // Give some rounds a plausible start so the deeper parsers run.
            switch round % 5 {
            case 1 where count >= 188:
                for index in stride(from: 0, to: count - count % 188, by: 188) { bytes[index] = 0x47 }
            case 2 where count >= 8:
                bytes.replaceSubrange(4..<8, with: Array("moof".utf8))
            case 3 where count >= 2:
                bytes[0] = 0xFF
                bytes[1] = 0xF1
            default: break
            }
            _ = MediaProbe.detectContainer(bytes)
            _ = Self.probe(bytes, name: "random")
            _ = Self.probe(bytes, name: "random.mp4")
        }
    }

    @Test(arguments: mediaFixtures + ["fmp4-h264-aac-init.mp4", "fmp4-hevc-init.mp4"])
    func corruptedBytes(name: String) throws {
        let original = try Fixture.bytes(name)
        var generator = SplitMix64(seed: UInt64(original.count))
        for _ in 0..<150 {
            var bytes = original
            for _ in 0..<Int.random(in: 1...8, using: &generator) {
                // Bias towards the headers at the start, where most structure lives.
                let limit = Bool.random(using: &generator) ? min(bytes.count, 1500) : bytes.count
                bytes[Int.random(in: 0..<limit, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
            }
            _ = Self.probe(bytes, name: name)
        }
    }

    @Test func adaptationFieldPastPacketEnd() throws {
        var bytes = try Fixture.bytes("ts-h264-aac-0.ts")
        let packet = 188 * 3
        bytes[packet + 3] = bytes[packet + 3] | 0x30  // adaptation field + payload
        bytes[packet + 4] = 190
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes) }
        #expect(
            error?.message
                == "MPEG-TS packet 3 (byte 564): adaptation_field_length 190 runs past the 188-byte packet end "
                + "(at most 182)")
    }

    @Test func lostSyncNamesTheByte() throws {
        var bytes = try Fixture.bytes("ts-h264-aac-0.ts")
        bytes[188 * 2] = 0x48
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes) }
        #expect(error?.message == "not an MPEG-TS segment: byte 376 is 0x48, expected sync byte 0x47 (packet 2)")
    }

    @Test func tsWithoutPES() throws {
        // PAT and PMT only.
        let bytes = Array(try Fixture.bytes("ts-h264-aac-0.ts")[188..<(188 * 3)])
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes) }
        #expect(error?.message.hasPrefix("MPEG-TS: no video or audio PES found") == true)
    }

    /// An init section whose first box after ftyp (moov) gets the given size field.
    static func initWithMoovSize(_ size: [UInt8]) throws -> [UInt8] {
        var bytes = try Fixture.bytes("fmp4-h264-aac-init.mp4")
        let moov = Int(bytes[0]) << 24 | Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        #expect(String(decoding: bytes[(moov + 4)..<(moov + 8)], as: UTF8.self) == "moov")
        bytes.replaceSubrange(moov..<(moov + 4), with: size)
        return bytes
    }

    @Test(arguments: [
        ([0, 0, 0, 0], "fMP4: box 'moov' at offset 28 has size 0 (only a last mdat may)"),
        ([0, 0, 0, 1], "fMP4: box 'moov' at offset 28 declares 465692944484 bytes but only 1344 remain"),
        ([0xFF, 0xFF, 0xFF, 0xFF], "fMP4: box 'moov' at offset 28 declares 4294967295 bytes but only 1344 remain"),
        ([0, 0, 0, 5], "fMP4: box 'moov' at offset 28 has size 5, smaller than its 8-byte header"),
    ])
    func badBoxSizes(size: [UInt8], expected: String) throws {
        let bytes = try Self.initWithMoovSize(size)
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeInitSection(bytes) }
        #expect(error?.message == expected)
    }

    @Test func hugeLargesize() throws {
        var bytes = try Fixture.bytes("fmp4-h264-aac-0.m4s")
        // styp with size 1 and a largesize of 2^63.
        bytes.replaceSubrange(0..<4, with: [0, 0, 0, 1])
        bytes.replaceSubrange(8..<16, with: [0x80, 0, 0, 0, 0, 0, 0, 0])
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes, initSection: initInfo) }
        #expect(error?.message.contains("declares 9223372036854775808 bytes") == true, "\(error?.message ?? "")")
    }

    @Test func nestedBoxSizeZeroOrTooSmall() throws {
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        let original = try Fixture.bytes("fmp4-h264-aac-0.m4s")
        let moof = try #require(Self.find("moof", in: original))
        for size: [UInt8] in [[0, 0, 0, 0], [0, 0, 0, 7], [0x7F, 0, 0, 0]] {
            var bytes = original
            bytes.replaceSubrange((moof + 8)..<(moof + 12), with: size)  // the mfhd inside moof
            #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes, initSection: initInfo) }
        }
    }

    @Test func trunSampleCountPastBoxEnd() throws {
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        var bytes = try Fixture.bytes("fmp4-h264-aac-0.m4s")
        let trun = try #require(Self.find("trun", in: bytes))
        bytes.replaceSubrange((trun + 12)..<(trun + 16), with: [0xFF, 0xFF, 0xFF, 0xFF])
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(bytes, initSection: initInfo) }
        #expect(error?.message.contains("trun declares 4294967295 samples") == true, "\(error?.message ?? "")")
    }

    @Test func segmentCutAfterMoofIsDetected() throws {
        let initInfo = try Fixture.initSection("fmp4-h264-aac-init.mp4")
        let bytes = try Fixture.bytes("fmp4-h264-aac-0.m4s")
        let mdat = try #require(Self.find("mdat", in: bytes))
        // Keep the mdat header but claim it is the last box (size 0): data offsets still point past the end.
        var cut = Array(bytes.prefix(mdat + 8 + 100))
        cut.replaceSubrange(mdat..<(mdat + 4), with: [0, 0, 0, 0])
        let error = #expect(throws: ProbeError.self) { try MediaProbe.probeSegment(cut, initSection: initInfo) }
        #expect(error?.message.contains("truncated?") == true, "\(error?.message ?? "")")
    }

    /// Offset of the first box header with `type` (a crude byte search, fine for fixtures).
    static func find(_ type: String, in bytes: [UInt8]) -> Int? {
        let pattern = Array(type.utf8)
        guard bytes.count >= 8 else { return nil }
        for index in 4..<(bytes.count - 4) where Array(bytes[index..<(index + 4)]) == pattern { return index - 4 }
        return nil
    }
}
