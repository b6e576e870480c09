import TestSupport
import Testing

@testable import MediaProbe

@Suite("Codec strings and parameter sets", .offThePool)
struct CodecStringTests {
    @Test func avcCodecStringIsLowercaseHex() {
        #expect(AVCCodecString.make(sampleEntry: "avc1", profile: 100, compatibility: 0, level: 31) == "avc1.64001f")
        #expect(AVCCodecString.make(sampleEntry: "avc3", profile: 77, compatibility: 0x40, level: 11) == "avc3.4d400b")
    }

    @Test func hevcCodecStringFollowsAnnexE() {
        // Apple's example: Main, compatibility flags 1 and 2, level 3.1, progressive + non-packed + frame-only.
        let main = HEVCProfileTierLevel(
            profileSpace: 0, tierFlag: false, profileIDC: 1, compatibilityFlags: 0x6000_0000,
            constraintBytes: [0xB0, 0, 0, 0, 0, 0], levelIDC: 93)
        #expect(main.codec() == "hvc1.1.6.L93.B0")
        let main10High = HEVCProfileTierLevel(
            profileSpace: 1, tierFlag: true, profileIDC: 2, compatibilityFlags: 0x2000_0000,
            constraintBytes: [0x90, 0, 0, 0, 0, 0x01], levelIDC: 120)
        #expect(main10High.codec(sampleEntry: "hev1") == "hev1.A2.4.H120.90.0.0.0.0.1")
    }

    @Test func hvcCRecordGivesTheSameString() throws {
        let record: [UInt8] = [0x01, 0x60, 0, 0, 0, 0xB0, 0, 0, 0, 0, 0, 93]
        #expect(try HEVCProfileTierLevel(hvcC: record).codec() == "hvc1.1.6.L93.B0")
        #expect(throws: ProbeError.self) { try HEVCProfileTierLevel(hvcC: [1, 2, 3]) }
    }

    @Test func h264SPSWithCroppingAndTiming() throws {
        // x264 SPS for 160x90 Main@1.1 with VUI timing 1/60 (30 fps), taken from ts-h264-aac-0.ts.
        let bytes = try Fixture.bytes("ts-h264-aac-0.ts")
        let sps = try #require(Self.firstNAL(in: bytes, type: 7))
        let parsed = try H264SequenceParameterSet(rbsp: sps.withUnsafeBytes { NALUnits.rbsp($0) })
        #expect(parsed.codec() == "avc1.4d400b")
        #expect(parsed.width == 160)
        #expect(parsed.height == 90)
        #expect(parsed.frameRate == 30)
    }

    @Test func emulationPreventionBytesAreRemoved() {
        let input: [UInt8] = [0x67, 0, 0, 3, 1, 0, 0, 3, 0, 0, 3]
        let output = input.withUnsafeBytes { NALUnits.rbsp($0) }
        #expect(output == [0x67, 0, 0, 1, 0, 0, 0, 0])
    }

    @Test func expGolomb() throws {
        // 1 | 010 | 011 | 00100 | 00101 -> ue 0, 1, 2, 3; se of 4 -> -2
        var bits = BitReader([0b1010_0110, 0b0100_0010, 0b1000_0000], context: "test")
        #expect(try bits.readUE() == 0)
        #expect(try bits.readUE() == 1)
        #expect(try bits.readUE() == 2)
        #expect(try bits.readUE() == 3)
        #expect(try bits.readSE() == -2)
        #expect(throws: ProbeError.self) { try bits.readBits(16) }
        var zeros = BitReader([0, 0, 0, 0, 0, 0], context: "test")
        #expect(throws: ProbeError.self) { try zeros.readUE() }
    }

    @Test func adtsHeader() throws {
        let bytes = try Fixture.bytes("audio.aac")
        let header = try bytes.withUnsafeBytes { buffer throws(ProbeError) in try ADTSHeader(buffer, at: 0) }
        #expect(header.codec == "mp4a.40.2")
        #expect(header.sampleRate == 44100)
        #expect(header.channelConfiguration == 1)
        #expect(header.samplesPerFrame == 1024)
    }

    @Test func microsecondsNeverTrap() {
        #expect(MediaTime(ticks: 127920, timescale: 90000).microseconds == 1_421_333)
        #expect(MediaTime(ticks: 1, timescale: 0).microseconds == 0)
        #expect(MediaTime(ticks: .max, timescale: 1).microseconds == .max)
        #expect(MediaTime(ticks: .min, timescale: 1).microseconds == .min)
    }

    /// The first Annex B NAL unit of `type` (H.264, or HEVC when `hevc`) in the first packets' payload bytes of PID 256
    /// (TS headers skipped crudely).
    static func firstNAL(in ts: [UInt8], type: UInt8, hevc: Bool = false) -> [UInt8]? {
        var payload: [UInt8] = []
        for packet in stride(from: 0, to: min(ts.count, 188 * 8), by: 188)
        where (Int(ts[packet + 1] & 0x1F) << 8 | Int(ts[packet + 2])) == 256 {
            let start = ts[packet + 3] & 0x20 != 0 ? packet + 5 + Int(ts[packet + 4]) : packet + 4
            payload += ts[start..<(packet + 188)]
        }
        return payload.withUnsafeBytes { buffer in
            let unit = NALUnits.annexBUnits(in: buffer).first {
                (hevc ? NALUnits.hevcType(buffer[$0.lowerBound]) : buffer[$0.lowerBound] & 0x1F) == type
            }
            return unit.map { Array(UnsafeRawBufferPointer(rebasing: buffer[$0])) }
        }
    }
}
