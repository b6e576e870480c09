import Foundation
import SCTE35
import TestSupport
import Testing

/// Cues read from sections threefive encoded (`ThreefiveFixtures.swift`, made by scripts/make-scte35-fixtures),
/// compared with threefive's own decoding of the same bytes.
@Suite("SCTE-35 cues read from the stream", .offThePool)
struct SpliceCueTests {
    static func fixture(_ name: String) throws -> (bytes: [UInt8], decoded: [String: Any]) {
        let entry = try #require(threefiveSections.first { $0.name == name }, "no fixture \(name)")
        var bytes: [UInt8] = []
        var hex = Substring(entry.hex)
        while hex.count >= 2 {
            bytes.append(try #require(UInt8(hex.prefix(2), radix: 16)))
            hex = hex.dropFirst(2)
        }
        let decoded = try #require(
            try JSONSerialization.jsonObject(with: Data(entry.json.utf8)) as? [String: Any])
        return (bytes, decoded)
    }

    static func ticks(_ seconds: Any?) -> UInt64? {
        guard let seconds = seconds as? Double else { return nil }
        return UInt64((seconds * 90_000).rounded())
    }

    @Test("every splice_insert fixture reads as threefive reads it: event id, direction, time, duration, cancel")
    func spliceInserts() throws {
        for name in [
            "insert-out-timed", "insert-out-immediate", "insert-out-no-auto-return", "insert-in-timed",
            "insert-out-adjusted-wrap", "insert-cancel",
        ] {
            let (bytes, decoded) = try Self.fixture(name)
            let command = try #require(decoded["command"] as? [String: Any])
            let info = try #require(decoded["info_section"] as? [String: Any])
            let cues = try SpliceInfoSection(validating: bytes).cues()
            try #require(cues.count == 1, "\(name)")
            let cue = cues[0]
            #expect(cue.eventId == UInt32(try #require(command["splice_event_id"] as? Int)), "\(name)")
            let cancelled = try #require(command["splice_event_cancel_indicator"] as? Bool)
            #expect(cue.cancelled == cancelled, "\(name)")
            if cancelled { continue }
            let out = try #require(command["out_of_network_indicator"] as? Bool)
            #expect(cue.kind == (out ? .out : .in), "\(name)")
            let adjustment = Self.ticks(info["pts_adjustment"]) ?? 0
            let expectedTime = Self.ticks(command["pts_time"]).map { ($0 + adjustment) % (1 << 33) }
            #expect(cue.spliceTime == expectedTime, "\(name)")
            #expect(cue.duration == Self.ticks(command["break_duration"]), "\(name)")
            if cue.duration != nil { #expect(cue.autoReturn == command["break_auto_return"] as? Bool, "\(name)") }
            #expect(cue.segmentationTypeId == nil)
        }
    }

    @Test("pts_adjustment is added modulo 2^33: 95000 s + 1000 s wraps to 50065408 ticks")
    func adjustmentWraps() throws {
        let cue = try #require(try SpliceInfoSection(validating: Self.fixture("insert-out-adjusted-wrap").bytes).cues().first)
        #expect(cue.spliceTime == 50_065_408)
    }

    @Test("every segmentation fixture reads as threefive reads it, and its type decides out, in or command")
    func segmentationDescriptors() throws {
        let expectedKinds: [String: SpliceCue.Kind] = [
            "break-start": .out, "break-end": .in, "provider-ad-start": .out, "provider-ad-end": .in,
            "distributor-ad-start": .out, "distributor-ad-end": .in, "provider-po-start": .out,
            "provider-po-end": .in, "distributor-po-start": .out, "distributor-po-end": .in,
            "program-start": .command, "program-end": .command, "chapter-start": .command, "chapter-end": .command,
        ]
        for (name, kind) in expectedKinds {
            let (bytes, decoded) = try Self.fixture(name)
            let command = try #require(decoded["command"] as? [String: Any])
            let descriptor = try #require((decoded["descriptors"] as? [[String: Any]])?.first)
            let cues = try SpliceInfoSection(validating: bytes).cues()
            try #require(cues.count == 1, "\(name)")
            let cue = cues[0]
            #expect(cue.kind == kind, "\(name)")
            let eventId = try #require(descriptor["segmentation_event_id"] as? String)
            #expect(cue.eventId == UInt32(eventId.dropFirst(2), radix: 16), "\(name)")
            #expect(cue.segmentationTypeId.map(Int.init) == descriptor["segmentation_type_id"] as? Int, "\(name)")
            #expect(cue.duration == Self.ticks(descriptor["segmentation_duration"]), "\(name)")
            #expect(cue.spliceTime == Self.ticks(command["pts_time"]), "\(name)")
            #expect(!cue.cancelled)
        }
    }

    @Test("the UPID is kept as bytes: MPU format_identifier ABCD then the private data")
    func upidBytes() throws {
        let cue = try #require(try SpliceInfoSection(validating: Self.fixture("provider-ad-start").bytes).cues().first)
        #expect(cue.upidType == 0x0C)
        #expect(cue.upid == Array("ABCD".utf8) + [0x01, 0x02, 0xFF])
    }

    @Test("a cancelled segmentation event reads as a cancel of its event id")
    func segmentationCancel() throws {
        let cues = try SpliceInfoSection(validating: Self.fixture("segmentation-cancel").bytes).cues()
        #expect(cues == [SpliceCue(kind: .out, eventId: 0x2008, cancelled: true)])
    }

    @Test("splice_null makes no cue")
    func spliceNull() throws {
        #expect(try SpliceInfoSection(validating: Self.fixture("splice-null").bytes).cues().isEmpty)
    }

    @Test("a segmentation descriptor cut short is reported, not trapped")
    func truncatedDescriptor() throws {
        let good = try SpliceInfoSection(validating: Self.fixture("break-start").bytes)
        for keep in 0..<good.descriptors.count {
            var section = good
            section.descriptors = Array(good.descriptors.prefix(keep))
            if keep >= 2 { section.descriptors[1] = UInt8(keep - 2) }  // a descriptor_length that fits the loop
            // Re-encoded (valid CRC): the framing holds, the descriptor's body is what is short.
            let reread = try SpliceInfoSection(validating: section.bytes)
            do {
                let cues = try reread.cues()
                #expect(keep == 0 || cues.isEmpty, "\(keep) bytes of descriptor read as \(cues)")
            } catch {
                #expect(error.message.contains("cut short") || error.message.contains("runs past"))
            }
        }
    }
}
