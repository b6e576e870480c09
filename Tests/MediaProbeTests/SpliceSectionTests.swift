import Foundation
import TestSupport
import Testing

@testable import MediaProbe

/// SCTE-35 sections read from pushed MPEG-TS, in the standard form and in ffmpeg's re-mux (scripts/make-probe-fixtures,
/// section 12).
@Suite("SCTE-35 sections in MPEG-TS segments", .offThePool)
struct SpliceSectionTests {
    static func bytes(_ hex: String) -> [UInt8] {
        stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
    }

    /// The two sections scripts/make-probe-fixtures adds, in stream order.
    static let injected = [
        bytes("fc302500000000000000fff01405000010017feffe055dfa48fe002932e0000701020000b6bf9fa0"),
        bytes(
            "fc303300000000000000fff00506fe03c14dc0001d021b43554549000020027fff00002932e00c07414243440102ff300101d8b1ce36"),
    ]

    @Test("stream_type 0x86: the sections on the SCTE-35 PID, in order")
    func standardForm() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-scte35-0x86.ts"))
        #expect(info.spliceSections == Self.injected)
        #expect(info.startsWithKeyframe)
    }

    @Test("ffmpeg's re-mux (stream_type 0x06, PES stream_id 0xFC): the same sections")
    func ffmpegForm() throws {
        let info = try MediaProbe.probeSegment(Fixture.bytes("ts-scte35-0x06.ts"))
        #expect(info.spliceSections == Self.injected)
    }

    @Test("a segment without an SCTE-35 stream has no sections")
    func none() throws {
        #expect(try MediaProbe.probeSegment(Fixture.bytes("ts-h264-aac-0.ts")).spliceSections.isEmpty)
    }

    /// A transport packet on the fixture's SCTE-35 PID (0x1F0).
    static func packet(unitStart: Bool, counter: Int, payload: [UInt8]) -> [UInt8] {
        precondition(payload.count <= 184)
        let header: [UInt8] = [0x47, (unitStart ? 0x40 : 0) | 0x01, 0xF0, 0x10 | UInt8(counter & 0x0F)]
        return header + payload + [UInt8](repeating: 0xFF, count: 184 - payload.count)
    }

    @Test("a section spanning packets is reassembled; the next one starts after the pointer_field")
    func spanning() throws {
        var long: [UInt8] = [0xFC, 0x31, 0x2C]  // section_length 300
        long += (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let short = Self.injected[0]
        let first = Self.packet(unitStart: true, counter: 2, payload: [0] + long[0..<183])
        let second = Self.packet(unitStart: false, counter: 3, payload: Array(long[183...]))
        #expect(long.count - 183 < 184)
        // The rest fits in the second packet: stuffing follows, then a new packet starts the short section.
        let third = Self.packet(unitStart: true, counter: 4, payload: [0] + short)
        let segment = try Fixture.bytes("ts-scte35-0x86.ts") + first + second + third
        let info = try MediaProbe.probeSegment(segment)
        #expect(info.spliceSections == Self.injected + [long, short])

        // The same long section ending in a packet that starts the next section (pointer_field = bytes left).
        let head = Self.packet(unitStart: true, counter: 2, payload: [0] + long[0..<183])
        let rest = Array(long[183...])
        let tail = Self.packet(unitStart: true, counter: 3, payload: [UInt8(rest.count)] + rest + short)
        let again = try MediaProbe.probeSegment(try Fixture.bytes("ts-scte35-0x86.ts") + head + tail)
        #expect(again.spliceSections == Self.injected + [long, short])
    }

    @Test("malformed SCTE-35 packets are skipped, not trapped, and do not fail the segment")
    func malformed() throws {
        let base = try Fixture.bytes("ts-scte35-0x86.ts")
        let pointerPastEnd = Self.packet(unitStart: true, counter: 2, payload: [200, 0xFC, 0x30, 0x10])
        let neverEnds = Self.packet(unitStart: true, counter: 3, payload: [0, 0xFC, 0x3F, 0xFF, 1, 2, 3])
        let info = try MediaProbe.probeSegment(base + pointerPastEnd + neverEnds)
        #expect(info.spliceSections == Self.injected)
    }
}
